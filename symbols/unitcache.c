#include "symbols/symbols-internal.h"

#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
 * before use (sizes, offsets, indices and nesting): one that fails is
 * ignored and written again.
 */

#define MAP_MAGIC "PSUPUNM1"
#define UNIT_MAGIC "PSUPUND1"
#define CACHE_VERSION 1
#define FILE_MAX_BYTES (64ULL << 20)
#define NO_STR UINT32_MAX
/* Deeper than cuscope.c's build() nests (64). */
#define MAX_NESTING 66
/* As image.c's resolve_dwarf(): scopes asked of sym_cu_scopes(). */
#define MAX_SCOPES 256

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
#define UNIT_NO_FILES 2u

struct ent_rec {
	int32_t parent;
	uint32_t next, range, nranges;
	uint8_t code, kind;
	uint16_t pad;
	uint32_t name, call_file, call_line;
};

struct row_rec {
	uint64_t addr;
	uint32_t file, line, end_sequence, pad;
};

struct row {
	uint64_t addr;
	const char *file;
	unsigned line;
	bool end_sequence;
};

struct unit_digest {
	struct sym_scope_node *ents;
	uint8_t *kind;
	const char **name, **call_file;
	unsigned *call_line;
	unsigned n;
	uint64_t (*ranges)[2];
	unsigned nranges;
	struct row *rows;
	size_t nrows;
	bool no_lines;
	uint8_t *file; /* read from a file: its bytes, which its strings point into */
};

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

/* Images whose .debug_info is smaller are read from their DWARF alone
 * (ld.so's: 658 KB, libc's: 5.8 MB in Debian 12). */
uint64_t sym_unit_cache_min_info = 256u << 10;

void sym_unit_cache_stats(uint64_t *hits, uint64_t *written)
{
	*hits = uc_stats.hits;
	*written = uc_stats.written;
}

static void digest_free(struct unit_digest *d)
{
	if (!d)
		return;
	free(d->ents);
	free(d->kind);
	free(d->name);
	free(d->call_file);
	free(d->call_line);
	free(d->ranges);
	free(d->rows);
	free(d->file);
	free(d);
}

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

/* The whole of a cache file of ours, at most FILE_MAX_BYTES: malloc'ed
 * (*len bytes), or NULL. A hit touches it (trimmed last). */
static uint8_t *read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	uint8_t *buf = NULL;
	size_t got = 0;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_size <= 0 ||
	    (uint64_t)st.st_size > FILE_MAX_BYTES || !(buf = malloc((size_t)st.st_size)))
		goto fail;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n <= 0)
			goto fail;
		got += (size_t)n;
	}
	futimens(fd, NULL);
	close(fd);
	*len = got;
	return buf;
fail:
	free(buf);
	close(fd);
	return NULL;
}

/* Writes the parts to path through a temporary file renamed into place. */
static void write_file(const char *path, const void *const *parts, const size_t *lens, unsigned nparts)
{
	char *tmp = NULL;
	bool ok = true;
	FILE *f;
	int fd;

	if (asprintf(&tmp, "%s.tmp-XXXXXX", path) < 0)
		return;
	fd = mkostemp(tmp, O_CLOEXEC);
	f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		if (fd >= 0)
			close(fd);
		free(tmp);
		return;
	}
	for (unsigned i = 0; i < nparts && ok; i++)
		ok = !lens[i] || fwrite(parts[i], lens[i], 1, f) == 1;
	if (fclose(f) != 0 || !ok || rename(tmp, path) < 0) {
		pr_debug("unit cache: cannot write %s", path);
		unlink(tmp);
	} else {
		/* The directory's bound is checked by a scan of all its files:
		 * at the first file a run writes and every 64th after. */
		if (uc_stats.written++ % 64 == 0)
			sym_cache_file_written();
	}
	free(tmp);
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

static const char *str_at(const uint8_t *strs, uint64_t strsize, uint32_t off, bool *ok)
{
	if (off == NO_STR)
		return NULL;
	if (off >= strsize) {
		*ok = false;
		return NULL;
	}
	return (const char *)strs + off;
}

static struct unit_digest *digest_alloc(unsigned n, unsigned nranges, size_t nrows)
{
	struct unit_digest *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->n = n;
	d->nranges = nranges;
	d->nrows = nrows;
	d->ents = calloc(n ? n : 1, sizeof(*d->ents));
	d->kind = calloc(n ? n : 1, 1);
	d->name = calloc(n ? n : 1, sizeof(*d->name));
	d->call_file = calloc(n ? n : 1, sizeof(*d->call_file));
	d->call_line = calloc(n ? n : 1, sizeof(*d->call_line));
	d->ranges = calloc(nranges ? nranges : 1, sizeof(*d->ranges));
	d->rows = calloc(nrows ? nrows : 1, sizeof(*d->rows));
	if (!d->ents || !d->kind || !d->name || !d->call_file || !d->call_line || !d->ranges || !d->rows) {
		digest_free(d);
		return NULL;
	}
	return d;
}

/* The digest in buf (len bytes, a file's), which it takes: its strings
 * stay there. NULL (buf freed) when the file is not a sound digest. */
static struct unit_digest *digest_load(uint64_t die, uint8_t *buf, size_t len)
{
	struct unit_hdr h;
	const struct ent_rec *er;
	const uint64_t(*rr)[2];
	const struct row_rec *wr;
	const uint8_t *strs;
	struct unit_digest *d;
	uint64_t need;
	unsigned open[MAX_NESTING], nopen = 0;
	bool ok = true;

	if (len < sizeof(h))
		goto bad;
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, UNIT_MAGIC, 8) || h.version != CACHE_VERSION || h.die != die ||
	    h.nrows > len / sizeof(struct row_rec) || h.strsize > len || !h.strsize)
		goto bad;
	need = sizeof(h) + (uint64_t)h.nents * sizeof(struct ent_rec) + (uint64_t)h.nranges * 16 +
	       h.nrows * sizeof(struct row_rec) + h.strsize;
	if (need != len || buf[len - 1] != '\0')
		goto bad;
	er = (const struct ent_rec *)(buf + sizeof(h));
	rr = (const uint64_t(*)[2])(buf + sizeof(h) + (size_t)h.nents * sizeof(*er));
	wr = (const struct row_rec *)((const uint8_t *)rr + (size_t)h.nranges * 16);
	strs = (const uint8_t *)(wr + h.nrows);
	d = digest_alloc(h.nents, h.nranges, h.nrows);
	if (!d)
		goto bad;
	d->file = buf;
	d->no_lines = h.flags & UNIT_NO_LINES;
	/* The walk recurses into each entry's subtree and reads ranges by
	 * index: the tree is checked to be the one build() leaves (each
	 * entry's parent the innermost subtree around it, subtrees nested,
	 * at most MAX_NESTING deep) and every range in the table. */
	for (unsigned i = 0; i < h.nents && ok; i++) {
		const struct ent_rec *e = &er[i];

		while (nopen && er[open[nopen - 1]].next <= i)
			nopen--;
		if (e->parent != (nopen ? (int32_t)open[nopen - 1] : -1) || e->next <= i || e->next > h.nents ||
		    (nopen && e->next > er[open[nopen - 1]].next) || e->range > h.nranges ||
		    e->nranges > h.nranges - e->range || e->kind > KIND_INLINED || nopen == MAX_NESTING) {
			ok = false;
			break;
		}
		open[nopen++] = i;
		d->ents[i].parent = e->parent;
		d->ents[i].next = e->next;
		d->ents[i].range = e->range;
		d->ents[i].nranges = e->nranges;
		d->ents[i].code = e->code != 0;
		d->kind[i] = e->kind;
		d->name[i] = str_at(strs, h.strsize, e->name, &ok);
		d->call_file[i] = str_at(strs, h.strsize, e->call_file, &ok);
		d->call_line[i] = e->call_line;
	}
	memcpy(d->ranges, rr, (size_t)h.nranges * 16);
	for (uint64_t i = 0; i < h.nrows && ok; i++) {
		d->rows[i] = (struct row){ .addr = wr[i].addr,
					   .file = str_at(strs, h.strsize, wr[i].file, &ok),
					   .line = wr[i].line,
					   .end_sequence = wr[i].end_sequence != 0 };
	}
	if (!ok) {
		digest_free(d);
		return NULL;
	}
	return d;
bad:
	free(buf);
	return NULL;
}

/* The strings of a digest being saved, each once. */
struct strtab {
	char *buf;
	size_t len, cap;
	struct psup_u64map at; /* pooled pointer -> offset + 1 */
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

static void digest_save(const struct sym_image *img, const struct sym_unit_cache *uc, uint64_t die,
			const struct unit_digest *d)
{
	struct unit_hdr h = {
		.version = CACHE_VERSION,
		.flags = d->no_lines ? UNIT_NO_LINES : 0,
		.die = die,
		.nents = d->n,
		.nranges = d->nranges,
		.nrows = d->nrows,
	};
	struct ent_rec *er = calloc(d->n ? d->n : 1, sizeof(*er));
	struct row_rec *wr = calloc(d->nrows ? d->nrows : 1, sizeof(*wr));
	struct strtab st = { 0 };
	bool ok = er && wr;
	char *path = NULL;

	psup_u64map_init(&st.at);
	strtab_add(&st, "", &ok); /* never empty */
	for (unsigned i = 0; i < d->n && ok; i++)
		er[i] = (struct ent_rec){ .parent = d->ents[i].parent,
					  .next = d->ents[i].next,
					  .range = d->ents[i].range,
					  .nranges = d->ents[i].nranges,
					  .code = d->ents[i].code,
					  .kind = d->kind[i],
					  .name = strtab_add(&st, d->name[i], &ok),
					  .call_file = strtab_add(&st, d->call_file[i], &ok),
					  .call_line = d->call_line[i] };
	for (size_t i = 0; i < d->nrows && ok; i++)
		wr[i] = (struct row_rec){ .addr = d->rows[i].addr,
					  .file = strtab_add(&st, d->rows[i].file, &ok),
					  .line = d->rows[i].line,
					  .end_sequence = d->rows[i].end_sequence };
	h.strsize = st.len;
	memcpy(h.magic, UNIT_MAGIC, 8);
	if (ok && (path = unit_path(img, uc, die, true))) {
		const void *parts[] = { &h, er, d->ranges, wr, st.buf };
		size_t lens[] = { sizeof(h), d->n * sizeof(*er), (size_t)d->nranges * 16, d->nrows * sizeof(*wr),
				  st.len };
		write_file(path, parts, lens, 5);
	}
	free(path);
	free(st.buf);
	psup_u64map_release(&st.at);
	free(er);
	free(wr);
}

/* The digest of the unit cudie from libdw: what resolve_dwarf() reads of
 * it for any address. */
static struct unit_digest *digest_build(struct sym_image *img, Dwarf_Die *cudie)
{
	const struct sym_scope_node *ents;
	Dwarf_Die *dies;
	const uint64_t(*ranges)[2];
	unsigned n, nranges;
	Dwarf_Files *files = NULL;
	Dwarf_Lines *lines = NULL;
	size_t nlines = 0;
	struct unit_digest *d;
	bool ok = true, no_lines;

	if (sym_cu_scope_table(&img->cu_scopes, cudie, &ents, &dies, &n, &ranges, &nranges) < 0)
		return NULL;
	no_lines = dwarf_getsrclines(cudie, &lines, &nlines) != 0;
	if (no_lines)
		nlines = 0;
	if (dwarf_getsrcfiles(cudie, &files, NULL))
		files = NULL;
	d = digest_alloc(n, nranges, nlines);
	if (!d)
		return NULL;
	d->no_lines = no_lines;
	if (n)
		memcpy(d->ents, ents, n * sizeof(*ents));
	if (nranges)
		memcpy(d->ranges, ranges, (size_t)nranges * sizeof(*ranges));
	for (unsigned i = 0; i < n && ok; i++) {
		int tag = dwarf_tag(&dies[i]);
		Dwarf_Attribute attr;
		Dwarf_Word v;

		if (tag == DW_TAG_subprogram)
			d->kind[i] = KIND_SUBPROGRAM;
		else if (tag == DW_TAG_inlined_subroutine)
			d->kind[i] = KIND_INLINED;
		else
			continue;
		d->name[i] = sym_die_function_name(img, &dies[i]);
		if (d->kind[i] != KIND_INLINED)
			continue;
		if (files && !dwarf_formudata(dwarf_attr(&dies[i], DW_AT_call_file, &attr), &v))
			d->call_file[i] = dwarf_filesrc(files, v, NULL, NULL);
		if (!dwarf_formudata(dwarf_attr(&dies[i], DW_AT_call_line, &attr), &v) && (int)v > 0)
			d->call_line[i] = (unsigned)(int)v;
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
		d->rows[i] = (struct row){ .addr = a,
					   .file = dwarf_linesrc(l, NULL, NULL),
					   .line = lineno > 0 ? (unsigned)lineno : 0,
					   .end_sequence = es };
	}
	if (!ok) {
		digest_free(d);
		return NULL;
	}
	return d;
}

/* dwarf_getsrc_die() over the rows: the last row at or below addr, unless
 * it ends a sequence. */
static const struct row *row_of(const struct unit_digest *d, uint64_t addr)
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
		if (!dwarf_offdie(uc->dw, die, &cudie))
			return NULL;
		d = digest_build(img, &cudie);
		if (!d)
			return NULL;
		digest_save(img, uc, die, d);
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
	const struct unit_digest *d;
	const struct row *row;
	unsigned scopes[MAX_SCOPES], nfunc = 0, n = 0;
	uint64_t addr, die;
	const char *file;
	unsigned lineno;
	int i;

	if (!uc || uc->off || !have_map(img, uc))
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
	file = row ? row->file : NULL;
	lineno = row ? row->line : 0;
	line->file = file;
	line->line = lineno;
	for (i = sym_scope_innermost(d->ents, d->n, (const uint64_t(*)[2])d->ranges, addr); i >= 0 && nfunc < MAX_SCOPES;
	     i = d->ents[i].parent) {
		if (d->kind[i] == KIND_OTHER)
			continue;
		scopes[nfunc++] = (unsigned)i;
		if (d->kind[i] == KIND_SUBPROGRAM)
			break;
	}
	for (unsigned k = 0; k < nfunc; k++) {
		unsigned e = scopes[k];

		if (n < SYM_MAX_FRAMES - 1 || k == nfunc - 1) {
			struct sym_frame *f = &out->frames[n++];

			f->function = d->name[e];
			f->file = file;
			f->line = lineno;
		}
		if (d->kind[e] != KIND_INLINED)
			break;
		file = d->call_file[e];
		lineno = d->call_line[e];
	}
	out->nframes = n;
	return 1;
}
