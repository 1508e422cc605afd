#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""check-layers.py SRCDIR: every #include "FOLDER/..." in src/ points down.

Each folder under src/ is a library; LAYERS says which folders each may use
(src/meson.build declares the libraries in the same order). An include of
a folder not listed, or of a folder this table does not know, fails, as does
a library header (<curl/...>, <NetworkManager.h>, <netlink/...>,
<microhttpd.h>, <json-glib/...>) outside the one folder that owns it.
"""
import pathlib
import re
import sys

LAYERS = {
    "util": set(),
    "proto": set(),
    "netlink": {"util"},
    "shape": {"netlink", "util"},
    "channel": {"proto", "shape", "netlink", "util"},
    "profile": set(),
    "adapt": {"proto"},
    "config": {"channel", "proto", "shape", "netlink", "profile", "util"},
    "apply": {"config", "channel", "proto", "shape", "netlink", "profile", "util"},
    "nm": {"profile", "util"},
    "daemon": {"apply", "config", "channel", "adapt", "proto", "nm", "shape", "netlink", "profile", "util"},
    "measure": {"proto", "util"},
    "serve": {"proto", "netlink", "util"},
    "tune": {"measure", "serve", "proto", "apply", "config", "channel", "nm", "shape", "netlink", "profile",
             "util"},
    "cli": {"daemon", "channel", "tune", "measure", "serve", "adapt", "proto", "apply", "config", "nm", "shape",
            "netlink", "profile", "util"},
}

# system headers and the one folder that may include them
OWNED = [
    (re.compile(r"^curl/"), "measure"),
    (re.compile(r"^NetworkManager\.h$"), "nm"),
    (re.compile(r"^netlink/"), "netlink"),
    (re.compile(r"^microhttpd\.h$"), "serve"),
    (re.compile(r"^json-glib/"), "util"),
]

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def main(src):
    src = pathlib.Path(src)
    bad = []
    files = sorted(p for p in src.rglob("*") if p.suffix in (".c", ".h"))
    for path in files:
        rel = path.relative_to(src)
        if len(rel.parts) < 2:
            bad.append(f"{rel}: outside every folder (each file belongs to one library)")
            continue
        folder = rel.parts[0]
        if folder not in LAYERS:
            bad.append(f"{rel}: folder '{folder}' is not in this check's table")
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            kind, name = m.groups()
            if kind == "<":
                for pattern, owner in OWNED:
                    if pattern.search(name) and folder != owner:
                        bad.append(f"{rel}:{n}: <{name}> belongs to {owner}/ only")
                continue
            if "/" not in name:
                continue  # a folder's private header beside it ("internal.h")
            target = name.split("/")[0]
            if target == folder:
                continue
            if target not in LAYERS:
                bad.append(f'{rel}:{n}: "{name}": no folder {target}/ in the table')
            elif target not in LAYERS[folder]:
                bad.append(f'{rel}:{n}: "{name}": {folder}/ may not use {target}/ '
                           f"(it may use: {', '.join(sorted(LAYERS[folder])) or 'nothing'})")
    for b in bad:
        print("FAIL " + b)
    print(f"{len(files)} files read, {len(bad)} upward or unknown includes")
    return 1 if bad else 0


def self_test():
    """The check fails where it should: an upward include, an owned header."""
    import contextlib
    import io
    import tempfile
    cases = {
        "shape/a.c": ('#include "cli/cli.h"\n', 1),
        "util/b.c": ("#include <curl/curl.h>\n", 1),
        "nowhere/c.c": ("", 1),
        "cli/d.c": ('#include "shape/shape.h"\n#include <glib.h>\n', 0),
        "netlink/e.c": ('#include "internal.h"\n#include <netlink/msg.h>\n', 0),
    }
    failures = 0
    for name, (text, want) in cases.items():
        with tempfile.TemporaryDirectory() as d:
            path = pathlib.Path(d, name)
            path.parent.mkdir(parents=True)
            path.write_text(text)
            with contextlib.redirect_stdout(io.StringIO()):
                got = main(d)
        ok = got == want
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} self-test {name}: exit {got}, expected {want}")
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "src"))
