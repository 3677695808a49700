#ifndef PSUP_SYMBOLS_SYMBOLS_INTERNAL_H
#define PSUP_SYMBOLS_SYMBOLS_INTERNAL_H

/* Shared between the files of symbols/: images (image.c), the address space
 * (space.c) and the unwinder (unwind.c). Not for other parts. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <libunwind.h>

#include "common/hash.h"
#include "symbols/symbols.h"

/* A set of interned strings: each distinct string stored once, kept until
 * the pool is released, so pointers handed out stay valid that long. */
struct sym_strpool {
	struct sym_strpool_ent **buckets;
	size_t nbuckets, len;
};

void sym_strpool_init(struct sym_strpool *p);
void sym_strpool_release(struct sym_strpool *p);
/* Returns the pooled copy of s (owned by the pool), NULL on ENOMEM. */
const char *sym_strpool_intern(struct sym_strpool *p, const char *s);

/* One PT_LOAD of an image. */
struct sym_load {
	uint64_t vaddr, memsz, offset, filesz;
	uint32_t flags; /* PF_X | PF_W | PF_R */
};

/*
 * One ELF file (or the vdso's bytes), shared by every space that maps it:
 * a global cache keyed by (path, device, inode), or by content for the vdso.
 * The file stays mapped read-only for its life (unwinding reads code and
 * unwind tables from it); its DWARF is opened on the first resolve. An image
 * no space holds any more stays in the cache, idle, for the next process
 * that maps it (a build runs cc1 hundreds of times): the idle ones are
 * bounded by count and file size, the least recently used freed first.
 */
struct sym_image {
	struct sym_image *next; /* global cache list */
	unsigned refs;
	struct sym_image *idle_prev, *idle_next; /* on the idle list when refs is 0 */
	char *path;                              /* as mapped (without " (deleted)"), or "[vdso]" */
	uint64_t dev, inode;
	int64_t mtime_ns, fsize; /* fstat() of fd at load: an idle image revived is checked */
	bool is_vdso;
	char *build_id; /* lowercase hex or NULL */

	int fd;
	Elf *elf;            /* NULL when not ELF */
	const uint8_t *data; /* raw file bytes (elf_rawfile) */
	size_t size;
	uint16_t e_type;
	struct sym_load *loads;
	unsigned nloads;

	/* .eh_frame_hdr (PT_GNU_EH_FRAME), for the remote unwinder. */
	bool have_eh_hdr;
	uint64_t eh_hdr_vaddr;   /* segbase */
	uint64_t eh_table_vaddr; /* the binary search table */
	uint64_t eh_fde_count;

	/* DWARF + symbol tables, loaded on first resolve. */
	bool dwfl_tried;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	uint64_t mod_bias;        /* Dwfl module address - ELF vaddr */
	struct sym_strpool names; /* demangled names */
	/* sym_loc.symbols of the image, set with the Dwfl */
	const char *symbols;
	/* sym_image_resolve()'s answers: vaddr + 1 -> struct sym_resolved *,
	 * so the next process of the same image resolves its addresses for
	 * the cost of a lookup. Cleared when it reaches its cap. */
	struct psup_u64map resolved;
	/* The symbol table sorted once (symtab.c), asked instead of
	 * dwfl_module_addrinfo(), which scans the whole table per address
	 * (109,000 symbols in node). Built on the first address without DWARF;
	 * also gives sym_loc.near. */
	bool symtab_tried;
	struct sym_symtab *symtab;
	/* Address ranges of the compile units, sorted, for DWARF without
	 * .debug_aranges (Go's): built on the first address libdw cannot
	 * place in a unit. */
	bool cu_ranges_tried;
	struct sym_cu_range *cu_ranges;
	size_t ncu_ranges;
	/* Each unit's code DIEs, built on its first address (cuscope.c). */
	struct sym_cu_index *cu_scopes;
	/* The units' answers kept on disk (unitcache.c), on first resolve. */
	struct sym_unit_cache *unit_cache;
};

struct sym_cu_range {
	uint64_t start, end; /* DWARF addresses */
	uint64_t die;        /* offset of the unit's DIE */
};

/*
 * Returns a referenced image for a file-backed mapping of pid (opening
 * the path, or /proc/PID/map_files/<range> when the file was deleted or
 * replaced). Release with sym_image_put(). -ENOENT/-EACCES/... when it
 * cannot be opened, -ENOEXEC when it is not ELF.
 */
int sym_image_get_file(pid_t pid, const struct sym_map *m, struct sym_image **out);
/* The cached image of the same file (path, device and inode) as m, without
 * opening anything: referenced, or -ENOENT when none is (an idle one whose
 * file changed since it was loaded is dropped). */
int sym_image_get_cached(const struct sym_map *m, struct sym_image **out);
/* Returns a referenced image for the vdso of pid (read from its memory). */
int sym_image_get_vdso(pid_t pid, uint64_t start, uint64_t end, struct sym_image **out);
void sym_image_ref(struct sym_image *img);
void sym_image_put(struct sym_image *img);

/* The bias (process address - ELF vaddr) of a mapping of img at
 * [start, end) from file offset offset. Returns 0 or -ENOENT when no PT_LOAD
 * covers it. */
int sym_image_bias(const struct sym_image *img, uint64_t start, uint64_t end,
		   uint64_t offset, bool exec, uint64_t *bias);
/* The PT_LOAD containing ELF vaddr, or NULL. */
const struct sym_load *sym_image_load_at(const struct sym_image *img, uint64_t vaddr);
/* Copies len bytes at ELF vaddr from the file bytes. false when they are
 * not all in the file (bss, out of range). Never touches the live process. */
bool sym_image_read(const struct sym_image *img, uint64_t vaddr, void *buf, size_t len);
/* Fills out->frames (and nframes) for ELF vaddr (already adjusted to the
 * call instruction for return addresses). Returns 0 or -errno. */
int sym_image_resolve(struct sym_image *img, uint64_t vaddr, struct sym_loc *out);
/* The symbol table's name for ELF vaddr as dwfl_module_addrinfo() gives it
 * (NULL when none), from the image's sorted table (symtab.c). Needs the image's DWARF opened (any sym_image_resolve() does it). */
const char *sym_image_symbol_at(struct sym_image *img, uint64_t vaddr);

/*
 * symtab.c: a module's symbol table sorted by address, read once, that
 * answers as dwfl_module_addrinfo() does (the same name for every address)
 * for the cost of a binary search.
 */
struct sym_symtab;
/* Reads mod's table (one pass); *out is freed with sym_symtab_free(). A
 * module without a table gets a table that answers NULL. 0 or -ENOMEM. */
int sym_symtab_new(Dwfl_Module *mod, struct sym_symtab **out);
/* The same table, kept on disk by the build-id of the module's file
 * (lowercase hex; NULL: not kept): read from the cache when a valid copy
 * of the same table is there (the same symbol count and first global),
 * else made and written there. A copy that does not check out is made
 * again. *hit says which (may be NULL). */
int sym_symtab_new_cached(Dwfl_Module *mod, const char *build_id, struct sym_symtab **out, bool *hit);
/* Tables read from the cache, and written to it, since psup started. */
void sym_symtab_cache_stats(uint64_t *hits, uint64_t *written);
/* Smaller tables are made, not kept (faster than a file is read); tests
 * lower it. */
extern unsigned sym_symtab_cache_min_symbols;
void sym_symtab_free(struct sym_symtab *t);
/* dwfl_module_addrinfo(mod, addr, ...)'s name (module address), or NULL;
 * valid while the module is. */
const char *sym_symtab_lookup(struct sym_symtab *t, uint64_t addr);
/* The function (STT_FUNC, STT_GNU_IFUNC) starting last at or below addr,
 * with its [*start, *end) in module addresses; NULL when none. */
const char *sym_symtab_function_below(const struct sym_symtab *t, uint64_t addr,
				      uint64_t *start, uint64_t *end);
/* The symbols kept, and the most entries one lookup walked (for tests). */
size_t sym_symtab_count(const struct sym_symtab *t);
size_t sym_symtab_longest_walk(const struct sym_symtab *t);

/* Demangles a C++ or Rust name; returns a heap string (caller frees) or
 * NULL when name is not mangled (or on ENOMEM). */
char *sym_demangle(const char *name);

/* One executable mapping of a space. */
struct sym_mapping {
	uint64_t start, end, offset, dev, inode;
	unsigned prot;
	bool deleted;
	const char *path;        /* interned in the space's pool */
	bool tried;              /* image load attempted */
	struct sym_image *image; /* NULL when unknown; the ref is in held[] */
	uint64_t bias;           /* process address - ELF vaddr, when image */
};

/* One line of a perf map file (perfmap.c); name in the space's pool. */
struct sym_perfmap_ent {
	uint64_t start, size, seq;
	const char *name;
};

/* The process's /tmp/perf-PID.map as read so far, sorted by start. */
struct sym_perfmap {
	struct sym_perfmap_ent *ents;
	size_t n, cap;
	uint64_t seq;        /* lines read: a later one wins */
	uint64_t read;       /* bytes of the file parsed */
	uint64_t checked_ns; /* when the file was last looked at */
	const char *path;    /* in the space's pool; NULL until read */
};

struct sym_space {
	pid_t pid;
	/* Whose memory is read (the vdso, live stack words, map_files, exe):
	 * pid, or a thread of it when pid is a leader that called
	 * pthread_exit (a zombie has no memory). From the last read of the
	 * maps. */
	pid_t mem_pid;
	struct sym_mapping *maps; /* sorted by start, not overlapping */
	size_t nmaps;
	/* Every image this space ever used holds one ref here until
	 * sym_space_free(), so strings handed out stay valid. */
	struct sym_image **held;
	size_t nheld, capheld;
	struct sym_strpool strings;
	bool stale;                 /* exec'ed: the next miss refreshes at once */
	int maps_err;               /* the last read of the maps: 0 or -errno */
	uint64_t miss_refresh_ns;   /* last refresh caused by a miss */
	uint64_t miss_interval_ns;  /* rate limit of such refreshes */
	uint64_t generation;        /* bumped when the mappings change */
	uint64_t unw_generation;    /* generation the unwind cache is valid for */
	unw_addr_space_t unw_as;    /* snapshot unwinder (unwind.c) */
	unw_addr_space_t upt_as;    /* ptrace unwinder */
	bool unwind_cut;            /* the last sample's stack was cut short */
	struct sym_perfmap perfmap; /* JIT code's names */
};

/* perfmap.c: the name a perf map file gives pc (reading what the file
 * gained since), with *path the file's; NULL when none. */
const char *sym_perfmap_lookup(struct sym_space *sp, uint64_t pc, const char **path);
void sym_perfmap_release(struct sym_perfmap *pm);

/* Finds the mapping containing addr; refresh: on a miss, re-read the maps
 * (rate-limited). Returns NULL when none. */
struct sym_mapping *sym_space_find(struct sym_space *sp, uint64_t addr, bool refresh);
/* Loads the mapping's image on first use. Returns it or NULL. */
struct sym_image *sym_space_mapping_image(struct sym_space *sp, struct sym_mapping *m);
/* The index of the last mapping with start <= addr, or -1. */
ssize_t sym_space_floor(const struct sym_space *sp, uint64_t addr);
/* unwind.c: frees the libunwind address spaces of sp. */
void sym_unwind_release(struct sym_space *sp);

/* image.c: bytes as lowercase hex into out (2 n + 1 bytes). */
#define SYM_BUILD_ID_MAX 64 /* bytes of a build-id psup keeps */
void sym_hex(const uint8_t *bytes, size_t n, char *out);

/* debugcache.c: the inflated copies of compressed separate debug files.
 * lookup: an fd on the copy for ELF build-id id, with *path_out its path
 * (the caller frees both), or -1 when there is none. add: inflates the
 * debug file fd (build-id id) into the cache and returns the copy as lookup
 * does; -1 when the cache is off or fd has nothing compressed (then fd
 * serves as it is). by_id: lookup, else add of the distribution's file by
 * build-id (/usr/lib/debug/.build-id), *id_file saying whether that file
 * exists (libdwfl's own search then keeps it). */
int sym_debug_cache_lookup(const unsigned char *id, size_t idlen, char **path_out);
int sym_debug_cache_add(int fd, const unsigned char *id, size_t idlen, char **path_out);
int sym_debug_cache_by_id(const unsigned char *id, size_t idlen, char **path_out, bool *id_file);
void sym_debug_cache_stats(uint64_t *hits, uint64_t *written);
/* The path (malloc'd) of the file the cache keeps for build-id hex
 * (lowercase hex) with suffix: DIR/BB/REST<suffix>, beside the debug
 * files; create makes its directory (psup's own, as the cache's). NULL
 * when the cache is off or hex is not a build-id's. */
char *sym_cache_file(const char *hex, const char *suffix, bool create);
/* A file was written into the cache: the least recently used files go
 * while it is over its size (the debug files' bound, counted together). */
void sym_cache_file_written(void);
/* A file of the cache is written to a temporary beside path (*tmp, to pass
 * on), then sym_cache_commit() closes it and renames it into place when ok
 * and every write went out (two psups at once both succeed), or removes it;
 * true when path is written. */
FILE *sym_cache_create(const char *path, char **tmp);
/* A file of the cache opened for reading if it is one of ours: a regular
 * file (not a link) owned by this user, of 1 to max bytes (*size).
 * Marked recently used (trimmed last). The fd, or -1. */
int sym_cache_open(const char *path, uint64_t max, size_t *size);
bool sym_cache_commit(FILE *f, char *tmp, const char *path, bool ok);
/* The debug file for build-id id in debuginfod's client cache (downloaded
 * before the run by debuginfod-find): an fd and its name (to free), or -1. */
int sym_debuginfod_cached(const unsigned char *id, size_t idlen, char **path_out);

/* cuscope.c: the function DIEs around addr (a DWARF address in the unit
 * cudie), innermost first: the inlined subroutines, then the subprogram
 * that holds them; at most max copied to out. The unit's table is built in
 * *idx (allocated on first use, freed by sym_cu_index_free()) the first
 * time one of its addresses is asked. Returns how many, 0 when no code DIE
 * of the unit contains addr, -1 when out of memory. */
struct sym_cu_index;
int sym_cu_scopes(struct sym_cu_index **idx, Dwarf_Die *cudie, Dwarf_Addr addr, Dwarf_Die *out, int max);
void sym_cu_index_free(struct sym_cu_index *idx);
/* The table itself, in the tree's order: each DIE with code (low_pc or
 * ranges) and each DIE that holds one, with its parent (-1: a child of the
 * unit), the index after its subtree and its address ranges (ranges[range]
 * to ranges[range + nranges - 1], [start, end)); dies[i] is entry i's DIE.
 * The walk of sym_cu_scopes() over a table, wherever it comes from
 * (unitcache.c keeps them on disk): the innermost entry with code that
 * contains addr, or -1. */
struct sym_scope_node {
	int32_t parent;
	uint32_t next, range, nranges;
	uint8_t code;
};
int sym_cu_scope_table(struct sym_cu_index **idx, Dwarf_Die *cudie, const struct sym_scope_node **ents,
		       Dwarf_Die **dies, unsigned *n, const uint64_t (**ranges)[2], unsigned *nranges);
int sym_scope_innermost(const struct sym_scope_node *ents, unsigned n, const uint64_t (*ranges)[2], uint64_t addr);

/* unitcache.c: modaddr (a module address of img) answered from its unit's
 * digest kept on disk, made and written from libdw the first time: 1 when
 * answered (out->frames and nframes as image.c's DWARF lookup fills them;
 * with no frame, *line says whether a unit holds the address and its line
 * row, for the symbol table's answer), 0 when the caller asks libdw (no
 * cache directory or build-id, small DWARF, out of memory). */
struct sym_unit_line {
	bool in_unit;
	const char *file;
	unsigned line;
};
struct sym_unit_cache;
int sym_unit_resolve(struct sym_image *img, uint64_t modaddr, struct sym_loc *out, struct sym_unit_line *line);
void sym_unit_cache_free(struct sym_unit_cache *uc);
void sym_unit_cache_stats(uint64_t *hits, uint64_t *written);
/* Bytes of .debug_info below which an image is not cached (tests). */
extern uint64_t sym_unit_cache_min_info;
/* The most function scopes an address is asked for (cuscope.c). */
#define SYM_MAX_SCOPES 256
/* A function scope around an address, innermost first: its name, and for
 * an inlined one where its caller (the next scope out) called it. */
struct sym_scope_fn {
	const char *function;
	const char *call_file;
	unsigned call_line;
	bool inlined;
};
/* image.c: out->frames from the nfunc scopes around an address at
 * file:line (eu-addr2line -i), for libdw's answer and a digest's; their
 * count. Deep inlining keeps the innermost frames and the real function. */
unsigned sym_scope_frames(const struct sym_scope_fn *fn, unsigned nfunc, const char *file, unsigned line,
			  struct sym_loc *out);
/* image.c for unitcache.c: a DIE's function name as resolve_dwarf() gives
 * it (pooled in img or libdw's); the units' own address ranges (built on
 * first use, sorted; their count, *out the table). */
const char *sym_die_function_name(struct sym_image *img, Dwarf_Die *die);
size_t sym_image_cu_ranges(struct sym_image *img, Dwarf *dw, const struct sym_cu_range **out);
/* The unit of DWARF address addr in such a table (n ranges): true and *die. */
bool sym_cu_range_find(const struct sym_cu_range *r, size_t n, uint64_t addr, uint64_t *die);

/* A path as the kernel gives it (name, len bytes: a query's, a perf mmap
 * record's) as the maps text shows it: a newline escaped as "\012"
 * (mangle_path()), " (deleted)" taken off into m->deleted. m->path is
 * malloc'd. 0 or -ENOMEM. */
int sym_kernel_path(const char *name, size_t len, struct sym_map *m);
/* From now on sym_maps_query_exec() says -ENOTTY at once, as after a kernel
 * refused (tests: the text's path). */
void sym_maps_query_refuse(void);

#endif
