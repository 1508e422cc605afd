#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# lab-init: systemd
#
# The Debian packages (tests/tools/build-deb.sh built them into
# WGSHAPE_DEB_DIR), in the lab VM booted with systemd as PID 1:
#   - apt install ./wgshape_*.deb ./wgshape-tune_*.deb: the files where they
#     belong, the services installed but neither enabled nor started;
#   - wgshape set shapes an interface, wgshape clear puts it back;
#   - a configuration with clear-on-exit = yes, wgshape.service enabled: the
#     interface shaped by the daemon;
#   - an upgrade over itself: the configuration kept, the daemon restarted;
#   - wgshape.service stopped by the admin (still enabled), wgshape@wg0.service
#     enabled and started: a second upgrade leaves wgshape.service stopped
#     and restarts the instance on the new program (not "(deleted)");
#   - remove: the daemons stopped, the instance too, so the interface
#     cleared (clear-on-exit); the configuration kept;
#   - purge: nothing of wgshape left (files, units and their links, the
#     instance's enablement link, the hook, /run/wgshape and the state files
#     in it, /etc/wgshape), but the admin's own files in /var/lib/wgshape and
#     /var/log/wgshape (an adapt-log trace) stay, and their folders with them.
# shellcheck disable=SC2015 # A && pass || fail

# shellcheck source=tests/vm/lib.sh
. "$(dirname "$0")/lib.sh"

need_root
need_tools ip tc apt-get dpkg systemctl
[ "$(cat /proc/1/comm)" = systemd ] ||
	skip "needs systemd as PID 1 (tests/vm/lab run does that for this script)"
need_fresh_vm
[ -n "${WGSHAPE_DEB_DIR:-}" ] || die "WGSHAPE_DEB_DIR: where tests/tools/build-deb.sh left the packages"
DEBS=("$WGSHAPE_DEB_DIR"/wgshape_*.deb "$WGSHAPE_DEB_DIR"/wgshape-tune_*.deb)
for d in "${DEBS[@]}"; do
	[ -r "$d" ] || die "no package $d"
done
# This machine's image forbids maintainer scripts to start or stop services
# (a policy-rc.d that says 101, as container images have); a real system has
# none. The VM's root is a throwaway overlay: take it away there.
rm -f /usr/sbin/policy-rc.d
# conffiles: keep ours, never ask. apt for the install (what a user types);
# dpkg for the rest, the same maintainer scripts without apt's minute of
# reading package lists in the emulated VM
APT=(apt-get -y -q -o Dpkg::Options::=--force-confold)
DPKG=(dpkg --force-confold)

active_state() { systemctl show -P ActiveState "$1"; }
root_kind() { tc -j qdisc show dev "$1" root | jq -r '.[0].kind // "none"'; }
root_bw() { tc -j qdisc show dev "$1" root | jq -r '.[0].options.bandwidth // ""'; }
# left: the paths named for wgshape that the guest wrote (the overlay's upper
# layer, which tests/vm/init shows at /run/lab-written: /etc, /usr, /lib,
# /var as the guest changed them; a file of the host's that was deleted is
# there as a whiteout) and those in /run (not the scenario's own aside, nor
# systemd's runtime records of units that ran, which go at the next boot);
# purge must bring them back to what they were before. (A find over the
# merged /usr and /etc took 70-95 s in the emulated VM, each time.)
WRITTEN=/run/lab-written
left() {
	{
		(cd "$WRITTEN" && find etc usr lib var/lib var/log -name '*wgshape*' 2>/dev/null | sed 's|^|/|')
		find /run -xdev -name '*wgshape*' -not -path "$LAB_TMP*" -not -path '/run/lab*' \
			-not -path '/run/systemd/*' 2>/dev/null
	} | sort
}
grep -q " $WRITTEN " /proc/mounts || die "nothing mounted at $WRITTEN (tests/vm/init shows the overlay's upper layer there)"

step "apt install the packages"
BEFORE=$(left)
[ -z "$BEFORE" ] || info "before installing, already there: $(paste -sd' ' <<<"$BEFORE")"
for d in "${DEBS[@]}"; do
	cp "$d" "$LAB_TMP/"
done
if "${APT[@]}" install "$LAB_TMP"/wgshape_*.deb "$LAB_TMP"/wgshape-tune_*.deb >"$LAB_TMP/apt.log" 2>&1; then
	pass "apt install ./wgshape_*.deb ./wgshape-tune_*.deb"
else
	fail "apt install: $(tail -5 "$LAB_TMP/apt.log")"
	die "not installed"
fi
for f in /usr/sbin/wgshape /usr/libexec/wgshape-measure /lib/systemd/system/wgshape.service \
	/lib/systemd/system/wgshape@.service /lib/systemd/system/wgshape-serve.service \
	/usr/lib/NetworkManager/dispatcher.d/90-wgshape /etc/wgshape/wgshape.conf \
	/usr/share/bash-completion/completions/wgshape /usr/share/man/man8/wgshape.8.gz; do
	[ -e "$f" ] && pass "installed: $f" || fail "not installed: $f"
done
# the check after purge can fail: the installed files show where it looks
WRITTEN_NOW=$(left)
for f in /usr/sbin/wgshape /etc/wgshape/wgshape.conf; do
	grep -qxF "$f" <<<"$WRITTEN_NOW" && pass "seen as written by the install: $f" ||
		fail "not among the paths the install wrote: $f"
done
expect_eq "the dispatcher hook: root's, executable" "root 755" "$(stat -c '%U %a' /usr/lib/NetworkManager/dispatcher.d/90-wgshape)"
for u in wgshape.service wgshape-serve.service; do
	expect_eq "$u: not enabled" disabled "$(systemctl is-enabled "$u" 2>&1)"
	expect_eq "$u: not started" inactive "$(active_state "$u")"
done
expect_match "wgshape --version" '^wgshape ' "$(/usr/sbin/wgshape --version 2>&1)"
expect_match "wgshape check-config on the shipped file" '^\[daemon\]' "$(/usr/sbin/wgshape check-config 2>&1)"

step "wgshape set and clear, as installed"
ip link add wg0 type wireguard
ip link set wg0 up
out=$(/usr/sbin/wgshape set wg0 egress 10mbit 2>&1) || fail "wgshape set: $out"
expect_eq "wg0 after set: cake at 10mbit (bytes/s)" "cake 1250000" "$(root_kind wg0) $(root_bw wg0)"
/usr/sbin/wgshape clear wg0 >/dev/null 2>&1 || fail "wgshape clear"
expect_eq "wg0 after clear" noqueue "$(root_kind wg0)"
# tune and serve come from wgshape-tune: its helper answers
expect_match "wgshape help tune (wgshape-measure)" 'Usage: wgshape .*tune' "$(/usr/sbin/wgshape help tune 2>&1 | sed -n 1p)"

step "configured, enabled: the daemon shapes wg0"
printf '[interface wg*]\negress = 20mbit\n\n[daemon]\nclear-on-exit = yes\n' >/etc/wgshape/wgshape.conf
# Type=notify: enable --now returns once the daemon said it runs, its first
# pass over the interfaces done
systemctl enable --now wgshape.service >/dev/null 2>&1
expect_eq "wgshape.service after enable --now" active "$(active_state wgshape.service)"
expect_eq "wg0 by the daemon: 20mbit" "cake 2500000" "$(root_kind wg0) $(root_bw wg0)"
PID0=$(systemctl show -P MainPID wgshape.service)

step "an upgrade over itself"
if "${DPKG[@]}" -i "$LAB_TMP"/wgshape_*.deb "$LAB_TMP"/wgshape-tune_*.deb >"$LAB_TMP/apt.log" 2>&1; then
	pass "dpkg -i over the installed version"
else
	fail "reinstall: $(tail -5 "$LAB_TMP/apt.log")"
fi
expect_match "the configuration kept" 'clear-on-exit = yes' "$(cat /etc/wgshape/wgshape.conf)"
expect_eq "wgshape.service after the upgrade" active "$(active_state wgshape.service)"
PID1=$(systemctl show -P MainPID wgshape.service)
[ "$PID1" != "$PID0" ] && [ "$PID1" != 0 ] && pass "the daemon was restarted (pid $PID0 -> $PID1)" ||
	fail "the daemon was not restarted (pid $PID0 -> $PID1)"
expect_eq "wgshape.service still enabled" enabled "$(systemctl is-enabled wgshape.service 2>&1)"
expect_eq "wg0 after the upgrade" "cake 2500000" "$(root_kind wg0) $(root_bw wg0)"

step "the admin stops wgshape.service and runs wgshape@wg0.service"
systemctl stop wgshape.service
expect_eq "wg0 after stop: cleared (clear-on-exit)" noqueue "$(root_kind wg0)"
systemctl enable --now wgshape@wg0.service >/dev/null 2>&1
expect_eq "wgshape@wg0.service after enable --now" active "$(active_state wgshape@wg0.service)"
expect_eq "wg0 by the instance: 20mbit" "cake 2500000" "$(root_kind wg0) $(root_bw wg0)"
IPID0=$(systemctl show -P MainPID wgshape@wg0.service)

step "an upgrade: the stopped service stays stopped, the instance restarted"
if "${DPKG[@]}" -i "$LAB_TMP"/wgshape_*.deb "$LAB_TMP"/wgshape-tune_*.deb >"$LAB_TMP/apt.log" 2>&1; then
	pass "dpkg -i over the installed version, again"
else
	fail "reinstall: $(tail -5 "$LAB_TMP/apt.log")"
fi
expect_eq "wgshape.service, stopped by the admin, after the upgrade" inactive \
	"$(active_state wgshape.service)"
expect_eq "wgshape.service still enabled" enabled "$(systemctl is-enabled wgshape.service 2>&1)"
expect_eq "wgshape-serve.service, never started, after the upgrade" inactive \
	"$(active_state wgshape-serve.service)"
expect_eq "wgshape@wg0.service after the upgrade" active "$(active_state wgshape@wg0.service)"
IPID1=$(systemctl show -P MainPID wgshape@wg0.service)
[ "$IPID1" != "$IPID0" ] && [ "$IPID1" != 0 ] &&
	pass "the instance was restarted (pid $IPID0 -> $IPID1)" ||
	fail "the instance was not restarted (pid $IPID0 -> $IPID1)"
expect_eq "the instance's program: the new one" /usr/sbin/wgshape "$(readlink "/proc/$IPID1/exe")"
expect_eq "wg0 after the upgrade: the instance's" "cake 2500000" "$(root_kind wg0) $(root_bw wg0)"

step "remove: the daemon stops and, with clear-on-exit, clears"
if "${DPKG[@]}" -r wgshape-tune wgshape >"$LAB_TMP/apt.log" 2>&1; then
	pass "dpkg -r"
else
	fail "remove: $(tail -5 "$LAB_TMP/apt.log")"
fi
expect_eq "wgshape.service after remove" inactive "$(active_state wgshape.service)"
expect_eq "wgshape@wg0.service after remove" inactive "$(active_state wgshape@wg0.service)"
expect_eq "wg0 after remove: cleared" noqueue "$(root_kind wg0)"
[ ! -e /usr/sbin/wgshape ] && pass "the program is gone" || fail "/usr/sbin/wgshape is still there"
[ ! -e /usr/lib/NetworkManager/dispatcher.d/90-wgshape ] && pass "the hook is gone" ||
	fail "the dispatcher hook is still there"
[ -e /etc/wgshape/wgshape.conf ] && pass "the configuration stays (a conffile)" ||
	fail "remove took the configuration"

step "purge: nothing of wgshape's left, the admin's files kept"
# the admin's: a trace where the man page puts adapt-log's, a note of their
# own; wgshape's: a rate record left in its state folder
mkdir -p /var/lib/wgshape /var/log/wgshape /run/wgshape
echo "admin's" >/var/log/wgshape/wg0.trace
echo "admin's" >/var/lib/wgshape/notes
printf '[client]\nasked=0\n' >/run/wgshape/wg0.client
if "${DPKG[@]}" -P wgshape-tune wgshape >"$LAB_TMP/apt.log" 2>&1; then
	pass "dpkg -P"
else
	fail "purge: $(tail -5 "$LAB_TMP/apt.log")"
fi
LEFT=$(left)
KEPT=$(printf '%s\n' /var/lib/wgshape /var/log/wgshape)
expect_eq "wgshape's paths after purge, against before the install (and the admin's folders)" \
	"$(printf '%s\n' "$BEFORE" "$KEPT" | sed '/^$/d' | sort)" "$LEFT"
expect_eq "the admin's trace in /var/log/wgshape, kept" "admin's" "$(cat /var/log/wgshape/wg0.trace 2>&1)"
expect_eq "the admin's file in /var/lib/wgshape, kept" "admin's" "$(cat /var/lib/wgshape/notes 2>&1)"
[ ! -e /run/wgshape ] && pass "/run/wgshape and wgshape's state file in it gone" ||
	fail "/run/wgshape is still there: $(find /run/wgshape -mindepth 1 2>&1 | paste -sd' ')"
rm -rf /var/lib/wgshape /var/log/wgshape
expect_eq "dpkg knows no wgshape package" "" "$(dpkg -l 'wgshape*' 2>/dev/null | awk '/^[a-z][a-z] / { print $1, $2 }')"
systemctl daemon-reload
expect_match "systemd knows no wgshape unit" '^0 unit' "$(systemctl list-unit-files 'wgshape*' --no-legend 2>&1 | wc -l) units"
finish
