#include "symbols/symbols.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "common/log.h"
#include "common/util.h"
#include "symbols/symbols-internal.h"

/*
 * The reverse of sym_space_resolve(): from a FILE:LINE or a FUNCTION to the
 * code addresses a progress point needs, in every image a process maps.
 * Lines come from the DWARF line tables, functions from the symbol tables
 * (out-of-line copies, including GCC's full clones) and from DWARF (every
 * inlined copy). Nothing is cached here: callers look up again only when
 * the mappings changed (sym_space_generation()), and libdw keeps each CU's
 * decoded line table after the first use.
 */

/* ---- specs ---- */

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

int sym_spec_parse(const char *text, struct sym_spec *out, char *why, size_t whylen)
{
	const char *colon;

	memset(out, 0, sizeof(*out));
	if (!text || !*text) {
		snprintf(why, whylen, "empty progress point: expected FILE:LINE or FUNCTION");
		return -EINVAL;
	}
	if (strpbrk(text, " \t\n,")) {
		snprintf(why, whylen, "'%s': expected FILE:LINE or FUNCTION, without spaces or commas",
			 text);
		return -EINVAL;
	}
	colon = strrchr(text, ':');
	/* "ns::f" is a C++ function; "main.c:12" a line; "main.c:" or
	 * "main.c:x1" a mistake worth a message rather than a function that
	 * never resolves. */
	if (colon && colon > text && colon[-1] != ':' && colon[1] != ':' &&
	    (all_digits(colon + 1) || strchr(text, '.') || strchr(text, '/'))) {
		long line;

		if (!all_digits(colon + 1)) {
			snprintf(why, whylen, "'%s': expected FILE:LINE with a line number", text);
			return -EINVAL;
		}
		line = strtol(colon + 1, NULL, 10);
		if (line <= 0 || line > 100000000) {
			snprintf(why, whylen, "'%s': line number out of range", text);
			return -EINVAL;
		}
		out->kind = SYM_SPEC_LINE;
		out->file = strndup(text, (size_t)(colon - text));
		if (!out->file)
			return -ENOMEM;
		out->line = (unsigned)line;
		return 0;
	}
	if (colon && (colon == text || text[strlen(text) - 1] == ':')) {
		snprintf(why, whylen, "'%s': expected FILE:LINE or FUNCTION", text);
		return -EINVAL;
	}
	out->kind = SYM_SPEC_FUNCTION;
	out->function = strdup(text);
	return out->function ? 0 : -ENOMEM;
}

void sym_spec_release(struct sym_spec *s)
{
	if (!s)
		return;
	free(s->file);
	free(s->function);
	memset(s, 0, sizeof(*s));
}

bool sym_path_has_suffix(const char *path, const char *suffix)
{
	size_t a, b;

	if (!path || !suffix)
		return false;
	a = strlen(path);
	b = strlen(suffix);
	if (b == 0 || a < b || strcmp(path + a - b, suffix))
		return false;
	/* "main.c" matches ".../src/main.c" but not ".../domain.c" */
	return a == b || path[a - b - 1] == '/' || suffix[0] == '/';
}

/* ---- results ---- */

static int push_addr(struct sym_lookup *l, uint64_t addr)
{
	for (size_t i = 0; i < l->nsites; i++)
		if (l->sites[i] == addr)
			return 0;
	if (l->nsites == l->capsites) {
		size_t ncap = l->capsites ? l->capsites * 2 : 8;
		uint64_t *n = realloc(l->sites, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		l->sites = n;
		l->capsites = ncap;
	}
	l->sites[l->nsites++] = addr;
	return 0;
}

static int push_range(struct sym_lookup *l, uint64_t start, uint64_t end)
{
	if (end <= start)
		return 0;
	if (l->nranges == l->capranges) {
		size_t ncap = l->capranges ? l->capranges * 2 : 16;
		struct sym_code_range *n = realloc(l->ranges, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		l->ranges = n;
		l->capranges = ncap;
	}
	l->ranges[l->nranges].start = start;
	l->ranges[l->nranges].end = end;
	l->nranges++;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_range(const void *a, const void *b)
{
	const struct sym_code_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Sorts sites, sorts and merges ranges, for binary searches. */
static void lookup_finish(struct sym_lookup *l)
{
	size_t n = 0;

	if (l->nsites) /* qsort(NULL, 0) is undefined */
		qsort(l->sites, l->nsites, sizeof(*l->sites), cmp_u64);
	if (l->nranges)
		qsort(l->ranges, l->nranges, sizeof(*l->ranges), cmp_range);
	for (size_t i = 0; i < l->nranges; i++) {
		if (n && l->ranges[i].start <= l->ranges[n - 1].end) {
			if (l->ranges[i].end > l->ranges[n - 1].end)
				l->ranges[n - 1].end = l->ranges[i].end;
		} else {
			l->ranges[n++] = l->ranges[i];
		}
	}
	l->nranges = n;
}

void sym_lookup_release(struct sym_lookup *l)
{
	if (!l)
		return;
	free(l->sites);
	free(l->ranges);
	memset(l, 0, sizeof(*l));
}

bool sym_lookup_contains(const struct sym_lookup *l, uint64_t addr)
{
	size_t lo = 0, hi = l->nranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->ranges[mid].end <= addr)
			lo = mid + 1;
		else if (l->ranges[mid].start > addr)
			hi = mid;
		else
			return true;
	}
	return false;
}

/* ---- one image ---- */

/* One image as mapped by the space: ELF vaddr + bias = process address,
 * kept only inside [lo, hi), its executable mapping(s). */
struct lk_image {
	struct sym_image *img;
	uint64_t bias;
	uint64_t lo, hi;
	bool exe; /* the process's executable (/proc/PID/exe) */
};

static bool lk_exec_vaddr(const struct lk_image *li, uint64_t vaddr)
{
	const struct sym_load *l = sym_image_load_at(li->img, vaddr);

	/* Line tables keep rows of functions the linker dropped (address 0,
	 * or -1/-2 tombstones): only code in an executable segment counts. */
	return l && (l->flags & PF_X) && vaddr + li->bias >= li->lo && vaddr + li->bias < li->hi;
}

/* A candidate breakpoint row of the line, with the function instance
 * (subprogram or inlined subroutine DIE) containing it. */
struct lk_row {
	uint64_t vaddr;
	Dwarf_Off scope;
};

struct lk_line_ctx {
	const struct sym_spec *spec;
	struct sym_lookup *out;
	/* pass 1: the smallest line >= spec->line with code in a matching file */
	unsigned best;
	/* pass 2 */
	struct lk_row *rows;
	size_t nrows, caprows;
};

/* The innermost function instance around a DWARF address of a CU, as a
 * key: two rows of one line in the same instance are one statement split
 * by the scheduler, rows in different instances (inlined copies) are
 * different code paths. */
static Dwarf_Off lk_scope_of(Dwarf_Die *cudie, Dwarf_Addr addr)
{
	Dwarf_Die *scopes = NULL;
	Dwarf_Off off = 0;
	int n = dwarf_getscopes(cudie, addr, &scopes);

	for (int i = 0; i < n; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
			off = dwarf_dieoffset(&scopes[i]);
			break;
		}
	}
	free(scopes);
	return off;
}

/* pass 1 (best == 0 on entry, want > 0): finds the line used; pass 2
 * (best set): collects ranges and breakpoint rows of that line. */
static int lk_cu_lines(struct lk_image *li, Dwarf_Die *cudie, Dwarf_Addr cubias,
		       struct lk_line_ctx *ctx, bool collect)
{
	Dwarf_Lines *lines;
	size_t nlines;
	const char *last_src = NULL;
	bool last_match = false;
	bool prev_in = false; /* previous row (same sequence) is the wanted line */
	uint64_t vbias = cubias - li->img->mod_bias;

	if (dwarf_getsrclines(cudie, &lines, &nlines))
		return 0;
	for (size_t i = 0; i < nlines; i++) {
		Dwarf_Line *ln = dwarf_onesrcline(lines, i);
		Dwarf_Addr addr;
		const char *src;
		bool stmt = false, endseq = false, match;
		int lineno = 0;

		if (!ln || dwarf_lineaddr(ln, &addr) || dwarf_lineno(ln, &lineno))
			continue;
		dwarf_lineendsequence(ln, &endseq);
		if (endseq) {
			prev_in = false;
			continue;
		}
		src = dwarf_linesrc(ln, NULL, NULL);
		if (src != last_src) {
			last_src = src;
			last_match = sym_path_has_suffix(src, ctx->spec->file);
		}
		match = last_match;
		if (!match || lineno <= 0) {
			prev_in = false;
			continue;
		}
		if (!lk_exec_vaddr(li, addr + vbias)) {
			prev_in = false;
			continue;
		}
		if (!collect) {
			if ((unsigned)lineno >= ctx->spec->line &&
			    (!ctx->best || (unsigned)lineno < ctx->best))
				ctx->best = (unsigned)lineno;
			continue;
		}
		if ((unsigned)lineno != ctx->best) {
			prev_in = false;
			continue;
		}
		if (!ctx->out->file)
			ctx->out->file = src;
		else if (strcmp(ctx->out->file, src) && !ctx->out->other_file)
			ctx->out->other_file = src;
		/* The row's code runs to the next row's address. */
		if (i + 1 < nlines) {
			Dwarf_Line *next = dwarf_onesrcline(lines, i + 1);
			Dwarf_Addr end;

			if (next && !dwarf_lineaddr(next, &end) && end > addr &&
			    push_range(ctx->out, addr + vbias + li->bias, end + vbias + li->bias))
				return -ENOMEM;
		}
		dwarf_linebeginstatement(ln, &stmt);
		/* A breakpoint where a run of the line's rows begins, at its
		 * first statement row. */
		if (stmt && !prev_in) {
			if (ctx->nrows == ctx->caprows) {
				size_t ncap = ctx->caprows ? ctx->caprows * 2 : 16;
				struct lk_row *n = realloc(ctx->rows, ncap * sizeof(*n));

				if (!n)
					return -ENOMEM;
				ctx->rows = n;
				ctx->caprows = ncap;
			}
			ctx->rows[ctx->nrows].vaddr = addr + vbias;
			ctx->rows[ctx->nrows].scope = lk_scope_of(cudie, addr);
			ctx->nrows++;
			prev_in = true;
		} else if (stmt || prev_in) {
			prev_in = true;
		}
	}
	return 0;
}

/* image.c opens an image's DWARF on its first resolve; a resolve of any
 * address does it without touching image.c's internals. */
static void lk_load_dwfl(struct sym_image *img)
{
	struct sym_loc tmp;

	if (!img->dwfl_tried)
		sym_image_resolve(img, 0, &tmp);
}

static Dwarf *lk_dwarf(struct sym_image *img)
{
	Dwarf_Addr bias;

	lk_load_dwfl(img);
	if (!img->mod)
		return NULL;
	return dwfl_module_getdwarf(img->mod, &bias);
}

/*
 * Whether the image's DWARF may mention needle: false only when none of its
 * string-holding debug sections contains it. Walking every CU of a big
 * library (libc with its debug file: ~60 ms a pass, 280 ms the first) for a
 * name or file it does not have is what this avoids; a compressed section
 * cannot be searched, so it answers true.
 */
static bool mem_has_string(const char *buf, size_t size, const char *needle, size_t len)
{
	const char *p = buf, *end = buf + size;

	while (p < end && (p = memmem(p, (size_t)(end - p), needle, len))) {
		/* Not p[-1] == '\0': linkers merge a string into the tail of a
		 * longer one ("step" stored as the end of "regstep"). */
		if (p + len < end && p[len] == '\0')
			return true;
		p++;
	}
	return false;
}

/* exact: needle is a whole DIE name, so only the ends of strings in the
 * string sections count (names of 4 bytes or more are not stored inline by
 * GCC or Clang: an offset is as long). */
static bool lk_elf_mentions(Elf *elf, const char *needle, size_t len, bool exact);

static bool lk_dwarf_mentions(Dwarf *dw, const char *needle, size_t len, bool exact)
{
	Dwarf *alt = dwarf_getalt(dw);

	/* dwz (Debian's debug packages) moves shared strings to a
	 * supplementary file: search it too. */
	if (len < 4 || lk_elf_mentions(dwarf_getelf(dw), needle, len, exact))
		return true;
	return alt && lk_elf_mentions(dwarf_getelf(alt), needle, len, exact);
}

static bool lk_elf_mentions(Elf *elf, const char *needle, size_t len, bool exact)
{
	static const char *const names[] = { ".debug_str", ".debug_line_str", ".debug_line",
					     ".debug_info" };
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return true;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;
		bool wanted = false;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (!strncmp(name, ".zdebug", 7))
			return true;
		for (size_t i = 0; i < PSUP_ARRAY_SIZE(names); i++)
			wanted |= !strcmp(name, names[i]);
		if (!wanted || (exact && strcmp(name, ".debug_str") && strcmp(name, ".debug_line_str")))
			continue;
		if (sh.sh_flags & SHF_COMPRESSED)
			return true;
		d = elf_rawdata(scn, NULL);
		if (!d || !d->d_buf)
			continue;
		if (exact ? mem_has_string(d->d_buf, d->d_size, needle, len)
			  : memmem(d->d_buf, d->d_size, needle, len) != NULL)
			return true;
	}
	return false;
}

static int lk_lookup_line(struct lk_image *li, struct lk_line_ctx *ctx, bool collect)
{
	Dwarf_Die *cu = NULL;
	Dwarf_Addr cubias;
	int err;

	const char *base = strrchr(ctx->spec->file, '/');
	Dwarf *dw = lk_dwarf(li->img);

	base = base ? base + 1 : ctx->spec->file;
	if (!dw || !lk_dwarf_mentions(dw, base, strlen(base), false))
		return 0;
	while ((cu = dwfl_module_nextcu(li->img->mod, cu, &cubias))) {
		err = lk_cu_lines(li, cu, cubias, ctx, collect);
		if (err)
			return err;
	}
	return 0;
}

/* ---- functions ---- */

/* GCC's full clones (same semantics, other calling convention) keep the
 * function's calls: "f.constprop.0", "f.isra.0". Parts (".part.N") and
 * cold blocks (".cold") are pieces of f entered from f itself. A symbol
 * version is not part of the name: glibc's symbol table (its debug file's)
 * names the function "pthread_mutex_unlock@@GLIBC_2.2.5". */
static size_t base_name_len(const char *name)
{
	size_t full = strcspn(name, "@");
	const char *end = name + full;
	const char *dot = memchr(name, '.', full);

	if (!dot || dot == name)
		return full;
	for (const char *p = dot; p && p < end && *p == '.'; p = memchr(p + 1, '.', (size_t)(end - p - 1))) {
		if (!strncmp(p, ".part.", 6) || !strncmp(p, ".cold", 5))
			return 0; /* never an entry */
	}
	for (const char *p = dot; p < end;) {
		if (!strncmp(p, ".constprop.", 11))
			p += 11;
		else if (!strncmp(p, ".isra.", 6))
			p += 6;
		else
			return full;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	return (size_t)(dot - name);
}

/* The function name in a demangled signature: "void ns::step<int>(int)"
 * gives "ns::step<int>" (no return type, no parameters). Written to buf. */
static void signature_name(const char *dm, char *buf, size_t len)
{
	int depth = 0;
	const char *start = dm, *end = NULL;

	for (const char *p = dm; *p && !end; p++) {
		if (*p == '<')
			depth++;
		else if (*p == '>' && depth > 0)
			depth--;
		else if (depth == 0 && *p == ' ' && strncmp(p - (p - dm >= 8 ? 8 : 0), "operator", 8))
			start = p + 1; /* after a return type */
		else if (depth == 0 && *p == '(' && p > start)
			end = p;
	}
	if (!end)
		end = dm + strlen(dm);
	snprintf(buf, len, "%.*s", (int)(end - start), start);
}

/* want against one form of a name: equal, or equal once the template
 * arguments are dropped ("ns::step" for "ns::step<int>"), or, for a want
 * without "::", equal to the last component ("step" for "ns::step<int>"). */
static bool form_matches(const char *want, const char *name)
{
	char plain[512];
	size_t n = 0;
	int depth = 0;
	const char *last;

	if (!strcmp(want, name))
		return true;
	for (const char *p = name; *p && n + 1 < sizeof(plain); p++) {
		if (*p == '<')
			depth++;
		else if (*p == '>' && depth > 0)
			depth--;
		else if (depth == 0)
			plain[n++] = *p;
	}
	plain[n] = '\0';
	if (!strcmp(want, plain))
		return true;
	if (strstr(want, "::"))
		return false;
	last = strrchr(plain, ':');
	return last && !strcmp(want, last + 1);
}

/* Does a (possibly mangled) name denote the function the user typed?
 * Accepted: the symbol as is, its demangled form, or the function name in
 * it ("ns::scale" for "ns::scale(int)", "ns::step<int>", "ns::step" or
 * "step" for "void ns::step<int>(int)"). */
static bool name_matches(const char *want, const char *name, size_t len)
{
	char buf[512], sig[512];
	char *dm;
	bool ok;

	if (!len || len >= sizeof(buf))
		return false;
	if (strlen(want) == len && !strncmp(want, name, len))
		return true;
	if (name[0] != '_')
		return false;
	memcpy(buf, name, len);
	buf[len] = '\0';
	dm = sym_demangle(buf);
	if (!dm)
		return false;
	signature_name(dm, sig, sizeof(sig));
	ok = !strcmp(dm, want) || form_matches(want, sig);
	free(dm);
	return ok;
}

struct lk_func_ctx {
	const struct sym_spec *spec;
	struct sym_lookup *out;
	struct lk_image *li;
	int err;
};

static void lk_add_entry(struct lk_func_ctx *ctx, uint64_t vaddr, uint64_t size)
{
	if (ctx->err || !lk_exec_vaddr(ctx->li, vaddr))
		return;
	ctx->err = push_addr(ctx->out, vaddr + ctx->li->bias);
	if (!ctx->err && size)
		ctx->err = push_range(ctx->out, vaddr + ctx->li->bias, vaddr + size + ctx->li->bias);
}

static void lk_add_die_ranges(struct lk_func_ctx *ctx, Dwarf_Die *die, uint64_t vbias)
{
	Dwarf_Addr base, start, end;
	ptrdiff_t off = 0;

	while (!ctx->err && (off = dwarf_ranges(die, off, &base, &start, &end)) > 0) {
		if (lk_exec_vaddr(ctx->li, start + vbias))
			ctx->err = push_range(ctx->out, start + vbias + ctx->li->bias,
					      end + vbias + ctx->li->bias);
	}
}

static const char *die_name(Dwarf_Die *die, bool linkage)
{
	Dwarf_Attribute attr;
	const char *n = NULL;

	if (linkage) {
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
		if (!n)
			n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
		return n;
	}
	return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
}

static bool die_matches(const struct sym_spec *spec, Dwarf_Die *die)
{
	const char *n = die_name(die, true);

	if (n && name_matches(spec->function, n, strlen(n)))
		return true;
	n = die_name(die, false);
	return n && form_matches(spec->function, n);
}

/* Every DIE of a CU: inlined copies of the function (entry = a
 * breakpoint, ranges = its code) and out-of-line ones without a symbol. */
static void lk_walk_dies(struct lk_func_ctx *ctx, Dwarf_Die *die, uint64_t vbias, int depth)
{
	Dwarf_Die child;

	if (depth > 64 || dwarf_child(die, &child))
		return;
	do {
		int tag = dwarf_tag(&child);

		if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram) {
			if (die_matches(ctx->spec, &child)) {
				Dwarf_Addr entry;

				if (dwarf_entrypc(&child, &entry) == 0) {
					lk_add_entry(ctx, entry + vbias, 0);
					lk_add_die_ranges(ctx, &child, vbias);
				} else if (tag == DW_TAG_inlined_subroutine) {
					/* no entry_pc nor low_pc: the first range */
					Dwarf_Addr base, start, end;

					if (dwarf_ranges(&child, 0, &base, &start, &end) > 0) {
						lk_add_entry(ctx, start + vbias, 0);
						lk_add_die_ranges(ctx, &child, vbias);
					}
				}
			}
		}
		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
		    tag == DW_TAG_lexical_block || tag == DW_TAG_namespace ||
		    tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
		    tag == DW_TAG_compile_unit || tag == DW_TAG_partial_unit)
			lk_walk_dies(ctx, &child, vbias, depth + 1);
	} while (!ctx->err && dwarf_siblingof(&child, &child) == 0);
}

static int lk_lookup_function(struct lk_image *li, const struct sym_spec *spec,
			      struct sym_lookup *out)
{
	struct lk_func_ctx ctx = { .spec = spec, .out = out, .li = li };
	struct sym_image *img = li->img;
	Dwarf_Die *cu = NULL;
	Dwarf_Addr cubias;
	Dwarf *dw;
	const char *needle = spec->function, *p;
	size_t needle_len;
	int nsyms, depth = 0;

	/* The DWARF names the function by its last component, without
	 * template arguments or parameters: "step" for "ns::step<int>(int)"
	 * (a mangled name is searched as is: it is a linkage name). */
	for (p = spec->function; *p; p++) {
		if (*p == '<' || *p == '(')
			depth++;
		else if ((*p == '>' || *p == ')') && depth > 0)
			depth--;
		else if (!depth && p[0] == ':' && p[1] == ':')
			needle = p + 2;
	}
	needle_len = strcspn(needle, "<(");

	lk_load_dwfl(img);
	if (!img->mod)
		return 0;
	nsyms = dwfl_module_getsymtab(img->mod);
	for (int i = 1; i < nsyms && !ctx.err; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(img->mod, i, &sym, &addr, NULL, NULL,
							   NULL);

		if (!name || GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF)
			continue;
		if (!name_matches(spec->function, name, base_name_len(name)))
			continue;
		lk_add_entry(&ctx, addr - img->mod_bias, sym.st_size);
	}
	dw = lk_dwarf(img);
	if (dw && lk_dwarf_mentions(dw, needle, needle_len, true)) {
		while (!ctx.err && (cu = dwfl_module_nextcu(img->mod, cu, &cubias)))
			lk_walk_dies(&ctx, cu, cubias - img->mod_bias, 0);
	}
	return ctx.err;
}

/* ---- the space ---- */

/* The images of the space, each once (an image mapped at two places is two
 * entries). Returns how many, or -ENOMEM; *out is freed by the caller. */
static int lk_images(struct sym_space *sp, struct lk_image **out)
{
	struct lk_image *v = calloc(sp->nmaps ? sp->nmaps : 1, sizeof(*v));
	char link[80], exe[4096];
	ssize_t len;
	int n = 0;

	if (!v)
		return -ENOMEM;
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)sp->mem_pid);
	len = readlink(link, exe, sizeof(exe) - 1);
	exe[len > 0 ? len : 0] = '\0';
	if (len > 10 && !strcmp(exe + len - 10, " (deleted)"))
		exe[len - 10] = '\0';
	for (size_t i = 0; i < sp->nmaps; i++) {
		struct sym_mapping *m = &sp->maps[i];
		struct sym_image *img = sym_space_mapping_image(sp, m);
		int j;

		if (!img || img->is_vdso)
			continue;
		for (j = 0; j < n; j++) {
			if (v[j].img == img && v[j].bias == m->bias) {
				if (m->start < v[j].lo)
					v[j].lo = m->start;
				if (m->end > v[j].hi)
					v[j].hi = m->end;
				break;
			}
		}
		if (j < n)
			continue;
		v[n].img = img;
		v[n].bias = m->bias;
		v[n].lo = m->start;
		v[n].hi = m->end;
		v[n].exe = exe[0] && !strcmp(m->path, exe);
		n++;
	}
	*out = v;
	return n;
}

int sym_space_lookup(struct sym_space *sp, const struct sym_spec *spec, struct sym_lookup *out)
{
	struct lk_image *imgs = NULL;
	int n, err = 0;

	memset(out, 0, sizeof(*out));
	if (spec->kind == SYM_SPEC_LINE && (!spec->file || !spec->line))
		return -EINVAL;
	if (spec->kind == SYM_SPEC_FUNCTION && !spec->function)
		return -EINVAL;
	n = lk_images(sp, &imgs);
	if (n < 0)
		return n;
	/* The executable first: when it has the line (or the function),
	 * the libraries are not searched, and their DWARF (glibc's debug file
	 * takes ~0.3 s to open) is not even loaded. A FUNCTION of the program
	 * hides the libraries' ones of the same name (glibc has a step(), a
	 * user's `-p step` means theirs); what the executable lacks is looked
	 * up everywhere. */
	for (int pass = 0; spec->kind == SYM_SPEC_LINE && pass < 2 && !err &&
			   !out->nsites && !out->nranges;
	     pass++) {
		struct lk_line_ctx ctx = { .spec = spec, .out = out };

		for (int i = 0; i < n && !err; i++)
			if (imgs[i].exe == (pass == 0))
				err = lk_lookup_line(&imgs[i], &ctx, false);
		out->line = ctx.best;
		for (int i = 0; i < n && !err && ctx.best; i++) {
			size_t first = ctx.nrows;

			if (imgs[i].exe != (pass == 0))
				continue;
			err = lk_lookup_line(&imgs[i], &ctx, true);
			/* One breakpoint per function instance: its lowest
			 * statement row of the line (gdb's rule for break
			 * FILE:LINE), so a statement the scheduler split in
			 * two counts once per execution. */
			for (size_t a = first; a < ctx.nrows && !err; a++) {
				bool lowest = true;

				for (size_t b = first; b < ctx.nrows; b++) {
					if (b != a && ctx.rows[b].scope == ctx.rows[a].scope &&
					    (ctx.rows[b].vaddr < ctx.rows[a].vaddr ||
					     (ctx.rows[b].vaddr == ctx.rows[a].vaddr && b < a))) {
						lowest = false;
						break;
					}
				}
				if (lowest)
					err = push_addr(out, ctx.rows[a].vaddr + imgs[i].bias);
			}
			if (ctx.nrows > first)
				out->nimages++;
		}
		free(ctx.rows);
	}
	if (spec->kind == SYM_SPEC_FUNCTION) {
		for (int pass = 0; pass < 2 && !err && !out->nsites; pass++) {
			for (int i = 0; i < n && !err; i++) {
				size_t before = out->nsites;

				if (imgs[i].exe != (pass == 0))
					continue;
				err = lk_lookup_function(&imgs[i], spec, out);
				if (out->nsites > before)
					out->nimages++;
			}
		}
	}
	free(imgs);
	if (err) {
		sym_lookup_release(out);
		return err;
	}
	lookup_finish(out);
	return 0;
}

uint64_t sym_space_generation(const struct sym_space *sp)
{
	return sp->generation;
}

int sym_space_sections(struct sym_space *sp, const char *name, struct sym_section *out,
		       unsigned max, unsigned *count)
{
	struct lk_image *imgs = NULL;
	unsigned k = 0;
	int n;

	*count = 0;
	n = lk_images(sp, &imgs);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		struct sym_image *img = imgs[i].img;
		Elf_Scn *scn = NULL;
		size_t shstrndx;

		if (!img->elf || elf_getshdrstrndx(img->elf, &shstrndx))
			continue;
		while ((scn = elf_nextscn(img->elf, scn))) {
			GElf_Shdr sh;
			const char *sname;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
			    !(sh.sh_flags & SHF_ALLOC))
				continue;
			sname = elf_strptr(img->elf, shstrndx, sh.sh_name);
			if (!sname || strcmp(sname, name))
				continue;
			/* The bytes must be in the file (never trust a header). */
			if (sh.sh_offset > img->size || img->size - sh.sh_offset < sh.sh_size)
				continue;
			if (k < max) {
				out[k].image = img->path;
				out[k].image_id = (uint64_t)(uintptr_t)img;
				out[k].addr = sh.sh_addr + imgs[i].bias;
				out[k].vaddr = sh.sh_addr;
				out[k].data = img->data + sh.sh_offset;
				out[k].size = sh.sh_size;
			}
			k++;
		}
	}
	free(imgs);
	*count = k;
	return 0;
}

/* ---- Coz's coz.h sites (see sym_space_coz_sites() in symbols.h) ---- */

/* Reads a NUL-terminated string at ELF vaddr from the image file. */
static bool coz_read_string(const struct sym_image *img, uint64_t vaddr, char *buf, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (!sym_image_read(img, vaddr + i, &buf[i], 1))
			return false;
		if (!buf[i])
			return i > 0;
		if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] > 0x7e)
			return false;
	}
	buf[len - 1] = '\0';
	return true;
}

/* A DW_OP_addr X or DW_OP_lit/const N block (call values). */
static bool coz_block_value(Dwarf_Attribute *attr, bool *is_addr, uint64_t *v)
{
	Dwarf_Block b;

	if (!attr || dwarf_formblock(attr, &b) || b.length == 0)
		return false;
	if (b.data[0] == DW_OP_addr && b.length == 9) {
		memcpy(v, b.data + 1, 8);
		*is_addr = true;
		return true;
	}
	if (b.data[0] >= DW_OP_lit0 && b.data[0] <= DW_OP_lit31 && b.length == 1) {
		*v = b.data[0] - DW_OP_lit0;
		*is_addr = false;
		return true;
	}
	if (b.data[0] == DW_OP_const1u && b.length == 2) {
		*v = b.data[1];
		*is_addr = false;
		return true;
	}
	return false;
}

/* A call site in die's subtree passing (type in 1..3, name address) in
 * rdi and rsi: the call of _coz_get_counter(type, name) that GCC records
 * (-O1 and up, DWARF 5 call sites or their GNU forms). */
static bool coz_find_call(Dwarf_Die *die, unsigned *kind, uint64_t *name_addr, int *name_reg,
			  int depth)
{
	Dwarf_Die child;

	if (depth > 16 || dwarf_child(die, &child))
		return false;
	do {
		int tag = dwarf_tag(&child);

		if (tag == DW_TAG_call_site_parameter || tag == DW_TAG_GNU_call_site_parameter)
			continue;
		if (tag == DW_TAG_call_site || tag == DW_TAG_GNU_call_site) {
			Dwarf_Die p;
			bool have_kind = false, have_name = false;
			uint64_t k = 0, n = 0;
			int reg = -1;

			if (dwarf_child(&child, &p) == 0) {
				do {
					Dwarf_Attribute a, *loc, *val;
					Dwarf_Block lb;
					bool is_addr;
					uint64_t v;

					loc = dwarf_attr(&p, DW_AT_location, &a);
					if (!loc || dwarf_formblock(loc, &lb) || lb.length != 1)
						continue;
					val = dwarf_attr(&p, DW_AT_call_value, &a);
					if (!val)
						val = dwarf_attr(&p, DW_AT_GNU_call_site_value, &a);
					if (lb.data[0] == DW_OP_reg4 && val) {
						Dwarf_Block vb;

						/* the name in a register set before a loop:
						 * DW_OP_bregN 0 */
						if (!dwarf_formblock(val, &vb) && vb.length == 2 &&
						    vb.data[0] >= DW_OP_breg0 && vb.data[0] <= DW_OP_breg15 &&
						    vb.data[1] == 0)
							reg = vb.data[0] - DW_OP_breg0;
					}
					if (!coz_block_value(val, &is_addr, &v))
						continue;
					if (lb.data[0] == DW_OP_reg5 && !is_addr) { /* rdi */
						k = v;
						have_kind = true;
					} else if (lb.data[0] == DW_OP_reg4 && is_addr) { /* rsi */
						n = v;
						have_name = true;
					}
				} while (dwarf_siblingof(&p, &p) == 0);
			}
			if (have_kind && (have_name || reg >= 0) && k >= 1 && k <= 3) {
				*kind = (unsigned)k;
				*name_addr = n;
				*name_reg = have_name ? -1 : reg;
				return true;
			}
			continue;
		}
		if (coz_find_call(&child, kind, name_addr, name_reg, depth + 1))
			return true;
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

/* The constant value of a formal parameter of an inlined copy: its
 * DW_AT_const_value, or a location (list) entry "DW_OP_addr X;
 * DW_OP_stack_value" / "DW_OP_litN; DW_OP_stack_value". */
static bool coz_param_value(Dwarf_Die *param, bool want_addr, uint64_t *v)
{
	Dwarf_Attribute a;
	Dwarf_Addr base, start, end;
	Dwarf_Op *ops;
	size_t n;
	ptrdiff_t off = 0;
	Dwarf_Word w;

	if (!want_addr && dwarf_attr(param, DW_AT_const_value, &a) && !dwarf_formudata(&a, &w)) {
		*v = w;
		return true;
	}
	if (!dwarf_attr(param, DW_AT_location, &a))
		return false;
	while ((off = dwarf_getlocations(&a, off, &base, &start, &end, &ops, &n)) > 0) {
		if (n != 2 || ops[1].atom != DW_OP_stack_value)
			continue;
		if (want_addr && ops[0].atom == DW_OP_addr) {
			*v = ops[0].number;
			return true;
		}
		if (!want_addr && ops[0].atom >= DW_OP_lit0 && ops[0].atom <= DW_OP_lit31) {
			*v = ops[0].atom - DW_OP_lit0;
			return true;
		}
		if (!want_addr && (ops[0].atom == DW_OP_constu || ops[0].atom == DW_OP_const1u)) {
			*v = ops[0].number;
			return true;
		}
	}
	return false;
}

/* An inlined copy of coz.h's _call_coz_get_counter(type, name) in die's
 * subtree, with constant arguments (GCC -O1 and up). */
static void coz_find_inlined(Dwarf_Die *die, unsigned *kind, uint64_t *name_addr,
			     bool *have_kind, bool *have_name, int depth)
{
	Dwarf_Die child;

	if (depth > 16 || dwarf_child(die, &child))
		return;
	do {
		if (dwarf_tag(&child) == DW_TAG_inlined_subroutine) {
			Dwarf_Attribute a;
			const char *fn = dwarf_formstring(dwarf_attr_integrate(&child, DW_AT_name, &a));
			Dwarf_Die p;

			if (fn && !strcmp(fn, "_call_coz_get_counter") && !dwarf_child(&child, &p)) {
				do {
					const char *pn;
					uint64_t v;

					if (dwarf_tag(&p) != DW_TAG_formal_parameter)
						continue;
					pn = dwarf_formstring(dwarf_attr_integrate(&p, DW_AT_name, &a));
					if (!pn)
						continue;
					if (!strcmp(pn, "type") && !*have_kind &&
					    coz_param_value(&p, false, &v) && v >= 1 && v <= 3) {
						*kind = (unsigned)v;
						*have_kind = true;
					} else if (!strcmp(pn, "name") && !*have_name &&
						   coz_param_value(&p, true, &v)) {
						*name_addr = v;
						*have_name = true;
					}
				} while (dwarf_siblingof(&p, &p) == 0);
			}
		}
		coz_find_inlined(&child, kind, name_addr, have_kind, have_name, depth + 1);
	} while (dwarf_siblingof(&child, &child) == 0);
}

/* Without call-site DWARF (-O0): the code that stores the site's counter
 * pointer, `mov %rax, _counter(%rip)` (48 89 05 disp32), follows the call
 * `_call_coz_get_counter(type, name)`, set up by `mov $type, %edi` (bf imm32)
 * and a `lea name(%rip), %reg` (48 8d modrm disp32). Scanned in the code of
 * the site's scope only. */
static bool coz_scan_code(const struct sym_image *img, uint64_t lo, uint64_t hi,
			  uint64_t counter_vaddr, unsigned *kind, uint64_t *name_addr)
{
	const struct sym_load *l = sym_image_load_at(img, lo);
	const uint8_t *code;
	uint64_t len;

	if (!l || hi <= lo || hi - l->vaddr > l->filesz || l->offset + l->filesz > img->size)
		return false;
	code = img->data + l->offset + (lo - l->vaddr);
	len = hi - lo;
	for (uint64_t i = 0; i + 7 <= len; i++) {
		int32_t disp;
		bool have_kind = false, have_name = false;
		char buf[8];

		if (code[i] != 0x48 || code[i + 1] != 0x89 || code[i + 2] != 0x05)
			continue;
		memcpy(&disp, code + i + 3, 4);
		if (lo + i + 7 + (int64_t)disp != counter_vaddr)
			continue;
		for (uint64_t j = i >= 48 ? i - 48 : 0; j + 5 <= i; j++) {
			if (code[j] == 0xbf && code[j + 2] == 0 && code[j + 3] == 0 &&
			    code[j + 4] == 0 && code[j + 1] >= 1 && code[j + 1] <= 3) {
				*kind = code[j + 1];
				have_kind = true;
			}
			if (j + 7 <= i && code[j] == 0x48 && code[j + 1] == 0x8d &&
			    (code[j + 2] & 0xc7) == 0x05) {
				uint64_t target;

				memcpy(&disp, code + j + 3, 4);
				target = lo + j + 7 + (int64_t)disp;
				if (coz_read_string(img, target, buf, sizeof(buf))) {
					*name_addr = target;
					have_name = true;
				}
			}
		}
		if (have_kind && have_name)
			return true;
	}
	return false;
}

/* The name's address when GCC hoisted it into a register (DWARF number
 * dreg) before a loop: the one `lea disp(%rip), reg` of the function that
 * loads a string into it (48/4c 8d modrm disp32). */
static bool coz_scan_lea(const struct sym_image *img, Dwarf_Die *func, uint64_t vbias, int dreg,
			 uint64_t *name_addr)
{
	static const int x86_of_dwarf[16] = { 0, 2, 1, 3, 6, 7, 5, 4, 8, 9, 10, 11, 12, 13, 14, 15 };
	Dwarf_Addr base, start, end;
	ptrdiff_t off = 0;
	uint64_t found = 0;
	int reg, nfound = 0;
	uint8_t rex, modrm;

	if (!func || dreg < 0 || dreg > 15)
		return false;
	reg = x86_of_dwarf[dreg];
	rex = (uint8_t)(0x48 | (reg >= 8 ? 0x04 : 0));
	modrm = (uint8_t)(0x05 | ((reg & 7) << 3));
	while ((off = dwarf_ranges(func, off, &base, &start, &end)) > 0) {
		uint64_t lo = start + vbias, hi = end + vbias;
		const struct sym_load *l = sym_image_load_at(img, lo);
		const uint8_t *code;

		if (!l || hi <= lo || hi - l->vaddr > l->filesz || l->offset + l->filesz > img->size)
			continue;
		code = img->data + l->offset + (lo - l->vaddr);
		for (uint64_t i = 0; i + 7 <= hi - lo; i++) {
			int32_t disp;
			uint64_t target;
			char buf[8];

			if (code[i] != rex || code[i + 1] != 0x8d || code[i + 2] != modrm)
				continue;
			memcpy(&disp, code + i + 3, 4);
			target = lo + i + 7 + (int64_t)disp;
			if (!coz_read_string(img, target, buf, sizeof(buf)))
				continue;
			if (nfound && target == found)
				continue;
			found = target;
			nfound++;
		}
	}
	if (nfound != 1)
		return false;
	*name_addr = found;
	return true;
}

/* The address of a static variable: its location's first operation,
 * DW_OP_addr, or DW_OP_addrx (Clang, DWARF 5; Clang may describe a flag as
 * "addrx; deref_size 1; ...; stack_value", still stored at that address). */
static bool die_addr(Dwarf_Die *die, uint64_t *addr)
{
	Dwarf_Attribute a, res;
	Dwarf_Addr v;
	Dwarf_Op *ops;
	size_t n;

	if (!dwarf_attr(die, DW_AT_location, &a) || dwarf_getlocation(&a, &ops, &n) || n < 1)
		return false;
	if (ops[0].atom == DW_OP_addr && n == 1) {
		*addr = ops[0].number;
		return true;
	}
	if ((ops[0].atom == DW_OP_addrx || ops[0].atom == DW_OP_GNU_addr_index) &&
	    !dwarf_getlocation_attr(&a, &ops[0], &res) && !dwarf_formaddr(&res, &v)) {
		*addr = v;
		return true;
	}
	return false;
}

struct coz_ctx {
	struct lk_image *li;
	Dwarf_Die func; /* the subprogram being walked */
	bool have_func;
	uint64_t vbias; /* DWARF address -> ELF vaddr */
	const char *cu_name;
	uint64_t scratch_start, scratch_end;
	struct sym_coz_site *sites;
	size_t nsites, cap;
	unsigned skipped;
	int err;
};

/* One site: its two statics, its name and type (strict: from the code
 * only, never guessed: Clang's sites, several to a scope). */
static void coz_add_site(struct coz_ctx *ctx, Dwarf_Die *scope, Dwarf_Die *var_c,
			 Dwarf_Die *var_i, bool strict)
{
	struct sym_coz_site *s;
	uint64_t c_addr, i_addr, name_addr = 0;
	unsigned kind = 0;
	Dwarf_Word line = 0;
	char name[sizeof(s->name)];
	bool have_kind = false, have_name = false;
	int name_reg = -1;

	if (!die_addr(var_c, &c_addr) || !die_addr(var_i, &i_addr))
		return;
	if (strict) {
		Dwarf_Addr base, start, end;
		ptrdiff_t off = 0;
		bool found = false;

		while (!found && (off = dwarf_ranges(scope, off, &base, &start, &end)) > 0)
			found = coz_scan_code(ctx->li->img, start + ctx->vbias, end + ctx->vbias,
					      c_addr + ctx->vbias, &kind, &name_addr);
		if (!found || !coz_read_string(ctx->li->img, name_addr, name, sizeof(name))) {
			ctx->skipped++;
			return;
		}
		goto add;
	}
	coz_find_inlined(scope, &kind, &name_addr, &have_kind, &have_name, 0);
	if (have_kind && have_name) {
		name_addr += ctx->vbias;
	} else if (coz_find_call(scope, &kind, &name_addr, &name_reg, 0)) {
		if (name_reg < 0)
			name_addr += ctx->vbias;
		else if (!coz_scan_lea(ctx->li->img, ctx->have_func ? &ctx->func : NULL,
				       ctx->vbias, name_reg, &name_addr))
			kind = 0;
	} else {
		Dwarf_Addr base, start, end;
		ptrdiff_t off = 0;

		while ((off = dwarf_ranges(scope, off, &base, &start, &end)) > 0)
			if (coz_scan_code(ctx->li->img, start + ctx->vbias, end + ctx->vbias,
					  c_addr + ctx->vbias, &kind, &name_addr))
				break;
		if (off <= 0)
			kind = 0;
	}
	if (!kind || !coz_read_string(ctx->li->img, name_addr, name, sizeof(name))) {
		/* COZ_PROGRESS's own name: __FILE__ (the CU's name as the
		 * compiler was given it) and the line of the macro. */
		Dwarf_Attribute a;

		dwarf_formudata(dwarf_attr(var_c, DW_AT_decl_line, &a), &line);
		snprintf(name, sizeof(name), "%s:%u", ctx->cu_name ? ctx->cu_name : "?",
			 (unsigned)line);
		kind = 1;
	}
add:
	if (ctx->nsites == ctx->cap) {
		size_t ncap = ctx->cap ? ctx->cap * 2 : 8;
		struct sym_coz_site *n = realloc(ctx->sites, ncap * sizeof(*n));

		if (!n) {
			ctx->err = -ENOMEM;
			return;
		}
		ctx->sites = n;
		ctx->cap = ncap;
	}
	s = &ctx->sites[ctx->nsites++];
	memset(s, 0, sizeof(*s));
	s->image = ctx->li->img->path;
	s->image_id = (uint64_t)(uintptr_t)ctx->li->img;
	s->counter_addr = c_addr + ctx->vbias + ctx->li->bias;
	s->initialized_addr = i_addr + ctx->vbias + ctx->li->bias;
	s->kind = kind;
	memcpy(s->name, name, sizeof(name));
	s->scratch_start = ctx->scratch_start;
	s->scratch_end = ctx->scratch_end;
}

#define COZ_MAX_PER_SCOPE 64

static void coz_scope(struct coz_ctx *ctx, Dwarf_Die *scope)
{
	Dwarf_Die child, var_c[COZ_MAX_PER_SCOPE], var_i[COZ_MAX_PER_SCOPE];
	unsigned nc = 0, ni = 0;

	if (dwarf_child(scope, &child))
		return;
	do {
		const char *n;

		if (dwarf_tag(&child) != DW_TAG_variable)
			continue;
		n = dwarf_diename(&child);
		if (n && !strcmp(n, "_counter") && nc < COZ_MAX_PER_SCOPE)
			var_c[nc++] = child;
		else if (n && !strcmp(n, "_initialized") && ni < COZ_MAX_PER_SCOPE)
			var_i[ni++] = child;
	} while (dwarf_siblingof(&child, &child) == 0);
	/* GCC: one COZ_ macro's block, one of each. Clang: every site of a
	 * function in the function's scope, in pairs in source order. */
	if (nc != ni || nc == 0)
		return;
	for (unsigned k = 0; k < nc && !ctx->err; k++)
		coz_add_site(ctx, scope, &var_c[k], &var_i[k], nc > 1);
}

static void coz_walk(struct coz_ctx *ctx, Dwarf_Die *die, int depth)
{
	Dwarf_Die child;

	if (depth > 64 || ctx->err || dwarf_child(die, &child))
		return;
	do {
		int tag = dwarf_tag(&child);

		if (tag == DW_TAG_subprogram || tag == DW_TAG_lexical_block ||
		    tag == DW_TAG_inlined_subroutine || tag == DW_TAG_namespace) {
			Dwarf_Die saved = ctx->func;
			bool had = ctx->have_func;

			if (tag == DW_TAG_subprogram) {
				ctx->func = child;
				ctx->have_func = true;
			}
			coz_scope(ctx, &child);
			coz_walk(ctx, &child, depth + 1);
			ctx->func = saved;
			ctx->have_func = had;
		}
	} while (!ctx->err && dwarf_siblingof(&child, &child) == 0);
}

int sym_space_coz_sites(struct sym_space *sp, struct sym_coz_site **out, size_t *count,
			unsigned *images, unsigned *skipped)
{
	static const char marker[] = "_coz_get_counter";
	struct coz_ctx ctx = { 0 };
	struct lk_image *imgs = NULL;
	int n;

	*out = NULL;
	*count = 0;
	*images = 0;
	*skipped = 0;
	n = lk_images(sp, &imgs);
	if (n < 0)
		return n;
	for (int i = 0; i < n && !ctx.err; i++) {
		struct sym_image *img = imgs[i].img;
		uint64_t end = 0;
		Dwarf_Die *cu = NULL;
		Dwarf_Addr cubias;

		/* Every translation unit that includes coz.h names the function
		 * it looks up with dlsym: images without the string are skipped
		 * before their DWARF is read. */
		if (!img->data || !memmem(img->data, img->size, marker, sizeof(marker)))
			continue;
		(*images)++;
		/* Counters go after the image's bss, up to its page end: mapped,
		 * zeroed by the loader, and used by nobody (the heap starts at
		 * the next page or later). */
		for (unsigned k = 0; k < img->nloads; k++)
			if ((img->loads[k].flags & PF_W) &&
			    img->loads[k].vaddr + img->loads[k].memsz > end)
				end = img->loads[k].vaddr + img->loads[k].memsz;
		if (!end || !lk_dwarf(img))
			continue;
		ctx.li = &imgs[i];
		ctx.scratch_start = ((end + 15) & ~15ULL) + imgs[i].bias;
		ctx.scratch_end = ((end + 4095) & ~4095ULL) + imgs[i].bias;
		while (!ctx.err && (cu = dwfl_module_nextcu(img->mod, cu, &cubias))) {
			ctx.vbias = cubias - img->mod_bias;
			ctx.cu_name = dwarf_diename(cu);
			coz_walk(&ctx, cu, 0);
		}
	}
	free(imgs);
	if (ctx.err) {
		free(ctx.sites);
		return ctx.err;
	}
	*out = ctx.sites;
	*count = ctx.nsites;
	*skipped = ctx.skipped;
	return 0;
}
