#ifndef PSUP_REPORT_JSON_H
#define PSUP_REPORT_JSON_H

/*
 * JSON output of the views (report/json.c), shared by views.c, causal.c,
 * parallel.c and witch.c. Text from the profiled program is untrusted: it
 * always goes through rep_json_str().
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* A string: escaped ('"', '\\', control characters and U+2028/U+2029 as
 * \uXXXX); NULL is null;
 * bytes that are not UTF-8 (overlongs, surrogates, past U+10FFFF) become
 * U+FFFD, so the output always parses. */
void rep_json_str(FILE *out, const char *s);
/* "key": after a comma unless *first (then *first becomes false). */
void rep_json_key(FILE *out, bool *first, const char *key);
/* "key": value pairs: a string, a number, a fraction (4 decimals), a bool. */
void rep_json_kstr(FILE *out, bool *first, const char *key, const char *val);
void rep_json_ku64(FILE *out, bool *first, const char *key, uint64_t v);
void rep_json_kpct(FILE *out, bool *first, const char *key, double v);
void rep_json_kbool(FILE *out, bool *first, const char *key, bool v);

#endif
