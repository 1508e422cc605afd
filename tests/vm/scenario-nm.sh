#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The client role with a real NetworkManager (fresh lab VM only: it runs a
# system D-Bus and NetworkManager). Everything lives in a network namespace
# `cli` made here: dbus-daemon, NetworkManager, the dispatcher it D-Bus
# activates (hence our hook) and `wgshape daemon`. NetworkManager manages a
# WireGuard connection `client` (interface client) whose peer is in a second
# namespace `srv`; dummy connections on one interface stand in for Wi-Fi
# networks by name: "Home Wi-Fi 5G", "Home Wi-Fi 2.4G", "Cafe".
#
#   scenario-nm.sh [PART...]   dispatcher | daemon | both | names | timing
#                              (default: all of them, in that order)
#
#   dispatcher  the hook alone: the seed case (85mbit on 5G, 40mbit on 2.4G
#               with the same qdisc, removed on Cafe, back home), tunnel up
#               after the home network and before it
#   daemon      `wgshape daemon` alone (no hook); NetworkManager restarted
#               while the daemon runs
#   both        hook and daemon: final state right, no error in the daemon log
#   names       a connection named `Home $(touch /tmp/pwned) "5G"` + newline
#               matches a profile as a plain string; nothing runs
#   timing      `wgshape -v dispatch client up` by hand: figures, no assertion
#   client-rate the rate channel: a `wgshape daemon` in srv lets clients set
#               their download (client-download = yes, [peer] at 10mbit);
#               profiles say download = 40mbit (5G), 15mbit (2.4G); on each
#               switch (5G, 2.4G, Cafe: the server's own rate, back) srv's
#               class for the client follows (same class, counters kept),
#               timed from nmcli to the class change in a stamped tc monitor
#               in srv, and iperf3 downloads at about the new rate; with the
#               hook alone, then with the daemon alone (no iperf3)
#   footprint   (benchmark, not in the default list) what wgshape costs against
#               the tools it replaces, side by side: the hook against a recipe
#               dispatcher script (nmcli + tc) for an ignored action and for
#               up, `wgshape set` against `tc qdisc replace`, and a server
#               daemon's resident memory (no profiles: no libnm) just started
#               and after 100 interfaces came and went; ratios, no assertion
#
# Background programs start as `ip netns exec cli PROG &` (not through the
# inns function), so that $! is the program itself and can be killed.
# Kernel state is read with tc -j / jq. Waits are bounded loops driven by a
# `tc monitor` in cli (a condition is checked again on each new line) or by
# nmcli/nm-online waiting on NetworkManager itself; no bare sleep.
# shellcheck disable=SC2016 # the $(...) in names is data, on purpose
. "$(dirname "$0")/lib.sh"

need_root
need_wgshape
need_fresh_vm
need_tools ip tc wg jq nmcli NetworkManager dbus-daemon dbus-send timeout tail

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(dispatcher daemon both names timing client-rate)
for p in "${parts[@]}"; do
	case "$p" in
	dispatcher | daemon | both | names | timing | footprint | client-rate) ;;
	*) die "unknown part '$p' (dispatcher, daemon, both, names, timing, footprint, client-rate)" ;;
	esac
done

REPO=$(cd "$LAB_DIR/../.." && pwd -P)
HOOK_IN=$(dirname "$WGSHAPE")/dispatcher/90-wgshape # as meson configured it
HOOK=/etc/NetworkManager/dispatcher.d/90-wgshape
NM_DISPATCHER=/usr/lib/NetworkManager/nm-dispatcher
[ -x "$NM_DISPATCHER" ] || NM_DISPATCHER=/usr/libexec/nm-dispatcher
DISPATCHER_SERVICE=/usr/share/dbus-1/system-services/org.freedesktop.nm_dispatcher.service
CONF=/etc/wgshape/wgshape.conf
MON=$LAB_TMP/tc-monitor.txt
NMLOG=$LAB_TMP/nm.log
DBUSLOG=$LAB_TMP/dbus.log
DLOG=$LAB_TMP/daemon.log
TUN=client
WLAN=wlsim0
NET5="Home Wi-Fi 5G"
NET24="Home Wi-Fi 2.4G"
CAFE="Cafe"
# The hostile name: a command substitution, quotes and a newline.
EVIL=$'Home $(touch /tmp/pwned) "5G"\nsecond line'
# The same without the newline: must not match the profile.
NEAR='Home $(touch /tmp/pwned) "5G"'
B85=$(rate_bytes 85mbit) B40=$(rate_bytes 40mbit) B25=$(rate_bytes 25mbit)
NM_PID='' DBUS_PID='' DAEMON_PID='' MON_PID='' DISP_PID=''

# ---- helpers ----------------------------------------------------------------

nm_cleanup() {
	local p
	for p in $DAEMON_PID $DISP_PID $NM_PID $MON_PID $DBUS_PID ${SRV_DPID:-}; do
		kill "$p" 2>/dev/null || true
	done
	for p in $DAEMON_PID $DISP_PID $NM_PID $MON_PID; do
		wait "$p" 2>/dev/null || true
	done
	lab_cleanup
}
trap nm_cleanup EXIT

# wait_cond SECS CMD...: true once CMD succeeds; CMD is tried again on each
# new line of the tc monitor (any qdisc change in cli), for at most SECS.
wait_cond() {
	local secs=$1 deadline n left
	shift
	deadline=$((SECONDS + secs))
	while :; do
		n=$(wc -l <"$MON")
		"$@" && return 0
		left=$((deadline - SECONDS))
		[ "$left" -gt 0 ] || return 1
		timeout "$left" tail -n +"$((n + 1))" -f "$MON" | head -n 1 >/dev/null || true
	done
}

# wait_line SECS FILE ERE [FROM]: the first line of FILE after line FROM
# matching ERE, as it is written; fails after SECS.
wait_line() {
	local out
	out=$(timeout "$1" tail -n +"$((${4:-0} + 1))" -f "$2" | grep -m 1 -E -- "$3") || true
	[ -n "$out" ] && printf '%s\n' "$out"
}

root_kind() { root_field cli "$TUN" .kind 2>/dev/null || echo "(no link)"; }
root_handle() { root_field cli "$TUN" .handle; }
is_shaped_at() { [ "$(root_kind)" = cake ] && [ "$(root_field cli "$TUN" .options.bandwidth)" = "$1" ]; }
is_unshaped() { [ "$(root_kind)" = noqueue ]; }

# Who did what, printed where a wait for the tunnel's qdisc failed: the
# end-of-run logs are a later daemon's, and a race between the hook and the
# daemon shows only here.
why_not() {
	info "$1: wgshape show $TUN:"
	ip netns exec cli "$WGSHAPE" show "$TUN" >"$LAB_TMP/why-show.txt" 2>&1 || true
	sed -n '1,6s/^/     | /p' "$LAB_TMP/why-show.txt"
	info "$1: tc monitor (last lines):"
	tail -12 "$MON" | sed 's/^/     | /'
	[ ! -s "$DLOG" ] || { info "$1: daemon log (last lines):"; tail -30 "$DLOG" | sed 's/^/     | /'; }
	[ ! -s "$LAB_TMP/dispatcher.log" ] ||
		{ info "$1: nm-dispatcher (last lines):"; tail -30 "$LAB_TMP/dispatcher.log" | sed 's/^/     | /'; }
}

# expect_shaped WHAT BYTES: wait for cake at BYTES/s on the tunnel, check it.
expect_shaped() {
	local t0=$EPOCHREALTIME
	if wait_cond 60 is_shaped_at "$2"; then
		info "$1: shaped $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", (b - a) * 1000 }') ms after NetworkManager's answer"
	else
		why_not "$1"
	fi
	expect_cake cli "$TUN" bandwidth="$2"
}

expect_unshaped() {
	local t0=$EPOCHREALTIME
	if wait_cond 60 is_unshaped; then
		info "$1: unshaped $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", (b - a) * 1000 }') ms after NetworkManager's answer"
	else
		why_not "$1"
	fi
	expect_eq "$1: $TUN root qdisc" noqueue "$(root_kind)"
}

nm() { inns cli nmcli "$@"; }

# net_up NAME: activate a network (nmcli waits until it is activated).
net_up() {
	info "nmcli connection up $(printf '%q' "$1")"
	nm -w 60 connection up id "$1" >/dev/null || die "nmcli could not activate '$1'"
}
net_down_all() {
	local id
	for id in "$NET5" "$NET24" "$CAFE" "$EVIL" "$NEAR"; do
		if nm -g GENERAL.STATE connection show id "$id" 2>/dev/null | grep activated >/dev/null; then
			nm -w 60 connection down id "$id" >/dev/null || die "nmcli could not deactivate '$id'"
		fi
	done
}
tun_up() {
	info "nmcli connection up $TUN"
	nm -w 60 connection up id "$TUN" >/dev/null || die "nmcli could not activate $TUN"
}
tun_down() {
	if nm -g GENERAL.STATE connection show id "$TUN" 2>/dev/null | grep activated >/dev/null; then
		info "nmcli connection down $TUN"
		nm -w 60 connection down id "$TUN" >/dev/null || die "nmcli could not deactivate $TUN"
	fi
}

add_network() {
	nm connection add type dummy ifname "$WLAN" con-name "$1" autoconnect no \
		ipv4.method manual ipv4.addresses 198.51.100.2/24 ipv4.gateway 198.51.100.1 \
		ipv6.method disabled >/dev/null || die "nmcli could not add the connection '$1'"
}

hook_install() {
	[ -f "$HOOK_IN" ] || die "no $HOOK_IN: the build configures the hook"
	sed "s|^exec .*/wgshape dispatch|exec $(dirname "$WGSHAPE")/wgshape dispatch|" "$HOOK_IN" >"$HOOK.new"
	chown root:root "$HOOK.new"
	chmod 0755 "$HOOK.new"
	mv "$HOOK.new" "$HOOK"
	expect_match "installed hook execs the binary under test" \
		"^exec $(dirname "$WGSHAPE")/wgshape dispatch \"\\\$1\" \"\\\$2\"\$" "$(grep '^exec' "$HOOK")"
}
hook_remove() { rm -f "$HOOK"; }

daemon_start() {
	: >"$DLOG"
	ip netns exec cli "$WGSHAPE" -v daemon >>"$DLOG" 2>&1 &
	DAEMON_PID=$!
	wait_line 60 "$DLOG" 'NetworkManager: (following|not followed)' >/dev/null ||
		die "the daemon did not report on NetworkManager: $(cat "$DLOG")"
	info "wgshape daemon (pid $DAEMON_PID): $(grep -m1 -E 'NetworkManager:' "$DLOG")"
}
daemon_stop() {
	[ -n "$DAEMON_PID" ] || return 0
	kill "$DAEMON_PID" 2>/dev/null || true
	wait "$DAEMON_PID" 2>/dev/null || true
	DAEMON_PID=
}
daemon_log_errors() { grep -E '^<[0-3]>' "$DLOG" || true; }

nm_start() {
	local from
	touch "$NMLOG"
	from=$(wc -l <"$NMLOG")
	ip netns exec cli NetworkManager --debug --log-level=INFO >>"$NMLOG" 2>&1 &
	NM_PID=$!
	wait_line 60 "$NMLOG" 'acquired D-Bus service' "$from" >/dev/null ||
		die "NetworkManager did not get on the bus: $(tail -30 "$NMLOG")"
	# On the bus, NetworkManager answers: what follows asks it (nmcli waits
	# for each activation). Its "startup complete" does not come without
	# udev (it waits for devices udev never announces; nm-online -s times
	# out), so nothing waits for it: the 20 s this waited cost CI a minute.
	[ "$(nm -g RUNNING general 2>/dev/null)" = running ] ||
		die "NetworkManager is on the bus but nmcli does not see it running: $(tail -30 "$NMLOG")"
	info "NetworkManager: on the bus ($(nm -g STARTUP general 2>/dev/null || echo 'startup state unknown'))"
}
nm_stop() {
	kill "$NM_PID" 2>/dev/null || true
	wait "$NM_PID" 2>/dev/null || true
	NM_PID=
}

# the qdisc lines the tc monitor printed for the tunnel after line FROM
mon_tun_lines() { tail -n +"$(($1 + 1))" "$MON" | grep -E "qdisc [a-z_]+ [0-9a-f]+: dev $TUN " || true; }

# ---- the seed sequence ------------------------------------------------------

# Network first, then the tunnel; switch networks; tunnel first.
seed_sequence() {
	local who=$1 h1 h2 from
	net_down_all
	tun_down

	step "$who: on '$NET5', then the tunnel comes up"
	net_up "$NET5"
	tun_up
	expect_shaped "$who, $NET5" "$B85"
	h1=$(root_handle)

	step "$who: switch to '$NET24': 40mbit, same qdisc"
	from=$(wc -l <"$MON")
	net_up "$NET24"
	expect_shaped "$who, $NET24" "$B40"
	h2=$(root_handle)
	expect_eq "$who: cake handle after the switch to $NET24 (was $h1)" "$h1" "$h2"
	info "tc monitor on the switch:"
	mon_tun_lines "$from" | sed 's/^/     | /'

	step "$who: switch to '$CAFE' (no profile): shaping removed"
	net_up "$CAFE"
	expect_unshaped "$who, $CAFE"

	step "$who: back on '$NET5'"
	net_up "$NET5"
	expect_shaped "$who, back on $NET5" "$B85"

	step "$who: tunnel first, then the home network"
	net_down_all
	tun_down
	tun_up
	expect_eq "$who: $TUN root qdisc with no network" noqueue "$(root_kind)"
	net_up "$NET5"
	expect_shaped "$who, $NET5 after the tunnel" "$B85"
}

# ---- the lab --------------------------------------------------------------

step "namespaces: cli (NetworkManager's) and srv (the WireGuard peer)"
for ns in srv cli; do
	ip netns add "$ns"
	ip -n "$ns" link set lo up
done
ip link add veth-srv netns srv type veth peer name veth-cli netns cli
ip -n srv addr add "$SRV_V4/24" dev veth-srv
ip -n cli addr add "$CLI_V4/24" dev veth-cli
ip -n srv link set veth-srv up
ip -n cli link set veth-cli up
for ns in srv cli; do
	(umask 077 && wg genkey >"$LAB_TMP/$ns.key")
	wg pubkey <"$LAB_TMP/$ns.key" >"$LAB_TMP/$ns.pub"
done
ip -n srv link add wg0 type wireguard
inns srv wg set wg0 listen-port "$WG_PORT_SRV" private-key "$LAB_TMP/srv.key" \
	peer "$(cat "$LAB_TMP/cli.pub")" allowed-ips "$CLI_TUN4/32"
ip -n srv addr add "$SRV_TUN4/24" dev wg0
ip -n srv link set wg0 up

ip netns exec cli tc monitor >"$MON" 2>&1 &
MON_PID=$!

step "NetworkManager, its dispatcher and D-Bus in cli"
mkdir -p /etc/NetworkManager/conf.d /etc/NetworkManager/system-connections /run/dbus
rm -f /etc/NetworkManager/system-connections/*
cat >/etc/NetworkManager/conf.d/99-wgshape-lab.conf <<EOF
[main]
no-auto-default=*
[keyfile]
unmanaged-devices=interface-name:veth-cli
EOF
# The tunnel: a keyfile, as nmcli 1.42 cannot add WireGuard peers.
(
	umask 077
	cat >/etc/NetworkManager/system-connections/$TUN.nmconnection <<EOF
[connection]
id=$TUN
type=wireguard
interface-name=$TUN
autoconnect=false

[wireguard]
private-key=$(cat "$LAB_TMP/cli.key")
listen-port=$WG_PORT_CLI

[wireguard-peer.$(cat "$LAB_TMP/srv.pub")]
endpoint=$SRV_V4:$WG_PORT_SRV
allowed-ips=$SRV_TUN4/32;

[ipv4]
method=manual
address1=$CLI_TUN4/24

[ipv6]
method=disabled
EOF
)

mkdir -p /etc/wgshape
chmod 0755 /etc/wgshape
cat >"$CONF" <<'EOF'
[network home5]
connection-id = Home Wi-Fi 5G
interface = client
egress = 85mbit

[network home24]
connection-id = Home Wi-Fi 2.4G
interface = client
egress = 40mbit

[network evil]
connection-id = Home $(touch /tmp/pwned) "5G"\nsecond line
interface = client
egress = 25mbit
EOF
chown root:root "$CONF"
chmod 0644 "$CONF"
"$WGSHAPE" check-config >"$LAB_TMP/cc" 2>&1 || die "check-config: $(cat "$LAB_TMP/cc")"

# --print-address: one line once the bus listens.
ip netns exec cli dbus-daemon --system --nofork --nopidfile --print-address >"$DBUSLOG" 2>&1 &
DBUS_PID=$!
{ wait_line 60 "$DBUSLOG" "^unix:" >/dev/null && [ -S /run/dbus/system_bus_socket ]; } || die "dbus-daemon did not start: $(cat "$DBUSLOG")"
nm_start
info "NetworkManager $(nm -g VERSION general 2>/dev/null || nmcli --version) running (pid $NM_PID)"

if [ -r "$DISPATCHER_SERVICE" ]; then
	pass "dispatcher's D-Bus service file: $(grep -m1 '^Exec=' "$DISPATCHER_SERVICE")"
else
	fail "no $DISPATCHER_SERVICE"
fi
if inns cli dbus-send --system --print-reply --reply-timeout=30000 --dest=org.freedesktop.DBus \
	/org/freedesktop/DBus org.freedesktop.DBus.StartServiceByName \
	string:org.freedesktop.nm_dispatcher uint32:0 >"$LAB_TMP/act" 2>&1; then
	pass "nm-dispatcher is D-Bus activated without systemd"
else
	info "D-Bus activation failed ($(tr '\n' ' ' <"$LAB_TMP/act")): starting $NM_DISPATCHER --persist by hand"
	ip netns exec cli "$NM_DISPATCHER" --persist --debug >"$LAB_TMP/dispatcher.log" 2>&1 &
	DISP_PID=$!
	inns cli dbus-send --system --print-reply --reply-timeout=30000 --dest=org.freedesktop.DBus \
		/org/freedesktop/DBus org.freedesktop.DBus.StartServiceByName \
		string:org.freedesktop.nm_dispatcher uint32:0 >/dev/null 2>&1 ||
		die "nm-dispatcher does not answer on D-Bus"
fi

add_network "$NET5"
add_network "$NET24"
add_network "$CAFE"
add_network "$EVIL"
add_network "$NEAR"
for id in "$TUN" "$NET5" "$NET24" "$CAFE" "$EVIL" "$NEAR"; do
	nm connection show id "$id" >/dev/null 2>&1 || fail "NetworkManager does not know the connection '$id'"
done

tun_up
if inns cli ping -c 1 -W 5 "$SRV_TUN4" >/dev/null 2>&1; then
	pass "ping through the NetworkManager-managed WireGuard tunnel to srv"
else
	fail "no ping through $TUN to $SRV_TUN4"
fi
expect_eq "$TUN link kind" wireguard "$(link_kind cli "$TUN")"
tun_down

# ---- the parts --------------------------------------------------------------

part_dispatcher() {
	step "DISPATCHER ALONE (no daemon)"
	hook_install
	seed_sequence dispatcher
}

part_daemon() {
	local from h1 h2 n1
	step "DAEMON ALONE (no hook)"
	hook_remove
	net_down_all
	tun_down
	"$WGSHAPE" clear "$TUN" >/dev/null 2>&1 || true
	daemon_start
	seed_sequence daemon

	step "daemon: NetworkManager restarted while the daemon runs"
	h1=$(root_handle)
	from=$(wc -l <"$MON")
	n1=$(wc -l <"$DLOG")
	nm_stop
	info "NetworkManager stopped; $TUN is $(root_kind)$(is_shaped_at "$B85" && echo ' at 85mbit')"
	if kill -0 "$DAEMON_PID" 2>/dev/null; then
		pass "the daemon survived NetworkManager stopping"
	else
		fail "the daemon died when NetworkManager stopped: $(tail -5 "$DLOG")"
	fi
	info "tc monitor while NetworkManager was away:"
	mon_tun_lines "$from" | sed 's/^/     | /'
	info "daemon log while NetworkManager was away:"
	tail -n +"$((n1 + 1))" "$DLOG" | sed 's/^/     | /'
	# Without udev in the VM, a NetworkManager started again marks the
	# devices it finds (its own dummy and WireGuard links) strictly
	# unmanaged and cannot assume their connections: delete them, so it
	# makes them afresh on activation.
	ip -n cli link del "$WLAN" 2>/dev/null || true
	ip -n cli link del "$TUN" 2>/dev/null || true
	nm_start
	info "NetworkManager started again (pid $NM_PID)"
	if kill -0 "$DAEMON_PID" 2>/dev/null; then
		pass "the daemon survived the restart"
	else
		fail "the daemon died when NetworkManager restarted: $(tail -5 "$DLOG")"
	fi
	tun_up
	net_up "$NET5"
	expect_shaped "daemon, after the NM restart on $NET5" "$B85"
	h2=$(root_handle)
	info "cake handle before the restart $h1, after $h2 (the link was made again)"

	step "daemon: still follows after the restart"
	net_up "$NET24"
	expect_shaped "daemon after the restart, $NET24" "$B40"
	net_up "$CAFE"
	expect_unshaped "daemon after the restart, $CAFE"
	net_up "$NET5"
	expect_shaped "daemon after the restart, back on $NET5" "$B85"
	expect_eq "daemon log lines at error level" "" "$(daemon_log_errors)"
	daemon_stop
}

part_both() {
	local from
	step "HOOK AND DAEMON TOGETHER"
	hook_install
	net_down_all
	tun_down
	"$WGSHAPE" clear "$TUN" >/dev/null 2>&1 || true
	daemon_start
	from=$(wc -l <"$MON")
	seed_sequence both
	net_up "$NET24"
	expect_shaped "both, final: $NET24" "$B40"
	expect_eq "both: daemon log lines at error level" "" "$(daemon_log_errors)"
	info "tc monitor lines for $TUN over the whole sequence: $(mon_tun_lines "$from" | grep -c '' || true)"
	info "daemon log warnings: $(grep -c -E '^<4>' "$DLOG" || true)"
	grep -E '^<4>' "$DLOG" | sed 's/^/     | /' || true
	if kill -0 "$DAEMON_PID" 2>/dev/null; then pass "the daemon is still running"; else fail "the daemon died"; fi
	daemon_stop
}

part_names() {
	step "NAMES: a connection named $(printf '%q' "$EVIL")"
	[ -e "$HOOK" ] || hook_install
	rm -f /tmp/pwned /pwned
	expect_eq "NetworkManager has the name byte for byte" "$EVIL" \
		"$(nm -g connection.id connection show id "$EVIL" | sed 's/\\n/\n/g')"
	net_down_all
	tun_down
	tun_up
	net_up "$EVIL"
	expect_shaped "profile 'evil' by its exact connection-id" "$B25"
	net_up "$NEAR"
	expect_unshaped "the same name without its newline matches nothing"
	net_up "$EVIL"
	expect_shaped "back on the hostile name" "$B25"
	if [ -e /tmp/pwned ] || [ -e /pwned ]; then
		fail "a name ran as a command: /tmp/pwned exists"
	else
		pass "/tmp/pwned was never created"
	fi
	net_down_all
}

part_timing() {
	local out ms t0 wall=() hook=() debug=() ign=()
	step "TIMING: wgshape -v dispatch $TUN up, by hand"
	net_down_all
	tun_up
	net_up "$NET5"
	expect_shaped "timing setup" "$B85"
	for _ in 1 2 3 4 5 6; do
		t0=$EPOCHREALTIME
		out=$(inns cli "$WGSHAPE" -v dispatch "$TUN" up 2>&1) || fail "dispatch $TUN up exited $?"
		wall+=("$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", (b - a) * 1000 }')")
		ms=$(sed -n "s/.*dispatch 'client' up: \([0-9.]*\) ms.*/\1/p" <<<"$out")
		debug+=("${ms:-?}")
	done
	info "debug line (in-process):  ${debug[*]} ms"
	info "wall clock (ip netns exec + process): ${wall[*]} ms"
	for _ in 1 2 3; do
		t0=$EPOCHREALTIME
		inns cli "$HOOK" "$TUN" up >/dev/null 2>&1 || fail "the hook exited $?"
		hook+=("$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", (b - a) * 1000 }')")
		t0=$EPOCHREALTIME
		inns cli "$HOOK" "$TUN" pre-up >/dev/null 2>&1 || fail "the hook exited $? on pre-up"
		ign+=("$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", (b - a) * 1000 }')")
	done
	info "the installed hook, wall clock, up: ${hook[*]} ms; an ignored action (pre-up): ${ign[*]} ms"
	expect_cake cli "$TUN" bandwidth="$B85"
	printf 'FIGURES dispatch-debug-ms %s | wall-ms %s | hook-up-ms %s | hook-ignored-ms %s\n' \
		"${debug[*]}" "${wall[*]}" "${hook[*]}" "${ign[*]}"
}

# The recipe this replaces: a dispatcher script that asks nmcli which network
# is active and sets cake with tc (the README's "today people do this").
RECIPE='#!/bin/sh
[ "$1" = client ] || exit 0
case "$2" in
up) ;;
*) exit 0 ;;
esac
case "$(nmcli -t -f NAME connection show --active)" in
*"Home Wi-Fi 5G"*) rate=85mbit ;;
*"Home Wi-Fi 2.4G"*) rate=40mbit ;;
*) tc qdisc del dev client root 2>/dev/null; exit 0 ;;
esac
tc qdisc replace dev client root cake bandwidth "$rate" overhead 60
'

# timed N CMD...: run CMD in cli N times, in this shell (a failure counts),
# %I in its words replaced by 10000 + the run's number (a rate that changes);
# MEDIAN is the median wall-clock milliseconds of a run.
timed() {
	local n=$1 i t0 ms=()
	shift
	for ((i = 0; i < n; i++)); do
		t0=$EPOCHREALTIME
		inns cli "${@//%I/$((10000 + i))}" >/dev/null 2>&1 || fail "${*//%I/$((10000 + i))} exited $?"
		ms+=("$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", (b - a) * 1000 }')")
	done
	MEDIAN=$(printf '%s\n' "${ms[@]}" | sort -g |
		awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
}

FOOT=()
# foot WHAT THEIRS_MS OURS_MS: a row of the footprint table
foot() {
	FOOT+=("$(printf '%-44s %9s %9s %6s' "$1" "$2" "$3" \
		"$(awk -v a="$2" -v b="$3" 'BEGIN { printf "%.2fx", b / a }')")")
}

# the server's daemon: [interface wg*] only, in srv (no NetworkManager there)
server_rss() {
	local conf=$LAB_TMP/server.conf log=$LAB_TMP/server-daemon.log pid rss0 rss1 i
	printf '[interface wgb*]\negress = 10mbit\n' >"$conf"
	chmod 0644 "$conf"
	ip netns exec srv "$WGSHAPE" -c "$conf" daemon >"$log" 2>&1 &
	pid=$!
	wait_line 30 "$log" 'running' >/dev/null || die "the server daemon did not start: $(cat "$log")"
	rss0=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
	for ((i = 0; i < 100; i++)); do
		ip -n srv link add "wgb$i" type dummy && ip -n srv link del "wgb$i"
	done
	ip -n srv link add wgbend type dummy
	wait_line 60 "$log" 'wgbend: shaped' >/dev/null || fail "the server daemon did not shape wgbend"
	rss1=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
	if grep -q libnm "/proc/$pid/maps"; then fail "the server daemon loaded libnm"; else pass "the server daemon did not load libnm"; fi
	kill "$pid" && wait "$pid" || true
	ip -n srv link del wgbend
	SERVER_RSS0=$rss0 SERVER_RSS1=$rss1
}

part_footprint() {
	local n=10 a i
	step "FOOTPRINT: wgshape against the recipe (dispatcher script, tc), and the daemon's memory"
	hook_install
	net_down_all
	tun_up
	net_up "$NET5"
	printf '%s' "$RECIPE" >"$LAB_TMP/recipe.sh"
	chmod 0755 "$LAB_TMP/recipe.sh"
	timed $n "$LAB_TMP/recipe.sh" "$TUN" pre-up
	a=$MEDIAN
	timed $n "$HOOK" "$TUN" pre-up
	foot "dispatcher, an ignored action (pre-up)" "$a" "$MEDIAN"
	timed $n "$LAB_TMP/recipe.sh" "$TUN" up
	a=$MEDIAN
	expect_cake cli "$TUN" bandwidth="$B85"
	inns cli tc qdisc del dev "$TUN" root
	timed $n "$HOOK" "$TUN" up
	expect_cake cli "$TUN" bandwidth="$B85"
	foot "dispatcher up (the network, then cake)" "$a" "$MEDIAN"
	timed $((2 * n)) tc qdisc replace dev "$TUN" root cake bandwidth %Ikbit overhead 60
	a=$MEDIAN
	timed $((2 * n)) "$WGSHAPE" set "$TUN" egress %Ikbit
	expect_cake cli "$TUN" bandwidth="$(rate_bytes "$((10000 + 2 * n - 1))kbit")"
	foot "one rate change as a process" "$a" "$MEDIAN"
	server_rss
	step "figures (median ms of $n runs, $((2 * n)) for a rate change; ratio = wgshape / the other)"
	info "$(printf '%-44s %9s %9s %6s' what recipe/tc wgshape ratio)"
	for i in "${FOOT[@]}"; do info "$i"; done
	info "$(printf '%-44s %9s %9s %6s' "server daemon VmRSS, kB (goal 6144)" "$SERVER_RSS0" "$SERVER_RSS1" \
		"$(awk -v a=6144 -v b="$SERVER_RSS1" 'BEGIN { printf "%.2fx", b / a }')")"
	info "(the daemon row: just started, then after 100 interfaces came and went; ratio to 6 MB)"
	hook_remove
	net_down_all
}

# ---- the rate channel: the server's class follows the client's network -------

SRVCONF=$LAB_TMP/srv-rate.conf
SRVLOG=$LAB_TMP/srv-daemon.log
SRVMON=$LAB_TMP/srv-monitor.txt
SRV_DPID=''
RC='' RATE_CAP=0 RATE_LIMIT_MS=1000
RATE_FIG=()


# switch_to WHO NAME CEIL [MBIT]: nmcli up NAME; srv's class for cli must
# reach CEIL (tc's spelling: 40Mbit), timed from the start of nmcli and from
# its return to the stamped tc monitor line; same class, counters kept; with
# MBIT, iperf3 downloads at about it.
switch_to() {
	local who=$1 name=$2 ceil=$3 r=${4:-} from t0 tnm t1 b0 total after i
	b0=$(htb_class_field srv wg0 "$RC" bytes)
	from=$(wc -l <"$SRVMON")
	t0=$EPOCHREALTIME
	net_up "$name"
	tnm=$EPOCHREALTIME
	if t1=$(stamped_wait 20 "$SRVMON" "$from" "class htb $RC .* ceil $ceil "); then
		total=$(ms_between "$t0" "$t1") after=$(ms_between "$tnm" "$t1")
		info "$who, $name: srv's class $RC at $ceil $total ms after nmcli started, $after ms after it returned (nmcli took $(ms_between "$t0" "$tnm") ms)"
		RATE_FIG+=("$who $name: $total ms from nmcli start, $after ms after nmcli returned")
		if [ "$after" -le "$RATE_LIMIT_MS" ]; then
			pass "$who, $name: the server's class followed $after ms after the network was up (<= $RATE_LIMIT_MS)"
		else
			fail "$who, $name: the server's class took $after ms after the network was up (over $RATE_LIMIT_MS)"
		fi
	else
		fail "$who, $name: srv's class $RC never reached $ceil within 20 s"
	fi
	# the last word: a transient (the old network going down) may come first
	for i in $(seq 1 20); do
		[ "$(htb_class_field srv wg0 "$RC" ceil)" = "$ceil" ] && break
		sleep 0.25
	done
	info "tc monitor in srv for class $RC during the switch:"
	tail -n +"$((from + 1))" "$SRVMON" | grep -E "class htb $RC " | sed -E 's/ burst .*//; s/^/     | /' || true
	expect_eq "$who, $name: srv's class ceil" "$ceil" "$(htb_class_field srv wg0 "$RC" ceil)"
	expect_eq "$who, $name: cli's classid" "$RC" "$(htb_class_for srv wg0 "$CLI_TUN4")"
	expect_ge "$who, $name: class bytes kept (were $b0)" "$b0" "$(htb_class_field srv wg0 "$RC" bytes)"
	if [ -n "$r" ] && [ $((r * 4000000)) -gt "$RATE_CAP" ]; then
		info "$who, $name: iperf3 at $r Mbit/s not asserted: the VM moves $(mbit "$RATE_CAP") unshaped, not 4 times that"
	elif [ -n "$r" ]; then
		expect_download "$who, $name" "$r"
	fi
}

# rate_sequence WHO [iperf]: 5G, 2.4G, Cafe (no profile), back to 5G.
rate_sequence() {
	local who=$1 iperf=${2:-} i
	net_down_all
	tun_up
	# from a network without a profile, once the tunnel's own events are
	# through the dispatcher: the switches below are timed
	net_up "$CAFE"
	for i in $(seq 1 40); do
		[ "$(htb_class_field srv wg0 "$RC" ceil)" = 10Mbit ] && break
		sleep 0.25
	done
	switch_to "$who" "$NET5" 40Mbit ${iperf:+40}
	switch_to "$who" "$NET24" 15Mbit ${iperf:+15}
	switch_to "$who" "$CAFE" 10Mbit ${iperf:+10}
	wgshape cli -j show "$TUN"
	expect_eq "$who, $CAFE: the client's record of the answer" "default" \
		"$(jq -r '.[0].client_download.status // "(none)"' <<<"$WG_OUT" 2>/dev/null)"
	switch_to "$who" "$NET5" 40Mbit ${iperf:+40}
	wgshape cli -j show "$TUN"
	expect_match "$who, back on $NET5: the request's source" "network 'home5'" \
		"$(jq -r '.[0].client_download.source // "(none)"' <<<"$WG_OUT" 2>/dev/null)"
}

part_client_rate() {
	local i
	step "CLIENT RATE: the server's class for this client follows the network"
	need_tools iperf3 stdbuf
	printf '[interface wg0]\nclient-download = yes\nclient-download-max = 60mbit\n\n[peer laptop]\npublic-key = %s\ndownload = 10mbit\n' \
		"$(cat "$LAB_TMP/cli.pub")" >"$SRVCONF"
	chmod 0600 "$SRVCONF"
	cp "$CONF" "$LAB_TMP/client.conf.orig"
	printf '%s\n' '[network home5]' 'connection-id = Home Wi-Fi 5G' 'interface = client' \
		'egress = 85mbit' 'download = 40mbit' '' '[network home24]' \
		'connection-id = Home Wi-Fi 2.4G' 'interface = client' 'egress = 40mbit' \
		'download = 15mbit' >"$CONF"
	"$WGSHAPE" check-config >"$LAB_TMP/cc" 2>&1 || die "check-config: $(cat "$LAB_TMP/cc")"
	net_down_all
	tun_down
	"$WGSHAPE" clear "$TUN" >/dev/null 2>&1 || true
	stamped_monitor srv "$SRVMON"
	ip netns exec srv "$WGSHAPE" -v -c "$SRVCONF" daemon >"$SRVLOG" 2>&1 &
	SRV_DPID=$!
	wait_line 30 "$SRVLOG" 'running' >/dev/null || die "srv's daemon did not start: $(cat "$SRVLOG")"
	for i in $(seq 1 40); do
		RC=$(htb_class_for srv wg0 "$CLI_TUN4")
		[ "$RC" != "(none)" ] && break
		sleep 0.25
	done
	expect_eq "srv: cli's class at the configured rate" 10Mbit "$(htb_class_field srv wg0 "$RC" ceil)"
	iperf_server srv "$SRV_TUN4"
	tun_up
	RATE_CAP=$(lab_capacity 1)
	tun_down

	# the hook runs behind NetworkManager's dispatcher queue (here
	# 01-ifupdown before it, each a process under TCG); the daemon hears
	# libnm itself
	step "client rate: the hook alone"
	RATE_LIMIT_MS=2000
	hook_install
	rate_sequence hook iperf
	net_down_all
	tun_down
	hook_remove

	step "client rate: the daemon alone (no hook)"
	RATE_LIMIT_MS=1000
	daemon_start
	rate_sequence daemon
	expect_eq "client rate: client daemon log lines at error level" "" "$(daemon_log_errors)"
	daemon_stop
	net_down_all
	tun_down

	step "client rate: figures (network switch to the server's class change)"
	for i in "${RATE_FIG[@]}"; do info "$i"; done
	printf 'FIGURES %s\n' "$(IFS='|'; echo "${RATE_FIG[*]}")"
	expect_eq "srv's daemon log lines at error level" "" "$(grep -E '^<[0-3]>' "$SRVLOG" || true)"
	if [ "$lab_failures" -gt 0 ]; then
		info "srv's daemon log:"
		tail -40 "$SRVLOG" | sed 's/^/     | /'
		info "client daemon log:"
		tail -40 "$DLOG" | sed 's/^/     | /'
	fi
	kill "$SRV_DPID" 2>/dev/null || true
	wait "$SRV_DPID" 2>/dev/null || true
	SRV_DPID=
	cp "$LAB_TMP/client.conf.orig" "$CONF"
}

for p in "${parts[@]}"; do
	"part_${p//-/_}"
done

if [ "$lab_failures" -gt 0 ]; then
	step "logs"
	info "NetworkManager (last lines):"
	tail -25 "$NMLOG" | sed 's/^/     | /'
	[ ! -s "$DLOG" ] || { info "daemon log:"; tail -40 "$DLOG" | sed 's/^/     | /'; }
	[ ! -s "$LAB_TMP/dispatcher.log" ] || { info "nm-dispatcher:"; tail -40 "$LAB_TMP/dispatcher.log" | sed 's/^/     | /'; }
fi
finish
