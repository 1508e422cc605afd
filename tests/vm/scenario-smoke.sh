#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The lab itself works: namespaces, a real WireGuard tunnel, cake (egress,
# and ingress through an IFB with a mirred redirect), netem, iperf3 and the
# jq checks the wgshape scenarios rely on. Uses only ip/tc/wg/iperf3, so it
# passes whatever state wgshape is in.
. "$(dirname "$0")/lib.sh"

need_tools iperf3 ping ss
t0=$(date +%s.%N)
elapsed() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1fs", b - a }'; }

step "topology: srv and cli namespaces, WireGuard over IPv4"
lab_topology ipv4
info "ready after $(elapsed)"
expect_eq "cli wg0 link kind" wireguard "$(link_kind cli wg0)"
expect_eq "cli wg0 root qdisc before shaping" noqueue "$(root_field cli wg0 .kind)"

step "unshaped WireGuard throughput (what this CPU sustains)"
iperf_server srv "$SRV_TUN4"
down=$(iperf_rate cli "$SRV_TUN4" 4 -P 4 -R)
info "download $(mbit "$down") (4 TCP streams)"
pick_test_rate
info "after $(elapsed)"

rate=$TEST_RATE
step "cake by hand with tc on cli wg0: egress $rate, ingress $rate via ifb4wg0"
inns cli tc qdisc replace dev wg0 root cake bandwidth "$rate" overhead 60
inns cli ip link add ifb4wg0 type ifb
inns cli ip link set ifb4wg0 up
inns cli tc qdisc add dev wg0 handle ffff: ingress
inns cli tc filter add dev wg0 parent ffff: matchall action mirred egress redirect dev ifb4wg0
inns cli tc qdisc replace dev ifb4wg0 root cake bandwidth "$rate" overhead 60 ingress
expect_cake cli wg0 bandwidth="$(rate_bytes "$rate")" overhead=60 ingress=false
expect_cake cli ifb4wg0 bandwidth="$(rate_bytes "$rate")" overhead=60 ingress=true
expect_eq "cli wg0 ingress qdisc" "ingress ffff:" "$(ingress_qdisc cli wg0 | jq -r '"\(.kind) \(.handle)"')"
expect_mirred_redirect cli wg0 ifb4wg0
expect_eq "cli ifb4wg0 link kind" ifb "$(link_kind cli ifb4wg0)"

step "traffic through the shaped tunnel"
# cake counts each packet of wg0 (1420-byte MTU) plus 60 bytes of overhead;
# a TCP segment carries 1420 - 20 (IP) - 32 (TCP with timestamps) of data.
goodput=$(expected_goodput "$rate" 1420 60)
expect_rate "upload (cake egress $rate)" 10 rate_upload "$goodput"
expect_rate "download (cake ingress $rate)" 10 rate_download_ingress "$goodput"
sent=$(inns cli tc -j -s qdisc show dev wg0 root | jq '.[0].bytes')
expect_ge "bytes through cli wg0 cake" 1000000 "$sent"

step "snapshot sees a change, and only then"
before=$(snapshot cli)
again=$(snapshot cli)
expect_same_snapshot "two snapshots in a row" "$before" "$again"
# half the rate in place: a different rate whatever TEST_RATE this machine chose
half=$(($(rate_bytes "$rate") / 2))
inns cli tc qdisc change dev wg0 root cake bandwidth "$((half * 8))bit"
expect_cake cli wg0 bandwidth="$half"
after=$(snapshot cli)
if [ "$before" != "$after" ]; then pass "a rate change shows in the snapshot"; else fail "a rate change does not show in the snapshot"; fi
# each device's filters in their own place (one tc -batch answers them all)
wg0_ingress() { awk '$0 == "# wg0 ingress filters" { getline; print }' <<<"$1"; }
expect_match "wg0's ingress filters in the snapshot" '"mirred"' "$(wg0_ingress "$after")"
inns cli tc filter del dev wg0 ingress
expect_eq "wg0's ingress filters in the snapshot, once deleted" '[]' "$(wg0_ingress "$(snapshot cli)")"

step "netem bottleneck on the veth"
lab_bottleneck 20mbit 10ms 2000
expect_eq "srv veth-srv root qdisc" netem "$(root_field srv veth-srv .kind)"
rtt=$(inns cli ping -4 -c 3 -i 0.2 -q "$SRV_TUN4" | awk -F/ '/^rtt/ { printf "%d", $5 }')
expect_ge "idle RTT through the tunnel over netem 10 ms each way (ms)" 19 "$rtt"

info "scenario time $(elapsed)"
finish
