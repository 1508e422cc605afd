#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# package-test.sh SRC OUT LAB: the Debian packages built from SRC into OUT
# and checked with lintian (tests/tools/build-deb.sh), then installed,
# upgraded, removed and purged in the lab VM (tests/vm/scenario-deb.sh).
set -u
src=$1 out=$2 lab=$3

"$src/tests/tools/build-deb.sh" "$src" "$out" || exit 1
WGSHAPE_DEB_DIR=$(realpath "$out") exec "$lab" run "$src/tests/vm/scenario-deb.sh"
