/*
 * symbols/cuscope.c against libdw: for addresses in every unit of libc's
 * debug file (libc6-dbg) and of psup's own binary, the function scopes
 * (inlined subroutines, then the subprogram) must be the DIEs libdw's two
 * walks give: dwarf_getscopes() for the innermost scope, then
 * dwarf_getscopes_die() for its parents, as symbols/image.c asked before.
 * Addresses: the first, middle and last byte and one past the end of every
 * fifth code DIE's ranges (libdw's walks cost ~80 us an address: all of
 * libc's 155,000 took 12 s), plus random addresses in each unit's ranges.
 */
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "symbols/symbols-internal.h"
#include "tests/unit/tap.h"

#define MAXS 256

/* libdw's answer, as image.c computed it before cuscope.c. */
static int libdw_scopes(Dwarf_Die *cudie, Dwarf_Addr addr, Dwarf_Die *out, int max)
{
	Dwarf_Die *scopes = NULL, inner;
	int ns, n = 0;

	ns = dwarf_getscopes(cudie, addr, &scopes);
	if (ns <= 0)
		return 0;
	inner = scopes[0];
	free(scopes);
	scopes = NULL;
	ns = dwarf_getscopes_die(&inner, &scopes);
	for (int i = 0; i < ns && n < max; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		out[n++] = scopes[i];
		if (tag == DW_TAG_subprogram)
			break;
	}
	free(scopes);
	return n;
}

struct tally {
	unsigned long asked, found, bad, dies;
};

static void check_addr(struct sym_cu_index **idx, Dwarf_Die *cudie, Dwarf_Addr addr, struct tally *t,
		       const char *what)
{
	Dwarf_Die a[MAXS], b[MAXS];
	int na = libdw_scopes(cudie, addr, a, MAXS);
	int nb = sym_cu_scopes(idx, cudie, addr, b, MAXS);
	bool same = na == nb;

	for (int i = 0; same && i < na; i++)
		same = dwarf_dieoffset(&a[i]) == dwarf_dieoffset(&b[i]);
	t->asked++;
	t->found += na > 0;
	if (!same && t->bad++ < 5)
		fprintf(stderr, "%s: 0x%llx in unit at 0x%llx: libdw %d scopes (innermost 0x%llx), cuscope %d (0x%llx)\n",
			what,
			(unsigned long long)addr, (unsigned long long)dwarf_dieoffset(cudie), na,
			na > 0 ? (unsigned long long)dwarf_dieoffset(&a[0]) : 0ULL, nb,
			nb > 0 ? (unsigned long long)dwarf_dieoffset(&b[0]) : 0ULL);
}

/* Every code DIE under die: its bounds. */
static void walk_bounds(struct sym_cu_index **idx, Dwarf_Die *cudie, Dwarf_Die *die, struct tally *t,
			const char *what, unsigned depth)
{
	Dwarf_Die child;

	if (depth > 64 || dwarf_child(die, &child) != 0)
		return;
	do {
		Dwarf_Addr base, start, end;
		ptrdiff_t off = 0;

		while ((off = dwarf_ranges(&child, off, &base, &start, &end)) > 0 && t->dies++ % 5 == 0) {
			check_addr(idx, cudie, start, t, what);
			check_addr(idx, cudie, start + (end - start) / 2, t, what);
			if (end > start)
				check_addr(idx, cudie, end - 1, t, what);
			check_addr(idx, cudie, end, t, what);
		}
		walk_bounds(idx, cudie, &child, t, what, depth + 1);
	} while (dwarf_siblingof(&child, &child) == 0);
}

static const Dwfl_Callbacks callbacks = {
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

static void check_file(const char *path, const char *what, unsigned max_units)
{
	Dwfl *dwfl = dwfl_begin(&callbacks);
	Dwfl_Module *mod;
	Dwarf_Die *cu = NULL;
	Dwarf_Addr bias;
	struct sym_cu_index *idx = NULL;
	struct tally t = { 0 };
	unsigned units = 0;
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	mod = dwfl ? dwfl_report_offline(dwfl, what, path, -1) : NULL;
	dwfl_report_end(dwfl, NULL, NULL);
	if (!mod || !dwfl_module_getdwarf(mod, &bias)) {
		printf("# %s: no DWARF for %s, skipped\n", what, path);
		if (dwfl)
			dwfl_end(dwfl);
		return;
	}
	while ((cu = dwfl_nextcu(dwfl, cu, &bias)) != NULL && units < max_units) {
		Dwarf_Addr base, start, end;
		ptrdiff_t off = 0;

		units++;
		walk_bounds(&idx, cu, cu, &t, what, 0);
		while ((off = dwarf_ranges(cu, off, &base, &start, &end)) > 0)
			for (int i = 0; i < 8 && end > start; i++)
				check_addr(&idx, cu, start + psup_rand_next(&x) % (end - start), &t, what);
	}
	printf("# %s: %u units, %lu addresses, %lu inside a function, %lu differ\n", what, units, t.asked, t.found,
	       t.bad);
	CHECK(t.found > 0);
	CHECK_EQ_INT(t.bad, 0);
	sym_cu_index_free(idx);
	dwfl_end(dwfl);
}

int main(int argc, char **argv)
{
	char self[4096];
	ssize_t n;

	(void)argc;
	/* libc: its debug file by build-id (libc6-dbg), found by libdwfl. */
	check_file("/lib/x86_64-linux-gnu/libc.so.6", "libc", 100000);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = 0;
	(void)argv;
	check_file(self, "this test", 100000);
	return tap_done();
}
