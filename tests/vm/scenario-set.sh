#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# scenario-set.sh ipv4|ipv6: `wgshape set` egress, ingress and overhead auto
# on a WireGuard tunnel whose endpoints use the given family, checked with
# tc -j (independent of wgshape's own code); `show` and `show -j` report it.
. "$(dirname "$0")/lib.sh"

family=${1:-ipv4}
case "$family" in
ipv4) auto=60 ;; # 32 WireGuard + 8 UDP + 20 IPv4
ipv6) auto=80 ;; # 32 WireGuard + 8 UDP + 40 IPv6
*) die "usage: $0 ipv4|ipv6" ;;
esac
need_wgshape
lab_topology "$family"

step "client: egress 20mbit, ingress 10mbit, overhead auto ($family endpoint: $auto)"
expect_wgshape_ok cli set wg0 egress 20mbit ingress 10mbit
expect_cake cli wg0 bandwidth=2500000 overhead="$auto" ingress=false
expect_eq "cli ifb4wg0 link kind" ifb "$(link_kind cli ifb4wg0)"
expect_eq "cli ifb4wg0 is up" true \
	"$(inns cli ip -j link show dev ifb4wg0 | jq '.[0].flags | index("UP") != null')"
expect_cake cli ifb4wg0 bandwidth=1250000 overhead="$auto" ingress=true
expect_eq "cli wg0 ingress qdisc" "clsact ffff:" \
	"$(ingress_qdisc cli wg0 | jq -r '"\(.kind) \(.handle)"')"
expect_mirred_redirect cli wg0 ifb4wg0

step "server: egress only, overhead auto from the peer it knows"
expect_wgshape_ok srv set wg0 egress 30mbit
expect_cake srv wg0 bandwidth=3750000 overhead="$auto" ingress=false
expect_eq "srv has no ifb4wg0" no "$(link_exists srv ifb4wg0 && echo yes || echo no)"
expect_eq "srv wg0 has no ingress qdisc" '{}' "$(ingress_qdisc srv wg0)"

step "link-overhead adds the underlying link's framing to auto"
expect_wgshape_ok srv set wg0 egress 30mbit link-overhead 14
expect_cake srv wg0 bandwidth=3750000 overhead=$((auto + 14))

if [ "$family" = ipv4 ]; then
	step "peers of both families: auto takes the larger (80)"
	(umask 077 && wg genkey >"$LAB_TMP/extra.key")
	inns srv wg set wg0 peer "$(wg pubkey <"$LAB_TMP/extra.key")" \
		endpoint "[2001:db8:1::99]:51830" allowed-ips 10.200.0.99/32
	expect_wgshape_ok srv set wg0 egress 30mbit overhead auto link-overhead 0
	expect_cake srv wg0 bandwidth=3750000 overhead=80
fi

step "an explicit overhead wins over auto"
expect_wgshape_ok cli set wg0 egress 20mbit overhead 44
expect_cake cli wg0 bandwidth=2500000 overhead=44

step "tc's words: flow isolation, split-gso, fwmark, an rtt preset, ethernet framing"
# ethernet is link framing on top of auto, and ends the overhead set by hand above
expect_wgshape_ok cli set wg0 egress 20mbit dual-dsthost no-split-gso fwmark 0xff satellite ethernet
expect_cake cli wg0 flowmode=dual-dsthost split_gso=false rtt=1000000 mpu=84 atm=noatm \
	raw=false overhead=$((auto + 38))
# tc prints the mask in hexadecimal, with or without 0x as its version has it
expect_eq "cli wg0 cake fwmark is 0xff" true \
	"$(root_qdisc cli wg0 | jq '.options.fwmark | tostring | test("^(0x)?ff$|^255$")')"
expect_wgshape_ok cli show wg0
expect_match "'wgshape show wg0' names the new words" \
	'dual-dsthost .*no-split-gso rtt 1s noatm overhead '"$((auto + 38))"' mpu 84.* fwmark 0xff' "$WG_OUT"
expect_wgshape_ok cli -j show wg0
expect_eq "'wgshape -j show wg0' egress options" "dual-dsthost false 1000000 noatm 255" \
	"$(jq -r '.[0].egress.options | "\(.flow_mode) \(.split_gso) \(.rtt) \(.atm) \(.fwmark)"' <<<"$WG_OUT")"

step "the same words again change nothing (already as asked)"
expect_wgshape_ok cli -v set wg0 egress 20mbit dual-dsthost no-split-gso fwmark 0xff satellite ethernet
expect_match "'set' again" 'cake on wg0 already as asked' "$WG_ERR"

step "a word alone applies to both directions"
expect_wgshape_ok cli set wg0 dual-srchost
expect_cake cli wg0 flowmode=dual-srchost
expect_cake cli ifb4wg0 flowmode=dual-srchost ingress=true

step "conservative: atm with link-overhead 48; raw: no overhead at all"
expect_wgshape_ok cli set wg0 conservative
expect_cake cli wg0 atm=atm overhead=$((auto + 48)) raw=false
expect_wgshape_ok cli set wg0 raw
expect_cake cli wg0 raw=true overhead=0
expect_wgshape_ok cli -v set wg0 raw
expect_match "'set wg0 raw' again" 'cake on wg0 already as asked' "$WG_ERR"
expect_wgshape_ok cli set wg0 overhead auto triple-isolate split-gso fwmark 0 internet
expect_cake cli wg0 raw=false overhead="$auto" flowmode=triple-isolate split_gso=true \
	rtt=100000
expect_wgshape_fails cli "ethernet only adds to overhead auto" set wg0 raw ethernet
expect_wgshape_fails cli "dual-dsthosts" set wg0 dual-dsthosts

step "show"
expect_wgshape_ok cli show
expect_match "'wgshape show' output" 'wg0' "$WG_OUT"
expect_wgshape_ok cli show wg0
expect_match "'wgshape show wg0' output" 'wg0' "$WG_OUT"
expect_match "'wgshape show wg0' egress rate" '20 ?[Mm]bit' "$WG_OUT"
expect_wgshape_ok cli -j show wg0
if jq -e . >/dev/null 2>&1 <<<"$WG_OUT"; then
	pass "'wgshape -j show wg0' is JSON"
	expect_eq "'wgshape -j show wg0' names wg0" true \
		"$(jq '[.. | strings] | any(. == "wg0")' <<<"$WG_OUT")"
	expect_eq "'wgshape -j show wg0' has the egress rate in bit/s (20000000)" true \
		"$(jq '[.. | numbers] | any(. == 20000000)' <<<"$WG_OUT")"
	expect_eq "'wgshape -j show wg0' has the ingress rate in bit/s (10000000)" true \
		"$(jq '[.. | numbers] | any(. == 10000000)' <<<"$WG_OUT")"
else
	fail "'wgshape -j show wg0' is not JSON"
fi
expect_wgshape_ok cli --json show
if jq -e . >/dev/null 2>&1 <<<"$WG_OUT"; then
	pass "'wgshape --json show' is JSON"
	expect_eq "'wgshape --json show' names wg0" true \
		"$(jq '[.. | strings] | any(. == "wg0")' <<<"$WG_OUT")"
else
	fail "'wgshape --json show' is not JSON"
fi

finish
