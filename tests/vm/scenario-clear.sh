#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# `wgshape clear` removes both directions and the IFB, and restores the root
# qdisc the interface had before wgshape first touched it: a hand-set
# fq_codel or cake with its options, or the default (noqueue on WireGuard).
# Clearing twice, or clearing what was never shaped, is fine.
. "$(dirname "$0")/lib.sh"

need_wgshape
lab_topology ipv4

# root_without_handle NS DEV: the root qdisc's kind and options, sorted.
root_without_handle() {
	root_qdisc "$1" "$2" | jq -S -c '{kind, options}'
}

expect_no_ingress() {
	local ns=$1
	expect_eq "$ns has no ifb4wg0" no "$(link_exists "$ns" ifb4wg0 && echo yes || echo no)"
	expect_eq "$ns wg0 has no ingress qdisc" '{}' "$(ingress_qdisc "$ns" wg0)"
	expect_eq "$ns wg0 has no ingress filters" '[]' "$(ingress_filters "$ns" wg0 | jq -c .)"
}

step "a hand-set fq_codel on cli wg0 comes back as it was"
inns cli tc qdisc replace dev wg0 root fq_codel limit 1234 target 7ms interval 70ms
hand=$(root_without_handle cli wg0)
info "by hand: $hand"
expect_eq "cli wg0 fq_codel limit" 1234 "$(root_field cli wg0 .options.limit)"
expect_wgshape_ok cli set wg0 egress 10mbit ingress 10mbit
expect_cake cli wg0 bandwidth=1250000
expect_wgshape_ok cli set wg0 egress 12mbit
expect_wgshape_ok cli clear wg0
expect_eq "cli wg0 root qdisc after clear" "$hand" "$(root_without_handle cli wg0)"
expect_no_ingress cli

step "clear again: nothing to do, no error, no change"
before=$(snapshot cli)
expect_wgshape_ok cli clear wg0
expect_same_snapshot "second clear" "$before" "$(snapshot cli)"

step "a fresh interface gets its default back (noqueue on WireGuard)"
expect_eq "srv wg0 root qdisc before" noqueue "$(root_field srv wg0 .kind)"
expect_wgshape_ok srv set wg0 egress 10mbit ingress 5mbit
expect_cake srv wg0 bandwidth=1250000
expect_wgshape_ok srv clear wg0
expect_eq "srv wg0 root qdisc after clear" noqueue "$(root_field srv wg0 .kind)"
expect_no_ingress srv

step "set, clear, set, clear: the state from the first round does not linger"
expect_wgshape_ok srv set wg0 ingress 5mbit
expect_wgshape_ok srv clear wg0
expect_eq "srv wg0 root qdisc after ingress-only round" noqueue "$(root_field srv wg0 .kind)"
expect_no_ingress srv

step "a hand-set cake on srv wg0 comes back with its own options"
inns srv tc qdisc replace dev wg0 root cake bandwidth 50mbit besteffort rtt 20ms
hand=$(root_without_handle srv wg0)
expect_wgshape_ok srv set wg0 egress 10mbit
expect_cake srv wg0 bandwidth=1250000
expect_wgshape_ok srv clear wg0
expect_eq "srv wg0 root qdisc after clear" "$hand" "$(root_without_handle srv wg0)"

step "clear on an interface wgshape never touched"
before=$(snapshot srv)
expect_wgshape_ok srv clear wg0
expect_same_snapshot "clear of an untouched interface" "$before" "$(snapshot srv)"

# state_dir NS: where wgshape keeps its state in NS (state_dir_for_netns)
state_dir() {
	local ino init
	ino=$(inns "$1" stat -L -c %i /proc/self/ns/net)
	init=$(stat -L -c %i /proc/1/ns/net)
	if [ "$ino" = "$init" ]; then echo /run/wgshape; else echo "/run/wgshape/netns-$ino"; fi
}

step "a planted state file does not make clear delete the user's IFB and ingress qdisc"
dir=$(state_dir srv)
ifindex=$(inns srv cat /sys/class/net/wg0/ifindex)
inns srv ip link add myifb type ifb
inns srv ip link set myifb up
inns srv tc qdisc add dev wg0 ingress
inns srv tc filter add dev wg0 parent ffff: matchall action mirred egress redirect dev myifb
mkdir -p -m 0755 "$dir"
printf '[interface]\nifindex=%s\n[ingress]\nifb=myifb\n' "$ifindex" >"$dir/wg0.state"
expect_wgshape_ok srv clear wg0
expect_eq "srv myifb after clear" yes "$(link_exists srv myifb && echo yes || echo no)"
expect_eq "srv wg0 ingress filters after clear" true "$(ingress_filters srv wg0 | jq "length > 0")"
# the IFB has wgshape's name, but the ingress qdisc has a filter of the user's
inns srv tc qdisc del dev wg0 ingress
inns srv ip link del myifb
inns srv ip link add ifb4wg0 type ifb
inns srv tc qdisc add dev wg0 ingress
inns srv tc filter add dev wg0 parent ffff: prio 10 matchall action pass
printf '[interface]\nifindex=%s\n[ingress]\nifb=ifb4wg0\n' "$ifindex" >"$dir/wg0.state"
expect_wgshape_ok srv clear wg0
expect_eq "srv ifb4wg0 after clear" yes "$(link_exists srv ifb4wg0 && echo yes || echo no)"
expect_eq "srv wg0 ingress qdisc after clear" ingress "$(ingress_qdisc srv wg0 | jq -r .kind)"
inns srv tc qdisc del dev wg0 ingress
inns srv ip link del ifb4wg0

step "state of an interface that is gone: show says clear forgets it, and clear does"
printf 'not a state file\n' >"$dir/junk0.state"
expect_wgshape_ok srv show
expect_match "show of a gone interface" "wgshape clear junk0" "$WG_OUT"
expect_wgshape_ok srv clear junk0
expect_eq "junk0's state after clear" no "$([ -e "$dir/junk0.state" ] && echo yes || echo no)"

finish
