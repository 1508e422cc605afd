#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Derive a rate schedule from a mahimahi packet-delivery trace.

A mahimahi trace has one line per chance to deliver one 1500-byte packet:
the millisecond it comes at. The schedule is the line's capacity per window
(100 ms by default), in kbit/s, one window a line, after a header that names
the source. The simulation (tests/test-adapt.c) and the lab (tests/vm,
trace-replay) read these files; neither needs the traces themselves.

    tests/tools/trace-rates.py ../shared/traces/ATT-LTE-driving.down \
        > tests/traces/ATT-LTE-driving.down.rates
"""
import argparse
import os
import sys

PACKET_BITS = 1500 * 8


def schedule(lines, window_ms):
    counts = []
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            ms = int(line)
        except ValueError:
            sys.exit(f"trace-rates: line {n}: not a whole number of milliseconds: {line!r}")
        if ms < 0:
            sys.exit(f"trace-rates: line {n}: negative time {ms}")
        w = ms // window_ms
        if w >= len(counts):
            counts.extend([0] * (w + 1 - len(counts)))
        counts[w] += 1
    if not counts:
        sys.exit("trace-rates: the trace is empty")
    # bits per window over the window's length in ms is kbit/s
    return [c * PACKET_BITS // window_ms for c in counts]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", help="a mahimahi trace (one delivery opportunity a line, ms)")
    ap.add_argument("--window-ms", type=int, default=100)
    a = ap.parse_args()
    if a.window_ms <= 0:
        sys.exit("trace-rates: --window-ms must be positive")
    with open(a.trace) as f:
        rates = schedule(f, a.window_ms)
    name = os.path.basename(a.trace)
    mean = sum(rates) / len(rates) / 1000
    print(f"# {name}: the line's capacity per {a.window_ms} ms window, kbit/s, one window a line")
    print(f"# ({len(rates)} windows, {len(rates) * a.window_ms / 1000:.0f} s, mean {mean:.1f} Mbit/s).")
    print(f"# Derived by tests/tools/trace-rates.py from mahimahi's traces/{name}, recorded")
    print("# with Saturator by K. Winstein, A. Sivaraman, H. Balakrishnan, \"Stochastic")
    print("# Forecasts Achieve High Throughput and Low Delay over Cellular Networks\",")
    print("# USENIX NSDI 2013 (mahimahi is GPLv3; this is its measurement data, resampled).")
    print(f"window_ms {a.window_ms}")
    for r in rates:
        print(r)


if __name__ == "__main__":
    main()
