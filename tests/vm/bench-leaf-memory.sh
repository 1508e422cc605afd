#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Kernel memory of the per-peer tree (issue 27): srv's wg0 has N peers (random
# keys, a /32 each), each a [peer] section at 20mbit, shaped by the daemon.
# ACTIVE of them have an endpoint (an unused port on cli's veth address): a
# ping to each makes WireGuard send it handshake initiations, traffic the
# peer's byte counters show, as a client that starts would. For each leaf
# mode, the kernel memory the tree takes (MemAvailable before the daemon
# against after, less the daemon's own RSS):
#   cake  every peer's class with cake (leaf = cake: as if all N were active)
#   lazy  the default: after the daemon made the tree (all idle: fq_codel),
#         and once the ACTIVE peers' leaves became cake; with the time from
#         each one's first packet to its cake (a stamped tc monitor).
# Figures, no assertions on time or size; checks that the ACTIVE leaves
# became cake and the others stayed fq_codel.
#
# Usage: lab run tests/vm/bench-leaf-memory.sh [N...]   (default: 1000)
# WGSHAPE_BENCH_ACTIVE: peers that move traffic (50). leaf = cake at N = 1000
# takes about 1 GiB: meson runs it with WGSHAPE_LAB_MEM=3072; past 2,000
# peers only lazy is measured.
# lab-smp: 2
. "$(dirname "$0")/lib.sh"

need_wgshape
need_tools ip tc wg awk
need_python
stop_on_exit

SIZES=("$@")
[ "${#SIZES[@]}" -gt 0 ] || SIZES=(1000)
ACTIVE=${WGSHAPE_BENCH_ACTIVE:-50}
CONF=$LAB_TMP/srv.conf
DLOG=$LAB_TMP/daemon.log
MONF=$LAB_TMP/srv-monitor.txt
lab_topology ipv4
ip -n srv route add 10.64.0.0/16 dev wg0

avail_kib() { awk '/^MemAvailable:/ { print $2 }' /proc/meminfo; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
leaves() { inns srv tc qdisc show dev wg0 | awk -v k="$1" '$2 == k && $4 == "parent"' | grep -c . || true; }

# peers N: N peers on srv's wg0 ("KEY ADDR" in peers.txt), the first ACTIVE
# with an endpoint nobody answers at
peers() {
	"$PY" - "$1" >"$LAB_TMP/peers.txt" <<'PY'
import base64, os, sys
for i in range(int(sys.argv[1])):
    print(base64.b64encode(os.urandom(32)).decode(), "10.64.%d.%d" % (1 + i // 250, 1 + i % 250))
PY
	awk -v a="$ACTIVE" -v ep="$CLI_V4" '{ printf "peer %s allowed-ips %s/32%s\n", $1, $2,
		NR <= a ? " endpoint " ep ":" 40000 + NR : "" }' "$LAB_TMP/peers.txt" |
		xargs -r -n 1500 sh -c 'ip netns exec srv wg set wg0 "$@"' wg
}

# run N MODE: the daemon shapes N peers with leaf = MODE; the figures
run() {
	local n=$1 mode=$2 a0 a1 a2 t0 cake_n
	[ -z "$DPID" ] || { kill "$DPID" 2>/dev/null || true; wait "$DPID" 2>/dev/null || true; DPID=; }
	inns srv "$WGSHAPE" clear wg0 >/dev/null 2>&1 || true
	inns srv wg show wg0 peers | awk '{ print "peer " $1 " remove" }' |
		xargs -r -n 1500 sh -c 'ip netns exec srv wg set wg0 "$@"' wg
	peers "$n"
	{
		printf '[interface wg0]\nleaf = %s\n' "$mode"
		awk '{ printf "\n[peer p%d]\npublic-key = %s\ndownload = 20mbit\n", NR, $1 }' "$LAB_TMP/peers.txt"
	} >"$CONF"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	a0=$(avail_kib)
	: >"$DLOG"
	t0=$EPOCHREALTIME
	ip netns exec srv "$WGSHAPE" -c "$CONF" daemon >>"$DLOG" 2>&1 &
	DPID=$!
	wait_for 600 "$DLOG" 0 grep -q -m1 'running' || die "the daemon did not start: $(tail -n 3 "$DLOG")"
	info "$n peers, leaf = $mode: tree made in $(ms_between "$t0" "$EPOCHREALTIME") ms; leaves: $(leaves cake) cake, $(leaves fq_codel) fq_codel"
	a1=$(avail_kib)
	ROW_IDLE=$(((a0 - a1 - $(rss_kib "$DPID")) / 1024))
	info "kernel memory, no peer active: $ROW_IDLE MiB (MemAvailable $((a0 / 1024)) -> $((a1 / 1024)) MiB, daemon RSS $(($(rss_kib "$DPID") / 1024)) MiB)"
	ROW_ACTIVE=-
	ROW_WAIT=-
	[ "$mode" = lazy ] || return 0
	stamped_monitor srv "$MONF"
	: >"$LAB_TMP/sent.txt"
	head -n "$ACTIVE" "$LAB_TMP/peers.txt" | while read -r _ addr; do
		echo "$EPOCHREALTIME $addr" >>"$LAB_TMP/sent.txt"
		inns srv ping -c 1 -W 0.05 -q "$addr" >/dev/null 2>&1 || true
	done
	cake_n=0
	for _ in $(seq 1 60); do
		cake_n=$(leaves cake)
		[ "$cake_n" -lt $((ACTIVE + 1)) ] || break
		wait_for 1 "$MONF" "$(wc -l <"$MONF")" grep -q -m1 'qdisc cake' || true
	done
	expect_eq "$n peers, lazy: cake leaves once $ACTIVE peers moved traffic (theirs and the default's)" \
		"$((ACTIVE + 1))" "$cake_n"
	expect_eq "$n peers, lazy: fq_codel leaves (the idle peers)" "$((n - ACTIVE))" "$(leaves fq_codel)"
	kill "$STAMPED_PID" 2>/dev/null || true
	# each active peer's first packet to its cake: its class from its filter, the monitor's line
	head -n "$ACTIVE" "$LAB_TMP/sent.txt" | while read -r t addr; do
		c=$(htb_class_for srv wg0 "$addr")
		awk -v c="$c" -v t="$t" '$3 == "cake" && $8 == c { printf "%.0f\n", ($1 - t) * 1000; exit }' "$MONF"
	done >"$LAB_TMP/wait.txt"
	a2=$(avail_kib)
	ROW_ACTIVE=$(((a0 - a2 - $(rss_kib "$DPID")) / 1024))
	ROW_WAIT="$(pctl 50 "$LAB_TMP/wait.txt")/$(pctl 100 "$LAB_TMP/wait.txt")"
	info "kernel memory, $ACTIVE peers active: $ROW_ACTIVE MiB; first packet to cake (ms, $(grep -c . "$LAB_TMP/wait.txt") seen): p50/max $ROW_WAIT"
}

SUMMARY=()
for n in "${SIZES[@]}"; do
	for mode in cake lazy; do
		[ "$mode" = lazy ] || [ "$n" -le 2000 ] || continue
		step "$n peers, leaf = $mode"
		run "$n" "$mode"
		SUMMARY+=("$(printf '%6d peers  leaf = %-5s  kernel memory: none active %6s MiB, %d active %6s MiB | first packet to cake p50/max %s ms' \
			"$n" "$mode" "$ROW_IDLE" "$ACTIVE" "$ROW_ACTIVE" "$ROW_WAIT")")
	done
done

step "summary ($(nproc) CPUs, $(($(awk '/^MemTotal:/ { print $2 }' /proc/meminfo) / 1024)) MiB, wgshape $("$WGSHAPE" --version 2>/dev/null | sed -n 1p))"
for l in "${SUMMARY[@]}"; do info "$l"; done

finish
