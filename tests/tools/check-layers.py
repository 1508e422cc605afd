#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""check-layers.py SRCDIR: one table of the layers, and everything agrees with it.

Each folder under src/ is a library; LAYERS says which folders each uses.
It is the one truth, and this check fails when anything else disagrees:

- an #include "FOLDER/..." of a folder not listed, or of a folder the
  table does not know, or a library header (<curl/...>,
  <NetworkManager.h>, <netlink/...>, <microhttpd.h>, <json-glib/...>)
  outside the one folder that owns it;
- an edge of the table that no #include uses;
- a folder's meson.build that names a library the table does not list
  for it, or that does not bring (directly or through the libraries it
  names) every library the table lists for it;
- src/meson.build declaring a folder before a folder it uses;
- the drawing in src/meson.build's comment or in the README (after the
  line "<!-- layers: ... -->") differing from what --draw prints.

check-layers.py --draw prints the drawing; --self-test checks the check.
"""
import pathlib
import re
import sys

# folder: the folders its files include (and its library links)
LAYERS = {
    "util": set(),
    "proto": set(),
    "netlink": set(),
    "shape": {"netlink", "util"},
    "channel": {"proto", "shape", "netlink", "util"},
    "profile": set(),
    "adapt": {"proto", "util"},
    "config": {"channel", "shape", "profile", "util"},
    "apply": {"config", "channel", "shape", "netlink", "util"},
    "nm": {"profile", "util"},
    "daemon": {"apply", "config", "channel", "adapt", "proto", "nm", "shape", "netlink", "util"},
    "measure": {"proto", "util"},
    "serve": {"proto", "netlink", "util"},
    "tune": {"measure", "proto", "apply", "config", "channel", "nm", "shape", "netlink", "util"},
    "cli": {"daemon", "channel", "tune", "measure", "serve", "adapt", "proto", "apply", "config", "nm", "shape",
            "netlink", "util"},
}

# system headers and the one folder that may include them
OWNED = [
    (re.compile(r"^curl/"), "measure"),
    (re.compile(r"^NetworkManager\.h$"), "nm"),
    (re.compile(r"^netlink/"), "netlink"),
    (re.compile(r"^microhttpd\.h$"), "serve"),
    (re.compile(r"^json-glib/"), "util"),
    (re.compile(r"^bpf/"), "adapt"),
]

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
README_MARK = "<!-- layers: tests/tools/check-layers.py --draw prints this; the lint compares -->"
MESON_MARK = "# The layers (tests/tools/check-layers.py --draw; the lint compares):"


def check_includes(src, layers):
    """The includes against the table: (failures, edges used, files read)."""
    bad, used = [], set()
    files = sorted(p for p in src.rglob("*") if p.suffix in (".c", ".h"))
    for path in files:
        rel = path.relative_to(src)
        if len(rel.parts) < 2:
            bad.append(f"{rel}: outside every folder (each file belongs to one library)")
            continue
        folder = rel.parts[0]
        if folder not in layers:
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
            if target not in layers:
                bad.append(f'{rel}:{n}: "{name}": no folder {target}/ in the table')
            elif target not in layers[folder]:
                bad.append(f'{rel}:{n}: "{name}": {folder}/ may not use {target}/ '
                           f"(it may use: {', '.join(sorted(layers[folder])) or 'nothing'})")
            else:
                used.add((folder, target))
    return bad, used, len(files)


def check_unused(layers, used):
    return [f"LAYERS: {f} -> {t}: no #include in {f}/ uses {t}/; remove the edge"
            for f in layers for t in sorted(layers[f]) if (f, t) not in used]


DECLARE = re.compile(r"(\w+_dep)\s*=\s*declare_dependency\((.*?)\)\s*$", re.S | re.M)
LIBRARY = re.compile(r"static_library\((.*?)\)\s*$", re.S | re.M)
DEPS = re.compile(r"dependencies:\s*\[([^\]]*)\]")


def _deps(args):
    m = DEPS.search(args)
    return re.findall(r"\b\w+_dep\b", m.group(1)) if m else []


def check_meson(src, layers):
    """Each folder's meson dependencies against the table."""
    bad = []
    owner, gives, names = {}, {}, {}  # dep -> folder; dep -> deps it passes on; folder -> deps named
    for folder in layers:
        build = src / folder / "meson.build"
        if not build.exists():
            bad.append(f"{folder}/meson.build: missing")
            continue
        text = build.read_text()
        for m in DECLARE.finditer(text):
            owner[m.group(1)] = folder
            gives[m.group(1)] = _deps(m.group(2))
        names[folder] = [d for m in LIBRARY.finditer(text) for d in _deps(m.group(1))]

    def reach(dep, seen):
        if dep in seen:
            return
        seen.add(dep)
        for d in gives.get(dep, []):
            reach(d, seen)

    for folder, deps in names.items():
        reached = set()
        for dep in deps:
            if dep not in owner:
                bad.append(f"{folder}/meson.build: {dep} is declared in no folder's meson.build")
                continue
            target = owner[dep]
            if target != folder and target not in layers[folder]:
                bad.append(f"{folder}/meson.build: {dep}: {folder}/ may not use {target}/ "
                           f"(it may use: {', '.join(sorted(layers[folder])) or 'nothing'})")
            reach(dep, reached)
        have = {owner[d] for d in reached if d in owner}
        for target in sorted(layers[folder] - have):
            bad.append(f"{folder}/meson.build: uses {target}/ (LAYERS) but no dependency brings {target}'s library")
    order = re.findall(r"^subdir\('(\w+)'\)", (src / "meson.build").read_text(), re.M) \
        if (src / "meson.build").exists() else []
    if sorted(order) != sorted(layers):
        bad.append(f"meson.build: declares {', '.join(order)}; LAYERS has {', '.join(layers)}")
    for i, folder in enumerate(order):
        for target in sorted(layers.get(folder, set()) - set(order[:i])):
            bad.append(f"meson.build: subdir('{folder}') before subdir('{target}'), which it uses")
    return bad


def draw(layers):
    """The layers top down: each folder, and the folders it uses."""
    order = list(layers)  # bottom up, as src/meson.build declares them
    width = max(len(f) for f in order) + 3
    lines = []
    for folder in reversed(order):
        uses = [t for t in reversed(order) if t in layers[folder]]
        head = f"{folder}/"
        lines.append((head + " " + "─" * (width - len(head)) + "→ " + " ".join(uses)) if uses else head)
    return lines


def _drawing_after(lines, mark, prefix):
    """The drawing's lines after the line MARK: a fenced block, or comment lines."""
    try:
        i = next(n for n, line in enumerate(lines) if line.strip() == mark.strip())
    except StopIteration:
        return None
    got = []
    if prefix is None:  # markdown: the fenced block that follows
        i += 1
        if i >= len(lines) or not lines[i].startswith("```"):
            return []
        for line in lines[i + 1:]:
            if line.startswith("```"):
                break
            got.append(line)
        return got
    for line in lines[i + 1:]:
        if not line.startswith(prefix):
            break
        got.append(line[len(prefix):])
    return got


def check_drawings(root, layers):
    bad = []
    want = draw(layers)
    for rel, mark, prefix in (("README.md", README_MARK, None), ("src/meson.build", MESON_MARK, "#   ")):
        path = root / rel
        if not path.exists():
            bad.append(f"{rel}: missing")
            continue
        got = _drawing_after(path.read_text().splitlines(), mark, prefix)
        if got is None:
            bad.append(f"{rel}: no line '{mark}' before the drawing of the layers")
        elif got != want:
            bad.append(f"{rel}: the drawing of the layers is not what --draw prints:")
            bad += [f"  {rel}: {line}" for line in got if line not in want]
            bad += [f"  --draw:    {line}" for line in want if line not in got]
    return bad


def main(src, layers=LAYERS, root=None):
    src = pathlib.Path(src)
    root = pathlib.Path(root) if root else src.parent
    bad, used, nfiles = check_includes(src, layers)
    bad += check_unused(layers, used)
    bad += check_meson(src, layers)
    bad += check_drawings(root, layers)
    for b in bad:
        print("FAIL " + b)
    print(f"{nfiles} files read, {len(used)} edges used, {len(bad)} disagreements with LAYERS")
    return 1 if bad else 0


def self_test():
    """The check fails where it should: an upward include, an owned header,
    an unused edge, a meson dependency or a drawing that disagrees."""
    import contextlib
    import io
    import tempfile
    layers = {"util": set(), "shape": {"util"}, "cli": {"shape", "util"}}
    meson = {
        "util/meson.build": "util_dep = declare_dependency(link_with: x)\n",
        "shape/meson.build": "shape_lib = static_library('s',\n\tdependencies: [util_dep, glib])\n"
                             "shape_dep = declare_dependency(link_with: shape_lib,\n"
                             "\tdependencies: [util_dep])\n",
        "cli/meson.build": "cli_lib = static_library('c',\n\tdependencies: [shape_dep])\n",
        "meson.build": "subdir('util')\nsubdir('shape')\nsubdir('cli')\n",
    }
    good = {
        "util/u.c": "#include <json-glib/json-glib.h>\n",
        "shape/s.c": '#include "util/log.h"\n#include "internal.h"\n',
        "cli/c.c": '#include "shape/shape.h"\n#include "util/log.h"\n#include <glib.h>\n',
    }
    picture = "\n".join(draw(layers))
    readme = f"# x\n{README_MARK}\n```\n{picture}\n```\n"
    meson_drawing = MESON_MARK + "\n" + "".join(f"#   {line}\n" for line in draw(layers))
    cases = {
        "all agree": ({}, 0),
        "upward include": ({"shape/a.c": '#include "cli/cli.h"\n'}, 1),
        "owned header": ({"shape/b.c": "#include <curl/curl.h>\n"}, 1),
        "unknown folder": ({"nowhere/c.c": ""}, 1),
        "unused edge": ({"cli/c.c": '#include "shape/shape.h"\n'}, 1),
        "meson names an unlisted library": (
            {"shape/meson.build": meson["shape/meson.build"].replace("[util_dep, glib]", "[util_dep, cli_dep]")},
            1),
        "meson misses a listed library": (
            {"cli/meson.build": "cli_lib = static_library('c',\n\tdependencies: [glib])\n"}, 1),
        "meson declares out of order": ({"meson.build": "subdir('shape')\nsubdir('util')\nsubdir('cli')\n"}, 1),
        "README drawing disagrees": ({"README.md": readme.replace("→ shape util", "→ shape")}, 1),
        "meson drawing missing": ({"meson.build": meson["meson.build"]}, 1),
    }
    failures = 0
    for name, (change, want) in cases.items():
        with tempfile.TemporaryDirectory() as d:
            files = {f"src/{k}": v for k, v in {**meson, **good}.items()}
            files["src/meson.build"] = meson_drawing + files["src/meson.build"]
            files["README.md"] = readme
            for k, v in change.items():
                files[k if k == "README.md" else f"src/{k}"] = v
            if "meson.build" in change and "drawing" not in name:
                files["src/meson.build"] = meson_drawing + change["meson.build"]
            for k, v in files.items():
                path = pathlib.Path(d, k)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(v)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                got = main(pathlib.Path(d, "src"), layers)
        ok = got == want
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} self-test {name}: exit {got}, expected {want}")
        if not ok:
            print(out.getvalue(), end="")
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    if sys.argv[1:] == ["--draw"]:
        print("\n".join(draw(LAYERS)))
        sys.exit(0)
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "src"))
