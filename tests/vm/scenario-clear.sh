#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# `wgshape clear` removes both directions and the IFB, and restores the root
# qdisc the interface had before wgshape first touched it: a hand-set
# fq_codel or cake with its options, or the default (noqueue on WireGuard).
# Clearing twice, or clearing what was never shaped, is fine. On the ingress
# side nothing of the user's is touched: a clsact of theirs, or filters they
# add to wgshape's ingress qdisc (only wgshape's redirect and IFB go).
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

# ingress_side NS DEV: DEV's ingress qdisc (kind, handle) and its ingress
# filters (kind, priority, actions), for "untouched" checks.
ingress_side() {
	ingress_qdisc "$1" "$2" | jq -S -c '{kind, handle}'
	ingress_filters "$1" "$2" | jq -S -c '[.[] | select(.options != null)
		| {kind, pref, protocol, actions: [.options.actions[]? | .kind]}]'
}

step "a clsact of the user's: set ... ingress refuses, clear leaves it as it was"
inns srv tc qdisc add dev wg0 clsact
inns srv tc filter add dev wg0 ingress prio 10 matchall action pass
theirs=$(ingress_side srv wg0)
info "by hand: $(tr '\n' ' ' <<<"$theirs")"
expect_wgshape_fails srv "already has one that wgshape did not make \\(remove it first: tc qdisc del dev wg0 clsact\\)" set wg0 ingress 5mbit
expect_wgshape_ok srv set wg0 egress 10mbit
expect_wgshape_ok srv clear wg0
expect_eq "srv wg0 ingress side after set and clear" "$theirs" "$(ingress_side srv wg0)"
expect_eq "srv has no ifb4wg0" no "$(link_exists srv ifb4wg0 && echo yes || echo no)"
inns srv tc qdisc del dev wg0 clsact

step "a filter the user adds to wgshape's ingress qdisc survives a change and clear"
expect_wgshape_ok srv set wg0 ingress 5mbit
inns srv tc filter add dev wg0 ingress prio 10 matchall action continue
expect_wgshape_ok srv set wg0 ingress 8mbit
expect_cake srv ifb4wg0 bandwidth=1000000
expect_mirred_redirect srv wg0 ifb4wg0
expect_eq "the user's filter on srv wg0 after the change" 1 \
	"$(ingress_filters srv wg0 | jq '[.[] | select(.pref == 10 and .options != null)] | length')"
expect_wgshape_ok srv clear wg0
expect_eq "srv has no ifb4wg0" no "$(link_exists srv ifb4wg0 && echo yes || echo no)"
expect_eq "srv wg0 ingress filters after clear: the user's alone" '[{"actions":["gact"],"kind":"matchall","pref":10,"protocol":"all"}]' \
	"$(ingress_side srv wg0 | tail -n 1)"
inns srv tc qdisc del dev wg0 clsact

step "state of an interface that is gone: show says clear forgets it, and clear does"
printf 'not a state file\n' >"$dir/junk0.state"
expect_wgshape_ok srv show
expect_match "show of a gone interface" "wgshape clear junk0" "$WG_OUT"
expect_wgshape_ok srv clear junk0
expect_eq "junk0's state after clear" no "$([ -e "$dir/junk0.state" ] && echo yes || echo no)"

finish
