/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * IFNAME.adapt in the state folder: what an adapter (daemon/adapter.c)
 * does, for `show` and the metrics. A key file: group [adapt] (server,
 * lost, stamped), then one group per direction it adapts (egress, ingress,
 * download) with rates in bit/s. This file is its one reader and writer.
 */
#ifndef WGSHAPE_DAEMON_ADAPTER_STATE_H
#define WGSHAPE_DAEMON_ADAPTER_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ADAPT_STATE_SUFFIX ".adapt"

enum { ADAPTER_EGRESS, ADAPTER_INGRESS, ADAPTER_DOWNLOAD, ADAPTER_NDIRS };

/* The directions' group names, by ADAPTER_*. */
extern const char *const adapter_dir_names[ADAPTER_NDIRS];

struct adapter_state_dir {
	bool on; /* the group is there: this direction adapts */
	uint64_t rate, applied, min, base, max, load; /* bit/s */
	int64_t baseline_us, delay_us;		      /* delay_us: added over the baseline */
	uint64_t rtt_us;
	int64_t changed; /* CLOCK_REALTIME s of the last change; 0: none yet */
	char why[16];	 /* adapt_why_name() of the last change; "": not said */
};

struct adapter_state {
	char server[64]; /* the far end it probes; "": not said */
	bool lost;	 /* it stopped answering: base rates */
	bool stamped;
	struct adapter_state_dir dir[ADAPTER_NDIRS];
};

/* Write ifname's state (atomically, as state_file_write() does). 0 or -errno. */
int adapter_state_save(const char *statedir, const char *ifname, const struct adapter_state *st);
/* Read it back: 0, -ENOENT when there is none, -EINVAL when it is not a key file. */
int adapter_state_load(const char *statedir, const char *ifname, struct adapter_state *out);
/* The same from the file's text. */
int adapter_state_parse(const char *data, size_t len, struct adapter_state *out);
/* Remove it (the adapter stopped). */
void adapter_state_remove(const char *statedir, const char *ifname);

#endif
