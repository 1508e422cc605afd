# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# Helpers for the lab scenarios (source it). A scenario builds two network
# namespaces, srv and cli, joined by a veth pair, with a real WireGuard tunnel
# between them, and checks kernel state with tc/ip/jq, never with wgshape's
# own code. It runs as root, in the lab VM or on a host whose kernel has the
# modules (tests/vm/lab decides), and touches nothing outside its namespaces.
#
# Exit status: 0 pass, 1 fail, 77 skip.

set -euo pipefail

LAB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
export LAB_DIR
# Below /run, root's alone, not /tmp: wgshape refuses a configuration below a
# folder others can write, and the scenarios keep theirs in $LAB_TMP.
LAB_TMP=$(mktemp -d /run/wgshape-scenario.XXXXXX)

# Addresses: documentation prefixes for the underlay (the "Internet" between
# the hosts), private ones for the tunnel. Nothing leaves the namespaces.
SRV_V4=192.0.2.1 CLI_V4=192.0.2.2
SRV_V6=2001:db8:1::1 CLI_V6=2001:db8:1::2
SRV_TUN4=10.200.0.1 CLI_TUN4=10.200.0.2
SRV_TUN6=fd00:200::1 CLI_TUN6=fd00:200::2
WG_PORT_SRV=51820 WG_PORT_CLI=51821
export SRV_V4 CLI_V4 SRV_V6 CLI_V6 SRV_TUN4 CLI_TUN4 SRV_TUN6 CLI_TUN6

lab_failures=0

# ---- reporting ------------------------------------------------------------

# a step's heading says when it started (s since the scenario's), for the notebook's timings
step() { printf '\n== %s  [t=%ss]\n' "$*" "$SECONDS"; }
info() { printf '   %s\n' "$*"; }
pass() { printf 'ok   %s\n' "$*"; }
# A failed check: report it, go on, fail the scenario at the end.
fail() {
	printf 'FAIL %s\n' "$*"
	lab_failures=$((lab_failures + 1))
}
# Something the scenario cannot go on without.
# On stderr, so it shows even from inside $(...).
die() {
	printf 'FAIL %s\n' "$*" >&2
	exit 1
}
skip() {
	printf 'SKIP %s\n' "$*"
	exit 77
}

# The last thing a scenario calls.
finish() {
	if [ "$lab_failures" -gt 0 ]; then
		printf '\n%s: %d check(s) failed\n' "${0##*/}" "$lab_failures"
		exit 1
	fi
	printf '\n%s: all checks passed\n' "${0##*/}"
	exit 0
}

lab_cleanup() {
	local ns pid
	for ns in srv cli; do
		[ -e "/run/netns/$ns" ] || continue
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill "$pid" 2>/dev/null || true
		done
		ip netns del "$ns" 2>/dev/null || true
	done
	rm -rf "$LAB_TMP"
}
trap lab_cleanup EXIT

need_root() {
	[ "$(id -u)" = 0 ] || skip "needs root (run it through tests/vm/lab run)"
}

need_tools() {
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null || die "$t is missing (see tests/vm/packages.txt)"
	done
}

# The binary under test, from meson's env (WGSHAPE=.../wgshape).
need_wgshape() {
	[ -n "${WGSHAPE:-}" ] || die "WGSHAPE is not set (meson sets it; or WGSHAPE=build/wgshape)"
	[ -x "$WGSHAPE" ] || die "WGSHAPE=$WGSHAPE is not executable"
	# tune and serve run in wgshape-measure, which a build keeps beside it
	[ -x "$(dirname "$WGSHAPE")/wgshape-measure" ] ||
		die "no wgshape-measure beside $WGSHAPE (ninja builds both)"
	# and the modules it loads when needed (libnm, json-glib)
	[ -f "$(dirname "$WGSHAPE")/wgshape-nm.so" ] && [ -f "$(dirname "$WGSHAPE")/wgshape-json.so" ] ||
		die "no wgshape-nm.so or wgshape-json.so beside $WGSHAPE (ninja builds them)"
}

# Parts of these scenarios change kernel-wide settings (the module autoload
# helper); they run only in a freshly booted lab VM.
need_fresh_vm() {
	[ "${LAB_MODE:-}" = vm ] || skip "needs a fresh lab VM (LAB_MODE=${LAB_MODE:-unset}); run with WGSHAPE_LAB=vm"
}

# ---- comparisons ----------------------------------------------------------

# expect_eq WHAT EXPECTED FOUND
expect_eq() {
	if [ "$2" = "$3" ]; then
		pass "$1 = $3"
	else
		fail "$1: expected '$2', found '$3'"
	fi
}

# expect_ge WHAT MIN FOUND (integers)
expect_ge() {
	if [ -n "$3" ] && [ "$3" -ge "$2" ] 2>/dev/null; then
		pass "$1 = $3 (>= $2)"
	else
		fail "$1: expected >= $2, found '$3'"
	fi
}

# expect_le WHAT MAX FOUND (numbers)
expect_le() {
	if awk -v m="$2" -v f="$3" 'BEGIN { exit !(f != "" && f != "nan" && f + 0 <= m + 0) }'; then
		pass "$1 = $3 (<= $2)"
	else
		fail "$1: expected <= $2, found '$3'"
	fi
}

# expect_within WHAT EXPECTED FOUND PERCENT (numbers)
expect_within() {
	if awk -v e="$2" -v f="$3" -v p="$4" 'BEGIN { d = f - e; if (d < 0) d = -d; exit !(f != "" && d <= e * p / 100) }'; then
		pass "$1 = $3 (expected $2 +- $4%)"
	else
		fail "$1: expected $2 +- $4%, found '$3'"
	fi
}

# expect_match WHAT ERE TEXT
expect_match() {
	if grep -Eq -- "$2" <<<"$3"; then
		pass "$1 matches /$2/"
	else
		fail "$1: expected to match /$2/, found: $3"
	fi
}

# ---- namespaces and the tunnel -------------------------------------------

# inns NS CMD...: run a command in a scenario namespace.
inns() {
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}

# lab_topology ipv4|ipv6: srv and cli, veth between them with IPv4 and IPv6
# addresses, and a WireGuard tunnel whose endpoints use the given family.
# Both sides know the other's endpoint, so both see the family from the start.
lab_topology() {
	local family=${1:-ipv4} ns
	case "$family" in
	ipv4 | ipv6) ;;
	*) die "lab_topology: family must be ipv4 or ipv6, not '$family'" ;;
	esac
	need_root
	need_tools ip tc wg jq
	export LAB_FAMILY=$family

	for ns in srv cli; do
		ip netns add "$ns"
		ip -n "$ns" link set lo up
	done
	ip link add veth-srv netns srv type veth peer name veth-cli netns cli
	ip -n srv addr add "$SRV_V4/24" dev veth-srv
	ip -n cli addr add "$CLI_V4/24" dev veth-cli
	ip -n srv addr add "$SRV_V6/64" dev veth-srv nodad
	ip -n cli addr add "$CLI_V6/64" dev veth-cli nodad
	ip -n srv link set veth-srv up
	ip -n cli link set veth-cli up

	for ns in srv cli; do
		(umask 077 && wg genkey >"$LAB_TMP/$ns.key")
		wg pubkey <"$LAB_TMP/$ns.key" >"$LAB_TMP/$ns.pub"
		ip -n "$ns" link add wg0 type wireguard
	done
	local srv_ep cli_ep
	if [ "$family" = ipv4 ]; then
		srv_ep=$SRV_V4:$WG_PORT_SRV cli_ep=$CLI_V4:$WG_PORT_CLI
	else
		srv_ep=[$SRV_V6]:$WG_PORT_SRV cli_ep=[$CLI_V6]:$WG_PORT_CLI
	fi
	inns srv wg set wg0 listen-port "$WG_PORT_SRV" private-key "$LAB_TMP/srv.key" \
		peer "$(cat "$LAB_TMP/cli.pub")" endpoint "$cli_ep" \
		allowed-ips "$CLI_TUN4/32,$CLI_TUN6/128"
	inns cli wg set wg0 listen-port "$WG_PORT_CLI" private-key "$LAB_TMP/cli.key" \
		peer "$(cat "$LAB_TMP/srv.pub")" endpoint "$srv_ep" \
		allowed-ips "$SRV_TUN4/32,$SRV_TUN6/128"
	ip -n srv addr add "$SRV_TUN4/24" dev wg0
	ip -n cli addr add "$CLI_TUN4/24" dev wg0
	ip -n srv addr add "$SRV_TUN6/64" dev wg0 nodad
	ip -n cli addr add "$CLI_TUN6/64" dev wg0 nodad
	ip -n srv link set wg0 up
	ip -n cli link set wg0 up

	local i
	for i in $(seq 1 20); do
		if inns cli ping -4 -c 1 -W 1 "$SRV_TUN4" >/dev/null 2>&1; then
			info "WireGuard tunnel up over $family (srv $SRV_TUN4 <-> cli $CLI_TUN4)"
			return 0
		fi
	done
	die "no ping through the WireGuard tunnel over $family"
}

# lab_bottleneck RATE [DELAY [LIMIT]]: a bloated line, as a cable/DSL modem
# with a big dumb buffer: netem on both veth ends (each direction), e.g.
# 20mbit, 10ms each way, 2000 packets of buffer. RATE DOWN/UP (30mbit/8mbit)
# is an asymmetric line: DOWN toward cli (the client's download), UP toward srv.
lab_bottleneck() {
	local rate=$1 delay=${2:-10ms} limit=${3:-2000}
	local down=${rate%/*} up=${rate#*/}
	inns srv tc qdisc replace dev veth-srv root netem rate "$down" delay "$delay" limit "$limit"
	inns cli tc qdisc replace dev veth-cli root netem rate "$up" delay "$delay" limit "$limit"
	info "bottleneck: $down down, $up up, $delay each way, $limit packets of buffer (netem on the veth)"
}

# lab_step_line: the stepped line of the adaptation scenarios (iperf3's
# server must run in srv): FAST_K, a sixth of what WireGuard moves here
# unshaped, 6 to 12 Mbit/s (skips below); SLOW_K, 4/15 of it; LIMIT, 1.2 s
# of buffer at FAST in packets; BASE_K, 95% of FAST (kbit/s).
lab_step_line() {
	local cap
	cap=$(lab_capacity 2 $((6 * 12000000)))
	FAST_K=$((cap / 6000 / 100 * 100))
	[ "$FAST_K" -le 12000 ] || FAST_K=12000
	[ "$FAST_K" -ge 6000 ] ||
		skip "the machine is too busy: WireGuard moves only $(mbit "$cap") unshaped, this needs 36 Mbit/s"
	SLOW_K=$((FAST_K * 4 / 15 / 10 * 10))
	LIMIT=$((FAST_K / 10))
	BASE_K=$((FAST_K * 95 / 100))
}

# lab_clients C: C clients in cli, each a WireGuard interface of its own
# (wgc0...) with its own key and /32 (10.65.0.1...), srv its one peer, and
# a rule that sends what it sends from its address through it; their list,
# "DEV ADDR KEY" a line, in $LAB_TMP/clients.txt. srv's wg0 does not have
# them yet.
lab_clients() {
	local i dev addr key srv_key
	[ "$1" -le 250 ] || die "lab_clients: at most 250 (one /24 of client addresses)"
	srv_key=$(cat "$LAB_TMP/srv.pub")
	for i in $(seq 0 $(($1 - 1))); do
		(umask 077 && wg genkey >"$LAB_TMP/c$i.key")
		printf 'wgc%d 10.65.0.%d %s\n' "$i" "$((i + 1))" "$(wg pubkey <"$LAB_TMP/c$i.key")"
	done >"$LAB_TMP/clients.txt"
	while read -r dev addr key; do
		i=${dev#wgc}
		ip -n cli link add "$dev" type wireguard
		inns cli wg set "$dev" private-key "$LAB_TMP/c$i.key" \
			peer "$srv_key" endpoint "$SRV_V4:$WG_PORT_SRV" allowed-ips "$SRV_TUN4/32"
		ip -n cli addr add "$addr/32" dev "$dev"
		ip -n cli link set "$dev" up
		ip -n cli route add "$SRV_TUN4/32" dev "$dev" table $((100 + i))
		ip -n cli rule add from "$addr" table $((100 + i))
	done <"$LAB_TMP/clients.txt"
}

# lab_keep_path NAME: where a scenario writes a file the user keeps (a chart):
# in the VM, the output share that tests/vm/lab copies into
# WGSHAPE_LAB_KEEP after the run; on the host, WGSHAPE_LAB_KEEP itself.
# Empty when WGSHAPE_LAB_KEEP is not set.
lab_keep_path() {
	[ -n "${WGSHAPE_LAB_KEEP:-}" ] || return 0
	if [ "${LAB_MODE:-}" = vm ]; then
		mkdir -p "$LAB_OUT/keep"
		echo "$LAB_OUT/keep/$1"
	else
		mkdir -p "$WGSHAPE_LAB_KEEP"
		echo "$WGSHAPE_LAB_KEEP/$1"
	fi
}

# ---- files that grow ------------------------------------------------------

# wait_for SECS FILE FROM PROGRAM [ARGS...]: run PROGRAM on the lines of FILE
# after line FROM, as they are written, for at most SECS seconds. PROGRAM
# exits when it has seen what it waits for; 124 when the time ran out.
# (Through a FIFO: the lab VM has no /dev/fd for bash's <(...).)
wait_for() {
	local secs=$1 file=$2 from=$3 fifo tailpid rc=0
	shift 3
	fifo=$LAB_TMP/wait.$BASHPID.$RANDOM
	mkfifo "$fifo"
	tail -n +"$((from + 1))" -f "$file" >"$fifo" &
	tailpid=$!
	timeout "$secs" "$@" <"$fifo" || rc=$?
	kill -PIPE "$tailpid" 2>/dev/null || true
	wait "$tailpid" 2>/dev/null || true
	rm -f "$fifo"
	return "$rc"
}

# ---- kernel state, read with tc/ip/jq --------------------------------------

# qdiscs NS DEV: tc's JSON for all qdiscs of DEV.
qdiscs() { inns "$1" tc -j qdisc show dev "$2"; }

# root_qdisc NS DEV: the root qdisc's JSON object (noqueue shows as root too).
root_qdisc() {
	qdiscs "$1" "$2" | jq -c '[.[] | select(.root == true)][0] // {}'
}

# root_field NS DEV JQPATH, e.g. root_field srv wg0 .kind
root_field() {
	root_qdisc "$1" "$2" | jq -r "$3 | if . == null then \"(none)\" else tostring end"
}

# ingress_qdisc NS DEV: the ingress qdisc (parent ffff:fff1) or {}.
ingress_qdisc() {
	qdiscs "$1" "$2" | jq -c '[.[] | select(.kind == "ingress" or .kind == "clsact")][0] // {}'
}

# ingress_filters NS DEV: filters on DEV's ingress hook, [] when none.
ingress_filters() {
	inns "$1" tc -j filter show dev "$2" ingress 2>/dev/null || echo '[]'
}

link_exists() { inns "$1" ip link show dev "$2" >/dev/null 2>&1; }

link_kind() {
	inns "$1" ip -j -d link show dev "$2" | jq -r '.[0].linkinfo.info_kind // "(none)"'
}

# expect_cake NS DEV key=value...: DEV's root qdisc is cake with these
# options as tc -j reports them (bandwidth in bytes/s, overhead in bytes,
# ingress true/false...).
expect_cake() {
	local ns=$1 dev=$2 kv key want got q
	shift 2
	q=$(root_qdisc "$ns" "$dev")
	expect_eq "$ns $dev root qdisc kind" cake "$(jq -r '.kind // "(none)"' <<<"$q")"
	for kv in "$@"; do
		key=${kv%%=*} want=${kv#*=}
		got=$(jq -r --arg k "$key" '.options[$k] | if . == null then "(none)" else tostring end' <<<"$q")
		expect_eq "$ns $dev cake $key" "$want" "$got"
	done
}

# expect_mirred_redirect NS DEV TARGET: DEV's ingress has a filter whose
# action is mirred egress redirect to TARGET.
expect_mirred_redirect() {
	local ns=$1 dev=$2 target=$3 f
	f=$(ingress_filters "$ns" "$dev" | jq -c '[.[] | select(.options.actions != null) | .options.actions[]
		| select(.kind == "mirred")] | .[0] // {}')
	expect_eq "$ns $dev ingress filter action" "mirred egress redirect to $target" \
		"$(jq -r '"\(.kind) \(.mirred_action // "?" | if . == "redirect" then "egress redirect" else . end) to \(.to_dev)"' <<<"$f" |
			sed 's/^null null to null$/(no mirred action)/')"
}

# snapshot NS: every piece of shaping state in NS (links, qdiscs, filters)
# as text, for "no kernel change" checks. No statistics are asked for, so
# traffic does not show. One netns exec and one tc for all the devices
# (tc -batch prints each command's JSON on a line of its own), as this runs
# often: a tc per device and question took 0.94 s a snapshot in the VM, this
# 0.41 s.
snapshot() {
	inns "$1" bash -c '
		ip -j -d link show
		devs=(/sys/class/net/*)
		devs=("${devs[@]##*/}")
		mapfile -t out <<<"$(for dev in "${devs[@]}"; do
			printf "qdisc show dev %s\nfilter show dev %s ingress\nfilter show dev %s\n" "$dev" "$dev" "$dev"
		done | tc -j -force -batch - 2>/dev/null)"
		i=0
		for dev in "${devs[@]}"; do
			for what in qdiscs "ingress filters" "egress filters"; do
				echo "# $dev $what"
				echo "${out[i++]:-}"
			done
		done'
}

# expect_same_snapshot WHAT BEFORE AFTER
expect_same_snapshot() {
	if [ "$2" = "$3" ]; then
		pass "$1: no kernel change"
	else
		fail "$1: kernel state changed:"
		# through files: the lab VM has no /dev/fd for <(...)
		echo "$2" >"$LAB_TMP/snap.before"
		echo "$3" >"$LAB_TMP/snap.after"
		{ diff -u "$LAB_TMP/snap.before" "$LAB_TMP/snap.after" || true; } | sed -n '1,40s/^/     /p'
	fi
}

# ---- running wgshape ------------------------------------------------------

# wgshape NS ARGS...: run the binary under test in NS; sets WG_RC, WG_OUT,
# WG_ERR and never fails the shell itself. WG_WRAP, if set, is a command
# prefix (split on blanks), e.g. setpriv dropping capabilities.
WG_WRAP=
wgshape() {
	local ns=$1 wrap
	shift
	read -r -a wrap <<<"$WG_WRAP"
	WG_RC=0
	inns "$ns" "${wrap[@]}" "$WGSHAPE" "$@" >"$LAB_TMP/out" 2>"$LAB_TMP/err" || WG_RC=$?
	WG_OUT=$(cat "$LAB_TMP/out")
	WG_ERR=$(cat "$LAB_TMP/err")
	printf '   $ %swgshape %s   # in %s: exit %d\n' "${WG_WRAP:+$WG_WRAP }" "$*" "$ns" "$WG_RC"
	[ -z "$WG_OUT" ] || sed 's/^/     > /' <<<"$WG_OUT"
	[ -z "$WG_ERR" ] || sed 's/^/     ! /' <<<"$WG_ERR"
}

# expect_wgshape_ok NS ARGS...
expect_wgshape_ok() {
	wgshape "$@"
	expect_eq "exit status of 'wgshape ${*:2}'" 0 "$WG_RC"
}

# expect_wgshape_fails NS ERE ARGS...: exit 1 or 2, exactly one line on
# stderr (matching ERE if not empty), and no change to NS's kernel state.
expect_wgshape_fails() {
	local ns=$1 re=$2 before after lines
	shift 2
	before=$(snapshot "$ns")
	wgshape "$ns" "$@"
	after=$(snapshot "$ns")
	case "$WG_RC" in
	1 | 2) pass "'wgshape $*' exits $WG_RC" ;;
	*) fail "'wgshape $*': expected exit 1 or 2, found $WG_RC" ;;
	esac
	lines=$(printf '%s' "$WG_ERR" | grep -c '' || true)
	expect_eq "lines on stderr of 'wgshape $*'" 1 "$lines"
	[ -z "$re" ] || expect_match "stderr of 'wgshape $*'" "$re" "$WG_ERR"
	expect_same_snapshot "'wgshape $*'" "$before" "$after"
}

# ---- traffic --------------------------------------------------------------

# iperf_server NS ADDR: an iperf3 server in NS, bound to ADDR, in the background.
iperf_server() {
	inns "$1" iperf3 -s -B "$2" -D --pidfile "$LAB_TMP/iperf3-$1.pid" >/dev/null
	local i
	for i in $(seq 1 50); do
		inns "$1" ss -Hltn "sport = :5201" | grep . >/dev/null && return 0
		sleep 0.1
	done
	die "iperf3 server in $1 did not start"
}

# iperf_rate NS SERVER SECONDS [iperf3 options...]: run an iperf3 client in NS
# against SERVER (IPv4 forced), print the receiver's rate in bit/s (integer).
# The first 2 s (slow start) are left out.
iperf_rate() {
	local ns=$1 server=$2 secs=$3 json rate
	shift 3
	json=$(inns "$ns" iperf3 -4 -c "$server" -t "$secs" -O 2 -J "$@" 2>&1) || true
	rate=$(jq -r '.end.sum_received.bits_per_second // empty | floor' <<<"$json" 2>/dev/null) || true
	if [ -z "$rate" ]; then
		die "iperf3 -c $server $* in $ns failed: $(jq -r '.error // empty' <<<"$json" 2>/dev/null || echo "$json" | tail -3)"
	fi
	echo "$rate"
}

# mbit BITS_PER_SECOND: human form.
mbit() { awk -v b="$1" 'BEGIN { printf "%.2f Mbit/s", b / 1e6 }'; }

# rate_bytes RATE: tc's rate spelling to bytes/s for the few units scenarios
# use (kbit, mbit, gbit): what tc -j reports as cake's bandwidth.
rate_bytes() {
	awk -v r="$1" 'BEGIN {
		n = r + 0; u = substr(r, length(n "") + 1)
		m["kbit"] = 1000; m["mbit"] = 1000000; m["gbit"] = 1000000000; m["bit"] = 1
		if (!(u in m)) { print "?"; exit 1 }
		printf "%d\n", n * m[u] / 8 }'
}

# lab_capacity [TRIES [ENOUGH]]: what WireGuard moves here unshaped, bit/s (4
# TCP streams, cli to srv, before any bottleneck; the iperf3 server must run
# in srv): the best of up to TRIES (1) runs, stopping once one reaches ENOUGH
# bit/s (a busy host only ever slows the VM down). WGSHAPE_LAB_CAPACITY (a tc
# rate: 12mbit) caps what it reports, so the lab can be run as a slower
# machine would run it (the scaling of the lines is tested that way).
lab_capacity() {
	local tries=${1:-1} enough=${2:-0} try cap best=0 max
	for try in $(seq 1 "$tries"); do
		cap=$(iperf_rate cli "$SRV_TUN4" 4 -P 4)
		info "unshaped WireGuard here, no bottleneck: $(mbit "$cap") (4 TCP streams, try $try)" >&2
		[ "$cap" -le "$best" ] || best=$cap
		[ "$enough" -le 0 ] || [ "$best" -lt "$enough" ] || break
	done
	if [ -n "${WGSHAPE_LAB_CAPACITY:-}" ]; then
		max=$(rate_bytes "$WGSHAPE_LAB_CAPACITY") ||
			die "WGSHAPE_LAB_CAPACITY must be a rate such as 12mbit, not '$WGSHAPE_LAB_CAPACITY'"
		max=$((max * 8))
		if [ "$best" -gt "$max" ]; then
			info "capped at $(mbit "$max") by WGSHAPE_LAB_CAPACITY" >&2
			best=$max
		fi
	fi
	echo "$best"
}

# pick_test_rate: measure what WireGuard sustains unshaped here (4 TCP
# streams, cli to srv; the iperf3 server must run in srv) and set TEST_RATE to
# a rate far enough below it that the shaper, not the emulated CPU, sets the
# pace: the first of 10, 5, 2 mbit that is at most an eighth of it. (TCG
# under a busy host loses time slices: the less CPU the traffic needs, the
# less that shows.) Skips when even 2 mbit is too much.
pick_test_rate() {
	local cap r
	cap=$(lab_capacity 1)
	for r in 10 5 2; do
		if [ "$cap" -ge $((r * 8 * 1000000)) ]; then
			TEST_RATE=${r}mbit
			info "test rate: $TEST_RATE"
			return 0
		fi
	done
	skip "the machine is too busy: WireGuard moves only $(mbit "$cap") unshaped, a rate test needs 16"
}

# expected_goodput RATE [MTU [OVERHEAD]]: the TCP payload rate (bit/s) of
# full-size segments through cake at RATE on a tunnel of MTU, cake adding
# OVERHEAD bytes to each packet: RATE * (MTU - 20 IP - 32 TCP) / (MTU + OVERHEAD).
expected_goodput() {
	awk -v r="$(rate_bytes "$1")" -v m="${2:-1420}" -v o="${3:-60}" \
		'BEGIN { printf "%d\n", r * 8 * (m - 52) / (m + o) }'
}

# cake_counts NS DEV: "packets drops" of DEV's root cake.
cake_counts() {
	inns "$1" tc -j -s qdisc show dev "$2" root | jq -r '.[0] | "\(.packets // 0) \(.drops // 0)"'
}

# ingress_goodput GOODPUT P0 D0 P1 D1: cake in ingress mode counts the
# packets it drops against the rate (they already crossed the real
# bottleneck), so what TCP gets is GOODPUT times the share delivered.
ingress_goodput() {
	awk -v g="$1" -v p="$(($4 - $2))" -v d="$(($5 - $3))" \
		'BEGIN { printf "%d\n", ((p + d) > 0) ? g * p / (p + d) : g }'
}

# Rate measurements for expect_rate: each prints "EXPECTED MEASURED" (bit/s)
# for 8 s of 4 TCP streams through the tunnel (iperf3 server in srv).
rate_upload() { echo "$1 $(iperf_rate cli "$SRV_TUN4" 8 -P 4)"; }
rate_download() { echo "$1 $(iperf_rate cli "$SRV_TUN4" 8 -P 4 -R)"; }
# Download through cake in ingress mode on cli's ifb4wg0 (see ingress_goodput).
rate_download_ingress() {
	local p0 d0 p1 d1 got
	read -r p0 d0 <<<"$(cake_counts cli ifb4wg0)"
	got=$(iperf_rate cli "$SRV_TUN4" 8 -P 4 -R)
	read -r p1 d1 <<<"$(cake_counts cli ifb4wg0)"
	info "cake ingress dropped $((d1 - d0)) of $((p1 - p0 + d1 - d0)) packets, counted against the rate" >&2
	echo "$(ingress_goodput "$1" "$p0" "$d0" "$p1" "$d1") $got"
}

# expect_rate WHAT PERCENT MEASURE [ARGS...]: MEASURE prints "EXPECTED
# MEASURED"; pass when within PERCENT. A result too low is measured again (up
# to 3 tries): on a busy host the emulated CPU loses time slices, which only
# ever slows traffic down. Too fast is a failure at once.
expect_rate() {
	local what=$1 pct=$2 try want got verdict
	shift 2
	for try in 1 2 3; do
		read -r want got <<<"$("$@")"
		verdict=$(awk -v e="$want" -v f="$got" -v p="$pct" 'BEGIN {
			if (f > e * (1 + p / 100)) print "high"; else if (f < e * (1 - p / 100)) print "low"; else print "ok" }')
		case "$verdict" in
		ok)
			pass "$what = $(mbit "$got") (expected $(mbit "$want") +- $pct%)"
			return 0
			;;
		high) break ;;
		esac
		[ "$try" = 3 ] || info "try $try: $(mbit "$got"), below $(mbit "$want") - $pct%: measuring again"
	done
	fail "$what: expected $(mbit "$want") +- $pct%, found $(mbit "$got")"
}

# ---- per-peer classes and when they change ---------------------------------

# iproute2 6.1's -j prints nothing for an HTB root with a size table, and
# text for HTB classes: these read tc's text output.
# htb_class_field NS DEV CLASSID FIELD: of DEV's class CLASSID (e.g. 1:10):
# parent, leaf, rate, ceil (as tc prints them: 6Mbit), bytes, packets; or (none).
htb_class_field() {
	inns "$1" tc -s class show dev "$2" | awk -v c="$3" -v f="$4" '
		$1 == "class" { cur = ($3 == c); if (!cur) next; found = 1
			for (i = 4; i < NF; i++) v[$i] = $(i + 1)
			if ($4 == "root") v["parent"] = "root" }
		cur && $1 == "Sent" { v["bytes"] = $2; v["packets"] = $4 }
		END { print (found && (f in v)) ? v[f] : "(none)" }'
}

# cli_class [upload]: srv's class for cli's download (wg0, to CLI_TUN4), or
# for its upload (ifb4wg0, from CLI_TUN4): "classid ceil" (tc's text), empty
# when none
cli_class() {
	local cid dev=wg0 key=dst_ip
	[ "${1:-}" != upload ] || dev=ifb4wg0 key=src_ip
	cid=$(htb_class_for srv "$dev" "$CLI_TUN4" "$key")
	[ "$cid" = "(none)" ] || echo "$cid $(htb_class_field srv "$dev" "$cid" ceil)"
}

# htb_class_for NS DEV ADDR [KEY]: the classid DEV's flower filters (parent
# 1:) send the host ADDR to (as tc prints it, no /32 or /128) as destination,
# or as source with KEY src_ip (the upload tree on an IFB), or (none).
htb_class_for() {
	inns "$1" tc filter show dev "$2" parent 1: 2>/dev/null | awk -v a="$3" -v k="${4:-dst_ip}" '
		/classid/ { cur = ""; for (i = 1; i < NF; i++) if ($i == "classid") cur = $(i + 1) }
		!found && $1 == k && $2 == a && cur != "" { print cur; found = 1 }
		END { if (!found) print "(none)" }'
}

# stamped_monitor NS FILE: `tc monitor` in NS in the background, each line
# of it in FILE after the time it was read ($EPOCHREALTIME's form: seconds
# since the epoch, microseconds), to time a change against a command that
# started at a known $EPOCHREALTIME. STAMPED_PID is its process (lab_cleanup
# ends it with the namespace's other processes).
stamped_monitor() {
	local py=/usr/bin/python3
	[ -x "$py" ] || py=$(command -v python3) || die "stamped_monitor needs python3"
	: >"$2"
	ip netns exec "$1" "$py" -u -c '
import subprocess, sys, time
p = subprocess.Popen(["stdbuf", "-oL", "tc", "monitor"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
for line in p.stdout:
    sys.stdout.write("%.6f %s" % (time.time(), line.decode(errors="replace")))
    sys.stdout.flush()' >>"$2" 2>&1 &
	STAMPED_PID=$!
	# it listens once `tc monitor` is running: wait for that process (bounded)
	local i
	for i in $(seq 1 40); do
		pgrep -P "$STAMPED_PID" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	die "tc monitor did not start in $1"
}

# stamped_wait SECS FILE FROM ERE: the time (as in FILE) of the first line
# after line FROM that matches ERE, as lines come; fails after SECS.
stamped_wait() {
	local line
	line=$(wait_for "$1" "$2" "$3" grep -m 1 -E -- "$4") || return 1
	printf '%s\n' "${line%% *}"
}

# ms_between T0 T1: milliseconds from one $EPOCHREALTIME to another.
# pctl P FILE: the P-th percentile of FILE's numbers (nearest rank)
pctl() { sort -g "$2" | awk -v p="$1" '{ v[NR] = $1 } END { i = int(NR * p / 100 + 0.999); if (i < 1) i = 1; print v[i] }'; }
ms_between() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", (b - a) * 1000 }'; }

# expect_download WHAT RATE_MBIT: iperf3 download (srv -> cli, 2 streams, to
# SRV_TUN4) at most RATE and at least 80% of it, where the server shapes it;
# a result too low is measured again (a busy host only ever slows the VM
# down), up to 3 times.
expect_download() {
	local what=$1 r=$2 try got verdict
	for try in 1 2 3; do
		got=$(iperf_rate cli "$SRV_TUN4" 5 -P 2 -R)
		verdict=$(awk -v f="$got" -v r="$r" 'BEGIN {
			if (f > r * 1e6) print "high"; else if (f < r * 0.8e6) print "low"; else print "ok" }')
		case "$verdict" in
		ok)
			pass "$what: download $(mbit "$got") (<= $r Mbit/s, >= 80% of it)"
			return 0
			;;
		high) break ;;
		esac
		[ "$try" = 3 ] || info "try $try: $(mbit "$got"), under 80% of $r Mbit/s: measuring again"
	done
	fail "$what: download $(mbit "$got"), expected <= $r Mbit/s and >= 80% of it"
}

# ---- lines that follow a trace (tests/traces, tests/vm/trace-replay) ---------

# trace_line NS DEV KBIT DELAY LIMIT [htb|cake]: DEV's egress as one
# direction of a line whose rate trace-replay changes in place: netem 1:
# (DELAY) as the root, under it either HTB 2: with the class 2:1 at KBIT and
# a pfifo of LIMIT packets (the line's buffer), or cake 2: at KBIT (the limit:
# cake at the bottleneck itself). The delay comes first, so the queue is the
# HTB's or cake's alone; netem's own limit is far above the leaf's. Not
# netem's rate: it fixes a packet's departure when the packet is queued.
trace_line() {
	local ns=$1 dev=$2 kbit=$3 delay=$4 limit=$5 kind=${6:-htb}
	inns "$ns" tc qdisc del dev "$dev" root 2>/dev/null || true
	inns "$ns" tc qdisc add dev "$dev" root handle 1: netem delay "$delay" limit 100000
	if [ "$kind" = cake ]; then
		inns "$ns" tc qdisc add dev "$dev" parent 1:1 handle 2: cake bandwidth "${kbit}kbit"
	else
		inns "$ns" tc qdisc add dev "$dev" parent 1:1 handle 2: htb default 1
		inns "$ns" tc class add dev "$dev" parent 2: classid 2:1 htb rate "${kbit}kbit" ceil "${kbit}kbit" burst 15k cburst 15k
		inns "$ns" tc qdisc add dev "$dev" parent 2:1 handle 10: pfifo limit "$limit"
	fi
}

# ---- daemons and their CPU ---------------------------------------------------

# need_python: PY, the python3 a script's helpers run (dies without one).
need_python() {
	PY=/usr/bin/python3
	[ -x "$PY" ] || PY=$(command -v python3) || die "python3 is missing (the script's helpers need it)"
}

# stop_on_exit: at exit, end DPID (a daemon the script started and keeps in
# DPID, or '') before the lab goes.
stop_on_exit() {
	DPID=''
	trap '[ -z "$DPID" ] || kill "$DPID" 2>/dev/null || true; lab_cleanup' EXIT
}

# start_daemon NS CONF LOG: `wgshape -v -c CONF daemon` in NS, until it logs
# 'running'; the pid in DAEMON_PID.
start_daemon() {
	local from
	touch "$3"
	from=$(wc -l <"$3")
	ip netns exec "$1" "$WGSHAPE" -v -c "$2" daemon >>"$3" 2>&1 &
	DAEMON_PID=$!
	wait_for 30 "$3" "$from" grep -q -m1 'running' || die "$1's daemon did not start: $(cat "$3")"
}
stop_daemon() { # PID
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# start_tree_daemon CONF LOG N: srv's `wgshape -v -c CONF daemon` (its pid
# in DPID, LOG empty or new) until it runs; says how many HTB classes wg0
# has then and checks at least N + 1 (N peers' and the default class).
start_tree_daemon() {
	local t0=$EPOCHREALTIME classes
	ip netns exec srv "$WGSHAPE" -v -c "$1" daemon >>"$2" 2>&1 &
	DPID=$!
	wait_for 300 "$2" 0 grep -q -m1 'running' || die "the daemon did not start: $(tail -n 3 "$2")"
	classes=$(inns srv tc class show dev wg0 | grep -c '^class htb' || true)
	info "daemon running, $classes HTB classes on wg0, $(ms_between "$t0" "$EPOCHREALTIME") ms after its start"
	expect_ge "HTB classes on wg0" "$(($3 + 1))" "$classes"
}

# cpu_mark PID FILE: "utime+stime (ticks) realtime" of PID
cpu_mark() {
	awk -v t="$EPOCHREALTIME" '{ print $14 + $15, t }' "/proc/$1/stat" >"$2"
}

# cpu_per_hour FILE0 FILE1: CPU seconds per hour of the process between the marks
cpu_per_hour() {
	awk -v hz="$(getconf CLK_TCK)" 'NR == 1 { c0 = $1; t0 = $2 } NR == 2 { c1 = $1; t1 = $2 }
		END { printf "%.1f", (c1 - c0) / hz / (t1 - t0) * 3600 }' "$1" "$2"
}

# until_t T0 SECS: sleep until SECS after T0 (an EPOCHREALTIME)
until_t() {
	local left
	left=$(awk -v a="$1" -v s="$2" -v b="$EPOCHREALTIME" 'BEGIN { d = a + s - b; printf "%.3f", (d > 0 ? d : 0) }')
	sleep "$left"
}

# cgroup_new NAME: a cgroup (v2) of its own for a program that forks (a
# script's CPU is its children's: fping, tc, sleep), its path; nothing and
# status 1 when this kernel or host gives none. The cgroup2 tree is mounted
# if nothing is (the lab VM's bare init does not).
cgroup_new() {
	local root=/sys/fs/cgroup
	[ "$(stat -f -c %T "$root" 2>/dev/null)" = cgroup2fs ] ||
		mount -t cgroup2 none "$root" 2>/dev/null || return 1
	mkdir -p "$root/lab-$1" 2>/dev/null || return 1
	echo "$root/lab-$1"
}

# cgroup_mark CGROUP FILE: "usage (µs) realtime" of CGROUP, as cpu_mark's
# marks (cgroup_per_hour reads two)
cgroup_mark() {
	awk -v t="$EPOCHREALTIME" '$1 == "usage_usec" { print $2, t }' "$1/cpu.stat" >"$2"
}
cgroup_per_hour() {
	awk 'NR == 1 { c0 = $1; t0 = $2 } NR == 2 { c1 = $1; t1 = $2 }
		END { printf "%.1f", (c1 - c0) / 1e6 / (t1 - t0) * 3600 }' "$1" "$2"
}
