/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A server's leases, kept across daemon restarts: the file IFNAME.leases in
 * the state directory (beside IFNAME.state), one line per lease:
 *
 *   KEY RATE UNTIL
 *
 * KEY the peer's public key in base64 (44 characters), RATE bytes/s in
 * decimal, UNTIL the lease's end in seconds of CLOCK_BOOTTIME (which counts
 * on through suspend and starts again at boot, when the state directory, a
 * tmpfs, is empty again). Written atomically; read with the state files'
 * care (a file others can write, or that is not a regular one, is refused).
 */
#ifndef WGSHAPE_CHANNEL_LEASE_H
#define WGSHAPE_CHANNEL_LEASE_H

#include <stddef.h>
#include <stdint.h>
#include <glib.h>

#include "channel/policy.h"

#define LEASE_SUFFIX ".leases"
/* more leases than peers an interface can shape (TREE_PEER_MINOR_LAST) are not read */
#define LEASE_MAX 65536

/* Now, in seconds of CLOCK_BOOTTIME. */
int64_t lease_now(void);

/*
 * The leases in text (a lease file's content) appended to out (struct
 * rate_lease). A line that is not a lease is skipped; returns how many were
 * skipped. Never more than LEASE_MAX leases; a key given twice: the last wins.
 */
int lease_parse(const char *text, size_t len, GArray *out);

/*
 * ifname's leases appended to out. 0 also when there is no file; -EPERM,
 * -EINVAL, -EFBIG (logged) for a file not fit to read (state.h's rules).
 */
int lease_load(const char *dir, const char *ifname, GArray *out);

/*
 * Write ifname's leases (those live at now; none: the file is removed).
 * Atomic. 0 or -errno.
 */
int lease_save(const char *dir, const char *ifname, const struct rate_lease *leases, size_t n,
	       int64_t now);

/*
 * Put key's lease at rate until until into ifname's file (replacing its
 * last one), or take it out (rate 0). Leases that ended are dropped on the
 * way. 0 or -errno.
 */
int lease_put(const char *dir, const char *ifname, const uint8_t *key, uint64_t rate,
	      int64_t until, int64_t now);

/*
 * Write-behind, for the daemon, which changes leases many times a second:
 * once kick is given, loads keep each interface's leases with the file's
 * text (a load whose file did not change is a compare, not a parse), and
 * lease_put changes the kept leases only: lease_load gives them back at
 * once, and the file is written at the next lease_flush. kick(arg) is
 * called on the first change not yet written. NULL: off (and forgotten).
 */
void lease_write_behind(void (*kick)(void *arg), void *arg);
/*
 * The leases not yet written (those live at now), to their files. A file
 * another process changed or removed in the meantime stays as it is: its
 * interface name goes into lost (char *, may be NULL), to be looked at
 * again. 0, or the first write's -errno.
 */
int lease_flush(int64_t now, GPtrArray *lost);

/*
 * Remove the lease files of interfaces without a state file (IFNAME.state):
 * wgshape shapes nothing there any more (cleared, by hand or on exit), so
 * their leases shape nothing either, and kept they would come back if the
 * interface were shaped again. The names of the interfaces whose file went
 * are appended to removed (char *, g_free; may be NULL). 0 or -errno (a
 * state folder refused: state.h's rules; a missing one is 0).
 */
int lease_drop_orphans(const char *dir, GPtrArray *removed);

#endif
