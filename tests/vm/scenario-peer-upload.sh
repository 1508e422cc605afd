#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The server shapes a peer's upload (issue 26, item 1): cli is a "phone"
# that runs WireGuard and nothing else; srv shapes what cli sends after the
# line, in a class of its own on wg0's IFB, matched by cli's source address
# (IPv4 and IPv6), with cake in ingress mode, so that cli's TCP backs off
# before cli's own line buffer fills.
#
# The line: cli's upload LINE_RATE (scale_line: a third of what the VM moves
# unshaped, 8 to 10 Mbit/s), 1.2 s of buffer, 10 ms each way; the download 4
# times as fast (only ACKs and echo replies go that way). The load: iperf3
# upload cli -> srv (IPv4 forced), with ping cli -> srv 10 times a second
# (load.sh's under_load). Rows on the same line:
#   unshaped, 4 streams   the control: the line's buffer fills
#   upload per peer, 4 streams and 1 stream
#                         `wgshape set wg0 peer CLI upload` at 85% of the line
# Checks: the shaped rows' p95 added latency at most 100 ms and at most half
# the control's, their goodput at least 60% of the line; the upload went
# through the peer's class on the IFB (its bytes grew by at least the
# goodput's worth) and IPv6 from cli's /128 too; show and the state say so;
# a new upload rate is one change of the class in place (-v says so);
# the download tree beside it; `upload off` takes the IFB away and leaves the
# download class; a bad rate is one line and no change; the daemon builds the
# same from `[peer] upload =`; clear puts wg0 back as it was.
. "$(dirname "$0")/lib.sh"
. "$LAB_DIR/load.sh"

need_wgshape
need_tools iperf3 jq ping
LOAD_SECS=${WGSHAPE_UPLOAD_SECS:-10}
LINE_DELAY=10ms
SHAPE_PCT=85
CONF=$LAB_TMP/srv.conf LOG=$LAB_TMP/srv-daemon.log
stop_on_exit

lab_topology ipv4
iperf_server srv "$SRV_TUN4"
scale_line
UP_K=$(($(rate_bits "$LINE_RATE") / 1000))
inns cli tc qdisc replace dev veth-cli root netem rate "${UP_K}kbit" delay "$LINE_DELAY" limit "$LINE_LIMIT"
inns srv tc qdisc replace dev veth-srv root netem rate "$((4 * UP_K))kbit" delay "$LINE_DELAY" limit "$((4 * LINE_LIMIT))"
info "line: ${UP_K}kbit up (cli -> srv), $((4 * UP_K))kbit down, $LINE_DELAY each way, $LINE_LIMIT packets of buffer up"
CLI_KEY=$(cat "$LAB_TMP/cli.pub")
SHAPE_K=$((UP_K * SHAPE_PCT / 100))
BEFORE=$(snapshot srv)
IFB=ifb4wg0

# ifb_class_for ADDR: the classid the IFB's flower filters send source ADDR to, or (none)
ifb_class_for() { htb_class_for srv "$IFB" "$1" src_ip; }
ifb_bytes() { htb_class_field srv "$IFB" "$1" bytes; }

step "unshaped: the control"
idle_rtt cli "$SRV_TUN4"
under_load cli "$SRV_TUN4"
CTRL_P95=$LOAD_P95
CTRL_GOODPUT=$LOAD_GOODPUT

step "bad input: one line, no change"
expect_wgshape_fails srv "upload: 'fast' is not a rate" set wg0 peer "$CLI_KEY" upload fast
expect_wgshape_fails srv "needs download RATE\|off or upload RATE\|off" set wg0 peer "$CLI_KEY"
expect_wgshape_fails srv "upload given twice" set wg0 peer "$CLI_KEY" upload 1mbit upload 2mbit

step "srv shapes cli's upload at ${SHAPE_K}kbit"
expect_wgshape_ok srv set wg0 peer "$CLI_KEY" upload "${SHAPE_K}kbit"
expect_eq "kind of $IFB" ifb "$(link_kind srv "$IFB")"
expect_mirred_redirect srv wg0 "$IFB"
expect_eq "root qdisc of $IFB" htb "$(root_field srv "$IFB" .kind)"
CID=$(ifb_class_for "$CLI_TUN4")
CID6=$(ifb_class_for "$CLI_TUN6")
expect_match "cli's class on $IFB (by source $CLI_TUN4)" '^1:[0-9a-f]+$' "$CID"
expect_eq "cli's IPv6 source goes to the same class" "$CID" "$CID6"
expect_eq "ceil of $CID" "$(rate_bits "${SHAPE_K}Kbit")" "$(rate_bits "$(htb_class_field srv "$IFB" "$CID" ceil)")"
LEAF=$(inns srv tc -j qdisc show dev "$IFB" | jq -r --arg p "$CID" '.[] | select(.parent == $p) | "\(.kind) \(.options.ingress // false)"')
expect_eq "cli's leaf on $IFB: cake in ingress mode" "cake true" "$LEAF"
expect_eq "wg0's root is left alone (no download shaping asked)" noqueue "$(root_field srv wg0 .kind)"
wgshape srv show wg0 --json
expect_eq "show: ingress per peer" true "$(jq -r '.[0].ingress.per_peer' <<<"$WG_OUT")"
expect_eq "show: cli's upload" "$((SHAPE_K * 1000))" "$(jq -r --arg k "$CLI_KEY" '.[0].ingress.classes[] | select(.public_key == $k) | .upload' <<<"$WG_OUT")"
expect_wgshape_ok srv set wg0 peer "$CLI_KEY" upload "${SHAPE_K}kbit"
expect_eq "set again: the same class" "$CID" "$(ifb_class_for "$CLI_TUN4")"
expect_wgshape_ok srv -v set wg0 peer "$CLI_KEY" upload "$((SHAPE_K / 2))kbit"
expect_match "a new upload rate: one change of the class in place" "class $CID \(upload\) changed in place" "$WG_ERR"
expect_eq "its ceil" "$(rate_bits "$((SHAPE_K / 2))Kbit")" "$(rate_bits "$(htb_class_field srv "$IFB" "$CID" ceil)")"
expect_wgshape_ok srv set wg0 peer "$CLI_KEY" upload "${SHAPE_K}kbit"

step "under load, 4 streams"
B0=$(ifb_bytes "$CID")
D0=$(ifb_bytes 1:2)
idle_rtt cli "$SRV_TUN4"
under_load cli "$SRV_TUN4"
P4_P95=$LOAD_P95 P4_GOODPUT=$LOAD_GOODPUT
B1=$(ifb_bytes "$CID")
D1=$(ifb_bytes 1:2)
info "cli's class $CID on $IFB: $(((B1 - B0) / 1000)) kB; the default class: $(((D1 - D0) / 1000)) kB"
# the goodput of 10 s, the 2 s left out not counted: a floor of what went through
expect_ge "bytes through cli's class" "$((P4_GOODPUT / 8 * LOAD_SECS))" "$((B1 - B0))"
expect_le "bytes through the default class" "$(((B1 - B0) / 100))" "$((D1 - D0))"
expect_le "p95 added latency, 4 streams (ms)" 100 "$P4_P95"
expect_le "p95 added latency, 4 streams, x2 (ms)" "$CTRL_P95" "$(awk -v p="$P4_P95" 'BEGIN { print 2 * p }')"
expect_ge "goodput, 4 streams (bit/s, 60% of the line)" "$((UP_K * 600))" "$P4_GOODPUT"

step "under load, 1 stream"
idle_rtt cli "$SRV_TUN4"
under_load cli "$SRV_TUN4" -P 1
P1_P95=$LOAD_P95 P1_GOODPUT=$LOAD_GOODPUT
expect_le "p95 added latency, 1 stream (ms)" 100 "$P1_P95"
expect_ge "goodput, 1 stream (bit/s, 60% of the line)" "$((UP_K * 600))" "$P1_GOODPUT"

step "IPv6 from cli's /128 takes the same class"
B0=$(ifb_bytes "$CID")
inns cli ping -6 -n -q -c 20 -i 0.05 -s 1000 "$SRV_TUN6" >/dev/null || fail "ping -6 through the tunnel"
B1=$(ifb_bytes "$CID")
expect_ge "IPv6 bytes through cli's class (20 x 1048)" 20960 "$((B1 - B0))"

step "download per peer beside it"
expect_wgshape_ok srv set wg0 peer "$CLI_KEY" download "$((2 * UP_K))kbit"
DCID=$(htb_class_for srv wg0 "$CLI_TUN4")
expect_eq "cli's download class on wg0: the same minor as its upload class" "$CID" "$DCID"
expect_eq "upload class kept" "$(rate_bits "${SHAPE_K}Kbit")" "$(rate_bits "$(htb_class_field srv "$IFB" "$CID" ceil)")"
STATE=$(cat "/run/wgshape/netns-$(inns srv stat -L -c %i /proc/self/ns/net)/wg0.state")
expect_match "state: cli's upload" "upload=$((SHAPE_K * 1000 / 8))" "$STATE"
expect_match "state: the IFB's tree" "per-peer=true" "$(sed -n '/^\[ingress\]/,/^\[/p' <<<"$STATE")"

step "upload off: the IFB goes, the download class stays"
expect_wgshape_ok srv set wg0 peer "$CLI_KEY" upload off
link_exists srv "$IFB" && fail "$IFB still there after upload off" || pass "$IFB gone"
expect_eq "ingress qdisc of wg0" "{}" "$(ingress_qdisc srv wg0)"
expect_eq "cli's download class" "$DCID" "$(htb_class_for srv wg0 "$CLI_TUN4")"
expect_wgshape_ok srv clear wg0
expect_same_snapshot "clear after set" "$BEFORE" "$(snapshot srv)"

step "the daemon, from [peer] upload ="
cat >"$CONF" <<EOF
[peer phone]
public-key = $CLI_KEY
upload = ${SHAPE_K}kbit
EOF
start_daemon srv "$CONF" "$LOG"
DPID=$DAEMON_PID
CID=$(ifb_class_for "$CLI_TUN4")
expect_match "the daemon's class for the phone on $IFB" '^1:[0-9a-f]+$' "$CID"
expect_eq "its ceil" "$(rate_bits "${SHAPE_K}Kbit")" "$(rate_bits "$(htb_class_field srv "$IFB" "$CID" ceil)")"
expect_eq "wg0's root is left alone" noqueue "$(root_field srv wg0 .kind)"
wgshape srv show wg0
expect_match "show: the phone's upload on $IFB" "ingress via $IFB per peer" "$WG_OUT"
expect_match "show: the phone's upload class" "phone .*: upload [0-9.]+[KMG]bit" "$WG_OUT"
wgshape srv metrics wg0
expect_match "metrics: the phone's upload rate, direction ingress (bytes/s)" \
	"wgshape_rate_bytes_per_second\\{[^}]*direction=\"ingress\"[^}]*peer=\"phone\"[^}]*\\} $((SHAPE_K * 125))" "$WG_OUT"
expect_match "metrics: the phone's leaf" 'wgshape_peer_leaf_info\{[^}]*peer="phone"' "$WG_OUT"
stop_daemon "$DPID"
DPID=''
expect_wgshape_ok srv clear wg0
expect_same_snapshot "clear after the daemon" "$BEFORE" "$(snapshot srv)"

step "figures"
info "row                     goodput        p95 added"
info "unshaped, 4 streams     $(mbit "$CTRL_GOODPUT")   $CTRL_P95 ms"
info "upload 85%, 4 streams   $(mbit "$P4_GOODPUT")   $P4_P95 ms"
info "upload 85%, 1 stream    $(mbit "$P1_GOODPUT")   $P1_P95 ms"
finish
