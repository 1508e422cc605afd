#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# wgshape serve on a WireGuard tunnel while another source of the tunnel
# attacks it, and what serve's process holds before, during and after:
#
#   slow clients  200 connections from one tunnel address (cli's 10.200.0.3),
#                 each sending a header line every second and never ending its
#                 head, opened again (50 a second) once serve closed it
#                 (slowloris): serve holds at most its per-source share (20)
#                 of them, and none for longer than the head deadline (5 s)
#                 and a little;
#   many clients  40 clients from two tunnel addresses (.3 and .4) asking
#                 GET / as fast as they can, beside 4 downloads from the peer;
#
# and all along a fresh GET / and a download from the peer (10.200.0.2) are
# served within a few seconds. serve's VmRSS, threads and open fds are printed
# before, during each load and after it; the fds (and threads) must come back
# to where they were once the clients are gone.
. "$(dirname "$0")/lib.sh"
. "$LAB_DIR/load.sh"

need_wgshape
need_tools python3 curl ss awk

ATT_TUN4=10.200.0.3 ATT2_TUN4=10.200.0.4
SLOW_CONNS=200 SLOW_SECS=14
MANY_CLIENTS=40 MANY_SECS=8
PER_SOURCE=20        # SERVE_CONN_PER_SOURCE(16), serve.h
HEAD_DEADLINE_MAX=9  # the 5 s deadline, a client tick and slack for a busy VM
PEER_GET_MAX=5       # seconds; an emulated CPU shared with 40 clients is slow

FIGURES=()

# proc_read: serve's VmRSS, threads and open fds now, into RSS, THREADS, FDS.
# Shell builtins only, so that the three are read within a moment of each
# other even in a busy emulated VM.
proc_read() {
	local key value unit fds
	while read -r key value unit; do
		case $key in
		VmRSS:) RSS="$value $unit" ;;
		Threads:) THREADS=$value ;;
		esac
	done <"/proc/$SERVE_PID/status"
	fds=("/proc/$SERVE_PID/fd/"*)
	FDS=${#fds[@]}
}

# proc_figures WHEN [ADDR]: proc_read (and the connections serve holds from
# ADDR), printed and kept as a line of FIGURES.
proc_figures() {
	local held=
	proc_read
	[ -z "${2:-}" ] || held=$(held_from "$2")
	FIGURES+=("$(printf '%-14s VmRSS %9s  threads %3s  fds %4s%s' "$1" "$RSS" "$THREADS" "$FDS" \
		"${held:+  held from $2: $held}")")
	info "serve $1: VmRSS $RSS, $THREADS threads, $FDS fds${held:+, $held connections from $2}"
	HELD=$held
}

# held_from ADDR: established connections serve has from ADDR now.
held_from() {
	inns srv ss -Htn state established "( sport = :$SERVE_PORT and dst $1 )" | grep -c . || true
}

# peer_checks WHAT: from the peer's own address, GET / answers 200 within
# PEER_GET_MAX seconds and a 1 s download carries bytes.
peer_checks() {
	local out
	out=$(inns cli curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 5 \
		--interface "$CLI_TUN4" "http://$SRV_TUN4:$SERVE_PORT/" || true)
	info "$1: GET / from the peer: $out"
	expect_match "$1: GET / from the peer" '^200 ' "$out"
	expect_le "$1: GET / from the peer, seconds" "$PEER_GET_MAX" "${out#* }"
	out=$(inns cli curl -s -o /dev/null -w '%{http_code} %{size_download}' --max-time 8 \
		--interface "$CLI_TUN4" "http://$SRV_TUN4:$SERVE_PORT/download?seconds=1" || true)
	expect_match "$1: a 1 s download from the peer" '^200 [1-9]' "$out"
}

# expect_le WHAT MAX FOUND (decimals)
expect_le() {
	if awk -v m="$2" -v f="$3" 'BEGIN { exit !(f != "" && f + 0 <= m + 0) }'; then
		pass "$1 = $3 (<= $2)"
	else
		fail "$1: expected <= $2, found '$3'"
	fi
}

# A second and third source in the tunnel: cli's addresses .3 and .4, which
# srv's WireGuard lets in from cli's peer.
more_sources() {
	inns srv wg set wg0 peer "$(cat "$LAB_TMP/cli.pub")" \
		allowed-ips "$CLI_TUN4/32,$ATT_TUN4/32,$ATT2_TUN4/32,$CLI_TUN6/128"
	ip -n cli addr add "$ATT_TUN4/32" dev wg0
	ip -n cli addr add "$ATT2_TUN4/32" dev wg0
	inns cli ping -c 1 -W 2 -I "$ATT_TUN4" "$SRV_TUN4" >/dev/null ||
		die "no ping from $ATT_TUN4 through the tunnel"
}

# slow.py SRC DST PORT N SECS: N connections from SRC, a header line each
# every second, reopened when closed; one line of counts at the end.
cat >"$LAB_TMP/slow.py" <<'EOF'
import selectors, socket, sys, time
src, dst, port, n, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
sel = selectors.DefaultSelector()
opened = closes = 0
longest = 0.0
def open_one():
    global opened
    s = socket.socket()
    s.settimeout(2)
    s.bind((src, 0))
    try:
        s.connect((dst, port))
        s.sendall(b"GET / HTTP/1.1\r\nHost: serve\r\n")
    except OSError:
        s.close()
        return
    s.setblocking(False)
    opened += 1
    sel.register(s, selectors.EVENT_READ, time.monotonic())
def closed(key):
    global closes, longest
    closes += 1
    longest = max(longest, time.monotonic() - key.data)
    sel.unregister(key.fileobj)
    key.fileobj.close()
end = time.monotonic() + secs
tick = 0.0
while time.monotonic() < end:
    if time.monotonic() >= tick:
        tick = time.monotonic() + 1
        for key in list(sel.get_map().values()):
            try:
                key.fileobj.send(b"X-Slow: 1\r\n")
            except OSError:
                closed(key)
        # all at first, then a few at a time: closes are seen as they come
        for _ in range(min(n - len(sel.get_map()), n if not opened else 50)):
            open_one()
    for key, _ in sel.select(timeout=0.2):
        try:
            data = key.fileobj.recv(4096)
        except OSError:
            data = b""
        if not data:
            closed(key)
# those still open count with how long they have been held so far
for key in sel.get_map().values():
    longest = max(longest, time.monotonic() - key.data)
print(f"opened {opened}, closed by serve {closes}, longest held {longest:.1f} s, "
      f"open at the end {len(sel.get_map())}")
EOF

# many.py DST PORT CLIENTS SECS SRC...: CLIENTS threads, spread over the SRCs,
# asking GET / in a loop; one line of counts at the end.
cat >"$LAB_TMP/many.py" <<'EOF'
import socket, sys, threading, time
dst, port, clients, secs, srcs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5:]
ok = refused = 0
worst = 0.0
lock = threading.Lock()
def client(src):
    global ok, refused, worst
    end = time.monotonic() + secs
    while time.monotonic() < end:
        t0 = time.monotonic()
        good = False
        try:
            with socket.create_connection((dst, port), timeout=5, source_address=(src, 0)) as s:
                s.sendall(b"GET / HTTP/1.1\r\nHost: serve\r\n\r\n")
                good = s.recv(64).startswith(b"HTTP/1.1 200")
        except OSError:
            pass
        with lock:
            if good:
                ok += 1
                worst = max(worst, time.monotonic() - t0)
            else:
                refused += 1
        if not good:
            time.sleep(0.05)
threads = [threading.Thread(target=client, args=(srcs[i % len(srcs)],)) for i in range(clients)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"answered {ok}, refused or closed {refused}, slowest answer {worst:.2f} s")
EOF

lab_topology ipv4
more_sources
serve_start srv
sleep 1
step "serve idle"
proc_figures "before"
FDS0=$FDS THREADS0=$THREADS
peer_checks "idle"

step "slow clients: $SLOW_CONNS connections from $ATT_TUN4, a header line a second, for $SLOW_SECS s"
inns cli python3 "$LAB_TMP/slow.py" "$ATT_TUN4" "$SRV_TUN4" "$SERVE_PORT" "$SLOW_CONNS" \
	"$SLOW_SECS" >"$LAB_TMP/slow.out" 2>&1 &
slow_pid=$!
# at 3, 7 (past the first head deadline) and 11 s
most=0
for t in 3 7 11; do
	sleep $((t == 3 ? 3 : 4))
	proc_figures "slow, $t s" "$ATT_TUN4"
	expect_le "connections serve holds from $ATT_TUN4 at $t s" "$PER_SOURCE" "$HELD"
	[ "$HELD" -le "$most" ] || most=$HELD
	[ "$t" != 7 ] || peer_checks "slow clients"
done
expect_ge "the most connections serve held from $ATT_TUN4 (the attack took hold)" 10 "$most"
wait "$slow_pid" || fail "the slow clients' script failed: $(cat "$LAB_TMP/slow.out")"
info "slow clients: $(cat "$LAB_TMP/slow.out")"
expect_le "longest a slow client was held, seconds" "$HEAD_DEADLINE_MAX" \
	"$(sed -n 's/.*longest held \([0-9.]*\) s.*/\1/p' "$LAB_TMP/slow.out")"

step "many clients: $MANY_CLIENTS from $ATT_TUN4 and $ATT2_TUN4, GET / in a loop, for $MANY_SECS s; 4 downloads from the peer"
inns cli python3 "$LAB_TMP/many.py" "$SRV_TUN4" "$SERVE_PORT" "$MANY_CLIENTS" "$MANY_SECS" \
	"$ATT_TUN4" "$ATT2_TUN4" >"$LAB_TMP/many.out" 2>&1 &
many_pid=$!
dl_pids=()
for i in 1 2 3 4; do
	inns cli curl -s -o /dev/null -w '%{http_code} %{size_download}\n' --max-time 12 \
		--interface "$CLI_TUN4" "http://$SRV_TUN4:$SERVE_PORT/download?seconds=6" \
		>"$LAB_TMP/dl.$i" 2>&1 &
	dl_pids+=($!)
done
sleep 3
proc_figures "many, 3 s" "$ATT_TUN4"
peer_checks "many clients"
proc_figures "many, later" "$ATT_TUN4"
wait "$many_pid" || fail "the many clients' script failed: $(cat "$LAB_TMP/many.out")"
for i in 1 2 3 4; do
	wait "${dl_pids[$((i - 1))]}" || true
	expect_match "download $i of 4 from the peer beside them" '^200 [1-9]' "$(cat "$LAB_TMP/dl.$i")"
done
info "many clients: $(cat "$LAB_TMP/many.out")"
expect_ge "GET / answered to the many clients" 1 \
	"$(sed -n 's/^answered \([0-9]*\),.*/\1/p' "$LAB_TMP/many.out")"

step "after: the clients gone"
# A connection serve still holds ends at its head deadline or idle timeout (10 s).
for i in $(seq 1 30); do
	proc_read
	[ "$FDS" -le "$FDS0" ] && [ "$THREADS" -le "$THREADS0" ] && break
	sleep 1
done
proc_figures "after (${i} s)"
expect_eq "serve's open fds, back to before" "$FDS0" "$FDS"
expect_eq "serve's threads, back to before" "$THREADS0" "$THREADS"
peer_checks "after"
if kill -0 "$SERVE_PID" 2>/dev/null; then
	pass "serve still running"
else
	fail "serve is gone: $(cat "$SERVE_ERR")"
fi
serve_stop

step "figures"
for f in "${FIGURES[@]}"; do info "$f"; done
finish
