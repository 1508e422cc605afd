// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * NetworkManager through libnm. The dispatcher's environment carries no SSID
 * and no connection type, so both paths ask NetworkManager itself.
 */
#include <errno.h>
#include <string.h>
#include <NetworkManager.h>

#include "util/log.h"
#include "nm/module.h"
#include "nm/nm.h"

static const char *keep(struct nm_nets *n, const char *s)
{
	return s ? g_string_chunk_insert_const(n->strings, s) : NULL;
}

static struct nm_nets *snapshot(NMClient *client)
{
	struct nm_nets *n = g_new0(struct nm_nets, 1);
	const GPtrArray *acs;
	NMActiveConnection *primary;

	n->strings = g_string_chunk_new(256);
	n->view.unknown = !client || !nm_client_get_nm_running(client);
	if (n->view.unknown)
		return n;
	primary = nm_client_get_primary_connection(client);
	acs = nm_client_get_active_connections(client);
	n->view.nets = g_new0(struct active_net, acs->len ? acs->len : 1);
	for (guint i = 0; i < acs->len; i++) {
		NMActiveConnection *ac = acs->pdata[i];
		const GPtrArray *devs = nm_active_connection_get_devices(ac);
		NMDevice *dev = devs && devs->len ? devs->pdata[0] : NULL;
		struct active_net *a = &n->view.nets[n->view.n];

		switch (nm_active_connection_get_state(ac)) {
		case NM_ACTIVE_CONNECTION_STATE_ACTIVATED:
			break;
		case NM_ACTIVE_CONNECTION_STATE_ACTIVATING:
		case NM_ACTIVE_CONNECTION_STATE_DEACTIVATING:
			/* Between two networks: deciding now would clear, then re-add. */
			n->view.unknown = true;
			continue;
		default:
			continue;
		}
		a->id = keep(n, nm_active_connection_get_id(ac));
		a->uuid = keep(n, nm_active_connection_get_uuid(ac));
		a->type = keep(n, nm_active_connection_get_connection_type(ac));
		a->primary = ac == primary;
		if (dev) {
			const char *ip = nm_device_get_ip_iface(dev);

			a->iface = keep(n, ip ? ip : nm_device_get_iface(dev));
		}
		if (dev && NM_IS_DEVICE_WIFI(dev)) {
			NMAccessPoint *ap = nm_device_wifi_get_active_access_point(NM_DEVICE_WIFI(dev));
			GBytes *ssid = ap ? nm_access_point_get_ssid(ap) : NULL;

			if (ssid) {
				gsize len;
				const guint8 *data = g_bytes_get_data(ssid, &len);
				g_autofree char *utf8 = nm_utils_ssid_to_utf8(data, len);

				a->ssid = keep(n, utf8);
			}
		}
		n->view.n++;
	}
	return n;
}

/*
 * Without this, a new client asks NetworkManager for the caller's
 * permissions, one polkit check each, before it is ready: a cost on every
 * dispatcher call for something wgshape never uses.
 */
#define CLIENT_FLAGS NM_CLIENT_INSTANCE_FLAGS_NO_AUTO_FETCH_PERMISSIONS

static int nets_get(struct nm_nets **out)
{
	g_autoptr(GError) err = NULL;
	g_autoptr(NMClient) client = NULL;

	client = g_initable_new(NM_TYPE_CLIENT, NULL, &err, NM_CLIENT_INSTANCE_FLAGS,
				(guint)CLIENT_FLAGS, NULL);
	if (!client) {
		/* No system bus at all (a container, a server): no networks. */
		log_debug("NetworkManager: %s", err ? err->message : "no client");
		*out = snapshot(NULL);
		return 0;
	}
	*out = snapshot(client);
	return 0;
}

struct nm_watch {
	NMClient *client;
	struct pending *pending; /* while the client is being made */
	nm_changed_fn fn;
	void *arg;
};

/* Outlives a watch freed before its client is ready. */
struct pending {
	GCancellable *cancel;
	struct nm_watch *w; /* NULL once the watch is gone */
};

static void changed(struct nm_watch *w)
{
	w->fn(w->arg);
}

static void on_notify(GObject *obj, GParamSpec *pspec, gpointer data)
{
	changed(data);
}

static void watch_device(struct nm_watch *w, NMDevice *dev)
{
	/* Roaming to another access point changes the SSID a profile may match. */
	if (NM_IS_DEVICE_WIFI(dev))
		g_signal_connect(dev, "notify::" NM_DEVICE_WIFI_ACTIVE_ACCESS_POINT,
				 G_CALLBACK(on_notify), w);
}

static void watch_active(struct nm_watch *w, NMActiveConnection *ac)
{
	g_signal_connect(ac, "notify::" NM_ACTIVE_CONNECTION_STATE, G_CALLBACK(on_notify), w);
}

static void on_ac_added(NMClient *client, NMActiveConnection *ac, gpointer data)
{
	watch_active(data, ac);
	changed(data);
}

static void on_ac_removed(NMClient *client, NMActiveConnection *ac, gpointer data)
{
	changed(data);
}

static void on_device_added(NMClient *client, NMDevice *dev, gpointer data)
{
	watch_device(data, dev);
}

static void on_ready(GObject *src, GAsyncResult *res, gpointer data)
{
	struct pending *p = data;
	struct nm_watch *w = p->w;
	g_autoptr(GError) err = NULL;
	NMClient *client;
	const GPtrArray *arr;

	client = NM_CLIENT(g_async_initable_new_finish(G_ASYNC_INITABLE(src), res, &err));
	g_object_unref(p->cancel);
	g_free(p);
	if (!w) {
		g_clear_object(&client);
		return;
	}
	w->pending = NULL;
	w->client = client;
	if (!w->client) {
		log_info("NetworkManager: not followed (%s)", err->message);
		changed(w); /* no networks, then: profiles decide on that */
		return;
	}
	g_signal_connect(w->client, "notify::" NM_CLIENT_NM_RUNNING, G_CALLBACK(on_notify), w);
	g_signal_connect(w->client, "notify::" NM_CLIENT_PRIMARY_CONNECTION, G_CALLBACK(on_notify),
			 w);
	g_signal_connect(w->client, NM_CLIENT_ACTIVE_CONNECTION_ADDED, G_CALLBACK(on_ac_added), w);
	g_signal_connect(w->client, NM_CLIENT_ACTIVE_CONNECTION_REMOVED,
			 G_CALLBACK(on_ac_removed), w);
	g_signal_connect(w->client, NM_CLIENT_DEVICE_ADDED, G_CALLBACK(on_device_added), w);
	arr = nm_client_get_active_connections(w->client);
	for (guint i = 0; i < arr->len; i++)
		watch_active(w, arr->pdata[i]);
	arr = nm_client_get_devices(w->client);
	for (guint i = 0; i < arr->len; i++)
		watch_device(w, arr->pdata[i]);
	log_info("NetworkManager: following it%s",
		 nm_client_get_nm_running(w->client) ? "" : " (not running yet)");
	changed(w);
}

static int watch_new(nm_changed_fn fn, void *arg, struct nm_watch **out)
{
	struct nm_watch *w = g_new0(struct nm_watch, 1);

	w->fn = fn;
	w->arg = arg;
	w->pending = g_new0(struct pending, 1);
	w->pending->cancel = g_cancellable_new();
	w->pending->w = w;
	g_async_initable_new_async(NM_TYPE_CLIENT, G_PRIORITY_DEFAULT, w->pending->cancel, on_ready,
				   w->pending, NM_CLIENT_INSTANCE_FLAGS, (guint)CLIENT_FLAGS, NULL);
	*out = w;
	return 0;
}

static void watch_free(struct nm_watch *w)
{
	if (!w)
		return;
	if (w->pending) {
		w->pending->w = NULL;
		g_cancellable_cancel(w->pending->cancel);
	}
	if (w->client) {
		g_signal_handlers_disconnect_by_data(w->client, w);
		g_clear_object(&w->client);
	}
	g_free(w);
}

static int watch_nets(struct nm_watch *w, struct nm_nets **out)
{
	*out = snapshot(w->client);
	return 0;
}

/* What nm/loader.c finds with dlsym(). */
__attribute__((visibility("default"))) extern const struct nm_module wgshape_nm_module;
const struct nm_module wgshape_nm_module = {
	.nets_get = nets_get,
	.watch_new = watch_new,
	.watch_free = watch_free,
	.watch_nets = watch_nets,
};
