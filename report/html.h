#ifndef PSUP_REPORT_HTML_H
#define PSUP_REPORT_HTML_H

/*
 * The HTML page of psup report --format html (laid out by views.c; this is
 * report/html.c): one file that
 * needs nothing else (the CSS and the flame graph's script, report/report.css
 * and report/flame.js, are compiled in), and the flame graph of a
 * calling-context tree, plain or differential, that other pages (psup diff)
 * reuse. Text from the profiled program is escaped: rep_html_put() in HTML,
 * rep_html_js_str() inside a <script>.
 */

#include <stdio.h>

#include "report/report-internal.h"

/* The page's start: doctype, <head> with title (escaped), the inline CSS
 * and the flame graph's script, then <body>. */
void rep_html_begin(FILE *out, const char *title);
/* </body></html>. */
void rep_html_end(FILE *out);

/*
 * A flame graph of tree (a top-down rep_ctree: rep_ctree_top_down*()): a
 * <div class="flame" id="ID"> with a search box and a reset button, the tree
 * as inline JSON (<script type="application/json" id="ID-data">) and the
 * call that draws it. base non-NULL makes it differential: every frame of
 * tree is coloured by the change of its share of all samples against the
 * frame at the same call path (function and image at every level) in base,
 * red where it grew, blue where it shrank, deep red where base has no such
 * path; the tooltip gives both counts. id names the DOM element (ASCII
 * letters, digits and '-'; unique in the page). Needs rep_html_begin()'s
 * script earlier in the page. 0, -ENOMEM or -EIO.
 */
int rep_html_flame(FILE *out, const struct rep_ctree *base, const struct rep_ctree *tree,
		   const char *id);

/* s as a JSON string safe inside <script>: rep_json_str()'s escapes, and
 * '<', '>', '&', U+2028 and U+2029 as \u escapes (no "</script>" or "<!--"
 * can end or change the element); control characters and bytes that are
 * not UTF-8 become '?'. NULL is null. */
void rep_html_js_str(FILE *out, const char *s);

/* The causal view's part of the page (report/causal.c): a note, a plot
 * per line and the lines without enough experiments, as <h3>, <p>, <svg>
 * and <table> elements; nothing when p has no experiments. 0, -ENOMEM or
 * -EIO. */
int rep_causal_html_body(const struct rep_profile *p, const struct rep_options *o, FILE *out);

#endif
