// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The netlink module's plumbing that needs no kernel feature: the WireGuard
 * dumper's thread and hand-over (kernel.h's wg_dumper). It asks for an
 * interface no host has, so the dump fails the same way whatever the kernel
 * (no WireGuard: -EOPNOTSUPP; WireGuard: -ENODEV); what is tested is where
 * and when the answer arrives. The dumps themselves are the VM's to test.
 */
#include <errno.h>
#include <glib.h>

#include "netlink/kernel.h"

#define NO_SUCH "wgshape-none0"

struct seen {
	unsigned int calls;
	GThread *thread; /* the thread done ran in */
	int r, ifindex;
	int64_t at;
	size_t n;
};

static void on_done(void *arg, const char *ifname, int ifindex, int64_t at, int r,
		    struct wg_peer *peers, size_t n)
{
	struct seen *s = arg;

	g_assert_cmpstr(ifname, ==, NO_SUCH);
	s->calls++;
	s->thread = g_thread_self();
	s->r = r;
	s->ifindex = ifindex;
	s->at = at;
	s->n = n;
	wg_peers_free(peers, n);
}

/* Runs the default context until the dumper has nothing under way for NO_SUCH. */
static void wait_idle(struct wg_dumper *w)
{
	while (wg_dumper_busy(w, NO_SUCH))
		g_main_context_iteration(NULL, TRUE);
}

static void test_dumper(void)
{
	struct seen s = { 0 };
	struct wg_dumper *w = wg_dumper_new(on_done, &s);
	int64_t before = g_get_monotonic_time();

	/* asked twice while under way: one dump, one answer, in this thread */
	g_assert_cmpint(wg_dumper_ask(w, NO_SUCH, 42), ==, 0);
	g_assert_true(wg_dumper_busy(w, NO_SUCH));
	g_assert_cmpint(wg_dumper_ask(w, NO_SUCH, 42), ==, 0);
	g_assert_cmpuint(s.calls, ==, 0); /* never before the loop runs */
	wait_idle(w);
	g_assert_cmpuint(s.calls, ==, 1);
	g_assert_true(s.thread == g_thread_self());
	g_assert_cmpint(s.r, <, 0);
	g_assert_cmpint(s.ifindex, ==, 42);
	g_assert_cmpint(s.n, ==, 0);
	g_assert_cmpint(s.at, >=, before);
	g_assert_cmpint(s.at, <=, g_get_monotonic_time());
	/* no other answer comes */
	while (g_main_context_iteration(NULL, FALSE))
		;
	g_assert_cmpuint(s.calls, ==, 1);

	/* a name no interface can have: refused at once */
	g_assert_cmpint(wg_dumper_ask(w, "a-name-longer-than-15", 1), ==, -EINVAL);
	g_assert_false(wg_dumper_busy(w, "a-name-longer-than-15"));

	/* freed while a dump is under way: done is not called */
	g_assert_cmpint(wg_dumper_ask(w, NO_SUCH, 7), ==, 0);
	wg_dumper_free(w);
	{
		/* a second dumper's answer comes after the first's dropped one (one worker, in order) */
		struct seen t = { 0 };
		struct wg_dumper *w2 = wg_dumper_new(on_done, &t);

		g_assert_cmpint(wg_dumper_ask(w2, NO_SUCH, 8), ==, 0);
		wait_idle(w2);
		while (g_main_context_iteration(NULL, FALSE))
			;
		g_assert_cmpuint(t.calls, ==, 1);
		g_assert_cmpint(t.ifindex, ==, 8);
		wg_dumper_free(w2);
	}
	g_assert_cmpuint(s.calls, ==, 1);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/netlink/wg-dumper", test_dumper);
	return g_test_run();
}
