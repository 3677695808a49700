#ifndef PSUP_REPORT_ESCAPE_H
#define PSUP_REPORT_ESCAPE_H

/*
 * Text from the profiled program (symbol, thread, file and progress point
 * names, argv) is untrusted: every view prints it through the one function
 * of its format below (JSON: rep_json_str() in report/json.h). None lets a
 * control character through (C0, DEL, and the C1 controls U+0080..U+009F:
 * a terminal obeys ESC and CSI, U+009B, to set its title or keys), nor a
 * byte that is not UTF-8; each such character or byte becomes one '?'.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Length of the well-formed UTF-8 sequence at s (1 for ASCII other than
 * NUL; no overlongs, surrogates or code points past U+10FFFF) with its code
 * point in *cp; 0 when s[0] starts none. Reads no byte past a NUL. */
size_t rep_utf8_seq(const char *s, uint32_t *cp);
/* A character no view prints: C0, DEL, C1. */
bool rep_is_control(uint32_t cp);
/* Characters s prints as (one per sequence and per stray byte). */
size_t rep_text_width(const char *s);
/* Byte offset of character k of s (strlen(s) when s is shorter). */
size_t rep_text_offset(const char *s, size_t k);

/* Text for a terminal: at most the first nbytes of s (SIZE_MAX: all). */
void rep_text_put(FILE *out, const char *s, size_t nbytes);
/* Markdown: code (a code span, backticks included; '`' inside becomes '\'')
 * or running text (markdown's punctuation backslash-escaped); '|' always
 * escaped, so a table cell cannot end early. */
void rep_md_put(FILE *out, const char *s, bool code);
/* HTML text or attribute value: & < > " ' as entities. */
void rep_html_put(FILE *out, const char *s);
/* A frame of a folded stack (FlameGraph's "a;b;c N" lines): ';' (the frame
 * separator) becomes ':', so a name cannot split into two frames, and an
 * empty name "?" (an empty frame would merge into its neighbours). */
void rep_folded_put(FILE *out, const char *s);
/* A copy of s for a binary format whose strings must be UTF-8 (pprof's
 * proto3 strings): the text rules above, one '?' per control character or
 * stray byte; NULL is "". The caller frees it; NULL when out of memory. */
char *rep_text_dup(const char *s);

#endif
