#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The cost of one rate change of a cake on wg0, N times each way:
#   tc          `tc qdisc change dev wg0 root cake bandwidth X`, a process each
#   wgshape     `wgshape set wg0 egress X`, a process each          (WGSHAPE)
#   in-process  wgshape's netlink path, N changes in one process   (WGSHAPE_BENCH)
# It prints microseconds per change and the ratio to tc; it asserts nothing
# on time (in the TCG lab VM every figure is slow; the ratios are what
# carries over). WGSHAPE_BENCH, if executable, is called as
# `WGSHAPE_BENCH IFACE N` inside the namespace and must print its
# microseconds per change as the last number on its last line.
#
# Usage: lab run tests/vm/bench-rate-change.sh [N]   (default 1000)
. "$(dirname "$0")/lib.sh"

n=${1:-${BENCH_N:-1000}}
lab_topology ipv4
inns cli tc qdisc replace dev wg0 root cake bandwidth 10mbit

# usec_per SECONDS: microseconds per change.
usec_per() { awk -v s="$1" -v n="$n" 'BEGIN { printf "%.0f", s * 1e6 / n }'; }

# timed_loop CMD...: run CMD (with %R replaced by a rate in kbit) n times in
# one shell inside cli, one process per change; print elapsed seconds.
timed_loop() {
	inns cli bash -c '
		n=$1; shift
		start=$(date +%s%N)
		for ((i = 0; i < n; i++)); do
			r=$((10000 + i % 500))kbit
			args=("${@//%R/$r}")
			"${args[@]}" >/dev/null || { echo "failed: ${args[*]}" >&2; exit 1; }
		done
		end=$(date +%s%N)
		awk -v a="$start" -v b="$end" "BEGIN { printf \"%.3f\", (b - a) / 1e9 }"' \
		bench "$n" "$@"
}

declare -A result
step "$n rate changes with tc, a process each"
s=$(timed_loop tc qdisc change dev wg0 root cake bandwidth %R)
result[tc]=$(usec_per "$s")
info "${s}s, ${result[tc]} us per change"
expect_eq "cake bandwidth after the tc loop" "$(rate_bytes "$((10000 + (n - 1) % 500))kbit")" \
	"$(root_field cli wg0 .options.bandwidth)"

if [ -n "${WGSHAPE:-}" ] && [ -x "$WGSHAPE" ]; then
	step "$n rate changes with wgshape set, a process each"
	inns cli "$WGSHAPE" set wg0 egress 10mbit >/dev/null ||
		die "wgshape set wg0 egress 10mbit fails; nothing to measure"
	if s=$(timed_loop "$WGSHAPE" set wg0 egress %R); then
		result[wgshape]=$(usec_per "$s")
		info "${s}s, ${result[wgshape]} us per change"
	else
		fail "the wgshape loop failed"
	fi
else
	info "WGSHAPE not set: no wgshape process figures"
fi

if [ -n "${WGSHAPE_BENCH:-}" ] && [ -x "$WGSHAPE_BENCH" ]; then
	step "$n rate changes through wgshape's netlink path, in one process"
	if out=$(inns cli "$WGSHAPE_BENCH" wg0 "$n"); then
		echo "$out" | sed 's/^/     > /'
		result[in-process]=$(tail -n 1 <<<"$out" | grep -Eo '[0-9]+(\.[0-9]+)?' | tail -n 1)
	else
		fail "$WGSHAPE_BENCH wg0 $n failed"
	fi
else
	info "WGSHAPE_BENCH (bench/bench-rate-change) not built: no in-process figures"
fi

step "summary ($n changes each, kernel $(uname -r), ${LAB_MODE:-?})"
printf '   %-34s %12s %10s\n' method "us/change" "tc / it"
for k in tc wgshape in-process; do
	[ -n "${result[$k]:-}" ] || continue
	case "$k" in
	tc) label="tc qdisc change (process each)" ;;
	wgshape) label="wgshape set (process each)" ;;
	in-process) label="wgshape netlink (in-process)" ;;
	esac
	printf '   %-34s %12s %10s\n' "$label" "${result[$k]}" \
		"$(awk -v t="${result[tc]}" -v x="${result[$k]}" 'BEGIN { if (x > 0) printf "%.1fx", t / x; else print "-" }')"
done

finish
