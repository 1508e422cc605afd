#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A client's rate request on a server with many peers (issue 27): srv's wg0
# has N peers besides cli (random keys, a /32 each, no endpoints), each a
# [peer] section at 20mbit, and `wgshape daemon` with client-download = yes
# shapes them all (HTB, a class and a cake leaf a peer). cli then asks for its
# download rate through the real rate channel: raw request datagrams from its
# tunnel address, one every 0.3 s (under the per-peer limit of 4 a second),
# the rate alternating 8 and 9 Mbit/s, each answered before the next.
#
# Figures for each N (no assertions on time; the VM is emulated, compare
# ratios): a request's time to its answer (p50, p95, max, seen by cli), the
# time from the request to srv's class change (a stamped tc monitor), and the
# daemon's CPU time a request (utime + stime over the run). Checks: every
# request answered "applied", srv's class for cli at the last rate.
#
# Usage: lab run tests/vm/bench-rate-requests.sh [N...]   (default: 100 1000)
# WGSHAPE_BENCH_REQUESTS: requests for each N (30).
# Memory: 1000 cake leaves take about 1 GiB; meson runs it with
# WGSHAPE_LAB_MEM=3072.
# lab-smp: 2
. "$(dirname "$0")/lib.sh"

SIZES=("$@")
[ "${#SIZES[@]}" -gt 0 ] || SIZES=(100 1000)
REQUESTS=${WGSHAPE_BENCH_REQUESTS:-30}
CONF=$LAB_TMP/srv.conf
DLOG=$LAB_TMP/daemon.log
MONF=$LAB_TMP/srv-monitor.txt

need_wgshape
need_tools ip tc wg awk
need_python
stop_on_exit

lab_topology ipv4
CLI_KEY=$(cat "$LAB_TMP/cli.pub")

# The requests (proto/rate.h): one at a time, each answered (or 2 s) before
# the next; "sent_at rtt_ms status rate" a line, the send time as
# EPOCHREALTIME (for the monitor's stamps).
cat >"$LAB_TMP/requests.py" <<'PY'
import os, socket, struct, sys, time
dst, count, every = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
rates = [int(r) for r in sys.argv[4].split(",")]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2.0)
for i in range(count):
    t = struct.unpack(">I", os.urandom(4))[0]
    rate = rates[i % len(rates)]
    msg = struct.pack(">IBBBBIIQQ", 0x77677372, 1, 0, 0, 0, t, 0, rate, 0)
    sent = time.time()
    t0 = time.monotonic()
    s.sendto(msg, (dst, 4781))
    status, got = "none", 0
    while True:
        try:
            data = s.recv(256)
        except socket.timeout:
            break
        if len(data) >= 32:
            f = struct.unpack(">IBBBBIIQQ", data[:32])
            if f[5] == t:
                status, got = f[3], f[7]
                break
    rtt = (time.monotonic() - t0) * 1000
    print("%.6f %.2f %s %d" % (sent, rtt, status, got), flush=True)
    left = every - (time.monotonic() - t0)
    if left > 0:
        time.sleep(left)
PY

# add_peers N: N peers on srv's wg0 besides cli, 500 a command; their keys
# and addresses in peers.txt ("KEY ADDR").
add_peers() {
	"$PY" - "$1" >"$LAB_TMP/peers.txt" <<'PY'
import base64, os, sys
for i in range(int(sys.argv[1])):
    key = base64.b64encode(os.urandom(32)).decode()
    print(key, "10.64.%d.%d/32" % (1 + i // 250, 1 + i % 250))
PY
	awk '{ printf "peer %s allowed-ips %s\n", $1, $2 }' "$LAB_TMP/peers.txt" |
		xargs -r -n 1500 sh -c 'ip netns exec srv wg set wg0 "$@"' wg
}

write_conf() {
	{
		printf '[daemon]\nclient-lease = 180\n\n[interface wg0]\nclient-download = yes\n'
		printf 'client-download-min = 1mbit\nclient-download-max = 50mbit\n\n'
		printf '[peer laptop]\npublic-key = %s\ndownload = 10mbit\n' "$CLI_KEY"
		awk '{ printf "\n[peer p%d]\npublic-key = %s\ndownload = 20mbit\n", NR, $1 }' "$LAB_TMP/peers.txt"
	} >"$CONF"
}


SUMMARY=()
for n in "${SIZES[@]}"; do
	step "$n peers besides cli on srv's wg0, each a [peer] at 20mbit; the daemon shapes them"
	[ -z "$DPID" ] || { kill "$DPID" 2>/dev/null || true; wait "$DPID" 2>/dev/null || true; DPID=; }
	inns srv "$WGSHAPE" clear wg0 >/dev/null 2>&1 || true
	for key in $(inns srv wg show wg0 peers); do
		[ "$key" = "$CLI_KEY" ] || echo "peer $key remove"
	done | xargs -r -n 1500 sh -c 'ip netns exec srv wg set wg0 "$@"' wg
	t0=$EPOCHREALTIME
	add_peers "$n"
	info "wg set: $(inns srv wg show wg0 peers | grep -c .) peers on wg0 in $(ms_between "$t0" "$EPOCHREALTIME") ms"
	write_conf
	: >"$DLOG"
	start_tree_daemon "$CONF" "$DLOG" "$n"
	inns cli ping -c 1 -W 2 "$SRV_TUN4" >/dev/null || fail "no ping cli -> srv through the tunnel"

	step "$n peers: $REQUESTS requests from cli, one every 0.3 s, 8 and 9 Mbit/s in turn"
	stamped_monitor srv "$MONF"
	cpu_mark "$DPID" "$LAB_TMP/cpu0"
	inns cli "$PY" "$LAB_TMP/requests.py" "$SRV_TUN4" "$REQUESTS" 0.3 1000000,1125000 >"$LAB_TMP/req.txt"
	cpu_mark "$DPID" "$LAB_TMP/cpu1"
	last=$(awk 'END { print $4 }' "$LAB_TMP/req.txt")
	# the monitor's last line for cli's class at that ceil: after it, nothing more comes
	stamped_wait 10 "$MONF" 0 "ceil $((last * 8 / 1000000))Mbit " >/dev/null ||
		fail "no class change to the last rate in the monitor"
	kill "$STAMPED_PID" 2>/dev/null || true
	expect_eq "$n peers: requests answered 'applied' (status 1)" "$REQUESTS" \
		"$(awk '$3 == "1"' "$LAB_TMP/req.txt" | grep -c . || true)"
	awk '{ print $2 }' "$LAB_TMP/req.txt" >"$LAB_TMP/rtt.txt"
	# each request's class change: the first monitor line after it was sent
	awk 'NR == FNR { sent[++n] = $1; next }
	     / class htb / { t = $1 + 0; for (i = 1; i <= n; i++) if (!seen[i] && t >= sent[i] && (i == n || t < sent[i + 1])) { printf "%.2f\n", (t - sent[i]) * 1000; seen[i] = 1; break } }' \
		"$LAB_TMP/req.txt" "$MONF" >"$LAB_TMP/chg.txt"
	changes=$(grep -c . "$LAB_TMP/chg.txt" || true)
	cpu=$(awk -v hz="$(getconf CLK_TCK)" -v r="$REQUESTS" 'NR == 1 { c0 = $1 } NR == 2 { c1 = $1 } END { printf "%.1f", (c1 - c0) / hz * 1000 / r }' "$LAB_TMP/cpu0" "$LAB_TMP/cpu1")
	in_place=$(grep -c 'changed in place' "$DLOG" || true)
	info "answer (ms): p50 $(pctl 50 "$LAB_TMP/rtt.txt"), p95 $(pctl 95 "$LAB_TMP/rtt.txt"), max $(pctl 100 "$LAB_TMP/rtt.txt")"
	info "request to class change (ms, $changes of $REQUESTS seen): p50 $(pctl 50 "$LAB_TMP/chg.txt"), p95 $(pctl 95 "$LAB_TMP/chg.txt")"
	info "daemon CPU: $cpu ms a request; changed in place: $in_place of $REQUESTS"
	SUMMARY+=("$(printf '%6d peers  answer p50 %7s ms  p95 %7s ms  max %7s ms | class change p50 %7s ms | daemon CPU %6s ms a request | in place %d/%d' \
		"$n" "$(pctl 50 "$LAB_TMP/rtt.txt")" "$(pctl 95 "$LAB_TMP/rtt.txt")" "$(pctl 100 "$LAB_TMP/rtt.txt")" \
		"$(pctl 50 "$LAB_TMP/chg.txt")" "$cpu" "$in_place" "$REQUESTS")")
done

step "summary ($(nproc) CPUs, wgshape $("$WGSHAPE" --version 2>/dev/null | sed -n 1p))"
for l in "${SUMMARY[@]}"; do info "$l"; done

finish
