#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Per-peer shaping on a server with many peers (issue 11): what the HTB +
# cake + flower structure costs, for N peers (default 1000, then 10000).
# srv's wg0 gets N peers with random keys and no endpoints (`wg set wg0 peer
# KEY allowed-ips ...`): 85% an IPv4 /32, 10% an IPv4 /24, 3% an IPv6 /128,
# 2% an IPv6 /64. The structure is the scenario's design 4 (scenario-peers.sh):
#
#   root 1: stab overhead 60 htb default fffe
#   per peer: class 1:H htb rate R ceil R, leaf H: cake besteffort,
#             filter parent 1: protocol ip|ipv6 flower dst_ip ADDR classid 1:H
#
# Figures (no assertions on time; the lab VM is emulated, ratios carry over):
#   (a) building it: `tc -b` of the whole batch (the baseline), `tc` a process
#       per command (for 20 peers), and wgshape's own: `wgshape -c FILE apply
#       wg0` with N [peer] sections, and `wgshape set wg0 peer KEY download
#       RATE` a process per peer (for 20 peers); `wgshape clear`
#   (b) changing one peer's rate: `tc class change` (in place: the leaf and the
#       counters stay; a process each, and 200 in one `tc -b`), and
#       `wgshape set wg0 peer KEY download RATE` on wgshape's tree
#   (c) memory (/proc/meminfo after dropping caches): WireGuard's peers, the
#       HTB classes and filters, cake leaves at the default memlimit and at
#       256k; then what the leaves hold under a UDP flood to 100 of the
#       peers, with the HTB classes at 100 kbit (the memlimit is the bound per
#       peer)
#   (d) CPU per packet: pktgen sends small UDP packets to every /32 peer in
#       turn (a dummy device whose egress redirects to wg0: pktgen cannot
#       drive a device without an Ethernet header), through wg0's root qdisc;
#       WireGuard then drops them (no endpoint: tx_errors). Busy time of every
#       CPU (/proc/stat, per CPU) over the packets that went through the qdisc:
#       noqueue, one cake, HTB + N classes + flower with cake leaves and with
#       HTB's pfifo leaves (classes far above the
#       load, so nothing waits or drops). The difference to noqueue is the
#       qdisc's cost.
#
# Usage: lab run tests/vm/bench-peers.sh [N...]     (default: 1000 10000)
# WGSHAPE_BENCH_SECS: seconds of each CPU-cost run (3).
# Memory: 1000 cake leaves take most of a 1 GiB VM; meson runs it with
# WGSHAPE_LAB_MEM=3072. A size whose cake leaves do not fit in what is left
# gets pfifo leaves (HTB's own) instead, and says so.
# lab-smp: 2
. "$(dirname "$0")/lib.sh"

SIZES=("$@")
[ "${#SIZES[@]}" -gt 0 ] || SIZES=(1000 10000)
PEER_RATE=20mbit
PG_SECS=${WGSHAPE_BENCH_SECS:-3} # seconds of each CPU-cost run
REPS=3
PROC_PEERS=20 # peers built with a tc process per command
FLOOD_PEERS=100 # peers flooded in (c)

need_root
need_tools ip tc wg jq awk python3

# ---- helpers --------------------------------------------------------------------

peers_cleanup() {
	inns srv ip link del dum0 2>/dev/null || true
	lab_cleanup
}
trap peers_cleanup EXIT

# now: nanoseconds (bash's clock: no process, which in the emulated VM takes
# longer than what a one-rate change is measured against)
now() { echo "${EPOCHREALTIME/./}000"; }
# ms A B: milliseconds from A to B (now values)
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", (b - a) / 1e6 }'; }

# meminfo: "MemAvailable Slab SUnreclaim VmallocUsed Percpu" in KiB, after
# dropping the page cache (so only what the kernel holds for us moves).
meminfo() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	awk '/^(MemAvailable|Slab|SUnreclaim|VmallocUsed|Percpu):/ { v[$1] = $2 }
		END { print v["MemAvailable:"], v["Slab:"], v["SUnreclaim:"], v["VmallocUsed:"], v["Percpu:"] }' /proc/meminfo
}

# memdelta WHAT BEFORE AFTER N: one line of what moved, and per peer.
memdelta() {
	awk -v w="$1" -v a="$2" -v b="$3" -v n="$4" 'BEGIN {
		split(a, x, " "); split(b, y, " "); used = x[1] - y[1]
		printf "   %-44s used %8.1f MiB (%6.1f KiB/peer); slab %+8.1f MiB (%5.1f KiB/peer), vmalloc %+6.1f MiB, percpu %+5.1f MiB\n",
			w, used / 1024, used / n, (y[2] - x[2]) / 1024, (y[2] - x[2]) / n, (y[4] - x[4]) / 1024, (y[5] - x[5]) / 1024 }'
	MEM_USED_KIB=$(awk -v a="$2" -v b="$3" 'BEGIN { split(a, x, " "); split(b, y, " "); print x[1] - y[1] }')
	MEM_SLAB_KIB=$(awk -v a="$2" -v b="$3" 'BEGIN { split(a, x, " "); split(b, y, " "); print y[2] - x[2] }')
}

tcs() { inns srv tc "$@"; }

# ---- the peers --------------------------------------------------------------------

# make_peers N: files in LAB_TMP describing N peers, one line each:
# "KEY ALLOWED PROTO CLASSHEX" (peers.txt); V4_COUNT /32 peers take
# 10.64.0.1 onward, in order (pktgen's range).
make_peers() {
	python3 - "$1" >"$LAB_TMP/peers.txt" <<'EOF'
import base64, ipaddress, os, sys
n = int(sys.argv[1])
v4 = ipaddress.IPv4Address("10.64.0.1")
n24 = n128 = n64 = 0
for i in range(n):
    key = base64.b64encode(os.urandom(32)).decode()
    k = i % 100
    if k < 85:
        a, proto = f"{v4}/32", "ip"; v4 += 1
    elif k < 95:
        a, proto = f"10.{128 + n24 // 256}.{n24 % 256}.0/24", "ip"; n24 += 1
    elif k < 98:
        a, proto = f"fd00:64::{n128 + 1:x}/128", "ipv6"; n128 += 1
    else:
        a, proto = f"fd00:65:0:{n64:x}::/64", "ipv6"; n64 += 1
    print(key, a, proto, f"{i + 2:x}")
EOF
	V4_COUNT=$(grep -c '/32 ip ' "$LAB_TMP/peers.txt" || true)
	V4_LAST=$(awk '/\/32 ip / { a = $2 } END { sub("/32", "", a); print a }' "$LAB_TMP/peers.txt")
}

# add_peers DEV: wg set DEV with the peers of peers.txt, 500 a command.
add_peers() {
	local dev=$1
	awk '{ printf " peer %s allowed-ips %s", $1, $2 } NR % 500 == 0 { print "" } END { print "" }' \
		"$LAB_TMP/peers.txt" | while read -r line; do
		# shellcheck disable=SC2086 # the words of the peer clauses
		[ -z "$line" ] || inns srv wg set "$dev" $line
	done
}

# batch LEAF [LEAF_OPTIONS...]: the tc batch building the structure for the
# peers of peers.txt: classes, leaves (LEAF "cake ..." or "none" for HTB's
# own pfifo), filters. HTB_RATE is the classes' rate.
batch() {
	local leaf=$*
	echo "qdisc add dev wg0 root handle 1: stab overhead 60 htb default fffe"
	awk -v r="$HTB_RATE" -v leaf="$leaf" '{
		print "class add dev wg0 parent 1: classid 1:" $4 " htb rate " r " ceil " r
		if (leaf != "none") print "qdisc add dev wg0 parent 1:" $4 " handle " $4 ": " leaf
		print "filter add dev wg0 parent 1: protocol " $3 " prio " ($3 == "ip" ? 10 : 20) \
			" flower dst_ip " $2 " classid 1:" $4 }' "$LAB_TMP/peers.txt"
	echo "class add dev wg0 parent 1: classid 1:fffe htb rate $HTB_RATE ceil $HTB_RATE"
}

# build LEAF...: build the structure with tc -b, BUILD_MS.
build() {
	local t0 t1
	batch "$@" >"$LAB_TMP/batch"
	t0=$(now)
	tcs -b "$LAB_TMP/batch" || die "tc -b failed to build the structure"
	t1=$(now)
	BUILD_MS=$(ms "$t0" "$t1")
}

unbuild() {
	local t0 t1
	t0=$(now)
	tcs qdisc del dev wg0 root 2>/dev/null || true
	t1=$(now)
	UNBUILD_MS=$(ms "$t0" "$t1")
}

counts() {
	echo "classes $(tcs class show dev wg0 | grep -c '^class htb' || true)," \
		"leaves $(tcs qdisc show dev wg0 | grep -c '^qdisc cake' || true) cake," \
		"filters $(tcs filter show dev wg0 | grep -c 'classid' || true)"
}

# ---- wgshape's per-peer shaping ------------------------------------------------
#
# The same structure through wgshape (WGSHAPE): a configuration with an
# [interface wg0] section and one [peer pN] section per peer (public-key,
# download), applied with `wgshape -c FILE apply wg0`; one peer's rate changed
# with `wgshape set wg0 peer KEY download RATE`; `wgshape clear wg0`. wgshape's
# tree (wgshape(8), PER-PEER SHAPING) is design 4 with a cap class and a
# default class: N + 2 classes, N + 1 leaves (lazy: the peers have no
# endpoints, so a 64-flow fq_codel each; the default class cake), a flower
# filter per prefix.
write_wgshape_conf() {
	{
		echo "[interface wg0]"
		awk -v r="$PEER_RATE" '{ printf "\n[peer p%d]\npublic-key = %s\ndownload = %s\n", NR, $1, r }' \
			"$LAB_TMP/peers.txt"
	} >"$LAB_TMP/peers.conf"
}

have_wgshape() { [ -n "${WGSHAPE:-}" ] && [ -x "$WGSHAPE" ]; }

# wgshape_timed WHAT ARGS...: run wgshape in srv, WG_MS its wall time; on
# failure say so (its stderr's last line) and return 1.
wgshape_timed() {
	local what=$1 t0 t1
	shift
	t0=${EPOCHREALTIME/./}
	if ! inns srv "$WGSHAPE" "$@" >"$LAB_TMP/wgshape.out" 2>&1; then
		fail "$what: wgshape $* failed: $(tail -n 1 "$LAB_TMP/wgshape.out")"
		return 1
	fi
	t1=${EPOCHREALTIME/./}
	WG_MS=$(((t1 - t0 + 500) / 1000))
}

# ---- CPU per packet (pktgen) ------------------------------------------------------

# pktgen_setup: dum0 in srv, pktgen's thread 0 sending on it (64-byte UDP
# to the /32 peers in turn, no count: pktgen_run stops it); dum0's egress
# redirects to the device under test (pktgen_target).
pktgen_setup() {
	modprobe pktgen 2>/dev/null || skip "no pktgen module"
	inns srv ip link add dum0 type dummy
	inns srv ip link set dum0 up
	tcs qdisc add dev dum0 clsact
	inns srv bash -c '
		pg() { echo "$2" >"/proc/net/pktgen/$1" || { echo "pktgen: $1: $2 refused" >&2; exit 1; }; }
		pg kpktgend_0 "add_device dum0"
		pg dum0 "xmit_mode queue_xmit"
		pg dum0 "count 0"
		pg dum0 "pkt_size 64"
		pg dum0 "dst_min 10.64.0.1"
		pg dum0 "dst_max $1"
		pg dum0 "src_min 10.255.0.1"
		pg dum0 "src_max 10.255.0.1"
		pg dum0 "udp_dst_min 9"
		pg dum0 "udp_dst_max 9"' pg "$V4_LAST" || die "pktgen setup failed"
}

# snap DEV: the CPUs' lines of /proc/stat and DEV's tx errors in srv (from
# /proc/PID/net/dev of a process living there: no process to start, so the
# two are read within the same moment).
snap() {
	awk -v dev="$1" 'FILENAME == "/proc/stat" { if (/^cpu[0-9]/) print; next }
		{ gsub(":", " ") } $1 == dev { print "txerr", $12 }' /proc/stat "/proc/$SRV_PID/net/dev"
}

# pktgen_run DEV SECS [PKT_SIZE]: pktgen through DEV's root qdisc for SECS
# seconds. Sets PG_SENT (pktgen's count), PG_PKTS (packets that reached
# WireGuard in the measured SECS: DEV's tx_errors, as none of the peers has an
# endpoint), PG_BUSY_US (busy µs of all CPUs together in those SECS), PG_CPUS
# (busy % of each CPU). The window opens once pktgen runs and closes before it
# is stopped. (pktgen in queue_xmit mode counts a packet only when
# dev_queue_xmit succeeds, and with noqueue WireGuard's drop is the result:
# so it runs for a time, not for a count.)
pktgen_run() {
	local dev=$1 secs=$2 size=${3:-64} s0 s1 out pid
	# (matchall has no replace)
	tcs filter del dev dum0 egress 2>/dev/null || true
	tcs filter add dev dum0 egress pref 1 matchall action mirred egress redirect dev "$dev"
	inns srv bash -c 'echo "pkt_size $1" >/proc/net/pktgen/dum0' pg "$size"
	inns srv bash -c 'echo start >/proc/net/pktgen/pgctrl' &
	pid=$!
	# a stop written before the start took hold would be lost, and pktgen
	# (no count) would run for ever: wait until its thread runs dum0
	for _ in $(seq 1 100); do
		inns srv grep -q '^Running:.*dum0' /proc/net/pktgen/kpktgend_0 && break
		sleep 0.1
	done
	s0=$(snap "$dev")
	if [ "${PG_SAMPLE_MEM:-0}" = 1 ]; then
		# the least MemAvailable (KiB) while it runs, sampled every 0.5 s
		PG_MEM_MIN=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
		for _ in $(seq 1 $((secs * 2))); do
			sleep 0.5
			m=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
			[ "$m" -ge "$PG_MEM_MIN" ] || PG_MEM_MIN=$m
		done
	else
		sleep "$secs"
	fi
	s1=$(snap "$dev")
	# stop until it has (the start's write returns when it ends)
	for _ in $(seq 1 100); do
		inns srv bash -c 'echo stop >/proc/net/pktgen/pgctrl'
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	wait "$pid" || true
	out=$(inns srv cat /proc/net/pktgen/dum0)
	PG_SENT=$(sed -n 's/.*pkts-sofar: \([0-9]*\).*/\1/p' <<<"$out")
	# /proc/stat: user nice system idle iowait irq softirq steal, in USER_HZ
	read -r PG_PKTS PG_BUSY_US PG_CPUS <<<"$(awk -v a="$s0" -v b="$s1" -v hz="$(getconf CLK_TCK)" 'BEGIN {
		n = split(a, la, "\n"); split(b, lb, "\n")
		for (c = 1; c <= n; c++) {
			split(la[c], x, " "); split(lb[c], y, " ")
			if (x[1] == "txerr") { pk = y[2] - x[2]; continue }
			t = 0; idle = 0
			for (k = 2; k <= 9; k++) { d = y[k] - x[k]; t += d; if (k == 5 || k == 6) idle += d }
			busy += t - idle
			cpus = cpus sprintf("%s%s %d%%", (cpus != "") ? ", " : "", x[1], (t > 0) ? 100 * (t - idle) / t : 0)
		}
		printf "%d %d %s\n", pk, busy * 1e6 / hz, cpus }')"
}

# cpu_costs DEV=LABEL...: REPS rounds, each running pktgen for PG_SECS
# through each DEV in turn (so a busy host weighs on all alike); a line of
# figures each, then the median µs per packet into COST[LABEL].
declare -A COST
cpu_costs() {
	local r kv dev label
	declare -A per=()
	for kv in "$@"; do pktgen_run "${kv%%=*}" 1; done # warm up
	for r in $(seq 1 "$REPS"); do
		for kv in "$@"; do
			dev=${kv%%=*} label=${kv#*=}
			pktgen_run "$dev" "$PG_SECS"
			c=$(awk -v b="$PG_BUSY_US" -v p="$PG_PKTS" 'BEGIN { printf "%.2f", (p > 0) ? b / p : 0 }')
			per[$label]+="$c "
			info "$(printf '%-36s run %d: %8d packets reached WireGuard (pktgen: %8d), %6.2f us busy a packet; CPUs busy: %s' \
				"$label" "$r" "$PG_PKTS" "$PG_SENT" "$c" "$PG_CPUS")"
		done
	done
	for kv in "$@"; do
		label=${kv#*=}
		COST[$label]=$(tr ' ' '\n' <<<"${per[$label]}" | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	done
}

# ---- the run ----------------------------------------------------------------------

# wg0 is the one shaped per peer; wg1 (one cake), wg2 (noqueue) and wg3 (the
# tree with pfifo leaves) get the same peers for the CPU figures, so they are
# measured in turn without rebuilding. No private key: WireGuard would precompute a shared secret for
# each peer added (seconds for 1000 under TCG), and no packet is sent anyway.
step "srv with wg0, wg1, wg2, wg3 (no peers yet); $(nproc) CPUs, $(awk '/^MemTotal/ { printf "%d MiB", $2 / 1024 }' /proc/meminfo)"
ip netns add srv
ip -n srv link set lo up
for dev in wg0 wg1 wg2 wg3; do
	ip -n srv link add "$dev" type wireguard
	ip -n srv link set "$dev" up
done
# a process in srv, whose /proc/PID/net is srv's (snap); lab_cleanup ends it
ip netns exec srv sleep 1000000 &
SRV_PID=$!
# the modules, loaded before any memory is measured
tcs qdisc add dev wg0 root handle 1: stab overhead 60 htb default fffe
tcs class add dev wg0 parent 1: classid 1:2 htb rate 1mbit
tcs qdisc add dev wg0 parent 1:2 handle 2: cake besteffort
tcs filter add dev wg0 parent 1: protocol ip prio 10 flower dst_ip 10.9.9.9 classid 1:2
tcs qdisc del dev wg0 root

SUMMARY=()
have=0 have_pktgen=0 have_set=0
CAKE_LEAF_KIB=
for n in "${SIZES[@]}"; do
	step "$n peers"
	make_peers "$n"
	info "$(awk '{ c[$3 " /" substr($2, index($2, "/") + 1)]++ } END { for (k in c) printf "%s %d, ", k, c[k] }' "$LAB_TMP/peers.txt")the $V4_COUNT /32 from 10.64.0.1 to $V4_LAST"
	# WireGuard's own share, with only these peers on wg0
	for dev in wg0 wg1 wg2 wg3; do
		inns srv wg show "$dev" peers | awk '{ printf "peer %s remove\n", $1 }' |
			xargs -r -n 501 sh -c 'dev=$1; shift; ip netns exec srv wg set "$dev" "$@"' wg "$dev"
	done
	m0=$(meminfo)
	t0=$(now)
	add_peers wg0
	t1=$(now)
	m1=$(meminfo)
	got=$(inns srv wg show wg0 peers | grep -c . || true)
	expect_eq "peers on wg0" "$n" "$got"
	info "wg set (500 peers a command): $(ms "$t0" "$t1") ms"
	memdelta "WireGuard, $n peers (with their AllowedIPs)" "$m0" "$m1" "$n"
	SUMMARY+=("$(printf '%6d peers  memory, WireGuard peers                %8.1f MiB (%.1f KiB a peer; slab %.1f KiB)' "$n" "$(awk -v k="$MEM_USED_KIB" 'BEGIN { print k / 1024 }')" "$(awk -v k="$MEM_USED_KIB" -v n="$n" 'BEGIN { print k / n }')" "$(awk -v k="$MEM_SLAB_KIB" -v n="$n" 'BEGIN { print k / n }')")")
	write_wgshape_conf
	# the peer whose rate (b) changes
	mid=$(awk -v m="$((n / 2))" 'NR == m { print $4 }' "$LAB_TMP/peers.txt")
	midkey=$(awk -v m="$((n / 2))" 'NR == m { print $1 }' "$LAB_TMP/peers.txt")

	# cake leaves if they fit: 1.5 times what the first size measured, or
	# 1 MiB a leaf before anything was measured
	leaf="cake besteffort" leafname=cake
	avail=$(awk '{ print $1 }' <<<"$m1")
	leaf_kib=${CAKE_LEAF_KIB:-1024}
	if [ $((leaf_kib * n * 3 / 2)) -gt "$avail" ]; then
		leaf=none leafname=pfifo
		info "$n cake leaves would take about $((leaf_kib * n / 1024)) MiB of the $((avail / 1024)) MiB available: pfifo leaves (HTB's own) instead"
	fi

	step "$n peers: (a) building HTB + classes + $leafname leaves + flower filters"
	HTB_RATE=$PEER_RATE
	m2=$(meminfo)
	if [ "$leaf" != none ]; then
		# the classes and filters alone first, for the memory of each part
		build none
		m_htb=$(meminfo)
		info "tc -b, without leaves: $BUILD_MS ms ($(counts))"
		memdelta "HTB classes + flower filters (pfifo leaves)" "$m2" "$m_htb" "$n"
		SUMMARY+=("$(printf '%6d peers  memory, classes + filters, no cake     %8.1f MiB (%.1f KiB a peer; slab %.1f KiB)' "$n" "$(awk -v k="$MEM_USED_KIB" 'BEGIN { print k / 1024 }')" "$(awk -v k="$MEM_USED_KIB" -v n="$n" 'BEGIN { print k / n }')" "$(awk -v k="$MEM_SLAB_KIB" -v n="$n" 'BEGIN { print k / n }')")")
		unbuild
	fi
	build "$leaf"
	m3=$(meminfo)
	info "tc -b $(wc -l <"$LAB_TMP/batch") commands: $BUILD_MS ms, $(awk -v t="$BUILD_MS" -v n="$n" 'BEGIN { printf "%.2f", t / n }') ms a peer ($(counts))"
	SUMMARY+=("$(printf '%6d peers  build, tc -b (%s leaves)        %8d ms  (%.2f ms a peer)' "$n" "$leafname" "$BUILD_MS" "$(awk -v t="$BUILD_MS" -v n="$n" 'BEGIN { print t / n }')")")
	memdelta "HTB + classes + filters + $leafname leaves" "$m2" "$m3" "$n"
	SUMMARY+=("$(printf '%6d peers  memory, all of it (%s leaves)     %8.1f MiB (%.1f KiB a peer; slab %.1f KiB)' "$n" "$leafname" "$(awk -v k="$MEM_USED_KIB" 'BEGIN { print k / 1024 }')" "$(awk -v k="$MEM_USED_KIB" -v n="$n" 'BEGIN { print k / n }')" "$(awk -v k="$MEM_SLAB_KIB" -v n="$n" 'BEGIN { print k / n }')")")
	if [ "$leaf" != none ]; then
		CAKE_LEAF_KIB=$(awk -v a="$m_htb" -v b="$m3" -v n="$n" 'BEGIN { split(a, x, " "); split(b, y, " "); printf "%d", (x[1] - y[1]) / n }')
		info "one cake leaf: about $CAKE_LEAF_KIB KiB"
		SUMMARY+=("$(printf '%6d peers  memory, one cake leaf                  %8d KiB' "$n" "$CAKE_LEAF_KIB")")
	fi
	unbuild
	info "deleting the root qdisc (everything): $UNBUILD_MS ms"
	SUMMARY+=("$(printf '%6d peers  delete the root qdisc                  %8d ms' "$n" "$UNBUILD_MS")")

	if [ "$have" = 0 ]; then
		have=1
		# tc a process per command (a recipe script's way), for a few peers
		cp "$LAB_TMP/peers.txt" "$LAB_TMP/peers.all"
		head -n "$PROC_PEERS" "$LAB_TMP/peers.all" >"$LAB_TMP/peers.txt"
		batch "$leaf" >"$LAB_TMP/batch.few"
		cp "$LAB_TMP/peers.all" "$LAB_TMP/peers.txt"
		t0=$(now)
		# shellcheck disable=SC2016 # expanded by that shell
		inns srv bash -c 'while read -r line; do eval "tc $line" || exit 1; done' <"$LAB_TMP/batch.few" ||
			die "tc, a process per command, failed"
		t1=$(now)
		info "tc a process per command, $PROC_PEERS peers ($(wc -l <"$LAB_TMP/batch.few") commands): $(ms "$t0" "$t1") ms, $(awk -v t="$(ms "$t0" "$t1")" -v n="$PROC_PEERS" 'BEGIN { printf "%.1f", t / n }') ms a peer"
		SUMMARY+=("$(printf '%6d peers  build, tc a process per command    %8d ms  (%.2f ms a peer)' "$PROC_PEERS" "$(ms "$t0" "$t1")" "$(awk -v t="$(ms "$t0" "$t1")" -v n="$PROC_PEERS" 'BEGIN { print t / n }')")")
		unbuild
	fi

	step "$n peers: (a, b) wgshape: apply $n [peer] sections, change one peer's rate, clear"
	if ! have_wgshape; then
		info "WGSHAPE not set: no wgshape figures"
	elif [ "$leaf" = none ]; then
		info "skipped: wgshape's leaves are cake, and $n of them do not fit"
		SUMMARY+=("$(printf '%6d peers  build, wgshape apply                    skipped: %d cake leaves do not fit' "$n" "$n")")
	elif wgshape_timed "apply $n peers" -c "$LAB_TMP/peers.conf" apply wg0; then
		m_w=$(meminfo)
		info "wgshape apply: $WG_MS ms, $(awk -v t="$WG_MS" -v n="$n" 'BEGIN { printf "%.2f", t / n }') ms a peer ($(counts))"
		SUMMARY+=("$(printf '%6d peers  build, wgshape apply                %8d ms  (%.2f ms a peer)' "$n" "$WG_MS" "$(awk -v t="$WG_MS" -v n="$n" 'BEGIN { print t / n }')")")
		memdelta "wgshape's tree (lazy leaves: idle peers fq_codel, the default class cake)" "$m2" "$m_w" "$n"
		SUMMARY+=("$(printf '%6d peers  memory, wgshape tree                   %8.1f MiB (%.1f KiB a peer; slab %.1f KiB)' "$n" "$(awk -v k="$MEM_USED_KIB" 'BEGIN { print k / 1024 }')" "$(awk -v k="$MEM_USED_KIB" -v n="$n" 'BEGIN { print k / n }')" "$(awk -v k="$MEM_SLAB_KIB" -v n="$n" 'BEGIN { print k / n }')")")
		tot=0 ok=1
		# once untimed: meminfo just dropped the page cache, and the first
		# process would read wgshape and its libraries from the host again
		wgshape_timed "change one peer" set wg0 peer "$midkey" download 12mbit || ok=0
		for r in 1 2 3 4 5; do
			wgshape_timed "change one peer" set wg0 peer "$midkey" download "$((10 + r % 2))mbit" || { ok=0; break; }
			tot=$((tot + WG_MS))
		done
		if [ "$ok" = 1 ]; then
			expect_ge "classes with the new rate after wgshape set ... peer" 1 \
				"$(tcs class show dev wg0 | grep -c 'ceil 11Mbit' || true)"
			info "wgshape set wg0 peer KEY download RATE (a process each, 5 times): $((tot / 5)) ms each ($(counts))"
			SUMMARY+=("$(printf '%6d peers  change one rate, wgshape set        %8d ms (a process)' "$n" "$((tot / 5))")")
		fi
		if wgshape_timed "clear" clear wg0; then
			info "wgshape clear wg0: $WG_MS ms; root now: $(tcs qdisc show dev wg0 | awk '!f && / root / { print $2; f = 1 }')"
			SUMMARY+=("$(printf '%6d peers  clear, wgshape clear                %8d ms' "$n" "$WG_MS")")
		fi
	fi
	if have_wgshape && [ "$have_set" = 0 ]; then
		have_set=1
		# a peer at a time from nothing, a process each
		t0=$(now)
		head -n "$PROC_PEERS" "$LAB_TMP/peers.txt" | while read -r key _; do
			inns srv "$WGSHAPE" set wg0 peer "$key" download "$PEER_RATE" >/dev/null 2>"$LAB_TMP/set.err" ||
				{ fail "wgshape set wg0 peer ... download failed: $(tail -n 1 "$LAB_TMP/set.err")"; break; }
		done
		t1=$(now)
		info "wgshape set wg0 peer KEY download RATE, $PROC_PEERS peers from nothing (a process each): $(ms "$t0" "$t1") ms ($(counts))"
		SUMMARY+=("$(printf '%6d peers  build, wgshape set a process each   %8d ms  (%.2f ms a peer; on %d peers)' "$PROC_PEERS" "$(ms "$t0" "$t1")" "$(awk -v t="$(ms "$t0" "$t1")" -v n="$PROC_PEERS" 'BEGIN { print t / n }')" "$n")")
		inns srv "$WGSHAPE" clear wg0 >/dev/null 2>&1 || true
	fi
	unbuild

	step "$n peers: (b) changing one peer's rate"
	build "$leaf"
	before=$(tcs -s class show dev wg0 classid "1:$mid" | sed -n 1p)
	t0=$(now)
	for r in $(seq 1 20); do
		tcs class change dev wg0 parent 1: classid "1:$mid" htb rate "$((10 + r % 2))mbit" ceil "$((10 + r % 2))mbit"
	done
	t1=$(now)
	after=$(tcs -s class show dev wg0 classid "1:$mid" | sed -n 1p)
	info "before: $before"
	info "after:  $after"
	if [ "$leaf" != none ]; then
		expect_match "the class keeps its leaf after tc class change" "leaf $mid:" "$after"
	else
		expect_match "the class has the new rate after tc class change" "rate 10Mbit" "$after"
	fi
	info "tc class change (a process each, 20 times): $(awk -v t="$(ms "$t0" "$t1")" 'BEGIN { printf "%.1f", t / 20 }') ms each"
	SUMMARY+=("$(printf '%6d peers  change one rate, tc class change       %8.1f ms (a process)' "$n" "$(awk -v t="$(ms "$t0" "$t1")" 'BEGIN { print t / 20 }')")")
	for r in $(seq 1 200); do
		echo "class change dev wg0 parent 1: classid 1:$mid htb rate $((10 + r % 2))mbit ceil $((10 + r % 2))mbit"
	done >"$LAB_TMP/batch.change"
	t0=$(now)
	tcs -b "$LAB_TMP/batch.change"
	t1=$(now)
	info "tc -b, 200 class changes in one process: $(awk -v t="$(ms "$t0" "$t1")" 'BEGIN { printf "%.2f", t / 200 }') ms each"
	SUMMARY+=("$(printf '%6d peers  change one rate, tc -b (200 in one)    %8.2f ms' "$n" "$(awk -v t="$(ms "$t0" "$t1")" 'BEGIN { print t / 200 }')")")

	step "$n peers: (d) CPU per packet through the root qdisc (pktgen, 64 bytes, to each /32 peer in turn, ${PG_SECS} s a run)"
	[ "$have_pktgen" = 1 ] || pktgen_setup
	have_pktgen=1
	inns srv bash -c "echo 'dst_max $V4_LAST' >/proc/net/pktgen/dum0"
	add_peers wg1
	add_peers wg2
	tcs qdisc replace dev wg1 root cake bandwidth 10gbit overhead 60
	# wg0 as (b) left it: classes at PEER_RATE, far above what pktgen gives
	# each peer, so nothing waits
	htb="HTB + classes + flower, $leafname leaves"
	devs=("wg2=noqueue" "wg1=one cake" "wg0=$htb")
	labels=(noqueue "one cake" "$htb")
	if [ "$leaf" != none ]; then
		# the same tree with HTB's pfifo leaves on wg3: the classifier and
		# HTB alone, as the largest size has them
		add_peers wg3
		HTB_RATE=$PEER_RATE
		batch none | sed 's/ dev wg0 / dev wg3 /' | tcs -b -
		devs+=("wg3=HTB + classes + flower, pfifo leaves")
		labels+=("HTB + classes + flower, pfifo leaves")
	fi
	cpu_costs "${devs[@]}"
	for k in "${labels[@]}"; do
		SUMMARY+=("$(printf '%6d peers  CPU per packet, %-38s %6.2f us (+%.2f over noqueue)' "$n" "$k" "${COST[$k]}" \
			"$(awk -v a="${COST[$k]}" -v b="${COST[noqueue]}" 'BEGIN { print a - b }')")")
	done
	tcs qdisc del dev wg1 root
	tcs qdisc del dev wg3 root 2>/dev/null || true

	avail=$(meminfo | awk '{ print $1 }')
	if [ "$leaf" != none ] && [ "$avail" -lt 1048576 ]; then
		info "(c) the flood: skipped, only $((avail / 1024)) MiB available (it may take 1 GiB)"
	elif [ "$leaf" != none ]; then
		# the first FLOOD_PEERS /32 peers only: spread over all of them, the
		# same flood leaves each cake so little that its AQM keeps it short
		flood_last=$(awk -v m="$FLOOD_PEERS" '/\/32 ip / { sub("/32", "", $2); a = $2; if (++k == m) exit }
			END { print a }' "$LAB_TMP/peers.txt")
		inns srv bash -c "echo 'dst_max $flood_last' >/proc/net/pktgen/dum0"
		step "$n peers: (c) what the cake leaves hold after a 5 s UDP flood to $FLOOD_PEERS of the peers (classes at 100 kbit, 1400-byte packets, to each in turn)"
		for ml in default 256k; do
			unbuild
			HTB_RATE=100kbit
			if [ "$ml" = default ]; then build "$leaf"; else build "$leaf" memlimit "$ml"; fi
			lim=$(tcs -s -j qdisc show dev wg0 | jq '[.[] | select(.kind == "cake") | .memory_limit] | .[0]')
			m4=$(meminfo)
			PG_SAMPLE_MEM=1 pktgen_run wg0 5 1400
			# cake's memory_used is the most its queue ever held
			tcs -s -j qdisc show dev wg0 >"$LAB_TMP/flood.json"
			held=$(jq '[.[] | select(.kind == "cake") | .memory_used] | add' "$LAB_TMP/flood.json")
			peak=$(jq '[.[] | select(.kind == "cake") | .memory_used] | max' "$LAB_TMP/flood.json")
			drops=$(jq '[.[] | select(.kind == "cake") | .drops] | add' "$LAB_TMP/flood.json")
			lowest=$(( $(awk '{ print $1 }' <<<"$m4") - PG_MEM_MIN ))
			info "memlimit $ml: each leaf's limit $((lim / 1024)) KiB; $PG_SENT packets sent to $FLOOD_PEERS peers, $drops dropped by the leaves, $PG_PKTS sent on; the most each leaf held, added up: $((held / 1048576)) MiB (one leaf: at most $((peak / 1024)) KiB); MemAvailable fell by up to $((lowest / 1024)) MiB during the flood"
			SUMMARY+=("$(printf '%6d peers  flood to %d, memlimit %-8s       %8d MiB peak in the leaves (limit %d KiB a leaf, worst %d KiB); MemAvailable -%d MiB' "$n" "$FLOOD_PEERS" "$ml" "$((held / 1048576))" "$((lim / 1024))" "$((peak / 1024))" "$((lowest / 1024))")")
		done
	fi
	unbuild
	[ -z "${flood_last:-}" ] || inns srv bash -c "echo 'dst_max $V4_LAST' >/proc/net/pktgen/dum0"
done

step "summary (kernel $(uname -r), ${LAB_MODE:-?}, $(nproc) CPUs; figures, no assertions)"
for s in "${SUMMARY[@]}"; do info "$s"; done

finish
