// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>

#include "internal.h"
#include "proto/rate.h"

_Static_assert(RATE_MSG_SIZE <= RATE_MSG_MAX, "a message must fit what the server reads");

/* Where each field is (rate.h has the whole layout). */
enum {
	OFF_MAGIC = 0,
	OFF_VERSION = 4,
	OFF_TYPE = 5,
	OFF_STATUS = 6,
	OFF_RESERVED = 7,
	OFF_TOKEN = 8,
	OFF_LEASE = 12,
	OFF_RATE = 16,
	OFF_FALLBACK = 24,
};

/* A request never carries a status: one that does is no request of ours. */
static bool type_status_valid(unsigned int type, unsigned int status)
{
	if (type != RATE_REQUEST && type != RATE_ANSWER)
		return false;
	if (status >= RATE_STATUS_MAX)
		return false;
	return type == RATE_ANSWER || status == RATE_NONE;
}

int rate_msg_encode(const struct rate_msg *m, void *buf, size_t size)
{
	uint8_t *b = buf;

	if (size < RATE_MSG_SIZE)
		return -ENOBUFS;
	if (!type_status_valid((unsigned int)m->type, (unsigned int)m->status))
		return -EINVAL;
	put_be32(b + OFF_MAGIC, RATE_MAGIC);
	/* a lower version answers an older client in the layout it knows */
	b[OFF_VERSION] = m->version && m->version < RATE_VERSION ? m->version : RATE_VERSION;
	b[OFF_TYPE] = (uint8_t)m->type;
	b[OFF_STATUS] = (uint8_t)m->status;
	b[OFF_RESERVED] = 0;
	put_be32(b + OFF_TOKEN, m->token);
	put_be32(b + OFF_LEASE, m->lease);
	put_be64(b + OFF_RATE, m->rate);
	put_be64(b + OFF_FALLBACK, m->fallback);
	return 0;
}

int rate_msg_parse(const void *buf, size_t len, struct rate_msg *out)
{
	const uint8_t *b = buf;

	if (len < RATE_MSG_SIZE || get_be32(b + OFF_MAGIC) != RATE_MAGIC)
		return -EBADMSG;
	if (b[OFF_VERSION] == 0)
		return -EBADMSG;
	/* checked before the version: the server must know a request to answer it */
	if (b[OFF_TYPE] != RATE_REQUEST && b[OFF_TYPE] != RATE_ANSWER)
		return -EBADMSG;
	if (b[OFF_VERSION] > RATE_VERSION) {
		/* a newer version may mean more by the rest; these three it keeps */
		out->version = b[OFF_VERSION];
		out->type = (enum rate_type)b[OFF_TYPE];
		out->token = get_be32(b + OFF_TOKEN);
		return -EPROTONOSUPPORT;
	}
	if (!type_status_valid(b[OFF_TYPE], b[OFF_STATUS]))
		return -EBADMSG;
	*out = (struct rate_msg){
		.version = b[OFF_VERSION],
		.type = (enum rate_type)b[OFF_TYPE],
		.status = (enum rate_status)b[OFF_STATUS],
		.token = get_be32(b + OFF_TOKEN),
		.lease = get_be32(b + OFF_LEASE),
		.rate = get_be64(b + OFF_RATE),
		.fallback = get_be64(b + OFF_FALLBACK),
	};
	return 0;
}

bool rate_accept(size_t len, uint16_t from_port, uint16_t own_port)
{
	return len >= RATE_MSG_SIZE && len <= RATE_MSG_MAX && from_port >= 1024 &&
	       from_port != own_port;
}

static const char *const status_names[RATE_STATUS_MAX] = {
	[RATE_NONE] = "none",
	[RATE_APPLIED] = "applied",
	[RATE_CLAMPED] = "clamped",
	[RATE_DEFAULT] = "default",
	[RATE_REFUSED] = "refused",
	[RATE_FAILED] = "failed",
	[RATE_UNSUPPORTED] = "unsupported",
};

const char *rate_status_str(enum rate_status s)
{
	if ((unsigned int)s >= RATE_STATUS_MAX || !status_names[s])
		return "?";
	return status_names[s];
}
