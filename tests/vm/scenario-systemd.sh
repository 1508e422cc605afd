#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# lab-init: systemd
#
# wgshape under systemd, in the lab VM booted with systemd as PID 1 (the line
# above makes tests/vm/lab do that; see tests/vm/guest-systemd). The build's
# binary, units and man pages are installed into the VM's overlay, and then:
#   - systemd-analyze verify and security on the units;
#   - wgshape.service (Type=notify, hardened) reaches active;
#   - interfaces made with `ip link add` and with `wg-quick up` get cake
#     within a second (tc and ip monitors with timestamps);
#   - `systemctl reload` applies a changed rate (same qdisc handle);
#   - `systemctl restart` and `stop` leave shaping in place (same handle,
#     no cake deleted on the tc monitor);
#   - wgshape@wg7.service, enabled before wg7 exists, starts when wg7 appears
#     (udev -> device unit -> WantedBy) and stops when wg7 goes (BindsTo).
# Everything happens in the VM's own network namespace: device units exist
# only there. Checks use systemctl, journalctl, tc and ip, not wgshape.
# shellcheck disable=SC2016,SC2015,SC2001 # jq in single quotes; A && pass || fail

# shellcheck source=tests/vm/lib.sh
. "$(dirname "$0")/lib.sh"

need_root
need_wgshape
need_tools ip tc wg wg-quick jq systemctl journalctl systemd-analyze
[ "$(cat /proc/1/comm)" = systemd ] ||
	skip "needs systemd as PID 1 (tests/vm/lab run does that for this script)"
need_fresh_vm

UNITS=/etc/systemd/system
ETC=/etc/wgshape
CONF=$ETC/wgshape.conf
SBIN=/usr/local/sbin
MON=$LAB_TMP/tc-monitor.txt
MONPIDS=()
LMON=$LAB_TMP/ip-monitor.txt
T0=$EPOCHREALTIME

# Elapsed seconds of the scenario, to see where the time goes in a slow VM.
el() { awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1fs", b - a }'; }
step() { printf '\n== [%s] %s\n' "$(el)" "$*"; }

# ---- times ---------------------------------------------------------------

# us_of TIME: microseconds since local midnight of a monitor timestamp
# (2026-12-02T11:57:09.541946).
us_of() {
	local hms=${1#*T}
	local h=${hms:0:2} m=${hms:3:2} s=${hms:6:2} u=${hms:9:6}
	echo $(((10#$h * 3600 + 10#$m * 60 + 10#$s) * 1000000 + 10#$u))
}
ms_between() {
	local d=$(($(us_of "$2") - $(us_of "$1")))
	[ "$d" -ge -43200000000 ] || d=$((d + 86400000000))
	awk -v d="$d" 'BEGIN { printf "%.1f\n", d / 1000 }'
}

# wait_line SECS FILE FROM ERE: the first line after line FROM of FILE that
# matches ERE (polled every 20 ms; the time comes from the monitor itself).
wait_line() {
	local secs=$1 file=$2 from=$3 re=$4 i line
	for ((i = 0; i < secs * 50; i++)); do
		line=$(tail -n +"$((from + 1))" "$file" | grep -E -- "$re" | sed -n 1p) && [ -n "$line" ] && {
			echo "$line"
			return 0
		}
		sleep 0.02
	done
	return 1
}
lines_of() { wc -l <"$1"; }
ts_of() { sed -nE 's/^\[([^]]*)\].*/\1/p' <<<"$1"; }

# Kernel state, read with tc -j.
root_json() { tc -j qdisc show dev "$1" root | jq -c '.[0] // {}'; }
root_kind() { root_json "$1" | jq -r '.kind // "none"'; }
root_handle() { root_json "$1" | jq -r '.handle // ""'; }
root_bw() { root_json "$1" | jq -r '.options.bandwidth // ""'; }

# appear_to_cake DEV FROM_T FROM_L [LIMIT_MS]: after a link DEV was made, wait
# up to 15 s for cake on it; check the delay link (ip monitor) -> cake (tc
# monitor) against LIMIT_MS (default 1000).
DELAYS=()
appear_to_cake() {
	local dev=$1 ft=$2 fl=$3 limit=${4:-1000} cake link d
	if ! cake=$(wait_line 15 "$MON" "$ft" "qdisc cake [0-9a-f]+: dev $dev root "); then
		fail "$dev: no cake on the tc monitor within 15 s"
		return
	fi
	link=$(wait_line 2 "$LMON" "$fl" "^\[[^]]*\] [0-9]+: ${dev}[:@]") ||
		{ fail "$dev: not on the ip monitor"; return; }
	d=$(ms_between "$(ts_of "$link")" "$(ts_of "$cake")")
	DELAYS+=("$dev:$d")
	if awk -v d="$d" -v l="$limit" 'BEGIN { exit !(d < l) }'; then
		pass "$dev shaped $d ms after the link appeared (< $limit ms)"
	else
		fail "$dev shaped $d ms after the link appeared (>= $limit ms)"
	fi
}

journal() { journalctl --no-pager -o cat "$@" 2>/dev/null || true; }
show_journal() {
	info "--- journalctl -u $1 (last lines)"
	journal -u "$1" -n "${2:-15}" | sed 's/^/   | /'
}

active_state() { systemctl show -P ActiveState "$1"; }

# wait_state UNIT STATE SECS
wait_state() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		[ "$(active_state "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

on_exit() {
	systemctl stop wgshape.service 'wgshape@*.service' 2>/dev/null || true
	wg-quick down wg1 >/dev/null 2>&1 || true
	ip link del wg0 2>/dev/null || true
	ip link del wg7 2>/dev/null || true
	[ ${#MONPIDS[@]} = 0 ] || kill "${MONPIDS[@]}" 2>/dev/null || true
	lab_cleanup
}
trap on_exit EXIT

info "systemd $(systemctl --version | sed -n 1p | cut -d' ' -f2), state $(systemctl is-system-running 2>&1 || true)," \
	"system up for $(cut -d' ' -f1 /proc/uptime)s"
info "$(systemd-analyze time 2>/dev/null | sed -n 1p || true)"

# ---- install ---------------------------------------------------------------

step "install the build into the overlay: $SBIN/wgshape (wgshape-measure and the modules beside it), units, man pages"
install -m 0755 "$WGSHAPE" "$SBIN/wgshape"
install -m 0755 "$(dirname "$WGSHAPE")/wgshape-measure" "$SBIN/wgshape-measure"
install -m 0644 "$(dirname "$WGSHAPE")"/wgshape-nm.so "$(dirname "$WGSHAPE")"/wgshape-json.so "$SBIN/"
src=$(dirname "$WGSHAPE")/systemd
repo=$(cd "$LAB_DIR/../.." && pwd -P)
for u in wgshape.service wgshape@.service; do
	if [ -r "$src/$u" ]; then
		# The build's unit, with its install path replaced.
		sed -E "s|^ExecStart=[^ ]*/wgshape( \|$)|ExecStart=$SBIN/wgshape\1|" "$src/$u" >"$UNITS/$u"
	else
		sed "s|@sbindir@|$SBIN|g" "$repo/systemd/$u.in" >"$UNITS/$u"
		info "no $src/$u: made $u from systemd/$u.in"
	fi
	info "$u: $(grep '^ExecStart=' "$UNITS/$u")"
done
mkdir -p /usr/local/share/man/man8 /usr/local/share/man/man5
cp "$repo/man/wgshape.8" /usr/local/share/man/man8/
cp "$repo/man/wgshape.conf.5" /usr/local/share/man/man5/
mkdir -m 0755 "$ETC"
printf '[interface wg*]\negress = 20mbit\n' >"$CONF"
chmod 0644 "$CONF"
sed 's/^/   | /' "$CONF"
systemctl daemon-reload

step "systemd-analyze verify"
for u in "$UNITS/wgshape.service" "$UNITS/wgshape@.service"; do
	if out=$(systemd-analyze verify "$u" 2>&1); then
		pass "verify ${u##*/}${out:+ (says: $out)}"
	else
		fail "verify ${u##*/}: $out"
	fi
done

# ---- monitors -----------------------------------------------------------------

step "tc and ip monitors with timestamps"
tc -ts monitor >"$MON" 2>&1 &
MONPIDS+=("$!")
ip -o -ts monitor link >"$LMON" 2>&1 &
MONPIDS+=("$!")
ip link add probe0 type dummy 2>/dev/null || ip link add probe0 type wireguard
for i in $(seq 1 50); do
	tc qdisc replace dev probe0 root pfifo limit $((100 + i))
	ip link set dev probe0 mtu $((1300 + i))
	if grep -q "limit $((100 + i))p" "$MON" && grep -q "mtu $((1300 + i))" "$LMON"; then
		break
	fi
	[ "$i" != 50 ] || die "the tc and ip monitors show nothing"
	sleep 0.2
done
ip link del probe0
info "monitors listening (after $i poke(s))"

# The kernel loads sch_cake and wireguard on first use, with modprobe reading
# the modules over 9p: seconds in this VM, once per boot. Load them first, so
# the delays below are the daemon's.
for m in wireguard sch_cake; do
	t=$EPOCHREALTIME
	modprobe "$m" || die "modprobe $m failed"
	info "modprobe $m: $(awk -v a="$t" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", (b - a) * 1000 }') ms"
done

# ---- wgshape.service ---------------------------------------------------------

step "systemctl enable --now wgshape.service (Type=notify)"
t=$EPOCHREALTIME
if systemctl enable --now wgshape.service 2>&1 | sed 's/^/   | /'; [ "$(active_state wgshape.service)" = active ]; then
	pass "wgshape.service active, $(awk -v a="$t" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", (b - a) * 1000 }') ms for enable --now"
else
	fail "wgshape.service is $(active_state wgshape.service) ($(systemctl show -P Result wgshape.service))"
	show_journal wgshape.service 30
	die "the daemon does not run under its unit"
fi
expect_eq "enabled" enabled "$(systemctl is-enabled wgshape.service)"
MAINPID=$(systemctl show -P MainPID wgshape.service)
info "main pid $MAINPID: $(tr '\0' ' ' <"/proc/$MAINPID/cmdline"), $(awk '/^VmRSS/ { print $2, $3 }' "/proc/$MAINPID/status") RSS"
info "capabilities: $(awk '/^Cap(Eff|Bnd|Amb)/ { printf "%s %s  ", $1, $2 }' "/proc/$MAINPID/status")"
expect_eq "effective capabilities (CAP_NET_ADMIN and CAP_BPF only)" 0000008000001000 "$(awk '/^CapEff/ { print $2 }' "/proc/$MAINPID/status")"
show_journal wgshape.service 8

step "systemd-analyze security"
sec=$(systemd-analyze security --no-pager wgshape.service 2>&1) || true
grep -E '✗' <<<"$sec" | sed -n '1,40s/^/   | /p' || true
info "$(grep -E 'Overall exposure level' <<<"$sec")"

# ---- ip link add -------------------------------------------------------------

step "ip link add wg0 type wireguard: shaped within a second"
ft=$(lines_of "$MON") fl=$(lines_of "$LMON")
ip link add wg0 type wireguard
appear_to_cake wg0 "$ft" "$fl"
expect_eq "wg0 root kind" cake "$(root_kind wg0)"
expect_eq "wg0 bandwidth (bytes/s, 20mbit)" 2500000 "$(root_bw wg0)"
ip link set wg0 up

# ---- wg-quick up ---------------------------------------------------------------

step "wg-quick up wg1: shaped within a second"
mkdir -p /etc/wireguard
chmod 0700 /etc/wireguard
cat >/etc/wireguard/wg1.conf <<EOF
[Interface]
PrivateKey = $(wg genkey)
Address = 10.201.0.1/24
ListenPort = 51901

[Peer]
PublicKey = $(wg genkey | wg pubkey)
AllowedIPs = 10.201.0.2/32
EOF
chmod 0600 /etc/wireguard/wg1.conf
ft=$(lines_of "$MON") fl=$(lines_of "$LMON")
wg-quick up wg1 2>&1 | sed 's/^/   | /'
appear_to_cake wg1 "$ft" "$fl"
expect_eq "wg1 root kind" cake "$(root_kind wg1)"
expect_eq "wg1 bandwidth (bytes/s, 20mbit)" 2500000 "$(root_bw wg1)"
info "link -> cake: ${DELAYS[*]} ms"
show_journal wgshape.service 6

# ---- reload ------------------------------------------------------------------

step "a changed config (30mbit) and systemctl reload wgshape"
H0=$(root_handle wg0) H1=$(root_handle wg1)
printf '[interface wg*]\negress = 30mbit\n' >"$CONF"
systemctl reload wgshape.service
for i in $(seq 1 100); do
	[ "$(root_bw wg0)" = 3750000 ] && [ "$(root_bw wg1)" = 3750000 ] && break
	sleep 0.05
done
expect_eq "wg0 bandwidth after reload" 3750000 "$(root_bw wg0)"
expect_eq "wg1 bandwidth after reload" 3750000 "$(root_bw wg1)"
expect_eq "wg0 handle after reload (a change, not a new qdisc)" "$H0" "$(root_handle wg0)"
expect_eq "wg1 handle after reload" "$H1" "$(root_handle wg1)"
expect_eq "same main pid after reload" "$MAINPID" "$(systemctl show -P MainPID wgshape.service)"
show_journal wgshape.service 4

# ---- restart and stop ----------------------------------------------------------

# sample_roots FILE: wg0's root qdisc (kind and handle) as fast as tc goes,
# until killed.
sample_roots() {
	while :; do
		tc qdisc show dev wg0 root | awk '{ print $2, $3 }' >>"$1"
	done
}

step "systemctl restart wgshape: shaping stays while it restarts and after"
ft=$(lines_of "$MON")
sample_roots "$LAB_TMP/samples" &
SPID=$!
until [ -s "$LAB_TMP/samples" ]; do sleep 0.01; done
systemctl restart wgshape.service
n=$(lines_of "$LAB_TMP/samples")
until [ "$(lines_of "$LAB_TMP/samples")" -ge $((n + 3)) ]; do sleep 0.01; done
kill "$SPID" 2>/dev/null
wait "$SPID" 2>/dev/null || true
expect_eq "wgshape.service after restart" active "$(active_state wgshape.service)"
NEWPID=$(systemctl show -P MainPID wgshape.service)
[ "$NEWPID" != "$MAINPID" ] && pass "a new main pid ($MAINPID -> $NEWPID)" ||
	fail "the main pid did not change ($NEWPID)"
info "$(wc -l <"$LAB_TMP/samples") samples of wg0's root during the restart: $(sort "$LAB_TMP/samples" | uniq -c | tr -s ' \n' ' ')"
expect_eq "wg0 root during the restart (every sample)" "cake $H0" "$(sort -u "$LAB_TMP/samples" | tr '\n' ' ' | sed 's/ $//')"
sleep 0.5
expect_eq "cake deletions on the tc monitor during the restart" 0 \
	"$(tail -n +"$((ft + 1))" "$MON" | grep -c 'deleted qdisc cake' || true)"
expect_eq "wg0 after restart" "cake $H0 3750000" "$(root_kind wg0) $(root_handle wg0) $(root_bw wg0)"
expect_eq "wg1 after restart" "cake $H1 3750000" "$(root_kind wg1) $(root_handle wg1) $(root_bw wg1)"

step "systemctl stop wgshape: shaping stays"
systemctl stop wgshape.service
expect_eq "wgshape.service after stop" inactive "$(active_state wgshape.service)"
expect_eq "wg0 after stop" "cake $H0 3750000" "$(root_kind wg0) $(root_handle wg0) $(root_bw wg0)"
expect_eq "wg1 after stop" "cake $H1 3750000" "$(root_kind wg1) $(root_handle wg1) $(root_bw wg1)"
expect_eq "main service result" success "$(systemctl show -P Result wgshape.service)"
show_journal wgshape.service 6
errs=$(journal -u wgshape.service -p err)
if [ -z "$errs" ]; then
	pass "no errors in wgshape.service's journal"
else
	fail "errors in wgshape.service's journal:"
	sed 's/^/   | /' <<<"$errs"
fi
info "its warnings: $(journal -u wgshape.service -p warning | sort | uniq -c | sed 's/^ *//' | paste -sd';')"

# ---- wgshape@wg7 ---------------------------------------------------------------

step "wgshape@wg7.service, enabled before wg7 exists"
systemctl disable wgshape.service 2>&1 | sed 's/^/   | /'
systemctl enable wgshape@wg7.service 2>&1 | sed 's/^/   | /'
expect_eq "wgshape@wg7.service before wg7" inactive "$(active_state wgshape@wg7.service)"
ft=$(lines_of "$MON") fl=$(lines_of "$LMON")
ip link add wg7 type wireguard
if wait_state sys-subsystem-net-devices-wg7.device active 10; then
	pass "sys-subsystem-net-devices-wg7.device active (udev saw wg7)"
else
	fail "sys-subsystem-net-devices-wg7.device is $(active_state sys-subsystem-net-devices-wg7.device)"
	systemctl status --no-pager sys-subsystem-net-devices-wg7.device 2>&1 | sed 's/^/   | /'
fi
if wait_state wgshape@wg7.service active 10; then
	pass "wgshape@wg7.service started when wg7 appeared"
else
	fail "wgshape@wg7.service is $(active_state wgshape@wg7.service)"
fi
# udev, the device unit, then the start of a Type=notify service: this path is
# as fast as systemd is, not the daemon; checked loosely.
appear_to_cake wg7 "$ft" "$fl" 15000
expect_eq "wg7 bandwidth (bytes/s, 30mbit)" 3750000 "$(root_bw wg7)"
P7=$(systemctl show -P MainPID wgshape@wg7.service)
info "wgshape@wg7 main pid $P7: $(tr '\0' ' ' <"/proc/$P7/cmdline" 2>/dev/null)"
show_journal wgshape@wg7.service 6
t=$EPOCHREALTIME
ip link del wg7
if wait_state wgshape@wg7.service inactive 10; then
	pass "wgshape@wg7.service stopped $(awk -v a="$t" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", (b - a) * 1000 }') ms after ip link del wg7"
else
	fail "wgshape@wg7.service is $(active_state wgshape@wg7.service) after wg7 went"
fi
expect_eq "wgshape@wg7.service result" success "$(systemctl show -P Result wgshape@wg7.service)"
expect_eq "wg0 untouched by the wg7 instance" "cake $H0" "$(root_kind wg0) $(root_handle wg0)"
errs=$(journal -u wgshape@wg7.service -p err)
[ -z "$errs" ] && pass "no errors in wgshape@wg7's journal" || {
	fail "errors in wgshape@wg7's journal:"
	sed 's/^/   | /' <<<"$errs"
}

step "the template instance comes back with wg7"
ft=$(lines_of "$MON") fl=$(lines_of "$LMON")
ip link add wg7 type wireguard
wait_state wgshape@wg7.service active 10 && pass "wgshape@wg7.service started again" ||
	fail "wgshape@wg7.service is $(active_state wgshape@wg7.service) after wg7 came back"
appear_to_cake wg7 "$ft" "$fl" 15000
ip link del wg7
wait_state wgshape@wg7.service inactive 10 || fail "wgshape@wg7.service did not stop the second time"

# ---- the rate channel ----------------------------------------------------------

step "the rate channel through the unit: a client in a namespace asks the server for its download"
# The server: wgr here (10.203.0.1); the client: wgc in namespace rc, over a veth.
skey=$(wg genkey) ckey=$(wg genkey)
ip netns add rc
ip link add rcv0 type veth peer name rcv1 netns rc
ip addr add 10.202.0.1/24 dev rcv0
ip link set rcv0 up
ip -n rc addr add 10.202.0.2/24 dev rcv1
ip -n rc link set rcv1 up
ip -n rc link set lo up
ip link add wgr type wireguard
wg set wgr private-key <(echo "$skey") listen-port 51903 \
	peer "$(wg pubkey <<<"$ckey")" allowed-ips 10.203.0.2/32
ip addr add 10.203.0.1/24 dev wgr
ip link set wgr up
ip -n rc link add wgc type wireguard
ip netns exec rc wg set wgc private-key <(echo "$ckey") \
	peer "$(wg pubkey <<<"$skey")" allowed-ips 10.203.0.0/24 endpoint 10.202.0.1:51903
ip -n rc addr add 10.203.0.2/24 dev wgc
ip -n rc link set wgc up
ip netns exec rc ping -c 1 -W 2 10.203.0.1 >/dev/null && pass "the tunnel carries a ping" ||
	fail "no ping through the tunnel wgc -> wgr"
printf '[interface wgr]\negress = 20mbit\nclient-download = yes\n' >"$CONF"
systemctl enable --now wgshape.service 2>&1 | sed 's/^/   | /'
wait_state wgshape.service active 10 || fail "wgshape.service is $(active_state wgshape.service)"
out=$(ip netns exec rc env WGSHAPE_STATE_DIR=/run/wgshape-rc "$SBIN/wgshape" set wgc client download 5mbit \
	server 10.203.0.1 2>&1) && rc=0 || rc=$?
sed 's/^/   | /' <<<"$out"
expect_eq "the client's request: exit status" 0 "$rc"
expect_match "the server's daemon answered" 'applied' "$out"
classes=$(tc class show dev wgr)
sed 's/^/   | /' <<<"$classes"
expect_match "wgr: a class of the client's, up to 5mbit" 'ceil 5Mbit' "$classes"
show_journal wgshape.service 6
systemctl disable --now wgshape.service 2>&1 | sed 's/^/   | /'
ip netns del rc
ip link del wgr

info "link -> cake under systemd: ${DELAYS[*]} ms"
info "scenario took $(el)"
finish
