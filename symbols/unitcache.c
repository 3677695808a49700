#include "symbols/symbols-internal.h"

#include <dwarf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

/*
 * Each compile unit's answers kept on disk, whole: the table of its code
 * DIEs (cuscope.c) with the names of its functions and the call sites of
 * its inlined ones, and its line rows; and per image the table that places
 * an address in a unit. A later run answers every address of a unit it
 * has seen before without asking libdw, which spends its first lookup in
 * libc's DWARF interning all 2,063 units (3.6-3.7 ms in
 * dwarf_getaranges()), then reads each unit's tree and line program
 * (docs/performance.md, "What is left of java's start-up"). Answers kept
 * per address were tried before and missed: the leaves sampled differ from
 * run to run, the units they fall in much less.
 *
 * The answers are the live path's (image.c, image_resolve()), step by
 * step: an address is placed in a unit as libdwfl places it (the runs of
 * .debug_aranges: an address in a gap between two units' ranges belongs
 * to the one before; past the last range's end to none), else in the
 * units' own ranges (image.c's table for DWARF without .debug_aranges);
 * the unit's table gives the function scopes (the same walk,
 * sym_scope_innermost()) and its rows the line, as dwarf_getsrc_die()
 * picks it. tests/unit/test-unitcache.c compares both over a third of
 * libc's units and the gaps between them.
 *
 * The files sit beside the debug cache's copies (sym_cache_file(): its
 * directory, its trust checks and its size bound), named by the image's
 * build-id and the DWARF's own sizes (an image's twin with other debug info
 * gets files of its own): BB/REST.units-F for the image's placement table,
 * BB/REST.unit-F-OFF for the unit at DIE offset OFF. A file is written to a
 * temporary name and renamed into place, and is read whole and checked
 * before use (sizes, offsets, indices, flags and nesting): one that fails
 * is ignored and written again. The checks keep every read inside the
 * file; they cannot tell a name offset, a line number or a run's unit
 * altered in place (no checksum), which gives wrong names, as with
 * symtab.c's tables, never a bad read.
 */

#define MAP_MAGIC "PSUPUNM1"
#define UNIT_MAGIC "PSUPUND1"
#define CACHE_VERSION 2
#define FILE_MAX_BYTES (64ULL << 20)
#define NO_STR UINT32_MAX
/* Deeper than cuscope.c's build() nests (64). */
#define MAX_NESTING 66

/* What an entry of a unit's table is, for its frames. */
enum entry_kind {
	KIND_OTHER, /* a lexical block, a namespace, a class */
	KIND_SUBPROGRAM,
	KIND_INLINED,
};

struct map_hdr {
	char magic[8];
	uint32_t version, has_cu_ranges;
	uint64_t nruns, last_end, ncu;
};

struct run {
	uint64_t start, die;
};

struct unit_hdr {
	char magic[8];
	uint32_t version, flags;
	uint64_t die;
	uint32_t nents, nranges;
	uint64_t nrows, strsize;
};
#define UNIT_NO_LINES 1u

struct unit_digest;

struct sym_unit_cache {
	bool off;      /* no cache directory, no build-id, no DWARF */
	Dwarf *dw;     /* the module's */
	uint64_t bias; /* module address - DWARF address */
	char fp[48];   /* the DWARF's sizes, in the file names */
	bool have_map;
	struct run *runs;
	size_t nruns;
	uint64_t last_end;
	bool have_cu;
	struct sym_cu_range *cu;
	size_t ncu;
	struct psup_u64map units; /* unit DIE offset + 1 -> struct unit_digest * */
};

static struct {
	uint64_t hits, written;
} uc_stats;
/* Bytes of digests and tables written since the cache's bound was last
 * checked (write_file()). */
static uint64_t since_scan;
#define SCAN_EVERY_BYTES (4ULL << 20)

/* Images whose .debug_info is smaller are read from their DWARF alone
 * (ld.so's: 658 KB, libc's: 5.8 MB in Debian 12). */
uint64_t sym_unit_cache_min_info = 256u << 10;

void sym_unit_cache_stats(uint64_t *hits, uint64_t *written)
{
	*hits = uc_stats.hits;
	*written = uc_stats.written;
}

static void digest_free(struct unit_digest *d);

void sym_unit_cache_free(struct sym_unit_cache *uc)
{
	if (!uc)
		return;
	for (size_t i = 0; i < uc->units.cap; i++)
		if (uc->units.keys[i])
			digest_free((struct unit_digest *)(uintptr_t)uc->units.vals[i]);
	psup_u64map_release(&uc->units);
	free(uc->runs);
	free(uc->cu);
	free(uc);
}

/* ---- files ---- */

/* The whole of a cache file of ours (sym_cache_open()), at most
 * FILE_MAX_BYTES: malloc'ed (*len bytes), or NULL. */
static uint8_t *read_file(const char *path, size_t *len)
{
	size_t size, got = 0;
	int fd = sym_cache_open(path, FILE_MAX_BYTES, &size);
	uint8_t *buf = fd < 0 ? NULL : malloc(size);

	while (buf && got < size) {
		ssize_t n = read(fd, buf + got, size - got);

		if (n <= 0) {
			free(buf);
			buf = NULL;
		} else {
			got += (size_t)n;
		}
	}
	if (fd >= 0)
		close(fd);
	*len = got;
	return buf;
}

/* Writes the parts to path (sym_cache_commit()). */
static void write_file(const char *path, const void *const *parts, const size_t *lens, unsigned nparts)
{
	char *tmp;
	FILE *f = sym_cache_create(path, &tmp);
	bool ok = true;

	if (!f)
		return;
	for (unsigned i = 0; i < nparts && ok; i++) {
		ok = !lens[i] || fwrite(parts[i], lens[i], 1, f) == 1;
		since_scan += lens[i];
	}
	if (!sym_cache_commit(f, tmp, path, ok))
		return;
	uc_stats.written++;
	/* The directory's bound is checked by a scan of all its files (an
	 * lstat each: 731 of them here, the digests most), not at every run
	 * that meets a new unit: a run of the fork/exec storm stat'ed 765
	 * paths for its first digest (t3076). Digests are bounded by the
	 * units of the images profiled; a debug copy or a symbol table
	 * written scans at once (debugcache.c, symtab.c). */
	if (since_scan >= SCAN_EVERY_BYTES) {
		since_scan = 0;
		sym_cache_file_written();
	}
}

static char *map_path(const struct sym_image *img, const struct sym_unit_cache *uc, bool create)
{
	char suffix[64];

	snprintf(suffix, sizeof(suffix), ".units-%s", uc->fp);
	return sym_cache_file(img->build_id, suffix, create);
}

static char *unit_path(const struct sym_image *img, const struct sym_unit_cache *uc, uint64_t die, bool create)
{
	char suffix[96];

	snprintf(suffix, sizeof(suffix), ".unit-%s-%llx", uc->fp, (unsigned long long)die);
	return sym_cache_file(img->build_id, suffix, create);
}

/* ---- placing an address in a unit ---- */

static bool map_load(struct sym_unit_cache *uc, const uint8_t *buf, size_t len)
{
	struct map_hdr h;

	if (len < sizeof(h))
		return false;
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, MAP_MAGIC, 8) || h.version != CACHE_VERSION || h.nruns > len / sizeof(struct run) ||
	    h.ncu > len / sizeof(struct sym_cu_range) ||
	    len != sizeof(h) + h.nruns * sizeof(struct run) + h.ncu * sizeof(struct sym_cu_range))
		return false;
	uc->runs = h.nruns ? malloc(h.nruns * sizeof(*uc->runs)) : NULL;
	uc->cu = h.ncu ? malloc(h.ncu * sizeof(*uc->cu)) : NULL;
	if ((h.nruns && !uc->runs) || (h.ncu && !uc->cu)) {
		free(uc->runs);
		free(uc->cu);
		uc->runs = NULL;
		uc->cu = NULL;
		return false;
	}
	if (h.nruns)
		memcpy(uc->runs, buf + sizeof(h), h.nruns * sizeof(*uc->runs));
	if (h.ncu)
		memcpy(uc->cu, buf + sizeof(h) + h.nruns * sizeof(struct run), h.ncu * sizeof(*uc->cu));
	uc->nruns = h.nruns;
	uc->ncu = h.ncu;
	uc->last_end = h.last_end;
	uc->have_cu = h.has_cu_ranges != 0;
	return true;
}

static void map_save(const struct sym_image *img, const struct sym_unit_cache *uc)
{
	struct map_hdr h = {
		.version = CACHE_VERSION,
		.has_cu_ranges = uc->have_cu,
		.nruns = uc->nruns,
		.last_end = uc->last_end,
		.ncu = uc->have_cu ? uc->ncu : 0,
	};
	const void *parts[] = { &h, uc->runs, uc->cu };
	size_t lens[] = { sizeof(h), uc->nruns * sizeof(*uc->runs), h.ncu * sizeof(*uc->cu) };
	char *path = map_path(img, uc, true);

	memcpy(h.magic, MAP_MAGIC, 8);
	if (path)
		write_file(path, parts, lens, 3);
	free(path);
}

/* libdwfl's table (its cu.c, addrarange()): .debug_aranges sorted by
 * address, one entry per run of ranges of the same unit. */
static bool map_build(struct sym_unit_cache *uc)
{
	Dwarf_Aranges *ar;
	size_t n;
	Dwarf_Off last = 0;

	if (dwarf_getaranges(uc->dw, &ar, &n) != 0)
		return false;
	uc->runs = n ? malloc(n * sizeof(*uc->runs)) : NULL;
	if (n && !uc->runs)
		return false;
	for (size_t i = 0; i < n; i++) {
		Dwarf_Addr start;
		Dwarf_Word length;
		Dwarf_Off die;

		if (dwarf_getarangeinfo(dwarf_onearange(ar, i), &start, &length, &die) != 0) {
			free(uc->runs);
			uc->runs = NULL;
			uc->nruns = 0;
			return false;
		}
		if (i == 0 || die != last)
			uc->runs[uc->nruns++] = (struct run){ start, die };
		last = die;
		if (i == n - 1)
			uc->last_end = start + length;
	}
	return true;
}

/* The unit holding DWARF address addr as libdwfl's addrarange() finds it:
 * true and *die, or false. */
static bool map_find(const struct sym_unit_cache *uc, uint64_t addr, uint64_t *die)
{
	size_t l = 0, u = uc->nruns;

	while (l < u) {
		size_t idx = (l + u) / 2;
		uint64_t start = uc->runs[idx].start;

		if (addr < start) {
			u = idx;
			continue;
		}
		if (addr > start) {
			if (idx + 1 < uc->nruns) {
				if (addr >= uc->runs[idx + 1].start) {
					l = idx + 1;
					continue;
				}
			} else if (addr > uc->last_end) {
				break;
			}
		}
		*die = uc->runs[idx].die;
		return true;
	}
	return false;
}

/* ---- a unit's digest ---- */

/*
 * A digest is one buffer, as its file holds it and as it is used (read
 * into memory, nothing is copied out of it): the header, then the table's
 * entries (struct sym_scope_node, cuscope.c's, for sym_scope_innermost()),
 * their ranges, the line rows, each entry's frame (struct ent_info) and
 * the strings they name by offset. A digest made from libdw is written into
 * the same buffer, then read as a file's is.
 */
struct ent_info {
	uint8_t kind; /* enum entry_kind */
	uint8_t pad[3];
	uint32_t name, call_file, call_line;
};

struct row_rec {
	uint64_t addr;
	uint32_t file, line, end_sequence, pad;
};

struct unit_digest {
	uint8_t *buf;
	const struct sym_scope_node *nodes;
	const uint64_t (*ranges)[2];
	const struct row_rec *rows;
	const struct ent_info *info;
	const char *strs;
	uint32_t n, nranges;
	uint64_t nrows;
	bool no_lines;
};

_Static_assert(sizeof(struct unit_hdr) % 8 == 0 && sizeof(struct sym_scope_node) == 20,
	       "a digest holds cuscope.c's entries as they are, its ranges and rows aligned");

/* The header is a multiple of 8: the ranges and rows after the entries
 * are aligned at 8. */
static uint64_t ranges_at(uint64_t nents)
{
	return (sizeof(struct unit_hdr) + nents * sizeof(struct sym_scope_node) + 7) & ~7ULL;
}

static void digest_free(struct unit_digest *d)
{
	if (d)
		free(d->buf);
	free(d);
}

static bool str_ok(uint32_t off, uint64_t strsize)
{
	return off == NO_STR || off < strsize;
}

static const char *str_of(const struct unit_digest *d, uint32_t off)
{
	return off == NO_STR ? NULL : d->strs + off;
}

/* The digest in buf (len bytes), which it takes; NULL (buf freed) when
 * buf is not a sound digest of the unit at DIE offset die. */
static struct unit_digest *digest_load(uint64_t die, uint8_t *buf, size_t len)
{
	struct unit_hdr h;
	struct unit_digest *d = NULL;
	unsigned open[MAX_NESTING], nopen = 0;
	uint64_t at;

	if (len < sizeof(h))
		goto bad;
	memcpy(&h, buf, sizeof(h));
	/* (a unit without a line program has no rows) */
	if (memcmp(h.magic, UNIT_MAGIC, 8) || h.version != CACHE_VERSION || h.die != die ||
	    (h.flags & ~UNIT_NO_LINES) || ((h.flags & UNIT_NO_LINES) && h.nrows) ||
	    h.nrows > len / sizeof(struct row_rec) || h.nents > len / sizeof(struct sym_scope_node) ||
	    h.strsize > len || !h.strsize || buf[len - 1] != '\0')
		goto bad;
	at = ranges_at(h.nents) + (uint64_t)h.nranges * 16 + h.nrows * sizeof(struct row_rec) +
	     (uint64_t)h.nents * sizeof(struct ent_info);
	if (at + h.strsize != len || !(d = calloc(1, sizeof(*d))))
		goto bad;
	d->buf = buf;
	d->n = h.nents;
	d->nranges = h.nranges;
	d->nrows = h.nrows;
	d->no_lines = h.flags & UNIT_NO_LINES;
	d->nodes = (const struct sym_scope_node *)(buf + sizeof(h));
	d->ranges = (const uint64_t(*)[2])(buf + ranges_at(h.nents));
	d->rows = (const struct row_rec *)((const uint8_t *)d->ranges + (size_t)h.nranges * 16);
	d->info = (const struct ent_info *)(d->rows + h.nrows);
	d->strs = (const char *)buf + at;
	/* The walk recurses into each entry's subtree and reads ranges by
	 * index: the tree is checked to be the one build() leaves (each
	 * entry's parent the innermost subtree around it, subtrees nested,
	 * at most MAX_NESTING deep) and every range in the table. */
	for (uint32_t i = 0; i < d->n; i++) {
		const struct sym_scope_node *e = &d->nodes[i];
		const struct ent_info *f = &d->info[i];

		while (nopen && d->nodes[open[nopen - 1]].next <= i)
			nopen--;
		if (e->parent != (nopen ? (int32_t)open[nopen - 1] : -1) || e->next <= i || e->next > d->n ||
		    (nopen && e->next > d->nodes[open[nopen - 1]].next) || e->range > d->nranges ||
		    e->nranges > d->nranges - e->range || f->kind > KIND_INLINED || nopen == MAX_NESTING ||
		    !str_ok(f->name, h.strsize) || !str_ok(f->call_file, h.strsize))
			goto bad;
		open[nopen++] = i;
	}
	for (uint64_t i = 0; i < d->nrows; i++)
		if (!str_ok(d->rows[i].file, h.strsize))
			goto bad;
	return d;
bad:
	if (d)
		digest_free(d);
	else
		free(buf);
	return NULL;
}

/* The strings of a digest being made, each once. */
struct strtab {
	char *buf;
	size_t len, cap;
	struct psup_u64map at; /* libdw's pointer -> offset + 1 */
};

static uint32_t strtab_add(struct strtab *t, const char *s, bool *ok)
{
	uint64_t *v, key = (uint64_t)(uintptr_t)s;
	size_t n;
	bool created;

	if (!s)
		return NO_STR;
	v = psup_u64map_upsert(&t->at, key, &created);
	if (!v) {
		*ok = false;
		return NO_STR;
	}
	if (!created)
		return (uint32_t)(*v - 1);
	n = strlen(s) + 1;
	if (t->len + n > UINT32_MAX - 1) {
		*ok = false;
		return NO_STR;
	}
	if (t->len + n > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 4096;
		char *b;

		while (cap < t->len + n)
			cap *= 2;
		b = realloc(t->buf, cap);
		if (!b) {
			*ok = false;
			return NO_STR;
		}
		t->buf = b;
		t->cap = cap;
	}
	memcpy(t->buf + t->len, s, n);
	*v = t->len + 1;
	t->len += n;
	return (uint32_t)(*v - 1);
}

/* The digest of the unit cudie (at DIE offset die) from libdw, what
 * resolve_dwarf() reads of it for any address: a buffer of *len bytes, or
 * NULL. */
static uint8_t *digest_make(struct sym_image *img, Dwarf_Die *cudie, uint64_t die, size_t *len)
{
	const struct sym_scope_node *nodes;
	Dwarf_Die *dies;
	const uint64_t(*ranges)[2];
	unsigned n, nranges;
	Dwarf_Files *files = NULL;
	Dwarf_Lines *lines = NULL;
	size_t nlines = 0;
	struct unit_hdr h = { .version = CACHE_VERSION, .die = die };
	struct strtab st = { 0 };
	struct ent_info *info;
	struct row_rec *rows;
	uint8_t *buf = NULL;
	bool ok = true;

	if (sym_cu_scope_table(&img->cu_scopes, cudie, &nodes, &dies, &n, &ranges, &nranges) < 0)
		return NULL;
	if (dwarf_getsrclines(cudie, &lines, &nlines) != 0) {
		h.flags |= UNIT_NO_LINES;
		nlines = 0;
	}
	if (dwarf_getsrcfiles(cudie, &files, NULL))
		files = NULL;
	info = calloc(n ? n : 1, sizeof(*info));
	rows = calloc(nlines ? nlines : 1, sizeof(*rows));
	psup_u64map_init(&st.at);
	ok = info && rows;
	strtab_add(&st, "", &ok); /* never empty */
	for (unsigned i = 0; i < n && ok; i++) {
		int tag = dwarf_tag(&dies[i]);
		Dwarf_Attribute attr;
		Dwarf_Word v;

		info[i].name = info[i].call_file = NO_STR;
		if (tag == DW_TAG_subprogram)
			info[i].kind = KIND_SUBPROGRAM;
		else if (tag == DW_TAG_inlined_subroutine)
			info[i].kind = KIND_INLINED;
		else
			continue;
		info[i].name = strtab_add(&st, sym_die_function_name(img, &dies[i]), &ok);
		if (info[i].kind != KIND_INLINED)
			continue;
		if (files && !dwarf_formudata(dwarf_attr(&dies[i], DW_AT_call_file, &attr), &v))
			info[i].call_file = strtab_add(&st, dwarf_filesrc(files, v, NULL, NULL), &ok);
		if (!dwarf_formudata(dwarf_attr(&dies[i], DW_AT_call_line, &attr), &v) && (int)v > 0)
			info[i].call_line = (unsigned)(int)v;
	}
	for (size_t i = 0; i < nlines && ok; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		Dwarf_Addr a = 0;
		int lineno = 0;
		bool es = false;

		if (!l || dwarf_lineaddr(l, &a) || dwarf_lineendsequence(l, &es)) {
			ok = false;
			break;
		}
		dwarf_lineno(l, &lineno);
		rows[i] = (struct row_rec){ .addr = a,
					    .file = strtab_add(&st, dwarf_linesrc(l, NULL, NULL), &ok),
					    .line = lineno > 0 ? (unsigned)lineno : 0,
					    .end_sequence = es };
	}
	memcpy(h.magic, UNIT_MAGIC, 8);
	h.nents = n;
	h.nranges = nranges;
	h.nrows = nlines;
	h.strsize = st.len;
	*len = ranges_at(n) + (size_t)nranges * 16 + nlines * sizeof(*rows) + n * sizeof(*info) + st.len;
	if (ok && (buf = calloc(1, *len))) {
		uint8_t *p = buf;

		memcpy(p, &h, sizeof(h));
		if (n)
			memcpy(p + sizeof(h), nodes, n * sizeof(*nodes));
		p += ranges_at(n);
		if (nranges)
			memcpy(p, ranges, (size_t)nranges * 16);
		p += (size_t)nranges * 16;
		if (nlines)
			memcpy(p, rows, nlines * sizeof(*rows));
		p += nlines * sizeof(*rows);
		if (n)
			memcpy(p, info, n * sizeof(*info));
		memcpy(p + n * sizeof(*info), st.buf, st.len);
	}
	free(info);
	free(rows);
	free(st.buf);
	psup_u64map_release(&st.at);
	return buf;
}

/* dwarf_getsrc_die() over the rows: the last row at or below addr, unless
 * it ends a sequence. */
static const struct row_rec *row_of(const struct unit_digest *d, uint64_t addr)
{
	size_t l = 0, u;

	if (d->no_lines || !d->nrows)
		return NULL;
	u = d->nrows - 1;
	while (l < u) {
		size_t idx = u - (u - l) / 2;

		if (addr < d->rows[idx].addr)
			u = idx - 1;
		else
			l = idx;
	}
	if (d->rows[l].addr <= addr && !d->rows[l].end_sequence)
		return &d->rows[l];
	return NULL;
}

/* ---- resolving ---- */

static struct sym_unit_cache *cache_of(struct sym_image *img)
{
	struct sym_unit_cache *uc = img->unit_cache;
	Dwarf_Addr bias = 0;
	GElf_Shdr sh;
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	uint64_t info = 0, line = 0;
	char *path;

	if (uc)
		return uc->off ? NULL : uc;
	uc = img->unit_cache = calloc(1, sizeof(*uc));
	if (!uc)
		return NULL;
	psup_u64map_init(&uc->units);
	uc->off = true;
	if (!img->build_id || !img->mod || !(path = sym_cache_file(img->build_id, "", false)))
		return NULL;
	free(path);
	uc->dw = dwfl_module_getdwarf(img->mod, &bias);
	if (!uc->dw)
		return NULL;
	uc->bias = bias;
	/* The DWARF's own sizes name the files: a stripped twin's or
	 * another debug file's are not this one's. */
	Elf *elf = dwarf_getelf(uc->dw);
	if (!elf || elf_getshdrstrndx(elf, &shstrndx) < 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info"))
			info = sh.sh_size;
		else if (!strcmp(name, ".debug_line") || !strcmp(name, ".zdebug_line"))
			line = sh.sh_size;
	}
	/* Small DWARF is read faster than files are written and read (a
	 * program being rebuilt gets a new build-id each time). */
	if (info < sym_unit_cache_min_info)
		return NULL;
	snprintf(uc->fp, sizeof(uc->fp), "%llx-%llx", (unsigned long long)info, (unsigned long long)line);
	uc->off = false;
	return uc;
}

/* The placement table, from its file or built (and written). */
static bool have_map(struct sym_image *img, struct sym_unit_cache *uc)
{
	char *path;
	uint8_t *buf;
	size_t len;

	if (uc->have_map)
		return true;
	path = map_path(img, uc, false);
	buf = path ? read_file(path, &len) : NULL;
	free(path);
	if (buf && map_load(uc, buf, len)) {
		free(buf);
		uc_stats.hits++;
		return uc->have_map = true;
	}
	free(buf);
	if (!map_build(uc)) {
		uc->off = true; /* libdw's own answer then, every time */
		return false;
	}
	map_save(img, uc);
	return uc->have_map = true;
}

/* The units' own ranges where .debug_aranges placed nothing: image.c's
 * table, kept in the placement file from then on. */
static bool have_cu_ranges(struct sym_image *img, struct sym_unit_cache *uc)
{
	const struct sym_cu_range *r;
	size_t n;

	if (uc->have_cu)
		return true;
	n = sym_image_cu_ranges(img, uc->dw, &r);
	uc->cu = n ? malloc(n * sizeof(*uc->cu)) : NULL;
	if (n && !uc->cu)
		return false;
	if (n)
		memcpy(uc->cu, r, n * sizeof(*uc->cu));
	uc->ncu = n;
	uc->have_cu = true;
	map_save(img, uc);
	return true;
}

static struct unit_digest *unit_of(struct sym_image *img, struct sym_unit_cache *uc, uint64_t die)
{
	uint64_t *v = psup_u64map_find(&uc->units, die + 1);
	struct unit_digest *d;
	Dwarf_Die cudie;
	uint8_t *buf;
	size_t len;
	char *path;
	bool created;

	if (v)
		return (struct unit_digest *)(uintptr_t)*v;
	path = unit_path(img, uc, die, false);
	buf = path ? read_file(path, &len) : NULL;
	free(path);
	d = buf ? digest_load(die, buf, len) : NULL;
	if (d) {
		uc_stats.hits++;
	} else {
		if (!dwarf_offdie(uc->dw, die, &cudie) || !(buf = digest_make(img, &cudie, die, &len)))
			return NULL;
		path = unit_path(img, uc, die, true);
		if (path)
			write_file(path, (const void *[]){ buf }, &len, 1);
		free(path);
		d = digest_load(die, buf, len);
		if (!d)
			return NULL;
	}
	v = psup_u64map_upsert(&uc->units, die + 1, &created);
	if (!v) {
		digest_free(d);
		return NULL;
	}
	*v = (uint64_t)(uintptr_t)d;
	return d;
}

int sym_unit_resolve(struct sym_image *img, uint64_t modaddr, struct sym_loc *out, struct sym_unit_line *line)
{
	struct sym_unit_cache *uc = cache_of(img);
	struct sym_scope_fn fn[SYM_MAX_SCOPES];
	const struct unit_digest *d;
	const struct row_rec *row;
	unsigned nfunc = 0;
	uint64_t addr, die;
	int i;

	if (!uc || !have_map(img, uc))
		return 0;
	addr = modaddr - uc->bias;
	memset(line, 0, sizeof(*line));
	out->nframes = 0;
	if (!map_find(uc, addr, &die)) {
		if (!have_cu_ranges(img, uc))
			return 0;
		if (!sym_cu_range_find(uc->cu, uc->ncu, addr, &die))
			return 1; /* in no unit */
	}
	d = unit_of(img, uc, die);
	if (!d)
		return 0;
	line->in_unit = true;
	row = row_of(d, addr);
	line->file = row ? str_of(d, row->file) : NULL;
	line->line = row ? row->line : 0;
	for (i = sym_scope_innermost(d->nodes, d->n, d->ranges, addr); i >= 0 && nfunc < SYM_MAX_SCOPES;
	     i = d->nodes[i].parent) {
		const struct ent_info *f = &d->info[i];

		if (f->kind == KIND_OTHER)
			continue;
		fn[nfunc++] = (struct sym_scope_fn){ .function = str_of(d, f->name),
						     .call_file = str_of(d, f->call_file),
						     .call_line = f->call_line,
						     .inlined = f->kind == KIND_INLINED };
		if (f->kind == KIND_SUBPROGRAM)
			break;
	}
	out->nframes = sym_scope_frames(fn, nfunc, line->file, line->line, out);
	return 1;
}
