#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A real cellular line in the lab (issue 24): a trace pair of tests/traces
# replayed as the line between srv and cli, both directions at once, and
# every way of shaping the tunnel over it, under the same load, side by side.
# A benchmark: it prints a table and asserts only that each row ran.
#
#   scenario-traces.sh TRACE     e.g. ATT-LTE-driving (tests/traces/TRACE.down.rates
#                                and, when there is one, TRACE.up.rates)
#
# The line: on veth-srv (the download) and veth-cli (the upload), netem 1:
# with 20 ms of delay as the root (40 ms of base RTT), under it HTB 2: with
# one class whose rate trace-replay changes in place every 100 ms (one
# long-lived `tc -batch` per direction, on the monotonic clock) and a pfifo
# of 1,000 packets (lib.sh, trace_line). The segment: SECS (60) from OFFSET
# (0; 60 for TMobile, whose first minute is mostly empty). When the VM cannot
# carry the segment's peaks (the heaviest window of each direction together
# over a third of what WireGuard moves here unshaped), every window is
# scaled by the same factor, a multiple of 0.05, and the table says so.
#
# Rows (WGSHAPE_TRACES_ROWS selects and orders them):
#   unshaped       nothing but the line
#   fixed          cli's egress and ingress (IFB) at what `wgshape tune` finds
#                  on the replayed line (each direction tuned while it plays);
#                  where tune gives no rate, the segment's median window
#   adapt          cli `adapt = yes`, egress and download (at srv's daemon,
#                  through the rate channel), base = the segment's p90 window
#   adapt-ifb      the same with the download at cli's IFB (ingress =)
#   cake-autorate  cli's egress and IFB cakes (wgshape set) driven by
#                  cake-autorate (WGSHAPE_CAKE_AUTORATE: its folder; not
#                  shipped), srv as its only reflector, range [p90/10, p90]
#   server-fixed   cli runs nothing (a phone): srv's classes for cli at the
#                  segment's p90 windows ([peer] download =, and upload =
#                  when the trace has an upload: its class on srv's IFB)
#   server-adapt   the same with [peer] adapt = yes: srv's daemon adapts the
#                  download (and upload) from ICMP echoes to cli (issue 26)
#   server-cake-autorate
#                  cli runs nothing; srv's egress and IFB cakes (wgshape set:
#                  the whole interface, cli its one peer) driven by
#                  cake-autorate in srv, cli's tunnel address its only
#                  reflector: its "download" is srv's IFB (the phone's
#                  upload), its "upload" srv's wg0 (the phone's download)
#   limit          no shaper on the tunnel: the line itself is cake, told
#                  each window's rate (trace-replay --mode cake)
#
# The load, each row: iperf3 -R -P 4 (download) and, when the trace has an
# upload (and WGSHAPE_TRACES_UPLOAD is not no), iperf3 -P 2 (upload), IPv4, to
# srv's tunnel address, for SECS; ping cli -> srv through the tunnel 10 times
# a second. Columns: goodput per direction (iperf3's receiver, the whole run)
# as a share of what the line could carry in that time: the schedule's mean
# rate times 1368/1494, a full TCP segment's payload over what HTB counts for
# it on the veth (1420-byte tunnel packets: +32 WireGuard, +28 UDP/IP, +14
# Ethernet); the download's ACKs that share the upload's line are not taken
# off. Added latency p50, p95, p99 over the idle RTT (measured once, at the
# segment's p90 rates), the first 2 s of TCP's start left out; pings lost.
# CPU: cli's daemon (/proc/PID/stat) or cake-autorate and everything it forks
# (a cgroup of its own), in % of one core over the run; for the server-* rows,
# srv's daemon.
. "$(dirname "$0")/lib.sh"
. "$LAB_DIR/load.sh"

need_wgshape
need_tools iperf3 ss jq ping python3
TRACE=${1:-}
RATES_DIR=$LAB_DIR/../traces
[ -n "$TRACE" ] && [ -f "$RATES_DIR/$TRACE.down.rates" ] ||
	die "usage: scenario-traces.sh TRACE, with tests/traces/TRACE.down.rates (not '$TRACE')"
DOWN_RATES=$RATES_DIR/$TRACE.down.rates
UP_RATES=$RATES_DIR/$TRACE.up.rates
[ -f "$UP_RATES" ] || UP_RATES=''
ROWS=${WGSHAPE_TRACES_ROWS:-unshaped fixed adapt adapt-ifb cake-autorate server-fixed server-adapt server-cake-autorate limit}
SECS=${WGSHAPE_TRACES_SECS:-60}
# WGSHAPE_TRACES_UPLOAD=no: the download's load alone (the line still plays
# both ways): what shaping the download alone can do (a phone's upload, not
# shaped by the server-* rows, fills its line's buffer otherwise)
LOAD_UP=${WGSHAPE_TRACES_UPLOAD:-yes}
case "$TRACE" in
TMobile-*) OFFSET=${WGSHAPE_TRACES_OFFSET:-60} ;;
*) OFFSET=${WGSHAPE_TRACES_OFFSET:-0} ;;
esac
DELAY=20ms LIMIT=1000 SKIP_S=2
REPLAY=$LAB_DIR/trace-replay
CAKE_AUTORATE=${WGSHAPE_CAKE_AUTORATE:-}
SCONF=$LAB_TMP/srv.conf CCONF=$LAB_TMP/cli.conf
SLOG=$LAB_TMP/srv-daemon.log CLOG=$LAB_TMP/cli-daemon.log
ATRACE=$LAB_TMP/adapt.trace
SPID='' CPID='' APID='' RPID='' MPID=''

tr_cleanup() {
	local p
	for p in $RPID $APID $CPID $SPID; do
		kill "$p" 2>/dev/null || true
	done
	lab_cleanup
}
trap tr_cleanup EXIT

lab_topology ipv4
iperf_server srv "$SRV_TUN4"
inns srv iperf3 -s -B "$SRV_TUN4" -p 5202 -D --pidfile "$LAB_TMP/iperf3-srv2.pid" >/dev/null

# ---- the segment and its scale -------------------------------------------------

# stats FILE OFFSET SECS [SCALE]: "windows mean p50 p10 p90 max zeros" (kbit/s)
stats() { "$REPLAY" stats "$1" --offset "$2" --duration "$3" --scale "${4:-1}"; }
field() { awk -v i="$1" '{ print $i }'; }
DMAX=$(stats "$DOWN_RATES" "$OFFSET" "$SECS" | field 6)
UMAX=0
[ -z "$UP_RATES" ] || UMAX=$(stats "$UP_RATES" "$OFFSET" "$SECS" | field 6)
CAP=$(lab_capacity 2 $((3 * (DMAX + UMAX) * 1000)))
SCALE=$(awk -v c="$CAP" -v m=$((DMAX + UMAX)) 'BEGIN { s = c / 3 / (m * 1000)
	if (s >= 1) s = 1; else s = int(s * 20) / 20; printf "%.2f", s }')
awk -v s="$SCALE" 'BEGIN { exit !(s > 0) }' ||
	skip "the machine is too busy: WireGuard moves only $(mbit "$CAP") unshaped, the segment's peak is $((DMAX + UMAX)) kbit/s"
# over the figures' span (the first SKIP_S s left out), scaled
read -r _ DN_MEAN DN_P50 _ DN_P90 DN_MAX DN_ZEROS <<<"$(stats "$DOWN_RATES" $((OFFSET + SKIP_S)) $((SECS - SKIP_S)) "$SCALE")"
UP_MEAN=0 UP_P50=0 UP_P90=0 UP_MAX=0 UP_ZEROS=0
[ -z "$UP_RATES" ] ||
	read -r _ UP_MEAN UP_P50 _ UP_P90 UP_MAX UP_ZEROS <<<"$(stats "$UP_RATES" $((OFFSET + SKIP_S)) $((SECS - SKIP_S)) "$SCALE")"
# what the line could carry, in TCP payload (bit/s)
payload() { echo $(($1 * 1000 * 1368 / 1494)); }
DN_CAN=$(payload "$DN_MEAN") UP_CAN=$(payload "$UP_MEAN")
step "the line: $TRACE, ${SECS} s from ${OFFSET} s, scale $SCALE"
info "down: mean $DN_MEAN kbit/s, p50 $DN_P50, p90 $DN_P90, max $DN_MAX, $DN_ZEROS empty windows (of $(((SECS - SKIP_S) * 10)))"
[ -z "$UP_RATES" ] || info "up: mean $UP_MEAN kbit/s, p50 $UP_P50, p90 $UP_P90, max $UP_MAX, $UP_ZEROS empty windows"
if [ "$SCALE" != 1.00 ]; then
	info "scaled by $SCALE: the segment's heaviest windows ($DMAX + $UMAX kbit/s) over a third of the $(mbit "$CAP") WireGuard moves here"
fi

# lines KIND: both directions as trace lines at the p90 rates (replays
# change them from their first window)
lines() {
	trace_line srv veth-srv "$DN_P90" "$DELAY" "$LIMIT" "$1"
	if [ -n "$UP_RATES" ]; then
		trace_line cli veth-cli "$UP_P90" "$DELAY" "$LIMIT" "$1"
	else
		inns cli tc qdisc replace dev veth-cli root netem delay "$DELAY" limit 100000
	fi
}

# replay KIND SECS LOG: both directions from OFFSET in the background (RPID)
replay() {
	local args=(--line "srv:veth-srv:$DOWN_RATES")
	[ -z "$UP_RATES" ] || args+=(--line "cli:veth-cli:$UP_RATES")
	"$REPLAY" run "${args[@]}" --mode "$1" --offset "$OFFSET" --duration "$2" \
		--scale "$SCALE" --log "$3" 2>>"$LAB_TMP/replay.err" &
	RPID=$!
}
replay_end() {
	[ -n "$RPID" ] || return 0
	kill "$RPID" 2>/dev/null || true
	wait "$RPID" 2>/dev/null || true
	RPID=''
}

step "the base RTT, the line idle at its p90 rates"
lines htb
idle_rtt cli "$SRV_TUN4"
BASE_RTT=$IDLE_P50
info "base RTT through the tunnel: $BASE_RTT ms (netem: $DELAY each way)"

# ---- the rows' rates ---------------------------------------------------------

# the fixed row: tune each direction while the segment plays (up to 150 s of
# it, 2 minutes a tune at most)
FIX_DN='' FIX_UP='' FIX_HOW=''
fixed_rates() {
	local dir secs total
	total=$(($(grep -c '^[0-9]' "$DOWN_RATES") / 10 - OFFSET))
	secs=150
	[ "$secs" -le "$total" ] || secs=$total
	serve_start srv
	for dir in egress ingress; do
		[ "$dir" = ingress ] || [ -n "$UP_RATES" ] || continue
		lines htb
		replay htb "$secs" "$LAB_TMP/tune-$dir.replay"
		WG_WRAP="timeout 120"
		wgshape cli tune wg0 "$dir" server "$SRV_TUN4"
		WG_WRAP=
		replay_end
		if [ "$dir" = egress ]; then FIX_UP=$(tuned_rate egress); else FIX_DN=$(tuned_rate ingress); fi
	done
	serve_stop
	if [ -n "$FIX_DN" ]; then FIX_DN=$(($(rate_bits "$FIX_DN") / 1000)); else FIX_DN=$DN_P50 FIX_HOW="down: median window (tune gave no rate)"; fi
	if [ -n "$UP_RATES" ]; then
		if [ -n "$FIX_UP" ]; then FIX_UP=$(($(rate_bits "$FIX_UP") / 1000)); else FIX_UP=$UP_P50 FIX_HOW="${FIX_HOW:+$FIX_HOW; }up: median window (tune gave no rate)"; fi
	fi
	FIX_HOW=${FIX_HOW:-tune}
	info "fixed: down ${FIX_DN} kbit/s, up ${FIX_UP:-none} kbit/s ($FIX_HOW)"
}
# the floor: cake takes no rate under 8 kbit/s from wgshape's words either
[ "$DN_P90" -ge 80 ] || DN_P90=80
[ -z "$UP_RATES" ] || [ "$UP_P90" -ge 80 ] || UP_P90=80
case " $ROWS " in *" fixed "*) step "the fixed row's rates: wgshape tune on the replayed line"; fixed_rates ;; esac

cat >"$SCONF" <<CONF
[interface wg0]
client-download = yes
client-download-max = 100mbit
CONF
chmod 0600 "$SCONF"

# cli_conf ROW: cli's section (the controllers' base: the p90 window)
cli_conf() {
	local eg=''
	[ -z "$UP_RATES" ] || eg="egress = ${UP_P90}kbit"
	case "$1" in
	adapt) printf '[interface wg0]\n%s\ndownload = %skbit\nserver = %s\nadapt = yes\nadapt-log = %s\n' \
		"$eg" "$DN_P90" "$SRV_TUN4" "$ATRACE" ;;
	adapt-ifb) printf '[interface wg0]\n%s\ningress = %skbit\nadapt = yes\nadapt-log = %s\n' \
		"$eg" "$DN_P90" "$ATRACE" ;;
	esac >"$CCONF"
	chmod 0600 "$CCONF"
}

# ca_setup [server]: cake-autorate's setup in the VM (NOTES.md): bash's
# /dev/fd and the std links, its config: cli's tunnel and IFB, srv as the
# only reflector; server: srv's, cli the reflector, the directions swapped
# (its download is what srv receives). CA_NS: where it runs.
ca_setup() {
	local d dl=$DN_P90 ul=$UP_P90 refl=$SRV_TUN4
	CA_NS=cli
	if [ "${1:-}" = server ]; then
		CA_NS=srv dl=$UP_P90 ul=$DN_P90 refl=$CLI_TUN4
	fi
	[ -n "$CAKE_AUTORATE" ] || return 1
	[ -f "$CAKE_AUTORATE/cake-autorate.sh" ] || die "WGSHAPE_CAKE_AUTORATE=$CAKE_AUTORATE has no cake-autorate.sh"
	command -v fping >/dev/null || die "cake-autorate needs fping (tests/vm/packages.txt)"
	if [ "${LAB_MODE:-}" = vm ]; then
		[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
		for d in stdin:0 stdout:1 stderr:2; do
			[ -e "/dev/${d%:*}" ] || ln -s "/proc/self/fd/${d#*:}" "/dev/${d%:*}"
		done
	fi
	mkdir -p "$LAB_TMP/ca"
	# it refuses to start with connection_active_thr_kbps over either
	# minimum (p90/10: 37 kbit/s on a line scaled by 0.05)
	local thr=50
	[ "$thr" -le $((DN_P90 / 10)) ] || thr=$((DN_P90 / 10))
	[ "$thr" -le $((UP_P90 / 10)) ] || thr=$((UP_P90 / 10))
	[ "$thr" -ge 1 ] || thr=1
	cat >"$LAB_TMP/ca/config.primary.sh" <<CONF
dl_if=ifb4wg0
ul_if=wg0
adjust_dl_shaper_rate=$([ -n "$UP_RATES" ] || [ "$CA_NS" = cli ] && echo 1 || echo 0)
adjust_ul_shaper_rate=$([ -n "$UP_RATES" ] || [ "$CA_NS" = srv ] && echo 1 || echo 0)
min_dl_shaper_rate_kbps=$((dl / 10))
base_dl_shaper_rate_kbps=$dl
max_dl_shaper_rate_kbps=$dl
min_ul_shaper_rate_kbps=$((ul / 10))
base_ul_shaper_rate_kbps=$ul
max_ul_shaper_rate_kbps=$ul
connection_active_thr_kbps=$thr
pinger_method=fping
reflectors=("$refl")
no_pingers=1
reflector_ping_interval_s=0.05
randomize_reflectors=0
log_file_path_override=$LAB_TMP/ca
output_cake_changes=1
CONF
}
# its log: log_file_path_override names a folder, the file in it is
# cake-autorate.INSTANCE.log (INSTANCE from config.INSTANCE.sh). With the
# override wrong, or before it reads it, it logs to /var/log instead; its
# stdout, not a terminal, says nothing of errors.
CA_LOG=$LAB_TMP/ca/cake-autorate.primary.log
ca_said() {
	local f
	for f in "$CA_LOG" /var/log/cake-autorate.primary.log /var/log/cake-autorate.log; do
		[ -s "$f" ] || continue
		printf '%s: ' "$f"
		grep -E '^(ERROR|WARNING)' "$f" | tail -3 | tr '\n' ' '
		tail -2 "$f" | tr '\n' ' '
	done
	tail -3 "$LAB_TMP/ca/out" 2>/dev/null | tr '\n' ' '
}
ca_start() {
	CA_CG=$(cgroup_new cake-autorate) || CA_CG=''
	# it joins its cgroup before it starts, so that all it forks is counted;
	# before ip netns exec, whose own /sys has no cgroup tree
	sh -c '[ -z "$1" ] || echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "$CA_CG" \
		ip netns exec "$CA_NS" env CAKE_AUTORATE_SCRIPT_PREFIX="$CAKE_AUTORATE" CAKE_AUTORATE_CONFIG_PREFIX="$LAB_TMP/ca" \
		bash "$CAKE_AUTORATE/cake-autorate.sh" "$LAB_TMP/ca/config.primary.sh" >"$LAB_TMP/ca/out" 2>&1 &
	APID=$!
}

# ---- one row ---------------------------------------------------------------

# ROW_* for the table: "dn up p50 p95 p99 lost cpu" in $LAB_TMP/ROW.row
run_row() {
	local row=$1 kind=htb t0 pp dn up rx0 rx1 cpu='-' i
	step "row '$row'"
	[ "$row" != limit ] || kind=cake
	lines "$kind"
	case "$row" in
	unshaped | limit) ;;
	fixed)
		if [ -n "$UP_RATES" ]; then
			wgshape cli set wg0 egress "${FIX_UP}kbit" ingress "${FIX_DN}kbit"
		else
			wgshape cli set wg0 ingress "${FIX_DN}kbit"
		fi
		[ "$WG_RC" = 0 ] || die "wgshape set failed"
		;;
	adapt | adapt-ifb)
		# srv's daemon answers the probes (and, for adapt, shapes the
		# download); one per row, so that no lease outlives its row
		start_daemon srv "$SCONF" "$SLOG"
		SPID=$DAEMON_PID
		cli_conf "$row"
		rm -f "$ATRACE"
		start_daemon cli "$CCONF" "$CLOG"
		CPID=$DAEMON_PID
		for i in $(seq 1 50); do
			if [ "$row" = adapt ]; then
				[ "$(htb_class_for srv wg0 "$CLI_TUN4")" != "(none)" ] && break
			else
				[ "$(root_field cli ifb4wg0 .kind 2>/dev/null)" = cake ] && break
			fi
			sleep 0.1
		done
		info "cli's egress: $(root_field cli wg0 .kind 2>/dev/null) $(root_field cli wg0 .options.bandwidth 2>/dev/null) B/s; its IFB: $(root_field cli ifb4wg0 .options.bandwidth 2>/dev/null) B/s; srv's class for cli: $(htb_class_for srv wg0 "$CLI_TUN4")"
		;;
	server-fixed | server-adapt)
		# a phone: nothing on cli; srv's daemon shapes (and adapts) its download
		{
			printf '[peer phone]\npublic-key = %s\ndownload = %skbit\n' "$(cat "$LAB_TMP/cli.pub")" "$DN_P90"
			[ -z "$UP_RATES" ] || printf 'upload = %skbit\n' "$UP_P90"
			[ "$row" = server-fixed ] || printf 'adapt = yes\n'
		} >"$LAB_TMP/srv-peer.conf"
		chmod 0600 "$LAB_TMP/srv-peer.conf"
		start_daemon srv "$LAB_TMP/srv-peer.conf" "$SLOG"
		SPID=$DAEMON_PID
		MPID=$SPID
		for i in $(seq 1 50); do
			[ "$(htb_class_for srv wg0 "$CLI_TUN4")" != "(none)" ] && break
			sleep 0.1
		done
		info "srv's class for cli: $(htb_class_for srv wg0 "$CLI_TUN4")"
		;;
	cake-autorate | server-cake-autorate)
		if ! ca_setup "${row%-cake-autorate}"; then
			echo "not run (set WGSHAPE_CAKE_AUTORATE)" >"$LAB_TMP/$row.row"
			info "not run: WGSHAPE_CAKE_AUTORATE is not set"
			return 0
		fi
		if [ "$row" = server-cake-autorate ] && [ -n "$UP_RATES" ]; then
			wgshape srv set wg0 egress "${DN_P90}kbit" ingress "${UP_P90}kbit"
		elif [ "$row" = server-cake-autorate ]; then
			wgshape srv set wg0 egress "${DN_P90}kbit"
		elif [ -n "$UP_RATES" ]; then
			wgshape cli set wg0 egress "${UP_P90}kbit" ingress "${DN_P90}kbit"
		else
			wgshape cli set wg0 ingress "${DN_P90}kbit"
		fi
		[ "$WG_RC" = 0 ] || die "wgshape set failed"
		ca_start
		# its start checks the config a subshell a key (seconds in the
		# VM); "Started" once its pinger runs
		: >>"$CA_LOG"
		wait_for 60 "$CA_LOG" 0 grep -q -m1 '^INFO.*Started cake-autorate' ||
			info "cake-autorate did not say it started within 60 s"
		sleep 5 # its pingers' baselines: a span of time, not an event
		# dead already: the row still runs (the others' figures stand),
		# marked invalid below
		kill -0 "$APID" 2>/dev/null || fail "cake-autorate did not start: $(ca_said)"
		;;
	*) die "scenario-traces.sh: no row '$row'" ;;
	esac

	rx0=$(inns cli cat /sys/class/net/wg0/statistics/rx_bytes)
	[ -z "$CPID" ] || MPID=$CPID # the daemon whose CPU the row gives
	[ -z "$MPID" ] || cpu_mark "$MPID" "$LAB_TMP/$row.cpu0"
	[ -z "${CA_CG:-}" ] || [ -z "${APID:-}" ] || cgroup_mark "$CA_CG" "$LAB_TMP/$row.cpu0"
	# the load from the replay's first window (its t0, once tc runs)
	: >"$LAB_TMP/$row.replay"
	replay "$kind" "$SECS" "$LAB_TMP/$row.replay"
	wait_for 30 "$LAB_TMP/$row.replay" 0 grep -q -m1 t0_realtime ||
		die "trace-replay did not start: $(cat "$LAB_TMP/replay.err")"
	t0=$(sed -n 's/^# t0_realtime //p' "$LAB_TMP/$row.replay")
	inns cli ping -4 -D -n -i 0.1 -W 1 -w $((SECS + 1)) "$SRV_TUN4" >"$LAB_TMP/$row.ping" 2>/dev/null &
	pp=$!
	inns cli iperf3 -4 -c "$SRV_TUN4" -p 5202 -R -t "$SECS" -P 4 -J >"$LAB_TMP/$row.down" 2>&1 &
	dn=$!
	up=''
	if [ -n "$UP_RATES" ] && [ "$LOAD_UP" = yes ]; then
		inns cli iperf3 -4 -c "$SRV_TUN4" -t "$SECS" -P 2 -J >"$LAB_TMP/$row.up" 2>&1 &
		up=$!
	fi
	wait "$dn" || true
	[ -z "$up" ] || wait "$up" || true
	wait "$pp" || true
	[ -z "$MPID" ] || cpu_mark "$MPID" "$LAB_TMP/$row.cpu1"
	if [ -n "${APID:-}" ] && [ -n "${CA_CG:-}" ]; then cgroup_mark "$CA_CG" "$LAB_TMP/$row.cpu1"; fi
	wait "$RPID" || info "trace-replay exited with an error: $(tail -3 "$LAB_TMP/replay.err")"
	RPID=''
	rx1=$(inns cli cat /sys/class/net/wg0/statistics/rx_bytes)
	info "replay: $(tail -1 "$LAB_TMP/$row.replay")"

	[ -z "$MPID" ] || cpu=$(cpu_per_hour "$LAB_TMP/$row.cpu0" "$LAB_TMP/$row.cpu1")
	MPID=''
	if [ "$row" = server-adapt ]; then
		info "srv's daemon: $(grep -c 'peer phone: adapt: download' "$SLOG" || true) download and $(grep -c 'peer phone: adapt: upload' "$SLOG" || true) upload rate changes; cli's class now $(htb_class_field srv wg0 "$(htb_class_for srv wg0 "$CLI_TUN4")" ceil); each direction its own queue (cli's timestamps): $(grep -q "upload's own queue" "$SLOG" && echo yes || echo no)"
	fi
	if [ -n "$CPID" ]; then
		stop_daemon "$CPID"
		CPID=''
		local keep
		keep=$(lab_keep_path "traces-$TRACE-$row.adapt.trace")
		[ -z "$keep" ] || cp "$ATRACE" "$keep" 2>/dev/null || true
	fi
	if [ -n "${APID:-}" ]; then
		# kill -0 alone would take a zombie for alive; $APID is bash
		# itself (sh, ip netns exec and env exec it)
		if kill -0 "$APID" 2>/dev/null && [ "$(awk '{ print $3 }' "/proc/$APID/stat" 2>/dev/null)" != Z ]; then
			pass "cake-autorate still runs at the end of its row"
		else
			fail "cake-autorate died during its row (its row is the p90 cakes left alone): $(ca_said)"
			echo "died" >"$LAB_TMP/$row.invalid"
		fi
		[ -z "${CA_CG:-}" ] || cpu=$(cgroup_per_hour "$LAB_TMP/$row.cpu0" "$LAB_TMP/$row.cpu1")
		# SHAPER lines: its tc changes (output_cake_changes=1), the two
		# at its start included
		CA_CHANGES=$(grep -c '^SHAPER' "$CA_LOG" 2>/dev/null || true)
		info "cake-autorate: ${CA_CHANGES:-0} shaper changes in its log; $CA_NS's cakes now $(root_field "$CA_NS" wg0 .options.bandwidth) / $(root_field "$CA_NS" ifb4wg0 .options.bandwidth) B/s"
		if [ "${CA_CHANGES:-0}" -le 2 ] && [ ! -e "$LAB_TMP/$row.invalid" ]; then
			fail "cake-autorate changed no rate in its row"
			echo "no rate changed" >"$LAB_TMP/$row.invalid"
		fi
		kill "$APID" 2>/dev/null || true
		wait "$APID" 2>/dev/null || true
		APID=''
		local keep
		keep=$(lab_keep_path "traces-$TRACE-$row.log")
		[ -z "$keep" ] || cp "$CA_LOG" "$keep" 2>/dev/null || true
	fi
	if [ -n "$SPID" ]; then
		stop_daemon "$SPID"
		SPID=''
		inns srv tc qdisc del dev wg0 root 2>/dev/null || true
	fi
	case "$row" in
	unshaped | limit | server-fixed | server-adapt) ;;
	server-cake-autorate) wgshape srv clear wg0 ;;
	*) wgshape cli clear wg0 ;;
	esac
	figures "$row" "$t0" "$rx0" "$rx1" "$cpu"
}

# figures ROW T0 RX0 RX1 CPU: the row's line of the table in $LAB_TMP/ROW.row
figures() {
	local row=$1 t0=$2 dn up lat p50 p95 p99 lost keep
	jq -e '.end.sum_received' "$LAB_TMP/$row.down" >/dev/null 2>&1 ||
		die "iperf3 (download) in row $row failed: $(tail -3 "$LAB_TMP/$row.down")"
	dn=$(jq -r '.end.sum_received.bits_per_second | floor' "$LAB_TMP/$row.down")
	up=0
	if [ -n "$UP_RATES" ] && [ "$LOAD_UP" = yes ]; then
		jq -e '.end.sum_received' "$LAB_TMP/$row.up" >/dev/null 2>&1 ||
			die "iperf3 (upload) in row $row failed: $(tail -3 "$LAB_TMP/$row.up")"
		up=$(jq -r '.end.sum_received.bits_per_second | floor' "$LAB_TMP/$row.up")
	fi
	# the path: what cli's tunnel received covers the download's goodput
	info "through the tunnel: cli's wg0 received $(mbit $((($4 - $3) * 8 / SECS))) on average; iperf3's download $(mbit "$dn")"
	[ $((($4 - $3) * 8 / SECS)) -ge $((dn * 9 / 10)) ] || fail "row $row: the download did not go through the tunnel"
	lat=$LAB_TMP/$row.lat
	awk -v t0="$t0" -v idle="$BASE_RTT" -v s="$SKIP_S" '/time=/ { ts = substr($1, 2, length($1) - 2)
		for (i = 1; i <= NF; i++) if ($i ~ /^time=/) v = substr($i, 6)
		if (ts - t0 >= s) printf "%.3f %.1f\n", ts - t0, v - idle }' "$LAB_TMP/$row.ping" >"$lat"
	p50=$(awk '{ print $2 }' "$lat" | quantile 0.5)
	p95=$(awk '{ print $2 }' "$lat" | quantile 0.95)
	p99=$(awk '{ print $2 }' "$lat" | quantile 0.99)
	lost=$(((SECS - SKIP_S) * 10 - $(grep -c . "$lat" || true)))
	[ "$lost" -ge 0 ] || lost=0
	keep=$(lab_keep_path "traces-$TRACE-$row.ping")
	[ -z "$keep" ] || cp "$LAB_TMP/$row.ping" "$keep"
	keep=$(lab_keep_path "traces-$TRACE-$row.replay")
	[ -z "$keep" ] || cp "$LAB_TMP/$row.replay" "$keep"
	echo "$dn $up $p50 $p95 $p99 $lost $5" >"$LAB_TMP/$row.row"
	info "$row: down $(mbit "$dn") ($(pct "$dn" "$DN_CAN")%), up $(mbit "$up") ($(pct "$up" "$UP_CAN")%), added p50 $p50 / p95 $p95 / p99 $p99 ms, $lost pings lost, cli CPU $5 s/hour"
}

for r in $ROWS; do
	run_row "$r"
done

# ---- the table ----------------------------------------------------------------

step "$TRACE, ${SECS} s from ${OFFSET} s, scale $SCALE (the line could carry: down $(mbit "$DN_CAN"), up $(mbit "$UP_CAN") of TCP payload)"
info "base RTT $BASE_RTT ms; fixed: down ${FIX_DN:-?} kbit/s, up ${FIX_UP:--} kbit/s (${FIX_HOW:-not run}); controllers' base (p90 window): down $DN_P90, up $UP_P90 kbit/s"
info "host load when done: $(cut -d' ' -f1-3 /proc/loadavg) (the VM's own; see the notebook for the host's)"
printf '   | %-13s | %6s | %6s | %7s | %7s | %7s | %5s | %9s |\n' row "down %" "up %" "p50 ms" "p95 ms" "p99 ms" lost "CPU %core"
printf '   |%s|\n' "---------------|--------|--------|---------|---------|---------|-------|-----------"
for r in $ROWS; do
	if ! read -r DN UP P50 P95 P99 LOST CPU <"$LAB_TMP/$r.row" || [ "$DN" = not ]; then
		printf '   | %-13s | %s |\n' "$r" "$(cat "$LAB_TMP/$r.row")"
		continue
	fi
	CPUP=-
	[ "$CPU" = - ] || CPUP=$(awk -v c="$CPU" 'BEGIN { printf "%.2f", c / 36 }')
	NAME=$r
	[ ! -e "$LAB_TMP/$r.invalid" ] || NAME="$r (INVALID: $(cat "$LAB_TMP/$r.invalid"))"
	printf '   | %-13s | %6s | %6s | %7s | %7s | %7s | %5s | %9s |\n' "$NAME" "$(pct "$DN" "$DN_CAN")" \
		"$([ -n "$UP_RATES" ] && [ "$LOAD_UP" = yes ] && pct "$UP" "$UP_CAN" || echo -)" "$P50" "$P95" "$P99" "$LOST" "$CPUP"
done
for r in $ROWS; do
	[ -s "$LAB_TMP/$r.row" ] && pass "row $r ran" || fail "row $r gave no figures"
done
finish
