/*
 * The JSON writer of the views (report --format json): strings escaped so
 * that the output always parses, whatever bytes the profiled program's
 * names hold, and "key": value pairs.
 */
#include "report/json.h"

#include "report/escape.h"
#include "report/report.h"

#include <errno.h>
#include <inttypes.h>

/* Writes s as a JSON string: escapes (every control character, C1 too, as
 * \u00XX, so the output is safe to print on a terminal), and U+FFFD for
 * bytes that are not UTF-8, so the output always parses. */
void rep_json_str(FILE *out, const char *s)
{
	uint32_t cp;

	if (!s) {
		fputs("null", out);
		return;
	}
	fputc('"', out);
	while (*s) {
		size_t n = rep_utf8_seq(s, &cp);

		if (!n)
			fputs("\\ufffd", out);
		else if (cp == '"' || cp == '\\')
			fprintf(out, "\\%c", (char)cp);
		else if (rep_is_control(cp) || cp == 0x2028 || cp == 0x2029)
			/* (the line and paragraph separators end a line for
			 * JavaScript before ES2019 and for splitlines(): a
			 * JSON Lines record stays one line for every reader) */
			fprintf(out, "\\u%04x", (unsigned)cp);
		else
			fwrite(s, 1, n, out);
		s += n ? n : 1;
	}
	fputc('"', out);
}

void rep_json_key(FILE *out, bool *first, const char *key)
{
	fputs(*first ? "" : ",", out);
	*first = false;
	fprintf(out, "\"%s\":", key);
}

void rep_json_kstr(FILE *out, bool *first, const char *key, const char *val)
{
	rep_json_key(out, first, key);
	rep_json_str(out, val);
}

void rep_json_ku64(FILE *out, bool *first, const char *key, uint64_t v)
{
	rep_json_key(out, first, key);
	fprintf(out, "%" PRIu64, v);
}

void rep_json_kpct(FILE *out, bool *first, const char *key, double v)
{
	rep_json_key(out, first, key);
	fprintf(out, "%.4f", v);
}

void rep_json_kbool(FILE *out, bool *first, const char *key, bool v)
{
	rep_json_key(out, first, key);
	fputs(v ? "true" : "false", out);
}

/* Nesting levels indented. Deeper levels keep this indentation: a tree of
 * --depth 0 over a deep recursion would otherwise print indentation
 * quadratic in its depth. */
enum { JSON_INDENT_MAX = 64 };

static void json_newline(FILE *out, unsigned depth)
{
	fputc('\n', out);
	for (unsigned i = 0; i < depth && i < JSON_INDENT_MAX; i++)
		fputs("  ", out);
}

int rep_json_pretty(const char *buf, size_t len, FILE *out)
{
	unsigned depth = 0;
	bool in_str = false, esc = false;

	for (size_t i = 0; i < len; i++) {
		char c = buf[i];

		if (in_str) {
			fputc(c, out);
			if (esc)
				esc = false;
			else if (c == '\\')
				esc = true;
			else if (c == '"')
				in_str = false;
			continue;
		}
		switch (c) {
		case '"':
			in_str = true;
			fputc(c, out);
			break;
		case '{':
		case '[': {
			/* the next byte that is not blank: an empty one stays {} */
			size_t j = i + 1;

			while (j < len && (buf[j] == ' ' || buf[j] == '\n'))
				j++;
			fputc(c, out);
			if (j < len && (buf[j] == '}' || buf[j] == ']')) {
				fputc(buf[j], out);
				i = j;
				break;
			}
			json_newline(out, ++depth);
			break;
		}
		case '}':
		case ']':
			json_newline(out, depth ? --depth : 0);
			fputc(c, out);
			break;
		case ',':
			fputc(c, out);
			json_newline(out, depth);
			break;
		case ':':
			fputs(": ", out);
			break;
		case ' ':
		case '\n':
		case '\t':
		case '\r':
			break;
		default:
			fputc(c, out);
		}
	}
	fputc('\n', out);
	return fflush(out) != 0 || ferror(out) ? -EIO : 0;
}
