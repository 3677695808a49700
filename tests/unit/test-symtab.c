/* The sorted symbol table (symbols/symtab.c) gives dwfl_module_addrinfo()'s
 * name at every address asked: around every symbol's start, middle and end
 * (all of them where the table is small, a spread where libdw's linear scan
 * makes asking all too slow), around every section bound, and at random
 * addresses; in this test's own crafted symbols, in libc, in psup and, when
 * installed, in node (109,000 symbols) and libjvm. */
#include "symbols/symbols.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbols/symbols-internal.h"
#include "tests/unit/image-fixture.h"
#include "tests/unit/tap.h"

/*
 * Symbols whose answer depends on libdwfl's finer rules: nested sized
 * symbols of different bindings and starts (the answer depends on the
 * table's order), aliases of different sizes and bindings at one address,
 * sizeless labels after and inside sized functions, a sizeless global at
 * an address with a local sized one, labels in other sections (a label
 * is no answer for an address past its section's end), an absolute symbol
 * and a GNU unique object.
 */
__asm__(".text\n"
	".p2align 6\n"
	".globl st_outer\n .type st_outer,@function\n"
	".weak st_mid\n .type st_mid,@function\n"
	".type st_inner,@function\n"
	"st_outer:\n .fill 8,1,0x90\n"
	"st_mid:\n .fill 8,1,0x90\n"
	"st_inner:\n .fill 16,1,0x90\n"
	".size st_inner, 16\n"
	".fill 8,1,0x90\n"
	".size st_mid, 32\n"
	".fill 24,1,0x90\n"
	".size st_outer, 64\n"
	".globl st_alias_g\n .type st_alias_g,@function\n"
	".weak st_alias_w\n .type st_alias_w,@function\n"
	".type st_alias_l,@function\n"
	".globl st_alias_g2\n .type st_alias_g2,@function\n"
	"st_alias_l:\nst_alias_w:\nst_alias_g:\nst_alias_g2:\n"
	".fill 32,1,0x90\n"
	".size st_alias_l, 8\n .size st_alias_w, 16\n .size st_alias_g, 32\n"
	".size st_alias_g2, 32\n"
	"st_label_local:\n .fill 8,1,0x90\n"
	".globl st_label_global\n"
	"st_label_global:\n .fill 8,1,0x90\n"
	"st_label_local2:\n"
	".type st_sized_local,@function\n"
	"st_sized_local:\n .fill 8,1,0x90\n .size st_sized_local, 8\n"
	".globl st_label_at_local\n"
	"st_label_at_local = st_sized_local + 4\n"
	".type st_with_label,@function\n"
	"st_with_label:\n .fill 4,1,0x90\n"
	"st_label_inside:\n .fill 12,1,0x90\n .size st_with_label, 16\n"
	".fill 16,1,0x90\n"
	"st_label_tail:\n .fill 16,1,0xc3\n"
	".data\n"
	".globl st_data_label\n"
	"st_data_label:\n .quad 0\n"
	".globl st_unique\n .type st_unique,@gnu_unique_object\n .size st_unique, 8\n"
	"st_unique:\n .quad 0\n"
	".globl st_abs\n st_abs = 0x1234\n"
	".section st_sec_a,\"ax\",@progbits\n"
	".globl st_sec_a_start\n"
	"st_sec_a_start:\n .fill 8,1,0x90\n"
	".globl st_label_a\n"
	"st_label_a:\n .fill 8,1,0x90\n"
	".section st_sec_b,\"ax\",@progbits\n"
	".fill 16,1,0x90\n"
	".globl st_label_b\n"
	"st_label_b:\n .fill 8,1,0x90\n"
	".globl st_sec_b_end\n"
	"st_sec_b_end:\n"
	".text\n");

struct checker {
	struct sym_image *img;
	unsigned asked, bad;
};

static void check_at(struct checker *c, uint64_t v)
{
	GElf_Off off;
	GElf_Sym sym;
	const char *want = dwfl_module_addrinfo(c->img->mod, v + c->img->mod_bias, &off, &sym, NULL,
						NULL, NULL);
	const char *got = sym_image_symbol_at(c->img, v);

	c->asked++;
	if (!want != !got || (want && strcmp(want, got))) {
		if (c->bad++ < 8)
			fprintf(stderr, "%s 0x%" PRIx64 ": libdw %s, table %s\n", c->img->path, v,
				want ? want : "NULL", got ? got : "NULL");
	}
}

/*
 * sym_loc.near at v (in no symbol) against the table read whole: a function
 * starting last at or below v, ending at or below it, in v's executable
 * section. Of several starting there, any that qualifies may be named.
 */
static void check_near(struct sym_image *img, uint64_t v, unsigned *asked, unsigned *bad)
{
	uint64_t best = 0, lo = 0, hi = 0;
	int n = dwfl_module_getsymtab(img->mod), qualify = 0, found = 0;
	Elf *elf = img->elf;
	Elf_Scn *scn = NULL;
	struct sym_loc loc;
	bool ok;

	memset(&loc, 0, sizeof(loc));
	sym_image_resolve(img, v, &loc);
	if (loc.nframes)
		return; /* DWARF names it */
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR) &&
		    (sh.sh_flags & SHF_ALLOC) && sh.sh_type != SHT_NOBITS && v >= sh.sh_addr &&
		    v - sh.sh_addr < sh.sh_size)
			lo = sh.sh_addr, hi = sh.sh_addr + sh.sh_size;
	}
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 1; i < n; i++) {
			GElf_Sym sym;
			GElf_Addr a;
			const char *name = dwfl_module_getsym_info(img->mod, i, &sym, &a, NULL, NULL, NULL);
			int type = GELF_ST_TYPE(sym.st_info);
			uint64_t start = a - img->mod_bias;

			if (!name || !*name || sym.st_shndx == SHN_UNDEF ||
			    (type != STT_FUNC && type != STT_GNU_IFUNC) || a < img->mod_bias || start > v)
				continue;
			if (pass == 0 && start > best)
				best = start;
			if (pass == 1 && start == best) {
				bool fits = start >= lo && (start + sym.st_size <= v || !sym.st_size);
				char *dm = sym_demangle(name);

				found++;
				if (fits && loc.near && !strcmp(loc.near, dm ? dm : name))
					qualify = 2;
				else if (fits && !qualify)
					qualify = 1;
				free(dm);
			}
		}
	}
	(*asked)++;
	if (lo == hi)
		ok = !loc.near; /* not in code */
	else if (loc.near)
		ok = qualify == 2;
	else
		ok = !qualify || found > 1;
	if (!ok && (*bad)++ < 8)
		fprintf(stderr, "%s 0x%" PRIx64 ": near %s\n", img->path, v, loc.near ? loc.near : "NULL");
}

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/*
 * Asks around every step-th symbol (start - 1, start, middle, last byte,
 * end, end + 1), around every allocated section's bounds, and at nrandom
 * addresses spread over the sections. libdw's answer costs a scan of the
 * table: step and nrandom keep a big table's test to a few thousand asks.
 */
static void check_image(const char *path, bool required, unsigned step, unsigned nrandom,
			unsigned nnear)
{
	struct sym_image *img = fx_image_of(path);
	struct checker c = { img, 0, 0 };
	uint64_t lo = UINT64_MAX, hi = 0, x = 88172645463325252ULL;
	unsigned nears = 0;
	Elf_Scn *scn = NULL;
	GElf_Addr bias;
	Elf *elf;
	int n;

	if (!img) {
		if (required)
			CHECK(!"image opens");
		else
			printf("# %s: not installed, skipped\n", path);
		return;
	}
	CHECK(img->mod != NULL);
	if (!img->mod)
		goto out;
	n = dwfl_module_getsymtab(img->mod);
	CHECK(n > 1);
	for (int i = 1; i < n; i += (int)step) {
		GElf_Sym sym;
		GElf_Addr a;
		uint64_t v;

		if (!dwfl_module_getsym_info(img->mod, i, &sym, &a, NULL, NULL, NULL) ||
		    a < img->mod_bias)
			continue;
		v = a - img->mod_bias;
		check_at(&c, v - 1);
		check_at(&c, v);
		if (sym.st_size) {
			check_at(&c, v + sym.st_size / 2);
			check_at(&c, v + sym.st_size - 1);
			check_at(&c, v + sym.st_size);
			check_at(&c, v + sym.st_size + 1);
		}
	}
	elf = dwfl_module_getelf(img->mod, &bias);
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC))
			continue;
		for (int d = -1; d <= 1; d++) {
			check_at(&c, sh.sh_addr + (uint64_t)d);
			check_at(&c, sh.sh_addr + sh.sh_size + (uint64_t)d);
		}
		if (sh.sh_addr < lo)
			lo = sh.sh_addr;
		if (sh.sh_addr + sh.sh_size > hi)
			hi = sh.sh_addr + sh.sh_size;
	}
	CHECK(lo < hi);
	for (unsigned i = 0; lo < hi && i < nrandom; i++)
		check_at(&c, lo + xorshift(&x) % (hi - lo));
	CHECK_EQ_INT(c.bad, 0);
	/* near names at addresses of the executable mappings in no symbol */
	c.bad = 0;
	for (unsigned i = 0; i < 64 * nnear && nears < nnear; i++) {
		for (unsigned j = 0; j < img->nloads; j++) {
			const struct sym_load *l = &img->loads[j];
			uint64_t v = l->vaddr + xorshift(&x) % (l->memsz ? l->memsz : 1);

			if (!(l->flags & PF_X) || sym_image_symbol_at(img, v))
				continue;
			check_near(img, v, &nears, &c.bad);
		}
	}
	CHECK_EQ_INT(c.bad, 0);
	CHECK(img->symtab != NULL);
	printf("# %s: %u addresses asked, %zu symbols, longest walk %zu; %u near names\n", path,
	       c.asked, sym_symtab_count(img->symtab), sym_symtab_longest_walk(img->symtab), nears);
out:
	sym_image_put(img);
}

/* The crafted symbols: every byte from st_outer to past st_label_tail, and
 * the bytes around the absolute symbol. */
static void test_crafted(void)
{
	extern char st_outer[], st_label_tail[], st_sec_a_start[], st_sec_b_end[];
	struct checker c = { NULL, 0, 0 };
	struct sym_space *sp = NULL;
	struct sym_mapping *m;
	struct sym_loc tmp;
	uint64_t from, to;

	CHECK_EQ_INT(sym_space_new(getpid(), &sp), 0);
	m = sp ? sym_space_find(sp, (uint64_t)(uintptr_t)st_outer, false) : NULL;
	c.img = m ? sym_space_mapping_image(sp, m) : NULL;
	CHECK(c.img != NULL);
	if (!c.img)
		goto out;
	from = (uint64_t)(uintptr_t)st_outer - m->bias;
	to = (uint64_t)(uintptr_t)st_label_tail - m->bias + 24;
	memset(&tmp, 0, sizeof(tmp));
	sym_image_resolve(c.img, from, &tmp); /* opens the DWARF */
	CHECK(c.img->mod != NULL);
	if (!c.img->mod)
		goto out;
	for (uint64_t v = from - 8; v < to; v++)
		check_at(&c, v);
	for (uint64_t v = 0x1230; v < 0x1238; v++)
		check_at(&c, v);
	for (uint64_t v = (uint64_t)(uintptr_t)st_sec_a_start - m->bias - 4;
	     v < (uint64_t)(uintptr_t)st_sec_b_end - m->bias + 4; v++)
		check_at(&c, v);
	CHECK_EQ_INT(c.bad, 0);
	/* the finer rules are reached: a nested local, a label after a function */
	/* the finer rules are reached: a global containing a nested weak and
	 * local one, the first of equal aliases, a sizeless global label, a
	 * sizeless label hidden by the function around it, one after code */
	CHECK(!strcmp(sym_image_symbol_at(c.img, from + 20) ?: "", "st_outer"));
	CHECK(!strcmp(sym_image_symbol_at(c.img, from + 64) ?: "", "st_alias_g2"));
	CHECK(!strcmp(sym_image_symbol_at(c.img, from + 104) ?: "", "st_label_global"));
	CHECK(sym_image_symbol_at(c.img, from + 136) == NULL);
	CHECK(!strcmp(sym_image_symbol_at(c.img, from + 152) ?: "", "st_label_tail"));
	CHECK(sym_image_symbol_at(c.img, (uint64_t)(uintptr_t)st_sec_b_end - m->bias - 20) ==
	      NULL);
	/* an address in no symbol is named after the function before it */
	memset(&tmp, 0, sizeof(tmp));
	sym_image_resolve(c.img, from + 140, &tmp);
	CHECK_EQ_INT(tmp.nframes, 0);
	CHECK(tmp.near && !strcmp(tmp.near, "st_with_label"));
	printf("# crafted: %u addresses asked\n", c.asked);
out:
	sym_space_free(sp);
}

/* The table of path kept on disk (symtab.c's cache, in the directory main()
 * made): read back, it answers as the one made; a copy cut short, with a
 * name past the names, or of another table is made again, and answers. */
static void test_cache(const char *path)
{
	struct sym_image *img = fx_image_of(path);
	struct sym_symtab *ref = NULL, *t = NULL;
	unsigned asked = 0, bad = 0;
	char *file = NULL;
	bool hit = false;
	struct stat st;
	int n, fd;

	CHECK(img && img->mod && img->build_id);
	if (!img || !img->mod || !img->build_id)
		goto out;
	sym_symtab_cache_min_symbols = 1;
	CHECK_EQ_INT(sym_symtab_new(img->mod, &ref), 0);
	CHECK_EQ_INT(sym_symtab_new_cached(img->mod, img->build_id, &t, NULL), 0);
	sym_symtab_free(t);
	t = NULL;
	CHECK_EQ_INT(sym_symtab_new_cached(img->mod, img->build_id, &t, &hit), 0);
	CHECK(hit);
	CHECK(t && ref && sym_symtab_count(t) == sym_symtab_count(ref));
	n = dwfl_module_getsymtab(img->mod);
	for (int i = 1; t && ref && i < n; i++) {
		GElf_Sym sym;
		GElf_Addr a;

		if (!dwfl_module_getsym_info(img->mod, i, &sym, &a, NULL, NULL, NULL))
			continue;
		for (uint64_t d = 0; d < 3; d++) {
			uint64_t v = a + (d == 1 ? sym.st_size / 2 : d == 2 ? sym.st_size
									    : 0),
				 s0, e0, s1, e1;
			const char *want = sym_symtab_lookup(ref, v), *got = sym_symtab_lookup(t, v);
			const char *fw = sym_symtab_function_below(ref, v, &s0, &e0);
			const char *fg = sym_symtab_function_below(t, v, &s1, &e1);

			asked++;
			if (!want != !got || (want && strcmp(want, got)) || !fw != !fg ||
			    (fw && (strcmp(fw, fg) || s0 != s1 || e0 != e1)))
				bad++;
		}
	}
	CHECK(asked > 0);
	CHECK_EQ_INT(bad, 0);
	sym_symtab_free(t);
	t = NULL;

	/* Damaged copies: each is made again (no hit) and rewritten whole. */
	char suffix[64];

	snprintf(suffix, sizeof(suffix), ".%d-%d.symtab", n, dwfl_module_getsymtab_first_global(img->mod));
	file = sym_cache_file(img->build_id, suffix, false);
	CHECK(file && stat(file, &st) == 0);
	for (int damage = 0; file && damage < 5; damage++) {
		struct stat now;
		int64_t other = 1;

		fd = open(file, O_RDWR);
		CHECK(fd >= 0);
		if (fd < 0)
			break;
		if (damage == 0)
			CHECK(ftruncate(fd, st.st_size - 1) == 0);
		else if (damage == 1) /* the names' last NUL */
			CHECK(pwrite(fd, "x", 1, st.st_size - 1) == 1);
		else if (damage == 2) /* another table's symbol count */
			CHECK(pwrite(fd, &other, sizeof(other), 16) == sizeof(other));
		else if (damage == 3) /* not one */
			CHECK(ftruncate(fd, 0) == 0);
		else { /* cut to the header and 8 bytes, the names' size wrapping the sum */
			uint64_t counts[2], wrap;

			CHECK(pread(fd, counts, sizeof(counts), 32) == sizeof(counts));
			wrap = 64 - 56 - (counts[0] + counts[1]) * 48;
			CHECK(pwrite(fd, &wrap, sizeof(wrap), 48) == sizeof(wrap));
			CHECK(ftruncate(fd, 64) == 0);
		}
		close(fd);
		CHECK_EQ_INT(sym_symtab_new_cached(img->mod, img->build_id, &t, &hit), 0);
		CHECK(!hit);
		CHECK(t && sym_symtab_count(t) == sym_symtab_count(ref));
		sym_symtab_free(t);
		t = NULL;
		CHECK(stat(file, &now) == 0 && now.st_size == st.st_size);
		CHECK_EQ_INT(sym_symtab_new_cached(img->mod, img->build_id, &t, &hit), 0);
		CHECK(hit);
		sym_symtab_free(t);
		t = NULL;
	}
	/* A name's offset past the names (the first entry's): that entry has
	 * no name, and nothing is read outside the file. */
	fd = file ? open(file, O_WRONLY) : -1;
	CHECK(fd >= 0);
	if (fd >= 0) {
		uint64_t big = UINT64_MAX / 2;

		CHECK(pwrite(fd, &big, sizeof(big), 56 + 24) == sizeof(big));
		close(fd);
		CHECK_EQ_INT(sym_symtab_new_cached(img->mod, img->build_id, &t, &hit), 0);
		CHECK(hit);
		for (int i = 1; t && i < n; i++) {
			GElf_Sym sym;
			GElf_Addr a;

			if (dwfl_module_getsym_info(img->mod, i, &sym, &a, NULL, NULL, NULL))
				(void)sym_symtab_lookup(t, a); /* some NULL, none outside */
		}
		sym_symtab_free(t);
		t = NULL;
	}
	printf("# %s: its table (%zu symbols) kept and read back, %u addresses asked\n", path,
	       sym_symtab_count(ref), asked);
out:
	sym_symtab_cache_min_symbols = 4096;
	free(file);
	sym_symtab_free(ref);
	sym_image_put(img);
}

int main(void)
{
	char psup[4096];
	const char *root = getenv("PSUP_BUILD_ROOT");
	Dl_info info;

	/* The symbol tables kept on disk go to a directory of the test's. */
	char cache[] = "/tmp/psup-symtab-XXXXXX";

	CHECK(mkdtemp(cache) != NULL);
	setenv("PSUP_DEBUG_CACHE", cache, 1);
	test_crafted();
	CHECK(dladdr((void *)&printf, &info) && info.dli_fname);
	test_cache("/proc/self/exe");
	check_image(info.dli_fname, true, 4, 1000, 200);
	check_image("/proc/self/exe", true, 1, 2000, 50);
	if (root) {
		snprintf(psup, sizeof(psup), "%s/psup", root);
		check_image(psup, true, 3, 1000, 50);
	}
	check_image("/usr/bin/node", false, 1000, 100, 10);
	sym_cache_trim();
	char rm[64];
	snprintf(rm, sizeof(rm), "rm -rf %s", cache);
	CHECK(system(rm) == 0);
	return tap_done();
}
