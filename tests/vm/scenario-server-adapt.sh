#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The server adapts a peer that runs nothing but WireGuard (issue 26): cli
# is a "phone", with no wgshape at all; srv's daemon has [peer phone]
# download = 95% of FAST, adapt = yes, and takes cli's round trips while
# cli's class carries traffic: from cli's own TCP (its timestamps, timed by
# tc programs on srv's wg0; the passive path), or from ICMP echoes to cli's
# /32 inside the tunnel when its TCP gives none.
#
# The download run proves the passive path: cli answers no echo
# (icmp_echo_ignore_all), so its TCP is the only signal; the daemon sends
# few echoes under load and says it takes its round trips from cli's TCP.
# The upload run proves the ICMP path: cli's TCP has no timestamps
# (tcp_timestamps = 0, as on Windows), so the echoes are the only signal.
#
# The line: netem both ways, FAST (a sixth of what the VM moves unshaped, 6
# to 12 Mbit/s) for PHASE s, then SLOW (4/15 of it) for PHASE s; 10 ms each
# way; a buffer of 1.2 s at FAST (4.5 s at SLOW). The load: iperf3 download
# (srv -> cli, -R), 2 streams, IPv4 forced, bound to srv's tunnel address,
# with ping cli -> srv 10 times a second all along. Two runs on the same
# timeline: "fixed" (the same [peer] without adapt: the control, which
# bloats once the line drops) and "adapt".
#
# Checks: the daemon says it adapts the peer, probing its address, and
# (download) that cli's timestamps tell its upload's queue apart (not
# without them: upload); cli's
# class at srv was lowered under the base in the slow phase (tc, sampled
# each half second) and the daemon's log says why ("queue"); the slow
# phase's p95 added latency (after its first 5 s) at most 100 ms and at most
# half the fixed run's, its goodput at least 60% of the fixed run's; no
# ICMP went out while the class was idle (srv's ICMP out counter over 10
# idle seconds); under load, at least 100 (upload, ICMP path) or at most a
# tenth of the ticks (download, passive path); `show` names the rate's
# source; the tc programs are on srv's wg0 while the daemon runs, and gone
# with the clsact when it stops. Then the
# peer's own wgshape asks for its rate (client-download = yes): the server
# says it stands aside, and the class holds what the client asked.
#
# scenario-server-adapt.sh upload: the same for the phone's upload: [peer
# phone] also has upload = 95% of FAST (its class on srv's IFB, by source
# address), the load is iperf3 upload (cli -> srv), and the class judged is
# the IFB's; no stand-aside step.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/load.sh"

need_wgshape
need_tools iperf3 jq ping
DIR=${1:-download}
case "$DIR" in
download) REVERSE=-R ;;
upload) REVERSE='' ;;
*) die "usage: scenario-server-adapt.sh [download|upload], not '$DIR'" ;;
esac
PHASE=${WGSHAPE_ADAPT_PHASE:-15}
SETTLE=5 # s into the slow phase before its latency is judged
CONF=$LAB_TMP/srv.conf LOG=$LAB_TMP/srv-daemon.log
SPID=''
sa_cleanup() {
	[ -z "$SPID" ] || kill "$SPID" 2>/dev/null || true
	lab_cleanup
}
trap sa_cleanup EXIT

lab_topology ipv4
if [ "$DIR" = download ]; then
	inns cli sysctl -qw net.ipv4.icmp_echo_ignore_all=1
	info "cli answers no ICMP echo: its TCP is the only signal"
else
	inns cli sysctl -qw net.ipv4.tcp_timestamps=0
	info "cli's TCP carries no timestamps: ICMP echo is the only signal"
fi
iperf_server srv "$SRV_TUN4"
sysctl -qw kernel.bpf_stats_enabled=1 2>/dev/null || true
lab_step_line
info "line: ${FAST_K}kbit -> ${SLOW_K}kbit, $PHASE s each, both ways, 10 ms each way, $LIMIT packets of buffer"
CLI_KEY=$(cat "$LAB_TMP/cli.pub")

# ceil_kbit "1:10 7600Kbit": the ceil in kbit
ceil_kbit() {
	awk '{ v = $2; n = v + 0; u = substr(v, length(n "") + 1)
		m["bit"] = 0.001; m["Kbit"] = 1; m["Mbit"] = 1000; m["Gbit"] = 1000000
		printf "%d\n", n * m[u] }' <<<"$1"
}
# srv's ICMP echo requests sent so far (IcmpMsg OutType8; 0 before the first)
icmp_out() {
	inns srv awk '/^IcmpMsg:/ { if (!h) { for (i = 2; i <= NF; i++) col[$i] = i; h = 1; next }
		if ("OutType8" in col) v = $col["OutType8"] } END { print v + 0 }' /proc/net/snmp
}
# what the tc programs cost (kernel.bpf_stats_enabled): "NAME N packets, T ns each; ..."
bpf_cost() {
	bpftool -j prog show 2>/dev/null | jq -r '[.[] | select(.name // "" | startswith("wgshape_rtt")) |
		"\(.name) \(.run_cnt // 0) packets, \(if (.run_cnt // 0) > 0 then (.run_time_ns / .run_cnt | floor) else 0 end) ns each"] | join("; ")'
}
# ... and what their maps hold in the kernel: "NAME N bytes; ..."
bpf_maps() {
	bpftool -j map show 2>/dev/null | jq -r '[.[] | select(.name // "" | IN("peers", "sent", "clocks")) |
		"\(.name) \(.bytes_memlock // "?") bytes"] | join("; ")'
}
line() {
	inns srv tc qdisc replace dev veth-srv root netem rate "${1}kbit" delay 10ms limit "$LIMIT"
	inns cli tc qdisc replace dev veth-cli root netem rate "${1}kbit" delay 10ms limit "$LIMIT"
}

run() {
	local name=$1 t0 pp dn i
	step "run '$name': ${FAST_K}kbit for $PHASE s, then ${SLOW_K}kbit for $PHASE s; cli runs no wgshape"
	line "$FAST_K"
	{
		printf '[peer phone]\npublic-key = %s\ndownload = %skbit\n' "$CLI_KEY" "$BASE_K"
		[ "$DIR" = download ] || printf 'upload = %skbit\n' "$BASE_K"
		[ "$name" = fixed ] || printf 'adapt = yes\n'
	} >"$CONF"
	chmod 0600 "$CONF"
	start_daemon srv "$CONF" "$LOG"
	SPID=$DAEMON_PID
	for i in $(seq 1 50); do
		[ -n "$(cli_class "$DIR")" ] && break
		sleep 0.1
	done
	info "srv's class for cli's $DIR: $(cli_class "$DIR")"
	idle_rtt cli "$SRV_TUN4"
	echo "$IDLE_P50" >"$LAB_TMP/$name.idle"
	local e0
	e0=$(icmp_out)
	if [ "$name" = adapt ]; then
		sleep 10
		expect_eq "ICMP echoes srv sent while cli's class was idle (10 s)" 0 $(($(icmp_out) - e0))
		e0=$(icmp_out)
	fi
	t0=$EPOCHREALTIME
	inns cli ping -4 -D -n -i 0.1 -W 1 -w $((2 * PHASE + 1)) "$SRV_TUN4" >"$LAB_TMP/$name.ping" 2>/dev/null &
	pp=$!
	inns cli iperf3 -4 -c "$SRV_TUN4" $REVERSE -t $((2 * PHASE)) -P 2 -i 1 -J --get-server-output >"$LAB_TMP/$name.down" 2>&1 &
	dn=$!
	(
		while sleep 0.5; do echo "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') $(cli_class "$DIR")"; done
	) >"$LAB_TMP/$name.class" &
	local sampler=$!
	until_t "$t0" "$PHASE"
	line "$SLOW_K"
	DROP=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
	info "t=${DROP}s: the line drops to ${SLOW_K}kbit"
	wait "$dn" || true
	[ "$name" = fixed ] || {
		wgshape srv show wg0
		SHOW_OUT=$WG_OUT
		ECHOES=$(($(icmp_out) - e0))
		HOOKS=$(inns srv tc filter show dev wg0 egress; inns srv tc filter show dev wg0 ingress)
		info "the tc programs: $(bpf_cost)"
		info "their maps' kernel memory: $(bpf_maps)"
	}
	wait "$pp" || true
	kill "$sampler" 2>/dev/null || true
	wait "$sampler" 2>/dev/null || true
	stop_daemon "$SPID"
	SPID=''
	[ "$name" = fixed ] || expect_eq "the daemon stopped: what holds srv's wg0 ingress slot (the programs' clsact goes; the upload's redirect keeps it)" \
		"$([ "$DIR" = upload ] && echo clsact)" "$(ingress_qdisc srv wg0 | jq -r '.kind // ""')"
	[ "$name" = fixed ] || expect_eq "the daemon stopped: cli's $DIR class back at the base" \
		"$((BASE_K / 100 * 100))Kbit" "$(cli_class "$DIR" | awk '{ print $2 }')"
	awk -v t0="$t0" -v idle="$IDLE_P50" '/time=/ { ts = substr($1, 2, length($1) - 2)
		for (i = 1; i <= NF; i++) if ($i ~ /^time=/) v = substr($i, 6)
		printf "%.3f %.1f\n", ts - t0, v - idle }' "$LAB_TMP/$name.ping" >"$LAB_TMP/$name.lat"
	P95_FAST=$(awk -v e="$DROP" '$1 >= 2 && $1 < e { print $2 }' "$LAB_TMP/$name.lat" | quantile 0.95)
	P95_SLOW=$(awk -v s="$DROP" -v k="$SETTLE" '$1 >= s + k { print $2 }' "$LAB_TMP/$name.lat" | quantile 0.95)
	DOWN=$(jq -r '.end.sum_received.bits_per_second // 0 | floor' "$LAB_TMP/$name.down")
	# the slow phase's goodput (the receiver's iperf3 intervals: cli's for the
	# download, srv's for the upload, whose sender counts what its line's
	# buffer took), after its first SETTLE s
	if [ "$DIR" = upload ]; then
		# srv's iperf3 runs without -J: its text's [SUM] lines ("0.00-1.00 sec 1.1 MBytes 9.39 Mbits/sec")
		jq -r '.server_output_text // ""' "$LAB_TMP/$name.down" | awk '$1 == "[SUM]" && $3 == "sec" {
			split($2, t, "-"); m = ($7 ~ /^G/) ? 1e9 : ($7 ~ /^M/) ? 1e6 : ($7 ~ /^K/) ? 1e3 : 1
			print t[1], $6 * m }'
	else
		jq -r '.intervals[] | "\(.sum.start) \(.sum.bits_per_second)"' "$LAB_TMP/$name.down"
	fi >"$LAB_TMP/$name.intervals"
	SLOW_DOWN=$(awk -v s="$DROP" -v k="$SETTLE" '$1 >= s + k { t += $2; n++ } END { printf "%d", n ? t / n : 0 }' \
		"$LAB_TMP/$name.intervals")
	echo "$SLOW_DOWN" >"$LAB_TMP/$name.slowdown"
	MIN_CEIL=$(awk -v s="$DROP" 'NF >= 3 && $1 >= s { print $3 }' "$LAB_TMP/$name.class" |
		while read -r c; do ceil_kbit "x $c"; done | sort -n | awk 'NR == 1')
	info "$name: p95 added ${P95_FAST} ms fast, ${P95_SLOW} ms slow (after its first $SETTLE s); $DIR $(mbit "$DOWN") ($(mbit "$SLOW_DOWN") in the slow phase); cli's class down to ${MIN_CEIL:-?} kbit in the slow phase"
	echo "$P95_SLOW" >"$LAB_TMP/$name.p95slow"
}

run fixed
run adapt

[ "$DIR" = upload ] || {
step "the peer's own wgshape asks for its rate: the server's adaptation stands aside"
line "$FAST_K"
printf '[peer phone]\npublic-key = %s\ndownload = %skbit\nadapt = yes\nclient-download = yes\n' \
	"$CLI_KEY" "$BASE_K" >"$CONF"
from=$(wc -l <"$LOG")
start_daemon srv "$CONF" "$LOG"
SPID=$DAEMON_PID
expect_wgshape_ok cli set wg0 client download 5mbit server "$SRV_TUN4"
wait_for 10 "$LOG" "$from" grep -q -m1 "wg0: peer phone: its own wgshape adapts (a client lease)" ||
	fail "the daemon did not say it stands aside for the client's lease"
expect_eq "cli's class: the rate its client asked for" 5Mbit "$(htb_class_field srv wg0 "$(htb_class_for srv wg0 "$CLI_TUN4")" ceil)"
stop_daemon "$SPID"
SPID=''
}

step "checks"
expect_match "the daemon adapts the peer, probing its address" \
	"wg0: peer phone: the server adapts its download .*probing $CLI_TUN4" "$(cat "$LOG")"
expect_match "a cut for a queue in the daemon's log" "wg0: peer phone: adapt: $DIR .* \\(queue" \
	"$(cat "$LOG")"
expect_le "cli's class in the slow phase, least ceil (kbit; the base is $BASE_K)" \
	$((SLOW_K * 11 / 10)) "${MIN_CEIL:-}"
FIXED=$(cat "$LAB_TMP/fixed.p95slow")
ADAPT=$(cat "$LAB_TMP/adapt.p95slow")
expect_le "adapt: slow phase p95 added latency (ms)" 100 "$ADAPT"
expect_le "adapt: slow phase p95 against half the fixed run's ($FIXED ms)" \
	"$(awk -v f="$FIXED" 'BEGIN { print f / 2 }')" "$ADAPT"
expect_ge "adapt: slow phase goodput, % of the fixed run's ($(mbit "$(cat "$LAB_TMP/fixed.slowdown")"))" 60 \
	"$(awk -v f="$(cat "$LAB_TMP/fixed.slowdown")" -v a="$(cat "$LAB_TMP/adapt.slowdown")" 'BEGIN { printf "%d", f ? a * 100 / f : 0 }')"
expect_match "the tc programs on both hooks of srv's wg0 under load" "wgshape_rtt_out.*wgshape_rtt_in" "$(echo ${HOOKS:-})"
if [ "$DIR" = download ]; then
	expect_match "the daemon takes cli's round trips from its TCP" \
		"wg0: peer phone: adapt: round trips from its own TCP" "$(cat "$LOG")"
	# 20 ticks a second for $((2 * PHASE)) s under load
	expect_le "ICMP echoes srv sent to cli under load (a tenth of the ticks)" $((2 * PHASE * 2)) "${ECHOES:-0}"
	# cli's ACKs carry its clock (Linux: ms): the upload's queue apart
	expect_match "the daemon reads cli's upload queue from its timestamps" \
		"wg0: peer phone: adapt: its upload's own queue from its TCP timestamps" "$(cat "$LOG")"
else
	expect_ge "ICMP echoes srv sent to cli under load" 100 "${ECHOES:-0}"
	expect_eq "no timestamps, no upload queue apart (the round trip for both)" 0 \
		"$(grep -c "its upload's own queue" "$LOG" || true)"
fi
expect_match "show: cli's rate comes from the server's adaptation" "server adapt" "$SHOW_OUT"
sed 's/^/   daemon: /' "$LOG" | grep -v '<7>' | tail -n 15
# WGSHAPE_SA_DEBUG=1: every change the controllers made, and why
[ -z "${WGSHAPE_SA_DEBUG:-}" ] || grep 'adapt: \(download\|upload\) ' "$LOG" | sed 's/^/   daemon: /'

finish
