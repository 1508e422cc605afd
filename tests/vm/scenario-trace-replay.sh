#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The trace replay itself (tests/vm/trace-replay, lib.sh's trace_line), so
# that the benchmark's line (scenario-traces.sh) cannot rot unseen: 20 s of
# ATT-LTE-driving.down, scaled by 0.5, on veth-srv, with iperf3 -R through
# the tunnel.
#
# Asserts: the trace line's idle RTT is plain netem's at the same delay
# (20 ms each way) +- 25%; the replay wrote at least 90% of its windows
# within a window of their time; tc monitor sees the HTB class take each
# window's rate in order (95% of them), half of them within 100 ms of the
# write (p95 printed: 680 ms at a host load of 17); the download's goodput is no more than the windows it ran in let
# through (110% of their mean in TCP payload: HTB's burst lends a little),
# and is printed as a share of it.
. "$(dirname "$0")/lib.sh"
. "$LAB_DIR/load.sh"

need_tools iperf3 ss jq ping python3
REPLAY=$LAB_DIR/trace-replay
RATES=$LAB_DIR/../traces/ATT-LTE-driving.down.rates
OFFSET=30 SECS=20 SCALE=0.5

lab_topology ipv4
iperf_server srv "$SRV_TUN4"

step "the base RTT: plain netem (the lab's usual line), then the trace line"
# 20 ms each way either way; the trace line's netem has HTB under it. Set
# against plain netem, not against 40 ms: a starved emulated CPU adds tens
# of ms to every timer (77 ms for 40 at a host load of 17), to both alike.
inns srv tc qdisc replace dev veth-srv root netem delay 20ms limit 1000
inns cli tc qdisc replace dev veth-cli root netem delay 20ms limit 100000
idle_rtt cli "$SRV_TUN4"
PLAIN=$IDLE_P50
trace_line srv veth-srv 4000 20ms 1000
idle_rtt cli "$SRV_TUN4"
expect_within "the trace line's idle RTT (ms; plain netem's: $PLAIN)" "$PLAIN" "$IDLE_P50" 25

step "$SECS s of $(basename "$RATES") from $OFFSET s, scaled by $SCALE, under iperf3 -R"
read -r _ MEAN _ _ _ MAX ZEROS <<<"$("$REPLAY" stats "$RATES" --offset "$OFFSET" --duration "$SECS" --scale "$SCALE")"
info "the schedule: mean $MEAN kbit/s, max $MAX, $ZEROS empty windows"
LOG=$LAB_TMP/replay.log MON=$LAB_TMP/monitor
# the kernel's own word for each change: tc monitor's class events, stamped
stamped_monitor srv "$MON"
: >"$LOG"
"$REPLAY" run --line "srv:veth-srv:$RATES" --offset "$OFFSET" --duration "$SECS" --scale "$SCALE" --log "$LOG" &
RPID=$!
wait_for 30 "$LOG" 0 grep -q -m1 t0_realtime || die "trace-replay did not start: its log: $(cat "$LOG")"
# the load inside the replay's span, the span's windows its yardstick
L0=$EPOCHREALTIME
inns cli iperf3 -4 -c "$SRV_TUN4" -R -t $((SECS - 5)) -P 4 -J >"$LAB_TMP/down.json" 2>&1 || true
L1=$EPOCHREALTIME
wait "$RPID" || fail "trace-replay exited with an error"
sleep 1 # the last events through tc monitor: a second of slack, not an event to wait for
kill "$STAMPED_PID" 2>/dev/null || true

WINDOWS=$(grep -c '^[0-9]' "$LOG")
LATE=$(sed -n 's/^# end .* late \([0-9]*\)$/\1/p' "$LOG")
T0=$(sed -n 's/^# t0_realtime //p' "$LOG")
# "stamp kbit" of each class change tc monitor saw on veth-srv
awk '/class htb 2:1 dev veth-srv/ { for (i = 1; i < NF; i++) if ($i == "rate") print $1, $(i + 1) }' "$MON" |
	while read -r t r; do echo "$t $(($(rate_bits "$r") / 1000))"; done >"$LAB_TMP/events"
info "replay: $WINDOWS windows written, ${LATE:-?} more than a window late; tc monitor saw $(grep -c . "$LAB_TMP/events") changes of the class"
expect_eq "windows written" $((SECS * 10)) "$WINDOWS"
expect_ge "windows written within a window of their time (%)" 90 "$(pct $((WINDOWS - ${LATE:-$WINDOWS})) "$WINDOWS")"
# the n-th event is the n-th window (the floor: 8 kbit/s), within 1% (tc
# prints 3 figures); its lag after the write
awk -v t0="$T0" 'FNR == NR { if ($1 ~ /^[0-9]/) { n++; w[n] = t0 + $2; r[n] = ($3 < 8 ? 8 : $3) }; next }
	{ e++; d = $2 - r[e]; if (d < 0) d = -d
	  if (e <= n && d <= r[e] / 100) { ok++; printf "%.1f\n", ($1 - w[e]) * 1000 > "/dev/stderr" } }
	END { printf "%d\n", n ? 100 * ok / n : 0 }' "$LOG" "$LAB_TMP/events" 2>"$LAB_TMP/lags" >"$LAB_TMP/match"
expect_ge "windows whose rate the kernel took, in order (%)" 95 "$(cat "$LAB_TMP/match")"
LAG50=$(quantile 0.5 <"$LAB_TMP/lags")
info "from the write to tc monitor's event: p50 $LAG50 ms, p95 $(quantile 0.95 <"$LAB_TMP/lags") ms"
expect_ge "the kernel took half the changes within a window of their write (100 - p50 ms)" 0 \
	"$(awk -v l="$LAG50" 'BEGIN { printf "%d", 100 - l }')"

GOT=$(jq -r '.end.sum_received.bits_per_second | floor' "$LAB_TMP/down.json" 2>/dev/null || echo 0)
# the windows the load ran in: their mean rate, in TCP payload
SPAN=$(awk -v t0="$T0" -v a="$L0" -v b="$L1" '$1 ~ /^[0-9]/ && t0 + $2 >= a && t0 + $2 < b { s += $3; n++ }
	END { printf "%d", n ? s / n : 0 }' "$LOG")
CAN=$((SPAN * 1000 * 1368 / 1494))
info "goodput $(mbit "$GOT"): $(pct "$GOT" "$CAN")% of what the windows it ran in let through in TCP payload ($(mbit "$CAN"))"
[ "$GOT" -gt 0 ] || fail "iperf3 -R failed: $(tail -3 "$LAB_TMP/down.json")"
expect_ge "the line holds the download to its schedule (110% of its windows' mean - goodput, %)" 0 \
	$((110 - $(pct "$GOT" "$CAN")))
finish
