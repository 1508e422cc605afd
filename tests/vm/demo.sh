#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The lab demo (`tests/vm/lab demo`): a simulated bloated line (netem: 20 Mbit,
# a 2000-packet buffer, 10 ms each way) with a real WireGuard tunnel over it.
# A 4-stream download runs through the tunnel while we ping through it:
# first unshaped, then with `wgshape set` on the server's tunnel (egress),
# then on the client's tunnel (ingress). Prints ping under load for each.
. "$(dirname "$0")/lib.sh"

need_wgshape
need_tools iperf3 ping ss

line=20mbit
shape=19mbit  # ~95% of the line
link_oh=14    # netem on the veth counts the Ethernet header too
ping_count=50 # at 0.2 s: 10 s under load

lab_topology ipv4
lab_bottleneck "$line" 10ms 2000
iperf_server srv "$SRV_TUN4"

# rtts COUNT: ping srv through the tunnel from cli, one RTT (ms) a line.
rtts() {
	inns cli ping -n -i 0.2 -c "$1" -W 2 "$SRV_TUN4" 2>/dev/null |
		sed -n 's/.* time=\([0-9.]*\) ms.*/\1/p' || true
}

# quantile Q: of the numbers on stdin.
quantile() {
	sort -n | awk -v q="$1" '{ v[NR] = $1 } END {
		if (NR == 0) { print "-"; exit }
		i = int(q * (NR - 1) + 0.5) + 1; printf "%.1f\n", v[i] }'
}

grade() {
	awk -v a="$1" 'BEGIN {
		if (a == "-") print "-"; else if (a < 5) print "A+"; else if (a < 30) print "A";
		else if (a < 60) print "B"; else if (a < 200) print "C"; else if (a < 400) print "D";
		else print "F" }'
}

rows=()
# measure LABEL: idle RTT, then RTT and download rate under a 4-stream download.
measure() {
	local label=$1 idle loaded med p95 added json rate lost
	step "$label"
	idle=$(rtts 10 | quantile 0.5)
	info "idle RTT through the tunnel: $idle ms"
	inns cli iperf3 -4 -c "$SRV_TUN4" -R -P 4 -t $((ping_count / 5 + 5)) -O 3 -J \
		>"$LAB_TMP/iperf.json" 2>&1 &
	local pid=$!
	sleep 3
	loaded=$(rtts "$ping_count")
	wait "$pid" || true
	rate=$(jq -r '.end.sum_received.bits_per_second // 0' "$LAB_TMP/iperf.json" 2>/dev/null || echo 0)
	med=$(quantile 0.5 <<<"$loaded")
	p95=$(quantile 0.95 <<<"$loaded")
	lost=$((ping_count - $(grep -c . <<<"$loaded" || true)))
	added=$(awk -v m="$med" -v i="$idle" 'BEGIN { if (m == "-" || i == "-") print "-"; else printf "%.1f\n", m - i }')
	info "under load: median $med ms, p95 $p95 ms, $lost of $ping_count pings lost, download $(mbit "$rate")"
	rows+=("$(printf '%-26s %7s %9s %7s %8s   %-5s %s' "$label" "$idle" "$med" "$p95" "$added" "$(grade "$added")" "$(mbit "$rate")")")
}

measure "no shaping"

step "on the server: wgshape set wg0 egress $shape link-overhead $link_oh"
expect_wgshape_ok srv set wg0 egress "$shape" link-overhead "$link_oh"
[ "$WG_RC" = 0 ] || die "wgshape set failed on the server"
measure "server egress $shape"
expect_wgshape_ok srv clear wg0

step "on the client instead: wgshape set wg0 ingress $shape link-overhead $link_oh"
expect_wgshape_ok cli set wg0 ingress "$shape" link-overhead "$link_oh"
[ "$WG_RC" = 0 ] || die "wgshape set failed on the client"
measure "client ingress $shape"
expect_wgshape_ok cli clear wg0

cat <<EOF

=====================================================================================
 wgshape lab demo: a $line line with a 2000-packet buffer and 10 ms each way,
 a WireGuard tunnel over it, a 4-stream download through the tunnel, ping through it.
 Kernel $(uname -r) (${LAB_MODE:-?}). RTT in ms; added = loaded median - idle.

 $(printf '%-26s %7s %9s %7s %8s   %-5s %s' "" idle "loaded" p95 added grade download)
EOF
for r in "${rows[@]}"; do echo " $r"; done
cat <<EOF

 server: wgshape set wg0 egress $shape link-overhead $link_oh   (the VPN server's tunnel)
 client: wgshape set wg0 ingress $shape link-overhead $link_oh  (the laptop's tunnel)
 Grades (DSLReports scale, on added latency): A+ <5, A <30, B <60, C <200, D <400, F.
=====================================================================================
EOF
finish
