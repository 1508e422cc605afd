#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# check-commands.sh BUILDDIR [--valgrind]: run wgshape's commands that need no
# kernel feature and no privileges (help, check-config, show of an empty
# state folder, set and tune with bad words, plot-trace) and check what they
# say and how they exit. With --valgrind, each runs under memcheck and a definite leak
# fails: the unit tests alone would not see a command's leaks.
set -u
build=$1
wrap=()
if [ "${2:-}" = --valgrind ]; then
	command -v valgrind >/dev/null || { echo "valgrind not installed"; exit 77; }
	wrap=(valgrind -q --leak-check=full --errors-for-leak-kinds=definite
	      --show-leak-kinds=definite --error-exitcode=99)
fi
wgshape=$build/wgshape
fails=0

# shellcheck source=tests/tools/conf-dir.sh
. "$(dirname "$0")/conf-dir.sh"
dir=$(conf_dir "$wgshape" "$build" wgshape-commands) ||
	{ echo "no folder for a configuration that wgshape accepts"; exit 1; }
trap 'rm -rf "$dir"' EXIT
printf '[interface wg0]\negress = 10mbit\ningress = 50mbit\n' >"$dir/wgshape.conf"
chmod 0644 "$dir/wgshape.conf"
export WGSHAPE_STATE_DIR=$dir/state-none

# EXIT WANT ARGS...: exits EXIT and says something matching WANT (a grep -E pattern)
check() {
	local want_rc=$1 want=$2 out rc
	shift 2
	out=$("${wrap[@]}" "$wgshape" "$@" 2>&1)
	rc=$?
	if [ $rc != "$want_rc" ] || ! grep -qE -- "$want" <<<"$out"; then
		echo "FAIL: wgshape $* -> exit $rc (want $want_rc, /$want/):"
		sed 's/^/    /' <<<"$out" | head -30
		fails=$((fails + 1))
	else
		echo "ok: wgshape $*"
	fi
}

check 0 'Usage: wgshape' --help
check 0 'Usage: wgshape set' set --help
check 0 'egress' -c "$dir/wgshape.conf" check-config
check 0 '"egress_rate" ?: ?10000000,' -c "$dir/wgshape.conf" check-config -j
check 0 '^$' show
check 1 'no such interface' show nosuchif0
check 2 'banana' set wg0 egress banana
check 2 'not a valid interface name' set 'wg/0' egress 10mbit
check 2 'rate' set wg0 egress 99999999999gbit
# an interface named client: shaped as any other, or named before the client
# keyword; the keyword with the interface left out only before download
check 1 '^wgshape: client: (no such interface|not permitted)' set client egress 85mbit
check 1 '^wgshape: (set )?client( client)?: ' set client client download 20mbit
check 2 "'client' alone" set client
check 2 'needs download RATE' set client client
# options after the command: say where they go
check 2 'options go before the command' check-config -c "$dir/wgshape.conf"
check 2 'options go before the command' show -v
check 2 'options go before the command' set wg0 egress 10mbit --verbose
check 2 'not a command' frobnicate
# a name from outside is printed escaped, in text as in JSON
printf '[interface wg\xff0]\negress = 10mbit\n' >"$dir/hostile.conf"
chmod 0644 "$dir/hostile.conf"
check 0 '^\[interface wg\\xff0\]' -c "$dir/hostile.conf" check-config
# a malformed far end is a usage error before the interface is looked at
check 2 "server: 'a b' is not" tune nosuchif0 server 'a b'
check 2 "download: 'ftp://x/' is not" tune nosuchif0 ingress ping h download ftp://x/
# save network NAME: the profile must name the tunnel, said before anything is measured
check 2 "network 'home': no \\[network home\\] profile names wg0" \
	-c "$dir/wgshape.conf" tune wg0 server h save network home
printf '[network home]\ninterface = nosuchif0\negress = 5mbit\n' >"$dir/net.conf"
chmod 0644 "$dir/net.conf"
check 1 "nosuchif0: (no such interface|.*CAP_NET_ADMIN)" \
	-c "$dir/net.conf" tune nosuchif0 server h save network home
# check-config lists [network] profiles, in text and in JSON
check 0 '^\[network home\]  interface nosuchif0  egress 5mbit  \(' -c "$dir/net.conf" check-config
check 0 '"networks" ?: ?\[' -c "$dir/net.conf" check-config -j

# plot-trace: a trace gives a chart; a bad one says which line on one line,
# exits 1 and leaves no chart, not even half of one
printf '%s\n' '# wgshape adapt trace 1: t dir rate delay rtt load why' \
	'0.000 egress 20000000 150 31000 19500000 none' '# a comment' \
	'0.050 egress 8000000 42000 75000 21000000 queue' \
	'0.100 download 80000000 -40 0 0 idle' >"$dir/good.trace"
check 0 '^$' plot-trace "$dir/good.trace" "$dir/good.svg"
if [ "$(grep -c '<polyline' "$dir/good.svg" 2>/dev/null)" != 6 ]; then
	echo "FAIL: wgshape plot-trace: no chart of two panels in $dir/good.svg"
	fails=$((fails + 1))
fi
check 0 'Usage: wgshape plot-trace' plot-trace --help
check 2 'takes FILE and OUT.svg' plot-trace "$dir/good.trace"
check 1 "nothere.trace: No such file" plot-trace "$dir/nothere.trace" "$dir/bad.svg"
check 1 'good.trace is FILE itself' plot-trace "$dir/good.trace" "$dir/good.trace"
printf '# wgshape adapt trace 1: t dir rate delay rtt load why\n0.000 egress 1 2 3 4 none\n0.1 up\n' \
	>"$dir/bad.trace"
err=$("${wrap[@]}" "$wgshape" plot-trace "$dir/bad.trace" "$dir/bad.svg" 2>&1 >/dev/null)
rc=$?
if [ $rc != 1 ] || [ "$(wc -l <<<"$err")" != 1 ] ||
	! grep -q 'bad.trace: line 3: not a trace record: 2 fields' <<<"$err" ||
	ls "$dir"/bad.svg* >/dev/null 2>&1; then
	echo "FAIL: wgshape plot-trace (a bad line) -> exit $rc (want 1), one line, no bad.svg*:"
	sed 's/^/    /' <<<"$err" | head -5
	ls "$dir" | sed 's/^/    /'
	fails=$((fails + 1))
else
	echo "ok: wgshape plot-trace (a bad line)"
fi

[ $fails = 0 ] || { echo "$fails failed"; exit 1; }
