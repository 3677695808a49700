/*
 * The profile for other tools (report/export.h): folded stacks, the lowest
 * common denominator (Brendan Gregg's FlameGraph, speedscope, Pyroscope's
 * ingest read "root;...;leaf COUNT" lines), and speedscope's JSON
 * (https://www.speedscope.app/file-format-schema.json: shared frames, a
 * "sampled" profile per thread). pprof is in pprof.c.
 *
 * Both walk the same stacks: a thread's leaf nodes, each node's loc up to
 * the root, and each loc's frames outermost to innermost (an inlined callee
 * is a frame below the function it was inlined into, as in the report's
 * top-down tree). Names are the report's: an address without a function is
 * named after its image ("[ls] (no symbols)").
 */
#include "report/export.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/escape.h"
#include "report/json.h"

bool rep_format_is_export(enum rep_format f)
{
	return f == REP_FORMAT_PPROF || f == REP_FORMAT_FOLDED || f == REP_FORMAT_SPEEDSCOPE;
}

static int cmp_pair(const void *x, const void *y)
{
	const uint64_t *a = x, *b = y;

	return a[0] < b[0] ? -1 : a[0] > b[0];
}

int rep_export_leaves(const struct rep_mthread *t, uint64_t **pairs, size_t *n)
{
	const struct psup_u64map *m = &t->leaves;
	uint64_t *v = malloc((m->len + 1) * 2 * sizeof(*v));
	size_t k = 0;

	*pairs = v;
	*n = 0;
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->keys[i] || !m->vals[i])
			continue;
		v[2 * k] = m->keys[i] - 1;
		v[2 * k + 1] = m->vals[i];
		k++;
	}
	qsort(v, k, 2 * sizeof(*v), cmp_pair);
	*n = k;
	return 0;
}

int rep_export_stack(const struct rep_profile *p, uint32_t node, struct rep_export_path *path)
{
	uint64_t frames = 0;

	path->n = 0;
	path->skip = 0;
	path->truncated = false;
	/* parents are defined before their children, so the walk ends */
	for (uint32_t x = node; x != REP_NONE && x < p->nnodes; x = p->nodes[x].parent) {
		if (frames >= REP_EXPORT_MAX_FRAMES) {
			path->truncated = true;
			break;
		}
		if (path->n == path->cap) {
			size_t nc = path->cap ? path->cap * 2 : 64;
			uint32_t *nb = realloc(path->locs, nc * sizeof(*nb));

			if (!nb)
				return -ENOMEM;
			path->locs = nb;
			path->cap = nc;
		}
		path->locs[path->n++] = p->nodes[x].loc;
		frames += p->locs[p->nodes[x].loc].nframes;
	}
	if (frames > REP_EXPORT_MAX_FRAMES) {
		path->skip = (uint32_t)(frames - REP_EXPORT_MAX_FRAMES);
		path->truncated = true;
	}
	return 0;
}

/* The frames of locs[k] that path gives: all, but the outermost loc's skip. */
static uint32_t path_frames(const struct rep_profile *p, const struct rep_export_path *path,
			    size_t k)
{
	return p->locs[path->locs[k]].nframes - (k == path->n - 1 ? path->skip : 0);
}

bool rep_export_timed(const struct rep_profile *p)
{
	bool any = false;

	for (uint32_t r = 0; r < p->nruns; r++) {
		if (!p->runs[r].samples)
			continue;
		if (!p->runs[r].clock || !p->runs[r].period)
			return false;
		any = true;
	}
	return any;
}

uint64_t rep_export_run_ns(const struct rep_run *r)
{
	uint64_t end = r->complete && r->end_time ? r->end_time : r->last_time;

	return end > r->mono_ns ? end - r->mono_ns : 0;
}

static const char *fn_name(const struct rep_profile *p, const struct rep_mframe *f)
{
	const char *s = rep_str(p, f->function);

	return s ? s : "[unknown]";
}

/* ---- folded stacks ----------------------------------------------------------- */

struct folded_line {
	char *text; /* "a;b;c", escaped */
	uint64_t count;
};

static int cmp_folded(const void *x, const void *y)
{
	return strcmp(((const struct folded_line *)x)->text, ((const struct folded_line *)y)->text);
}

/*
 * One line per distinct stack, merged over threads and runs (two leaves
 * whose stacks print the same, e.g. the same functions in two builds, are
 * one line), sorted by the stack's text as stackcollapse-perf.pl sorts.
 */
static int print_folded(const struct rep_profile *p, FILE *out)
{
	struct folded_line *lines = NULL;
	size_t nlines = 0, lcap = 0, npairs;
	struct rep_export_path path = { 0 };
	uint64_t *pairs = NULL;
	int rc = 0;

	for (uint32_t t = 0; t < p->nthreads && !rc; t++) {
		rc = rep_export_leaves(&p->threads[t], &pairs, &npairs);
		for (size_t i = 0; i < npairs && !rc; i++) {
			FILE *mem;
			char *text = NULL;
			size_t len = 0;
			bool first = true;

			rc = rep_export_stack(p, (uint32_t)pairs[2 * i], &path);
			if (rc)
				break;
			mem = open_memstream(&text, &len);
			if (!mem) {
				rc = -ENOMEM;
				break;
			}
			if (path.truncated) {
				rep_folded_put(mem, "[truncated]");
				first = false;
			}
			for (size_t k = path.n; k-- > 0;) {
				const struct rep_mloc *l = &p->locs[path.locs[k]];

				for (uint32_t f = path_frames(p, &path, k); f-- > 0;) {
					if (!first)
						fputc(';', mem);
					first = false;
					rep_folded_put(mem, fn_name(p, &p->frames[l->frames + f]));
				}
			}
			if (fclose(mem) != 0 || !text) {
				free(text);
				rc = -ENOMEM;
				break;
			}
			if (nlines == lcap) {
				size_t nc = lcap ? lcap * 2 : 256;
				struct folded_line *nl = realloc(lines, nc * sizeof(*nl));

				if (!nl) {
					free(text);
					rc = -ENOMEM;
					break;
				}
				lines = nl;
				lcap = nc;
			}
			lines[nlines].text = text;
			lines[nlines++].count = pairs[2 * i + 1];
		}
		free(pairs);
		pairs = NULL;
	}
	if (!rc) {
		/* no lines (no samples): lines is NULL, which qsort() may not get */
		if (nlines)
			qsort(lines, nlines, sizeof(*lines), cmp_folded);
		for (size_t i = 0; i < nlines;) {
			uint64_t count = 0;
			size_t j = i;

			for (; j < nlines && !strcmp(lines[j].text, lines[i].text); j++)
				count = rep_sat_add(count, lines[j].count);
			fprintf(out, "%s %" PRIu64 "\n", lines[i].text, count);
			i = j;
		}
	}
	for (size_t i = 0; i < nlines; i++)
		free(lines[i].text);
	free(lines);
	free(path.locs);
	return rc;
}

/* ---- speedscope ------------------------------------------------------------------ */

/* speedscope's shared frames: one per (function, source file), numbered as
 * the profiles first use them, and "[truncated]" (row REP_NONE). */
struct ss_frames {
	struct psup_u64map ix; /* function << 32 | file -> frame index + 1 */
	uint32_t *rows;        /* frame index -> p->frames row (a sample of it) */
	size_t n, cap;
	uint64_t truncated; /* "[truncated]"'s frame index + 1; 0: unused */
};

/* The frame index of p->frames[row] (REP_NONE: "[truncated]") into *out,
 * numbered on first use. 0 or -ENOMEM. */
static int ss_frame(const struct rep_profile *p, struct ss_frames *s, uint32_t row,
		    uint64_t *out)
{
	uint64_t *v;
	bool created;

	if (row == REP_NONE) {
		v = &s->truncated;
		created = !*v;
	} else {
		v = psup_u64map_upsert(&s->ix,
				       (uint64_t)p->frames[row].function << 32 | p->frames[row].file,
				       &created);
		if (!v)
			return -ENOMEM;
	}
	if (created) {
		if (s->n == s->cap) {
			size_t nc = s->cap ? s->cap * 2 : 256;
			uint32_t *nr = realloc(s->rows, nc * sizeof(*nr));

			if (!nr) {
				if (row != REP_NONE)
					psup_u64map_remove(&s->ix, (uint64_t)p->frames[row].function << 32 |
									   p->frames[row].file);
				return -ENOMEM;
			}
			s->rows = nr;
			s->cap = nc;
		}
		s->rows[s->n++] = row;
		*v = s->n;
	}
	*out = *v - 1;
	return 0;
}

/*
 * speedscope's file format: "profiles" (one "sampled" profile per thread
 * with samples: each a stack of frame indices, root first, and weights:
 * nanoseconds when every run counted time, else samples with unit "none"),
 * then "shared": {"frames": [{name, file}]} (struct ss_frames).
 */
static int print_speedscope(const struct rep_profile *p, FILE *out)
{
	struct ss_frames sf = { .rows = NULL };
	struct rep_export_path path = { 0 };
	size_t npairs;
	uint64_t *pairs = NULL;
	bool timed = rep_export_timed(p), firstp = true;
	const struct rep_run *r0 = p->nruns ? &p->runs[0] : NULL;
	const char *argv0 = r0 && r0->has_argv && r0->nargv ? rep_str(p, r0->argv[0]) : NULL;
	int rc = 0;

	psup_u64map_init(&sf.ix);
	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\"", out);
	fputs(",\"exporter\":\"psup " PSUP_VERSION "\",\"name\":", out);
	rep_json_str(out, argv0 ? argv0 : "psup profile");
	fputs(",\"activeProfileIndex\":0,\"profiles\":[", out);
	for (uint32_t t = 0; t < p->nthreads && !rc; t++) {
		const struct rep_mthread *th = &p->threads[t];
		const struct rep_run *run = &p->runs[th->run];
		uint64_t total = 0, period = timed ? run->period : 1;
		const char *name = rep_str(p, th->name);
		char *label;

		rc = rep_export_leaves(th, &pairs, &npairs);
		if (rc || !npairs) {
			free(pairs);
			pairs = NULL;
			continue;
		}
		for (size_t i = 0; i < npairs; i++)
			total = rep_sat_add(total, rep_sat_mul(pairs[2 * i + 1], period));
		fputs(firstp ? "{\"type\":\"sampled\",\"name\":" : ",{\"type\":\"sampled\",\"name\":",
		      out);
		firstp = false;
		if (asprintf(&label, "%s (tid %d)", name ? name : "thread", th->tid) < 0) {
			rc = -ENOMEM;
			break;
		}
		rep_json_str(out, label);
		free(label);
		fprintf(out, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRIu64 ",\"samples\":[",
			timed ? "nanoseconds" : "none", total);
		for (size_t i = 0; i < npairs && !rc; i++) {
			bool first = true;
			uint64_t ix;

			rc = rep_export_stack(p, (uint32_t)pairs[2 * i], &path);
			if (rc)
				break;
			fputs(i ? ",[" : "[", out);
			if (path.truncated && !(rc = ss_frame(p, &sf, REP_NONE, &ix))) {
				fprintf(out, "%" PRIu64, ix);
				first = false;
			}
			for (size_t k = path.n; k-- > 0 && !rc;) {
				const struct rep_mloc *l = &p->locs[path.locs[k]];

				for (uint32_t f = path_frames(p, &path, k); f-- > 0 && !rc;) {
					rc = ss_frame(p, &sf, l->frames + f, &ix);
					if (rc)
						break;
					fprintf(out, first ? "%" PRIu64 : ",%" PRIu64, ix);
					first = false;
				}
			}
			fputc(']', out);
		}
		fputs("],\"weights\":[", out);
		for (size_t i = 0; i < npairs; i++)
			fprintf(out, i ? ",%" PRIu64 : "%" PRIu64, rep_sat_mul(pairs[2 * i + 1], period));
		fputs("]}", out);
		free(pairs);
		pairs = NULL;
	}
	fputs("],\"shared\":{\"frames\":[", out);
	for (size_t i = 0; i < sf.n && !rc; i++) {
		const struct rep_mframe *fr = sf.rows[i] == REP_NONE ? NULL : &p->frames[sf.rows[i]];
		bool f = true;

		fputs(i ? ",{" : "{", out);
		rep_json_kstr(out, &f, "name", fr ? fn_name(p, fr) : "[truncated]");
		if (fr && rep_str(p, fr->file))
			rep_json_kstr(out, &f, "file", rep_str(p, fr->file));
		fputc('}', out);
	}
	fputs("]}}\n", out);
	free(pairs);
	free(path.locs);
	free(sf.rows);
	psup_u64map_release(&sf.ix);
	return rc;
}

int rep_export_print(const struct rep_profile *p, const struct rep_options *o, FILE *out)
{
	int rc;

	switch (o->format) {
	case REP_FORMAT_PPROF:
		rc = rep_export_pprof(p, out);
		break;
	case REP_FORMAT_FOLDED:
		rc = print_folded(p, out);
		break;
	case REP_FORMAT_SPEEDSCOPE:
		rc = print_speedscope(p, out);
		break;
	default:
		return -EINVAL;
	}
	if (!rc && (fflush(out) != 0 || ferror(out)))
		rc = -EIO;
	return rc;
}
