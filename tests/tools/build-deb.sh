#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# build-deb.sh SRC OUT: build the Debian packages from SRC's tracked files
# (a copy in OUT/src, so the checkout stays clean) with
# `dpkg-buildpackage -us -uc -b` (the unit tests skipped: they run on their
# own), then run lintian on them: any error or warning fails (a deliberate
# tag is overridden in debian/*.lintian-overrides, with its reason). The
# .debs are left in OUT for tests/vm/scenario-deb.sh.
set -u
src=$1
out=$2

for t in dpkg-buildpackage lintian dh; do
	command -v "$t" >/dev/null || { echo "$t is missing (tests/packages.txt installs it)"; exit 1; }
done
rm -rf "$out"
mkdir -p "$out/src"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$src" && git ls-files -z | xargs -0 cp --parents -t "$out/src") || exit 1
else
	(cd "$src" && tar --exclude='./build*' --exclude=./.lab-cache -cf - .) | tar -xf - -C "$out/src" || exit 1
fi

t0=$EPOCHREALTIME
if ! (cd "$out/src" && DEB_BUILD_OPTIONS=nocheck dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1; then
	echo "dpkg-buildpackage failed:"
	tail -30 "$out/build.log"
	exit 1
fi
echo "dpkg-buildpackage -us -uc -b: $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }') s"
for d in "$out"/*.deb; do
	echo "  ${d##*/}: $(stat -c %s "$d") bytes; $(dpkg-deb -f "$d" Depends)"
done

# lintian says "running with root privileges is not recommended" as root
lint=$(lintian --fail-on error,warning "$out"/*.changes 2>&1)
rc=$?
mapfile -t tags < <(grep -v 'running with root privileges' <<<"$lint")
[ "${#tags[@]}" = 0 ] || printf '  lintian: %s\n' "${tags[@]}"
if [ "$rc" != 0 ]; then
	echo "lintian: errors or warnings (exit $rc)"
	exit 1
fi
echo "lintian: no errors, no warnings"
