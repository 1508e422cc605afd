#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A rate-only change is a qdisc change, not a delete and add: the cake keeps
# its handle and its counters, the IFB and the filter stay, and the options
# the user set before (and did not give again) stay as they were.
. "$(dirname "$0")/lib.sh"

need_wgshape
need_tools iperf3
lab_topology ipv4
iperf_server srv "$SRV_TUN4"

# stats NS DEV: "bytes packets" of DEV's root qdisc.
stats() {
	inns "$1" tc -j -s qdisc show dev "$2" root | jq -r '.[0] | "\(.bytes) \(.packets)"'
}

step "shape both directions, with options beside the rate"
expect_wgshape_ok cli set wg0 egress 10mbit ingress 10mbit diffserv4 rtt 50ms
expect_cake cli wg0 bandwidth=1250000 diffserv=diffserv4 rtt=50000
expect_cake cli ifb4wg0 bandwidth=1250000 ingress=true
egress_handle=$(root_field cli wg0 .handle)
ingress_handle=$(root_field cli ifb4wg0 .handle)
ifb_index=$(inns cli ip -j link show dev ifb4wg0 | jq '.[0].ifindex')
filters=$(ingress_filters cli wg0 | jq -S .)

step "traffic both ways, so the counters are not zero"
info "upload $(mbit "$(iperf_rate cli "$SRV_TUN4" 3 -P 2)")"
info "download $(mbit "$(iperf_rate cli "$SRV_TUN4" 3 -P 2 -R)")"
read -r eb ep <<<"$(stats cli wg0)"
read -r ib ip_ <<<"$(stats cli ifb4wg0)"
expect_ge "cli wg0 cake bytes before" 100000 "$eb"
expect_ge "cli ifb4wg0 cake bytes before" 100000 "$ib"

step "change only the rates"
expect_wgshape_ok cli set wg0 egress 12mbit ingress 8mbit
expect_cake cli wg0 bandwidth=1500000 diffserv=diffserv4 rtt=50000
expect_cake cli ifb4wg0 bandwidth=1000000 ingress=true
expect_eq "cli wg0 cake handle" "$egress_handle" "$(root_field cli wg0 .handle)"
expect_eq "cli ifb4wg0 cake handle" "$ingress_handle" "$(root_field cli ifb4wg0 .handle)"
expect_eq "cli ifb4wg0 ifindex (not re-created)" "$ifb_index" \
	"$(inns cli ip -j link show dev ifb4wg0 | jq '.[0].ifindex')"
expect_eq "cli wg0 ingress filters" "$filters" "$(ingress_filters cli wg0 | jq -S .)"
read -r eb2 ep2 <<<"$(stats cli wg0)"
read -r ib2 ip2 <<<"$(stats cli ifb4wg0)"
expect_ge "cli wg0 cake bytes after" "$eb" "$eb2"
expect_ge "cli wg0 cake packets after" "$ep" "$ep2"
expect_ge "cli ifb4wg0 cake bytes after" "$ib" "$ib2"
expect_ge "cli ifb4wg0 cake packets after" "$ip_" "$ip2"

step "the same with one direction only, twice in a row"
for r in 11mbit 9mbit; do
	expect_wgshape_ok cli set wg0 egress "$r"
	expect_cake cli wg0 bandwidth="$(rate_bytes "$r")" diffserv=diffserv4
	expect_eq "cli wg0 cake handle" "$egress_handle" "$(root_field cli wg0 .handle)"
done
expect_cake cli ifb4wg0 bandwidth=1000000 ingress=true

finish
