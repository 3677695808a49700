/*
 * The HTML page's pieces (report/html.c): the JSON string escaper for
 * <script>, the flame graph's data (preorder, heaviest child first, names
 * numbered as used) plain and differential, and the whole page of an empty
 * and of a small profile.
 */
#include "report/html.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/fixture.h"
#include "tests/unit/tap.h"

static char tmpdir[] = "/tmp/psup-test-html-XXXXXX";

static char *js_str(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	rep_html_js_str(f, s);
	fclose(f);
	return buf;
}

static void test_js_str(void)
{
	char *s;

	s = js_str("a\"b\\c");
	CHECK(s && !strcmp(s, "\"a\\\"b\\\\c\""));
	free(s);
	/* nothing that ends or changes a <script> element, nor a line break
	 * JavaScript reads inside a string (U+2028, U+2029) */
	s = js_str("x</script><!--&>\xe2\x80\xa8\xe2\x80\xa9");
	CHECK(s && !strcmp(s, "\"x\\u003c/script\\u003e\\u003c!--\\u0026\\u003e\\u2028\\u2029\""));
	free(s);
	/* control characters and bytes that are not UTF-8: '?' */
	s = js_str("e\x1b[31m\xc2\x9b\xff\xc3\xa9\n");
	CHECK(s && !strcmp(s, "\"e?[31m??\xc3\xa9?\""));
	free(s);
	s = js_str(NULL);
	CHECK(s && !strcmp(s, "null"));
	free(s);
}

/* main -> a (na samples), main -> b (nb), main -> c (nc; none when 0), all
 * in /app. */
static int write_profile(const char *path, uint64_t na, uint64_t nb, uint64_t nc)
{
	struct rep_header h = { .mode = "run", .pid = 100, .mono_ns = 1000, .event = "task-clock", .period = 1000000, .clock_event = true };
	struct rep_thread t = { 100, 100, 0, "app", 1000, 0 };
	struct rep_frame f_main[] = { { "main", "app.c", 10 } };
	struct rep_frame f_a[] = { { "a", "app.c", 20 } };
	struct rep_frame f_b[] = { { "b", "app.c", 30 } };
	struct rep_frame f_c[] = { { "c", "app.c", 40 } };
	struct rep_loc locs[] = {
		{ 1, 100, 0x1000, "/app", NULL, 0x1000, 1, f_main },
		{ 2, 100, 0x1010, "/app", NULL, 0x1010, 1, f_a },
		{ 3, 100, 0x1020, "/app", NULL, 0x1020, 1, f_b },
		{ 4, 100, 0x1030, "/app", NULL, 0x1030, 1, f_c },
	};
	uint64_t s[] = { 2, na, 3, nb, 4, nc };
	struct rep_end e = { .time = 10000, .reason = "exit", .samples = na + nb + nc };
	struct rep_writer *w;
	int rc;

	rc = rep_writer_open(path, REP_WRITER_FORCE, &w);
	if (rc)
		return rc;
	rc = rep_write_header(w, &h);
	rc = rc ? rc : rep_write_thread(w, &t);
	for (size_t i = 0; !rc && i < 4; i++)
		rc = rep_write_loc(w, &locs[i]);
	for (uint64_t i = 1; !rc && i <= 4; i++)
		rc = rep_write_node(w, i, i == 1 ? 0 : 1, i);
	rc = rc ? rc : rep_write_samples(w, 100, s, nc ? 3 : 2);
	rc = rc ? rc : rep_write_end(w, &e);
	if (rc) {
		rep_writer_close(w);
		return rc;
	}
	return rep_writer_close(w);
}

static struct rep_profile *load(const char *name, uint64_t na, uint64_t nb, uint64_t nc)
{
	struct rep_profile *p = NULL;
	char path[256], err[512];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	if (write_profile(path, na, nb, nc) || rep_profile_new(&p))
		return NULL;
	if (rep_profile_load(p, path, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		rep_profile_free(p);
		return NULL;
	}
	return p;
}

static void test_flame(void)
{
	struct rep_profile *base = load("base.cbor", 30, 10, 0), *now = load("new.cbor", 10, 30, 5);
	struct rep_ctree tb, tn;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	memset(&tb, 0, sizeof(tb));
	memset(&tn, 0, sizeof(tn));
	CHECK(base && now);
	if (!base || !now)
		goto out;
	CHECK_EQ_INT(rep_ctree_top_down(&tb, base), 0);
	CHECK_EQ_INT(rep_ctree_top_down(&tn, now), 0);
	f = open_memstream(&buf, &len);
	if (!f)
		goto out;
	CHECK_EQ_INT(rep_html_flame(f, NULL, &tn, "one"), 0);
	CHECK_EQ_INT(rep_html_flame(f, &tb, &tn, "two"), 0);
	fclose(f);
	CHECK(buf && strstr(buf, "<div class=\"flame\" id=\"one\">"));
	/* six numbers per node in preorder (parent, name, image, inclusive,
	 * self, flags), the heaviest child first; names numbered as used */
	CHECK(buf && strstr(buf, "<script type=\"application/json\" id=\"one-data\">"
				 "{\"total\":45,\"nodes\":[0,0,0,45,0,0,0,1,2,45,0,0,1,3,2,30,30,0,"
				 "1,4,2,10,10,0,1,5,2,5,5,0],\"names\":[\"\",\"main\",\"/app\",\"b\","
				 "\"a\",\"c\"]}</script>\n"));
	CHECK(buf && strstr(buf, "<script>psupFlame(\"one\");</script>"));
	/* only the differential graph has a base tree */
	CHECK(buf && !strstr(buf, "id=\"one-base\""));
	CHECK(buf && strstr(buf, "<script type=\"application/json\" id=\"two-base\">"
				 "{\"total\":40,\"nodes\":[0,0,0,40,0,0,0,1,2,40,0,0,1,3,2,30,30,0,"
				 "1,4,2,10,10,0],\"names\":[\"\",\"main\",\"/app\",\"a\",\"b\"]}"));
	CHECK(buf && strstr(buf, "<script>psupFlame(\"two\");</script>"));
	/* a page to look at: PSUP_TEST_HTML=FILE keeps one */
	if (buf && getenv("PSUP_TEST_HTML")) {
		FILE *page = fopen(getenv("PSUP_TEST_HTML"), "w");

		if (page) {
			rep_html_begin(page, "differential flame graph");
			rep_html_flame(page, &tb, &tn, "diff");
			rep_html_end(page);
			fclose(page);
		}
	}
out:
	free(buf);
	rep_ctree_release(&tb);
	rep_ctree_release(&tn);
	rep_profile_free(base);
	rep_profile_free(now);
}

static void test_page(void)
{
	struct rep_options o = { .format = REP_FORMAT_HTML };
	struct rep_profile *p = load("page.cbor", 3, 1, 0);
	char *s;

	CHECK(p != NULL);
	if (!p)
		return;
	s = fx_render_ext(p, &o, NULL);
	CHECK(s && !strncmp(s, "<!DOCTYPE html>", 15) && strstr(s, "</html>\n"));
	/* the script and the style inline, nothing fetched */
	CHECK(s && strstr(s, "function psupFlame(") && strstr(s, ".flame-svg"));
	CHECK(s && !strstr(s, " src=") && !strstr(s, "<link") && !strstr(s, "url("));
	CHECK(s && strstr(s, "<b id=\"total-samples\">4</b>"));
	CHECK(s && strstr(s, "id=\"flame-graph-data\">{\"total\":4,"));
	/* the functions table: a row per function, a count and a share */
	CHECK(s && strstr(s, "<tr><td class=\"r\">3</td><td class=\"r\">75.0%</td>"));
	free(s);
	rep_profile_free(p);
	/* an empty profile: a page, no flame graph */
	CHECK_EQ_INT(rep_profile_new(&p), 0);
	s = fx_render_ext(p, &o, NULL);
	CHECK(s && strstr(s, "</html>\n") && !strstr(s, "flame-graph-data"));
	free(s);
	rep_profile_free(p);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_js_str();
	test_flame();
	test_page();
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
	return tap_done();
}
