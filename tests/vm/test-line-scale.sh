#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# load.sh's line_for_capacity, without a VM: the tune scenarios' line is a
# third of what the VM moves, clamped to 8..10 Mbit/s, with 1.2 s of buffer,
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
27000000 9000kbit 900
24000000 8000kbit 800
22270000 8000kbit 800
12000000 8000kbit 800
11999999 refused
0 refused
T
finish
