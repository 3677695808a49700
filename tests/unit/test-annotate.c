/*
 * psup annotate's part in report/: the sampled addresses of one function
 * read from record files (two runs of one build add up per address; code
 * inlined into it counts, other functions do not), close names, and the
 * listing's marks, line sums and inline headings.
 */
#include "report/annotate.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/report.h"
#include "tests/unit/tap.h"

static char tmpdir[] = "/tmp/psup-test-annotate-XXXXXX";

struct node {
	uint64_t id, parent, loc;
};

/* A run of thread 100 with these locs, nodes and (node, count) pairs, and
 * an end record. */
static int write_record(const char *path, const struct rep_loc *locs, size_t nlocs, const struct node *nodes,
			size_t nnodes, const uint64_t *pairs, size_t npairs)
{
	struct rep_header h = { .mode = "run", .pid = 100, .mono_ns = 1, .event = "task-clock", .period = 1000000, .clock_event = true };
	struct rep_thread t = { .tid = 100, .pid = 100, .time = 2 };
	struct rep_end e = { .time = 9, .reason = "exit" };
	struct rep_writer *w;
	int rc;

	for (size_t i = 0; i < npairs; i++)
		e.samples += pairs[2 * i + 1];
	if (rep_writer_open(path, REP_WRITER_FORCE, &w))
		return -1;
	rc = rep_write_header(w, &h);
	rc |= rep_write_thread(w, &t);
	for (size_t i = 0; i < nlocs; i++)
		rc |= rep_write_loc(w, &locs[i]);
	for (size_t i = 0; i < nnodes; i++)
		rc |= rep_write_node(w, nodes[i].id, nodes[i].parent, nodes[i].loc);
	rc |= rep_write_samples(w, 100, pairs, npairs);
	rc |= rep_write_end(w, &e);
	rc |= rep_writer_close(w);
	return rc;
}

/* compute at 0x10 (app.c:5) 7 samples, at 0x14 (helper inlined, app.h:2)
 * 3; main at 0x40 5. id_base renumbers locs and nodes, as another run. */
static int write_run(const char *path, uint64_t id_base)
{
	struct rep_frame f1[] = { { "compute", "/src/app.c", 5 } };
	struct rep_frame f2[] = { { "helper", "/src/app.h", 2 }, { "compute", "/src/app.c", 6 } };
	struct rep_frame f3[] = { { "main", "/src/app.c", 20 } };
	struct rep_loc l[] = {
		{ id_base + 1, 100, 0x1010, "/nonexistent/app", "abcd", 0x10, 1, f1 },
		{ id_base + 2, 100, 0x1014, "/nonexistent/app", "abcd", 0x14, 2, f2 },
		{ id_base + 3, 100, 0x1040, "/nonexistent/app", "abcd", 0x40, 1, f3 },
	};
	struct node n[] = { { id_base + 1, 0, id_base + 1 }, { id_base + 2, 0, id_base + 2 }, { id_base + 3, 0, id_base + 3 } };
	uint64_t pairs[] = { id_base + 1, 7, id_base + 2, 3, id_base + 3, 5 };

	return write_record(path, l, 3, n, 3, pairs, 3);
}

/* compute at 0x10 and 0x14 in a loc with "image": null (the model calls
 * the image "[unknown]"). Found by fuzz-exports: annotate kept the image
 * NULL, and its listing and psup annotate's grouping read it. */
static int write_run_no_image(const char *path)
{
	struct rep_frame f1[] = { { "compute", "/src/app.c", 5 } };
	struct rep_loc l[] = { { 1, 100, 0x1010, NULL, NULL, 0x10, 1, f1 }, { 2, 100, 0x1014, NULL, NULL, 0x14, 1, f1 } };
	struct node n[] = { { 1, 0, 1 }, { 2, 0, 2 } };
	uint64_t pairs[] = { 1, 2, 2, 3 };

	return write_record(path, l, 2, n, 2, pairs, 2);
}

/* compute's loc under main's in the stacks, every sample in main itself:
 * compute has no sampled address (psup annotate exits 1 for it). */
static int write_run_unsampled(const char *path)
{
	struct rep_frame fc[] = { { "compute", "/src/app.c", 5 } }, fm[] = { { "main", "/src/app.c", 20 } };
	struct rep_loc l[] = { { 2, 100, 0x1040, "/nonexistent/app", NULL, 0x40, 1, fm },
			       { 1, 100, 0x1010, "/nonexistent/app", NULL, 0x10, 1, fc } };
	/* node 1: main (sampled); node 2: compute, called from main */
	struct node n[] = { { 1, 0, 2 }, { 2, 1, 1 } };
	uint64_t pairs[] = { 1, 4 };

	return write_record(path, l, 2, n, 2, pairs, 1);
}

/* MANY addresses of compute, at 4 * k in image (build-id abcd), sampled
 * k % 5 + 1 times each, in an order that their sorting changes; ids from
 * id_base. Found by a fuzzing campaign:
 * each new address was compared with every row before it (100,000
 * addresses took 7.7 s). */
#define MANY 20000
static int write_run_many(const char *path, uint64_t id_base, const char *image)
{
	struct rep_frame f[] = { { "compute", "/src/app.c", 5 } };
	struct rep_loc *l = calloc(MANY, sizeof(*l));
	struct node *n = calloc(MANY, sizeof(*n));
	uint64_t *pairs = calloc(2 * MANY, sizeof(*pairs));
	int rc = -1;

	if (l && n && pairs) {
		for (size_t i = 0; i < MANY; i++) {
			size_t k = i * 7919 % MANY;

			l[i] = (struct rep_loc){ id_base + i + 1, 100, 0x1000 + 4 * k, image, "abcd", 4 * k, 1, f };
			n[i] = (struct node){ id_base + i + 1, 0, id_base + i + 1 };
			pairs[2 * i] = id_base + i + 1;
			pairs[2 * i + 1] = k % 5 + 1;
		}
		rc = write_record(path, l, MANY, n, MANY, pairs, MANY);
	}
	free(l);
	free(n);
	free(pairs);
	return rc;
}

int main(void)
{
	char a_path[128], b_path[128], err[256], *buf = NULL;
	const struct rep_annotate_addr *addrs;
	const char *names[4];
	struct rep_annotate *a;
	size_t n = 0, len = 0;
	FILE *out;

	if (!mkdtemp(tmpdir))
		return 1;
	snprintf(a_path, sizeof(a_path), "%s/a.cbor", tmpdir);
	snprintf(b_path, sizeof(b_path), "%s/b.cbor", tmpdir);
	CHECK(write_run(a_path, 0) == 0);
	CHECK(write_run(b_path, 100) == 0);

	CHECK(rep_annotate_new("compute", &a) == 0);
	CHECK(rep_annotate_load(a, a_path, err, sizeof(err)) == 0);
	CHECK(rep_annotate_load(a, b_path, err, sizeof(err)) == 0);
	addrs = rep_annotate_addrs(a, &n);
	CHECK_EQ_INT(n, 2); /* main's address is not compute's */
	if (n == 2) {
		CHECK_EQ_INT(addrs[0].offset, 0x10);
		CHECK_EQ_INT(addrs[0].samples, 14); /* both runs */
		CHECK_EQ_INT(addrs[1].offset, 0x14);
		CHECK_EQ_INT(addrs[1].samples, 6);
		CHECK_EQ_INT(addrs[1].nframes, 2);
		CHECK(!strcmp(addrs[1].build_id, "abcd"));
	}

	struct rep_annotate_insn ins[3] = {
		{ 0x10, "imul rax, rcx", 1, { { "compute", "/src/app.c", 5 } } },
		{ 0x14, "add rax, rdx", 2, { { "helper", "/src/app.h", 2 }, { "compute", "/src/app.c", 6 } } },
		{ 0x18, "ret", 1, { { "compute", "/src/app.c", 7 } } },
	};
	out = open_memstream(&buf, &len);
	CHECK(rep_annotate_print("compute", addrs, n, ins, 3, out) == 0);
	fclose(out);
	CHECK(strstr(buf, "Samples of compute in /nonexistent/app: 20 (self 14, in inlined "
			  "functions 6)\n") != NULL);
	CHECK(strstr(buf, "*   70.00%       14  app.c:5\n") != NULL);
	CHECK(strstr(buf, ">   70.00%       14                10:  imul rax, rcx\n") != NULL);
	CHECK(strstr(buf, "    30.00%        6    app.h:2 [inlined helper]\n") != NULL);
	CHECK(strstr(buf, "                18:  ret\n") != NULL);
	CHECK(strstr(buf, "no source lines") == NULL);
	CHECK(strstr(buf, "outside") == NULL);
	free(buf);

	/* no lines at all: one line saying so; a sample off the listing: said */
	struct rep_annotate_insn bare[1] = { { 0x10, "imul rax, rcx", 1, { { "compute", NULL, 0 } } } };
	buf = NULL;
	out = open_memstream(&buf, &len);
	CHECK(rep_annotate_print("compute", addrs, n, bare, 1, out) == 0);
	fclose(out);
	CHECK(strstr(buf, "\nno source lines:") != NULL);
	CHECK(strstr(buf, "6 samples at addresses outside the listed instructions") != NULL);
	free(buf);

	/* The source lines: a regular file's shown; a FIFO's (a record can
	 * name any path) neither read nor waited for: its open once blocked
	 * psup annotate for good (found by fuzzing). */
	char src[160], fifo[160];
	FILE *sf;

	snprintf(src, sizeof(src), "%s/src.c", tmpdir);
	snprintf(fifo, sizeof(fifo), "%s/src.fifo", tmpdir);
	sf = fopen(src, "w");
	CHECK(sf && fputs("int first_line;\n", sf) >= 0 && fclose(sf) == 0);
	CHECK(mkfifo(fifo, 0600) == 0);
	struct rep_annotate_insn srcs[2] = {
		{ 0x10, "imul rax, rcx", 1, { { "compute", src, 1 } } },
		{ 0x14, "add rax, rdx", 1, { { "compute", fifo, 1 } } },
	};
	alarm(20); /* a hang fails the test, not the suite's time */
	buf = NULL;
	out = open_memstream(&buf, &len);
	CHECK(rep_annotate_print("compute", addrs, n, srcs, 2, out) == 0);
	fclose(out);
	alarm(0);
	CHECK(buf && strstr(buf, "int first_line;") != NULL);
	free(buf);
	unlink(src);
	unlink(fifo);
	rep_annotate_free(a);

	CHECK(write_run_unsampled(a_path) == 0);
	CHECK(rep_annotate_new("compute", &a) == 0);
	CHECK(rep_annotate_load(a, a_path, err, sizeof(err)) == 0);
	rep_annotate_addrs(a, &n);
	CHECK_EQ_INT(n, 0);
	rep_annotate_free(a);
	CHECK(write_run(a_path, 0) == 0);

	CHECK(rep_annotate_new("comput", &a) == 0);
	CHECK(rep_annotate_load(a, a_path, err, sizeof(err)) == 0);
	rep_annotate_addrs(a, &n);
	CHECK_EQ_INT(n, 0);
	n = rep_annotate_close_names(a, names, 4);
	CHECK(n >= 1 && !strcmp(names[0], "compute"));
	for (size_t i = 0; i < n; i++)
		CHECK(strcmp(names[i], "main") != 0); /* not close */
	rep_annotate_free(a);

	/* a loc without an image: in "[unknown]", as the report says */
	CHECK(write_run_no_image(a_path) == 0);
	CHECK(rep_annotate_new("compute", &a) == 0);
	CHECK(rep_annotate_load(a, a_path, err, sizeof(err)) == 0);
	addrs = rep_annotate_addrs(a, &n);
	CHECK_EQ_INT(n, 2);
	if (n == 2) {
		CHECK(addrs[0].image && !strcmp(addrs[0].image, "[unknown]"));
		CHECK(addrs[1].image && !strcmp(addrs[1].image, "[unknown]"));
		CHECK(addrs[0].build_id == NULL);
		struct rep_annotate_insn sampled[2] = {
			{ addrs[0].offset, NULL, 1, { { "compute", "/src/app.c", 5 } } },
			{ addrs[1].offset, NULL, 1, { { "compute", "/src/app.c", 5 } } },
		};
		buf = NULL;
		out = open_memstream(&buf, &len);
		CHECK(rep_annotate_print("compute", addrs, n, sampled, 2, out) == 0);
		fclose(out);
		CHECK(strstr(buf, "Samples of compute in [unknown]: 5 (self 5,") != NULL);
		free(buf);
	}
	rep_annotate_free(a);

	/* Many addresses: two runs of one image add up per address, another
	 * image's same offsets are rows of their own, and a file loaded after
	 * the rows were read (sorted) still finds them. */
	CHECK(write_run_many(a_path, 0, "/nonexistent/app") == 0);
	CHECK(write_run_many(b_path, 7 * MANY, "/nonexistent/app") == 0);
	CHECK(rep_annotate_new("compute", &a) == 0);
	CHECK(rep_annotate_load(a, a_path, err, sizeof(err)) == 0);
	CHECK(rep_annotate_load(a, b_path, err, sizeof(err)) == 0);
	addrs = rep_annotate_addrs(a, &n);
	CHECK_EQ_INT(n, MANY);
	CHECK(rep_annotate_load(a, a_path, err, sizeof(err)) == 0);
	addrs = rep_annotate_addrs(a, &n);
	CHECK_EQ_INT(n, MANY);
	CHECK(write_run_many(b_path, 3 * MANY, "/nonexistent/other") == 0);
	CHECK(rep_annotate_load(a, b_path, err, sizeof(err)) == 0);
	addrs = rep_annotate_addrs(a, &n);
	CHECK_EQ_INT(n, 2 * MANY);
	{
		size_t bad = 0;

		for (size_t i = 0; i < n; i++) {
			bool app = !strcmp(addrs[i].image, "/nonexistent/app");
			uint64_t k = addrs[i].offset / 4;

			bad += addrs[i].samples != (app ? 3 : 1) * (k % 5 + 1);
		}
		CHECK_EQ_INT(bad, 0);
	}
	rep_annotate_free(a);

	unlink(a_path);
	unlink(b_path);
	rmdir(tmpdir);
	return tap_done();
}
