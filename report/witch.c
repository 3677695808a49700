/*
 * The witch view: per analysis (dead stores, silent stores, silent loads),
 * the program-wide fraction of wasted bytes (Witch paper, equation 1) and the
 * (watch context, trap context) pairs by wasted bytes, with full call paths.
 * Records: docs/format.md, "Witch records".
 */
#include "report/report.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/escape.h"
#include "report/json.h"
#include "report/report-internal.h"

#define W_KINDS 3
#define W_KIND_COUNTERS 10
#define W_ALL_COUNTERS 12

static const char *const kind_names[W_KINDS] = { "dead", "silent", "load" };
static const char *const kind_titles[W_KINDS] = { "dead stores", "silent stores", "silent loads" };
/* The order of a kind's witch_stats counts (docs/format.md). */
/* clang-format off */
static const char *const kind_counters[W_KIND_COUNTERS] = {
	"samples", "armed", "replaced", "not_chosen", "traps",
	"waste_traps", "use_traps", "dropped", "unknown_traps", "expired",
};
/* clang-format on */
/* The order of the "all" witch_stats counts. */
/* clang-format off */
static const char *const all_counters[W_ALL_COUNTERS] = {
	"in_syscall", "no_access", "unwatchable", "undecodable", "unreadable",
	"step_interrupted", "signal_blocked", "stray_trap",
	"samples", "no_debug_register", "arm_failed", "signals",
};
/* clang-format on */

struct wpair {
	uint32_t watch, trap; /* node rows, REP_NONE when unknown */
	uint64_t waste, use;
};

struct wkind {
	struct wpair *v;
	uint32_t n, cap;
	struct psup_u64map ix; /* (watch + 1) << 32 | (trap + 1) -> row + 1 */
	uint64_t counters[W_KIND_COUNTERS];
	bool seen;
};

struct rep_witch {
	struct wkind kinds[W_KINDS];
	uint64_t all[W_ALL_COUNTERS];
	/* the configuration of the first run with one, and whether others
	 * differed */
	bool have_config, mixed, exact;
	char event[64];
	/* how samples were weighed: "instructions", "time" or "events" */
	char weighting[16];
	uint64_t period, fp_ppm, slots, weight;
	bool clock;
	unsigned runs;
};

void rep_witch_free(struct rep_witch *w)
{
	if (!w)
		return;
	for (int k = 0; k < W_KINDS; k++) {
		free(w->kinds[k].v);
		psup_u64map_release(&w->kinds[k].ix);
	}
	free(w);
}

static struct rep_witch *witch_get(struct rep_profile *p)
{
	if (!p->witch) {
		p->witch = calloc(1, sizeof(*p->witch));
		if (p->witch)
			for (int k = 0; k < W_KINDS; k++)
				psup_u64map_init(&p->witch->kinds[k].ix);
	}
	return p->witch;
}

static int kind_of(const struct rep_rec *r)
{
	const struct rep_slice *s = &r->s[REP_K_NAME];

	for (int k = 0; k < W_KINDS; k++)
		if (s->p && s->len == strlen(kind_names[k]) && !memcmp(s->p, kind_names[k], s->len))
			return k;
	return -1;
}

/* A file's node id -> merged node row; 0 is "no context". */
static int node_row(struct rep_loadctx *c, uint64_t id, uint32_t *row)
{
	uint64_t *v;

	if (!id) {
		*row = REP_NONE;
		return 0;
	}
	v = psup_u64map_find(&c->nodes, id);
	if (!v) {
		rep_load_error(c, "witch pair refers to node %" PRIu64 ", not defined before", id);
		return -EINVAL;
	}
	*row = (uint32_t)(*v - 1);
	return 0;
}

static int apply_pairs(struct rep_loadctx *c, struct rep_witch *w, const struct rep_rec *r)
{
	int k = kind_of(r);

	if (k < 0)
		return 0; /* an analysis of a newer recorder */
	if (r->ncounts % 4) {
		rep_load_error(c, "witch_pairs \"counts\" is not a list of 4-tuples");
		return -EINVAL;
	}
	struct wkind *wk = &w->kinds[k];
	wk->seen = true;
	for (size_t i = 0; i < r->ncounts; i += 4) {
		uint32_t watch, trap;
		bool created;
		int rc;

		if ((rc = node_row(c, r->counts[i], &watch)) || (rc = node_row(c, r->counts[i + 1], &trap)))
			return rc;
		uint64_t key = ((uint64_t)(watch + 1) << 32 | (uint64_t)(trap + 1)) + 1;
		uint64_t *v = psup_u64map_upsert(&wk->ix, key, &created);
		if (!v)
			return -ENOMEM;
		if (created) {
			if (rep_grow32((void **)&wk->v, &wk->cap, wk->n, sizeof(*wk->v))) {
				psup_u64map_remove(&wk->ix, key);
				return -ENOMEM;
			}
			wk->v[wk->n] = (struct wpair){ .watch = watch, .trap = trap };
			*v = ++wk->n;
		}
		struct wpair *pr = &wk->v[*v - 1];
		pr->waste = rep_sat_add(pr->waste, r->counts[i + 2]);
		pr->use = rep_sat_add(pr->use, r->counts[i + 3]);
	}
	return 0;
}

static void apply_stats(struct rep_witch *w, const struct rep_rec *r)
{
	int k = kind_of(r);
	uint64_t *dst;
	size_t n;

	if (k >= 0) {
		dst = w->kinds[k].counters;
		n = W_KIND_COUNTERS;
		w->kinds[k].seen = true;
	} else if (r->s[REP_K_NAME].p && r->s[REP_K_NAME].len == 3 &&
		   !memcmp(r->s[REP_K_NAME].p, "all", 3)) {
		dst = w->all;
		n = W_ALL_COUNTERS;
	} else {
		return;
	}
	/* Counters a newer recorder added at the end are skipped. */
	for (size_t i = 0; i < n && i < r->ncounts; i++)
		dst[i] = rep_sat_add(dst[i], r->counts[i]);
}

static void apply_config(struct rep_witch *w, const struct rep_rec *r)
{
	char event[64], weighting[16];
	const struct rep_slice *ev = &r->s[REP_K_EVENT], *wt = &r->s[REP_K_WEIGHTING];
	uint64_t fp = r->ncounts > 0 ? r->counts[0] : 0, slots = r->ncounts > 1 ? r->counts[1] : 0,
		 weight = r->ncounts > 2 ? r->counts[2] : 1;
	bool exact = r->s[REP_K_MODE].p && r->s[REP_K_MODE].len == 5 &&
		     !memcmp(r->s[REP_K_MODE].p, "exact", 5);

	snprintf(event, sizeof(event), "%.*s", ev->p ? (int)ev->len : 0, ev->p ? ev->p : "");
	/* Files from before the field: time samples were time-weighted. */
	if (wt->p)
		snprintf(weighting, sizeof(weighting), "%.*s", (int)wt->len, wt->p);
	else
		snprintf(weighting, sizeof(weighting), "%s",
			 exact ? "" : r->u[REP_K_CLOCK] ? "time"
							: "events");
	/* Which analyses ran: they show even when nothing was sampled. */
	for (int k = 0; k < W_KINDS; k++) {
		const struct rep_slice *s = &r->s[REP_K_NAME];
		size_t kl = strlen(kind_names[k]);
		for (size_t i = 0; s->p && i + kl <= s->len; i++)
			if (!memcmp(s->p + i, kind_names[k], kl) && (i == 0 || s->p[i - 1] == ',') &&
			    (i + kl == s->len || s->p[i + kl] == ','))
				w->kinds[k].seen = true;
	}
	w->runs++;
	if (!w->have_config) {
		w->have_config = true;
		snprintf(w->event, sizeof(w->event), "%s", event);
		w->period = r->u[REP_K_PERIOD];
		w->clock = r->u[REP_K_CLOCK];
		w->exact = exact;
		w->fp_ppm = fp;
		w->slots = slots;
		w->weight = weight;
		snprintf(w->weighting, sizeof(w->weighting), "%s", weighting);
		return;
	}
	if (strcmp(w->event, event) || strcmp(w->weighting, weighting) || w->period != r->u[REP_K_PERIOD] || w->exact != exact ||
	    w->fp_ppm != fp || w->slots != slots)
		w->mixed = true;
}

int rep_witch_apply(struct rep_loadctx *c, const struct rep_rec *r)
{
	struct rep_witch *w = witch_get(c->p);

	if (!w)
		return -ENOMEM;
	switch (r->type) {
	case REP_REC_WITCH_CONFIG:
		apply_config(w, r);
		return 0;
	case REP_REC_WITCH_PAIRS:
		return apply_pairs(c, w, r);
	case REP_REC_WITCH_STATS:
		apply_stats(w, r);
		return 0;
	default:
		return 0;
	}
}

bool rep_witch_present(const struct rep_profile *p)
{
	return p->witch != NULL;
}

/* ---- printing ------------------------------------------------------------ */

/* The frames of a call path, outermost first, ending with the innermost
 * frame of the leaf (the access's source line). Returns how many were put
 * into rows (at most max). */
static size_t path_frames(const struct rep_profile *p, uint32_t leaf, const struct rep_mframe **rows,
			  size_t max)
{
	size_t n = 0;

	for (uint32_t node = leaf; node != REP_NONE && node < p->nnodes && n < max;
	     node = p->nodes[node].parent) {
		const struct rep_mloc *l = &p->locs[p->nodes[node].loc];
		for (uint32_t i = 0; i < l->nframes && n < max; i++)
			rows[n++] = &p->frames[l->frames + i];
	}
	/* collected innermost first: reverse */
	for (size_t i = 0; i < n / 2; i++) {
		const struct rep_mframe *t = rows[i];
		rows[i] = rows[n - 1 - i];
		rows[n - 1 - i] = t;
	}
	return n;
}

static int cmp_waste(const void *a, const void *b)
{
	const struct wpair *x = *(const struct wpair *const *)a, *y = *(const struct wpair *const *)b;

	if (x->waste != y->waste)
		return x->waste < y->waste ? 1 : -1;
	if (x->use != y->use)
		return x->use < y->use ? 1 : -1;
	if (x->watch != y->watch)
		return x->watch < y->watch ? -1 : 1;
	return x->trap < y->trap ? -1 : x->trap > y->trap;
}

#define W_MAX_PATH 256

static void print_path_text(const struct rep_profile *p, uint32_t leaf, FILE *out, bool md)
{
	const struct rep_mframe *rows[W_MAX_PATH];
	size_t n = path_frames(p, leaf, rows, W_MAX_PATH);

	if (!n) {
		fputs(md ? "*unknown*" : "[unknown]", out);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const char *fn = rep_str(p, rows[i]->function), *file = rep_str(p, rows[i]->file);
		const char *base = file ? strrchr(file, '/') : NULL;

		char *frame = NULL;

		if (i)
			fputs(" > ", out);
		if (file && rows[i]->line &&
		    asprintf(&frame, "%s (%s:%u)", fn ? fn : "?", base ? base + 1 : file,
			     rows[i]->line) < 0)
			frame = NULL;
		if (md)
			rep_md_put(out, frame ? frame : fn ? fn
							   : "?",
				   true);
		else
			rep_text_put(out, frame ? frame : fn ? fn
							     : "?",
				     SIZE_MAX);
		free(frame);
	}
}

static void print_path_json(const struct rep_profile *p, uint32_t leaf, FILE *out)
{
	const struct rep_mframe *rows[W_MAX_PATH];
	size_t n = path_frames(p, leaf, rows, W_MAX_PATH);

	fputc('[', out);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ",{\"function\":" : "{\"function\":", out);
		rep_json_str(out, rep_str(p, rows[i]->function));
		fputs(",\"file\":", out);
		rep_json_str(out, rep_str(p, rows[i]->file));
		fprintf(out, ",\"line\":%u}", rows[i]->line);
	}
	fputc(']', out);
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

int rep_witch_print(const struct rep_profile *p, const struct rep_options *o, FILE *out)
{
	const struct rep_witch *w = p->witch;
	bool json = o->format == REP_FORMAT_JSON, md = o->format == REP_FORMAT_MARKDOWN;
	bool firstk = true;

	if (!w) {
		if (json)
			fputs(",\"witch\":null", out);
		else
			fputs(md ? "\n### Witch\n\nNo witch records (record with `psup run --witch dead,silent,load`).\n"
				 : "\nwitch: no witch records (record with psup run --witch dead,silent,load)\n",
			      out);
		return 0;
	}
	if (json) {
		fputs(",\"witch\":{", out);
		fputs("\"config\":{\"event\":", out);
		rep_json_str(out, w->have_config ? w->event : NULL);
		fprintf(out, ",\"period\":%" PRIu64 ",\"clock\":%s,\"exact\":%s,\"weighting\":",
			w->period, w->clock ? "true" : "false", w->exact ? "true" : "false");
		rep_json_str(out, w->have_config && w->weighting[0] ? w->weighting : NULL);
		fprintf(out, ",\"fp_precision\":%.6f,\"debug_registers\":%" PRIu64 ",\"runs\":%u,\"mixed\":%s}",
			(double)w->fp_ppm / 1e6, w->slots, w->runs, w->mixed ? "true" : "false");
		firstk = false;
	} else if (md) {
		fputs("\n### Witch: wasted memory accesses\n\n", out);
	} else {
		fputs("\nwitch: wasted memory accesses\n", out);
	}
	if (!json && w->have_config && w->exact) {
		fprintf(out, md ? "Exact: every access of every instruction judged (single-stepped; leaf-only contexts); floats equal within %.2f%%.\n" : "  exact: every access of every instruction judged (single-stepped; leaf-only contexts); floats equal within %.2f%%\n",
			(double)w->fp_ppm / 1e4);
	} else if (!json && w->have_config) {
		/* the event's name is the record's: escaped */
		fprintf(out, md ? "%s " : "  %s ", w->exact ? "exact (every access, single-stepped):" : "sampled by");
		if (md)
			rep_md_put(out, w->event, true);
		else
			rep_text_put(out, w->event, SIZE_MAX);
		fprintf(out, md ? ", every %" PRIu64 "%s%s; %" PRIu64 " debug register(s) per thread; floats equal within %.2f%%.\n" : ", every %" PRIu64 "%s%s; %" PRIu64 " debug register(s) per thread; floats equal within %.2f%%\n",
			w->period, w->clock ? " ns" : " events",
			!strcmp(w->weighting, "instructions") ? " (weighted by instructions per access: see README)"
			: !strcmp(w->weighting, "time")       ? " (time-weighted: see README)"
							      : "",
			w->slots,
			(double)w->fp_ppm / 1e4);
		if (w->mixed)
			fputs(md ? "Runs with different witch settings are merged.\n"
				 : "  runs with different witch settings are merged\n",
			      out);
	}
	for (int k = 0; k < W_KINDS; k++) {
		const struct wkind *wk = &w->kinds[k];
		uint64_t waste = 0, use = 0;
		const struct wpair **order;
		uint32_t shown = 0;

		if (!wk->seen)
			continue;
		for (uint32_t i = 0; i < wk->n; i++) {
			waste = rep_sat_add(waste, wk->v[i].waste);
			use = rep_sat_add(use, wk->v[i].use);
		}
		uint64_t total = rep_sat_add(waste, use);
		order = malloc((wk->n ? wk->n : 1) * sizeof(*order));
		if (!order)
			return -ENOMEM;
		for (uint32_t i = 0; i < wk->n; i++)
			order[i] = &wk->v[i];
		qsort(order, wk->n, sizeof(*order), cmp_waste);
		if (json) {
			fprintf(out, "%s\"%s\":{\"fraction\":%.6f,\"wasted_bytes\":%" PRIu64 ",\"total_bytes\":%" PRIu64 ",\"counters\":{",
				firstk ? "" : ",", kind_names[k], total ? (double)waste / (double)total : 0.0,
				waste, total);
			for (int i = 0; i < W_KIND_COUNTERS; i++)
				fprintf(out, "%s\"%s\":%" PRIu64, i ? "," : "", kind_counters[i], wk->counters[i]);
			fputs("},\"pairs\":[", out);
			firstk = false;
		} else if (md) {
			fprintf(out, "\n#### %s: %.1f%% wasted\n\n%" PRIu64 " of %" PRIu64 " bytes judged were wasted (%" PRIu64 " samples, %" PRIu64 " traps).\n\n",
				kind_titles[k], pct(waste, total), waste, total, wk->counters[0],
				wk->counters[4]);
			if (waste)
				fputs("| # | share | bytes | watch context | trap context |\n"
				      "|---|------:|------:|---|---|\n",
				      out);
		} else {
			fprintf(out, "\n  %s: %.1f%% wasted (%" PRIu64 " of %" PRIu64 " bytes judged; %" PRIu64 " samples, %" PRIu64 " traps)\n",
				kind_titles[k], pct(waste, total), waste, total, wk->counters[0],
				wk->counters[4]);
		}
		for (uint32_t i = 0; i < wk->n; i++) {
			const struct wpair *pr = order[i];
			double share = pct(pr->waste, waste);

			if (!pr->waste && !json)
				break;
			if (!json && ((o->top && shown >= o->top) || share < o->min_percent))
				break;
			if (json && o->top && shown >= o->top)
				break;
			shown++;
			if (json) {
				fprintf(out, "%s{\"bytes\":%" PRIu64 ",\"use_bytes\":%" PRIu64 ",\"share\":%.6f,\"watch\":",
					i ? "," : "", pr->waste, pr->use, waste ? (double)pr->waste / (double)waste : 0.0);
				print_path_json(p, pr->watch, out);
				fputs(",\"trap\":", out);
				print_path_json(p, pr->trap, out);
				fputc('}', out);
			} else if (md) {
				fprintf(out, "| %u | %.1f%% | %" PRIu64 " | ", shown, share, pr->waste);
				print_path_text(p, pr->watch, out, true);
				fputs(" | ", out);
				print_path_text(p, pr->trap, out, true);
				fputs(" |\n", out);
			} else {
				fprintf(out, "    %2u. %5.1f%%  %" PRIu64 " bytes\n        watch: ", shown, share,
					pr->waste);
				print_path_text(p, pr->watch, out, false);
				fputs("\n        trap:  ", out);
				print_path_text(p, pr->trap, out, false);
				fputc('\n', out);
			}
		}
		if (json)
			fputs("]}", out);
		free(order);
	}
	if (json) {
		fputs(",\"skipped\":{", out);
		for (int i = 0; i < W_ALL_COUNTERS; i++)
			fprintf(out, "%s\"%s\":%" PRIu64, i ? "," : "", all_counters[i], w->all[i]);
		fputs("}}", out);
	} else {
		uint64_t sk = 0;
		for (int i = 0; i < 8; i++)
			sk += w->all[i];
		fprintf(out, md ? "\n%" PRIu64 " sampling signals, %" PRIu64 " samples used; skipped:" : "\n  %" PRIu64 " sampling signals, %" PRIu64 " samples used; skipped:",
			w->all[11], w->all[8]);
		for (int i = 0; i < 8; i++)
			if (w->all[i])
				fprintf(out, " %s %" PRIu64, all_counters[i], w->all[i]);
		if (!sk)
			fputs(" none", out);
		if (w->all[9])
			fprintf(out, "; no free debug register %" PRIu64 " times", w->all[9]);
		fputc('\n', out);
	}
	return 0;
}
