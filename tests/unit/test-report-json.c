/*
 * The JSON writer of the views (report/json.c): escapes, untrusted bytes
 * that are not UTF-8, and "key": value pairs.
 */
#include "report/json.h"

#include <stdlib.h>
#include <string.h>

#include "tests/unit/tap.h"

/* What fn wrote, as a string (the caller frees it). */
static char *json_of(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	rep_json_str(f, s);
	fclose(f);
	return buf;
}

static void check_str(const char *in, const char *want)
{
	char *got = json_of(in);

	CHECK(got && !strcmp(got, want));
	if (got && strcmp(got, want))
		fprintf(stderr, "# json of '%s': got %s, want %s\n", in, got, want);
	free(got);
}

static void test_str(void)
{
	check_str(NULL, "null");
	check_str("", "\"\"");
	check_str("main", "\"main\"");
	check_str("a\"b\\c", "\"a\\\"b\\\\c\"");
	check_str("tab\there\n", "\"tab\\u0009here\\u000a\"");
	check_str("\x7f", "\"\\u007f\"");
	/* the line and paragraph separators: one JSON Lines record, one line */
	check_str("a\xe2\x80\xa8"
		  "b\xe2\x80\xa9",
		  "\"a\\u2028b\\u2029\"");
	/* UTF-8 passes as is */
	check_str("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
	/* not UTF-8: a lone continuation byte, a truncated sequence, an
	 * overlong '/', a surrogate, past U+10FFFF */
	check_str("\x80", "\"\\ufffd\"");
	check_str("\xc3", "\"\\ufffd\"");
	check_str("\xc0\xaf", "\"\\ufffd\\ufffd\"");
	check_str("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");
	check_str("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
}

static void test_pairs(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	bool first = true;

	fputc('{', f);
	rep_json_kstr(f, &first, "name", "x\"y");
	rep_json_ku64(f, &first, "n", 18446744073709551615ULL);
	rep_json_kpct(f, &first, "share", 0.123456);
	rep_json_kbool(f, &first, "ok", true);
	rep_json_kbool(f, &first, "no", false);
	rep_json_kstr(f, &first, "none", NULL);
	fputc('}', f);
	fclose(f);
	CHECK(first == false);
	CHECK(buf && !strcmp(buf, "{\"name\":\"x\\\"y\",\"n\":18446744073709551615,\"share\":0.1235,"
				  "\"ok\":true,\"no\":false,\"none\":null}"));
	free(buf);
}

int main(void)
{
	test_str();
	test_pairs();
	return tap_done();
}
