#include "report/html.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "report/escape.h"

/*
 * The page's frame and the flame graph's data. The CSS and the script are
 * report/report.css and report/flame.js, turned into C strings at build time
 * (scripts/embed-asset.py, report/meson.build).
 */

extern const char rep_asset_report_css[];
extern const char rep_asset_flame_js[];

void rep_html_begin(FILE *out, const char *title)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
	      out);
	rep_html_put(out, title);
	fputs("</title>\n<style>\n", out);
	fputs(rep_asset_report_css, out);
	fputs("</style>\n<script>\n", out);
	fputs(rep_asset_flame_js, out);
	fputs("</script>\n</head>\n<body>\n", out);
}

void rep_html_end(FILE *out)
{
	fputs("</body>\n</html>\n", out);
}

void rep_html_js_str(FILE *out, const char *s)
{
	if (!s) {
		fputs("null", out);
		return;
	}
	fputc('"', out);
	while (*s) {
		uint32_t cp;
		size_t n = rep_utf8_seq(s, &cp);

		if (!n || rep_is_control(cp)) {
			fputc('?', out);
			s += n ? n : 1;
			continue;
		}
		if (cp == '"' || cp == '\\')
			fprintf(out, "\\%c", (int)cp);
		else if (cp == '<' || cp == '>' || cp == '&' || cp == 0x2028 || cp == 0x2029)
			fprintf(out, "\\u%04" PRIx32, cp);
		else
			fwrite(s, 1, n, out);
		s += n;
	}
	fputc('"', out);
}

/* Per tree: its string ids (profile strings) renumbered densely in the
 * order they are first used, for the "names" array. */
struct names {
	uint32_t *map; /* profile string id -> name index + 1 */
	uint32_t *ids; /* name index -> profile string id */
	uint32_t n;
};

static uint32_t name_of(struct names *nm, uint32_t id)
{
	if (!nm->map[id]) {
		nm->ids[nm->n] = id;
		nm->map[id] = ++nm->n;
	}
	return nm->map[id] - 1;
}

/* {"total":N,"names":[...],"nodes":[...]}: six numbers per node in preorder
 * (parent's output index, name, image, inclusive, self, flags), node 0 the
 * root. */
static int flame_json(FILE *out, const struct rep_ctree *t)
{
	const struct rep_profile *p = t->p;
	uint32_t nstr = p->strs.len + 1;
	uint32_t *stack = NULL, *outix = NULL, sp = 0, done = 0;
	struct names nm = { NULL, NULL, 0 };
	int rc = -ENOMEM;

	nm.map = calloc(nstr, sizeof(*nm.map));
	/* every node names at most two strings, plus "" for row 0 */
	nm.ids = malloc(((size_t)t->n * 2 + 2) * sizeof(*nm.ids));
	stack = malloc(((size_t)t->n + 1) * sizeof(*stack));
	outix = malloc(((size_t)t->n + 1) * sizeof(*outix));
	if (!nm.map || !nm.ids || !stack || !outix)
		goto out;
	fprintf(out, "{\"total\":%" PRIu64 ",\"nodes\":[", t->n ? t->nodes[0].inclusive : 0);
	if (t->n)
		stack[sp++] = 0;
	while (sp) {
		uint32_t r = stack[--sp];
		const struct rep_cnode *c = &t->nodes[r];
		unsigned flags = (c->inlined ? 1 : 0) | (c->spawned ? 2 : 0);
		/* in this order: the function is numbered before its image */
		uint32_t fn = name_of(&nm, r ? c->function : 0);
		uint32_t im = name_of(&nm, r ? c->image : 0);

		outix[r] = done;
		fprintf(out, "%s%" PRIu32 ",%" PRIu32 ",%" PRIu32 ",%" PRIu64 ",%" PRIu64 ",%u",
			done ? "," : "", r ? outix[c->parent] : 0, fn, im, c->inclusive, c->exclusive,
			flags);
		done++;
		/* children pushed last first, so that they come out in their
		 * order (heaviest first) */
		for (uint32_t k = c->nchildren; k-- > 0;)
			stack[sp++] = t->children[c->first_child + k];
	}
	fputs("],\"names\":[", out);
	for (uint32_t i = 0; i < nm.n; i++) {
		const char *s = rep_str(p, nm.ids[i]);

		if (i)
			fputc(',', out);
		rep_html_js_str(out, s ? s : "");
	}
	fputs("]}", out);
	rc = ferror(out) ? -EIO : 0;
out:
	free(nm.map);
	free(nm.ids);
	free(stack);
	free(outix);
	return rc;
}

int rep_html_flame(FILE *out, const struct rep_ctree *base, const struct rep_ctree *tree,
		   const char *id)
{
	int rc;

	fprintf(out, "<div class=\"flame\" id=\"%s\">\n<div class=\"flame-bar\">"
		     "<input class=\"flame-search\" type=\"search\" placeholder=\"search functions "
		     "(text or /regexp/)\" aria-label=\"search functions\">"
		     "<button class=\"flame-reset\" type=\"button\">reset zoom</button>"
		     "<span class=\"flame-status\"></span></div>\n"
		     "<script type=\"application/json\" id=\"%s-data\">",
		id, id);
	rc = flame_json(out, tree);
	if (rc)
		return rc;
	fputs("</script>\n", out);
	/* a differential graph's base tree, in the same form */
	if (base) {
		fprintf(out, "<script type=\"application/json\" id=\"%s-base\">", id);
		rc = flame_json(out, base);
		if (rc)
			return rc;
		fputs("</script>\n", out);
	}
	fprintf(out, "<script>psupFlame(\"%s\");</script>\n</div>\n", id);
	return ferror(out) ? -EIO : 0;
}
