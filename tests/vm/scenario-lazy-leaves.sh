#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Lazy leaves (issue 27): under the daemon, a peer's class holds cake while
# the peer moves traffic and a small fq_codel (64 flows) while it is idle.
# srv's wg0 has cli (a real peer, its handshake seconds old) and three peers
# without endpoints: one lazy, one leaf = cake, one leaf = fq_codel. Checks:
# the leaves as judged at the start (cli cake, the idle one fq_codel 64, the
# others as they say, the default class cake); show and metrics say which
# and why; cli idle for leaf-idle seconds: its cake replaced by fq_codel, and
# nothing else changed (tc monitor); its first packet after: cake again
# within a few seconds (the time printed), again one leaf replaced; traffic
# then goes through that cake; a peer with leaf = cake keeps its cake idle.
# Enforcement of the tree's parts: a class changed with `tc class change`
# and a leaf replaced with `tc qdisc replace` by hand are put back by the
# daemon (it follows class and leaf notifications), and a `wgshape set`
# beside it stands.
. "$(dirname "$0")/lib.sh"

IDLE=5 # leaf-idle, seconds
need_wgshape
need_tools iperf3
lab_topology ipv4
iperf_server srv "$SRV_TUN4"
CLI_KEY=$(cat "$LAB_TMP/cli.pub")

# leaf_of CLASSID: "KIND FLOWS" of the qdisc under srv wg0's class CLASSID
# (FLOWS: fq_codel's, else -), or (none).
leaf_of() {
	inns srv tc qdisc show dev wg0 | awk -v c="$1" '
		$4 == "parent" && $5 == c { f = "-"; for (i = 6; i < NF; i++) if ($i == "flows") f = $(i + 1)
			print $2, f; found = 1 }
		END { if (!found) print "(none)" }'
}
new_key() { wg genkey | wg pubkey; }

K_IDLE=$(new_key)
K_CAKE=$(new_key)
K_FQ=$(new_key)
inns srv wg set wg0 peer "$K_IDLE" allowed-ips 10.200.1.1/32 \
	peer "$K_CAKE" allowed-ips 10.200.1.2/32 peer "$K_FQ" allowed-ips 10.200.1.3/32
CONF=$LAB_TMP/wgshape.conf
cat >"$CONF" <<EOF
[daemon]
leaf-idle = $IDLE

[interface wg0]
egress = 50mbit

[peer laptop]
public-key = $CLI_KEY
download = 10mbit

[peer idle]
public-key = $K_IDLE
download = 2mbit

[peer always]
public-key = $K_CAKE
download = 2mbit
leaf = cake

[peer small]
public-key = $K_FQ
download = 2mbit
leaf = fq_codel
EOF
LOG=$LAB_TMP/daemon.log
MON=$LAB_TMP/leaves.mon
stamped_monitor srv "$MON"
start_daemon srv "$CONF" "$LOG"
C_CLI=$(htb_class_for srv wg0 "$CLI_TUN4")
C_IDLE=$(htb_class_for srv wg0 10.200.1.1)
C_CAKE=$(htb_class_for srv wg0 10.200.1.2)
C_FQ=$(htb_class_for srv wg0 10.200.1.3)
info "classes: laptop $C_CLI, idle $C_IDLE, always $C_CAKE, small $C_FQ"

step "the leaves as judged when the tree was made"
expect_eq "laptop (handshake seconds ago): cake" "cake -" "$(leaf_of "$C_CLI")"
expect_eq "idle (no handshake): fq_codel, 64 flows" "fq_codel 64" "$(leaf_of "$C_IDLE")"
expect_eq "always (leaf = cake): cake" "cake -" "$(leaf_of "$C_CAKE")"
expect_eq "small (leaf = fq_codel): fq_codel, 1024 flows" "fq_codel 1024" "$(leaf_of "$C_FQ")"
expect_eq "the default class: cake" "cake -" "$(leaf_of 1:2)"
wgshape srv -j show wg0
expect_eq "show -j: leaves (default, laptop, idle, always, small)" \
	"cake/cake cake/lazy/true fq_codel/lazy/false cake/cake fq_codel/fq_codel" \
	"$(jq -r '[.[0].egress.classes[] | [.leaf, .leaf_setting, (if has("active") then (.active | tostring) else empty end)] | join("/")] | join(" ")' <<<"$WG_OUT")"
wgshape srv show wg0
expect_match "show: the idle peer's lazy leaf" "lazy leaf: idle, fq_codel \\(64 flows\\)" "$WG_OUT"
wgshape srv metrics
expect_match "metrics: the idle peer's leaf" \
	'wgshape_peer_leaf_info\{interface="wg0",peer="idle",leaf="fq_codel",setting="lazy",active="no"\} 1' \
	"$WG_OUT"
expect_match "metrics: the idle peer's rate, though its leaf is not cake" \
	'wgshape_rate_bytes_per_second\{interface="wg0",direction="egress",peer="idle"\} 250000' "$WG_OUT"

step "laptop idle for leaf-idle ($IDLE s): its cake taken back, nothing else changed"
from=$(wc -l <"$MON")
t=$(stamped_wait $((IDLE + 15)) "$MON" "$from" "qdisc fq_codel .* parent $C_CLI ") ||
	fail "no fq_codel under $C_CLI within $((IDLE + 15)) s"
expect_eq "laptop: fq_codel, 64 flows" "fq_codel 64" "$(leaf_of "$C_CLI")"
expect_eq "always: still cake" "cake -" "$(leaf_of "$C_CAKE")"
expect_match "daemon log" "wg0: lazy leaves: 0 peers became active \\(cake\\), 1 idle" "$(cat "$LOG")"
expect_eq "class or filter changes meanwhile (tc monitor)" 0 \
	"$(tail -n +"$((from + 1))" "$MON" | grep -cE ' (class|filter) ' || true)"

step "laptop's first packet: cake again within a few seconds"
from=$(wc -l <"$MON")
t0=$EPOCHREALTIME
inns srv ping -c 1 -W 2 -q "$CLI_TUN4" >/dev/null || fail "no ping to the laptop"
t=$(stamped_wait 20 "$MON" "$from" "qdisc cake .* parent $C_CLI ") || fail "no cake under $C_CLI within 20 s"
[ -z "$t" ] || info "first packet to cake: $(ms_between "$t0" "$t") ms (the daemon looks every 2 s)"
expect_eq "laptop: cake" "cake -" "$(leaf_of "$C_CLI")"
expect_eq "class or filter changes meanwhile (tc monitor)" 0 \
	"$(tail -n +"$((from + 1))" "$MON" | grep -cE ' (class|filter) ' || true)"
wgshape srv -j show wg0
expect_eq "show -j: the laptop active" true \
	"$(jq -r ".[0].egress.classes[] | select(.name == \"laptop\") | .active" <<<"$WG_OUT")"

step "download through the laptop's new cake, at its class's rate"
b0=$(htb_class_field srv wg0 "$C_CLI" bytes)
down=$(iperf_rate cli "$SRV_TUN4" 4 -P 2 -R)
info "download $(mbit "$down") (class at 10 Mbit/s)"
expect_ge "class $C_CLI bytes (the path taken)" $((b0 + 1000000)) "$(htb_class_field srv wg0 "$C_CLI" bytes)"
sent=$(inns srv tc -s qdisc show dev wg0 | awk -v c="$C_CLI" '
	$1 == "qdisc" { cur = ($2 == "cake" && $5 == c) } cur && !done && $1 == "Sent" { print $2; done = 1 }')
expect_ge "its cake's bytes sent" 1000000 "${sent:-0}"
expect_eq "laptop: still cake while it moves traffic" "cake -" "$(leaf_of "$C_CLI")"

step "a class and a leaf changed by hand come back; a wgshape set beside the daemon stands"
ceil0=$(htb_class_field srv wg0 "$C_IDLE" ceil)
from=$(wc -l <"$MON")
t0=$EPOCHREALTIME
inns srv tc class change dev wg0 parent 1:1 classid "$C_IDLE" htb rate 7mbit ceil 7mbit
t=$(stamped_wait 10 "$MON" "$from" "class htb $C_IDLE .* ceil $ceil0 ") ||
	fail "class $C_IDLE not back at ceil $ceil0 within 10 s"
[ -z "$t" ] || info "tc class change to the class put back: $(ms_between "$t0" "$t") ms"
expect_eq "idle's class: its ceil again" "$ceil0" "$(htb_class_field srv wg0 "$C_IDLE" ceil)"
expect_match "daemon log: the class changed by another process" \
	"wg0: class $C_IDLE changed by another process" "$(cat "$LOG")"
from=$(wc -l <"$MON")
inns srv tc qdisc replace dev wg0 parent "$C_CAKE" pfifo limit 77
stamped_wait 10 "$MON" "$from" "qdisc cake .* parent $C_CAKE " >/dev/null ||
	fail "no cake back under $C_CAKE within 10 s"
expect_eq "always: cake again" "cake -" "$(leaf_of "$C_CAKE")"
# a peer wgshape set gives a class, beside the daemon (not in its configuration)
K_SET=$(new_key)
inns srv wg set wg0 peer "$K_SET" allowed-ips 10.200.1.4/32
expect_wgshape_ok srv set wg0 peer "$K_SET" download 3mbit
C_SET=$(htb_class_for srv wg0 10.200.1.4)
wait_for 10 "$LOG" 0 grep -q -m1 "wg0: class $C_SET changed by another process" ||
	fail "the daemon did not see set's class $C_SET"
# barrier: one more hand change put back, so the daemon has reconciled since set
from=$(wc -l <"$MON")
inns srv tc class change dev wg0 parent 1:1 classid "$C_IDLE" htb rate 7mbit ceil 7mbit
stamped_wait 10 "$MON" "$from" "class htb $C_IDLE .* ceil $ceil0 " >/dev/null ||
	fail "class $C_IDLE not back at ceil $ceil0 within 10 s (the second time)"
expect_eq "set's class stands under the daemon (ceil)" 3Mbit "$(htb_class_field srv wg0 "$C_SET" ceil)"

stop_daemon "$DAEMON_PID"
kill "$STAMPED_PID" 2>/dev/null || true
sed 's/^/   daemon: /' "$LOG" | grep -v 'debug' | tail -n 20
expect_wgshape_ok srv clear wg0
finish
