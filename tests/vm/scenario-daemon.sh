#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# `wgshape daemon` run directly (no systemd) in a namespace of its own, seen
# only through tools that are not ours: tc and ip monitors with timestamps,
# tc -j, ip -j, jq and /proc. Interfaces are shaped as they appear (and how
# fast is reported), over 2 x 100 create/delete cycles with the same file
# descriptors and memory, 50 at once; a hand-deleted or replaced qdisc comes
# back, and stays gone with enforce = no; SIGHUP changes in place, clears and
# shapes; configuration errors; SIGTERM with and without clear-on-exit; the
# CPU time of an idle daemon; 100 links at once with a 4 KiB notification
# buffer: an overrun, logged and resynced (`scenario-daemon.sh overrun`: that
# part alone).
#
# Waits are on events (a monitor line, a log line), never a bare sleep; the
# one sleep is the idle period being measured. Starting a program costs
# 0.1-1 s in the emulated VM, so the busy parts start none: one `ip -batch`
# takes commands through a FIFO and the script reads a tc monitor itself.
# shellcheck disable=SC2016 # awk and jq programs in single quotes
. "$(dirname "$0")/lib.sh"

need_root
need_wgshape
need_tools ip tc jq awk timeout tail mkfifo

ETC=$LAB_TMP/etc
CONF=$ETC/wgshape.conf
MON=$LAB_TMP/tc-monitor.txt  # tc -ts monitor, everything, for counting afterwards
LMON=$LAB_TMP/ip-monitor.txt # ip -o -ts monitor link: when links appeared
LOG=$LAB_TMP/daemon.log
export WGSHAPE_STATE_DIR=$LAB_TMP/state

# awk that handles each line as it comes through a pipe (mawk reads ahead in
# blocks unless told not to).
sawk=(awk)
if awk -W version 2>&1 | grep mawk >/dev/null; then
	sawk=(awk -W interactive)
fi

# ---- files that grow ----------------------------------------------------------

lines_of() { wc -l <"$1"; }
indent() { sed "s/^/$1/"; }
since() { tail -n +"$(($1 + 1))" "$2"; } # since LINE FILE: the lines after LINE

# log_wait FROM SECS ERE: print the first daemon log line after line FROM
# that matches ERE.
log_wait() {
	wait_for "$2" "$LOG" "$1" grep -m1 -E -- "$3"
}

# log_count FROM SECS COUNT ERE: wait until COUNT log lines after FROM match.
log_count() {
	wait_for "$2" "$LOG" "$1" "${sawk[@]}" -v n="$3" -v re="$4" '$0 ~ re && ++k >= n { exit 0 }'
}

# mon_cake_lines FROM DEV: cake lines (added, changed or deleted) for DEV's
# root on the tc monitor after line FROM.
mon_cake_lines() {
	since "$1" "$MON" | awk -v d="$2" '
		{ o = ($2 == "deleted") } $(2 + o) == "qdisc" && $(3 + o) == "cake" && $(6 + o) == d { k++ }
		END { print k + 0 }'
}

# ---- times, with bash alone ---------------------------------------------------------

# us_of TIME: microseconds since local midnight of a monitor timestamp
# (2026-12-02T11:57:09.541946) or of $EPOCHREALTIME.
us_of() {
	local t=$1 hms
	if [[ $t == *T* ]]; then
		hms=${t#*T}
	else
		printf -v hms '%(%H:%M:%S)T.%s' "${t%.*}" "${t#*.}"
	fi
	local h=${hms:0:2} m=${hms:3:2} s=${hms:6:2} u=${hms:9:6}
	echo $(((10#$h * 3600 + 10#$m * 60 + 10#$s) * 1000000 + 10#$u))
}

# ms_between T1 T2: milliseconds from T1 to T2, one decimal.
ms_between() {
	local d=$(($(us_of "$2") - $(us_of "$1")))
	[ "$d" -ge -43200000000 ] || d=$((d + 86400000000)) # past midnight
	local sign=
	[ "$d" -ge 0 ] || { sign=-; d=$((-d)); }
	printf '%s%d.%d\n' "$sign" $((d / 1000)) $((d % 1000 / 100))
}

# stats NUMBERS...: "min, median, max" of a few numbers.
stats() {
	[ $# -gt 0 ] || { echo "(none)"; return; }
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
		END { printf "min %s, median %s, max %s (%d)\n", v[1], v[int((NR + 1) / 2)], v[NR], NR }'
}

# ---- the lane: one ip -batch and a tc monitor the script reads ------------------

lane_open() {
	mkfifo "$LAB_TMP/lane.cmd" "$LAB_TMP/lane.mon"
	ip netns exec srv tc -ts monitor >"$LAB_TMP/lane.mon" 2>/dev/null &
	LANE_MON_PID=$!
	exec {LANE_MON}<"$LAB_TMP/lane.mon"
	ip -n srv -force -batch - <"$LAB_TMP/lane.cmd" >/dev/null {LANE_MON}<&- &
	LANE_IP_PID=$!
	exec {LANE_CMD}>"$LAB_TMP/lane.cmd"
}

lane_close() {
	exec {LANE_CMD}>&-
	wait "$LANE_IP_PID" || fail "the lane's ip -batch exited with $?"
	exec {LANE_MON}<&-
	kill -PIPE "$LANE_MON_PID" 2>/dev/null || true
	wait "$LANE_MON_PID" 2>/dev/null || true
}

# lane CMD: an ip command (without "ip"); it runs after those sent before.
lane() { printf '%s\n' "$1" >&"$LANE_CMD"; }

# lane_drain: forget the monitor lines read so far, so that a wait sees only
# what comes after; it also keeps the FIFO from filling up.
lane_drain() {
	local line
	while read -r -t 0 -u "$LANE_MON"; do
		IFS= read -r -t 1 -u "$LANE_MON" line || break
	done
}

# lane_wait SECS ERE: read the lane's monitor until a line matches ERE
# (BASH_REMATCH holds its groups); 1 when SECS passed first.
lane_wait() {
	local now left t line deadline=$((${EPOCHREALTIME/./} + $1 * 1000000))
	while :; do
		now=${EPOCHREALTIME/./}
		left=$((deadline - now))
		[ "$left" -gt 0 ] || return 1
		printf -v t '%d.%06d' $((left / 1000000)) $((left % 1000000))
		IFS= read -r -t "$t" -u "$LANE_MON" line || return 1
		[[ ! $line =~ $2 ]] || return 0
	done
}

# wait_cake SECS DEVRE: wait until cake is put (added or changed) as the root
# of a device whose whole name matches DEVRE; CAKE_TS and CAKE_DEV say when
# (the monitor's clock) and where.
wait_cake() {
	lane_wait "$1" "^\[([^]]*)\] qdisc cake [0-9a-f]+: dev ($2) root " || return 1
	CAKE_TS=${BASH_REMATCH[1]} CAKE_DEV=${BASH_REMATCH[2]}
}

# ---- kernel state, read with one tc and one jq ---------------------------------

# roots: every root qdisc in srv into R_KIND, R_HANDLE, R_BW, R_RTT, R_DS
# (by device; bandwidth in bytes/s and rtt in µs as tc -j gives them).
declare -A R_KIND R_HANDLE R_BW R_RTT R_DS
roots() {
	local dev kind handle bw rtt ds
	R_KIND=() R_HANDLE=() R_BW=() R_RTT=() R_DS=()
	while read -r dev kind handle bw rtt ds; do
		[ -n "$dev" ] || continue
		R_KIND[$dev]=$kind R_HANDLE[$dev]=$handle R_BW[$dev]=$bw R_RTT[$dev]=$rtt R_DS[$dev]=$ds
	done <<<"$(tc -n srv -j qdisc show | jq -r '.[] | select(.root == true)
		| "\(.dev) \(.kind) \(.handle) \(.options.bandwidth // "-") \(.options.rtt // "-") \(.options.diffserv // "-")"')"
}

# expect_root DEV key=value...: what the last roots saw on DEV's root
# (keys: kind, handle, bandwidth, rtt, diffserv).
expect_root() {
	local dev=$1 kv key want got
	shift
	for kv in "$@"; do
		key=${kv%%=*} want=${kv#*=}
		case "$key" in
		kind) got=${R_KIND[$dev]:-(none)} ;;
		handle) got=${R_HANDLE[$dev]:-(none)} ;;
		bandwidth) got=${R_BW[$dev]:-(none)} ;;
		rtt) got=${R_RTT[$dev]:-(none)} ;;
		diffserv) got=${R_DS[$dev]:-(none)} ;;
		*) die "expect_root: no key $key" ;;
		esac
		expect_eq "srv $dev root $key" "$want" "$got"
	done
}

# cake_handles: "dev=handle" of every root cake the last roots saw, sorted.
cake_handles() {
	local dev
	for dev in "${!R_KIND[@]}"; do
		[ "${R_KIND[$dev]}" != cake ] || echo "$dev=${R_HANDLE[$dev]}"
	done | sort | tr '\n' ' ' | sed 's/ $//'
}

link_exists() { ip -n srv link show dev "$1" >/dev/null 2>&1; }

# ---- the daemon ------------------------------------------------------------------

GEN=0 BAR=0 HUPS=0

give_up() {
	echo "   --- last lines of $LOG"
	tail -n 25 "$LOG" | sed 's/^/   | /'
	echo "   --- last lines of the tc monitor"
	tail -n 10 "$MON" | sed 's/^/   | /'
	die "$*"
}

# write_conf BODY: the daemon's configuration: BODY, then two sections the
# reload barrier needs (see reload). Written aside and renamed; 0644.
write_conf() {
	GEN=$((GEN + 1))
	printf '%s\n\n# the scenario'"'"'s barriers\n[interface mark]\negress = %dkbit\n\n[interface bar*]\negress = 1mbit\n' \
		"$1" $((1000 + GEN)) >"$CONF.new"
	chmod 0644 "$CONF.new"
	mv -f "$CONF.new" "$CONF"
}

# start_daemon: wgshape -c $CONF daemon in srv, stderr to $LOG; waits for
# "running", for its NetworkManager answer (a resync) and a barrier.
start_daemon() {
	: >"$LOG"
	local t0=$EPOCHREALTIME
	# (Not inheriting the lane's FIFOs: they are not the daemon's fds.)
	ip netns exec srv "$WGSHAPE" -c "$CONF" daemon >>"$LOG" 2>&1 {LANE_CMD}>&- {LANE_MON}<&- &
	DPID=$!
	READY=$(log_wait 0 20 '^<6>running') || give_up "the daemon did not log 'running' within 20 s"
	info "daemon pid $DPID ($(cat "/proc/$DPID/comm")): '$READY' $(ms_between "$t0" "$EPOCHREALTIME") ms after its start"
	# Without NetworkManager the watcher gives up at once and asks for a resync.
	log_wait 0 20 'NetworkManager:' | sed 's/^/   daemon: /' || info "no NetworkManager line from the daemon"
	barrier
}

# barrier: a new interface matching [interface bar*] is shaped. The daemon
# handles events in order, so all that happened before it was created has
# been seen and acted on by then; so has every earlier lane command.
barrier() {
	BAR=$((BAR + 1))
	lane_drain
	lane "link add bar$BAR type wireguard"
	wait_cake 30 "bar$BAR" || give_up "barrier: bar$BAR was not shaped within 30 s"
	lane "link del bar$BAR"
}

# reload: SIGHUP, then wait until the new configuration is in force: the
# marker got this generation's rate (so the resync runs with it and has
# listed the links), then a barrier (read once the resync is over).
reload() {
	lane_drain
	kill -HUP "$DPID"
	HUPS=$((HUPS + 1))
	wait_cake 30 mark || give_up "the marker did not get the rate of configuration $GEN after SIGHUP"
	barrier
}

# daemon_fds PID: what its open fds point to, one a line, inode numbers left out.
daemon_fds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 -printf '%l\n' | sed -E 's/:\[[0-9]+\]$//' | sort; }
# fd_kinds FDS: the same counted, on one line.
fd_kinds() { uniq -c <<<"$1" | awk '{ printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1 }'; }
# status_kb PID FIELD: VmRSS, VmHWM... in kB.
status_kb() {
	local k v _
	while read -r k v _; do
		[ "$k" != "$2:" ] || { echo "$v"; return; }
	done <"/proc/$1/status"
}
# cpu_ticks PID: utime + stime.
cpu_ticks() {
	local stat f
	read -r stat <"/proc/$1/stat"
	read -r -a f <<<"${stat##*) }"
	echo $((f[11] + f[12]))
}

expect_alive() {
	expect_eq "daemon (pid $DPID) still running" yes "$(kill -0 "$DPID" 2>/dev/null && echo yes || echo no)"
}

# part_overrun: a daemon whose notification socket holds 4 KiB
# (WGSHAPE_EVENT_RCVBUF) sees 100 links appear at once: the kernel drops
# notifications (ENOBUFS), the daemon says so and resynchronises, and every
# link ends shaped as configured ([interface wg*] egress = 20mbit).
part_overrun() {
	step "10. 100 links at once with a 4 KiB notification buffer: overrun, then resync"
	local i dev n=0 lfrom t0 over left deadline
	local -A seen=()
	LOG=$LAB_TMP/daemon-overrun.log
	WGSHAPE_EVENT_RCVBUF=4096 start_daemon
	for i in $(seq -w 0 99); do echo "link add wgo$i type wireguard"; done >"$LAB_TMP/add100"
	lfrom=$(lines_of "$LOG")
	lane_drain
	t0=$EPOCHREALTIME
	deadline=$((${t0/./} + 60000000))
	ip -n srv -batch "$LAB_TMP/add100"
	# Every cake put on a wgo link, as it comes (not a barrier: the daemon
	# shapes a batch of new links in no set order), for at most 60 s.
	while [ "${#seen[@]}" -lt 100 ]; do
		left=$(((deadline - ${EPOCHREALTIME/./}) / 1000000))
		if [ "$left" -le 0 ] || ! wait_cake "$left" 'wgo[0-9]+'; then
			break
		fi
		seen[$CAKE_DEV]=1
	done
	info "100 links added -> ${#seen[@]} shaped (tc monitor) in $(ms_between "$t0" "$EPOCHREALTIME") ms"
	over=$(since "$lfrom" "$LOG" | grep -c '^<4>netlink: the kernel dropped notifications; resynchronising$' || true)
	info "overrun lines: $over"
	if [ "$over" -ge 1 ]; then
		pass "the daemon logged an overrun and resynchronised ($over time(s))"
	else
		fail "no '<4>netlink: the kernel dropped notifications; resynchronising' line after 100 links at once"
	fi
	roots
	for dev in "${!R_KIND[@]}"; do
		[[ $dev == wgo* && ${R_KIND[$dev]} == cake && ${R_BW[$dev]} == 2500000 ]] && n=$((n + 1))
	done
	expect_eq "wgo* with a root cake at 20mbit (tc -j)" 100 "$n"
	[ "$n" = 100 ] || since "$lfrom" "$LOG" | grep -v ': overhead 80: auto' | sed -n 1,20p | indent '   | '
	for i in $(seq -w 0 99); do lane "link del wgo$i"; done
	barrier
	expect_alive
	kill -TERM "$DPID"
	wait "$DPID" || fail "the daemon exited with $? after SIGTERM"
}

# ---- the namespace, the monitors, the lane ------------------------------------------

step "namespace srv; tc and ip monitors with timestamps"
ip netns add srv
ip -n srv link set lo up
mkdir -m 0755 "$WGSHAPE_STATE_DIR"
ip netns exec srv tc -ts monitor >"$MON" 2>&1 &
ip netns exec srv ip -o -ts monitor link >"$LMON" 2>&1 &
lane_open
ip -n srv link add probe0 type wireguard
# A monitor subscribes some time after it starts: poke until all three saw it.
for i in $(seq 1 30); do
	from_t=$(lines_of "$MON") from_l=$(lines_of "$LMON")
	lane_drain
	tc -n srv qdisc replace dev probe0 root pfifo limit $((100 + i))
	ip -n srv link set dev probe0 mtu $((1300 + i))
	if lane_wait 2 "dev probe0 root .*limit $((100 + i))p" &&
		wait_for 2 "$MON" "$from_t" grep -q -m1 "limit $((100 + i))p" &&
		wait_for 2 "$LMON" "$from_l" grep -q -m1 "mtu $((1300 + i))"; then
		break
	fi
	[ "$i" != 30 ] || die "the tc and ip monitors show nothing"
done
lane "link del probe0"
info "monitors listening (after $i poke(s))"

# `scenario-daemon.sh overrun`: that part alone.
if [ "${1:-}" = overrun ]; then
	mkdir -m 0755 "$ETC"
	write_conf '[interface wg*]
egress = 20mbit'
	lane "link add mark type wireguard"
	part_overrun
	lane_close
	finish
fi

# ---- 1. start ----------------------------------------------------------------------

step "1. start 'wgshape -c CONF daemon' with [interface wg*] egress = 20mbit"
mkdir -m 0755 "$ETC"
write_conf '[interface wg*]
egress = 20mbit'
expect_eq "config folder owner and mode" "0:0 755" "$(stat -c '%u:%g %a' "$ETC")"
expect_eq "config file owner and mode" "0:0 644" "$(stat -c '%u:%g %a' "$CONF")"
sed 's/^/   | /' "$CONF"
lane "link add mark type wireguard"
start_daemon
expect_eq "daemon process name" wgshape "$(cat "/proc/$DPID/comm")"
expect_match "readiness line" '^<6>running$' "$READY"
roots
expect_root mark kind=cake bandwidth=$(((1000 + GEN) * 125))

# ---- 2. appearance -> cake ------------------------------------------------------------

step "2. a WireGuard interface appears: how long until cake is in place"
declare -A T_ADD T_CAKE
lfrom=$(lines_of "$LOG")
for n in 1 2 3 4 5; do
	lane_drain
	T_ADD[wg$n]=$EPOCHREALTIME
	lane "link add wg$n type wireguard"
	if wait_cake 10 "wg$n"; then
		T_CAKE[wg$n]=$CAKE_TS
	else
		fail "wg$n: no cake on the tc monitor within 10 s"
	fi
	# Up, as wg-quick would: the kernel then puts noqueue back when cake goes.
	lane "link set wg$n up"
done
barrier
declare -A T_LINK T_DAEMON
while read -r dev ts; do T_LINK[$dev]=$ts; done <<<"$(awk '
	$2 != "Deleted" && $3 ~ /^wg[1-5]:$/ && !seen[$3]++ { print substr($3, 1, length($3) - 1), substr($1, 2, length($1) - 2) }' "$LMON")"
while read -r dev ms; do T_DAEMON[$dev]=$ms; done <<<"$(since "$lfrom" "$LOG" |
	sed -nE 's/^<6>(wg[1-5]): shaped ([0-9.]+) ms after it appeared$/\1 \2/p')"
DELAYS=() SCRIPT_DELAYS=() DAEMON_DELAYS=()
for n in 1 2 3 4 5; do
	dev=wg$n
	[ -n "${T_CAKE[$dev]:-}" ] || continue
	d_mon=$([ -z "${T_LINK[$dev]:-}" ] || ms_between "${T_LINK[$dev]}" "${T_CAKE[$dev]}")
	d_script=$(ms_between "${T_ADD[$dev]}" "${T_CAKE[$dev]}")
	info "$dev: link seen (ip monitor) -> cake seen (tc monitor): ${d_mon:-?} ms;" \
		"command sent -> cake: $d_script ms; the daemon says ${T_DAEMON[$dev]:-?} ms"
	DELAYS+=("${d_mon:-$d_script}") SCRIPT_DELAYS+=("$d_script")
	[ -z "${T_DAEMON[$dev]:-}" ] || DAEMON_DELAYS+=("${T_DAEMON[$dev]}")
done
expect_eq "daemon lines '<6>wgN: shaped N ms after it appeared'" 5 "${#DAEMON_DELAYS[@]}"
info "appearance -> cake (monitors): $(stats "${DELAYS[@]}") ms (goal < 20 ms, not asserted)"
roots
for n in 1 2 3 4 5; do
	expect_root "wg$n" kind=cake bandwidth=2500000
done

# ---- 3. create/delete cycles -------------------------------------------------------------

# cycles N: N create/delete cycles of wgc (each waits for its cake), then the
# barrier; MISSED counts the cycles whose wgc was not shaped.
MISSED=0
cycles() {
	local i
	lane_drain
	for i in $(seq 1 "$1"); do
		lane "link add wgc type wireguard"
		# (On the lane, read at once: a monitor that prints a line after the
		# device is gone names it "ifNNN".)
		if ! wait_cake 10 wgc; then
			MISSED=$((MISSED + 1))
			fail "cycle $i: wgc not shaped within 10 s"
		fi
		lane "link del wgc"
	done
	barrier
}

step "3. 2 x 100 create/delete cycles of wgc while the daemon runs"
# A leak is anonymous memory (the heap): RssAnon, taken before, between and
# after two runs of 100 cycles. A leak grows both; something the daemon
# does once (VmRSS went from 1.6 to 3.5 MB and RssAnon from 148 to 260 kB
# once, in some runs during the cycles, in others before them, and never
# again: mostly libc's and GLib's code pages mapped in, tests/vm/README.md)
# grows one at most. So the smaller growth of the two is asserted.
FDS0=$(daemon_fds "$DPID") RSS0=$(status_kb "$DPID" VmRSS) ANON0=$(status_kb "$DPID" RssAnon)
N_FDS0=$(grep -c . <<<"$FDS0")
info "before: $N_FDS0 fds ($(fd_kinds "$FDS0")), VmRSS $RSS0 kB (RssAnon $ANON0 kB)"
lfrom0=$(lines_of "$LOG")
T3=$EPOCHREALTIME
cycles 100
T3_MS=$(ms_between "$T3" "$EPOCHREALTIME")
ANON1=$(status_kb "$DPID" RssAnon)
cycles 100
ANON2=$(status_kb "$DPID" RssAnon)
expect_eq "cycles in which wgc was not shaped" 0 "$MISSED"
log_count "$lfrom0" 20 200 '^<6>wgc: shaped ' || true
expect_eq "daemon lines '<6>wgc: shaped ... after it appeared'" 200 \
	"$(since "$lfrom0" "$LOG" | grep -c '^<6>wgc: shaped ' || true)"
errs=$(since "$lfrom0" "$LOG" | grep -E '^<[0-3]>' || true)
expect_eq "error lines (<0>..<3>) in the daemon log during the cycles" 0 "$(grep -c . <<<"$errs" || true)"
[ -z "$errs" ] || sort <<<"$errs" | uniq -c | sort -rn | sed -n '1,5s/^/   | /p'
W3=$(since "$lfrom0" "$LOG" | grep -c '^<4>wgc: ' || true)
info "warnings about wgc in the log during the cycles: $W3 ($(since "$lfrom0" "$LOG" | grep -m1 '^<4>wgc: ' || true))"
FDS1=$(daemon_fds "$DPID") RSS1=$(status_kb "$DPID" VmRSS)
N_FDS1=$(grep -c . <<<"$FDS1")
info "after: $N_FDS1 fds, VmRSS $RSS1 kB; RssAnon $ANON0 -> $ANON1 -> $ANON2 kB; the first 100 cycles took $T3_MS ms"
expect_eq "daemon open fds after 200 cycles" "$N_FDS0" "$N_FDS1"
expect_eq "daemon fd kinds after 200 cycles" "$(fd_kinds "$FDS0")" "$(fd_kinds "$FDS1")"
grow=$((ANON1 - ANON0 < ANON2 - ANON1 ? ANON1 - ANON0 : ANON2 - ANON1))
if [ "$grow" -le 16 ]; then
	pass "daemon RssAnon: the smaller growth of two runs of 100 cycles = $grow kB (<= 16; $ANON0 -> $ANON1 -> $ANON2 kB)"
else
	fail "daemon RssAnon grew in both runs of 100 cycles ($ANON0 -> $ANON1 -> $ANON2 kB): a leak"
fi
expect_alive

# ---- 4. 50 at once ------------------------------------------------------------------------

step "4. 50 WireGuard interfaces created at once (ip -batch)"
for i in $(seq -w 0 49); do echo "link add wgb$i type wireguard"; done >"$LAB_TMP/add50"
lfrom_l=$(lines_of "$LMON") lfrom=$(lines_of "$LOG")
lane_drain
t0=$EPOCHREALTIME
ip -n srv -batch "$LAB_TMP/add50"
t_added=$EPOCHREALTIME
declare -A seen50=()
while [ "${#seen50[@]}" -lt 50 ] && wait_cake 60 'wgb[0-9]+'; do
	seen50[$CAKE_DEV]=1
done
T50_MS="(not all shaped)"
if [ "${#seen50[@]}" = 50 ]; then
	ts_first=$(since "$lfrom_l" "$LMON" |
		awk '!f && $2 != "Deleted" && $3 ~ /^wgb[0-9]+:$/ { print substr($1, 2, length($1) - 2); f = 1 }')
	T50_MS=$(ms_between "${ts_first:-$t0}" "$CAKE_TS")
	info "ip -batch ran $(ms_between "$t0" "$t_added") ms; first link seen -> 50th cake seen: $T50_MS ms"
fi
expect_eq "wgb* shaped (tc monitor)" 50 "${#seen50[@]}"
roots
n=0
for dev in "${!R_KIND[@]}"; do
	[[ $dev == wgb* && ${R_KIND[$dev]} == cake && ${R_BW[$dev]} == 2500000 ]] && n=$((n + 1))
done
expect_eq "wgb* with a root cake at 20mbit (tc -j)" 50 "$n"
log_count "$lfrom" 20 50 '^<6>wgb[0-9]+: shaped ' || true
mapfile -t D50 <<<"$(since "$lfrom" "$LOG" | sed -nE 's/^<6>wgb[0-9]+: shaped ([0-9.]+) ms after it appeared$/\1/p')"
[ -n "${D50[0]}" ] || D50=()
expect_eq "daemon lines '<6>wgbNN: shaped'" 50 "${#D50[@]}"
info "the daemon's figures over the 50: $(stats "${D50[@]}") ms"
for i in $(seq -w 0 49); do lane "link del wgb$i"; done
barrier
expect_alive

# ---- 5. enforcement -------------------------------------------------------------------------

step "5. a hand-deleted qdisc comes back (enforce = yes, the default)"
roots
h1=${R_HANDLE[wg1]}
lfrom=$(lines_of "$LOG")
lane_drain
tc -n srv qdisc del dev wg1 root
T_BACK="(not back)"
if lane_wait 10 '^\[([^]]*)\] deleted qdisc cake [0-9a-f]+: dev wg1 root ' && t_del=${BASH_REMATCH[1]} &&
	wait_cake 10 wg1; then
	T_BACK=$(ms_between "$t_del" "$CAKE_TS")
	pass "cake back on wg1, $T_BACK ms after the delete (tc monitor)"
else
	fail "cake did not come back on wg1 within 10 s"
fi
barrier
roots
expect_root wg1 kind=cake bandwidth=2500000
info "wg1 root handle before $h1, after ${R_HANDLE[wg1]}"
said=$(since "$lfrom" "$LOG" | grep -E '\<wg1\>' || true)
indent '   daemon: ' <<<"${said:-(nothing about wg1)}"
expect_match "a daemon line about putting wg1's qdisc back (other than the overhead warning)" \
	'wg1' "$(grep -v '^<4>wg1: overhead ' <<<"$said" || true)"

step "5b. a replaced qdisc comes back"
lane_drain
tc -n srv qdisc replace dev wg2 root pfifo limit 77
wait_cake 10 wg2 || fail "cake did not come back on wg2 within 10 s"
barrier
roots
expect_root wg2 kind=cake bandwidth=2500000

step "5c. enforce = no: a hand-deleted qdisc stays deleted"
write_conf '[daemon]
enforce = no

[interface wg*]
egress = 20mbit'
reload
from=$(lines_of "$MON")
tc -n srv qdisc del dev wg1 root
barrier # the daemon handles events in order: it has seen the delete by now
roots
expect_root wg1 kind=noqueue
expect_eq "cake lines for wg1 on the tc monitor since the delete (the delete only)" 1 "$(mon_cake_lines "$from" wg1)"
expect_alive

# ---- 6. SIGHUP ---------------------------------------------------------------------------------

step "6. SIGHUP with a changed rate: a change in place"
# (wg1, left bare by enforce = no, is shaped again by the reload's resync.)
write_conf '[interface wg*]
egress = 30mbit'
roots
declare -A H6
for dev in wg2 wg3 wg4 wg5; do H6[$dev]=${R_HANDLE[$dev]}; done
from=$(lines_of "$MON")
reload
roots
for dev in wg2 wg3 wg4 wg5; do
	expect_root "$dev" kind=cake bandwidth=3750000 handle="${H6[$dev]}"
	expect_eq "'deleted qdisc' lines for $dev on the tc monitor" 0 \
		"$(since "$from" "$MON" | grep -cE "deleted qdisc cake [0-9a-f]+: dev $dev root" || true)"
done
expect_root wg1 kind=cake bandwidth=3750000

step "6b. SIGHUP with [interface wg*] removed and a new [interface wg3]"
write_conf '[interface wg3]
egress = 5mbit'
h3=${R_HANDLE[wg3]}
lfrom=$(lines_of "$LOG")
reload
roots
for dev in wg1 wg2 wg4 wg5; do
	expect_root "$dev" kind=noqueue
done
expect_root wg3 kind=cake bandwidth=625000 handle="$h3"
expect_eq "daemon lines '<6>wgN: no section matches it any more: removing its shaping'" 4 \
	"$(since "$lfrom" "$LOG" | grep -cE '^<6>wg[1245]: no section matches it any more: removing its shaping$' || true)"

step "6c. SIGHUP with a new section [interface wg5]"
write_conf '[interface wg3]
egress = 5mbit

[interface wg5]
egress = 7mbit'
from=$(lines_of "$MON")
reload
roots
expect_root wg5 kind=cake bandwidth=875000
expect_root wg3 kind=cake bandwidth=625000 handle="$h3"
expect_eq "cake lines for wg3 on the tc monitor (already as configured: untouched)" 0 "$(mon_cake_lines "$from" wg3)"
for dev in wg1 wg2 wg4; do
	expect_root "$dev" kind=noqueue
done
expect_alive

# ---- 7. configuration errors ---------------------------------------------------------------

step "7. a bad rate and an unknown key: warnings with file:line, the rest applies"
write_conf '[interface wg*]
egress = 20mbit
frobnicate = yes
rtt = 50ms

[interface wg5]
egress = 7mbit
ingress = 82mb
diffserv = diffserv4'
sed -n '1,9s/^/   | /p' "$CONF"
lfrom=$(lines_of "$LOG")
reload
warns=$(since "$lfrom" "$LOG" | grep -E '^<4>.*(frobnicate|82mb)' || true)
indent '   daemon: ' <<<"${warns:-(no warning)}"
expect_match "warning for the unknown key" \
	"^<4>$CONF:3: unknown key 'frobnicate' \(= 'yes'\) in \[interface wg\*\]; skipped\$" "$warns"
expect_match "warning for the bad rate" "^<4>$CONF:8: ingress = '82mb': .*; skipped\$" "$warns"
roots
for dev in wg1 wg2 wg3 wg4; do
	expect_root "$dev" kind=cake bandwidth=2500000 rtt=50000
done
# The exact section wins and keys are not mixed in: no rtt 50ms on wg5.
expect_root wg5 kind=cake bandwidth=875000 diffserv=diffserv4 rtt=100000
expect_eq "ifb4wg5 exists (the bad ingress was skipped)" no "$(link_exists ifb4wg5 && echo yes || echo no)"

step "7b. a world-writable file: a running daemon keeps its configuration"
before=$(cake_handles)
chmod 0666 "$CONF"
lfrom=$(lines_of "$LOG")
kill -HUP "$DPID"
HUPS=$((HUPS + 1))
if line=$(log_wait "$lfrom" 20 'keeping the configuration'); then
	pass "daemon: $line"
else
	fail "no 'keeping the configuration' line after SIGHUP with a world-writable file"
fi
expect_match "the daemon's reason" "^<3>config: $CONF: writable by someone other than root" "$(since "$lfrom" "$LOG")"
chmod 0644 "$CONF"
barrier
roots
expect_eq "root cakes and their handles" "$before" "$(cake_handles)"
expect_alive

# expect_refused ERE ARGS...: a second `wgshape ARGS` in srv exits 1 at once
# with one line on stderr matching ERE, and changes nothing in srv.
expect_refused() {
	local re=$1 before after
	shift
	before=$(tc -n srv -j qdisc show; ip -n srv -o link show)
	WG_WRAP="timeout 30" wgshape srv "$@"
	after=$(tc -n srv -j qdisc show; ip -n srv -o link show)
	expect_eq "exit status of 'wgshape $*'" 1 "$WG_RC"
	expect_eq "lines on stderr" 1 "$(printf '%s' "$WG_ERR" | grep -c '')"
	expect_match "stderr" "$re" "$WG_ERR"
	expect_eq "srv's links and qdiscs unchanged" yes "$([ "$before" = "$after" ] && echo yes || echo no)"
}

step "7c. a world-writable file or folder: a new daemon refuses to start"
mkdir -m 0755 "$LAB_TMP/bad1"
mkdir -m 0777 "$LAB_TMP/bad2"
printf '[interface wg*]\negress = 10mbit\n' >"$LAB_TMP/bad1/wgshape.conf"
printf '[interface wg*]\negress = 10mbit\n' >"$LAB_TMP/bad2/wgshape.conf"
chmod 0666 "$LAB_TMP/bad1/wgshape.conf"
chmod 0644 "$LAB_TMP/bad2/wgshape.conf"
expect_refused "^<3>config: $LAB_TMP/bad1/wgshape.conf: writable by someone other than root" \
	-c "$LAB_TMP/bad1/wgshape.conf" daemon
expect_refused "^<3>config: $LAB_TMP/bad2: writable by someone other than root" \
	-c "$LAB_TMP/bad2/wgshape.conf" daemon

step "7d. -c with a missing file: a new daemon refuses to start"
expect_refused "^<3>config: $ETC/missing.conf: no such file\$" -c "$ETC/missing.conf" daemon

step "7e. a section for an interface that does not exist yet"
write_conf '[interface wg*]
egress = 20mbit

[interface later0]
egress = 3mbit'
from=$(lines_of "$MON") lfrom=$(lines_of "$LOG")
reload
expect_eq "later0 exists" no "$(link_exists later0 && echo yes || echo no)"
expect_eq "daemon lines naming later0" 0 "$(since "$lfrom" "$LOG" | grep -c later0 || true)"
expect_eq "tc monitor lines naming later0" 0 "$(since "$from" "$MON" | grep -c later0 || true)"
lane_drain
lane "link add later0 type wireguard"
wait_cake 10 later0 || fail "later0 not shaped within 10 s of its creation"
barrier
roots
expect_root later0 kind=cake bandwidth=375000
expect_alive

# ---- 9. idle cost (before 8, which stops the daemon) ----------------------------------------

step "9. idle cost: the daemon's CPU time over 5 idle seconds"
hz=$(getconf CLK_TCK)
c0=$(cpu_ticks "$DPID")
sleep 5 # the measurement itself, not a synchronisation
c1=$(cpu_ticks "$DPID")
IDLE_TICKS=$((c1 - c0))
RSS_END=$(status_kb "$DPID" VmRSS) HWM_END=$(status_kb "$DPID" VmHWM)
info "utime+stime: $c0 -> $c1 ticks ($hz a second); VmRSS $RSS_END kB, VmHWM $HWM_END kB"
if [ "$IDLE_TICKS" -le 2 ]; then
	pass "CPU ticks while idle for 5 s = $IDLE_TICKS (at most 2)"
else
	fail "CPU ticks while idle for 5 s: expected at most 2, found $IDLE_TICKS"
fi
expect_eq "SIGHUPs answered ('reloading the configuration' lines)" "$HUPS" \
	"$(grep -c '^<6>reloading the configuration$' "$LOG" || true)"

# ---- 8. stopping ------------------------------------------------------------------------

step "8. SIGTERM leaves shaping in place"
roots
before=$(cake_handles)
info "root cakes: $before"
kill -TERM "$DPID"
rc=0
wait "$DPID" || rc=$?
expect_eq "daemon exit status after SIGTERM" 0 "$rc"
expect_match "its last line" '^<6>stopped$' "$(tail -n 1 "$LOG")"
roots
expect_eq "root cakes and handles after it stopped" "$before" "$(cake_handles)"

step "8b. a new daemon with clear-on-exit = yes takes over without a change, then clears"
PROM=$LAB_TMP/prom/wgshape.prom
mkdir -m 0755 "$LAB_TMP/prom"
write_conf "[daemon]
clear-on-exit = yes
metrics-file = $PROM
metrics-every = 1

[interface wg*]
egress = 20mbit

[interface later0]
egress = 3mbit"
# The marker gets this configuration's rate: the only change to expect.
no_mark() { sed -E 's/(^| )mark=[^ ]+//; s/^ //'; }
LOG=$LAB_TMP/daemon2.log
start_daemon
roots
expect_eq "root cakes and handles after the restart (marker aside)" "$(no_mark <<<"$before")" "$(cake_handles | no_mark)"
expect_root mark kind=cake bandwidth=$(((1000 + GEN) * 125))
# metrics-file: written before the daemon said it runs (so before the
# marker's new rate, which the next write has), read by Prometheus' parser
CHECK_METRICS=(/usr/bin/python3 "$(dirname "$0")/../tools/check-metrics.py")
expect_eq "metrics-file's mode" 644 "$(stat -c %a "$PROM" 2>&1)"
if "${CHECK_METRICS[@]}" --file "$PROM" \
	--expect 'wgshape_rate_bytes_per_second{interface="later0",direction="egress"} 375000' \
	--expect 'wgshape_interface_present{interface="later0"} 1' | sed 's/^/   | /'; then
	pass "metrics-file: Prometheus' parser reads it, the rates as tc has them"
else
	fail "metrics-file $PROM: see above"
fi
# wgshape metrics IFACE: the same figures, on standard output
ip netns exec srv "$WGSHAPE" metrics later0 >"$LAB_TMP/later0.prom" 2>&1 ||
	fail "wgshape metrics later0: exit $?: $(head -3 "$LAB_TMP/later0.prom")"
ip netns exec srv "$WGSHAPE" metrics mark >"$LAB_TMP/mark.prom" 2>&1 ||
	fail "wgshape metrics mark: exit $?: $(head -3 "$LAB_TMP/mark.prom")"
if "${CHECK_METRICS[@]}" --file "$LAB_TMP/later0.prom" \
	--expect 'wgshape_rate_bytes_per_second{interface="later0",direction="egress"} 375000' \
	--expect 'wgshape_tin_rate_bytes_per_second{interface="later0",tin="Best Effort"} 375000' \
	--expect 'wgshape_shaper_info{interface="later0",device="later0"} 1' |
	sed 's/^/   | /'; then
	pass "wgshape metrics later0: Prometheus' parser reads it"
else
	fail "wgshape metrics later0: see above"
fi
if "${CHECK_METRICS[@]}" --file "$LAB_TMP/mark.prom" \
	--expect "wgshape_rate_bytes_per_second{interface=\"mark\",direction=\"egress\"} $(((1000 + GEN) * 125))" |
	sed 's/^/   | /'; then
	pass "wgshape metrics mark: this configuration's rate"
else
	fail "wgshape metrics mark: see above"
fi
# every sample names later0 but the file's own time (wgshape_metrics_updated_timestamp_seconds)
expect_eq "wgshape metrics later0: no other interface" "" \
	"$(grep -v '^#' "$LAB_TMP/later0.prom" | grep -v 'interface="later0"' |
		grep -v '^wgshape_metrics_updated_timestamp_seconds ' | sed -n 1,3p)"
kill -TERM "$DPID"
rc=0
wait "$DPID" || rc=$?
expect_eq "daemon exit status after SIGTERM" 0 "$rc"
expect_match "its last line" '^<6>stopped$' "$(tail -n 1 "$LOG")"
expect_eq "metrics-file removed when the daemon stopped" no "$([ -e "$PROM" ] && echo yes || echo no)"
roots
for dev in wg1 wg2 wg3 wg4 wg5; do
	expect_root "$dev" kind=noqueue
done
expect_eq "root cakes left in srv" "" "$(cake_handles)"
part_overrun
lane_close

# ---- figures -------------------------------------------------------------------------------

step "figures"
cat <<EOF
   link appears -> cake in place (ip/tc monitors): $(stats "${DELAYS[@]}") ms (goal < 20)
     the same from 'ip link add' sent (script):    $(stats "${SCRIPT_DELAYS[@]}") ms
     the daemon's "shaped N ms after it appeared": $(stats "${DAEMON_DELAYS[@]}") ms
   100 create/delete cycles: $T3_MS ms; fds $N_FDS0 -> $N_FDS1 (200 cycles); VmRSS $RSS0 -> $RSS1 kB; RssAnon $ANON0 -> $ANON1 -> $ANON2 kB
   50 interfaces at once:    the last shaped $T50_MS ms after the first appeared
   hand-deleted cake back:   $T_BACK ms after the delete
   idle 5 s:                 $IDLE_TICKS ticks (CLK_TCK $hz); $c1 ticks of CPU in all
   at the end:               VmRSS $RSS_END kB, VmHWM $HWM_END kB
   kernel $(uname -r), lab ${LAB_MODE:-?}
EOF
echo "   --- the first daemon's log, 'shaped' lines and overhead warnings left out"
grep -vE '^<6>[^ ]+: shaped [0-9.]+ ms after it appeared$|^<4>[^ ]+: overhead 80: auto: WireGuard, no peer endpoint known yet' \
	"$LAB_TMP/daemon.log" | sed -n '1,60s/^/   | /p'
echo "   ($(grep -c '^<4>[^ ]*: overhead 80: auto: WireGuard, no peer endpoint' "$LAB_TMP/daemon.log" || true) overhead warnings for peerless interfaces)"

finish
