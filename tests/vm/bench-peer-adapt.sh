#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# What the server's adaptation of peers that run nothing ([peer] adapt =
# yes, issue 26 item 3) costs per peer: srv's wg0 has C clients (default
# 100; in cli, a WireGuard interface each, wgc0..., its own key and /32,
# running no wgshape), each a [peer] at 2 Mbit/s. A python3 sender in srv
# sends each client 400 kbit/s of UDP through the tunnel (a fifth of its
# rate: its class counts as loaded, and stays under its rate, so no queue
# of ours). For each M in MS (default "10 100"): the daemon with the first M
# peers fixed, then the same M with adapt = yes, SECS s (default 20) of load
# each; the daemon's CPU (/proc/PID/stat) and each core's busy share. The
# figure: (adapt - fixed) / M, per adapting peer; and the ICMP echoes srv
# sent (IcmpMsg OutType8) against M x SECS x 20 (one a peer every 50 ms).
#
# Usage: lab run tests/vm/bench-peer-adapt.sh [C [SECS [MS]]]
# lab-smp: 2
. "$(dirname "$0")/lib.sh"

C=${1:-100}
SECS=${2:-20}
MS=${3:-10 100}
CONF=$LAB_TMP/srv.conf
DLOG=$LAB_TMP/daemon.log

need_wgshape
need_tools ip tc wg awk
need_python
stop_on_exit
[ "$C" -le 250 ] || die "C must be at most 250 (one /24 of client addresses)"

lab_topology ipv4

step "$C clients in cli, a WireGuard interface each, running nothing"
lab_clients "$C"
while read -r dev addr key; do
	inns srv wg set wg0 peer "$key" allowed-ips "$addr/32"
done <"$LAB_TMP/clients.txt"
ip -n srv route add 10.65.0.0/24 dev wg0
up=0
while read -r dev addr key; do
	inns cli ping -c 1 -W 3 -I "$addr" "$SRV_TUN4" >/dev/null 2>&1 && up=$((up + 1))
done <"$LAB_TMP/clients.txt"
expect_eq "clients whose tunnel answers a ping" "$C" "$up"

cat >"$LAB_TMP/send.py" <<'PY'
# clients.txt, bits a second each, seconds: UDP to each client's port 9
import socket, sys, time
addrs = [l.split()[1] for l in open(sys.argv[1])]
each, secs = float(sys.argv[2]), float(sys.argv[3])
size = 1200
pps = each / 8 / size * len(addrs)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
buf = bytes(size)
t0 = time.monotonic()
k = 0
while True:
    now = time.monotonic()
    if now - t0 >= secs:
        break
    due = t0 + k / pps
    if now < due:
        time.sleep(due - now)
    try:
        s.sendto(buf, (addrs[k % len(addrs)], 9))
    except OSError:
        pass
    k += 1
sys.stderr.write("sent %d datagrams in %.1f s\n" % (k, time.monotonic() - t0))
PY

cores() { awk '/^cpu[0-9]/ { t = 0; for (i = 2; i <= NF; i++) t += $i; print $1, t - $5 - $6, t }' /proc/stat; }
echoes() {
	inns srv awk '/^IcmpMsg:/ { if (!h) { for (i = 2; i <= NF; i++) col[$i] = i; h = 1; next }
		if ("OutType8" in col) v = $col["OutType8"] } END { print v + 0 }' /proc/net/snmp
}

# run M ADAPT: the daemon with the first M clients as [peer]s (adapt = yes
# when ADAPT is yes), SECS s of load to those M; "cpu% echoes percore" on stdout
run() {
	local m=$1 adapt=$2 e0 e1 share percore
	head -n "$m" "$LAB_TMP/clients.txt" >"$LAB_TMP/some.txt"
	awk -v a="$adapt" '{ printf "[peer c%d]\npublic-key = %s\ndownload = 2mbit\n%s\n", NR, $3,
		(a == "yes" ? "adapt = yes\n" : "") }' "$LAB_TMP/some.txt" >"$CONF"
	chmod 0600 "$CONF"
	: >"$DLOG"
	start_daemon srv "$CONF" "$DLOG"
	local dpid=$DAEMON_PID
	# the tree made: a class for the last of them
	wait_for 30 "$DLOG" 0 grep -q -m1 'running' || true
	for i in $(seq 1 100); do
		[ "$(htb_class_for srv wg0 "$(awk 'END { print $2 }' "$LAB_TMP/some.txt")")" != "(none)" ] && break
		sleep 0.1
	done
	inns srv "$PY" "$LAB_TMP/send.py" "$LAB_TMP/some.txt" 400000 $((SECS + 3)) 2>"$LAB_TMP/send.err" &
	local sp=$!
	sleep 3 # the load's start, and the daemon seeing it (its looks: every 200 ms)
	e0=$(echoes)
	cores >"$LAB_TMP/cores0"
	cpu_mark "$dpid" "$LAB_TMP/cpu0"
	sleep "$SECS"
	cpu_mark "$dpid" "$LAB_TMP/cpu1"
	cores >"$LAB_TMP/cores1"
	e1=$(echoes)
	wait "$sp" || true
	stop_daemon "$dpid"
	share=$(awk -v hz="$(getconf CLK_TCK)" 'NR == 1 { c0 = $1; t0 = $2 } NR == 2 { c1 = $1; t1 = $2 }
		END { printf "%.1f", (c1 - c0) / hz / (t1 - t0) * 100 }' "$LAB_TMP/cpu0" "$LAB_TMP/cpu1")
	percore=$(awk 'NR == FNR { b[$1] = $2; t[$1] = $3; next }
		{ printf "%s%s=%.0f%%", sep, $1, ($2 - b[$1]) * 100 / ($3 - t[$1]); sep = "," }' \
		"$LAB_TMP/cores0" "$LAB_TMP/cores1")
	echo "$share $((e1 - e0)) $percore"
}

ROWS=()
for m in $MS; do
	[ "$m" -le "$C" ] || die "M=$m is more than C=$C"
	step "$m peers loaded (400 kbit/s each), fixed, then adapt = yes ($SECS s each)"
	read -r FIX FIX_E FIX_CORES <<<"$(run "$m" no)"
	info "fixed: daemon $FIX% of a core, $FIX_E ICMP echoes; cores $FIX_CORES ($(cat "$LAB_TMP/send.err"))"
	read -r ADA ADA_E ADA_CORES <<<"$(run "$m" yes)"
	info "adapt: daemon $ADA% of a core, $ADA_E ICMP echoes (about $((m * SECS * 20))); cores $ADA_CORES ($(cat "$LAB_TMP/send.err"))"
	expect_ge "ICMP echoes with $m adapting peers (a tenth of one a peer every 50 ms, at least)" \
		$((m * SECS * 2)) "$ADA_E"
	grep -E '<[0-4]>' "$DLOG" | tail -3 | sed 's/^/   daemon: /' || true
	PER=$(awk -v a="$ADA" -v f="$FIX" -v m="$m" 'BEGIN { printf "%.3f", (a - f) / m }')
	ROWS+=("$(printf '%5d | %7s%% | %7s%% | %8s%% | %7d' "$m" "$FIX" "$ADA" "$PER" "$ADA_E")")
done

step "the daemon's CPU, in % of one emulated core, $SECS s of load each"
printf '   %5s | %8s | %8s | %9s | %7s\n' "peers" "fixed" "adapt" "per peer" "echoes"
for r in "${ROWS[@]}"; do
	printf '   %s\n' "$r"
done
finish
