#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# wgshape tune on a real kernel, against a bloated line: netem on the veth
# (10 ms each way, 1.2 s of buffer), outside the tunnel, like a cable modem.
# The lab runs under TCG, where WireGuard alone moves 20-100 Mbit/s, so the
# line is a third of what the VM moves unshaped, 10 Mbit/s at most and
# 8 Mbit/s at least (load.sh, scale_line); the output names the line used.
# WGSHAPE_LAB_CAPACITY caps the measured capacity, to run it as a slower
# machine would.
#
#   scenario-tune.sh egress   tune cli's upload against `wgshape serve` in srv,
#                             cli running `wgshape daemon` enforcing 30% of the
#                             line on wg0: a SIGKILLed tune (the daemon puts it
#                             back when it ends), then -j tune save plot (it
#                             measures the line; the saved rate stays after the
#                             daemon reloads); iperf3 + ping
#   scenario-tune.sh ingress  tune cli's download (IFB); no save: as before;
#                             iperf3 -R + ping with the result set
#   scenario-tune.sh seed     the seed's layout: srv tunes its own egress toward
#                             cli running serve; iperf3 -R from cli + ping
#   scenario-tune.sh errors   mid-tune: SIGINT, SIGTERM, the far end stopped, the
#                             tunnel set down, the tunnel deleted; unreachable far
#                             end, a route outside the tunnel, serve without a
#                             tunnel address
#   scenario-tune.sh http [both|ingress]
#                             against lighttpd (download) and a python3 POST
#                             sink (upload), ping for latency: both directions
#                             (the default, benchmark tune-http), or the
#                             download alone (vm-tune-http; the upload load is
#                             tests/test-measure.c's against its own server)
#   scenario-tune.sh deep     egress on a deep buffer (3.6 s), 40 ms each way; then
#                             iperf3 + ping for 25 s (a slowly growing queue shows)
#   scenario-tune.sh client   tune cli's download shaped at srv (`tune wg0 client
#                             download`: each step asks srv's daemon through the
#                             rate channel); no save: srv back at the configured
#                             rate; then srv's class at the result, iperf3 -R + ping
#   scenario-tune.sh compare  (benchmark) the same line tuned both ways, client
#                             download (at the server) and ingress (IFB at cli),
#                             each checked with iperf3 -R + ping: figures only
#
# The checks after tuning use tools that are not ours: iperf3 with 4 parallel
# streams through the tunnel and ping. They assert: added latency p95 <= 15 ms,
# goodput >= 90% of the unshaped goodput; at ingress, the rate chosen >= 85%
# of the unshaped goodput and the goodput >= 85% of that rate.
#
# One CPU: with two, the lab's guest kernel (Debian 6.1) now and then locked up
# in WireGuard's receive path as a tune's load began (tests/vm/README.md,
# "Guest kernel lockup"); one emulated CPU still moves 60 Mbit/s or more.
# lab-smp: 1
. "$(dirname "$0")/lib.sh"
. "$LAB_DIR/load.sh"

part=${1:-egress}
[ $# -eq 0 ] || shift # what follows is the part's own
LINE_RATE=10mbit LINE_DELAY=10ms LINE_LIMIT=1000
ADDED_P95_MAX=15

need_wgshape
need_tools iperf3 ss ping awk

# ---- helpers ----------------------------------------------------------------

# shaping NS: tc's view of every qdisc and filter in NS, and the links (for an
# IFB made or left behind): the "exactly as before" check.
shaping() { snapshot "$1"; }

# expect_le_num WHAT MAX FOUND (decimals)
expect_le_num() {
	if awk -v m="$2" -v f="$3" 'BEGIN { exit !(f != "" && f != "nan" && f + 0 <= m + 0) }'; then
		pass "$1 = $3 (<= $2)"
	else
		fail "$1: expected <= $2, found '$3'"
	fi
}

# expect_tuned_text WHAT DIR: the text run ended well: a table, a result.
# Sets TUNED (tc's spelling of the rate, as printed).
expect_tuned_text() {
	local what=$1 dir=$2
	expect_eq "$what: exit status" 0 "$WG_RC"
	expect_match "$what: the table's head" '^ +step +rate +goodput +idle50' "$WG_OUT"
	expect_match "$what: a search step" '^ +search ' "$WG_OUT"
	expect_match "$what: a confirm step" '^ +confirm ' "$WG_OUT"
	expect_match "$what: the result" "^wg0 $dir: [0-9.]+[KMG]?bit \\([0-9]+% of the unshaped" "$WG_OUT"
	TUNED=$(tuned_rate "$dir")
	info "$what: tuned rate $TUNED in $TUNE_SECS s"
}

# verify NS SERVER PCT WHAT [iperf3 options]: with the tuned shaping in place,
# iperf3 + ping against the unshaped figures in UNSHAPED_GOODPUT.
verify() {
	local ns=$1 server=$2 min=$3 what=$4
	shift 4
	under_load "$ns" "$server" "$@"
	expect_le_num "$what: added latency p95 (ms, ping under iperf3 -P 4)" "$ADDED_P95_MAX" "$LOAD_P95"
	expect_ge "$what: goodput, % of the unshaped $(mbit "$UNSHAPED_GOODPUT")" "$min" \
		"$(pct "$LOAD_GOODPUT" "$UNSHAPED_GOODPUT")"
	FIGURES+=("$what: iperf3 $(mbit "$LOAD_GOODPUT") = $(pct "$LOAD_GOODPUT" "$UNSHAPED_GOODPUT")% of unshaped $(mbit "$UNSHAPED_GOODPUT"); added p50 $LOAD_P50 ms p95 $LOAD_P95 ms (unshaped: p50 $UNSHAPED_P50 p95 $UNSHAPED_P95)")
}

# unshaped NS SERVER [iperf3 options]: the control, into UNSHAPED_*.
unshaped() {
	under_load "$@"
	UNSHAPED_GOODPUT=$LOAD_GOODPUT UNSHAPED_P50=$LOAD_P50 UNSHAPED_P95=$LOAD_P95
}

FIGURES=()
figures() {
	local f
	step "figures"
	for f in "${FIGURES[@]}"; do info "$f"; done
}

# lab: topology, bottleneck, iperf3 server in SRVNS, capacity check first.
setup() {
	lab_topology ipv4
	iperf_server srv "$SRV_TUN4"
	scale_line
	lab_bottleneck "$LINE_RATE" "$LINE_DELAY" "$LINE_LIMIT"
}

# search_step PID BEFORE [DEV]: wait (90 s at most) while tune PID runs for a
# search step on cli's DEV (wg0; its IFB at ingress): tune first makes its
# cake unlimited (the unshaped control), then each step sets a rate; BEFORE
# is the rate (bytes/s) there was before tune. SEEN is the step's rate.
search_step() {
	local pid=$1 before=$2 dev=${3:-wg0} i
	SEEN=
	for i in $(seq 1 900); do
		kill -0 "$pid" 2>/dev/null || return 1
		SEEN=$(root_field cli "$dev" .options.bandwidth 2>/dev/null)
		case "$SEEN" in
		"$before" | unlimited | "(none)" | "") ;;
		*) return 0 ;;
		esac
		sleep 0.1
	done
	return 1
}

# wait_drained: until the line's queues (netem on both veth ends) are empty,
# 15 s at most: a deep buffer takes seconds to drain after a load.
wait_drained() {
	local i
	for i in $(seq 1 150); do
		inns srv tc -s qdisc show dev veth-srv | grep 'backlog 0b 0p' >/dev/null &&
			inns cli tc -s qdisc show dev veth-cli | grep 'backlog 0b 0p' >/dev/null && return 0
		sleep 0.1
	done
	info "the line's queues were not empty after 15 s"
}

# ---- parts ------------------------------------------------------------------

part_egress() {
	local conf=$LAB_TMP/etc/wgshape.conf json n held pid rc kb
	setup
	serve_start srv
	step "unshaped upload through the bloated line"
	idle_rtt cli "$SRV_TUN4"
	unshaped cli "$SRV_TUN4"

	# A VPN server runs wgshape.service (the daemon, enforce = yes): tune must
	# not have the daemon put the configured cake back under it, and what tune
	# saves must stay. The daemon enforces 30% of the line, which tune must see
	# past.
	held=$(($(rate_bytes "$LINE_RATE") * 3 / 10))
	mkdir -p "$LAB_TMP/etc"
	printf '[interface wg0]\negress = %dbit\n\n[interface bar*]\negress = 1mbit\n' $((held * 8)) >"$conf"
	DLOG=$LAB_TMP/daemon.log
	ip netns exec cli "$WGSHAPE" -c "$conf" daemon >"$DLOG" 2>&1 &
	DAEMON_PID=$!
	daemon_wait 20 'running' || die "the daemon did not start: $(cat "$DLOG")"
	expect_cake cli wg0 bandwidth="$held"

	step "SIGKILL a tune during a search step: the daemon puts the configured cake back"
	TUNE_OPTS="-c $conf" mid_tune egress wg0 "$held" '' second_tune_then_kill
	pid=$TUNE_PID
	expect_match "daemon: held off while tune ran" "wg0: wgshape tune \\(pid $pid\\) is measuring it" "$(cat "$DLOG")"
	daemon_wait 30 "wg0: wgshape tune \\(pid $pid\\) ended" ||
		fail "the daemon did not see the killed tune end within 30 s"
	daemon_barrier 1
	expect_cake cli wg0 bandwidth="$held"

	step "-j tune wg0 egress save plot FILE under the daemon: tune measures the line, the saved rate stays"
	tune cli -c "$conf" -j tune wg0 egress server "$SRV_TUN4" save plot "$LAB_TMP/tune.svg"
	expect_eq "-j tune egress save: exit status" 0 "$WG_RC"
	json=$WG_OUT
	if jq -e . >/dev/null 2>&1 <<<"$json"; then pass "-j output parses with jq"; else fail "-j output does not parse: $json"; fi
	n=$(jq -r '.[0].steps | length' <<<"$json" 2>/dev/null || echo 0)
	expect_ge "-j tune egress: steps" 2 "$n"
	expect_eq "-j tune egress: outcome" "done" "$(jq -r '.[0].outcome' <<<"$json" 2>/dev/null)"
	# saved in kbit, rounded down: what the daemon applies after its reload
	kb=$(($(jq -r '.[0].rate // 0' <<<"$json" 2>/dev/null || echo 0) / 1000))
	TUNED=${kb}Kbit
	info "tuned rate $TUNED in $TUNE_SECS s"
	expect_ge "tuned rate under the daemon (bit/s; the daemon enforces $(mbit $((held * 8))))" \
		$((held * 8 * 2)) $((kb * 1000))
	expect_match "saved in the configuration's conf.d" "^\\[interface wg0\\]" \
		"$(grep -v '^#' "$LAB_TMP/etc/conf.d/90-tune.conf" 2>&1)"
	expect_match "saved: the egress rate" "^egress=${kb}kbit\$" \
		"$(grep '^egress' "$LAB_TMP/etc/conf.d/90-tune.conf" 2>&1)"
	daemon_wait 30 'wg0: wgshape tune \(pid [0-9]+\) ended: reloading' ||
		fail "the daemon did not see tune end within 30 s"
	daemon_barrier 2
	expect_cake cli wg0 bandwidth=$((kb * 125))
	# responsiveness: the load's own round trips were sampled (TCP_INFO), RPM is
	# the mean of the two parts, and the bloated line's is far below a shaped step's
	expect_ge "-j tune egress: unshaped rpm_loaded (the load's own RTTs sampled)" 1 \
		"$(jq -r '.[0].unshaped.rpm_loaded' <<<"$json" 2>/dev/null || echo 0)"
	expect_eq "-j tune egress: rpm = the mean of rpm_foreign and rpm_loaded (each step, +-1)" "" \
		"$(jq -r '.[0].steps[] | select(((.rpm_foreign + .rpm_loaded) / 2 - .rpm) | fabs > 1) | .rate' <<<"$json" 2>/dev/null)"
	expect_ge "-j tune egress: the best step's RPM over 3 x the unshaped line's" 0 \
		"$(jq -r '.[0] | ([.steps[].rpm] | max) - 3 * .unshaped.rpm' <<<"$json" 2>/dev/null || echo -1)"
	# the chart: well-formed SVG, a dot per shaped step for the median added
	# latency and one for the goodput, the tuned rate marked
	expect_eq "plot: dots (2 per shaped step) in an SVG that parses" "$((2 * n))" \
		"$(python3 -c 'import sys, xml.etree.ElementTree as E
print(sum(1 for _ in E.parse(sys.argv[1]).getroot().iter("{http://www.w3.org/2000/svg}circle")))' \
			"$LAB_TMP/tune.svg" 2>&1)"
	expect_match "plot: the tuned rate marked" '>tuned [0-9.]+ Mbit/s<' "$(cat "$LAB_TMP/tune.svg")"
	# the daemon applied it: show names the section (its header's file and
	# line), not conf.d/90-tune.conf where the rate came from
	expect_wgshape_ok cli -c "$conf" show wg0
	expect_match "show: set by the daemon's configuration" "set by: config $conf:1\$" "$WG_OUT"
	FIGURES+=("egress -j run, responsiveness: $(jq -r '.[0] | "unshaped \(.unshaped.rpm) RPM (foreign \(.unshaped.rpm_foreign), loaded \(.unshaped.rpm_loaded)); shaped steps \([.steps[].rpm] | min)-\([.steps[].rpm] | max) RPM"' <<<"$json" 2>/dev/null)")
	FIGURES+=("egress under the daemon (it enforced $(mbit $((held * 8)))): tuned $TUNED vs unshaped iperf3 $(mbit "$UNSHAPED_GOODPUT") ($(pct $((kb * 1000)) "$UNSHAPED_GOODPUT")%), $n steps, $TUNE_SECS s")

	step "iperf3 upload + ping with the tuned rate (saved, applied by the daemon)"
	verify cli "$SRV_TUN4" 90 "egress (cli upload) at $TUNED"
	rc=0
	kill -TERM "$DAEMON_PID" && wait "$DAEMON_PID" || rc=$?
	expect_eq "daemon: exit status after SIGTERM" 0 "$rc"
	sed -n 's/^<[0-9]>/   daemon: /p' "$DLOG" | grep -E 'tune|reload|wg0' || true
	figures
}

# tune_then_verify NS DIR FAR_END PCT LABEL: in NS, tune wg0 DIR against
# `wgshape serve` at FAR_END without save (the kernel exactly as before),
# then set the rate found and check cli's download with iperf3 -R + ping
# (goodput >= PCT% of unshaped).
#
# Ingress is judged in two parts instead, each PCT: the rate tune chose
# against the unshaped goodput (it kept most of the line), and the goodput
# at that rate against the rate (cake on the IFB, after the bottleneck,
# delivers what it was set to). Their product was one bound until 2026-12:
# on the 8 Mbit/s floor a tune that stops one confirmation lower (89% of
# unshaped, then 89% of that as goodput) failed it at 79 of 85 with p95 8.7 ms
# (tests/vm/README.md, "Figures on the CI machine").
tune_then_verify() {
	local ns=$1 dir=$2 far=$3 min=$4 label=$5 before after
	before=$(shaping "$ns")
	tune "$ns" tune wg0 "$dir" server "$far"
	after=$(shaping "$ns")
	expect_tuned_text "$label" "$dir"
	expect_same_snapshot "$label without save" "$before" "$after"
	FIGURES+=("$label: tuned $TUNED vs unshaped iperf3 $(mbit "$UNSHAPED_GOODPUT") ($(pct "$(rate_bits "$TUNED")" "$UNSHAPED_GOODPUT")%), $TUNE_SECS s")

	step "iperf3 download to cli + ping with $ns's wg0 $dir at $TUNED"
	expect_wgshape_ok "$ns" set wg0 "$dir" "$TUNED"
	if [ "$dir" != ingress ]; then
		verify cli "$SRV_TUN4" "$min" "$label (cli download) at $TUNED" -R
		return
	fi
	local tuned_bits
	tuned_bits=$(rate_bits "$TUNED")
	expect_ge "$label: the rate chosen, % of the unshaped $(mbit "$UNSHAPED_GOODPUT")" "$min" \
		"$(pct "$tuned_bits" "$UNSHAPED_GOODPUT")"
	under_load cli "$SRV_TUN4" -R
	expect_le_num "$label (cli download) at $TUNED: added latency p95 (ms, ping under iperf3 -P 4)" "$ADDED_P95_MAX" "$LOAD_P95"
	expect_ge "$label (cli download) at $TUNED: goodput, % of the rate" "$min" \
		"$(pct "$LOAD_GOODPUT" "$tuned_bits")"
	FIGURES+=("$label (cli download) at $TUNED: iperf3 $(mbit "$LOAD_GOODPUT") = $(pct "$LOAD_GOODPUT" "$tuned_bits")% of the rate, $(pct "$LOAD_GOODPUT" "$UNSHAPED_GOODPUT")% of unshaped $(mbit "$UNSHAPED_GOODPUT"); added p50 $LOAD_P50 ms p95 $LOAD_P95 ms (unshaped: p50 $UNSHAPED_P50 p95 $UNSHAPED_P95)")
}

part_ingress() {
	setup
	serve_start srv
	step "unshaped download through the bloated line"
	idle_rtt cli "$SRV_TUN4"
	unshaped cli "$SRV_TUN4" -R

	step "tune wg0 ingress, no save"
	tune_then_verify cli ingress "$SRV_TUN4" 85 "tune ingress"
	figures
}

part_seed() {
	setup
	serve_start cli
	step "unshaped download to cli through the bloated line"
	idle_rtt cli "$SRV_TUN4"
	unshaped cli "$SRV_TUN4" -R

	step "srv: tune wg0 egress server $CLI_TUN4 (the clients' download, at the server)"
	tune_then_verify srv egress "$CLI_TUN4" 90 "seed layout: srv tune egress"
	figures
}

# signal_tune SIG: to the tune mid_tune runs (TUNE_PID)
signal_tune() { kill -"$1" "$TUNE_PID"; }

# mid_tune DIR DEV BEFORE ERE ACTION...: run cli's tune DIR in the background,
# do ACTION (in this shell) a second into a search step on DEV (BEFORE: its
# rate before tune), wait for tune; it must fail, its last line on stderr
# matching ERE (unless empty). LINES is how many lines it wrote there. The
# far end is TUNE_FAR (SRV_TUN4); TUNE_FAMILY, when set, is said to tune
# (ipv4|ipv6); TUNE_OPTS are wgshape's options (-c FILE).
mid_tune() {
	local dir=$1 dev=$2 before=$3 re=$4 pid rc=0
	shift 4
	# Directly, not through a shell function: $! is then wgshape itself (ip
	# netns exec execs it), not a subshell that ignores signals.
	ip netns exec cli "$WGSHAPE" ${TUNE_OPTS:-} tune wg0 "$dir" server "${TUNE_FAR:-$SRV_TUN4}" ${TUNE_FAMILY:-} \
		>"$LAB_TMP/tune.out" 2>"$LAB_TMP/tune.err" &
	pid=$!
	TUNE_PID=$pid
	if search_step "$pid" "$before" "$dev"; then
		sleep 1
		info "a search step at $SEEN bytes/s on cli $dev: $*"
		"$@"
	else
		fail "no search step seen: $(cat "$LAB_TMP/tune.out" "$LAB_TMP/tune.err")"
		kill -INT "$pid" 2>/dev/null || true
	fi
	wait "$pid" || rc=$?
	sed 's/^/     > /' "$LAB_TMP/tune.out"
	sed 's/^/     ! /' "$LAB_TMP/tune.err"
	if [ "$rc" != 0 ]; then pass "tune $dir exits $rc"; else fail "tune $dir exits 0"; fi
	LINES=$(grep -c '' "$LAB_TMP/tune.err" || true)
	[ -z "$re" ] ||
		expect_match "the last line on stderr of tune $dir" "$re" "$(tail -n 1 "$LAB_TMP/tune.err")"
}

part_errors() {
	local before n
	lab_topology ipv4
	lab_bottleneck "$LINE_RATE" "$LINE_DELAY" "$LINE_LIMIT"
	serve_start srv

	step "interrupt mid-tune: SIGINT during a search step, over wgshape's own cake"
	expect_wgshape_ok cli set wg0 egress 4mbit
	before=$(shaping cli)
	mid_tune egress wg0 500000 'interrupted \(Interrupt\); its shaping is as it was$' \
		signal_tune INT
	expect_eq "lines on stderr of the interrupted tune" 1 "$LINES"
	expect_same_snapshot "interrupted tune" "$before" "$(shaping cli)"

	step "SIGTERM mid-tune at ingress over IPv6 (forced), from no shaping: the IFB tune made goes"
	expect_wgshape_ok cli clear wg0
	before=$(shaping cli)
	TUNE_FAR="[$SRV_TUN6]" TUNE_FAMILY=ipv6 mid_tune ingress ifb4wg0 '' \
		'interrupted \(Terminated\); its shaping is as it was$' signal_tune TERM
	expect_eq "lines on stderr of the terminated tune" 1 "$LINES"
	expect_same_snapshot "terminated tune" "$before" "$(shaping cli)"
	expect_match "IPv6 tune: the path proved" "$SRV_TUN6.* is reached through wg0" \
		"$(cat "$LAB_TMP/tune.out")"
	expect_match "IPv6 tune: the unshaped control measured" '^ +unshaped +' "$(cat "$LAB_TMP/tune.out")"
	expect_wgshape_fails cli 'no IPv4 address' tune wg0 egress server "[$SRV_TUN6]"
	expect_wgshape_fails cli 'no IPv6 address' tune wg0 egress server "$SRV_TUN4" ipv6

	step "the far end gone mid-tune (serve stopped during a search step)"
	expect_wgshape_ok cli set wg0 egress 4mbit
	before=$(shaping cli)
	mid_tune egress wg0 500000 'far end is gone.*its shaping is as it was$' serve_stop
	expect_eq "lines on stderr of the tune whose far end went" 1 "$LINES"
	expect_same_snapshot "tune whose far end went" "$before" "$(shaping cli)"
	serve_start srv

	step "unreachable far end"
	serve_stop
	expect_wgshape_fails cli '' tune wg0 egress server "$SRV_TUN4"
	serve_start srv
	# in the tunnel's subnet, routed through wg0, but no peer has it
	expect_wgshape_fails cli '' tune wg0 egress server 10.200.0.9
	expect_wgshape_fails cli '' tune wg0 ingress server "$SRV_TUN4:4781"

	step "a far end whose route does not go through the tunnel"
	expect_wgshape_fails cli 'goes through' tune wg0 egress server "$SRV_V4"

	step "the tunnel set down mid-tune: its qdiscs stay, tune puts them back"
	expect_wgshape_ok cli set wg0 egress 4mbit ingress 6mbit
	before=$(shaping cli)
	mid_tune egress wg0 500000 'wg0 was set down while tune ran; its shaping is as it was$' \
		ip -n cli link set wg0 down
	expect_eq "lines on stderr of the tune whose tunnel went down" 1 "$LINES"
	ip -n cli link set wg0 up
	expect_same_snapshot "tune whose tunnel went down (up again)" "$before" "$(shaping cli)"

	step "the tunnel deleted mid-tune at ingress, from no shaping: no IFB, no state left"
	expect_wgshape_ok cli clear wg0
	mid_tune ingress ifb4wg0 '' 'wg0 was deleted while tune ran; its shaping went with it$' \
		ip -n cli link del wg0
	if inns cli ip link show ifb4wg0 >/dev/null 2>&1; then
		fail "ifb4wg0 is still there after its tunnel went"
	else
		pass "no ifb4wg0 after its tunnel went"
	fi
	expect_wgshape_ok cli show
	if grep -q wg0 <<<"$WG_OUT"; then
		fail "show still knows wg0 after it went"
	else
		pass "show knows nothing of wg0 after it went"
	fi
	serve_stop

	step "serve without a WireGuard address"
	ip netns add lone
	ip -n lone link set lo up
	WG_WRAP="timeout 10"
	wgshape lone serve
	WG_WRAP=
	expect_eq "serve with no WireGuard address: exit" 1 "$WG_RC"
	expect_eq "serve with no WireGuard address: lines on stderr" 1 "$(printf '%s' "$WG_ERR" | grep -c '')"
	ip netns del lone

	step "serve listen on a non-tunnel address: warns, serves"
	serve_start srv listen "$SRV_V4"
	sleep 0.3
	expect_match "serve listen $SRV_V4: warning" 'not a WireGuard interface' "$(cat "$SERVE_ERR")"
	if command -v curl >/dev/null; then
		n=$(inns cli curl -s -o /dev/null -w '%{http_code} %{size_download}' --max-time 3 \
			"http://$SRV_V4:$SERVE_PORT/download?seconds=1" || true)
		expect_match "GET /download from cli over the veth" '^200 [1-9]' "$n"
	fi
	serve_stop
}

# daemon_wait SECS ERE: until the daemon's log (DLOG) has a line matching ERE.
daemon_wait() {
	wait_for "$1" "$DLOG" 0 grep -q -m1 -E -- "$2"
}

# daemon_barrier N: a new link matching [interface bar*] gets shaped. The
# daemon handles events in order: what came before has been acted on by then.
daemon_barrier() {
	inns cli ip link add "bar$1" type dummy
	daemon_wait 30 "bar$1: shaped" || fail "barrier: the daemon did not shape bar$1 within 30 s"
	inns cli ip link del "bar$1"
}

# second_tune_then_kill: while mid_tune's tune runs, a second is refused
# naming it; then SIGKILL the first (nothing of its own puts shaping back).
second_tune_then_kill() {
	wgshape cli tune wg0 egress server "$SRV_TUN4"
	expect_eq "a second tune on wg0 meanwhile: exit status" 1 "$WG_RC"
	expect_match "a second tune on wg0 meanwhile: stderr" \
		"^wgshape: wg0: another wgshape tune \\(pid $TUNE_PID\\) is measuring it\$" "$WG_ERR"
	signal_tune KILL
}

# The deep line: 40 ms each way and 30 packets of buffer per Mbit/s (3.6 s
# at the line rate; 3000 packets at 10 Mbit/s), so that a rate a percent or
# two over the line fills it slowly: a step's latency level stays low while
# its queue grows. The check runs the load longer (25 s) than a step.
part_deep() {
	LINE_DELAY=40ms
	lab_topology ipv4
	iperf_server srv "$SRV_TUN4"
	scale_line
	LINE_LIMIT=$(($(rate_bytes "$LINE_RATE") * 8 / 1000 * 3 / 10))
	lab_bottleneck "$LINE_RATE" "$LINE_DELAY" "$LINE_LIMIT"
	serve_start srv
	step "unshaped upload through the deep line"
	idle_rtt cli "$SRV_TUN4"
	unshaped cli "$SRV_TUN4"
	wait_drained # before tune's idle measurement

	step "tune wg0 egress on the deep line, no save"
	tune_then_verify_deep
	figures
}

# tune_then_verify_deep: cli's egress tuned, then set and checked with a 25 s load.
tune_then_verify_deep() {
	local before after
	before=$(shaping cli)
	tune cli tune wg0 egress server "$SRV_TUN4"
	after=$(shaping cli)
	expect_tuned_text "tune egress (deep line)" egress
	expect_same_snapshot "tune egress (deep line) without save" "$before" "$after"
	FIGURES+=("deep line $LINE_RATE, $LINE_DELAY each way, $LINE_LIMIT packets: tuned $TUNED vs unshaped iperf3 $(mbit "$UNSHAPED_GOODPUT") ($(pct "$(rate_bits "$TUNED")" "$UNSHAPED_GOODPUT")%), $TUNE_SECS s")
	[ -n "$TUNED" ] || return 0
	wait_drained
	step "iperf3 upload + ping for 25 s with wg0 egress at $TUNED"
	expect_wgshape_ok cli set wg0 egress "$TUNED"
	LOAD_SECS=25 verify cli "$SRV_TUN4" 85 "deep line (cli upload, 25 s) at $TUNED"
}

# srv_daemon: srv's `wgshape daemon` lets its peer cli set its download rate
# (the rate channel), with 20mbit configured for cli: cli's class 1:10 has
# it before tune and must have it again after.
srv_daemon() {
	local i
	cat >"$LAB_TMP/srv.conf" <<CONF
[interface wg0]
client-download = yes

[peer cli]
public-key = $(cat "$LAB_TMP/cli.pub")
download = 20mbit
CONF
	chmod 600 "$LAB_TMP/srv.conf"
	ip netns exec srv "$WGSHAPE" -c "$LAB_TMP/srv.conf" daemon >"$LAB_TMP/srv-daemon.log" 2>&1 &
	SRV_DAEMON=$!
	for i in $(seq 1 100); do
		[ "$(htb_class_field srv wg0 1:10 ceil)" = 20Mbit ] && inns srv ss -Hlun 'sport = :4781' | grep . >/dev/null && {
			info "srv: wgshape daemon (pid $SRV_DAEMON), cli's class 1:10 at 20Mbit"
			return 0
		}
		sleep 0.1
	done
	die "srv's daemon did not shape cli at 20mbit: $(tail -5 "$LAB_TMP/srv-daemon.log")"
}

# tune_client_then_verify: cli's download tuned at the server, no save; then
# srv's class set there by the rate channel, iperf3 -R + ping.
tune_client_then_verify() {
	local before after
	before=$(shaping cli)
	tune cli tune wg0 client download server "$SRV_TUN4"
	after=$(shaping cli)
	expect_tuned_text "tune client download" download
	expect_same_snapshot "tune client download: cli's own shaping untouched" "$before" "$after"
	expect_eq "tune client download ended: srv's class for cli back at its configured rate" \
		20Mbit "$(htb_class_field srv wg0 1:10 ceil)"
	expect_match "srv's log: every step came through the rate channel" \
		'asks for [0-9.]+[KMG]?bit: applied' "$(cat "$LAB_TMP/srv-daemon.log")"
	FIGURES+=("tune client download: tuned $TUNED vs unshaped iperf3 $(mbit "$UNSHAPED_GOODPUT") ($(pct "$(rate_bits "$TUNED")" "$UNSHAPED_GOODPUT")%), $TUNE_SECS s")
	[ -n "$TUNED" ] || return 0
	step "iperf3 download to cli + ping with srv's class for cli at $TUNED"
	expect_wgshape_ok cli set client download "$TUNED"
	expect_eq "srv's class for cli at the tuned rate" "$TUNED" "$(htb_class_field srv wg0 1:10 ceil)"
	verify cli "$SRV_TUN4" 90 "client download (shaped at srv) at $TUNED" -R
	expect_wgshape_ok cli set client download default
}

part_client() {
	setup
	serve_start srv
	srv_daemon
	step "unshaped download through the bloated line (srv's class at 20mbit, over the line)"
	idle_rtt cli "$SRV_TUN4"
	unshaped cli "$SRV_TUN4" -R
	step "tune wg0 client download, no save"
	tune_client_then_verify
	figures
	kill "$SRV_DAEMON" 2>/dev/null || true
}

# Not a check: the same line tuned at the server and at cli's own ingress.
part_compare() {
	setup
	serve_start srv
	srv_daemon
	step "unshaped download through the bloated line"
	idle_rtt cli "$SRV_TUN4"
	unshaped cli "$SRV_TUN4" -R
	FIGURES+=("line $LINE_RATE, $LINE_DELAY each way, $LINE_LIMIT packets; unshaped download $(mbit "$UNSHAPED_GOODPUT"), added p50 $UNSHAPED_P50 p95 $UNSHAPED_P95 ms")
	step "tune wg0 client download (at the server)"
	tune_client_then_verify
	step "tune wg0 ingress (an IFB at cli)"
	tune_then_verify cli ingress "$SRV_TUN4" 85 "tune ingress"
	figures
	kill "$SRV_DAEMON" 2>/dev/null || true
}

# Not a check: what iperf3 + ping see with cake at a few rates (the truth
# tune's own measurements are compared with). sweep egress|ingress.
part_sweep() {
	local dir=${2:-egress} r opt=()
	setup
	[ "$dir" = egress ] || opt=(-R)
	idle_rtt cli "$SRV_TUN4"
	unshaped cli "$SRV_TUN4" "${opt[@]}"
	FIGURES+=("$dir unshaped: $(mbit "$UNSHAPED_GOODPUT"), added p50 $UNSHAPED_P50 p95 $UNSHAPED_P95")
	for r in ${SWEEP_RATES:-5mbit 7mbit 8mbit 9mbit 9500kbit}; do
		step "$dir at $r"
		expect_wgshape_ok cli set wg0 "$dir" "$r"
		under_load cli "$SRV_TUN4" "${opt[@]}"
		FIGURES+=("$dir cake $r: $(mbit "$LOAD_GOODPUT") ($(pct "$LOAD_GOODPUT" "$UNSHAPED_GOODPUT")%), added p50 $LOAD_P50 p95 $LOAD_P95")
	done
	figures
}

# A POST sink for the upload: any HTTP server will do; this one takes
# chunked bodies (what tune sends) and Content-Length ones.
POST_SINK='
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                line = self.rfile.readline()
                if not line: return  # the client cut the body at its deadline
                size = n = int(line.split(b";")[0], 16)
                while n > 0:
                    d = self.rfile.read(min(n, 65536))
                    if not d: return
                    n -= len(d)
                self.rfile.readline()
                if size == 0: break
        else:
            n = int(self.headers.get("Content-Length", 0))
            while n > 0: n -= len(self.rfile.read(min(n, 65536)))
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), H).serve_forever()
'

part_http() {
	local dir=${1:-both} before after json want
	case "$dir" in
	both) want="done done" ;;
	ingress) want=done ;;
	*) die "scenario-tune.sh http: both or ingress, not '$dir'" ;;
	esac
	need_tools lighttpd python3
	setup
	step "lighttpd (download: a 2 GB sparse file) and a python3 POST sink in srv"
	mkdir -p "$LAB_TMP/www"
	truncate -s 2G "$LAB_TMP/www/big"
	cat >"$LAB_TMP/lighttpd.conf" <<EOF
server.document-root = "$LAB_TMP/www"
server.bind = "$SRV_TUN4"
server.port = 8080
server.pid-file = "$LAB_TMP/lighttpd.pid"
server.errorlog = "$LAB_TMP/lighttpd.err"
server.max-connections = 64
EOF
	inns srv lighttpd -D -f "$LAB_TMP/lighttpd.conf" &
	inns srv python3 -c "$POST_SINK" "$SRV_TUN4" 8081 &
	local i
	for i in $(seq 1 50); do
		[ "$(inns srv ss -Hltn '( sport = :8080 or sport = :8081 )' | grep -c .)" = 2 ] && break
		sleep 0.1
	done
	[ "$i" != 50 ] || die "lighttpd or the POST sink did not start"

	idle_rtt cli "$SRV_TUN4"
	before=$(shaping cli)
	tune cli -j tune wg0 "$dir" download "http://$SRV_TUN4:8080/big" \
		upload "http://$SRV_TUN4:8081/upload" ping "$SRV_TUN4"
	after=$(shaping cli)
	json=$WG_OUT
	expect_eq "tune $dir against lighttpd + POST sink: exit" 0 "$WG_RC"
	expect_eq "directions done" "$want" "$(jq -r '[.[].outcome] | join(" ")' <<<"$json" 2>/dev/null)"
	expect_same_snapshot "tune $dir without save" "$before" "$after"
	FIGURES+=("http (lighttpd + sink, ping): $(jq -r '.[] | "\(.direction) \(.rate / 1e6) Mbit/s vs unshaped \(.unshaped.goodput / 1e6) (\(.steps | length) steps, \(.seconds | floor) s)"' <<<"$json" 2>/dev/null | paste -sd';')")
	figures
}

case "$part" in
egress | ingress | seed | errors | http | sweep | deep | client | compare) "part_$part" "$@" ;;
*) die "scenario-tune.sh: egress|ingress|seed|errors|http|deep|client|compare, not '$part'" ;;
esac
finish
