/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Cake's names as tc spells them (one table each, for parsing, printing and
 * the errors that list the choices), and merging of partial settings.
 */
#ifndef WGSHAPE_SHAPE_CAKE_H
#define WGSHAPE_SHAPE_CAKE_H

#include <stddef.h>

#include "netlink/cake.h"

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
 * Give every option set does not send (diffserv, nat, wash, ack-filter, rtt,
 * mpu, memlimit) the kernel's default, keeping those set. For a configuration,
 * which is the whole of what is wanted: a key taken out goes back to default.
 */
void cake_opts_fill_defaults(struct cake_opts *o);

#endif
