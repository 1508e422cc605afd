#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# check-dispatcher-hook.sh HOOK SBIN ACTION...: the hook as meson configures
# it (dispatcher/90-wgshape.in), with SBIN for the folder of wgshape, run as
# NetworkManager runs it: "IFACE ACTION". The actions wgshape uses (the
# ACTIONs, meson's dispatch_actions) start it with those two words as they
# are; every other action ends in sh, with no command started (PATH empty),
# and nothing in either word is run.
set -u
hook=$1
sbin=$2
shift 2
fails=0

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$sbin"
# the stand-in for wgshape: says it ran, and with which words, one a line
cat >"$sbin/wgshape" <<STUB
#!/bin/sh
printf '%s\n' "\$@" >"$tmp/ran"
STUB
chmod 0755 "$sbin/wgshape"

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# run IFACE ACTION: the hook under an empty environment and PATH
run() {
	rm -f "$tmp/ran"
	(cd "$tmp" && env -i PATH=/nonexistent /bin/sh "$hook" "$1" "$2") ||
		fail "'$2' on '$1': the hook exited $?"
}

for a in "$@"; do
	run wg0 "$a"
	if [ ! -e "$tmp/ran" ]; then
		fail "'$a': wgshape was not started"
	elif [ "$(cat "$tmp/ran")" != "$(printf 'dispatch\nwg0\n%s' "$a")" ]; then
		fail "'$a': wgshape got $(tr '\n' ' ' <"$tmp/ran")"
	else
		echo "ok: '$a' starts wgshape dispatch"
	fi
done

# an interface name is passed on as it is, never run
run "\$(touch $tmp/x) wg0;touch $tmp/y" up
[ "$(sed -n 2p "$tmp/ran" 2>/dev/null)" = "\$(touch $tmp/x) wg0;touch $tmp/y" ] ||
	fail "the interface name did not reach wgshape as it was"

# NetworkManager's other actions, and words that only look like one
for a in pre-up pre-down dhcp4-change dhcp6-change hostname vpn-pre-up vpn-pre-down \
	'' ' up' 'up ' UP 'up|down' '*' 'up*' "up;touch $tmp/x" "\$(touch $tmp/x)" \
	"\`touch $tmp/x\`" "$(printf 'up\ndown')"; do
	run wg0 "$a"
	if [ -e "$tmp/ran" ]; then
		fail "'$a': wgshape was started for an action it ignores"
	else
		echo "ok: '$a' ends in the hook"
	fi
done
[ ! -e "$tmp/x" ] && [ ! -e "$tmp/y" ] || fail "a word was run as a command"

[ "$fails" -eq 0 ] || { echo "$fails failed"; exit 1; }
