#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Read wgshape's Prometheus exposition with Prometheus' own parser
(python3-prometheus-client) and check it.

  check-metrics.py --exe TEST_METRICS
      what `TEST_METRICS --print` prints (tests/test-metrics.c's views): the
      families, their types and help, escaped labels, values
  check-metrics.py --file FILE [--expect 'NAME{k="v",...} VALUE']...
      a file `wgshape metrics` or the daemon's metrics-file wrote: it parses,
      every family is wgshape_*, and each --expect sample is there with that
      value (labels not given may have any value)

Exit 0 when all holds, 1 with a line per failure, 77 when the parser is not
installed (a skip, never a pass).
"""
import re
import subprocess
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print("python3-prometheus-client is not installed")
    sys.exit(77)

failures = []


def check(cond, what):
    if cond:
        print("ok  ", what)
    else:
        print("FAIL", what)
        failures.append(what)


def parse(text):
    """{(sample name, frozenset of labels): value}, and {family name: (type, help)};
    a text the parser refuses is a failure (and nothing)."""
    samples, families = {}, {}
    try:
        for fam in text_string_to_metric_families(text):
            families[fam.name] = (fam.type, fam.documentation)
            for s in fam.samples:
                samples[(s.name, frozenset(s.labels.items()))] = s.value
    except ValueError as e:
        check(False, "the parser reads it: %s" % e)
    return samples, families


def find(samples, name, labels):
    """The values of name's samples whose labels include labels."""
    want = set(labels.items())
    return [v for (n, ls), v in samples.items() if n == name and want <= set(ls)]


EXPECT = re.compile(r'^([a-z_]+)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-z_]+)="((?:[^"\\]|\\.)*)"')


def expect(samples, spec):
    m = EXPECT.match(spec)
    if not m:
        check(False, "a well-formed --expect: " + spec)
        return
    name, labels, value = m.group(1), m.group(2) or "", float(m.group(3))
    labels = {k: v.encode().decode("unicode_escape") for k, v in LABEL.findall(labels)}
    got = find(samples, name, labels)
    check(value in got, "%s: %s (found %s)" % (spec, value, got or "none"))


def unit(exe):
    text = subprocess.run([exe, "--print"], check=True, capture_output=True,
                          text=True).stdout
    samples, families = parse(text)
    # counters: the parser names the family without _total, its samples with it
    for name, typ in [("wgshape_rate_bytes_per_second", "gauge"),
                      ("wgshape_sent_bytes", "counter"),
                      ("wgshape_dropped_packets", "counter"),
                      ("wgshape_ecn_marked_packets", "counter"),
                      ("wgshape_backlog_bytes", "gauge"),
                      ("wgshape_peak_delay_seconds", "gauge"),
                      ("wgshape_adapt_rate_bytes_per_second", "gauge"),
                      ("wgshape_client_download_bytes_per_second", "gauge"),
                      ("wgshape_interface_present", "gauge")]:
        check(families.get(name, (None,))[0] == typ, "%s is a %s" % (name, typ))
    check(all(n.startswith("wgshape_") for n in families), "every family is wgshape_*")
    check(all(h for _, h in families.values()), "every family has its help")
    expect(samples, 'wgshape_rate_bytes_per_second{interface="wg0",direction="egress"} 1163750')
    expect(samples, 'wgshape_sent_packets_total{interface="wg0",direction="egress",'
                    'tin="Voice"} 30')
    expect(samples, 'wgshape_peak_delay_seconds{interface="wg0",tin="Bulk"} 0.0672')
    # a peer's name with a quote and a backslash comes back as it was
    got = find(samples, "wgshape_rate_bytes_per_second", {"peer": 'lap"top\\1'})
    check(got == [2500000.0], "the escaped peer name reads back (%s)" % got)
    # an empty label is no label: the interface-wide cake has no peer
    got = [ls for (n, ls) in samples if n == "wgshape_rate_bytes_per_second"
           and dict(ls).get("interface") == "wg0"]
    check(got and all("peer" not in dict(ls) for ls in got), "no peer label on wg0's cakes")
    expect(samples, 'wgshape_interface_present{interface="wg9"} 0')
    # an interface name that is not UTF-8: its stray bytes as the text \xNN
    got = find(samples, "wgshape_interface_present", {"interface": "wg\\xff\\xfe"})
    check(got == [0.0], "a name that is not UTF-8 reads back escaped (%s)" % got)
    expect(samples, 'wgshape_adapt_delay_seconds{interface="wg0",direction="egress"} 0.0136')


def main(argv):
    if len(argv) == 3 and argv[1] == "--exe":
        unit(argv[2])
    elif len(argv) >= 3 and argv[1] == "--file":
        with open(argv[2]) as f:
            samples, families = parse(f.read())
        check(not failures and families and all(n.startswith("wgshape_") for n in families),
              "%s parses: %d families, all wgshape_*" % (argv[2], len(families)))
        rest = argv[3:]
        while rest:
            if rest[0] != "--expect" or len(rest) < 2:
                print("usage: check-metrics.py --file FILE [--expect SAMPLE]...")
                return 2
            expect(samples, rest[1])
            rest = rest[2:]
    else:
        print(__doc__)
        return 2
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
