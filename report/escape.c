/*
 * The escaping of untrusted text, one function per output format
 * (docs: report/escape.h; the JSON one is rep_json_str() in json.c).
 */
#include "report/escape.h"

#include <stdlib.h>
#include <string.h>

size_t rep_utf8_seq(const char *str, uint32_t *cp)
{
	const unsigned char *u = (const unsigned char *)str;
	unsigned char c = u[0];
	size_t n;
	uint32_t v;

	if (c && c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		n = 1, v = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 2, v = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 3, v = c & 0x07;
	else
		return 0;
	for (size_t i = 1; i <= n; i++) {
		if ((u[i] & 0xc0) != 0x80) /* a NUL stops here too */
			return 0;
		v = v << 6 | (u[i] & 0x3f);
	}
	if ((n == 2 && (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))) ||
	    (n == 3 && (v < 0x10000 || v > 0x10ffff)))
		return 0;
	*cp = v;
	return n + 1;
}

bool rep_is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

size_t rep_text_width(const char *s)
{
	size_t w = 0;
	uint32_t cp;

	while (*s) {
		size_t n = rep_utf8_seq(s, &cp);

		s += n ? n : 1;
		w++;
	}
	return w;
}

size_t rep_text_offset(const char *s, size_t k)
{
	size_t i = 0;
	uint32_t cp;

	while (s[i] && k--) {
		size_t n = rep_utf8_seq(s + i, &cp);

		i += n ? n : 1;
	}
	return i;
}

void rep_text_put(FILE *out, const char *s, size_t nbytes)
{
	size_t i = 0;
	uint32_t cp;

	while (i < nbytes && s[i]) {
		size_t n = rep_utf8_seq(s + i, &cp);

		if (!n || rep_is_control(cp) || n > nbytes - i)
			fputc('?', out);
		else
			fwrite(s + i, 1, n, out);
		i += n ? n : 1;
	}
}

void rep_md_put(FILE *out, const char *s, bool code)
{
	bool span = code && *s;
	uint32_t cp;

	if (span)
		fputc('`', out);
	while (*s) {
		size_t n = rep_utf8_seq(s, &cp);

		if (!n || rep_is_control(cp))
			fputc('?', out);
		else if (*s == '|')
			fputs("\\|", out);
		else if (code && *s == '`')
			fputc('\'', out);
		else if (!code && strchr("\\`*_[]<>#!&~", *s))
			fprintf(out, "\\%c", *s);
		else
			fwrite(s, 1, n, out);
		s += n ? n : 1;
	}
	if (span)
		fputc('`', out);
}

void rep_html_put(FILE *out, const char *s)
{
	static const char *const ent[] = {
		['&'] = "&amp;",
		['<'] = "&lt;",
		['>'] = "&gt;",
		['"'] = "&quot;",
		['\''] = "&#39;",
	};
	uint32_t cp;

	while (s && *s) {
		size_t n = rep_utf8_seq(s, &cp);

		if (!n || rep_is_control(cp))
			fputc('?', out);
		else if (cp < sizeof(ent) / sizeof(ent[0]) && ent[cp])
			fputs(ent[cp], out);
		else
			fwrite(s, 1, n, out);
		s += n ? n : 1;
	}
}

void rep_folded_put(FILE *out, const char *s)
{
	uint32_t cp;

	if (!s || !*s) {
		fputc('?', out);
		return;
	}
	while (*s) {
		size_t n = rep_utf8_seq(s, &cp);

		if (!n || rep_is_control(cp))
			fputc('?', out);
		else if (*s == ';')
			fputc(':', out);
		else
			fwrite(s, 1, n, out);
		s += n ? n : 1;
	}
}

char *rep_text_dup(const char *s)
{
	size_t len = s ? strlen(s) : 0, i = 0, o = 0;
	char *d = malloc(len + 1); /* '?' for a byte or more: never longer */
	uint32_t cp;

	if (!d)
		return NULL;
	while (i < len) {
		size_t n = rep_utf8_seq(s + i, &cp);

		if (!n || rep_is_control(cp)) {
			d[o++] = '?';
		} else {
			memcpy(d + o, s + i, n);
			o += n;
		}
		i += n ? n : 1;
	}
	d[o] = 0;
	return d;
}
