/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * /etc/wgshape/wgshape.conf and conf.d/NAME.conf: which interfaces to shape and
 * how. INI read with GLib's GKeyFile; values go through the very parser the
 * command line uses (shape_words_parse), so both accept the same words.
 *
 * A bad value or an unknown key is a warning with file:line and that one
 * assignment is skipped; the rest of the file still applies.
 */
#ifndef WGSHAPE_CONFIG_H
#define WGSHAPE_CONFIG_H

#include <stdbool.h>
#include <sys/types.h>
#include <glib.h>

#include "channel/policy.h"
#include "profile/profile.h"
#include "shape/shape.h"

#define CONFIG_DEFAULT_PATH "/etc/wgshape/wgshape.conf"

/* An [interface NAME] section, or a [network NAME] profile. */
/*
 * What a [network NAME] profile has beyond shaping (download and server also
 * in a client's [interface] section).
 */
struct conf_network {
	struct net_match match; /* connection-id, connection-uuid, ssid, connection-type */
	char **tunnels; /* interface = the tunnels it shapes (globs), NULL-terminated */
	uint64_t download; /* download = ask the server for this rate (bytes/s); 0: not given */
	char *server; /* server = the server's tunnel address (a literal); NULL: found */
};

/*
 * A server's rate channel policy (src/channel/, proto/rate.h): keys of an
 * [interface] section and of a [peer] section (which win for that peer).
 */
struct conf_rate {
	int client_download; /* client-download = yes (1), no (0); -1 not given */
	uint64_t min, max; /* client-download-min, -max, bytes/s; 0: not given */
};

/*
 * Continuous adaptation (src/daemon/adapt.c): adapt = yes and the range each
 * controlled direction's rate moves in. The base rates are the section's
 * egress, ingress and (in a [network] profile) download.
 */
struct conf_adapt {
	bool on; /* adapt = yes */
	uint64_t egress_min, egress_max; /* bytes/s; 0: not given (base / 10, base) */
	uint64_t ingress_min, ingress_max;
	/*
	 * download-min/-max, with download = only: in an [interface] without it,
	 * the old spelling of conf_rate's (check.c moves them there, with a warning)
	 */
	uint64_t download_min, download_max;
	char *log; /* adapt-log = PATH: the controllers' trace; NULL: none */
};

/* A section that says how to shape: [interface NAME] or [network NAME]. */
struct conf_section {
	char *name; /* [interface]: an exact name or a glob (wg*); [network]: the profile's name */
	char *where; /* "file:line" of the section, for messages */
	GPtrArray *words; /* the section as set's words, in order (later win) */
	struct shape_request req; /* parsed from words */
	int enforce; /* -1: the daemon's default */
	struct conf_rate rate; /* [interface] only */
	struct conf_adapt adapt;
	bool network; /* a [network] profile: net says when and where it applies */
	bool glob; /* [interface] only: name is a glob */
	struct conf_network net; /* [network] only */
};

/* A [peer NAME] section: one WireGuard peer's download, shaped at the server. */
struct conf_peer {
	char *name; /* the label show gives it */
	char *where; /* "file:line" of the section */
	uint8_t key[32]; /* public-key, WG_KEY_LEN */
	bool has_key;
	char **ifaces; /* interface = globs, NULL-terminated; NULL: every WireGuard interface */
	uint64_t download; /* bytes/s; 0: not given */
	uint64_t upload; /* bytes/s, shaped on the IFB by source address; 0: not given */
	/*
	 * adapt = yes: the server's daemon follows this peer's line alone
	 * (src/daemon/peer-adapt.c), its download between adapt_min and
	 * adapt_max (bytes/s; download / 10 and download when not given),
	 * probing probe (an address; NULL: the peer's /32 or /128)
	 */
	bool adapt;
	uint64_t adapt_min, adapt_max;
	char *probe;
	struct conf_rate rate; /* over its interface's */
	GPtrArray *words; /* its cake's options as set's words */
};

struct config {
	GPtrArray *ifaces; /* struct conf_section *, [interface NAME] in the order first seen */
	GPtrArray *peers; /* struct conf_peer *, [peer NAME] in the order first seen */
	GPtrArray *networks; /* struct conf_section *, [network NAME] profiles in file order */
	bool enforce; /* [daemon] enforce, default yes */
	bool clear_on_exit; /* [daemon] clear-on-exit, default no */
	unsigned int rate_port; /* [daemon] rate-port, default RATE_PORT; 0: no rate channel */
	unsigned int client_lease; /* [daemon] client-lease, seconds, default RATE_LEASE_S */
	char *metrics_file; /* [daemon] metrics-file, an absolute path; NULL: none */
	unsigned int metrics_every; /* [daemon] metrics-every, seconds, default METRICS_EVERY_S */
	/* [daemon] leaf-idle, seconds, default LEAF_IDLE_S: a lazy leaf's peer is idle after it */
	unsigned int leaf_idle;
	GPtrArray *warnings; /* char *, "file:line: ...", one line of UTF-8 (util/text.h) */
	GPtrArray *files; /* char *, the files read */
	GHashTable *texts; /* file -> GBytes, the text its part came from (config_reload) */
	GHashTable *index; /* config.c's own: the sections by group name, while files are read */
	GHashTable *peer_keys; /* config.c's own: peers by key (WG_KEY_LEN bytes), once all are read */
};

#define METRICS_EVERY_S 15
#define LEAF_IDLE_S 600

struct config *config_new(void);
void config_free(struct config *cfg);
typedef struct config config_t;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(config_t, config_free)

/*
 * Parse one file's text into cfg (merging sections of the same name).
 * Problems become warnings in cfg; returns -EBADMSG only when the text is
 * not INI at all (then the file is skipped as a whole, with a warning).
 */
int config_parse_data(struct config *cfg, const char *file, const char *data, size_t len);

/*
 * Read path and then every *.conf in the conf.d folder beside it, in name
 * order. Refuses (-EPERM, err says why: util/err.h) a file or folder that anyone but
 * root can write, and so a file below a folder others can write (each
 * folder on its resolved path up to /, /tmp too); a file that is not a
 * regular one (-EINVAL: a FIFO is not waited on) or larger than any
 * configuration (-EFBIG). Each file is opened once, and what is checked is
 * the open file. A missing path is -ENOENT unless must_exist is false.
 */
int config_load(const char *path, bool must_exist, struct config **out, char *err, size_t errlen);

/*
 * config_load for a daemon that has prev loaded: a file that is no longer
 * INI at all gives what its text in prev gave (its last good text), with one
 * warning naming it and GLib's reason, instead of being skipped whole; so a
 * typo saved in one file does not drop its sections on a reload. prev NULL:
 * config_load.
 */
int config_reload(const char *path, bool must_exist, const struct config *prev,
		  struct config **out, char *err, size_t errlen);

/*
 * config_load for a command: path, or the default (which may be missing: an
 * empty configuration); every warning logged. NULL (logged) when unusable.
 */
struct config *config_load_logged(const char *path);
/* The same with config_reload's prev. */
struct config *config_reload_logged(const char *path, const struct config *prev);

/* Does mode leave a file writable only by its owner and root? (safe_mode()) */
bool config_mode_safe(uid_t uid, gid_t gid, mode_t mode);

/* The section for ifname: an exact name beats a glob; then the first glob. */
const struct conf_section *config_match(const struct config *cfg, const char *ifname);

/* Does any [interface] section or [network] profile name ifname? */
/*
 * Of the profiles config_networks_for() gave for ifname, the one the networks
 * in view choose (profile_choose's rules, why says why); NULL when none does.
 */
const struct conf_section *config_network_choose(const GPtrArray *profs,
						 const struct net_view *nets, const char *ifname,
						 char *why, size_t whylen);

bool config_mentions(const struct config *cfg, const char *ifname);

/*
 * Does the daemon follow ifname's WireGuard peers (reshape its per-peer tree
 * when they change)? That also puts back whatever was changed by hand, so
 * only where enforce holds: its section's, else the [daemon]'s (an
 * interface shaped per peer by hand included).
 */
bool config_follows_peers(const struct config *cfg, const char *ifname);

/*
 * The [peer] sections for ifname as peer_want (src/shape/peers.h), appended
 * to out: those whose interface = names it, and those with no interface =
 * whose key is one of present (WG_KEY_LEN bytes each; the peers ifname has).
 */
void config_peers_for(const struct config *cfg, const char *ifname, const uint8_t *present,
		      size_t n_present, GArray *out);

/*
 * The rate channel's policy for the peer key on ifname: its [peer] section's
 * keys over the [interface] section's; fallback its [peer] download. Not
 * allowed unless one of them says client-download = yes.
 */
void config_rate_policy(const struct config *cfg, const char *ifname, const uint8_t *key,
			struct rate_policy *out);
/* The name of key's [peer] section for ifname, or NULL. */
const char *config_peer_name(const struct config *cfg, const char *ifname, const uint8_t *key);
/* key's [peer] section for ifname (none: NULL). */
const struct conf_peer *config_peer(const struct config *cfg, const char *ifname,
				    const uint8_t *key);

/*
 * Does a [network] profile for ifname say download = (so that the client asks
 * its server for a rate on every network, its own where no profile applies)?
 */
bool config_client_download(const struct config *cfg, const char *ifname);

/*
 * The server's tunnel address the configuration names for ifname, for a
 * request made by hand: server = of its [interface] section, else of the
 * first of its [network] profiles that says one; NULL when none does. *where
 * (may be NULL): the section's "file:line".
 */
const char *config_client_server(const struct config *cfg, const char *ifname,
				 const char **where);

/* The [network] profiles whose interface = names ifname, in file order (appended to out). */
void config_networks_for(const struct config *cfg, const char *ifname, GPtrArray *out);

#endif
