# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by the command-line checks. conf_dir WGSHAPE BUILD NAME: print a
# new folder (mode 0755) for a test configuration, below none that others
# can write (wgshape refuses a configuration there, /tmp among them): the
# first of $XDG_RUNTIME_DIR, /run and BUILD where WGSHAPE's check-config
# accepts one. Non-zero when none does.
conf_dir() {
	local wgshape=$1 build=$2 name=$3 base d
	for base in "${XDG_RUNTIME_DIR:-}" /run "$build"; do
		[ -n "$base" ] && [ -d "$base" ] || continue
		d=$(mktemp -d "$base/$name.XXXXXX" 2>/dev/null) || continue
		chmod 0755 "$d"
		printf '[interface wg0]\negress = 10mbit\n' >"$d/probe.conf"
		chmod 0644 "$d/probe.conf"
		if "$wgshape" -c "$d/probe.conf" check-config >/dev/null 2>&1; then
			rm -f "$d/probe.conf"
			echo "$d"
			return 0
		fi
		rm -rf "$d"
	done
	return 1
}
