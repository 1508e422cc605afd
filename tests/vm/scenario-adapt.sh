#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Continuous adaptation (issue 13), end to end on a real kernel: a tunnel
# over a line whose speed changes while both directions carry steady load.
#
# The line: netem on both veth ends (each direction), FAST for PHASE s, then
# SLOW for PHASE s, then FAST again; 10 ms each way; a buffer of 1.2 s at
# FAST (so 4.5 s at SLOW). FAST scales with what the VM moves unshaped (a
# sixth of it, 6 to 12 Mbit/s); SLOW is 4/15 of it (30 -> 8 Mbit/s scaled).
# The changes are timed from the run's start (tc on both ends at once), and
# each run's figures use the phases as they were: from the times tc's
# changes had taken effect.
# srv runs `wgshape daemon` with client-download = yes (it answers the
# probes and shapes cli's download in cli's own class); cli runs `wgshape
# daemon` with an [interface wg0] section. The load: iperf3 upload (cli ->
# srv) and download (-R), 2 streams each, IPv4 forced, through the tunnel
# (the servers are bound to srv's tunnel address), for the three phases,
# with ping cli -> srv 10 times a second all along (its RTT holds both
# directions' queues). Runs, each with the same timeline:
#
#   unshaped   no cake at all: the line's bloat (benchmark only)
#   adapt      egress and download = 95% of FAST, adapt = yes: the controllers
#   fast       the same rates fixed (what a tune at the fast phase gives): bloats
#              in the slow phase
#   slow       fixed at 95% of SLOW (benchmark only): wastes the fast phases
#   ingress    egress and ingress (the IFB) = 95% of FAST, adapt = yes: the
#              download shaped at the client (the server's daemon only
#              answers the probes); fast then slow only
#
# `scenario-adapt.sh` runs adapt, fast (its first two phases) and ingress;
# `scenario-adapt.sh all` (the benchmark adapt-compare) all five. First,
# the line's capacity (a buffer of 100 packets): both ways at once,
# unshaped, 6 s at each speed (its goodput, which the runs' goodput is a
# share of, time-averaged over each run's phases). Figures per run and
# phase: p95 added latency (RTT less the idle median), goodput per direction; per run:
# p95 over the whole run (the first 2 s of TCP's start left out), the time
# from the drop until the added latency stays under 30 ms for a second, the
# share of the line's goodput. cli's daemon's CPU time (from
# /proc/PID/stat) idle and under load, as seconds per hour.
#
# In CI, an adapt run that misses a goal runs once more (a busy host
# starves the emulated CPU, whose late answers look like a queue); the
# goals are asserted on the second.
#
# Assertions: adapt's p95 added latency <= 30 ms over the run and back under
# 30 ms within 2 s of the drop, goodput >= 80% of the line's; fast's
# slow phase bloats (p95 > 100 ms: the line can fail the test); the path:
# srv's class for cli was lowered during the slow phase (its ceil under the
# base, seen in its trace and in tc), cli's egress cake rate changed; the
# trace (adapt-log) has both directions, rates within the range, and draws
# (plot-trace); `show` gives each controlled direction; and when srv's daemon
# stops, cli says once that the far end stopped answering and puts its base
# rates back; ingress's IFB and egress cakes lowered in the slow phase (tc),
# its trace has ingress cuts and no download.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/load.sh"

need_wgshape
need_tools iperf3 ss jq
RUNS=${1:-ci}
MODE=$RUNS
case "$RUNS" in
ci) RUNS="adapt fast ingress" ;;
# slow before fast: ingress asks the server nothing, so the class the run
# before it left for cli (its lease: 180 s) must be the base rate's
all) RUNS="unshaped adapt slow fast ingress" ;;
*) die "scenario-adapt.sh: ci or all, not '$RUNS'" ;;
esac
PHASE=${WGSHAPE_ADAPT_PHASE:-15}
SKIP_S=2 # TCP's start, left out of the figures
SCONF=$LAB_TMP/srv.conf CCONF=$LAB_TMP/cli.conf
SLOG=$LAB_TMP/srv-daemon.log CLOG=$LAB_TMP/cli-daemon.log
TRACE=$LAB_TMP/adapt.trace
SPID='' CPID=''

ad_cleanup() {
	[ -z "$CPID" ] || kill "$CPID" 2>/dev/null || true
	[ -z "$SPID" ] || kill "$SPID" 2>/dev/null || true
	lab_cleanup
}
trap ad_cleanup EXIT

lab_topology ipv4
iperf_server srv "$SRV_TUN4"
inns srv iperf3 -s -B "$SRV_TUN4" -p 5202 -D --pidfile "$LAB_TMP/iperf3-srv2.pid" >/dev/null
lab_step_line
SLOW_BASE_K=$((SLOW_K * 95 / 100))
info "line: ${FAST_K}kbit -> ${SLOW_K}kbit -> ${FAST_K}kbit, $PHASE s each, both ways, 10 ms each way, $LIMIT packets of buffer"
lab_bottleneck "${FAST_K}kbit/${FAST_K}kbit" 10ms "$LIMIT"

# ---- the line's capacity -----------------------------------------------------

# both ways at once, unshaped, for 6 s (1 s of TCP's start left out): "up down" bit/s
both_ways() {
	local up dn
	inns cli iperf3 -4 -c "$SRV_TUN4" -t 6 -O 1 -P 2 -J >"$LAB_TMP/cap.up" 2>&1 &
	up=$!
	inns cli iperf3 -4 -c "$SRV_TUN4" -p 5202 -R -t 6 -O 1 -P 2 -J >"$LAB_TMP/cap.down" 2>&1 &
	dn=$!
	wait "$up" || true
	wait "$dn" || true
	echo "$(jq -r '.end.sum_received.bits_per_second | floor' "$LAB_TMP/cap.up")" \
		"$(jq -r '.end.sum_received.bits_per_second | floor' "$LAB_TMP/cap.down")"
}
# Measured with a buffer of 100 packets (100 ms at 12 Mbit/s, four times the
# path's BDP), not the line's 1.2 s: unshaped both ways, each direction's
# ACKs wait behind the other's full buffer, and 6 s of TCP then reads
# anything from 6 to 10.5 Mbit/s of a 12 Mbit/s line (a low figure made
# every run's share look better than it was). The rate is the line's.
CAP_LIMIT=100
step "the line's capacity: both ways at once, unshaped, at each speed ($CAP_LIMIT packets of buffer)"
lab_bottleneck "${FAST_K}kbit/${FAST_K}kbit" 10ms "$CAP_LIMIT" >/dev/null
read -r CAP_FAST_UP CAP_FAST_DOWN <<<"$(both_ways)"
lab_bottleneck "${SLOW_K}kbit/${SLOW_K}kbit" 10ms "$CAP_LIMIT" >/dev/null
read -r CAP_SLOW_UP CAP_SLOW_DOWN <<<"$(both_ways)"
lab_bottleneck "${FAST_K}kbit/${FAST_K}kbit" 10ms "$LIMIT" >/dev/null
[ -n "$CAP_FAST_UP" ] && [ -n "$CAP_SLOW_DOWN" ] || die "iperf3 failed measuring the line: $(tail -3 "$LAB_TMP/cap.up")"
info "at ${FAST_K}kbit: up $(mbit "$CAP_FAST_UP"), down $(mbit "$CAP_FAST_DOWN"); at ${SLOW_K}kbit: up $(mbit "$CAP_SLOW_UP"), down $(mbit "$CAP_SLOW_DOWN")"
# cap_run NAME: the time-averaged capacity of run NAME, both ways together,
# over the times its line was fast and slow (measured: from its .drop and
# .back, the times tc changed the line), the first SKIP_S s left out
cap_run() {
	local back
	back=$(cat "$LAB_TMP/$1.back" 2>/dev/null || echo "$(($(phases "$1") * PHASE))")
	awk -v e=$(($(phases "$1") * PHASE)) -v d="$(cat "$LAB_TMP/$1.drop")" -v b="$back" -v s="$SKIP_S" \
		-v f=$((CAP_FAST_UP + CAP_FAST_DOWN)) -v w=$((CAP_SLOW_UP + CAP_SLOW_DOWN)) \
		'BEGIN { printf "%d", ((d - s + e - b) * f + (b - d) * w) / (e - s) }'
}

# ---- the daemons ----------------------------------------------------------

cat >"$SCONF" <<CONF
[interface wg0]
client-download = yes
client-download-max = 100mbit
CONF
chmod 0600 "$SCONF"

start_daemon srv "$SCONF" "$SLOG"
SPID=$DAEMON_PID

# cli_conf RUN: cli's section for that run (none unshaped)
cli_conf() {
	case "$1" in
	unshaped) printf '' ;;
	adapt) printf '[interface wg0]\negress = %skbit\ndownload = %skbit\nserver = %s\nadapt = yes\nadapt-log = %s\n' \
		"$BASE_K" "$BASE_K" "$SRV_TUN4" "$TRACE" ;;
	fast) printf '[interface wg0]\negress = %skbit\ndownload = %skbit\nserver = %s\n' "$BASE_K" "$BASE_K" "$SRV_TUN4" ;;
	slow) printf '[interface wg0]\negress = %skbit\ndownload = %skbit\nserver = %s\n' "$SLOW_BASE_K" "$SLOW_BASE_K" "$SRV_TUN4" ;;
	ingress) printf '[interface wg0]\negress = %skbit\ningress = %skbit\nadapt = yes\nadapt-log = %s\n' \
		"$BASE_K" "$BASE_K" "$TRACE" ;;
	esac >"$CCONF"
	chmod 0600 "$CCONF"
}

# ---- one run ----------------------------------------------------------------

# run NAME: the timeline under cli's configuration for NAME; the figures in
# $LAB_TMP/NAME.*; RUN_P95, RUN_REACT, RUN_UP, RUN_DOWN (bit/s, whole run).
# phases NAME: how many phases a run has: fast and ingress stop after the
# slow one in CI (what they are checked for is there)
phases() {
	case "$MODE:$1" in
	ci:fast | *:ingress) echo 2 ;;
	*) echo 3 ;;
	esac
}

run() {
	local name=$1 t0 pp up dn nph secs i cls
	nph=$(phases "$name")
	secs=$((nph * PHASE))
	step "run '$name'"
	lab_bottleneck "${FAST_K}kbit/${FAST_K}kbit" 10ms "$LIMIT" >/dev/null
	cli_conf "$name"
	rm -f "$TRACE"
	start_daemon cli "$CCONF" "$CLOG"
	CPID=$DAEMON_PID
	if [ "$name" = ingress ]; then
		for i in $(seq 1 50); do
			[ "$(root_field cli ifb4wg0 .kind 2>/dev/null)" = cake ] && break
			sleep 0.1
		done
		info "cli's egress: $(root_field cli wg0 .options.bandwidth) bytes/s, its IFB: $(root_field cli ifb4wg0 .options.bandwidth) bytes/s"
	elif [ "$name" != unshaped ]; then
		# shaped both ways before the load: cli's cake, srv's class for cli
		for i in $(seq 1 50); do
			[ -n "$(cli_class)" ] && [ "$(root_field cli wg0 .kind)" = cake ] && break
			sleep 0.1
		done
		info "cli's egress: $(root_field cli wg0 .kind) $(root_field cli wg0 .options.bandwidth); srv's class for cli: $(cli_class)"
	fi
	idle_rtt cli "$SRV_TUN4"
	echo "$IDLE_P50" >"$LAB_TMP/$name.idle"
	cpu_mark "$CPID" "$LAB_TMP/$name.cpu0"

	t0=$EPOCHREALTIME
	echo "$t0" >"$LAB_TMP/$name.t0"
	inns cli ping -4 -D -n -i 0.1 -W 1 -w $((secs + 1)) "$SRV_TUN4" >"$LAB_TMP/$name.ping" 2>/dev/null &
	pp=$!
	inns cli iperf3 -4 -c "$SRV_TUN4" -t "$secs" -P 2 -i 1 -J >"$LAB_TMP/$name.up" 2>&1 &
	up=$!
	inns cli iperf3 -4 -c "$SRV_TUN4" -p 5202 -R -t "$secs" -P 2 -i 1 -J >"$LAB_TMP/$name.down" 2>&1 &
	dn=$!
	# the line's timeline (the schedule itself, not a wait for an event),
	# kept against t0: the changes and show take a while in the VM
	until_t "$t0" "$PHASE"
	line_now "$SLOW_K" "$t0" >"$LAB_TMP/$name.drop"
	info "t=$(cat "$LAB_TMP/$name.drop")s: the line drops to ${SLOW_K}kbit"
	until_t "$t0" $((2 * PHASE - 3))
	cls=$(cli_class)
	echo "$cls" >"$LAB_TMP/$name.slowclass"
	echo "$(root_field cli wg0 .options.bandwidth) $(root_field cli ifb4wg0 .options.bandwidth 2>/dev/null)" >"$LAB_TMP/$name.slowcake"
	[ "$name" != adapt ] || show_during
	rm -f "$LAB_TMP/$name.back"
	if [ "$nph" = 3 ]; then
		until_t "$t0" $((2 * PHASE))
		line_now "$FAST_K" "$t0" >"$LAB_TMP/$name.back"
		info "t=$(cat "$LAB_TMP/$name.back")s: the line is back at ${FAST_K}kbit"
	fi
	wait "$up" || true
	wait "$dn" || true
	wait "$pp" || true
	cpu_mark "$CPID" "$LAB_TMP/$name.cpu1"
	info "srv's class for cli late in the slow phase: ${cls:-none}"
	figures "$name" "$nph"
	if [ "$name" != adapt ]; then
		stop_daemon "$CPID"
		CPID=''
	fi
}

# line_now KBIT T0: the line at KBIT both ways, the two ends changed at once
# (one tc each, side by side); prints when both had, s after T0
line_now() {
	local a b
	inns srv tc qdisc replace dev veth-srv root netem rate "${1}kbit" delay 10ms limit "$LIMIT" &
	a=$!
	inns cli tc qdisc replace dev veth-cli root netem rate "${1}kbit" delay 10ms limit "$LIMIT" &
	b=$!
	wait "$a" || die "tc failed changing srv's end of the line"
	wait "$b" || die "tc failed changing cli's end of the line"
	awk -v a="$2" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f\n", b - a }'
}

show_during() {
	wgshape cli show wg0
	SHOW_OUT=$WG_OUT
}

# figures NAME: per phase p95 and goodput; RUN_* for the whole run.
figures() {
	local name=$1 nph=$2 t0 idle keep
	t0=$(cat "$LAB_TMP/$name.t0")
	idle=$(cat "$LAB_TMP/$name.idle")
	for d in up down; do
		jq -e '.intervals' "$LAB_TMP/$name.$d" >/dev/null 2>&1 ||
			die "iperf3 ($d) in run $name failed: $(tail -3 "$LAB_TMP/$name.$d")"
		# "start_s bits_per_second" per interval
		jq -r '.intervals[] | "\(.sum.start) \(.sum.bits_per_second)"' "$LAB_TMP/$name.$d" >"$LAB_TMP/$name.$d.iv"
	done
	# ping: "t_s added_ms" relative to t0
	awk -v t0="$t0" -v idle="$idle" '/time=/ { ts = substr($1, 2, length($1) - 2)
		for (i = 1; i <= NF; i++) if ($i ~ /^time=/) { v = substr($i, 6) }
		printf "%.3f %.1f\n", ts - t0, v - idle }' "$LAB_TMP/$name.ping" >"$LAB_TMP/$name.lat"
	# the phases' bounds: as the line changed (.drop, .back), not as planned
	local p r bounds
	bounds="$SKIP_S $(cat "$LAB_TMP/$name.drop") $(cat "$LAB_TMP/$name.back" 2>/dev/null || true) $((nph * PHASE))"
	for p in $(seq 1 "$nph"); do
		local from to
		from=$(echo "$bounds" | awk -v i="$p" '{ print $i }')
		to=$(echo "$bounds" | awk -v i="$p" '{ print $(i + 1) }')
		r=$(awk -v a="$from" -v b="$to" '$1 >= a && $1 < b { print $2 }' "$LAB_TMP/$name.lat" | quantile 0.95)
		printf '%s %s %s %s\n' "$p" "$r" \
			"$(awk -v a="$from" -v b="$to" '$1 >= a && $1 < b { s += $2; n++ } END { printf "%d", n ? s / n : 0 }' "$LAB_TMP/$name.up.iv")" \
			"$(awk -v a="$from" -v b="$to" '$1 >= a && $1 < b { s += $2; n++ } END { printf "%d", n ? s / n : 0 }' "$LAB_TMP/$name.down.iv")"
	done >"$LAB_TMP/$name.phases"
	while read -r p r u dn; do
		info "$name, phase $p ($([ "$p" = 2 ] && echo "${SLOW_K}" || echo "${FAST_K}")kbit): p95 added $r ms, up $(mbit "$u"), down $(mbit "$dn")"
	done <"$LAB_TMP/$name.phases"
	keep=$(lab_keep_path "adapt-$name.lat")
	[ -z "$keep" ] || cp "$LAB_TMP/$name.lat" "$keep"
	RUN_P95=$(awk -v a="$SKIP_S" '$1 >= a { print $2 }' "$LAB_TMP/$name.lat" | quantile 0.95)
	# from the drop (when tc had changed the line): the first ping over 30 ms
	# (none in the first 5 s: 0), then until 10 pings in a row are under 30 ms
	# again
	RUN_REACT=$(awk -v d="$(cat "$LAB_TMP/$name.drop")" -v e="$(echo "$bounds" | awk '{ print $3 }')" '$1 < d || $1 >= e { next }
		!over { if ($2 >= 30) over = 1; else if ($1 >= d + 5) { print "0.00"; found = 1; exit }; next }
		$2 < 30 { if (!run++) first = $1; if (run >= 10) { printf "%.2f\n", first - d; found = 1; exit }; next }
		{ run = 0 }
		END { if (!found) print "never" }' "$LAB_TMP/$name.lat")
	RUN_UP=$(awk -v a="$SKIP_S" '$1 >= a { s += $2; n++ } END { printf "%d", n ? s / n : 0 }' "$LAB_TMP/$name.up.iv")
	RUN_DOWN=$(awk -v a="$SKIP_S" '$1 >= a { s += $2; n++ } END { printf "%d", n ? s / n : 0 }' "$LAB_TMP/$name.down.iv")
	RUN_LOST=$(awk -v n=$((nph * PHASE * 10)) 'END { print n - NR }' "$LAB_TMP/$name.lat")
	info "$name, whole run: p95 added $RUN_P95 ms; under 30 ms $RUN_REACT s after the drop; up $(mbit "$RUN_UP"), down $(mbit "$RUN_DOWN"); about $RUN_LOST pings lost; cli's daemon $(cpu_per_hour "$LAB_TMP/$name.cpu0" "$LAB_TMP/$name.cpu1") CPU s/hour under this load"
	echo "$RUN_P95 $RUN_REACT $RUN_UP $RUN_DOWN $nph" >"$LAB_TMP/$name.run"
}

# adapt_goals: did the adapt run meet the goals asserted at the end?
adapt_goals() {
	local p95 react up down
	read -r p95 react up down _ <"$LAB_TMP/adapt.run"
	awk -v p="$p95" -v r="$react" -v g="$(pct $((up + down)) "$(cap_run adapt)")" \
		'BEGIN { exit !(p != "nan" && p + 0 <= 30 && r != "never" && r + 0 <= 2 && g + 0 >= 80) }'
}

for r in $RUNS; do
	run "$r"
	if [ "$r" = adapt ] && [ "$MODE" = ci ] && ! adapt_goals; then
		# Once more, as vm-peers retries a short row: a host that starves the
		# emulated CPU delays the probes' answers, and the controller cuts
		# for a queue that is the CPU's (tests/vm/README.md, "Continuous
		# adaptation"). The goals are asserted on this second run.
		info "adapt missed a goal (figures above); running it once more"
		stop_daemon "$CPID"
		CPID=''
		run "$r"
	fi
	if [ "$r" = adapt ]; then
		# ---- idle cost, show, the trace, the far end gone (cli's daemon still runs)
		step "adapt: idle cost, the trace, the far end gone"
		cpu_mark "$CPID" "$LAB_TMP/idle.cpu0"
		sleep 5 # the idle cost is measured over a span of time, not waiting for an event
		IDLE_ROWS0=$(grep -c ' none$' "$TRACE" || true)
		sleep 5
		IDLE_ROWS1=$(grep -c ' none$' "$TRACE" || true)
		cpu_mark "$CPID" "$LAB_TMP/idle.cpu1"
		IDLE_CPU=$(cpu_per_hour "$LAB_TMP/idle.cpu0" "$LAB_TMP/idle.cpu1")
		info "cli's daemon idle: $IDLE_CPU CPU s/hour"
		# idle, the daemon sends no probe (a sample is a trace row; 'none': no change)
		expect_eq "idle: no probe in 5 s (trace rows of samples)" 0 $((IDLE_ROWS1 - IDLE_ROWS0))
		expect_match "show during the slow phase: egress adapted" 'adapt egress' "$SHOW_OUT"
		expect_match "show during the slow phase: download adapted" 'adapt download' "$SHOW_OUT"
		ADAPT_LINES=$(grep -c . "$TRACE" || true)
		info "trace: $ADAPT_LINES lines; $(grep -c ' queue$' "$TRACE" || true) cuts, $(grep -c ' raise$' "$TRACE" || true) raises"
		expect_ge "trace: egress rows" 50 "$(grep -c ' egress ' "$TRACE" || true)"
		expect_ge "trace: download rows" 50 "$(grep -c ' download ' "$TRACE" || true)"
		expect_ge "trace: queue cuts (the drop was seen)" 1 "$(grep -c ' queue$' "$TRACE" || true)"
		OUTSIDE=$(awk -v lo="$((BASE_K * 1000 / 10))" -v hi="$((BASE_K * 1000))" '!/^#/ && ($3 < lo - 1000 || $3 > hi + 1000)' "$TRACE" | sed -n 1,3p)
		expect_eq "trace: every rate within [base/10, base] (the default range)" "" "$OUTSIDE"
		SVG=$(lab_keep_path adapt-trace.svg)
		[ -n "$SVG" ] || SVG=$LAB_TMP/adapt-trace.svg
		expect_wgshape_ok cli plot-trace "$TRACE" "$SVG"
		expect_match "plot-trace: an SVG" '<svg' "$(head -c 400 "$SVG")"
		KEEP=$(lab_keep_path adapt.trace)
		[ -z "$KEEP" ] || cp "$TRACE" "$KEEP"
		FROM=$(wc -l <"$CLOG")
		stop_daemon "$SPID"
		SPID=''
		# traffic brings the probes, which go unanswered (idle, none goes)
		inns cli iperf3 -4 -c "$SRV_TUN4" -t 12 -P 1 >/dev/null 2>&1 &
		LOSS_LOAD=$!
		if wait_for 10 "$CLOG" "$FROM" grep -q -m1 'stopped answering'; then
			pass "srv's daemon stopped: cli says the far end stopped answering"
		else
			fail "srv's daemon stopped: cli did not say so within 10 s"
		fi
		for i in $(seq 1 30); do
			[ "$(root_field cli wg0 .options.bandwidth)" = "$((BASE_K * 1000 / 8))" ] && break
			sleep 0.1
		done
		expect_eq "cli's egress back at the base rate (bytes/s)" "$((BASE_K * 1000 / 8))" "$(root_field cli wg0 .options.bandwidth)"
		sleep 4 # that it is said once: nothing more comes over a few seconds of silence
		expect_eq "said once" 1 "$(tail -n +"$((FROM + 1))" "$CLOG" | grep -c 'stopped answering' || true)"
		kill "$LOSS_LOAD" 2>/dev/null || true # its 12 s may be over
		wait "$LOSS_LOAD" 2>/dev/null || true # killed: 143
		stop_daemon "$CPID"
		CPID=''
		start_daemon srv "$SCONF" "$SLOG"
		SPID=$DAEMON_PID
	fi
	if [ "$r" = ingress ]; then
		# the download shaped at cli's IFB, adapted there; the server's
		# class for cli plays no part (its lease from the adapt run, if
		# any, is at the base rate or above)
		step "ingress: the IFB's cake followed the line"
		info "trace: $(grep -c ' ingress ' "$TRACE" || true) ingress rows; $(grep -c ' ingress .* queue$' "$TRACE" || true) cuts"
		expect_ge "trace: ingress rows" 50 "$(grep -c ' ingress ' "$TRACE" || true)"
		expect_ge "trace: ingress queue cuts" 1 "$(grep -c ' ingress .* queue$' "$TRACE" || true)"
		expect_eq "trace: no download rows (no download = in the section)" 0 "$(grep -c ' download ' "$TRACE" || true)"
		read -r EG_SLOW IN_SLOW <"$LAB_TMP/ingress.slowcake"
		info "late in the slow phase: cli's egress cake at $EG_SLOW bytes/s, its IFB's at $IN_SLOW (base $((BASE_K * 125)))"
		expect_ge "ingress: the IFB's cake lowered in the slow phase (base - it, bytes/s)" \
			$((BASE_K * 125 / 2)) $((BASE_K * 125 - ${IN_SLOW:-$((BASE_K * 125))}))
		expect_ge "ingress: the egress cake lowered in the slow phase (base - it, bytes/s)" \
			$((BASE_K * 125 / 2)) $((BASE_K * 125 - ${EG_SLOW:-$((BASE_K * 125))}))
	fi
done

# ---- the comparison ----------------------------------------------------------

step "the comparison"
info "the line's goodput, time-averaged over adapt's run (its phases as measured), both ways: $(mbit "$(cap_run adapt)")"
printf '   %-9s %9s %9s %9s %9s %11s %11s %8s\n' run "p95 fast" "p95 slow" "p95 all" "react s" "up" "down" "of line"
for r in $RUNS; do
	read -r P95 REACT UP DOWN _ <"$LAB_TMP/$r.run"
	SLOWP=$(awk '$1 == 2 { print $2 }' "$LAB_TMP/$r.phases")
	FASTP=$(awk '$1 != 2 { print $2 }' "$LAB_TMP/$r.phases" | sort -g | tail -1)
	printf '   %-9s %9s %9s %9s %9s %11s %11s %7d%%\n' "$r" "$FASTP" "$SLOWP" "$P95" "$REACT" "$(mbit "$UP")" "$(mbit "$DOWN")" \
		"$(pct $((UP + DOWN)) "$(cap_run "$r")")"
done
info "cli's daemon: idle $IDLE_CPU CPU s/hour; under load $(cpu_per_hour "$LAB_TMP/adapt.cpu0" "$LAB_TMP/adapt.cpu1") CPU s/hour"

read -r P95 REACT UP DOWN _ <"$LAB_TMP/adapt.run"
expect_le "adapt: p95 added latency over the run (ms)" 30 "$P95"
if [ "$REACT" != never ] && awk -v r="$REACT" 'BEGIN { exit !(r <= 2) }'; then
	pass "adapt: under 30 ms $REACT s after the drop (<= 2 s)"
else
	fail "adapt: under 30 ms $REACT s after the drop (must be <= 2 s)"
fi
expect_ge "adapt: goodput, % of the line's (time-averaged)" 80 "$(pct $((UP + DOWN)) "$(cap_run adapt)")"
FAST_SLOW=$(awk '$1 == 2 { print $2 }' "$LAB_TMP/fast.phases")
expect_ge "fast (fixed): the slow phase bloats (p95 ms; the line can fail the test)" 100 "${FAST_SLOW%.*}"
read -r _ CEIL <"$LAB_TMP/adapt.slowclass" || true
info "srv's class for cli in the slow phase: ${CEIL:-none} (base ${BASE_K}kbit)"
expect_ge "adapt: srv's class for cli lowered in the slow phase (base - ceil, kbit)" 1 \
	"$(( (BASE_K * 1000 - $(rate_bits "${CEIL:-${BASE_K}kbit}")) / 1000 ))"
finish
