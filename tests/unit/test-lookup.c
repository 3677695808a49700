/*
 * symbols/lookup.c: FILE:LINE and FUNCTION specs to code addresses, against
 * fixtures compiled at test time (-O0, -O2, non-PIE, static with
 * --gc-sections, stripped with a debuglink, C++; a shared library; an
 * always_inline helper inlined twice). Each site found must resolve back
 * (sym_space_resolve) to the line or function asked for; a function's entry
 * must be the address the child printed; a line without code moves to the
 * next one. Skips (77) only when cc is missing.
 */
#include "symbols/symbols.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "tests/unit/progress-child.h"
#include "tests/unit/tap.h"

static void check_parse(void)
{
	struct sym_spec s;
	char why[256];

	CHECK_EQ_INT(sym_spec_parse("main.c:12", &s, why, sizeof(why)), 0);
	CHECK_EQ_INT(s.kind, SYM_SPEC_LINE);
	CHECK(s.file && !strcmp(s.file, "main.c"));
	CHECK_EQ_INT(s.line, 12);
	sym_spec_release(&s);
	CHECK_EQ_INT(sym_spec_parse("src/a/b.cc:7", &s, why, sizeof(why)), 0);
	CHECK(s.kind == SYM_SPEC_LINE && !strcmp(s.file, "src/a/b.cc") && s.line == 7);
	sym_spec_release(&s);
	CHECK_EQ_INT(sym_spec_parse("ns::scale", &s, why, sizeof(why)), 0);
	CHECK(s.kind == SYM_SPEC_FUNCTION && !strcmp(s.function, "ns::scale"));
	sym_spec_release(&s);
	CHECK_EQ_INT(sym_spec_parse("work", &s, why, sizeof(why)), 0);
	CHECK(s.kind == SYM_SPEC_FUNCTION && !strcmp(s.function, "work"));
	sym_spec_release(&s);
	CHECK_EQ_INT(sym_spec_parse("Makefile:3", &s, why, sizeof(why)), 0);
	CHECK(s.kind == SYM_SPEC_LINE && s.line == 3);
	sym_spec_release(&s);
	/* mistakes get a message */
	CHECK_EQ_INT(sym_spec_parse("main.c:", &s, why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "main.c:") != NULL);
	sym_spec_release(&s);
	CHECK_EQ_INT(sym_spec_parse("main.c:1x", &s, why, sizeof(why)), -EINVAL);
	sym_spec_release(&s);
	CHECK_EQ_INT(sym_spec_parse("main.c:0", &s, why, sizeof(why)), -EINVAL);
	sym_spec_release(&s);
	CHECK_EQ_INT(sym_spec_parse("", &s, why, sizeof(why)), -EINVAL);
	sym_spec_release(&s);
	CHECK_EQ_INT(sym_spec_parse(":12", &s, why, sizeof(why)), -EINVAL);
	sym_spec_release(&s);
	CHECK_EQ_INT(sym_spec_parse("a.c:1,b.c:2", &s, why, sizeof(why)), -EINVAL);
	sym_spec_release(&s);

	CHECK(sym_path_has_suffix("/src/main.c", "main.c"));
	CHECK(sym_path_has_suffix("/src/main.c", "src/main.c"));
	CHECK(sym_path_has_suffix("/src/main.c", "/src/main.c"));
	CHECK(sym_path_has_suffix("main.c", "main.c"));
	CHECK(!sym_path_has_suffix("/src/domain.c", "main.c"));
	CHECK(!sym_path_has_suffix("/src/main.c", "rc/main.c"));
	CHECK(!sym_path_has_suffix(NULL, "main.c"));
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = s ? strlen(s) : 0, b = strlen(suffix);

	return s && a >= b && !strcmp(s + a - b, suffix);
}

static int lookup(struct sym_space *sp, const char *text, struct sym_lookup *l)
{
	struct sym_spec s;
	char why[256];
	int err = sym_spec_parse(text, &s, why, sizeof(why));

	if (!err)
		err = sym_space_lookup(sp, &s, l);
	sym_spec_release(&s);
	return err;
}

/* Every site of l resolves to file:line, innermost frame (inlined code at
 * its own line); every range too. */
static void check_line_sites(struct sym_space *sp, const struct sym_lookup *l, const char *file,
			     unsigned line, const char *what)
{
	for (size_t i = 0; i < l->nsites; i++) {
		struct sym_loc loc;

		CHECK_EQ_INT(sym_space_resolve(sp, l->sites[i], false, &loc), 0);
		CHECK(loc.nframes > 0);
		if (loc.nframes == 0)
			continue;
		if (!ends_with(loc.frames[0].file, file) || loc.frames[0].line != line)
			fprintf(stderr, "%s: site 0x%llx is %s:%u, expected %s:%u\n", what,
				(unsigned long long)l->sites[i],
				loc.frames[0].file ? loc.frames[0].file : "?", loc.frames[0].line,
				file, line);
		CHECK(ends_with(loc.frames[0].file, file));
		CHECK_EQ_INT(loc.frames[0].line, line);
		CHECK(sym_lookup_contains(l, l->sites[i]));
	}
	for (size_t i = 0; i < l->nranges; i++) {
		struct sym_loc loc;

		CHECK(l->ranges[i].end > l->ranges[i].start);
		if (i)
			CHECK(l->ranges[i].start > l->ranges[i - 1].end);
		CHECK_EQ_INT(sym_space_resolve(sp, l->ranges[i].start, false, &loc), 0);
		CHECK(loc.nframes > 0 && loc.frames[0].line == line);
	}
}

static void check_c_variant(const struct pf_variant *v)
{
	unsigned body = fx_marker(pf_src, "BODY"), helper = fx_marker(pf_src, "HELPER");
	unsigned comment = fx_marker(pf_src, "COMMENT"), lib_body = fx_marker(pf_lib_src, "LIB_BODY");
	struct sym_space *sp = NULL;
	struct sym_lookup l;
	struct pf_child c;
	char spec[64];

	printf("# %s\n", v->name);
	if (pf_start(&c, v->name, 4, true)) {
		CHECK(!"fixture start");
		pf_kill(&c);
		return;
	}
	CHECK(c.work != 0 && c.other != 0);
	CHECK_EQ_INT(sym_space_new(c.pid, &sp), 0);
	if (!sp) {
		pf_kill(&c);
		return;
	}

	/* a plain statement: one site, at the line */
	snprintf(spec, sizeof(spec), "pf.c:%u", body);
	CHECK_EQ_INT(lookup(sp, spec, &l), 0);
	CHECK_EQ_INT(l.nsites, 1);
	CHECK_EQ_INT(l.line, body);
	CHECK(ends_with(l.file, "/pf.c"));
	CHECK(l.other_file == NULL);
	CHECK_EQ_INT(l.nimages, 1);
	check_line_sites(sp, &l, "pf.c", body, spec);
	sym_lookup_release(&l);

	/* a comment line: the next line with code */
	snprintf(spec, sizeof(spec), "pf.c:%u", comment);
	CHECK_EQ_INT(lookup(sp, spec, &l), 0);
	CHECK_EQ_INT(l.line, body);
	CHECK_EQ_INT(l.nsites, 1);
	sym_lookup_release(&l);

	/* a line of an always_inline helper: one site per inlined copy */
	snprintf(spec, sizeof(spec), "pf.c:%u", helper);
	CHECK_EQ_INT(lookup(sp, spec, &l), 0);
	CHECK_EQ_INT(l.nsites, 2);
	check_line_sites(sp, &l, "pf.c", helper, spec);
	sym_lookup_release(&l);

	/* the same by function name: the inlined copies' entries */
	CHECK_EQ_INT(lookup(sp, "helper", &l), 0);
	CHECK_EQ_INT(l.nsites, 2);
	for (size_t i = 0; i < l.nsites; i++) {
		struct sym_loc loc;

		CHECK_EQ_INT(sym_space_resolve(sp, l.sites[i], false, &loc), 0);
		CHECK(loc.nframes >= 2 && loc.frames[0].function &&
		      !strcmp(loc.frames[0].function, "helper"));
	}
	sym_lookup_release(&l);

	/* a function: its entry, the address the program printed */
	CHECK_EQ_INT(lookup(sp, "work", &l), 0);
	CHECK_EQ_INT(l.nsites, 1);
	if (l.nsites == 1)
		CHECK_EQ_INT(l.sites[0], c.work);
	CHECK(l.nranges >= 1 && sym_lookup_contains(&l, c.work));
	sym_lookup_release(&l);

	/* in the library (shared or linked in) */
	CHECK_EQ_INT(lookup(sp, "lib_step", &l), 0);
	CHECK_EQ_INT(l.nsites, 1);
	sym_lookup_release(&l);
	/* a versioned name in the symbol table (lib_versioned@@PL_1, as
	 * glibc's pthread_mutex_unlock@@GLIBC_2.2.5) is the function's name */
	if (v->shared_lib) {
		CHECK_EQ_INT(lookup(sp, "lib_versioned", &l), 0);
		CHECK_EQ_INT(l.nsites, 1);
		sym_lookup_release(&l);
	}
	snprintf(spec, sizeof(spec), "pl.c:%u", lib_body);
	CHECK_EQ_INT(lookup(sp, spec, &l), 0);
	CHECK_EQ_INT(l.nsites, 1);
	check_line_sites(sp, &l, "pl.c", lib_body, spec);
	sym_lookup_release(&l);

	/* nothing there: not an error, nothing found */
	CHECK_EQ_INT(lookup(sp, "no_such_function", &l), 0);
	CHECK_EQ_INT(l.nsites, 0);
	CHECK_EQ_INT(l.nranges, 0);
	sym_lookup_release(&l);
	CHECK_EQ_INT(lookup(sp, "nosuch.c:3", &l), 0);
	CHECK_EQ_INT(l.nsites, 0);
	CHECK_EQ_INT(l.line, 0);
	sym_lookup_release(&l);
	/* a suffix must match at a '/' */
	CHECK_EQ_INT(lookup(sp, "f.c:3", &l), 0);
	CHECK_EQ_INT(l.nsites, 0);
	sym_lookup_release(&l);
	/* past the last line with code */
	CHECK_EQ_INT(lookup(sp, "pf.c:100000", &l), 0);
	CHECK_EQ_INT(l.nsites, 0);
	sym_lookup_release(&l);

	/* psup.h's section, found from the section headers */
	{
		struct sym_section secs[8];
		unsigned n = 0, want = v->shared_lib ? 2 : 1;

		CHECK_EQ_INT(sym_space_sections(sp, "psup_points", secs, 8, &n), 0);
		CHECK_EQ_INT(n, want);
		for (unsigned i = 0; i < n && i < 8; i++) {
			uint64_t magic = 0;
			struct iovec lo = { &magic, 8 }, re = { (void *)(uintptr_t)secs[i].addr, 8 };

			CHECK(secs[i].size >= 24);
			/* the section's address in the process holds what the file says */
			CHECK_EQ_INT(process_vm_readv(c.pid, &lo, 1, &re, 1, 0), 8);
			CHECK(!memcmp(&magic, secs[i].data, 8));
		}
	}

	sym_space_free(sp);
	pf_kill(&c);
}

static void check_cxx(void)
{
	struct sym_space *sp = NULL;
	struct sym_lookup l;
	struct pf_child c;
	char spec[64];

	printf("# pfx\n");
	if (pf_start(&c, "pfx", 4, false)) {
		CHECK(!"fixture start");
		pf_kill(&c);
		return;
	}
	CHECK_EQ_INT(sym_space_new(c.pid, &sp), 0);
	if (!sp) {
		pf_kill(&c);
		return;
	}
	CHECK_EQ_INT(lookup(sp, "ns::scale", &l), 0);
	CHECK_EQ_INT(l.nsites, 1);
	sym_lookup_release(&l);
	CHECK_EQ_INT(lookup(sp, "ns::scale(int)", &l), 0);
	CHECK_EQ_INT(l.nsites, 1);
	sym_lookup_release(&l);
	/* both instantiations of the template */
	CHECK_EQ_INT(lookup(sp, "ns::step<int>", &l), 0);
	CHECK_EQ_INT(l.nsites, 1);
	sym_lookup_release(&l);
	CHECK_EQ_INT(lookup(sp, "ns::step", &l), 0);
	CHECK_EQ_INT(l.nsites, 2);
	CHECK_EQ_INT(l.nimages, 1);
	sym_lookup_release(&l);
	/* unqualified: the program's own, not glibc's step() */
	CHECK_EQ_INT(lookup(sp, "step", &l), 0);
	CHECK_EQ_INT(l.nsites, 2);
	CHECK_EQ_INT(l.nimages, 1);
	sym_lookup_release(&l);
	/* a name the executable lacks: the libraries' */
	CHECK_EQ_INT(lookup(sp, "getpid", &l), 0);
	CHECK(l.nsites >= 1);
	sym_lookup_release(&l);
	snprintf(spec, sizeof(spec), "pfx.cc:%u", fx_marker(pfx_src, "SCALE"));
	CHECK_EQ_INT(lookup(sp, spec, &l), 0);
	CHECK_EQ_INT(l.nsites, 1);
	sym_lookup_release(&l);
	sym_space_free(sp);
	pf_kill(&c);
}

int main(void)
{
	check_parse();
	pf_build();
	for (size_t i = 0; i < sizeof(pf_variants) / sizeof(pf_variants[0]); i++)
		if (!pf_variants[i].cxx)
			check_c_variant(&pf_variants[i]);
	if (pf_have_cxx)
		check_cxx();
	pf_cleanup();
	return tap_done();
}
