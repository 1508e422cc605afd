# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# Load and latency helpers for the lab's tune scenario, its benchmark and the
# demo (source it after lib.sh). The yardstick is tools that are not ours:
# iperf3 with parallel streams through the tunnel, and ping alongside it.

SERVE_PORT=4780

# serve_start NS [ARGS...]: `wgshape serve` in NS in the background, until
# its port listens. SERVE_PID, SERVE_ERR.
serve_start() {
	local ns=$1 i
	shift
	SERVE_ERR=$LAB_TMP/serve-$ns.err
	# not through inns (a function): $! must be wgshape itself
	ip netns exec "$ns" "$WGSHAPE" serve "$@" >/dev/null 2>"$SERVE_ERR" &
	SERVE_PID=$!
	for i in $(seq 1 50); do
		inns "$ns" ss -Hltn "sport = :$SERVE_PORT" | grep . >/dev/null && {
			info "wgshape serve${*:+ $*} running in $ns (pid $SERVE_PID)"
			return 0
		}
		kill -0 "$SERVE_PID" 2>/dev/null || break
		sleep 0.1
	done
	die "wgshape serve $* in $ns did not start: $(cat "$SERVE_ERR")"
}

serve_stop() {
	[ -n "${SERVE_PID:-}" ] || return 0
	kill -TERM "$SERVE_PID" 2>/dev/null || true
	wait "$SERVE_PID" 2>/dev/null || true
	SERVE_PID=
}

# tune NS ARGS...: wgshape, timed (TUNE_SECS), through lib.sh's wgshape.
tune() {
	local t0 t1
	t0=$(date +%s.%N)
	wgshape "$@"
	t1=$(date +%s.%N)
	TUNE_SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }')
	info "took ${TUNE_SECS} s"
}

# tuned_rate DIR: the rate in the result line of a text `tune` run in WG_OUT
# ("wg0 DIR: 9799Kbit (97% of ..."), tc's spelling; empty if there is none.
tuned_rate() {
	sed -n "s/^wg0 $1: \([0-9.]*[KMG]*bit\) (.*/\1/p" <<<"$WG_OUT" | sed -n 1p
}

# pct A B: A as a whole percentage of B.
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%d\n", (b > 0) ? 100 * a / b : 0 }'; }

# rate_bits TC_RATE: tc's spelling (Kbit, Mbit... as wgshape prints) in bit/s.
rate_bits() {
	awk -v r="$1" 'BEGIN { n = r + 0; u = tolower(substr(r, length(n "") + 1))
		m["bit"] = 1; m["kbit"] = 1e3; m["mbit"] = 1e6; m["gbit"] = 1e9
		printf "%d\n", n * m[u] }'
}

# ping_rtts NS HOST COUNT [INTERVAL]: one RTT (ms) per line, one every
# INTERVAL seconds (0.2).
ping_rtts() {
	inns "$1" ping -4 -n -i "${4:-0.2}" -W 1 -c "$3" "$2" 2>/dev/null |
		sed -n 's/.* time=\([0-9.]*\) ms.*/\1/p'
}

# quantile Q: the Q-quantile (0..1) of the numbers on stdin (nearest rank).
quantile() {
	sort -g | awk -v q="$1" '{ v[NR] = $1 } END {
		if (!NR) { print "nan"; exit }
		i = int(q * NR + 0.999999); if (i < 1) i = 1; if (i > NR) i = NR; print v[i] }'
}

# grade ADDED_MS: the bufferbloat grade (DSLReports' scale) of added latency.
grade() {
	awk -v a="$1" 'BEGIN {
		if (a == "nan" || a == "") print "-"; else if (a < 5) print "A+"; else if (a < 30) print "A";
		else if (a < 60) print "B"; else if (a < 200) print "C"; else if (a < 400) print "D";
		else print "F" }'
}

# idle_rtt NS HOST: the idle RTT median, in ms (IDLE_P50).
idle_rtt() {
	local r
	r=$(ping_rtts "$1" "$2" 20)
	IDLE_P50=$(quantile 0.5 <<<"$r")
	info "idle RTT $1 -> $2: p50 $IDLE_P50 ms, p95 $(quantile 0.95 <<<"$r") ms"
}

# under_load NS SERVER [iperf3 options]: iperf3 with 4 streams for LOAD_SECS
# (default 10) after 2 s left out, with ping all along, 10 a second (the
# pings of those 2 s left out too). Sets LOAD_GOODPUT (bit/s), LOAD_P50,
# LOAD_P95 (added over IDLE_P50, ms), LOAD_LOST (pings). 10 a second, not 5:
# the p95 of 50 pings is their third worst, so three late replies failed a
# check whose median was 2.3 ms (tests/vm/README.md, "Pings under load").
LOAD_PING_HZ=10
under_load() {
	local ns=$1 server=$2 secs=${LOAD_SECS:-10} hz=$LOAD_PING_HZ pp json r n
	shift 2
	ping_rtts "$ns" "$server" $(((secs + 2) * hz)) "$(awk -v h="$hz" 'BEGIN { print 1 / h }')" >"$LAB_TMP/load-ping" &
	pp=$!
	json=$(inns "$ns" iperf3 -4 -c "$server" -t "$secs" -O 2 -P 4 -J "$@" 2>&1) || true
	wait "$pp" || true
	LOAD_GOODPUT=$(jq -r '.end.sum_received.bits_per_second // empty | floor' <<<"$json" 2>/dev/null) || true
	[ -n "$LOAD_GOODPUT" ] || die "iperf3 -c $server $* in $ns failed: $(jq -r '.error // empty' <<<"$json" 2>/dev/null || tail -3 <<<"$json")"
	r=$(tail -n +$((2 * hz + 1)) "$LAB_TMP/load-ping")
	n=$(grep -c . <<<"$r" || true)
	LOAD_LOST=$((secs * hz - n))
	LOAD_P50=$(quantile 0.5 <<<"$r" | awk -v i="$IDLE_P50" '{ printf "%.1f", $1 - i }')
	LOAD_P95=$(quantile 0.95 <<<"$r" | awk -v i="$IDLE_P50" '{ printf "%.1f", $1 - i }')
	info "iperf3 -P 4 $*: $(mbit "$LOAD_GOODPUT"), added latency p50 $LOAD_P50 ms, p95 $LOAD_P95 ms ($LOAD_LOST of $((secs * hz)) pings lost)"
}

# need_capacity LINE_RATE [FACTOR]: WireGuard unshaped must move at least
# FACTOR (3) times the line, or the emulated CPU, not the line, is measured.
# For benchmarks, whose lines are fixed; skips otherwise.
need_capacity() {
	local cap factor=${2:-3} need
	need=$((factor * $(rate_bytes "$1") * 8))
	cap=$(lab_capacity 3 "$need")
	[ "$cap" -lt "$need" ] ||
		return 0
	skip "the machine is too busy: WireGuard moves only $(mbit "$cap") unshaped, this needs $factor x $1"
}

# The tune scenarios' line: at most LINE_MAX_KBIT, a third of what the VM
# moves unshaped (so the line, not the emulated CPU, sets the pace), at least
# LINE_FLOOR_KBIT: at 5 and 6 Mbit/s (a packet takes 2.4 and 2 ms on the
# line) the ingress tune's confirmation steps (p95 under 15 ms) failed one
# run in two in the lab (tests/vm/README.md). The buffer holds 1.2 s of the line whatever its rate (100
# packets per Mbit/s, 1000 at 10 Mbit/s), so each line is as bloated in time.
LINE_MAX_KBIT=10000 LINE_FLOOR_KBIT=8000

# line_for_capacity CAP: "RATE LIMIT" (tc's spelling, packets) for a VM that
# moves CAP bit/s; nothing and status 1 when CAP cannot carry even the floor
# (under 1.5 times it: the lab itself cannot run).
line_for_capacity() {
	local kbit=$(($1 / 3000 / 100 * 100))
	[ "$1" -ge $((LINE_FLOOR_KBIT * 1500)) ] || return 1
	[ "$kbit" -le "$LINE_MAX_KBIT" ] || kbit=$LINE_MAX_KBIT
	[ "$kbit" -ge "$LINE_FLOOR_KBIT" ] || kbit=$LINE_FLOOR_KBIT
	echo "${kbit}kbit $((kbit / 10))"
}

# scale_line: measure the VM (lab_capacity, up to 3 tries) and set LINE_RATE
# and LINE_LIMIT from it; says which line it chose. Skips only when the VM
# cannot carry even the floor.
scale_line() {
	local cap line
	cap=$(lab_capacity 3 $((3 * LINE_MAX_KBIT * 1000)))
	line=$(line_for_capacity "$cap") ||
		skip "the lab cannot run here: WireGuard moves only $(mbit "$cap") unshaped, under 1.5 x the ${LINE_FLOOR_KBIT}kbit floor"
	read -r LINE_RATE LINE_LIMIT <<<"$line"
	info "line: $LINE_RATE, $LINE_DELAY each way, $LINE_LIMIT packets of buffer (the VM moves $(mbit "$cap") unshaped)"
}
