/*
 * libFuzzer entry point for what psup report does past the views: the
 * exports (pprof, folded, speedscope, coz-jsonl), psup diff of two sets of
 * runs (and of a set against itself), and psup annotate's listing of the
 * sampled addresses. Any input must either load and print, or fail with a
 * one-line -EINVAL, without crashing, hanging or leaking.
 * The input is up to four record files separated by FUZZ_NEXT: the first
 * half (rounded up) are the BASE runs, the rest the NEW runs; one file is
 * compared with itself. Build and run: see docs/format.md ("Fuzzing the
 * reader"); tests/fuzz/make-corpus.sh makes the seeds.
 */
#include "report/annotate.h"
#include "report/diff.h"
#include "report/profile.pb-c.h"
#include "report/report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#define FUZZ_NEXT "\n--psup-fuzz-next-file--\n"
#define FUZZ_MAX_FILES 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct piece {
	const uint8_t *p;
	size_t len;
};

static FILE *devnull;

/* A failed load or comparison must be a clean one: -EINVAL or -ENOMEM
 * with a one-line reason. */
static void check_failure(int rc, const char *err)
{
	if (rc != -EINVAL && rc != -ENOMEM)
		abort();
	if (!err[0] || strchr(err, '\n'))
		abort();
}

/* p loaded from files pieces[0..n); NULL when one of them does not load. */
static struct rep_profile *load_side(const struct piece *pieces, size_t n)
{
	struct rep_profile *p;
	char err[256];

	if (rep_profile_new(&p))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		int rc;

		err[0] = '\0';
		rc = rep_profile_load_buf(p, pieces[i].p, pieces[i].len, "fuzz", err, sizeof(err));
		if (rc) {
			check_failure(rc, err);
			rep_profile_free(p);
			return NULL;
		}
	}
	return p;
}

/* The gzipped profile.proto must unpack, and its ids and string indices
 * must point inside it (pprof rejects a profile where they do not). */
static void check_pprof(const char *buf, size_t len)
{
	Perftools__Profiles__Profile *pb;
	size_t cap = 1 << 20, n = 0;
	uint8_t *raw = malloc(cap);
	z_stream z;
	int zrc;

	if (!raw)
		return;
	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 15 + 16) != Z_OK)
		abort();
	z.next_in = (unsigned char *)buf;
	z.avail_in = (uInt)len;
	do {
		if (n == cap) {
			uint8_t *nr = realloc(raw, cap * 2);

			if (!nr) {
				inflateEnd(&z);
				free(raw);
				return;
			}
			raw = nr;
			cap *= 2;
		}
		z.next_out = raw + n;
		z.avail_out = (uInt)(cap - n);
		zrc = inflate(&z, Z_NO_FLUSH);
		n = cap - z.avail_out;
	} while (zrc == Z_OK);
	inflateEnd(&z);
	if (zrc != Z_STREAM_END)
		abort();
	pb = perftools__profiles__profile__unpack(NULL, n, raw);
	free(raw);
	if (!pb)
		abort();
	for (size_t i = 0; i < pb->n_string_table; i++)
		if (!pb->string_table[i])
			abort();
	if (!pb->n_string_table || pb->string_table[0][0])
		abort();
#define STR_OK(ix) ((ix) >= 0 && (uint64_t)(ix) < pb->n_string_table)
	for (size_t i = 0; i < pb->n_sample; i++) {
		const Perftools__Profiles__Sample *s = pb->sample[i];

		if (s->n_value != pb->n_sample_type)
			abort();
		for (size_t k = 0; k < s->n_location_id; k++)
			if (!s->location_id[k] || s->location_id[k] > pb->n_location)
				abort();
		for (size_t k = 0; k < s->n_label; k++)
			if (!STR_OK(s->label[k]->key) || !STR_OK(s->label[k]->str))
				abort();
	}
	for (size_t i = 0; i < pb->n_location; i++) {
		const Perftools__Profiles__Location *l = pb->location[i];

		if (l->id != i + 1 || !l->mapping_id || l->mapping_id > pb->n_mapping)
			abort();
		for (size_t k = 0; k < l->n_line; k++)
			if (!l->line[k]->function_id || l->line[k]->function_id > pb->n_function)
				abort();
	}
	for (size_t i = 0; i < pb->n_function; i++)
		if (pb->function[i]->id != i + 1 || !STR_OK(pb->function[i]->name) ||
		    !STR_OK(pb->function[i]->filename))
			abort();
	for (size_t i = 0; i < pb->n_mapping; i++)
		if (pb->mapping[i]->id != i + 1 || !STR_OK(pb->mapping[i]->filename) ||
		    !STR_OK(pb->mapping[i]->build_id))
			abort();
	for (size_t i = 0; i < pb->n_comment; i++)
		if (!STR_OK(pb->comment[i]))
			abort();
#undef STR_OK
	perftools__profiles__profile__free_unpacked(pb, NULL);
}

/* Folded stacks: "frame;...;frame COUNT" lines, nothing else. */
static void check_folded(const char *buf, size_t len)
{
	for (size_t b = 0; b < len;) {
		const char *nl = memchr(buf + b, '\n', len - b);
		size_t e, d;

		if (!nl)
			abort(); /* every line ends */
		e = (size_t)(nl - buf);
		for (d = e; d > b && buf[d - 1] >= '0' && buf[d - 1] <= '9'; d--)
			;
		if (d == e || d == b || buf[d - 1] != ' ')
			abort();
		b = e + 1;
	}
}

/* Every export format of p, checked where a reader of it would check. */
static void print_exports(const struct rep_profile *p)
{
	static const enum rep_format formats[] = { REP_FORMAT_PPROF, REP_FORMAT_FOLDED,
						   REP_FORMAT_SPEEDSCOPE };

	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		struct rep_options o = { .format = formats[i] };
		char *buf = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&buf, &len);
		int rc;

		if (!mem)
			return;
		rc = rep_print(p, &o, mem);
		if (fclose(mem) || rc) {
			free(buf);
			if (rc && rc != -ENOMEM)
				abort();
			continue;
		}
		if (formats[i] == REP_FORMAT_PPROF)
			check_pprof(buf, len);
		else if (formats[i] == REP_FORMAT_FOLDED)
			check_folded(buf, len);
		free(buf);
	}
	if (rep_profile_has_causal(p)) {
		struct rep_options o = { .format = REP_FORMAT_COZ_JSONL };

		if (rep_print(p, &o, devnull))
			abort();
	}
}

/* Every output of psup diff; d compares a profile with itself when self. */
static void print_diff(const struct rep_diff *d, const struct rep_profile *base,
		       const struct rep_profile *new, bool self)
{
	struct rep_diff_options o = { REP_FORMAT_TEXT, 0 };
	char why[512], *buf = NULL;
	size_t len = 0;
	FILE *mem;

	if (rep_diff_print(d, &o, devnull))
		abort();
	o.format = REP_FORMAT_MARKDOWN;
	o.top = 3;
	if (rep_diff_print(d, &o, devnull))
		abort();
	o.format = REP_FORMAT_HTML;
	if (rep_diff_print_html(d, base, new, &o, devnull) == -EIO)
		abort();
	o.format = REP_FORMAT_JSON;
	o.top = 0;
	mem = open_memstream(&buf, &len);
	if (mem) {
		int rc = rep_diff_print(d, &o, mem);

		if (!fclose(mem) && !rc && rep_json_pretty(buf, len, devnull))
			abort();
		free(buf);
	}
	why[0] = '\0';
	if (rep_diff_slower(d, 0, why, sizeof(why)) && (!why[0] || strchr(why, '\n')))
		abort();
	if (!self)
		return;
	/* the same runs on both sides: no change anywhere */
	if (rep_diff_program(d)->change != 0 || rep_diff_program(d)->significant)
		abort();
	for (size_t i = 0; i < rep_diff_nfunctions(d); i++)
		if (rep_diff_function(d, i)->change != 0 || rep_diff_function(d, i)->significant)
			abort();
	for (size_t i = 0; i < rep_diff_nlines(d); i++)
		if (rep_diff_line(d, i)->change != 0 || rep_diff_line(d, i)->significant)
			abort();
}

static void diff(const struct rep_profile *base, const struct rep_profile *new, bool self)
{
	struct rep_diff *d;
	char err[512];
	int rc;

	err[0] = '\0';
	rc = rep_diff_new(base, new, &d, err, sizeof(err));
	if (rc) {
		check_failure(rc, err);
		return;
	}
	print_diff(d, base, new, self);
	rep_diff_free(d);
}

static bool same_image(const struct rep_annotate_addr *x, const struct rep_annotate_addr *y)
{
	return !strcmp(x->image, y->image) &&
	       (x->build_id == y->build_id ||
		(x->build_id && y->build_id && !strcmp(x->build_id, y->build_id)));
}

/*
 * psup annotate's listing of function from the file at path, as
 * builtin/annotate.c prints it when the image cannot be read: per image,
 * the sampled addresses as the instructions.
 */
static void annotate(const char *function, const char *path, int load_rc)
{
	const struct rep_annotate_addr *addrs;
	struct rep_annotate *a;
	char err[256];
	size_t n;

	if (rep_annotate_new(function, &a))
		return;
	err[0] = '\0';
	if (rep_annotate_load(a, path, err, sizeof(err)) != load_rc)
		abort(); /* the same file as the profile loads */
	addrs = rep_annotate_addrs(a, &n);
	for (size_t i = 0, j; !load_rc && i < n; i = j) {
		struct rep_annotate_insn *ins;

		for (j = i + 1; j < n && same_image(&addrs[j], &addrs[i]); j++)
			;
		ins = calloc(j - i, sizeof(*ins));
		if (!ins)
			break;
		for (size_t k = i; k < j; k++) {
			ins[k - i].addr = addrs[k].offset;
			ins[k - i].nframes = addrs[k].nframes;
			memcpy(ins[k - i].frames, addrs[k].frames, sizeof(ins[k - i].frames));
		}
		if (rep_annotate_print(function, addrs + i, j - i, ins, j - i, devnull))
			abort();
		free(ins);
	}
	rep_annotate_free(a);
}

/* Annotates the functions of the shortest names in the file (at most 2). */
static void annotate_file(const struct piece *f)
{
	char path[64], err[256];
	struct rep_annotate *a;
	const char *names[2];
	size_t n;
	int fd = memfd_create("fuzz-annotate", MFD_CLOEXEC), rc;

	if (fd < 0)
		return;
	if (write(fd, f->p, f->len) != (ssize_t)f->len || rep_annotate_new("", &a)) {
		close(fd);
		return;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	err[0] = '\0';
	rc = rep_annotate_load(a, path, err, sizeof(err));
	if (rc)
		check_failure(rc, err);
	n = rep_annotate_close_names(a, names, 2);
	for (size_t i = 0; i < n; i++)
		annotate(names[i], path, rc);
	annotate("main", path, rc);
	rep_annotate_free(a);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct piece pieces[FUZZ_MAX_FILES];
	struct rep_profile *side[2];
	size_t n = 0, nbase;

	if (!devnull)
		devnull = fopen("/dev/null", "w");
	if (!devnull)
		return 0;
	/* the last file takes the rest, separators included */
	while (n + 1 < FUZZ_MAX_FILES) {
		const uint8_t *s = memmem(data, size, FUZZ_NEXT, strlen(FUZZ_NEXT));

		if (!s)
			break;
		pieces[n++] = (struct piece){ data, (size_t)(s - data) };
		size -= (size_t)(s - data) + strlen(FUZZ_NEXT);
		data = s + strlen(FUZZ_NEXT);
	}
	pieces[n++] = (struct piece){ data, size };
	nbase = (n + 1) / 2;

	side[0] = load_side(pieces, nbase);
	side[1] = n > 1 ? load_side(pieces + nbase, n - nbase) : NULL;
	for (int s = 0; s < 2; s++)
		if (side[s])
			print_exports(side[s]);
	if (side[0])
		diff(side[0], side[0], true);
	if (side[0] && side[1])
		diff(side[0], side[1], false);
	annotate_file(&pieces[0]);
	rep_profile_free(side[0]);
	rep_profile_free(side[1]);
	return 0;
}
