/*
 * psup annotate's part in report/: the sampled addresses of one function,
 * read beside the model (which merges locations by source line, dropping
 * addresses), and its listing: instructions and source lines with samples.
 */
#include "report/annotate.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/escape.h"
#include "report/report-internal.h"

struct rep_annotate {
	char *function;
	struct rep_profile *p; /* every file merged; owns the strings */
	struct rep_annotate_addr *addrs;
	size_t naddrs, cap;
	struct rep_index addr_ix; /* addrs rows by offset, image and build-id */
	int addr_ix_err;          /* -ENOMEM: addr_ix could not be made anew */
	struct psup_u64map locs;  /* this file's loc id -> addrs row + 1 (the function's) */
	struct psup_u64map nodes; /* this file's node id -> addrs row + 1 (the function's) */
};

int rep_annotate_new(const char *function, struct rep_annotate **out)
{
	struct rep_annotate *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	a->function = strdup(function);
	if (!a->function || rep_profile_new(&a->p)) {
		rep_annotate_free(a);
		return -ENOMEM;
	}
	psup_u64map_init(&a->locs);
	psup_u64map_init(&a->nodes);
	rep_index_init(&a->addr_ix);
	*out = a;
	return 0;
}

void rep_annotate_free(struct rep_annotate *a)
{
	if (!a)
		return;
	psup_u64map_release(&a->locs);
	psup_u64map_release(&a->nodes);
	rep_index_release(&a->addr_ix);
	rep_profile_free(a->p);
	free(a->addrs);
	free(a->function);
	free(a);
}

/* s interned in the profile's strings (they live as long as it), NULL for
 * an absent slice; -ENOMEM through *err. */
static const char *intern(struct rep_annotate *a, struct rep_slice s, int *err)
{
	int64_t id;

	if (!s.p)
		return NULL;
	id = rep_strtab_intern(&a->p->strs, s.p, s.len);
	if (id < 0) {
		*err = (int)id;
		return NULL;
	}
	return rep_str(a->p, (uint32_t)id);
}

static bool str_eq(const char *x, const char *y)
{
	return x == y || (x && y && !strcmp(x, y));
}

/* An address's row is keyed by its offset and its interned image and
 * build-id (one pointer per distinct string), found through addr_ix: a
 * function with many distinct sampled addresses is read in linear time. */
static uint64_t addr_hash(const struct rep_annotate_addr *k)
{
	return psup_hash64(k->offset ^ psup_hash64((uintptr_t)k->image ^ psup_hash64((uintptr_t)k->build_id)));
}

static uint64_t addr_row_hash(const void *ctx, uint32_t row)
{
	const struct rep_annotate *a = ctx;

	return addr_hash(&a->addrs[row]);
}

static bool addr_row_eq(const void *ctx, uint32_t row, const void *key)
{
	const struct rep_annotate *a = ctx;
	const struct rep_annotate_addr *k = key;

	/* interned: equal strings are the same pointer, as addr_hash() takes them */
	return a->addrs[row].offset == k->offset && a->addrs[row].image == k->image &&
	       a->addrs[row].build_id == k->build_id;
}

static int observe_loc(struct rep_annotate *a, const struct rep_rec *r)
{
	struct rep_annotate_addr key = { 0 };
	const struct rep_rframe *outer;
	uint64_t *v, h;
	size_t row;
	int err = 0;

	if (!r->nframes)
		return 0;
	if (a->addr_ix_err)
		return a->addr_ix_err;
	outer = &r->frames[r->nframes - 1];
	if (!outer->function.p || outer->function.len != strlen(a->function) ||
	    memcmp(outer->function.p, a->function, outer->function.len))
		return 0;
	/* as the model names it: a loc without an image is still in one, and
	 * the listing and psup annotate print and compare it */
	if (rep_rec_has(r, REP_K_IMAGE) && r->s[REP_K_IMAGE].len)
		key.image = intern(a, r->s[REP_K_IMAGE], &err);
	else
		key.image = intern(a, (struct rep_slice){ REP_IMAGE_UNKNOWN, strlen(REP_IMAGE_UNKNOWN) },
				   &err);
	key.build_id = intern(a, r->s[REP_K_BUILD_ID], &err);
	key.offset = r->u[REP_K_OFFSET];
	key.nframes = r->nframes < REP_ANNOTATE_MAX_FRAMES ? (unsigned)r->nframes
							   : REP_ANNOTATE_MAX_FRAMES;
	for (unsigned i = 0; i < key.nframes; i++) {
		key.frames[i].function = intern(a, r->frames[i].function, &err);
		key.frames[i].file = intern(a, r->frames[i].file, &err);
		key.frames[i].line = r->frames[i].line <= UINT32_MAX ? (unsigned)r->frames[i].line : 0;
	}
	if (err)
		return err;
	h = addr_hash(&key);
	row = rep_index_find(&a->addr_ix, h, addr_row_eq, a, &key);
	if (row == REP_NONE) {
		row = a->naddrs;
		if (row >= REP_NONE - 1)
			return -E2BIG;
		if (a->naddrs == a->cap) {
			size_t ncap = a->cap ? 2 * a->cap : 64;
			void *n = realloc(a->addrs, ncap * sizeof(*a->addrs));

			if (!n)
				return -ENOMEM;
			a->addrs = n;
			a->cap = ncap;
		}
		a->addrs[a->naddrs++] = key;
		err = rep_index_add(&a->addr_ix, h, (uint32_t)row, addr_row_hash, a);
		if (err)
			return err;
	}
	v = psup_u64map_upsert(&a->locs, r->u[REP_K_ID], NULL);
	if (!v)
		return -ENOMEM;
	*v = row + 1;
	return 0;
}

static int observe(void *arg, const struct rep_rec *r)
{
	struct rep_annotate *a = arg;
	uint64_t *v, *row;

	switch (r->type) {
	case REP_REC_HEADER: /* ids are per file */
		psup_u64map_clear(&a->locs);
		psup_u64map_clear(&a->nodes);
		return 0;
	case REP_REC_LOC:
		return observe_loc(a, r);
	case REP_REC_NODE:
		row = psup_u64map_find(&a->locs, r->u[REP_K_LOC]);
		if (!row)
			return 0;
		v = psup_u64map_upsert(&a->nodes, r->u[REP_K_ID], NULL);
		if (!v)
			return -ENOMEM;
		*v = *psup_u64map_find(&a->locs, r->u[REP_K_LOC]);
		return 0;
	case REP_REC_SAMPLES:
		/* the model checked the pairs and their node ids */
		for (size_t i = 0; i + 1 < r->ncounts; i += 2) {
			row = psup_u64map_find(&a->nodes, r->counts[i]);
			if (row)
				a->addrs[*row - 1].samples =
					rep_sat_add(a->addrs[*row - 1].samples, r->counts[i + 1]);
		}
		return 0;
	default:
		return 0;
	}
}

int rep_annotate_load(struct rep_annotate *a, const char *path, char *err, size_t errlen)
{
	int rc;

	a->p->observe = observe;
	a->p->observe_arg = a;
	rc = rep_profile_load(a->p, path, err, errlen);
	a->p->observe = NULL;
	return rc;
}

static int str_cmp0(const char *x, const char *y)
{
	return x == y ? 0 : !x ? -1
		    : !y       ? 1
			       : strcmp(x, y);
}

static int addr_cmp(const void *x, const void *y)
{
	const struct rep_annotate_addr *p = x, *q = y;
	int c = str_cmp0(p->image, q->image);

	if (!c)
		c = str_cmp0(p->build_id, q->build_id);
	if (!c)
		c = p->offset < q->offset ? -1 : p->offset > q->offset;
	return c;
}

const struct rep_annotate_addr *rep_annotate_addrs(struct rep_annotate *a, size_t *n)
{
	size_t kept = 0;

	/* Only the sampled ones: a loc of the function may be only a caller's
	 * frame in other samples' stacks (psup annotate listed them with no
	 * sample, and said nothing of a function without any). This sorts
	 * and drops rows: their index is made anew (a file loaded after this
	 * still finds them), and the next file loaded starts its maps anew
	 * (its header). */
	for (size_t i = 0; i < a->naddrs; i++)
		if (a->addrs[i].samples)
			a->addrs[kept++] = a->addrs[i];
	a->naddrs = kept;
	if (a->naddrs)
		qsort(a->addrs, a->naddrs, sizeof(*a->addrs), addr_cmp);
	rep_index_release(&a->addr_ix);
	rep_index_init(&a->addr_ix);
	for (size_t i = 0; i < a->naddrs; i++)
		if (rep_index_add(&a->addr_ix, addr_hash(&a->addrs[i]), (uint32_t)i, addr_row_hash, a)) {
			a->addr_ix_err = -ENOMEM; /* a file loaded after this fails */
			break;
		}
	*n = a->naddrs;
	return a->addrs;
}

/* ---- close names ------------------------------------------------------- */

static size_t edit_distance(const char *s, const char *t)
{
	size_t m = strlen(s), n = strlen(t), *row, best;

	if (m > 256 || n > 256)
		return SIZE_MAX;
	row = malloc((n + 1) * sizeof(*row));
	if (!row)
		return SIZE_MAX;
	for (size_t j = 0; j <= n; j++)
		row[j] = j;
	for (size_t i = 1; i <= m; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= n; j++) {
			size_t up = row[j], c = diag + (tolower((unsigned char)s[i - 1]) !=
							tolower((unsigned char)t[j - 1]));

			if (up + 1 < c)
				c = up + 1;
			if (row[j - 1] + 1 < c)
				c = row[j - 1] + 1;
			diag = up;
			row[j] = c;
		}
	}
	best = row[n];
	free(row);
	return best;
}

static bool contains_nocase(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; *hay; hay++)
		if (!strncasecmp(hay, needle, n))
			return true;
	return false;
}

size_t rep_annotate_close_names(const struct rep_annotate *a, const char **names, size_t max)
{
	const struct rep_profile *p = a->p;
	struct psup_u64map seen;
	size_t *dist, n = 0, limit = strlen(a->function) / 3 + 2;

	if (!max)
		return 0;
	dist = calloc(max, sizeof(*dist));
	if (!dist)
		return 0;
	psup_u64map_init(&seen);
	for (uint32_t i = 0; i < p->nlocs; i++) {
		const struct rep_mloc *l = &p->locs[i];
		uint32_t fn = p->frames[l->frames + l->nframes - 1].function;
		const char *name = rep_str(p, fn);
		bool created = false;
		uint64_t *v;
		size_t d;

		if (l->unnamed || !name)
			continue;
		v = psup_u64map_upsert(&seen, fn, &created);
		if (!v || !created)
			continue;
		d = edit_distance(a->function, name);
		if (contains_nocase(name, a->function) || contains_nocase(a->function, name))
			d = d < 1 ? d : 1;
		if (d > limit)
			continue;
		/* insert sorted by distance, then name */
		size_t k = n;

		while (k > 0 && (dist[k - 1] > d || (dist[k - 1] == d && strcmp(names[k - 1], name) > 0)))
			k--;
		if (k >= max)
			continue;
		if (n < max)
			n++;
		memmove(names + k + 1, names + k, (n - 1 - k) * sizeof(*names));
		memmove(dist + k + 1, dist + k, (n - 1 - k) * sizeof(*dist));
		names[k] = name;
		dist[k] = d;
	}
	psup_u64map_release(&seen);
	free(dist);
	return n;
}

/* ---- the listing ------------------------------------------------------- */

/* One source file's lines, read when the listing first names it. */
struct src_file {
	const char *path;
	char *data; /* NULL: unreadable */
	size_t *starts, nlines, len;
};

static void src_load(struct src_file *s, const char *path)
{
	struct stat st;
	FILE *f;

	free(s->data);
	free(s->starts);
	memset(s, 0, sizeof(*s));
	s->path = path;
	/* The path is the record's (or the binary's DWARF's): a FIFO or a
	 * terminal there would block the open itself, so the file's kind is
	 * checked on a descriptor that cannot wait. */
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK) : -1;

	if (fd < 0)
		return;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > (64 << 20) || !(f = fdopen(fd, "r"))) {
		close(fd);
		return;
	}
	s->data = malloc((size_t)st.st_size + 1);
	if (!s->data)
		goto out;
	s->len = fread(s->data, 1, (size_t)st.st_size, f);
	s->data[s->len] = '\0';
	s->starts = malloc((s->len + 2) * sizeof(*s->starts));
	if (!s->starts) {
		free(s->data);
		s->data = NULL;
		goto out;
	}
	s->starts[s->nlines++] = 0;
	for (size_t i = 0; i < s->len; i++)
		if (s->data[i] == '\n')
			s->starts[s->nlines++] = i + 1;
out:
	fclose(f);
}

/* Prints line (1-based) of the file, spaces trimmed, control bytes escaped. */
static void src_put(struct src_file *s, const char *path, unsigned line, FILE *out)
{
	size_t b, e;

	if (!str_eq(s->path, path))
		src_load(s, path);
	if (!s->data || line == 0 || line > s->nlines || s->starts[line - 1] >= s->len)
		return;
	b = s->starts[line - 1];
	e = line < s->nlines ? s->starts[line] : s->len;
	while (b < e && (s->data[b] == ' ' || s->data[b] == '\t'))
		b++;
	while (e > b && isspace((unsigned char)s->data[e - 1]))
		e--;
	if (e - b > 100)
		e = b + 100;
	fputs("  ", out);
	rep_text_put(out, s->data + b, e - b);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

struct line_sum {
	const char *file, *function;
	unsigned line;
	uint64_t samples;
};

static bool same_line(const struct rep_annotate_frame *f, const struct line_sum *l)
{
	return f->line == l->line && str_eq(f->file, l->file) && str_eq(f->function, l->function);
}

static uint64_t insn_samples(const struct rep_annotate_addr *a, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;

		if (a[m].offset < addr)
			lo = m + 1;
		else
			hi = m;
	}
	return lo < n && a[lo].offset == addr ? a[lo].samples : 0;
}

static double pct(uint64_t x, uint64_t total)
{
	return total ? 100.0 * (double)x / (double)total : 0.0;
}

int rep_annotate_print(const char *function, const struct rep_annotate_addr *a, size_t n,
		       const struct rep_annotate_insn *insns, size_t ninsns, FILE *out)
{
	uint64_t total = 0, self = 0, listed = 0, hot_insn = 0, hot_line = 0;
	struct line_sum *lines = calloc(ninsns + 1, sizeof(*lines));
	struct src_file src = { 0 };
	size_t nlines = 0, hot_row = SIZE_MAX;
	const struct line_sum *prev = NULL;
	bool any_line = false;

	if (!lines)
		return -EIO;
	for (size_t i = 0; i < n; i++) {
		total = rep_sat_add(total, a[i].samples);
		if (a[i].nframes <= 1 || str_eq(a[i].frames[0].function, function))
			self = rep_sat_add(self, a[i].samples);
	}
	for (size_t i = 0; i < ninsns; i++) {
		const struct rep_annotate_frame *f = insns[i].nframes ? &insns[i].frames[0] : NULL;
		uint64_t s = insn_samples(a, n, insns[i].addr);
		size_t k;

		listed = rep_sat_add(listed, s);
		if (s > hot_insn)
			hot_insn = s;
		if (!f || !f->file)
			continue;
		any_line = true;
		for (k = 0; k < nlines && !same_line(f, &lines[k]); k++)
			;
		if (k == nlines) {
			lines[k] = (struct line_sum){ f->file, f->function, f->line, 0 };
			nlines++;
		}
		lines[k].samples = rep_sat_add(lines[k].samples, s);
		if (lines[k].samples > hot_line) {
			hot_line = lines[k].samples;
			hot_row = k;
		}
	}

	fputs("Samples of ", out);
	rep_text_put(out, function, strlen(function));
	fputs(" in ", out);
	rep_text_put(out, n ? a[0].image : "?", strlen(n ? a[0].image : "?"));
	fprintf(out, ": %" PRIu64 " (self %" PRIu64 ", in inlined functions %" PRIu64 ")\n", total,
		self, total - self);
	if (!any_line && ninsns)
		fputs("no source lines: the image has no line information (no debug info); "
		      "instructions only\n",
		      out);
	if (listed < total)
		fprintf(out, "%" PRIu64 " samples at addresses outside the listed instructions\n",
			total - listed);
	fputs("\n  percent  samples  source line / address: instruction\n", out);
	for (size_t i = 0; i < ninsns; i++) {
		const struct rep_annotate_insn *in = &insns[i];
		const struct rep_annotate_frame *f = in->nframes ? &in->frames[0] : NULL;
		uint64_t s = insn_samples(a, n, in->addr);

		if (f && f->file) {
			size_t k;

			for (k = 0; k < nlines && !same_line(f, &lines[k]); k++)
				;
			if (k < nlines && &lines[k] != prev) {
				unsigned depth = in->nframes - 1;

				fprintf(out, "%c %7.2f%% %8" PRIu64 "  %*s", k == hot_row ? '*' : ' ',
					pct(lines[k].samples, total), lines[k].samples, (int)(2 * depth),
					"");
				rep_text_put(out, base_name(f->file), strlen(base_name(f->file)));
				fprintf(out, ":%u", f->line);
				if (depth && f->function) {
					fputs(" [inlined ", out);
					rep_text_put(out, f->function, strlen(f->function));
					fputc(']', out);
				}
				src_put(&src, f->file, f->line, out);
				fputc('\n', out);
				prev = &lines[k];
			}
		} else {
			prev = NULL;
		}
		if (s)
			fprintf(out, "%c %7.2f%% %8" PRIu64, s == hot_insn ? '>' : ' ', pct(s, total), s);
		else
			fprintf(out, "  %8s %8s", "", "");
		fprintf(out, "  %16" PRIx64 ":  ", in->addr);
		if (in->text)
			rep_text_put(out, in->text, strlen(in->text));
		else
			fputs("(not disassembled)", out);
		fputc('\n', out);
	}
	free(src.data);
	free(src.starts);
	free(lines);
	return ferror(out) ? -EIO : 0;
}
