#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# check-linking.sh BUILDDIR: install the build into a scratch DESTDIR and ask
# ldd what the installed programs load. wgshape (the dispatcher hook, set,
# show, the daemon) must load none of libcurl, libmicrohttpd, libnm,
# json-glib and libsystemd, whatever the linker's --as-needed does (the split
# is in meson's dependency lists); wgshape-measure, which runs tune and serve,
# must load libcurl and libmicrohttpd, and the modules libnm and json-glib
# (or this check would pass on a build that dropped them everywhere).
set -u
build=$1
dest=$(mktemp -d "${TMPDIR:-/tmp}/wgshape-install.XXXXXX")
trap 'rm -rf "$dest"' EXIT
meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >/dev/null 2>&1 ||
	{ echo "FAIL meson install -C $build --destdir $dest"; exit 1; }
core=$(find "$dest" -type f -name wgshape -perm -u+x | head -1)
measure=$(find "$dest" -type f -name wgshape-measure -perm -u+x | head -1)
nm=$(find "$dest" -type f -name wgshape-nm.so | head -1)
json=$(find "$dest" -type f -name wgshape-json.so | head -1)
[ -n "$core" ] && [ -n "$measure" ] && [ -n "$nm" ] && [ -n "$json" ] ||
	{ echo "FAIL wgshape, wgshape-measure or a module is not installed"; exit 1; }
fails=0
check() { # WHAT PROGRAM WANT(yes|no) LIB
	if ldd "$2" | grep -q "$4"; then got=yes; else got=no; fi
	if [ "$got" = "$3" ]; then
		echo "ok   $1 ${2#"$dest"} loads $4: $got"
	else
		echo "FAIL $1 ${2#"$dest"} loads $4: $got, expected $3"
		fails=$((fails + 1))
	fi
}
for lib in libcurl libmicrohttpd libnm libjson-glib libsystemd; do
	check core "$core" no $lib
done
check measure "$measure" yes libcurl
check measure "$measure" yes libmicrohttpd
check module "$nm" yes libnm
check module "$json" yes libjson-glib
echo "wgshape loads $(ldd "$core" | grep -c '=>') shared libraries, wgshape-measure $(ldd "$measure" | grep -c '=>')"
[ "$fails" = 0 ]
