#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Bad input: each case fails with its exit code (2 for words wgshape cannot
# take, 1 for what the system refuses), exactly one line on stderr, that line
# the message the case states (naming the offending value where there is
# one), and no kernel change in the namespace, on a fresh interface and on
# one already shaped.
# (The "module missing" cases are in scenario-missing-modules.sh: they need
# a fresh kernel.)
. "$(dirname "$0")/lib.sh"

need_wgshape
need_tools setpriv
lab_topology ipv4

# refuses NS EXIT MESSAGE ARGS...: 'wgshape ARGS' in NS exits EXIT with the
# one line MESSAGE (a fixed string, found in the line) and changes nothing.
refuses() {
	local ns=$1 code=$2 msg=$3 re
	shift 3
	[ -n "$msg" ] || die "refuses $*: every case states its message"
	re=$(printf '%s' "$msg" | sed 's/[][\\.*^$(){}?+|/]/\\&/g')
	expect_wgshape_fails "$ns" "$re" "$@"
	expect_eq "exit of 'wgshape $*'" "$code" "$WG_RC"
}

NOT_RATE="is not a rate (a number and a unit, e.g. 85mbit)"
NOT_OVERHEAD="is not auto, raw or a whole number of bytes from -64 to 256"
RTT_NAMES="datacentre, lan, metro, regional, internet, oceanic, satellite, interplanetary"
NOT_PERMITTED="wg0: not permitted: needs root or CAP_NET_ADMIN"

# bad_cases all|some: "some" is the subset that could reach the kernel.
bad_cases() {
	local which=$1
	if [ "$which" = all ]; then
		step "no such interface"
		refuses cli 1 'nosuchdev: no such interface' set nosuchdev egress 10mbit
		refuses cli 1 'nosuchdev: no such interface' clear nosuchdev
		refuses cli 1 'nosuchdev: no such interface' show nosuchdev

		step "interface names of 16 or more characters"
		refuses cli 2 "'wg0123456789abcd': interface name too long (16 characters; the kernel allows 15)" \
			set wg0123456789abcd egress 10mbit
		refuses cli 2 "'averyveryverylongname': interface name too long (21 characters; the kernel allows 15)" \
			set averyveryverylongname egress 10mbit
	fi

	step "bad rates"
	refuses cli 2 "set wg0: egress: '0' $NOT_RATE" set wg0 egress 0
	refuses cli 2 "set wg0: egress: '-5mbit' $NOT_RATE" set wg0 egress -5mbit
	refuses cli 2 "set wg0: egress: '85' $NOT_RATE" set wg0 egress 85
	refuses cli 2 "set wg0: egress: '85mbitx' $NOT_RATE" set wg0 egress 85mbitx
	refuses cli 2 "set wg0: egress: 'mbit' $NOT_RATE" set wg0 egress mbit
	# 1e29 bit/s: more bytes per second than a u64 holds.
	refuses cli 2 "set wg0: egress: '99999999999999999999gbit' $NOT_RATE" \
		set wg0 egress 99999999999999999999gbit
	refuses cli 2 "set wg0: ingress: '85mbitx' $NOT_RATE" set wg0 ingress 85mbitx
	[ "$which" = all ] && refuses cli 2 'set wg0: egress: missing RATE or off' set wg0 egress

	step "overhead outside -64..256"
	refuses cli 2 "set wg0: overhead: '300' $NOT_OVERHEAD" set wg0 egress 10mbit overhead 300
	refuses cli 2 "set wg0: overhead: '-65' $NOT_OVERHEAD" set wg0 egress 10mbit overhead -65
	refuses cli 2 "set wg0: overhead: '12x' $NOT_OVERHEAD" set wg0 egress 10mbit overhead 12x

	if [ "$which" = all ]; then
		step "other garbage"
		refuses cli 2 "set wg0: rtt: '5parsecs' is not a time (e.g. 100ms) nor one of $RTT_NAMES" \
			set wg0 egress 10mbit rtt 5parsecs
		refuses cli 2 "set wg0: 'bogus' is not an option of set (see wgshape set --help)" \
			set wg0 egress 10mbit bogus
		refuses cli 2 'set: needs IFACE and what to set, e.g. egress 85mbit (see wgshape set --help)' set
		refuses cli 2 "'frobnicate' is not a command (see wgshape help)" frobnicate wg0
	fi

	step "not permitted (no CAP_NET_ADMIN)"
	WG_WRAP="setpriv --inh-caps=-all --ambient-caps=-all --bounding-set=-all --"
	refuses cli 1 "$NOT_PERMITTED" set wg0 egress 10mbit
	refuses cli 1 "$NOT_PERMITTED" set wg0 ingress 10mbit
	WG_WRAP=
}

step "on a fresh interface"
bad_cases all

step "on an interface already shaped: the cake there stays as it is"
expect_wgshape_ok cli set wg0 egress 10mbit ingress 10mbit
expect_cake cli wg0 bandwidth=1250000
bad_cases some
WG_WRAP="setpriv --inh-caps=-all --ambient-caps=-all --bounding-set=-all --"
refuses cli 1 "$NOT_PERMITTED" clear wg0
WG_WRAP=
expect_cake cli wg0 bandwidth=1250000
expect_cake cli ifb4wg0 bandwidth=1250000 ingress=true

finish
