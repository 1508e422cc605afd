#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# check-completion.sh COMPLETION BUILDDIR: drive the bash completion function
# (completion/wgshape) as bash does on Tab, with COMP_WORDS and COMP_CWORD,
# and check what it offers: commands and options, interface names with the
# WireGuard ones first (from a made-up /sys/class/net), set's words in
# tc-cake(8)'s order, units after a number, and the configuration's [network]
# profile names after `tune IFACE save network` (from the built wgshape).
set -u
completion=$1
build=$2
wgshape=$build/wgshape
fails=0

# shellcheck source=/dev/null
source "$completion" || { echo "cannot source $completion"; exit 1; }

# shellcheck source=tests/tools/conf-dir.sh
. "$(dirname "$0")/conf-dir.sh"
tmp=$(conf_dir "$wgshape" "$build" wgshape-completion) ||
	{ echo "no folder for a configuration that wgshape accepts"; exit 1; }
trap 'rm -rf "$tmp"' EXIT

# the interfaces, in the kernel's (sysfs') order: eth0 lo wg0 wg1 wlan0
_wgshape_sysnet=$tmp/net
for n in eth0 lo wg0 wg1 wlan0; do
	mkdir -p "$_wgshape_sysnet/$n"
	case $n in
	wg*) printf 'DEVTYPE=wireguard\nINTERFACE=%s\n' "$n" >"$_wgshape_sysnet/$n/uevent" ;;
	wlan0) printf 'DEVTYPE=wlan\nINTERFACE=%s\n' "$n" >"$_wgshape_sysnet/$n/uevent" ;;
	*) printf 'INTERFACE=%s\n' "$n" >"$_wgshape_sysnet/$n/uevent" ;;
	esac
done
touch "$_wgshape_sysnet/bonding_masters" # a file there, not an interface

# a configuration with profiles (check-config refuses one that others can write)
conf=$tmp/wgshape.conf
printf '%s\n' '[network home]' 'interface = wg0' 'egress = 20mbit' '' \
	'[network café wifi]' 'interface = wg0' 'egress = 5mbit' '' \
	'[network *]' 'interface = wg*' 'egress = 3mbit' >"$conf"
chmod 0644 "$conf"

# offered LINE: what Tab offers after LINE (words split on spaces; a trailing
# space starts an empty word), one line, space-separated
offered() {
	local line=$1
	read -r -a COMP_WORDS <<<"$line"
	[[ $line == *' ' ]] && COMP_WORDS+=('')
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_WORDS[0]=$wgshape
	COMPREPLY=()
	_wgshape 2>/dev/null
	echo "${COMPREPLY[*]}"
}

# expect LINE WANT: the offer is exactly WANT; expect_start LINE WANT: it begins so
check() {
	local how=$1 line=$2 want=$3 got
	got=$(offered "$line")
	if [[ $how == exact && $got == "$want" ]] || [[ $how == start && $got == "$want"* ]]; then
		echo "ok: '$line' -> $got"
	else
		echo "FAIL: '$line' offers '$got', want $how '$want'"
		fails=$((fails + 1))
	fi
}

check start 'wgshape ' 'set show clear apply check-config daemon dispatch tune serve'
check exact 'wgshape -' '-j --json -v --verbose -c --config -h --help -V --version'
check exact 'wgshape --c' '--config'
check exact 'wgshape sh' 'show'
check exact 'wgshape show ' 'wg0 wg1 eth0 wlan0'
check exact 'wgshape -j show w' 'wg0 wg1 wlan0'
check exact 'wgshape clear ' 'wg0 wg1 eth0 wlan0'
check exact 'wgshape metrics ' 'wg0 wg1 eth0 wlan0'
check exact 'wgshape m' 'metrics'
check exact 'wgshape set ' 'wg0 wg1 eth0 wlan0 client'
check start 'wgshape set wg0 ' 'egress ingress peer client overhead link-overhead mpu atm ptm noatm'
check exact 'wgshape set wg0 diff' 'diffserv8 diffserv4 diffserv3'
check exact 'wgshape set wg0 egress 50mbit r' 'raw rtt regional'
check exact 'wgshape set wg0 egress ' 'off'
check exact 'wgshape set wg0 egress 85' '85kbit 85mbit 85gbit 85bit 85kbps 85mbps 85gbps 85bps'
check exact 'wgshape set wg0 ingress 1.5m' '1.5mbit 1.5mbps'
check exact 'wgshape set client download ' 'default'
check exact 'wgshape set wg0 client ' 'download'
check exact 'wgshape set client ' 'download'
check exact 'wgshape set client download 20mbit ' 'server'
check exact 'wgshape set wg0 client download default ' 'server'
check exact 'wgshape set wg0 peer abc= download ' 'off'
check exact 'wgshape set wg0 peer abc= upload ' 'off'
check exact 'wgshape set wg0 peer abc= ' 'download upload'
check exact 'wgshape set wg0 rtt 50' '50ms 50us 50s'
check exact 'wgshape set wg0 memlimit 4' '4k 4m 4g'
check exact 'wgshape set wg0 overhead ' 'auto raw'
check exact 'wgshape set wg0 mpu ' ''
check exact 'wgshape dispatch wg0 vpn' 'vpn-up vpn-down'
# a tunnel named client: after set client, the keyword and that interface's words
mkdir -p "$_wgshape_sysnet/client"
printf 'DEVTYPE=wireguard\nINTERFACE=client\n' >"$_wgshape_sysnet/client/uevent"
check start 'wgshape set client ' 'download egress ingress peer client overhead'
check exact 'wgshape set client client ' 'download'
check exact 'wgshape set client client download ' 'default'
check exact 'wgshape set client e' 'egress ethernet'
rm -r "${_wgshape_sysnet:?}/client"
check exact 'wgshape tune ' 'wg0 wg1 eth0 wlan0'
check start 'wgshape tune wg0 ' 'egress ingress both client server'
check exact 'wgshape tune wg0 client ' 'download'
check exact 'wgshape tune wg0 client download s' 'server streams save'
check exact 'wgshape tune wg0 target 8' '8ms 8us'
check exact 'wgshape tune wg0 server 10.0.0.1 ' "$(offered 'wgshape tune wg0 ')"
check exact 'wgshape tune wg0 server 10.0.0.1 ping ' ''
check exact "wgshape -c $conf tune wg0 server h save network " 'home café\ wifi'
check exact "wgshape -c $conf tune wg0 server h save network c" 'café\ wifi'
check exact 'wgshape help t' 'tune'
check exact 'wgshape serve ' 'listen any-source port'

echo "$fails failed"
[ "$fails" = 0 ]
