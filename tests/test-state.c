// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <glib.h>
#include <glib/gstdio.h>

#include "shape/state.h"
#include "util/ifname.h"

static void test_ifname(void)
{
	static const struct {
		const char *name;
		bool ok;
	} t[] = {
		{ "wg0", true },	   { "client", true },	      { "a", true },
		{ "123456789012345", true }, { "1234567890123456", false }, { "", false },
		{ ".", false },	   { "..", false },	      { "a/b", false },
		{ "wg 0", false },	   { "wg\n0", false },	      { "wg:0", false },
		{ "...", true },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++)
		g_assert_cmpint(ifname_is_valid(t[i].name), ==, t[i].ok);
	g_assert_false(ifname_is_valid(NULL));
}

static void test_roundtrip(void)
{
	g_autofree char *dir = g_dir_make_tmp("wgshape-state-XXXXXX", NULL);
	g_autofree char *sub = g_build_filename(dir, "run", "wgshape", NULL);
	static const unsigned char opts[] = { 8, 0, 1, 0, 0x10, 0x27, 0, 0, 0xff };
	struct shape_state st = { 0 }, back = { 0 };
	char **names = NULL;

	st.ifindex = 42;
	st.egress = true;
	g_strlcpy(st.orig_kind, "fq_codel", sizeof(st.orig_kind));
	st.orig_handle = 0x80010000;
	st.orig_options = g_memdup2(opts, sizeof(opts));
	st.orig_options_len = sizeof(opts);
	st.ingress = true;
	g_strlcpy(st.ifb, "ifb4wg0", sizeof(st.ifb));
	g_strlcpy(st.overhead_reason, "WireGuard over IPv4: 60", sizeof(st.overhead_reason));

	/* the directory is created on demand */
	g_assert_cmpint(state_save(sub, "wg0", &st), ==, 0);
	g_assert_cmpint(state_load(sub, "wg0", &back), ==, 0);
	g_assert_cmpint(back.ifindex, ==, 42);
	g_assert_true(back.egress);
	g_assert_cmpstr(back.orig_kind, ==, "fq_codel");
	g_assert_cmphex(back.orig_handle, ==, 0x80010000);
	g_assert_cmpmem(back.orig_options, back.orig_options_len, opts, sizeof(opts));
	g_assert_true(back.ingress);
	g_assert_cmpstr(back.ifb, ==, "ifb4wg0");
	g_assert_cmpstr(back.overhead_reason, ==, "WireGuard over IPv4: 60");
	shape_state_clear(&back);

	/* an egress-only state with the kernel's default qdisc and no options */
	shape_state_clear(&st);
	st.ifindex = 7;
	st.egress = true;
	g_strlcpy(st.orig_kind, "noqueue", sizeof(st.orig_kind));
	g_assert_cmpint(state_save(sub, "client", &st), ==, 0);
	g_assert_cmpint(state_load(sub, "client", &back), ==, 0);
	g_assert_true(back.egress);
	g_assert_false(back.ingress);
	g_assert_cmpuint(back.orig_handle, ==, 0);
	g_assert_null(back.orig_options);
	shape_state_clear(&back);

	g_assert_cmpint(state_list(sub, &names), ==, 0);
	g_assert_cmpuint(g_strv_length(names), ==, 2);
	g_assert_cmpstr(names[0], ==, "client");
	g_assert_cmpstr(names[1], ==, "wg0");
	g_strfreev(names);

	g_assert_cmpint(state_remove(sub, "wg0"), ==, 0);
	g_assert_cmpint(state_remove(sub, "wg0"), ==, 0);
	g_assert_cmpint(state_load(sub, "wg0", &back), ==, -ENOENT);
	g_assert_cmpint(state_remove(sub, "client"), ==, 0);
	g_assert_cmpint(g_rmdir(sub), ==, 0);
	shape_state_clear(&st);
}

static void test_refuses(void)
{
	g_autofree char *dir = g_dir_make_tmp("wgshape-state-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "bad.state", NULL);
	struct shape_state st = { 0 }, back = { .ifindex = 99 };
	char **names = NULL;

	g_assert_cmpint(state_save(dir, "../etc", &st), ==, -EINVAL);
	g_assert_cmpint(state_load(dir, "a/b", &back), ==, -EINVAL);
	/* a torn or hand-edited file is refused, not half-read */
	g_assert_true(g_file_set_contents(path, "[egress]\noriginal-handle=1\n", -1, NULL));
	g_assert_cmpint(state_load(dir, "bad", &back), ==, -EBADMSG);
	g_assert_cmpint(back.ifindex, ==, 99);
	g_assert_true(g_file_set_contents(path, "not a key file", -1, NULL));
	g_assert_cmpint(state_load(dir, "bad", &back), ==, -EBADMSG);
	g_assert_cmpint(g_unlink(path), ==, 0);
	/* a missing directory lists as empty */
	g_assert_cmpint(g_rmdir(dir), ==, 0);
	g_assert_cmpint(state_list(dir, &names), ==, 0);
	g_assert_cmpuint(g_strv_length(names), ==, 0);
	g_strfreev(names);
}

/* A child of this test (same command name), blocked until *release is closed. */
static pid_t spawn_blocked(int *release)
{
	int p[2];
	pid_t pid;
	char c;

	g_assert_cmpint(pipe(p), ==, 0);
	pid = fork();
	g_assert_cmpint(pid, >=, 0);
	if (pid == 0) {
		close(p[1]);
		(void)!read(p[0], &c, 1); /* returns when the parent closes its end */
		_exit(0);
	}
	close(p[0]);
	*release = p[1];
	return pid;
}

static void write_hold(const char *dir, const char *ifname, const char *text)
{
	g_autofree char *file = g_strconcat(ifname, ".hold", NULL);
	g_autofree char *path = g_build_filename(dir, file, NULL);

	g_assert_true(g_file_set_contents(path, text, -1, NULL));
}

static void test_hold(void)
{
	g_autofree char *dir = g_dir_make_tmp("wgshape-state-XXXXXX", NULL);
	g_autofree char *sub = g_build_filename(dir, "run", NULL);
	g_autofree char *other = NULL, *path = NULL;
	char **names = NULL;
	pid_t holder = -1, child;
	int release, status;

	/* none yet; then ours, twice (idempotent) */
	g_assert_cmpint(state_holder(sub, "wg0"), ==, 0);
	g_assert_cmpint(state_hold(sub, "wg0", &holder), ==, 0);
	g_assert_cmpint(holder, ==, 0);
	g_assert_cmpint(state_holder(sub, "wg0"), ==, getpid());
	g_assert_cmpint(state_hold(sub, "wg0", &holder), ==, 0);
	g_assert_cmpint(state_holder(sub, "wg1"), ==, 0);
	/* a hold is not an interface's state */
	g_assert_cmpint(state_list(sub, &names), ==, 0);
	g_assert_null(names[0]);
	g_strfreev(names);
	state_release(sub, "wg0");
	g_assert_cmpint(state_holder(sub, "wg0"), ==, 0);

	/* another live process holds it: busy, and not ours to release */
	child = spawn_blocked(&release);
	other = g_strdup_printf("%d\n", (int)child);
	write_hold(sub, "wg0", other);
	g_assert_cmpint(state_holder(sub, "wg0"), ==, child);
	g_assert_cmpint(state_hold(sub, "wg0", &holder), ==, -EBUSY);
	g_assert_cmpint(holder, ==, child);
	state_release(sub, "wg0");
	g_assert_cmpint(state_holder(sub, "wg0"), ==, child);

	/* it ends without releasing (killed): the hold left behind counts as none */
	close(release);
	g_assert_cmpint(waitpid(child, &status, 0), ==, child);
	g_assert_cmpint(state_holder(sub, "wg0"), ==, 0);
	g_assert_cmpint(state_hold(sub, "wg0", &holder), ==, 0);
	g_assert_cmpint(state_holder(sub, "wg0"), ==, getpid());
	state_release(sub, "wg0");

	/* a live PID of another program (PID 1 is never this test) is no hold */
	write_hold(sub, "wg0", "1\n");
	g_assert_cmpint(state_holder(sub, "wg0"), ==, 0);
	/* nor is what is not a PID */
	write_hold(sub, "wg0", "12x\n");
	g_assert_cmpint(state_holder(sub, "wg0"), ==, 0);
	write_hold(sub, "wg0", "");
	g_assert_cmpint(state_holder(sub, "wg0"), ==, 0);
	g_assert_cmpint(state_hold(sub, "bad/name", &holder), ==, -EINVAL);

	path = g_build_filename(sub, "wg0.hold", NULL);
	g_unlink(path);
	g_rmdir(sub);
	g_rmdir(dir);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/state/ifname", test_ifname);
	g_test_add_func("/state/roundtrip", test_roundtrip);
	g_test_add_func("/state/refuses", test_refuses);
	g_test_add_func("/state/hold", test_hold);
	return g_test_run();
}
