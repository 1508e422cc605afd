#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Rate requests at a sustained rate on a hub (issue 27): srv's wg0 has N peers
# (default 1,000), each a [peer] at 20mbit, and `wgshape daemon` with
# client-download = yes shapes them. C of them (default 100) are real
# clients: in cli, a WireGuard interface each (wgc0...) with its own key and
# address, so that each request comes through the tunnel from its own peer
# as a phone's or a laptop's would (the rate channel names the peer from the
# source address). A python3 sender spreads RATE requests a second (default
# 300) over the C clients (each under its own limit of 4 a second) for SECS
# seconds, the rates 8 and 9 Mbit/s in turn, and times each answer.
#
# Figures (no assertions on time; the VM is emulated, compare ratios): the
# rate reached, answer time p50/p95/p99/max (the daemon changes the class
# before it answers, so this bounds arrival to class change, plus the
# tunnel both ways), the daemon's CPU as a share of one core, each core's
# busy share (sender, WireGuard and daemon share the VM's CPUs), the class
# changes counted in the daemon's log. A warm-up request from each client
# first (not counted): it makes that peer's lazy leaf a cake, which plans the
# tree; what is measured is the steady state, each request a class change. Checks: every request answered
# "applied", each client's class at its last rate.
#
# The daemon's own figure, from each request's arrival (its socket's kernel
# stamp) to its class changed, is read from its log: what issue 27 asks for
# at p99, without the tunnel and the sender in it.
#
# Usage: lab run tests/vm/bench-rate-load.sh [N [C [RATE [SECS]]]]
# (WGSHAPE_LAB_PERF=1: a perf profile of the daemon during the load too.)
# lab-smp: 2
. "$(dirname "$0")/lib.sh"

N=${1:-1000}
C=${2:-100}
RATE=${3:-300}
SECS=${4:-20}
CONF=$LAB_TMP/srv.conf
DLOG=$LAB_TMP/daemon.log

need_wgshape
need_tools ip tc wg awk
need_python
stop_on_exit
[ "$C" -le "$N" ] && [ "$C" -le 250 ] || die "C must be at most N and 250 (one /24 of client addresses)"

lab_topology ipv4

step "$C clients in cli, a WireGuard interface each; $N peers on srv's wg0"
lab_clients "$C"
# srv: the clients, then random peers up to N (a /32 each), 1500 a command
"$PY" - "$((N - C))" >"$LAB_TMP/others.txt" <<'PY'
import base64, os, sys
for i in range(int(sys.argv[1])):
    print(base64.b64encode(os.urandom(32)).decode(), "10.64.%d.%d/32" % (1 + i // 250, 1 + i % 250))
PY
{
	awk '{ printf "peer %s allowed-ips %s/32\n", $3, $2 }' "$LAB_TMP/clients.txt"
	awk '{ printf "peer %s allowed-ips %s\n", $1, $2 }' "$LAB_TMP/others.txt"
} | xargs -r -n 1500 sh -c 'ip netns exec srv wg set wg0 "$@"' wg
ip -n srv route add 10.64.0.0/15 dev wg0
info "srv's wg0: $(inns srv wg show wg0 peers | grep -c .) peers"
{
	printf '[daemon]\nclient-lease = 180\n\n[interface wg0]\nclient-download = yes\n'
	printf 'client-download-min = 1mbit\nclient-download-max = 50mbit\n'
	awk '{ printf "\n[peer c%d]\npublic-key = %s\ndownload = 20mbit\n", NR, $3 }' "$LAB_TMP/clients.txt"
	awk '{ printf "\n[peer p%d]\npublic-key = %s\ndownload = 20mbit\n", NR, $1 }' "$LAB_TMP/others.txt"
} >"$CONF"

step "the daemon shapes them; each client's tunnel up (a ping)"
start_tree_daemon "$CONF" "$DLOG" "$N"
up=0
while read -r dev addr key; do
	inns cli ping -c 1 -W 3 -I "$addr" "$SRV_TUN4" >/dev/null 2>&1 && up=$((up + 1))
done <"$LAB_TMP/clients.txt"
expect_eq "clients whose tunnel answers a ping" "$C" "$up"

cat >"$LAB_TMP/load.py" <<'PY'
# clients.txt, dst, rate a second, seconds: one line a request,
# "client sent_monotonic rtt_ms status rate" (rtt -1: no answer in 2 s)
import os, select, socket, struct, sys, time
clients = [l.split() for l in open(sys.argv[1])]
dst, rate, secs = sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
rates = [1000000, 1125000]
socks, by_fd = [], {}
for i, (dev, addr, _) in enumerate(clients):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, dev.encode())
    s.bind((addr, 0))
    s.setblocking(False)
    socks.append(s)
    by_fd[s.fileno()] = i
pending, done = {}, []
total = int(rate * secs)
t0 = time.monotonic()
k = 0
def drain(timeout):
    r, _, _ = select.select(socks, [], [], max(timeout, 0))
    now = time.monotonic()
    for s in r:
        while True:
            try:
                data = s.recv(256)
            except BlockingIOError:
                break
            if len(data) < 32:
                continue
            f = struct.unpack(">IBBBBIIQQ", data[:32])
            p = pending.pop((by_fd[s.fileno()], f[5]), None)
            if p:
                done.append((p[0], p[1], (now - p[1]) * 1000, f[3], f[7]))
while k < total:
    due = t0 + k / rate
    now = time.monotonic()
    if now < due:
        drain(due - now)
        continue
    ci = k % len(clients)
    tag = struct.unpack(">I", os.urandom(4))[0]
    msg = struct.pack(">IBBBBIIQQ", 0x77677372, 1, 0, 0, 0, tag, 0, rates[(k // len(clients)) % 2], 0)
    pending[(ci, tag)] = (ci, time.monotonic())
    socks[ci].sendto(msg, (dst, 4781))
    k += 1
end = time.monotonic()
while pending and time.monotonic() < end + 2:
    drain(0.1)
for (ci, sent) in pending.values():
    done.append((ci, sent, -1, "none", 0))
sys.stderr.write("sent %d in %.2f s\n" % (total, end - t0))
for d in sorted(done, key=lambda d: d[1]):
    print("%d %.6f %.2f %s %d" % d)
PY

# each core's busy ticks and all its ticks, "cpuN busy total" a line
cores() { awk '/^cpu[0-9]/ { t = 0; for (i = 2; i <= NF; i++) t += $i; print $1, t - $5 - $6, t }' /proc/stat; }

step "warm-up: one request from each client (its lazy leaf becomes cake: the tree is planned)"
inns cli "$PY" "$LAB_TMP/load.py" "$LAB_TMP/clients.txt" "$SRV_TUN4" 20 "$(awk -v c="$C" 'BEGIN { print c / 20 }')" \
	>"$LAB_TMP/warm.txt" 2>"$LAB_TMP/load.err" || die "the sender failed: $(cat "$LAB_TMP/load.err")"
expect_eq "warm-up requests answered 'applied'" "$C" "$(awk '$4 == "1"' "$LAB_TMP/warm.txt" | grep -c . || true)"

step "$RATE requests a second from $C clients for $SECS s"
from=$(wc -l <"$DLOG")
cores >"$LAB_TMP/cores0"
cpu_mark "$DPID" "$LAB_TMP/cpu0"
# WGSHAPE_LAB_PERF=1: where the daemon's CPU goes during the load (perf, sampled; it slows the VM)
if [ -n "${WGSHAPE_LAB_PERF:-}" ]; then
	perf record -F 499 -e cpu-clock -g -p "$DPID" -o "$LAB_TMP/perf.data" -- sleep "$SECS" >"$LAB_TMP/perf.err" 2>&1 &
	PERFPID=$!
fi
inns cli "$PY" "$LAB_TMP/load.py" "$LAB_TMP/clients.txt" "$SRV_TUN4" "$RATE" "$SECS" \
	>"$LAB_TMP/load.txt" 2>"$LAB_TMP/load.err" || die "the sender failed: $(cat "$LAB_TMP/load.err")"
if [ -n "${WGSHAPE_LAB_PERF:-}" ]; then
	wait "$PERFPID" || true
	perf report -i "$LAB_TMP/perf.data" --stdio --children --sort symbol -g none >"$LAB_TMP/perf.txt" 2>/dev/null || true
	info "perf: the daemon's functions by share of its samples, with what they call:"
	grep -E '^ +[0-9]' "$LAB_TMP/perf.txt" | awk 'NR <= 50 { print "   " $0 }' || true
fi
cpu_mark "$DPID" "$LAB_TMP/cpu1"
cores >"$LAB_TMP/cores1"
info "sender: $(cat "$LAB_TMP/load.err")"
sent=$(grep -c . "$LAB_TMP/load.txt" || true)
applied=$(awk '$4 == "1"' "$LAB_TMP/load.txt" | grep -c . || true)
awk '$3 >= 0 { print $3 }' "$LAB_TMP/load.txt" >"$LAB_TMP/rtt.txt"
span=$(awk 'NR == 1 { a = $2 } { b = $2 } END { printf "%.2f", b - a }' "$LAB_TMP/load.txt")
reached=$(awk -v n="$sent" -v s="$span" 'BEGIN { printf "%.0f", (s > 0 ? (n - 1) / s : 0) }')
share=$(awk -v hz="$(getconf CLK_TCK)" 'NR == 1 { c0 = $1; t0 = $2 } NR == 2 { c1 = $1; t1 = $2 }
	END { printf "%.0f", (c1 - c0) / hz / (t1 - t0) * 100 }' "$LAB_TMP/cpu0" "$LAB_TMP/cpu1")
percore=$(awk 'NR == FNR { b[$1] = $2; t[$1] = $3; next }
	{ printf "%s%s %.0f%%", sep, $1, ($2 - b[$1]) * 100 / ($3 - t[$1]); sep = ", " }' \
	"$LAB_TMP/cores0" "$LAB_TMP/cores1")
in_place=$(tail -n +"$((from + 1))" "$DLOG" | grep -c 'changed in place' || true)
flushes=$(tail -n +"$((from + 1))" "$DLOG" | grep -c 'looking again' || true)
# the daemon's own measure: from the request's arrival (its socket's stamp) to its class changed
tail -n +"$((from + 1))" "$DLOG" | sed -n 's/.*asks for .*(\([0-9.]*\) ms after it arrived)$/\1/p' >"$LAB_TMP/arrival.txt"
expect_eq "requests answered 'applied' (status 1)" "$sent" "$applied"
info "rate reached: $reached requests a second ($sent in $span s)"
info "answer (ms): p50 $(pctl 50 "$LAB_TMP/rtt.txt"), p95 $(pctl 95 "$LAB_TMP/rtt.txt"), p99 $(pctl 99 "$LAB_TMP/rtt.txt"), max $(pctl 100 "$LAB_TMP/rtt.txt")"
info "arrival to class change (ms, the daemon's log): p50 $(pctl 50 "$LAB_TMP/arrival.txt"), p95 $(pctl 95 "$LAB_TMP/arrival.txt"), p99 $(pctl 99 "$LAB_TMP/arrival.txt"), max $(pctl 100 "$LAB_TMP/arrival.txt") ($(grep -c . "$LAB_TMP/arrival.txt" || true) requests)"
info "daemon CPU: $share% of one core; each core busy: $percore"
info "class changes in place: $in_place of $sent; files another process changed meanwhile: $flushes"
# each client's class at the rate it asked last
wrong=0
head -5 "$LAB_TMP/clients.txt" >"$LAB_TMP/first.txt"
while read -r dev addr key; do
	i=${dev#wgc}
	want=$(awk -v c="$i" '$1 == c && $4 == "1" { r = $5 } END { print r * 8 / 1000000 }' "$LAB_TMP/load.txt")
	cls=$(htb_class_for srv wg0 "$addr" 2>/dev/null || true)
	[ -n "$cls" ] && [ "$(htb_class_field srv wg0 "$cls" ceil)" = "${want}Mbit" ] || wrong=$((wrong + 1))
done <"$LAB_TMP/first.txt"
expect_eq "the first 5 clients' classes at their last rate (ceil)" 0 "$wrong"
printf 'FIGURES %s\n' "N=$N C=$C rate=$RATE reached=$reached p50=$(pctl 50 "$LAB_TMP/rtt.txt") p95=$(pctl 95 "$LAB_TMP/rtt.txt") p99=$(pctl 99 "$LAB_TMP/rtt.txt") max=$(pctl 100 "$LAB_TMP/rtt.txt") arrival_p50=$(pctl 50 "$LAB_TMP/arrival.txt") arrival_p99=$(pctl 99 "$LAB_TMP/arrival.txt") daemon_cpu=$share% cores=[$percore]"
finish
