#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# load.sh's line_for_capacity, without a VM: the tune scenarios' line is a
# third of what the VM moves, clamped to 4..10 Mbit/s, with 1.2 s of buffer,
# and only a VM that cannot carry the floor is refused.
. "$(dirname "$0")/lib.sh"
. "$LAB_DIR/load.sh"

# capacity (bit/s) -> "RATE LIMIT", or "refused"
while read -r cap want; do
	got=$(line_for_capacity "$cap") || got=refused
	expect_eq "line for a VM that moves $cap bit/s" "$want" "$got"
done <<'T'
200000000 10000kbit 1000
30000000 10000kbit 1000
29999999 9900kbit 990
22270000 7400kbit 740
15000000 5000kbit 500
12000000 4000kbit 400
9000000 4000kbit 400
6000000 4000kbit 400
5999999 refused
0 refused
T
finish
