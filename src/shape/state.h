/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What wgshape must remember to undo its work: the root qdisc an interface had
 * before wgshape first touched it, and the IFB it made. One small key file per
 * interface in the state directory (default /run/wgshape), written atomically.
 */
#ifndef WGSHAPE_STATE_H
#define WGSHAPE_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <glib.h>

#include "netlink/cake.h"

struct shape_state {
	int ifindex; /* of the interface when saved: a recreated one is not ours */
	bool egress; /* our cake is the root qdisc; orig_* say what to put back */
	char orig_kind[32];
	uint32_t orig_handle; /* 0: the kernel's default, put back by deleting ours */
	void *orig_options; /* raw TCA_OPTIONS, owned */
	size_t orig_options_len;
	bool ingress; /* our ingress qdisc + redirect + IFB */
	char ifb[16];
	bool in_tree; /* ingress is per-peer: our HTB tree is the IFB's root (peers' upload) */
	uint64_t in_cap; /* in_tree only: the ingress rate for all peers together, bytes/s; 0: none */
	char overhead_reason[192]; /* why the overhead is what it is, for show */
	int overhead; /* the overhead sent, so a hand-set one can be sent again */
	char source[256]; /* who asked: "set", "config", ... (for show, and what apply may undo) */
	bool tree; /* egress is per-peer: our HTB tree is the root (src/shape/tree-plan.h) */
	uint64_t cap; /* tree only: the egress rate for all peers together, bytes/s; 0: none */
	/* tree or in_tree: the options every cake of either tree starts from */
	struct cake_opts tree_opts;
	uint8_t tree_leaf; /* tree or in_tree: enum peer_leaf, the leaf of peers that say none */
	GArray *peers; /* struct peer_want: peers shaped on their own, with their class; or NULL */
};

/*
 * Interface names are per network namespace, so is our state: in a namespace
 * other than PID 1's, base/netns-<inode>. Free with g_free().
 */
char *state_dir_for_netns(const char *base);

void shape_state_clear(struct shape_state *st);
/*
 * Keep each state's text and what it parsed to in memory, so that reading a
 * state back that did not change is a compare, not a parse (the daemon).
 * Off by default: a command reads its state once.
 */
void state_cache_enable(void);
/* A copy of from that owns its own memory (clear it as any other). */
void state_copy(const struct shape_state *from, struct shape_state *to);
/*
 * -ENOENT when there is no state for ifname; -EPERM, -EINVAL, -EFBIG (logged)
 * when the folder or the file is not fit to take orders from: others can
 * write it, it is no regular file, or it is larger than wgshape writes.
 */
int state_load(const char *dir, const char *ifname, struct shape_state *out);
/* A state file's text (what state_load reads) into out; -EBADMSG when it is not one. */
int state_parse(const char *data, size_t len, struct shape_state *out);
/*
 * A string value of a state file (g_key_file_get_string), also one that is
 * not UTF-8, as earlier builds wrote a name cut inside a character:
 * the bytes that are not become U+FFFD, where GLib gives no value at all.
 */
char *state_get_string(GKeyFile *kf, const char *group, const char *key);
/* Atomic: a reader sees the old file or the new one, never a torn one. */
int state_save(const char *dir, const char *ifname, const struct shape_state *st);
/*
 * One peer's entry, for a process that changes only it (`set IFACE peer KEY
 * download RATE`): ifname's state as state_load gives it, but with only that
 * peer in st->peers (none when the state has no entry for key), parsed from
 * the file's groups before its first peer and that peer's own group, not
 * the whole file (at 1,000 peers GKeyFile's parse and text of it were most
 * of the command's time). one keeps the file's text for state_save_one,
 * which writes st's other groups and the peer's group into it in place:
 * the same file state_save would write of the whole state so changed.
 * Free one with state_one_clear. Errors as state_load's; -ENOENT also when
 * the peer has no entry.
 */
struct state_one {
	GString *text; /* the file's, as read */
	gsize first; /* where its first [peer] group starts (text->len: none) */
	gsize start, end; /* the peer's group */
};
int state_load_one(const char *dir, const char *ifname, const uint8_t *key,
		   struct shape_state *st, struct state_one *one);
/* st: what state_load_one gave, changed; its one peer keeps its key. */
int state_save_one(const char *dir, const char *ifname, const struct shape_state *st,
		   const struct state_one *one);
void state_one_clear(struct state_one *one);
/*
 * Write-behind, for a process that changes a state many times a second (the
 * daemon's rate requests): once state_write_behind() gave a kick, a change
 * made through state_borrow (below) is what state_load gives back at once,
 * and its file is written at the next state_flush(); kick(arg) is called on
 * the first change not yet written, to schedule that. Every other save
 * (state_save) is written through.
 */
void state_write_behind(void (*kick)(void *arg), void *arg);
/*
 * Write-behind's short way, for one peer's change (the daemon's rate
 * requests): ifname's state as kept, not a copy, and *peer its entry for key
 * (NULL if none), found by an index. NULL when there is no kept state, or
 * when its file is not the one last read or written (another process's
 * since): state_load then. Change the peer's fields in place (not the list),
 * then state_borrow_changed() for the file to be written behind. The
 * pointers hold until the next call of this module; one thread only.
 */
struct peer_want;
struct shape_state *state_borrow(const char *dir, const char *ifname, const uint8_t *key,
				 struct peer_want **peer);
void state_borrow_changed(const char *dir, const char *ifname);
/*
 * ifname's state as kept, to read only (the daemon's poll: no copy of
 * 1,000 peers every 2 s); NULL as state_borrow's. Holds until the next call
 * of this module.
 */
const struct shape_state *state_peek(const char *dir, const char *ifname);
/*
 * Every state not yet written, to its file. One that another process changed
 * or removed in the meantime is left as that process made it: its interface
 * name goes into lost (char *, may be NULL), for the caller to look at again.
 * 0, or the first write's -errno.
 */
int state_flush(GPtrArray *lost);
/*
 * The same without holding up the caller's loop: the texts of the states
 * not yet written are made (from copies) and written in a thread, each
 * under state_lock; then the default main context learns what became of
 * them and calls done(lost, arg) (lost as state_flush's). A state changed meanwhile stays to be written: kick is
 * called again. false when there was nothing to write (done is not called);
 * a call while one runs is one with it. state_flush_busy(): one runs (run
 * the loop until it ends before state_flush at exit).
 */
bool state_flush_async(void (*done)(GPtrArray *lost, void *arg), void *arg);
bool state_flush_busy(void);
/*
 * Any file of ours in the state folder (IFNAME.state, IFNAME.leases, ...):
 * name in dir, read whole if it is fit to take orders from: a regular file
 * (not a FIFO, which would hang the read, nor a link to /dev/zero, which
 * would never end), ours, at most max bytes. -ENOENT when there is none; a
 * refusal is logged.
 */
int state_file_read(const char *dir, const char *name, size_t max, GString **out);
/* name in dir (made if missing, and checked), atomically. 0 or -errno. */
int state_file_write(const char *dir, const char *name, const char *data, size_t len);
/* 0 also when there was nothing to remove. */
int state_file_remove(const char *dir, const char *name);
/* 0 also when there was nothing to remove. */
int state_remove(const char *dir, const char *ifname);
/*
 * One change at a time across processes (the dispatcher hook and the daemon
 * on one network switch): an exclusive flock on the state folder dir (one
 * per network namespace), held from reading ifname's state to writing it,
 * so that neither takes the other's fresh cake for what was there before.
 * Every whole write of a state (state_save, state_remove) is made under it:
 * write-behind's flush, which writes from a thread, relies on that.
 * Blocks until it is free; a process that dies lets go; no file is left.
 * The fd, for state_unlock; -1 when it could not be taken (an unsafe
 * folder: said where it matters), and the change goes on without it. Not
 * nested: one per process at a time.
 */
int state_lock(const char *dir, const char *ifname);
void state_unlock(int fd);
/*
 * Names with saved state, sorted; free with g_strfreev(). Empty when dir is
 * missing, and when it is refused (-EPERM, logged).
 */
int state_list(const char *dir, char ***names);

/*
 * A hold on an interface: `tune` is measuring it, so the daemon, `apply` and the
 * dispatcher hook leave its shaping alone until the holder ends. The file
 * <ifname>.hold in the state directory names the holder: its PID, its start
 * time and the interface; one whose process is gone (killed, say), or whose
 * PID another process has now, counts as no hold.
 */
/* 0; -EBUSY with *holder set when another live process holds it; -errno. */
int state_hold(const char *dir, const char *ifname, pid_t *holder);
/* A hold file's text, "PID START tune IFNAME", for ifname; -EBADMSG when it is not. */
int hold_parse(const char *text, const char *ifname, pid_t *pid, uint64_t *start);
/* Removes the hold if it is this process's. */
void state_release(const char *dir, const char *ifname);
/* The PID of the live process that holds ifname; 0 if none. */
pid_t state_holder(const char *dir, const char *ifname);

#endif
