#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Bad input: each case fails with exit 1 or 2, exactly one line on stderr
# (naming the offending value where there is one), and no kernel change in
# the namespace, on a fresh interface and on one already shaped.
# (The "module missing" cases are in scenario-missing-modules.sh: they need
# a fresh kernel.)
. "$(dirname "$0")/lib.sh"

need_wgshape
need_tools setpriv
lab_topology ipv4

# bad_cases all|some: "some" is the subset that could reach the kernel.
bad_cases() {
	local which=$1
	if [ "$which" = all ]; then
		step "no such interface"
		expect_wgshape_fails cli 'nosuchdev' set nosuchdev egress 10mbit
		expect_wgshape_fails cli 'nosuchdev' clear nosuchdev
		expect_wgshape_fails cli 'nosuchdev' show nosuchdev

		step "interface names of 16 or more characters"
		expect_wgshape_fails cli 'wg0123456789abcd' set wg0123456789abcd egress 10mbit
		expect_wgshape_fails cli 'averyveryverylongname' set averyveryverylongname egress 10mbit
	fi

	step "bad rates"
	expect_wgshape_fails cli '' set wg0 egress 0
	expect_wgshape_fails cli '-5mbit' set wg0 egress -5mbit
	expect_wgshape_fails cli '85' set wg0 egress 85
	expect_wgshape_fails cli '85mbitx' set wg0 egress 85mbitx
	expect_wgshape_fails cli 'mbit' set wg0 egress mbit
	# 1e29 bit/s: more bytes per second than a u64 holds.
	expect_wgshape_fails cli '99999999999999999999gbit' set wg0 egress 99999999999999999999gbit
	expect_wgshape_fails cli '85mbitx' set wg0 ingress 85mbitx
	[ "$which" = all ] && expect_wgshape_fails cli '' set wg0 egress

	step "overhead outside -64..256"
	expect_wgshape_fails cli '300' set wg0 egress 10mbit overhead 300
	expect_wgshape_fails cli '-65' set wg0 egress 10mbit overhead -65
	expect_wgshape_fails cli '12x' set wg0 egress 10mbit overhead 12x

	if [ "$which" = all ]; then
		step "other garbage"
		expect_wgshape_fails cli '5parsecs' set wg0 egress 10mbit rtt 5parsecs
		expect_wgshape_fails cli 'bogus' set wg0 egress 10mbit bogus
		expect_wgshape_fails cli '' set
		expect_wgshape_fails cli 'frobnicate' frobnicate wg0
	fi

	step "not permitted (no CAP_NET_ADMIN)"
	WG_WRAP="setpriv --inh-caps=-all --ambient-caps=-all --bounding-set=-all --"
	expect_wgshape_fails cli 'CAP_NET_ADMIN|[Pp]ermi' set wg0 egress 10mbit
	expect_wgshape_fails cli 'CAP_NET_ADMIN|[Pp]ermi' set wg0 ingress 10mbit
	WG_WRAP=
}

step "on a fresh interface"
bad_cases all

step "on an interface already shaped: the cake there stays as it is"
expect_wgshape_ok cli set wg0 egress 10mbit ingress 10mbit
expect_cake cli wg0 bandwidth=1250000
bad_cases some
WG_WRAP="setpriv --inh-caps=-all --ambient-caps=-all --bounding-set=-all --"
expect_wgshape_fails cli 'CAP_NET_ADMIN|[Pp]ermi' clear wg0
WG_WRAP=
expect_cake cli wg0 bandwidth=1250000
expect_cake cli ifb4wg0 bandwidth=1250000 ingress=true

finish
