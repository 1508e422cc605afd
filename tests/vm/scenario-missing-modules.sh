#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Kernel pieces missing: no sch_cake, then (with cake) no ifb, no ingress
# qdisc, no mirred action or match-all classifier. Each attempt fails with one
# clear line and leaves nothing half-configured (no IFB, no ingress qdisc, no
# filter). Missing is simulated by turning the kernel's module autoload off
# (/proc/sys/kernel/modprobe = /bin/false) before anything loaded those
# modules: so this needs a freshly booted lab VM, and skips elsewhere.
. "$(dirname "$0")/lib.sh"

need_wgshape
need_fresh_vm

loaded() { [ -d "/sys/module/$1" ]; }

for m in sch_cake ifb sch_ingress act_mirred cls_matchall cls_u32; do
	loaded "$m" && skip "$m is already loaded in this kernel: needs a fresh boot"
done

# The topology needs veth and wireguard: let them load first.
lab_topology ipv4
autoload=$(cat /proc/sys/kernel/modprobe)
echo /bin/false >/proc/sys/kernel/modprobe
trap 'echo "$autoload" >/proc/sys/kernel/modprobe; lab_cleanup' EXIT
info "kernel module autoload off (was $autoload)"

step "no cake in the kernel"
expect_wgshape_fails cli 'sch_cake' set wg0 egress 10mbit
# Both directions: wgshape does ingress first, so the IFB may be what it names.
expect_wgshape_fails cli 'sch_cake|ifb' set wg0 egress 10mbit ingress 10mbit
expect_eq "sch_cake still not loaded" no "$(loaded sch_cake && echo yes || echo no)"

step "cake loaded by hand; egress works without anything else"
modprobe sch_cake
expect_wgshape_ok cli set wg0 egress 10mbit
expect_cake cli wg0 bandwidth=1250000

step "ingress without ifb"
expect_wgshape_fails cli 'ifb' set wg0 ingress 10mbit
expect_eq "cli has no ifb4wg0" no "$(link_exists cli ifb4wg0 && echo yes || echo no)"

step "ingress with ifb but without the ingress qdisc, mirred and match-all"
modprobe ifb
expect_wgshape_fails cli 'ingress|mirred|matchall|u32|cls_|act_' set wg0 ingress 10mbit
expect_eq "cli has no ifb4wg0" no "$(link_exists cli ifb4wg0 && echo yes || echo no)"
expect_eq "cli wg0 has no ingress qdisc" '{}' "$(ingress_qdisc cli wg0)"

step "ingress with the ingress qdisc too, still no mirred or classifier"
modprobe sch_ingress
expect_wgshape_fails cli 'mirred|matchall|u32|cls_|act_' set wg0 ingress 10mbit
expect_eq "cli has no ifb4wg0" no "$(link_exists cli ifb4wg0 && echo yes || echo no)"
expect_eq "cli wg0 has no ingress qdisc" '{}' "$(ingress_qdisc cli wg0)"

step "classifiers there, mirred still missing"
modprobe cls_matchall
modprobe cls_u32
expect_wgshape_fails cli 'mirred|act_' set wg0 ingress 10mbit
expect_eq "cli has no ifb4wg0" no "$(link_exists cli ifb4wg0 && echo yes || echo no)"
expect_eq "cli wg0 has no ingress qdisc" '{}' "$(ingress_qdisc cli wg0)"
expect_eq "cli wg0 has no ingress filters" '[]' "$(ingress_filters cli wg0 | jq -c .)"

step "with everything loaded, the same command works"
modprobe act_mirred
expect_wgshape_ok cli set wg0 ingress 10mbit
expect_cake cli ifb4wg0 bandwidth=1250000 ingress=true
expect_mirred_redirect cli wg0 ifb4wg0
expect_cake cli wg0 bandwidth=1250000

finish
