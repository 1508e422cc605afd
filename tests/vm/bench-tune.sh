#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Benchmark of `wgshape tune` on one bloated line (netem on the veth: LINE,
# 10 ms each way, 1000 packets of buffer), for the client's upload (egress:
# cake on cli's wg0) and download (ingress: cake on cli's IFB), against
# `wgshape serve` in srv. For each direction, measured with iperf3 (4
# streams) and ping, not with wgshape's own code:
#   unshaped        no cake
#   20% under       cake at 80% of the unshaped goodput (the rule of thumb)
#   tune            cake at the rate `wgshape tune` found (and how long it took)
#   sweep           cake at 1% steps of the line rate, up from SWEEP_FROM% (90)
#                   while the latency holds, down while it does not: the best
#                   rate is the highest whose added latency stays within tune's
#                   default target (median <= 5 ms, p95 <= 15 ms)
# It prints a table and asserts nothing (the lab VM is an emulated CPU on a
# shared host; the figures go to the README).
#
# Usage: lab run tests/vm/bench-tune.sh LINE [egress|ingress|both]
#   LINE: 10mbit, 20mbit, 40mbit... or DOWN/UP (30mbit/8mbit)
. "$(dirname "$0")/lib.sh"
. "$LAB_DIR/load.sh"

line=${1:?usage: bench-tune.sh LINE [egress|ingress|both]}
dirs=${2:-both}
[ "$dirs" = both ] && dirs="egress ingress"
down=${line%/*} up=${line#*/}
sweep_from=${SWEEP_FROM:-90}
target_p50=5 target_p95=15

need_wgshape
need_tools iperf3 ping ss jq

lab_topology ipv4
iperf_server srv "$SRV_TUN4"
bigger=$down
[ "$(rate_bytes "$up")" -le "$(rate_bytes "$bigger")" ] || bigger=$up
# twice the line: the tune's busiest-core figure shows when the CPU comes close
need_capacity "$bigger" 2
lab_bottleneck "$line" 10ms 1000
serve_start srv

ROWS=() SUMMARY=()
# row DIR WHAT RATE: a table row from the last under_load.
row() {
	ROWS+=("$(printf '%-8s %-10s %10s %10s %5s %7s %7s  %-3s %s' "$1" "$2" "$3" \
		"$(mbit "$LOAD_GOODPUT" | cut -d' ' -f1)" "$(pct "$LOAD_GOODPUT" "$UNSHAPED")%" \
		"$LOAD_P50" "$LOAD_P95" "$(grade "$LOAD_P50")" "${4:-}")")
}

# at DIR RATE: cake on cli at RATE (kbit), then iperf3 + ping.
at() {
	expect_wgshape_ok cli set wg0 "$1" "$2kbit"
	under_load cli "$SRV_TUN4" "${opt[@]}"
}

# holds: the last under_load kept the latency within the target.
holds() {
	awk -v a="$LOAD_P50" -v b="$LOAD_P95" -v x="$target_p50" -v y="$target_p95" \
		'BEGIN { exit !(a != "nan" && a <= x && b <= y) }'
}

for dir in $dirs; do
	opt=()
	line_kbit=$(($(rate_bytes "$up") * 8 / 1000))
	if [ "$dir" = ingress ]; then
		opt=(-R)
		line_kbit=$(($(rate_bytes "$down") * 8 / 1000))
	fi

	step "$dir: unshaped"
	idle_rtt cli "$SRV_TUN4"
	under_load cli "$SRV_TUN4" "${opt[@]}"
	UNSHAPED=$LOAD_GOODPUT
	row "$dir" unshaped -

	rule=$((UNSHAPED * 8 / 10 / 1000))
	step "$dir: 20% under the unshaped goodput: ${rule}kbit"
	at "$dir" "$rule"
	row "$dir" "20% under" "${rule}kbit"
	expect_wgshape_ok cli clear wg0

	step "$dir: wgshape tune wg0 $dir server $SRV_TUN4"
	tune cli -j tune wg0 "$dir" server "$SRV_TUN4"
	json=$WG_OUT
	tuned=$(jq -r '.[0].rate // 0 | . / 1000 | floor' <<<"$json" 2>/dev/null || echo 0)
	steps=$(jq -r '.[0].steps | length' <<<"$json" 2>/dev/null || echo '?')
	core=$(jq -r '[.[0].unshaped.busiest_core, .[0].steps[].busiest_core] | max * 100 | floor' <<<"$json" 2>/dev/null || echo '?')
	[ "$tuned" -gt 0 ] 2>/dev/null || die "$dir: tune found no rate: $WG_ERR"
	at "$dir" "$tuned"
	row "$dir" tune "${tuned}kbit" "$TUNE_SECS s, $steps steps, busiest core $core%"
	tuned_row=${#ROWS[@]}

	# the sweep: up from SWEEP_FROM% while it holds, or down until it does
	step "$dir: sweep in 1% steps of the $line_kbit kbit line"
	best=0 p=$sweep_from fails=0 dirn=0
	while [ "$p" -ge 50 ] && [ "$p" -le 110 ]; do
		r=$((line_kbit * p / 100))
		LOAD_SECS=8 at "$dir" "$r"
		info "sweep $p%: ${r}kbit $(holds && echo holds || echo 'does not hold')"
		if holds; then
			[ "$r" -le "$best" ] || best=$r
			[ "$dirn" != -1 ] || break # coming down: the first that holds
			dirn=1 fails=0 p=$((p + 1))
		else
			if [ "$dirn" = 1 ]; then
				fails=$((fails + 1))
				[ "$fails" -lt 2 ] || break # two in a row above the best: done
				p=$((p + 1))
			else
				dirn=-1 p=$((p - 1))
			fi
		fi
	done
	expect_wgshape_ok cli clear wg0
	ROWS[tuned_row - 1]+=", $(pct "$tuned" "$best")% of the sweep's best ${best}kbit"
	SUMMARY+=("$dir $line: tune ${tuned}kbit in $TUNE_SECS s = $(pct "$tuned" "$best")% of the sweep's best ${best}kbit")
done

cat <<EOF

=====================================================================================
 wgshape tune benchmark: line $line (down/up as seen by cli), 10 ms each way,
 1000 packets of buffer; kernel $(uname -r) (${LAB_MODE:-?}). iperf3 -P 4 + ping.
 goodput in Mbit/s, % of the unshaped; added latency in ms over idle ($target_p50/$target_p95 target).

 $(printf '%-8s %-10s %10s %10s %5s %7s %7s  %-3s %s' dir setting rate goodput "%" added50 added95 "" notes)
EOF
for r in "${ROWS[@]}"; do echo " $r"; done
echo
for r in "${SUMMARY[@]}"; do echo " $r"; done
echo "====================================================================================="
finish
