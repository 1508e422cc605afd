#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Make tests/data/cake-stats.nlmsg: a real kernel's RTM_NEWQDISC dump of a
# diffserv3 cake that has seen traffic in all three tins and dropped some.
#
#   capture-cake-stats.sh QDISC_CAPTURE [OUTFILE]
#
# Needs root and a kernel with sch_cake, so it normally runs in the VM lab
# (tests/data/README.md has the commands). The VM cannot write to the source
# tree, so the capture also goes to stdout as base64 between marker lines;
# with OUTFILE (on a host that has cake) it is written there as well.
#
# Everything happens in two namespaces of its own, joined by a veth pair;
# cake shapes veth0 in the first. IPv6 is off there so that no stray router
# solicitations land in the counters after the traffic stops.
set -euo pipefail

capture=${1:-}
outfile=${2:-}
if [ -z "$capture" ] || [ ! -x "$capture" ]; then
	echo "usage: ${0##*/} QDISC_CAPTURE [OUTFILE]  (the built tests/tools/qdisc-capture)" >&2
	exit 2
fi
if [ "$(id -u)" != 0 ]; then
	echo "${0##*/}: needs root (run it through tests/vm/lab run)" >&2
	exit 77
fi

a=cake-cap-a.$$
b=cake-cap-b.$$
peer=198.51.100.2
tmp=$(mktemp -d)
cleanup() {
	ip netns del "$a" 2>/dev/null || true
	ip netns del "$b" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

for ns in "$a" "$b"; do
	ip netns add "$ns"
	ip netns exec "$ns" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 \
		net.ipv6.conf.default.disable_ipv6=1
	ip -n "$ns" link set lo up
done
ip -n "$a" link add veth0 type veth peer name veth1 netns "$b"
ip -n "$a" addr add 198.51.100.1/24 dev veth0
ip -n "$b" addr add "$peer/24" dev veth1
ip -n "$a" link set veth0 up
ip -n "$b" link set veth1 up

# Created with its rate in one step: the capacity estimate starts there and,
# without autorate, stays there, which the unit test checks. The overhead and
# mpu make the size statistics say something (ARP is below the mpu).
ip netns exec "$a" tc qdisc add dev veth0 root cake bandwidth 10mbit diffserv3 \
	overhead 38 mpu 84

# One kind of traffic per tin: CS1 is Bulk, EF is Voice, the rest Best Effort.
ip netns exec "$a" ping -q -n -c 30 -i 0.02 -Q 0x20 "$peer" >/dev/null
ip netns exec "$a" ping -q -n -c 30 -i 0.02 -Q 0xb8 "$peer" >/dev/null
ip netns exec "$a" ping -q -n -c 30 -i 0.02 "$peer" >/dev/null
# Then more than 10 Mbit/s of it, so that COBALT drops; losses are the point.
ip netns exec "$a" ping -q -n -f -l 400 -s 1400 -c 3000 -w 15 "$peer" >/dev/null || true

# The rules the test checks hold exactly only for a drained queue.
for _ in $(seq 50); do
	ip netns exec "$a" tc -s qdisc show dev veth0 root | grep 'backlog 0b 0p' >/dev/null && break
	sleep 0.1
done

ip netns exec "$a" "$capture" veth0 "$tmp" >/dev/null
f=$tmp/veth0-cake-root.nlmsg
[ -s "$f" ] || {
	echo "${0##*/}: qdisc-capture wrote no $f" >&2
	exit 1
}
[ -z "$outfile" ] || cp "$f" "$outfile"

echo "kernel: $(uname -r) $(uname -m)"
ip netns exec "$a" tc -s qdisc show dev veth0 root
echo "sha256: $(sha256sum <"$f" | cut -d' ' -f1)  $(stat -c %s "$f") bytes"
echo "-----BEGIN cake-stats.nlmsg-----"
base64 -w 76 "$f"
echo "-----END cake-stats.nlmsg-----"
