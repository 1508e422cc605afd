#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The lab demo (`tests/vm/lab demo`, the README's first command): a simulated
# bloated line (netem: 20 Mbit/s, a 2000-packet buffer, 10 ms each way) with
# a real WireGuard tunnel over it. The client runs `wgshape serve`; the VPN
# server runs `wgshape tune wg0 egress server CLIENT plot FILE save`, which
# finds the rate for its clients' download, saves it and applies it. Ping
# under a 4-stream download (iperf3, not ours) before and after; the chart
# goes to WGSHAPE_LAB_KEEP (tests/demo: ./lab-out).
. "$(dirname "$0")/lib.sh"
. "$LAB_DIR/load.sh"

need_wgshape
need_tools iperf3 ping ss jq

line=20mbit delay=10ms buffer=2000

lab_topology ipv4
lab_bottleneck "$line" "$delay" "$buffer"
iperf_server srv "$SRV_TUN4"
serve_start cli

rows=()
# measure LABEL: idle RTT, then RTT and the download rate under 4 streams.
measure() {
	step "$1: ping under a 4-stream download (iperf3 -R -P 4)"
	idle_rtt cli "$SRV_TUN4"
	under_load cli "$SRV_TUN4" -R
	rows+=("$(printf '%-30s %7s %9s %9s   %-5s %s' "$1" "$IDLE_P50" "$LOAD_P50" "$LOAD_P95" \
		"$(grade "$LOAD_P50")" "$(mbit "$LOAD_GOODPUT")")")
}

measure "no shaping"

# tune's own config beside the lab's files: save writes conf.d/90-tune.conf
# next to it and applies it to wg0, as on a real server.
conf=$LAB_TMP/etc/wgshape.conf
mkdir -p "${conf%/*}"
: >"$conf"
chart=$(lab_keep_path tune-demo.svg)
[ -n "$chart" ] || chart=$LAB_TMP/tune-demo.svg
step "on the VPN server: wgshape tune wg0 egress server $CLI_TUN4 plot FILE save"
tune srv -c "$conf" tune wg0 egress server "$CLI_TUN4" plot "$chart" save
[ "$WG_RC" = 0 ] || die "wgshape tune failed on the server: $WG_ERR"
tuned=$(tuned_rate egress)
[ -n "$tuned" ] || die "wgshape tune gave no rate"
info "saved: $(tr '\n' ' ' <"${conf%/*}/conf.d/90-tune.conf" | sed 's/#[^[]*//')"
wgshape srv show wg0

measure "wgshape tune: $tuned"

cat <<EOF

=====================================================================================
 wgshape lab demo: a $line line with a $buffer-packet buffer and $delay each way,
 a WireGuard tunnel over it, a 4-stream download through the tunnel, ping through it.
 Kernel $(uname -r) (${LAB_MODE:-?}). RTT in ms; added = under load - idle median.

 $(printf '%-30s %7s %9s %9s   %-5s %s' "" idle "added50" "added95" grade download)
EOF
for r in "${rows[@]}"; do echo " $r"; done
cat <<EOF

 on the server: wgshape tune wg0 egress server $CLI_TUN4 plot FILE save  ($TUNE_SECS s)
 on the client: wgshape serve
 Grades (DSLReports' scale, on added latency): A+ <5, A <30, B <60, C <200, D <400, F.
EOF
if [ -n "${WGSHAPE_LAB_KEEP:-}" ]; then
	echo " chart (added latency and goodput against the rate): $WGSHAPE_LAB_KEEP/tune-demo.svg"
fi
echo "====================================================================================="
finish
