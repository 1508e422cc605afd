#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A bash script under `set -o pipefail` must not pipe into a reader that
stops early (head, grep -q or -m, awk's exit, sed's q): the writer then dies
of SIGPIPE when it has more to say, the pipeline's status is 141, and
`set -e` ends the script there, or an `if` takes the wrong branch. Whether
the writer had more to say depends on how the scheduler ran the two, so it
fails now and then: vm-daemon did on CI (2026-12-06), `tail | awk '...exit'`
after 50 links at once.

Readers that read everything instead: `sed -n 1,Np`, `grep PATTERN
>/dev/null`, awk with a flag. A line ending in `|| true` is left alone (its
status is ignored on purpose), and so is a comment.

Usage: check-pipes.py FILE...      (exit 1 and one line per finding)
       check-pipes.py --tree ROOT  the project's bash scripts under ROOT
       check-pipes.py --self-test
"""
import glob
import os
import re
import sys

# where the project keeps bash scripts (files that are not bash are skipped)
TREE = ["tests/vm/*", "tests/tools/*.sh", "tests/run", "tests/demo",
        "tests/install-deps", ".ci/run", "dispatcher/*.in"]

EARLY = [
    (re.compile(r"\|\s*head\b"), "head"),
    (re.compile(r"\|\s*grep\s+(-[A-Za-z]*[qm][A-Za-z0-9]*\b|--quiet|--max-count)"), "grep -q/-m"),
    (re.compile(r"\|\s*(\S+/)?[gm]?awk\b[^|]*\bexit\b"), "awk's exit"),
    (re.compile(r"\|\s*sed\b[^|]*'[^']*(^|[;{}/]\s*)q\s*(\d+\s*)?[;}']"), "sed's q"),
]


# sets pipefail itself, or sources lib.sh or load.sh, which run under it
PIPEFAIL = re.compile(r"^\s*set\s+-[a-z]*o\s+pipefail|^\s*\.\s+.*/(lib|load)\.sh\"?\s*$", re.M)


def findings(path, text):
    if not PIPEFAIL.search(text):
        return []
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        n, code = i + 1, lines[i].strip()
        i += 1
        # a pipeline continued on the next line, or a quoted program (awk's)
        # that goes on over lines: judge it whole
        while i < len(lines) and not code.startswith("#") and (
                re.search(r"\|\s*\\?$", code) or
                (re.search(r"\b(awk|sed)\b[^']*'", code) and code.count("'") % 2)):
            code = code.rstrip("\\ ") + " " + lines[i].strip()
            i += 1
        if code.startswith("#") or re.search(r"\|\|\s*true\s*(\)|;|$)", code):
            continue
        for rx, what in EARLY:
            if rx.search(code):
                out.append(f"{path}:{n}: pipe into {what} under pipefail: {code}")
                break
    return out


def self_test():
    head = "set -euo pipefail\n"
    bad = [
        "x=$(cat f | head -1)",
        "if ss -Hltn | grep -q .; then :; fi",
        "t=$(tail f | awk '/a/ { print; exit }')",
        "tail f | grep -m1 x",
        "t=$(tail f |\n\tawk '/a/ { exit }')",
        "tc show | awk '\n/x/ { print; exit }\nEND { }'",
        "cat f | sed -n '/x/{p;q}'",
    ]
    good = [
        "x=$(cat f | sed -n 1p)",
        "if ss -Hltn | grep . >/dev/null; then :; fi",
        "t=$(tail f | awk '!f && /a/ { print; f = 1 }')",
        "x=$(tail f | grep -m1 x || true)",
        "# cat f | head -1",
        "grep -q x file",
        "sed 's/q/r/' f | cat",
    ]
    ok = True
    for line in bad:
        if not findings("t", head + line + "\n"):
            print(f"self-test: not caught: {line}")
            ok = False
    for line in good:
        if findings("t", head + line + "\n"):
            print(f"self-test: caught wrongly: {line}")
            ok = False
    if not findings("t", '. "$(dirname "$0")/lib.sh"\ncat f | head -1\n'):
        print("self-test: a script sourcing lib.sh was not held to pipefail")
        ok = False
    if findings("t", "cat f | head -1\n"):
        print("self-test: a script without pipefail was flagged")
        ok = False
    return 0 if ok else 1


def is_bash(path):
    if path.endswith(".sh"):
        return True
    with open(path, "rb") as f:
        first = f.readline()
    return first.startswith(b"#!") and b"sh" in first


def tree(root):
    files = []
    for pattern in TREE:
        files += [p for p in sorted(glob.glob(os.path.join(root, pattern)))
                  if os.path.isfile(p) and is_bash(p)]
    return files


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    if len(argv) == 2 and argv[0] == "--tree":
        root, argv = argv[1], tree(argv[1])
        if not argv:
            print(f"check-pipes.py: no scripts under {root}", file=sys.stderr)
            return 2
    if not argv or argv[0].startswith("-"):
        print("usage: check-pipes.py FILE... | --tree ROOT | --self-test", file=sys.stderr)
        return 2
    out = []
    for path in argv:
        with open(path, encoding="utf-8") as f:
            out += findings(path, f.read())
    for line in out:
        print(line)
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
