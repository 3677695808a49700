/*
 * The JSON writer of the views (report --format json): strings escaped so
 * that the output always parses, whatever bytes the profiled program's
 * names hold, and "key": value pairs.
 */
#include "report/json.h"

#include "report/report.h"

#include <errno.h>
#include <inttypes.h>

/* Writes s as a JSON string: escapes, and U+FFFD for bytes that are not
 * UTF-8, so the output always parses. */
void rep_json_str(FILE *out, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	if (!s) {
		fputs("null", out);
		return;
	}
	fputc('"', out);
	while (*u) {
		unsigned char c = *u;
		size_t n = 0;
		uint32_t cp = 0;

		if (c == '"' || c == '\\') {
			fprintf(out, "\\%c", c);
			u++;
			continue;
		}
		if (c < 0x20 || c == 0x7f) {
			fprintf(out, "\\u%04x", c);
			u++;
			continue;
		}
		if (c < 0x80) {
			fputc(c, out);
			u++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, cp = c & 0x07;
		bool ok = n > 0;
		for (size_t i = 1; ok && i <= n; i++) {
			if ((u[i] & 0xc0) != 0x80)
				ok = false;
			else
				cp = cp << 6 | (u[i] & 0x3f);
		}
		/* no overlongs, surrogates or code points past U+10FFFF */
		if (ok && ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
			   (n == 3 && (cp < 0x10000 || cp > 0x10ffff))))
			ok = false;
		if (ok) {
			fwrite(u, 1, n + 1, out);
			u += n + 1;
		} else {
			fputs("\\ufffd", out);
			u++;
		}
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

static void json_newline(FILE *out, unsigned depth)
{
	fputc('\n', out);
	for (unsigned i = 0; i < depth; i++)
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
