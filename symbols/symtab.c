#include "symbols/symbols-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/log.h"

/*
 * dwfl_module_addrinfo() scans the whole symbol table for every address
 * (__libdwfl_addrsym, libdwfl/dwfl_module_addrsym.c in elfutils 0.188):
 * 109,000 symbols in node, milliseconds a call. This table is read once
 * (one pass of dwfl_module_getsym_info()) and sorted by address; a lookup
 * is a binary search plus a walk over the symbols that still cover the
 * address, and gives libdwfl's answer. Its rules, as that file has them:
 *
 * - The global symbols (from dwfl_module_getsymtab_first_global()) are
 *   scanned first; the local ones only when that found no sized symbol
 *   and no sizeless one exactly at the address.
 * - Skipped: no name or an empty one, st_shndx SHN_UNDEF, STT_SECTION,
 *   STT_FILE, STT_TLS, and any symbol above the address.
 * - Among the sized symbols containing the address, in table order, the
 *   next replaces the one kept when it starts later or binds stronger
 *   (global 3 > weak 2 > local 1 > any other 0), or when it starts at the
 *   same address and is smaller without binding weaker. In table order:
 *   with nested symbols of different bindings the answer depends on it, so
 *   the candidates are replayed in that order.
 * - Without one, a sizeless symbol: every symbol at or below the address
 *   raises a floor to its end; the answer is the last sizeless symbol in
 *   scan order that sits exactly on the final floor, in the address's
 *   section (SHN_ABS and other reserved indexes: exactly at the address).
 *
 * The second try with a resolved function descriptor (ppc64's .opd) never
 * happens on x86-64 and is not modelled. Test: test-symtab, which compares
 * every answer with dwfl_module_addrinfo() in libc, node and its own
 * crafted symbols.
 */

/* Also the layout of the entries of a table kept on disk (below). */
struct symtab_ent {
	uint64_t value;   /* module address (getsym_info's) */
	uint64_t size;    /* st_size */
	uint64_t maxend;  /* the largest value + size of this and every entry before */
	uint64_t name;    /* the name (a pointer), or its offset in the names of a kept table */
	uint32_t index;   /* in libdwfl's table: the scan order */
	uint32_t shndx;   /* the section index getsym_info gives (SHN_XINDEX resolved) */
	uint8_t bind;     /* libdwfl's binding_value() */
	uint8_t function; /* STT_FUNC or STT_GNU_IFUNC */
	uint8_t pad[6];
};

struct symtab_part {
	struct symtab_ent *ents; /* sorted by value, then index */
	size_t n;
};

struct sym_symtab {
	Dwfl_Module *mod;
	bool none;                  /* no table: every answer is NULL */
	struct symtab_part part[2]; /* [0] scanned first (globals), [1] locals */
	/* A table read from the cache: its file mapped, the entries and the
	 * names in it (names: NULL for a table made here). */
	void *map;
	size_t map_len;
	const char *names;
	uint64_t names_len;
	const struct symtab_ent **cands; /* scratch for the covering candidates */
	size_t ncands_cap;
	size_t longest_walk; /* statistics for tests */
};

/* e's name: a pointer of libdw's, or in a kept table an offset in its
 * names, which end with a NUL (checked when it was mapped). */
static const char *name_of(const struct sym_symtab *t, const struct symtab_ent *e)
{
	if (!e)
		return NULL;
	if (!t->names)
		return (const char *)(uintptr_t)e->name;
	return e->name < t->names_len ? t->names + e->name : NULL;
}

/* libdwfl's binding_value(): higher is preferred. */
static int binding_value(const GElf_Sym *sym)
{
	switch (GELF_ST_BIND(sym->st_info)) {
	case STB_GLOBAL:
		return 3;
	case STB_WEAK:
		return 2;
	case STB_LOCAL:
		return 1;
	default:
		return 0;
	}
}

/*
 * Sorts p->ents by value, keeping the table order among equal values (the
 * entries come in table order): an LSD radix sort on 8-bit digits, a pass
 * skipped when every value has the same digit there (the high bytes of a
 * module's addresses mostly do). qsort() of node's 106,579 entries was a
 * fifth of psup's CPU at node's start. Returns -ENOMEM or 0.
 */
static int part_sort(struct symtab_part *p)
{
	struct symtab_ent *tmp, *src = p->ents, *dst;
	size_t count[256];

	if (p->n < 2)
		return 0;
	tmp = malloc(p->n * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	dst = tmp;
	for (unsigned shift = 0; shift < 64; shift += 8) {
		size_t pos = 0;

		memset(count, 0, sizeof(count));
		for (size_t i = 0; i < p->n; i++)
			count[(src[i].value >> shift) & 0xff]++;
		if (count[(src[0].value >> shift) & 0xff] == p->n)
			continue;
		for (unsigned d = 0; d < 256; d++) {
			size_t c = count[d];

			count[d] = pos;
			pos += c;
		}
		for (size_t i = 0; i < p->n; i++)
			dst[count[(src[i].value >> shift) & 0xff]++] = src[i];
		struct symtab_ent *t = src;
		src = dst;
		dst = t;
	}
	if (src != p->ents)
		memcpy(p->ents, src, p->n * sizeof(*src));
	free(tmp);
	return 0;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

static int part_fill(struct symtab_part *p, Dwfl_Module *mod, int from, int to)
{
	size_t k = 0;

	if (to <= from)
		return 0;
	p->ents = malloc((size_t)(to - from) * sizeof(*p->ents));
	if (!p->ents)
		return -ENOMEM;
	for (int i = from; i < to; i++) {
		GElf_Sym sym;
		GElf_Addr value;
		GElf_Word shndx;
		const char *name =
			dwfl_module_getsym_info(mod, i, &sym, &value, &shndx, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);

		if (!name || !name[0] || sym.st_shndx == SHN_UNDEF || type == STT_SECTION ||
		    type == STT_FILE || type == STT_TLS)
			continue;
		p->ents[k++] = (struct symtab_ent){
			.value = value,
			.size = sym.st_size,
			.name = (uint64_t)(uintptr_t)name,
			.index = (uint32_t)i,
			.shndx = shndx,
			.bind = (uint8_t)binding_value(&sym),
			.function = type == STT_FUNC || type == STT_GNU_IFUNC,
		};
	}
	p->n = k;
	if (part_sort(p) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < k; i++) {
		uint64_t end = sat_add(p->ents[i].value, p->ents[i].size);

		p->ents[i].maxend = i && p->ents[i - 1].maxend > end ? p->ents[i - 1].maxend : end;
	}
	return 0;
}

int sym_symtab_new(Dwfl_Module *mod, struct sym_symtab **out)
{
	struct sym_symtab *t = calloc(1, sizeof(*t));
	int n, first_global, err;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	t->mod = mod;
	n = dwfl_module_getsymtab(mod);
	first_global = n < 0 ? -1 : dwfl_module_getsymtab_first_global(mod);
	if (n < 0 || first_global < 0) {
		t->none = true;
		*out = t;
		return 0;
	}
	/* first_global 0: only a .dynsym found through the program headers,
	 * scanned whole as globals (libdwfl's comment). */
	err = part_fill(&t->part[0], mod, first_global == 0 ? 1 : first_global, n);
	if (!err && first_global > 1)
		err = part_fill(&t->part[1], mod, 1, first_global);
	if (err) {
		sym_symtab_free(t);
		return err;
	}
	*out = t;
	return 0;
}

void sym_symtab_free(struct sym_symtab *t)
{
	if (!t)
		return;
	if (t->map) {
		munmap(t->map, t->map_len);
	} else {
		free(t->part[0].ents);
		free(t->part[1].ents);
	}
	free(t->cands);
	free(t);
}

/*
 * The tables kept on disk (sym_symtab_new_cached()). Making libjvm's table
 * (57,643 symbols: a pass of dwfl_module_getsym_info() and the sort) took
 * 12-16 ms of psup's time in every `java -version` under psup; a kept one is
 * mapped, and a lookup reads the few pages it touches. The file, in the
 * debug cache's directory as BB/REST.N-G.symtab (build-id, the table's
 * symbol count and first global), is psup's own and this machine's (native
 * byte order): a header, the entries of both parts in their order (struct
 * symtab_ent, names as offsets), the names. It is written whole under
 * another name and renamed into place; a file that does not match the
 * module's table or its own sizes is made again. Nothing in it can make a
 * lookup read outside it: the entries and the names are within its size,
 * the names end with a NUL, and each name's offset is checked as it is read.
 * Their order is not checked (that would read every page of it): a file
 * altered in place gives wrong names or slow lookups, never a bad read.
 */
#define SYMTAB_CACHE_MAGIC "PSUPSYT2"
#define SYMTAB_CACHE_VERSION 2
#define SYMTAB_CACHE_MAX_BYTES (1ULL << 30)

struct symtab_cache_hdr {
	char magic[8];
	uint32_t version, ent_size;
	int64_t nsyms, first_global; /* the module's, from libdw: the same table */
	uint64_t count[2];           /* entries of part 0 (globals), part 1 */
	uint64_t strsize;            /* bytes of the names, NUL-terminated each */
};

static struct {
	uint64_t hits, written;
} symtab_cache;

unsigned sym_symtab_cache_min_symbols = 4096;

/* The table kept in path for mod (nsyms symbols, the first global at
 * first_global), mapped: its entries and names are read where a lookup
 * touches them. What a lookup relies on for its bounds is checked here
 * (the sizes, the names' final NUL); a name's offset is checked where it
 * is read (name_of()). -ENOENT (none of ours there), -EINVAL or -ENOMEM. */
static int symtab_load(const char *path, Dwfl_Module *mod, int64_t nsyms, int64_t first_global,
		       struct sym_symtab **out)
{
	struct symtab_cache_hdr h;
	struct sym_symtab *t;
	uint64_t ents_bytes;
	size_t size;
	int fd = sym_cache_open(path, SYMTAB_CACHE_MAX_BYTES, &size);
	uint8_t *map;

	if (fd < 0)
		return -ENOENT;
	if (size <= sizeof(h)) {
		close(fd);
		return -EINVAL;
	}
	map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -ENOMEM;
	memcpy(&h, map, sizeof(h));
	/* Each bound without a sum that could wrap: the counts are at most
	 * nsyms (an int), the names at most what the file holds. */
	ents_bytes = (h.count[0] + h.count[1]) * sizeof(struct symtab_ent);
	if (memcmp(h.magic, SYMTAB_CACHE_MAGIC, sizeof(h.magic)) || h.version != SYMTAB_CACHE_VERSION ||
	    h.ent_size != sizeof(struct symtab_ent) || h.nsyms != nsyms || h.first_global != first_global ||
	    h.count[0] > (uint64_t)nsyms || h.count[1] > (uint64_t)nsyms - h.count[0] || !h.strsize ||
	    h.strsize > (uint64_t)size - sizeof(h) ||
	    ents_bytes != (uint64_t)size - sizeof(h) - h.strsize || map[size - 1] != '\0') {
		munmap(map, size);
		return -EINVAL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		munmap(map, size);
		return -ENOMEM;
	}
	t->mod = mod;
	t->map = map;
	t->map_len = size;
	t->part[0].ents = (struct symtab_ent *)(map + sizeof(h));
	t->part[0].n = h.count[0];
	t->part[1].ents = t->part[0].ents + h.count[0];
	t->part[1].n = h.count[1];
	t->names = (const char *)map + sizeof(h) + ents_bytes;
	t->names_len = h.strsize;
	*out = t;
	return 0;
}

static bool part_save(FILE *f, const struct sym_symtab *t, const struct symtab_part *p, uint64_t *off)
{
	for (size_t i = 0; i < p->n; i++) {
		struct symtab_ent e = p->ents[i];
		const char *name = name_of(t, &p->ents[i]);

		e.name = *off;
		memset(e.pad, 0, sizeof(e.pad));
		*off += strlen(name) + 1;
		if (fwrite(&e, sizeof(e), 1, f) != 1)
			return false;
	}
	return true;
}

/* Writes t to path through a temporary file renamed into place (two psups
 * at once both succeed). Failing is only a note: the table is made again
 * next time. */
static void symtab_save(const struct sym_symtab *t, const char *path, int64_t nsyms, int64_t first_global)
{
	struct symtab_cache_hdr h = {
		.version = SYMTAB_CACHE_VERSION,
		.ent_size = sizeof(struct symtab_ent),
		.nsyms = nsyms,
		.first_global = first_global,
		.count = { t->part[0].n, t->part[1].n },
	};
	char *tmp;
	uint64_t off = 0;
	bool ok;
	FILE *f;

	memcpy(h.magic, SYMTAB_CACHE_MAGIC, sizeof(h.magic));
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < t->part[k].n; i++)
			h.strsize += strlen(name_of(t, &t->part[k].ents[i])) + 1;
	if (!h.strsize || h.strsize > SYMTAB_CACHE_MAX_BYTES || !(f = sym_cache_create(path, &tmp)))
		return;
	ok = fwrite(&h, sizeof(h), 1, f) == 1 && part_save(f, t, &t->part[0], &off) &&
	     part_save(f, t, &t->part[1], &off);
	for (int k = 0; k < 2 && ok; k++)
		for (size_t i = 0; i < t->part[k].n && ok; i++) {
			const char *name = name_of(t, &t->part[k].ents[i]);

			ok = fwrite(name, strlen(name) + 1, 1, f) == 1;
		}
	if (!sym_cache_commit(f, tmp, path, ok))
		return;
	symtab_cache.written++;
	sym_cache_file_written();
}

int sym_symtab_new_cached(Dwfl_Module *mod, const char *build_id, struct sym_symtab **out, bool *hit)
{
	int n = dwfl_module_getsymtab(mod);
	int first_global = n < 0 ? -1 : dwfl_module_getsymtab_first_global(mod);
	/* A small table is made faster than a file is opened and read. */
	bool kept = n >= 0 && (unsigned)n >= sym_symtab_cache_min_symbols && first_global >= 0;
	char suffix[64], *path;
	int err;

	/* The count and the first global in the name too: a stripped file and
	 * its unstripped twin of the same build have a table each. */
	snprintf(suffix, sizeof(suffix), ".%d-%d.symtab", n, first_global);
	path = kept ? sym_cache_file(build_id, suffix, false) : NULL;

	if (hit)
		*hit = false;
	if (path && symtab_load(path, mod, n, first_global, out) == 0) {
		symtab_cache.hits++;
		if (hit)
			*hit = true;
		free(path);
		return 0;
	}
	free(path);
	err = sym_symtab_new(mod, out);
	if (!err && kept && !(*out)->none && sym_symtab_count(*out) &&
	    (path = sym_cache_file(build_id, suffix, true))) {
		symtab_save(*out, path, n, first_global);
		free(path);
	}
	return err;
}

void sym_symtab_cache_stats(uint64_t *hits, uint64_t *written)
{
	*hits = symtab_cache.hits;
	*written = symtab_cache.written;
}

size_t sym_symtab_count(const struct sym_symtab *t)
{
	return t ? t->part[0].n + t->part[1].n : 0;
}

size_t sym_symtab_longest_walk(const struct sym_symtab *t)
{
	return t ? t->longest_walk : 0;
}

/* The number of entries with value <= addr. */
static size_t upper_bound(const struct symtab_part *p, uint64_t addr)
{
	size_t a = 0, z = p->n;

	while (a < z) {
		size_t m = a + (z - a) / 2;

		if (p->ents[m].value <= addr)
			a = m + 1;
		else
			z = m;
	}
	return a;
}

static int cand_cmp(const void *x, const void *y)
{
	const struct symtab_ent *a = *(const struct symtab_ent *const *)x;
	const struct symtab_ent *b = *(const struct symtab_ent *const *)y;

	return a->index < b->index ? -1 : a->index > b->index;
}

/* The sized symbol of part p that libdwfl's scan keeps for addr, or NULL:
 * the entries covering addr are those before upper_bound whose maxend is
 * above addr (maxend only grows), then replayed in table order. */
static const struct symtab_ent *sized_pick(struct sym_symtab *t, const struct symtab_part *p,
					   uint64_t addr)
{
	const struct symtab_ent *cur = NULL;
	size_t hi = upper_bound(p, addr), nc = 0, walked = 0;

	for (size_t j = hi; j-- > 0 && p->ents[j].maxend > addr;) {
		const struct symtab_ent *e = &p->ents[j];

		walked++;
		if (!e->size || addr - e->value >= e->size)
			continue;
		if (nc == t->ncands_cap) {
			size_t cap = t->ncands_cap ? 2 * t->ncands_cap : 16;
			const struct symtab_ent **c = realloc(t->cands, cap * sizeof(*c));

			if (!c)
				break; /* a partial answer rather than none */
			t->cands = c;
			t->ncands_cap = cap;
		}
		t->cands[nc++] = e;
	}
	if (walked > t->longest_walk)
		t->longest_walk = walked;
	if (nc > 1)
		qsort(t->cands, nc, sizeof(*t->cands), cand_cmp);
	for (size_t i = 0; i < nc; i++) {
		const struct symtab_ent *e = t->cands[i];

		if (!cur || cur->value < e->value || cur->bind < e->bind)
			cur = e;
		else if (cur->value == e->value &&
			 ((cur->size > e->size && cur->bind <= e->bind) ||
			  (cur->size >= e->size && cur->bind < e->bind)))
			cur = e;
	}
	return cur;
}

/* The section index libdwfl's same_section() compares: the allocated
 * section of the main file holding addr, 0 when none. */
static size_t section_of(Dwfl_Module *mod, uint64_t addr)
{
	Dwarf_Addr a = addr, bias;
	Elf_Scn *scn = dwfl_module_address_section(mod, &a, &bias);

	return scn ? elf_ndxscn(scn) : 0;
}

/* The last sizeless entry of p (in table order) at value v that passes
 * same_section() for addr; *same caches the section comparison (-1 not
 * yet known). Entries of equal value are sorted by index: the first one
 * from the top that passes is the answer. */
static const struct symtab_ent *sizeless_at(struct sym_symtab *t, const struct symtab_part *p,
					    uint64_t v, uint64_t addr, int *same)
{
	for (size_t j = upper_bound(p, v); j-- > 0 && p->ents[j].value == v;) {
		const struct symtab_ent *e = &p->ents[j];

		if (e->size)
			continue;
		if (e->shndx >= SHN_LORESERVE) {
			if (v == addr)
				return e;
			continue;
		}
		if (*same < 0)
			*same = v == addr || section_of(t->mod, v) == section_of(t->mod, addr);
		if (*same)
			return e;
	}
	return NULL;
}

/* libdwfl's min_label at the end of a scan of p: the largest end of the
 * entries at or below addr (0 when none). */
static uint64_t floor_of(const struct symtab_part *p, uint64_t addr)
{
	size_t hi = upper_bound(p, addr);

	return hi ? p->ents[hi - 1].maxend : 0;
}

const char *sym_symtab_lookup(struct sym_symtab *t, uint64_t addr)
{
	const struct symtab_ent *e;
	uint64_t floor;
	int same = -1;

	if (!t || t->none)
		return NULL;
	e = sized_pick(t, &t->part[0], addr);
	if (e)
		return name_of(t, e);
	/* a global sizeless symbol exactly at addr ends the search */
	e = sizeless_at(t, &t->part[0], addr, addr, &same);
	if (e)
		return name_of(t, e);
	e = sized_pick(t, &t->part[1], addr);
	if (e)
		return name_of(t, e);
	floor = floor_of(&t->part[0], addr);
	if (floor_of(&t->part[1], addr) > floor)
		floor = floor_of(&t->part[1], addr);
	if (floor > addr || (!t->part[0].n && !t->part[1].n))
		return NULL;
	same = -1;
	e = sizeless_at(t, &t->part[1], floor, addr, &same);
	if (!e)
		e = sizeless_at(t, &t->part[0], floor, addr, &same);
	return name_of(t, e);
}

/* The last function entry of p starting at or below addr, or NULL. */
static const struct symtab_ent *function_below(const struct symtab_part *p, uint64_t addr)
{
	for (size_t j = upper_bound(p, addr); j-- > 0;)
		if (p->ents[j].function)
			return &p->ents[j];
	return NULL;
}

const char *sym_symtab_function_below(const struct sym_symtab *t, uint64_t addr,
				      uint64_t *start, uint64_t *end)
{
	const struct symtab_ent *g, *l;

	if (!t || t->none)
		return NULL;
	g = function_below(&t->part[0], addr);
	l = function_below(&t->part[1], addr);
	if (!g || (l && l->value > g->value))
		g = l;
	if (!g)
		return NULL;
	*start = g->value;
	*end = sat_add(g->value, g->size);
	return name_of(t, g);
}
