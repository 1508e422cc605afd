// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * util/text and the log: what comes from outside is shown escaped (control
 * characters and bytes that are not UTF-8 as \xNN) and, quoted, cut short.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>
#include <glib/gstdio.h>

#include "util/err.h"
#include "util/log.h"
#include "util/text.h"

static void test_escape(void)
{
	static const struct {
		const char *in, *out;
	} t[] = {
		{ "", "" },
		{ "wg0 egress 10mbit", "wg0 egress 10mbit" },
		{ "back\\slash 'quote' \"dq\"", "back\\slash 'quote' \"dq\"" },
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x88",
		  "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x88" },
		/* terminal controls: CSI, OSC with BEL, a bare ESC, DEL */
		{ "a\x1b[2Jb", "a\\x1b[2Jb" },
		{ "\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07" },
		{ "\x1b" "c\x7f", "\\x1bc\\x7f" },
		{ "one\ntwo\r\tthree", "one\\x0atwo\\x0d\\x09three" },
		/* C1 controls, valid UTF-8 that some terminals act on (U+009B is CSI) */
		{ "\xc2\x9b" "2J\xc2\x85", "\\xc2\\x9b2J\\xc2\\x85" },
		/* not UTF-8: a stray byte, a sequence cut short, an overlong '/', a surrogate */
		{ "wg\xff", "wg\\xff" },
		{ "\xe2\x82", "\\xe2\\x82" },
		{ "\xe2\x82x", "\\xe2\\x82x" },
		{ "\xc0\xaf", "\\xc0\\xaf" },
		{ "\xed\xa0\x80", "\\xed\\xa0\\x80" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		g_autofree char *got = text_escape(t[i].in);

		g_assert_cmpstr(got, ==, t[i].out);
		g_assert_true(g_utf8_validate(got, -1, NULL));
	}
}

static void test_quote(void)
{
	g_autofree char *a64 = g_strnfill(TEXT_QUOTE_MAX, 'a');
	g_autofree char *a65 = g_strnfill(TEXT_QUOTE_MAX + 1, 'a');
	g_autofree char *huge = g_strnfill(5 << 20, 'x');
	g_autofree char *a64dots = g_strconcat(a64, "...", NULL);
	g_autoptr(GString) worst = g_string_new(NULL);
	char buf[TEXT_QUOTE_SIZE];

	g_assert_cmpstr(TEXT_QUOTE(NULL), ==, "");
	g_assert_cmpstr(TEXT_QUOTE("wg0"), ==, "wg0");
	g_assert_cmpstr(TEXT_QUOTE(a64), ==, a64);
	g_assert_cmpstr(TEXT_QUOTE(a65), ==, a64dots);
	g_assert_cmpuint(strlen(TEXT_QUOTE(huge)), ==, TEXT_QUOTE_MAX + 3);
	/* characters, not bytes: 64 euro signs are kept whole */
	for (int i = 0; i < TEXT_QUOTE_MAX; i++)
		g_string_append(worst, "\xe2\x82\xac");
	g_assert_cmpstr(TEXT_QUOTE(worst->str), ==, worst->str);
	/* the longest a quote can be: every character an escaped C1 control, then "..." */
	g_string_truncate(worst, 0);
	for (int i = 0; i <= TEXT_QUOTE_MAX; i++)
		g_string_append(worst, "\xc2\x9b");
	text_quote(buf, sizeof(buf), worst->str, TEXT_QUOTE_MAX);
	g_assert_cmpuint(strlen(buf), ==, TEXT_QUOTE_MAX * 8 + 3);
	g_assert_true(g_str_has_suffix(buf, "\\xc2\\x9b..."));
}

/* What log_msg writes on stderr for one message. */
static char *logged(const char *value)
{
	char path[] = "/tmp/test-text.XXXXXX";
	int fd = g_mkstemp(path), saved;
	char *out = NULL;

	g_assert_cmpint(fd, >=, 0);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	g_assert_cmpint(dup2(fd, STDERR_FILENO), ==, STDERR_FILENO);
	log_warn("%s: unknown key '%s'", "/etc/wgshape/wgshape.conf:3", value);
	fflush(stderr);
	g_assert_cmpint(dup2(saved, STDERR_FILENO), ==, STDERR_FILENO);
	close(saved);
	close(fd);
	g_assert_true(g_file_get_contents(path, &out, NULL, NULL));
	g_unlink(path);
	return out;
}

/* A log line is one line of text whatever a message quotes. */
/* text_copy cuts between characters, never inside one (issue 28, item 10). */
static void test_copy(void)
{
	static const struct {
		const char *s;
		size_t size;
		const char *want;
		bool cut;
	} t[] = {
		{ "abc", 4, "abc", false },
		{ "abcd", 4, "abc", true },
		{ "ab\u00e9", 5, "ab\u00e9", false }, /* 2 + 2 bytes and NUL: fits */
		{ "ab\u00e9", 4, "ab", true }, /* not "ab\xc3" */
		{ "abc\u00e9", 4, "abc", true },
		{ "ab\u00e9", 3, "ab", true },
		{ "a\u20ac", 3, "a", true }, /* three bytes, two would fit */
		{ "\U0001f600x", 4, "", true }, /* four bytes */
		{ "\U0001f600x", 5, "\U0001f600", true },
		{ NULL, 4, "", false },
		{ "", 1, "", false },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		char buf[16];

		memset(buf, 'z', sizeof(buf));
		g_assert_cmpint(text_copy(buf, t[i].size, t[i].s), ==, t[i].cut);
		g_assert_cmpstr(buf, ==, t[i].want);
	}
}

static void test_log(void)
{
	g_autofree char *plain = logged("speed");
	g_autofree char *hostile = logged("a\x1b]0;pwned\x07\nwgshape: all is well\xff");

	g_assert_cmpstr(plain, ==,
			"wgshape: warning: /etc/wgshape/wgshape.conf:3: unknown key 'speed'\n");
	g_assert_cmpstr(hostile, ==,
			"wgshape: warning: /etc/wgshape/wgshape.conf:3: unknown key "
			"'a\\x1b]0;pwned\\x07\\x0awgshape: all is well\\xff'\n");
}

/* err_say: the message in the caller's buffer, cut short, never overrun; the -errno back. */
static void test_err_say(void)
{
	char err[16] = "untouched", none[1] = { 'x' };

	g_assert_cmpint(err_say(err, sizeof(err), -EINVAL, "'%s' is not a rate", "5"), ==, -EINVAL);
	g_assert_cmpstr(err, ==, "'5' is not a ra"); /* 15 and the NUL */
	g_assert_cmpint(err_say(err, 4, -EPERM, "%s", "abcdef"), ==, -EPERM);
	g_assert_cmpstr(err, ==, "abc");
	g_assert_cmpint(err_say(none, 0, -EIO, "%s", "nothing written"), ==, -EIO);
	g_assert_cmpint(none[0], ==, 'x');
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/util/text/escape", test_escape);
	g_test_add_func("/util/text/quote", test_quote);
	g_test_add_func("/util/text/copy", test_copy);
	g_test_add_func("/util/text/log", test_log);
	g_test_add_func("/util/err/say", test_err_say);
	return g_test_run();
}
