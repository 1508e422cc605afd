/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Cake's names as tc spells them (one table each, for parsing, printing and
 * the errors that list the choices), and merging of partial settings.
 */
#ifndef WGSHAPE_SHAPE_CAKE_H
#define WGSHAPE_SHAPE_CAKE_H

#include <stdbool.h>
#include <stdbool.h>
#include <stddef.h>

#include "netlink/cake.h"

/*
 * The words that each pick one value of one option, family by family, as tc
 * spells them. A family's words are indexed by the option's value (for the
 * booleans, 0 names "off"); one table gives set's words, the configuration's
 * values, show's text and JSON, --help and the errors that list the choices.
 */
enum cake_family {
	CAKE_WORDS_DIFFSERV, /* besteffort diffserv3 diffserv4 diffserv8 precedence */
	CAKE_WORDS_FLOW, /* flowblind srchost ... triple-isolate */
	CAKE_WORDS_NAT, /* nonat nat */
	CAKE_WORDS_WASH, /* nowash wash */
	CAKE_WORDS_SPLIT_GSO, /* no-split-gso split-gso */
	CAKE_WORDS_ACK, /* no-ack-filter ack-filter ack-filter-aggressive */
	CAKE_WORDS_ATM, /* noatm atm ptm */
	CAKE_WORDS_MAX,
};

/* The word for value, or NULL for a value this build has no word for. */
const char *cake_word(enum cake_family f, uint32_t value);
/* The value word stands for in f, or -EINVAL. */
int cake_word_value(enum cake_family f, const char *word);
/* Every word of f in tc's order, joined by sep (", " or "|"), into buf; returns buf. */
const char *cake_word_choices(enum cake_family f, const char *sep, char *buf, size_t len);
/* Set the option that word (of any family) picks; false when it is none of them. */
bool cake_word_set(struct cake_opts *o, const char *word);
/* The value of f's option in o; false when o does not have it. */
bool cake_word_get(const struct cake_opts *o, enum cake_family f, uint32_t *value);

/* tc's rtt presets: the rtt in microseconds for name (datacentre ... interplanetary). */
int cake_rtt_preset(const char *name, uint32_t *rtt);
const char *cake_rtt_preset_choices(const char *sep, char *buf, size_t len);

/* The diffserv and ack-filter families by their older names. */
const char *cake_diffserv_name(uint32_t mode);
int cake_diffserv_from_name(const char *name);
const char *cake_ack_name(uint32_t mode);
int cake_ack_from_name(const char *name);
/* Every name, joined by sep (", " or "|"), into buf; returns buf. */
const char *cake_diffserv_choices(const char *sep, char *buf, size_t len);
const char *cake_ack_choices(const char *sep, char *buf, size_t len);
/* Tin names for a diffserv mode ("Bulk", "Best Effort", ...); NULL past the end. */
const char *cake_tin_name(uint32_t diffserv, unsigned int tin);

/* Copy every option set in src into dst (later settings win). */
void cake_opts_merge(struct cake_opts *dst, const struct cake_opts *src);
/*
 * Give every option set does not send (diffserv, flow isolation, nat, wash,
 * split-gso, ack-filter, rtt, mpu, atm, fwmark, memlimit) the kernel's
 * default, keeping those set. For a configuration, which is the whole of what
 * is wanted: a key taken out goes back to default. Raw needs no default: the
 * overhead, always sent, ends it.
 */
void cake_opts_fill_defaults(struct cake_opts *o);
/* Does have (as the kernel reports it) already carry every option want sets? */
bool cake_opts_hold(const struct cake_opts *have, const struct cake_opts *want);

#endif
