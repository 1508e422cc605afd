// SPDX-License-Identifier: GPL-2.0-or-later
/* util/print: one description of each value gives the text or the JSON. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>
#include <glib/gstdio.h>

#include <json-glib/json-glib.h>

#include "util/json.h"
#include "util/print.h"

/* One output: a list of two interfaces, the way show describes them. */
static void describe(void)
{
	print_open_array(NULL);
	for (int i = 0; i < 2; i++) {
		print_open_object(NULL);
		print_string("ifname", "%s:", i ? "wg1" : "wg0");
		print_uint_as("bandwidth", " bandwidth %s", 10000000u * (i + 1), i ? "20Mbit" : "10Mbit");
		print_flag("nat", i, " nat", " nonat");
		print_int("overhead", " overhead %" PRId64, -4 + 64 * i);
		print_double("share", NULL, 0.5);
		print_bool("present", NULL, true);
		print_text("\n");
		if (i)
			print_null("ingress", NULL);
		print_open_array("tins");
		print_uint(PRINT_ELEM, NULL, 7);
		print_close_array();
		print_close_object();
	}
	print_close_array();
}

/* What fn writes on stdout, with json or not. */
static char *capture(bool json, void (*fn)(void))
{
	char path[] = "/tmp/test-print.XXXXXX";
	int fd = g_mkstemp(path), saved;
	char *out = NULL;

	g_assert_cmpint(fd, >=, 0);
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	g_assert_cmpint(dup2(fd, STDOUT_FILENO), ==, STDOUT_FILENO);
	print_begin(json);
	g_assert_true(print_is_json() == json);
	fn();
	g_assert_cmpint(print_end(), ==, 0);
	fflush(stdout);
	g_assert_cmpint(dup2(saved, STDOUT_FILENO), ==, STDOUT_FILENO);
	close(saved);
	close(fd);
	g_assert_true(g_file_get_contents(path, &out, NULL, NULL));
	g_unlink(path);
	return out;
}

static void test_text(void)
{
	g_autofree char *out = capture(false, describe);

	g_assert_cmpstr(out, ==,
			"wg0: bandwidth 10Mbit nonat overhead -4\n"
			"wg1: bandwidth 20Mbit nat overhead 60\n");
}

static void test_json(void)
{
	g_autofree char *out = capture(true, describe);
	g_autofree char *compact = NULL;
	GString *s = g_string_new(NULL);

	/* the same names as the text's, numbers in base units, and nothing text-only */
	for (const char *p = out; *p; p++)
		if (!g_ascii_isspace(*p))
			g_string_append_c(s, *p);
	compact = g_string_free(s, FALSE);
	g_assert_cmpstr(compact, ==,
			"[{\"ifname\":\"wg0\",\"bandwidth\":10000000,\"nat\":false,\"overhead\":-4,"
			"\"share\":0.5,\"present\":true,\"tins\":[7]},"
			"{\"ifname\":\"wg1\",\"bandwidth\":20000000,\"nat\":true,\"overhead\":60,"
			"\"share\":0.5,\"present\":true,\"ingress\":null,\"tins\":[7]}]");
}

static void write_big(void)
{
	print_open_object(NULL);
	print_uint("big", NULL, UINT64_MAX);
	print_close_object();
}

/* JSON has no unsigned 64-bit numbers: a value past INT64_MAX is clamped, never wrapped. */
static void test_clamp(void)
{
	g_autofree char *out = capture(true, write_big);

	g_assert_nonnull(strstr(out, "9223372036854775807"));
	g_assert_null(strstr(out, "-1"));
}

/*
 * JSON is UTF-8 text: a name or a string that is not (a section, key or
 * state file name from outside) is written with \xNN for each stray byte,
 * so that the document always parses; control characters are JSON's \u00NN.
 */
static void write_not_utf8(void)
{
	print_open_object(NULL);
	print_string("name", NULL, "wg\xff");
	print_string("k\xfe\xc3", NULL, "caf\xc3\xa9 \xe2\x82");
	print_string("warning", NULL, "x.conf:3: rtt = '\x1b]0;pwned\x07'");
	print_open_array("files");
	print_string(PRINT_ELEM, NULL, "\xc0\xaf.conf");
	print_close_array();
	print_close_object();
}

static void test_not_utf8(void)
{
	g_autofree char *out = capture(true, write_not_utf8);
	g_autoptr(JsonParser) parser = json_parser_new();
	g_autoptr(GError) err = NULL;
	JsonObject *o;

	g_assert_true(g_utf8_validate(out, -1, NULL));
	g_assert_null(strchr(out, '\x1b'));
	g_assert_true(json_parser_load_from_data(parser, out, -1, &err));
	g_assert_no_error(err);
	o = json_node_get_object(json_parser_get_root(parser));
	g_assert_cmpstr(json_object_get_string_member(o, "name"), ==, "wg\\xff");
	g_assert_cmpstr(json_object_get_string_member(o, "k\\xfe\\xc3"), ==,
			"caf\xc3\xa9 \\xe2\\x82");
	g_assert_cmpstr(json_object_get_string_member(o, "warning"), ==,
			"x.conf:3: rtt = '\x1b]0;pwned\x07'");
	g_assert_cmpstr(json_array_get_string_element(json_object_get_array_member(o, "files"), 0),
			==, "\\xc0\\xaf.conf");
}

/* Names from outside, in the text the way show and check-config print them. */
static void describe_hostile(void)
{
	print_string("ifname", "%s:", "wg\x1b]0;pwned\x07\n0");
	print_string("name", " [interface %s]", "caf\xc3\xa9\xff\xc3");
	print_uint_as("rate", " %s", 8, "1bit");
	/* already escaped: stays as it is */
	print_string(NULL, " %s\n", "wg\\x1b");
}

/*
 * Text is escaped as log lines are: control characters (ESC, BEL, newline)
 * and bytes that are not UTF-8 become \xNN, valid UTF-8 stays, and the
 * format's own newline is kept.
 */
static void test_text_escaped(void)
{
	g_autofree char *out = capture(false, describe_hostile);

	g_assert_cmpstr(out, ==,
			"wg\\x1b]0;pwned\\x07\\x0a0: [interface caf\xc3\xa9\\xff\\xc3] 1bit wg\\x1b\n");
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	print_use_json(&wgshape_json_out); /* linked, not loaded */
	g_test_add_func("/util/print/text", test_text);
	g_test_add_func("/util/print/json", test_json);
	g_test_add_func("/util/print/text-escaped", test_text_escaped);
	g_test_add_func("/util/print/clamp", test_clamp);
	g_test_add_func("/util/print/not-utf8", test_not_utf8);
	return g_test_run();
}
