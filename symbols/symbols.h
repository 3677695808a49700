#ifndef PSUP_SYMBOLS_SYMBOLS_H
#define PSUP_SYMBOLS_SYMBOLS_H

/*
 * Symbols: a process's address space (/proc/PID/maps, kept current: a lookup
 * that misses re-reads the maps, so libraries loaded with dlopen are found),
 * ELF + DWARF through libdw (line tables, inlined frames, symbol tables for
 * code without DWARF, separate debug files by build-id and .gnu_debuglink,
 * the vdso), and unwinding with libunwind, over a sample's register + stack
 * snapshot or over a ptrace-stopped thread.
 *
 * Images are loaded lazily, on the first address that falls in them, and
 * shared between the address spaces of a process tree (keyed by path, device,
 * inode and build-id).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/sampler.h"

/* One line of /proc/PID/maps. */
struct sym_map {
	uint64_t start, end, offset;
	uint64_t inode;
	unsigned dev_major, dev_minor;
	unsigned prot; /* PROT_READ | PROT_WRITE | PROT_EXEC */
	char *path;    /* "" for anonymous; "[vdso]", "[stack]", ... kept as is */
	bool deleted;  /* the kernel appended " (deleted)"; stripped from path */
};

/* Parses maps text. *out (an array of *n entries, each path heap-allocated)
 * is freed with sym_maps_free(). Returns 0, -ENOMEM, or -EINVAL with *bad_line
 * (1-based) set for a line that does not parse. */
int sym_maps_parse(const char *text, struct sym_map **out, size_t *n, size_t *bad_line);
void sym_maps_free(struct sym_map *maps, size_t n);
/* The text of process pid's maps into *text (freed by the caller; *path,
 * when not NULL, says which file, for messages): /proc/PID/maps, or, when
 * that is empty (a zombie leader has no memory of its own while the other
 * threads run on), the first non-empty /proc/PID/task/TID/maps. *from, when
 * not NULL, is the task whose maps they are (pid or that TID): the one whose
 * memory can be read. 0, or -errno (-ENOENT when the process is gone). */
int sym_maps_read(pid_t pid, char **text, char *path, size_t pathlen, pid_t *from);
/*
 * Process pid's executable mappings, in address order, asked of the kernel
 * one by one (PROCMAP_QUERY, Linux 6.11) instead of reading the text of
 * them all: about a third of the time (the kernel formats no line and no
 * path of the other mappings). The same entries as sym_maps_parse() gives
 * for those lines ([vsyscall] aside: the kernel's page, in no process's
 * list of mappings). 0 (an empty list: none is executable), or -errno:
 * -ENOTTY or -EINVAL where the kernel does not answer such queries, -ESRCH
 * for a leader without memory of its own (sym_maps_read() reads a
 * thread's), -ENOENT when the process is gone.
 */
int sym_maps_query_exec(pid_t pid, struct sym_map **out, size_t *n);
/* Where pid maps the file (dev, ino) at offset 0, read from /proc/PID/maps
 * (the file at each mapping's path is stat'ed: the device maps names may
 * be an overlay's). 0 with *base set, -ENOENT when not mapped, or -errno. */
int sym_maps_file_base(pid_t pid, dev_t dev, ino_t ino, uint64_t *base);
/* Symbol name of library lib as psup itself has it loaded (dlopen with
 * RTLD_NOLOAD): its offset from the file's load base, and the file's
 * device and inode. 0 or -ENOENT. */
int sym_own_symbol(const char *lib, const char *name, uint64_t *offset, dev_t *dev, ino_t *ino);

/* One frame of a resolved address. frames[0] is the innermost: for an
 * address inside inlined code, the inlined callee; the last frame is the
 * real (out-of-line) function containing the address. */
struct sym_frame {
	const char *function; /* demangled; NULL when unknown */
	const char *file;     /* source path as DWARF names it; NULL when unknown */
	unsigned line;        /* 0 when unknown */
};

#define SYM_MAX_FRAMES 16

struct sym_loc {
	const char *image;    /* mapped path, "[vdso]", or "[unknown]" */
	const char *build_id; /* lowercase hex, NULL when none */
	uint64_t offset;      /* address in the image's ELF virtual addresses */
	unsigned nframes;     /* 0 when no symbol is known */
	struct sym_frame frames[SYM_MAX_FRAMES];
	/* nframes 0 in an ELF image: the function symbol that ends last
	 * before the address in its section (from .symtab, else .dynsym: for
	 * a stripped image, the nearest exported function), NULL when none.
	 * The address is NOT in that function; it only follows it. */
	const char *near;
	/* What the image offers to symbolize it: "dwarf" (debug info:
	 * functions and lines), "symtab" (a full symbol table, no lines),
	 * "dynsym" (exported symbols only), "none"; NULL when not an ELF
	 * image (the kernel, an anonymous mapping). A static string. */
	const char *symbols;
};

/* The address space of one process. Opaque. */
struct sym_space;

/*
 * The image cache, shared by every space: an image (ELF file, by path,
 * device and inode; the vdso by content) is opened, parsed and its DWARF
 * loaded once for the whole run, and each address resolved in it once; an
 * image no process maps any more is kept, idle, for the next one (a fork
 * and exec of the same program costs a lookup), up to a bound. The
 * counters say what that saved (-v prints them; tests check them).
 */
struct sym_cache_stats {
	uint64_t loads;          /* images opened and parsed */
	uint64_t reuses;         /* images found in the cache, held or idle */
	uint64_t revived;        /* of those, idle ones (no space held them) */
	uint64_t evictions;      /* idle images freed for the bound, or changed on disk */
	uint64_t resolves;       /* addresses resolved in an image */
	uint64_t resolve_hits;   /* of those, answered from the image's cache */
	unsigned idle;           /* images idle now */
	uint64_t debug_hits;     /* debug files opened inflated from the debug cache */
	uint64_t debug_written;  /* inflated copies written to it */
	uint64_t symtab_hits;    /* symbol tables read from the cache */
	uint64_t symtab_written; /* symbol tables written to it */
	uint64_t unit_hits;      /* units' digests and placement tables read from it */
	uint64_t unit_written;   /* of those, written to it */
};
void sym_cache_stats(struct sym_cache_stats *out);
/* Frees every idle image (tests; psup's memory when asked). */
void sym_cache_trim(void);

/* Creates the space of pid and reads its maps. Caller frees with
 * sym_space_free(). Returns 0 or -errno (-ESRCH when pid is gone). */
int sym_space_new(pid_t pid, struct sym_space **out);
void sym_space_free(struct sym_space *sp);
pid_t sym_space_pid(const struct sym_space *sp);
/* The error of the last read of the process's maps: 0, or -EACCES when the
 * process is not dumpable for psup (its pcs then resolve to the image
 * "[not dumpable]"). */
int sym_space_maps_error(const struct sym_space *sp);
/* Re-reads /proc/PID/maps now. Lookups that miss do this on their own:
 * the first miss always, later ones at most every 10 ms, backing off to
 * once a second while refreshes keep missing (JIT or anonymous code). */
int sym_space_refresh(struct sym_space *sp);
/*
 * Reads the maps now and opens the image of every executable mapping, for
 * samples resolved after the process is gone: then neither /proc/PID/maps
 * nor /proc/PID/map_files can be read (a process ends with samples still in
 * the CPU rings). Call it at the exit stop of the process's leader; it
 * loads no symbols. Returns 0 or -errno.
 */
int sym_space_snapshot(struct sym_space *sp);
/*
 * An executable mapping the process made, told by the kernel as it was
 * made (a perf mmap record): m->path as the kernel wrote it (a " (deleted)"
 * at its end is taken off and sets deleted; anonymous memory's "//anon"
 * becomes "", as in /proc/PID/maps). It replaces what it overlaps
 * (a munmap is not told; a new mapping over the old range is). A mapping
 * of a deleted file has its image opened now, while the process may still
 * have it (map_files). 0 or -ENOMEM; -EINVAL for an empty or wrapping range.
 */
int sym_space_map_add(struct sym_space *sp, const struct sym_map *m);
/* The process exec'ed: forget every mapping (a new image is coming). */
void sym_space_exec(struct sym_space *sp);
/* A child created by fork shares its parent's mappings at birth: copy them
 * instead of parsing /proc again (the child may already have exec'ed; the
 * next miss refreshes). */
int sym_space_fork(const struct sym_space *parent, pid_t child, struct sym_space **out);

/*
 * Resolves pc. return_address: pc is a return address from an unwound
 * caller frame, so the call instruction is looked up (pc - 1) for the
 * line. Strings in *out stay valid until sym_space_free(). Returns 0 (with
 * nframes possibly 0 when nothing is known), or -errno on a hard failure.
 * Code known only from an ELF symbol table gives one frame with file NULL
 * and line 0. A pc in an executable mapping without a usable ELF image
 * gives image = the mapping's name ("[vsyscall]", a path that cannot be
 * opened, with offset = the file offset) or "[unknown]" when anonymous.
 */
int sym_space_resolve(struct sym_space *sp, uint64_t pc, bool return_address,
		      struct sym_loc *out);
/* The path of the mapping that holds addr ("" when anonymous), NULL when
 * none does: the maps only (read again on a miss, as lookups do), no image
 * opened and no symbol looked up. Valid until sym_space_free(). */
const char *sym_space_mapping_path(struct sym_space *sp, uint64_t addr);
/* A key for the code at addr that is the same in every process mapping the
 * same file (device, inode and file offset, mixed with the process's hash
 * seed), for what is learned once per program or library; 0 when addr is in
 * no mapping known now (the maps are not read for it), or in one not backed
 * by a file still there (anonymous, deleted). */
uint64_t sym_space_code_key(struct sym_space *sp, uint64_t addr);

/*
 * Unwinds a sample over its register + stack snapshot (libunwind with
 * accessors reading the snapshot for stack addresses and the image files for
 * code and unwind tables). pcs[0] = the sample ip, then return addresses,
 * innermost first. Returns the number of pcs (>= 1 when the sample has an ip).
 */
int sym_space_unwind_sample(struct sym_space *sp, const struct smp_sample *s,
			    uint64_t *pcs, unsigned max);
/*
 * Whether the last sym_space_unwind_sample() stopped short of the stack's
 * root: a word it needed was neither in the snapshot nor readable from the
 * process (a frame larger than the snapshot in a process gone or moved on),
 * or libunwind failed a step. Its pcs are the frames found before.
 */
bool sym_space_unwind_was_cut(const struct sym_space *sp);

/* Unwinds a ptrace-stopped thread of this space (libunwind-ptrace). Same
 * output as above. */
int sym_space_unwind_thread(struct sym_space *sp, pid_t tid, uint64_t *pcs, unsigned max);

/*
 * Instruction decoding (symbols/insn.c, libzydis 4.0): the memory accesses of
 * one x86-64 instruction, for witch (sampled watchpoints and --witch-exact).
 */

struct user_regs_struct;

enum sym_access_flags {
	SYM_ACCESS_READ = 1 << 0,
	SYM_ACCESS_WRITE = 1 << 1, /* READ | WRITE: read-modify-write (add, xchg, lock ops) */
};

/* One memory access: size bytes at addr (the full operand, e.g. 32 for a
 * ymm store; see sym_watch_range() for what a watchpoint can cover). */
struct sym_access {
	uint64_t addr;
	unsigned size;
	unsigned flags; /* enum sym_access_flags */
};

enum sym_insn_flags {
	/* An access whose addresses cannot be computed from the registers or
	 * watched: gather/scatter (VSIB), MPX (MIB), an operand of unknown size,
	 * more than SYM_INSN_MAX_ACCESS accesses. Such accesses are left out of
	 * access[] (the others of the instruction are there). Accesses wider than 8 bytes
	 * (vector, cmpxchg16b, fxsave) are NOT unwatchable: a watchpoint covers
	 * their first aligned bytes (sym_watch_range()), and by the paper's
	 * section 6.4 rule the verdict on those bytes stands for the whole
	 * instruction. */
	SYM_INSN_UNWATCHABLE = 1 << 0,
	/* A string instruction (movs, stos, lods, cmps, scas, ins, outs), with or
	 * without rep: access[] holds the accesses of the iteration about to run
	 * (at rsi/rdi). A rep prefix with rcx == 0 runs no iteration: naccess 0. */
	SYM_INSN_STRING = 1 << 1,
	/* The accessed values are floats (scalar or packed SSE/AVX/AVX-512
	 * single precision, x87 m32fp) or doubles (m64fp, packed/scalar
	 * double). Set from the memory operand's element type. */
	SYM_INSN_FP32 = 1 << 2,
	SYM_INSN_FP64 = 1 << 3,
	/* An implicit stack access: push, pop, call, ret, enter, leave, pushf,
	 * popf. The stack slot is one of access[] (with an explicit operand of
	 * push/pop/call too, e.g. push (%rax) reads (%rax) and writes the slot). */
	SYM_INSN_STACK = 1 << 4,
};

#define SYM_INSN_MAX_ACCESS 4

/* General registers as bits, in the encoding's order: bit 0 rax, 1 rcx,
 * 2 rdx, 3 rbx, 4 rsp, 5 rbp, 6 rsi, 7 rdi, 8-15 r8-r15 (any part of one:
 * eax and al are rax). */
#define SYM_GPR_RSP (1u << 4)

struct sym_insn {
	unsigned length; /* bytes of the instruction */
	unsigned flags;  /* enum sym_insn_flags */
	/* the registers it writes (explicit or implied: rsp of push, rdx of
	 * mul) and those its memory operands are addressed with; set for
	 * every instruction, also those that access nothing */
	uint32_t gpr_written, gpr_address;
	unsigned naccess; /* entries used in access[], pure reads first
			   * (program order: movs reads [rsi], then writes [rdi]) */
	struct sym_access access[SYM_INSN_MAX_ACCESS];
};

/*
 * Decodes the instruction at code[0..len) (len up to 15 is enough) about to
 * execute with regs (its address is regs->rip) and computes each memory
 * access: base + index * scale + disp, RIP-relative to the next instruction,
 * fs:/gs: from regs->fs_base/gs_base, 32-bit address size wrapped, the
 * implicit stack slot of push/pop/call/ret (rsp - 8 for a push/call, rsp
 * for pop/ret), string operations at rsi/rdi, read-modify-write operands
 * (xchg, cmpxchg, xadd, lock add, add to memory...) as one READ | WRITE
 * access, masked AVX-512 stores as if every element were written, an AVX-512
 * broadcast as one element read. lea, nop with a memory operand, prefetch*,
 * clflush/clflushopt/clwb/cldemote access nothing (they move no value);
 * clzero writes its 64-byte line; bt/bts/btr/btc with a register bit
 * offset access the word holding that bit, however far. fxsave/fxrstor access bytes 0-463 of
 * their area; xsave* write those and the header fields they set (8 bytes at
 * +512, 16 for xsavec/xsaves: two accesses), xrstor* read 576 bytes; the
 * extended state after byte 576, whose size depends on XCR0 and the
 * compaction, is left out.
 * No allocation; thread-safe (one decoder, initialised once).
 * Returns 0, or -EINVAL when the bytes are not a valid x86-64 instruction
 * (or are cut short by len).
 */
int sym_insn_decode(const uint8_t *code, size_t len, const struct user_regs_struct *regs,
		    struct sym_insn *out);

/*
 * Runs the instruction at code[0..len) (at regs->rip) on regs as far as
 * the general registers go, to know the registers some instructions ahead
 * without running them: add, sub, inc, dec, mov and lea with 64- or 32-bit
 * results of known registers and immediates are computed; any other
 * instruction's written registers become unknown (bits in *unknown, in
 * the order of SYM_GPR_RSP's comment; a known result clears its bit).
 * regs->rip moves past it (branches are the caller's business). Memory is
 * not read. Returns 0, or -EINVAL for bytes that are not an instruction.
 */
int sym_insn_advance(const uint8_t *code, size_t len, struct user_regs_struct *regs,
		     uint32_t *unknown);

/*
 * For a watchpoint: the x86 debug-register range (*waddr, *wlen) covering
 * the first bytes of the access [addr, addr + size): *waddr = addr, *wlen
 * the largest of {1, 2, 4, 8} that is <= size and divides addr (a debug
 * register's address must be aligned to its length). E.g. (0x1003, 8) ->
 * (0x1003, 1); (0x1004, 6) -> (0x1004, 4); (0x1000, 32) -> (0x1000, 8).
 * Returns the number of bytes covered (*wlen), or 0 when size is 0.
 */
unsigned sym_watch_range(uint64_t addr, unsigned size, uint64_t *waddr, unsigned *wlen);

/*
 * Static paths through code (symbols/flow.c), for witch: where the next
 * access is, and how many instructions run between two accesses. code holds
 * the target's bytes [base, base + len); the walk follows direct jumps, a
 * forward conditional branch both ways and a backward one taken only (a
 * loop's back edge: its exit is rarely what runs next), steps over direct
 * calls, and ends a path at returns, indirect branches and system calls.
 * regs only feed the decoder (addresses are not used). An instruction
 * counts as an access when one of its accesses has a flag in mask
 * (SYM_ACCESS_READ, SYM_ACCESS_WRITE). At most look (<= SYM_FLOW_LOOK)
 * instructions are decoded. No allocation.
 */
#define SYM_FLOW_LOOK 64

struct sym_code {
	const uint8_t *bytes;
	size_t len;
	uint64_t base;
};

/* Instructions from the one at `at` to the nearest access after it (1: the
 * next instruction), 0 when none is found. */
unsigned sym_flow_distance(const struct sym_code *code, uint64_t at, unsigned mask, unsigned look,
			   const struct user_regs_struct *regs);

/* The shortest path from the instruction at `at` (not an access itself) to
 * the nearest access: path[0] = at, ..., path[n - 1] = the access; returns
 * n, 0 when none is found or the path is longer than max. */
unsigned sym_flow_path(const struct sym_code *code, uint64_t at, unsigned mask, unsigned look,
		       const struct user_regs_struct *regs, uint64_t *path, unsigned max);

/* The gap before the access at `at`: the instructions since the previous
 * access on the shortest loop through it (the loop's length when it is its
 * only access); *cyclic = true. Off a loop the gap before cannot be seen
 * and the gap after it stands in (the distance to the next access);
 * *cyclic = false. 0 when neither is found within look. */
unsigned sym_flow_gap(const struct sym_code *code, uint64_t at, unsigned mask, unsigned look,
		      const struct user_regs_struct *regs, bool *cyclic);
/* Whether [a, a + alen) and [b, b + blen) share a byte. */
bool sym_flow_overlaps(uint64_t a, unsigned alen, uint64_t b, unsigned blen);
/* Whether the bytes c[0..len) begin with a call instruction (its implicit
 * access is the pushed return address). */
bool sym_flow_is_call(const uint8_t *c, unsigned len);
/* The access at the end of path[0..n) (sym_flow_path()) when its address
 * can be computed at path[0] with regs: no call on the way, the way's
 * adds, leas and movs run on a copy of regs, no access of the way to the
 * same bytes. *insn gets it decoded, *pc its address. */
bool sym_flow_predict(const struct sym_code *code, const uint64_t *path, unsigned n,
		      const struct user_regs_struct *regs, uint64_t *pc, struct sym_insn *insn);
/* ---- lookup: from FILE:LINE or FUNCTION to code (symbols/lookup.c) ---- */

enum sym_spec_kind { SYM_SPEC_LINE,
		     SYM_SPEC_FUNCTION };

/* A place in the program as a user names it. */
struct sym_spec {
	enum sym_spec_kind kind;
	char *file;     /* SYM_SPEC_LINE: a path suffix ("main.c", "src/main.c") */
	unsigned line;  /* SYM_SPEC_LINE: > 0 */
	char *function; /* SYM_SPEC_FUNCTION: "f", "ns::f", "ns::f(int)" or a symbol */
};

/*
 * Parses "FILE:LINE" (the last ':' followed by digits, or a FILE with a '.'
 * or '/') or "FUNCTION" (anything else, "ns::f" included). Returns 0, -ENOMEM,
 * or -EINVAL with one line in why ("'main.c:': expected FILE:LINE with a line
 * number"). Release with sym_spec_release() (also after a failure).
 */
int sym_spec_parse(const char *text, struct sym_spec *out, char *why, size_t whylen);
void sym_spec_release(struct sym_spec *s);
/* Whether path ends with suffix at a '/' boundary ("main.c" matches
 * "/src/main.c", not "/src/domain.c"). */
bool sym_path_has_suffix(const char *path, const char *suffix);

struct sym_code_range {
	uint64_t start, end; /* process addresses, [start, end) */
};

/*
 * Where a spec is in one process, in process addresses. sites are where a
 * breakpoint counts one visit:
 *  - FILE:LINE: the line's first statement row (DWARF is_stmt) in each
 *    function instance holding code of the line, i.e. one site per
 *    out-of-line function and per inlined copy (gdb's rule for
 *    `break FILE:LINE`): a statement the scheduler split into several
 *    address ranges still counts once per execution. A line without code
 *    moves to the next line with code in the matching files (line says
 *    which). ranges are every address range of the line (all rows).
 *  - FUNCTION: the entry of every out-of-line copy (symbol tables; GCC's
 *    full clones f.constprop.N / f.isra.N included, parts f.part.N and
 *    f.cold excluded) and of every inlined copy (DWARF entry_pc): a visit is
 *    a call. ranges are the copies' code.
 * Images are every file-backed executable mapping of the space (the main
 * executable, its libraries, what dlopen loaded so far), the vdso excepted;
 * a spec found in the main executable is looked up there only (a library
 * function of the same name is not the one meant, and the libraries' DWARF
 * need not be loaded).
 */
struct sym_lookup {
	uint64_t *sites; /* sorted, distinct */
	size_t nsites, capsites;
	struct sym_code_range *ranges; /* sorted, merged */
	size_t nranges, capranges;
	unsigned line;          /* SYM_SPEC_LINE: the line used (>= spec line), 0: no code */
	const char *file;       /* the matched source path (DWARF's), NULL when none */
	const char *other_file; /* a second, different matched path (ambiguous suffix) */
	unsigned nimages;       /* images where sites were found */
};

/* Fills *out (release with sym_lookup_release()). Finding nothing is not an
 * error: nsites == 0. Returns 0, -EINVAL for an incomplete spec, -ENOMEM.
 * The strings in *out live as long as sp. Loads the DWARF of every image
 * of the space: call when the mappings change, not per event. */
int sym_space_lookup(struct sym_space *sp, const struct sym_spec *spec, struct sym_lookup *out);
void sym_lookup_release(struct sym_lookup *l);
/* Whether addr is in l's ranges (binary search). */
bool sym_lookup_contains(const struct sym_lookup *l, uint64_t addr);

/* Bumped each time the space's mappings change (exec, dlopen, munmap):
 * callers redo lookups only when it moved. */
uint64_t sym_space_generation(const struct sym_space *sp);

/* An allocated ELF section of an image mapped by a space. */
struct sym_section {
	const char *image;   /* path; lives as long as the space */
	uint64_t image_id;   /* the same for the same loaded image */
	uint64_t addr;       /* process address of the section */
	uint64_t vaddr;      /* its ELF address */
	const uint8_t *data; /* the section's bytes in the file (initial values) */
	size_t size;
};

/* Every SHT_PROGBITS section called name in the images of sp (from the
 * section headers of the files on disk: stripped binaries keep them).
 * Up to max are written to out; *count says how many exist. Returns 0 or
 * -ENOMEM. */
int sym_space_sections(struct sym_space *sp, const char *name, struct sym_section *out,
		       unsigned max, unsigned *count);

/*
 * Coz compatibility: the sites of programs built with Coz's coz.h
 * (COZ_PROGRESS, COZ_PROGRESS_NAMED, COZ_BEGIN, COZ_END). Each keeps two
 * statics, `_initialized` and `_counter` (a coz_counter_t *, whose first 8
 * bytes are the count), and counts only when `_counter` is set, which
 * libcoz does when preloaded. Found through DWARF (the two variables of
 * one macro's block; the name and type from the call site's DWARF values
 * at -O1 and up, else from the code that stores `_counter`; failing both,
 * named file:line as COZ_PROGRESS is). Needs -g. Images without the string
 * "_coz_get_counter" are skipped cheaply.
 */
struct sym_coz_site {
	const char *image; /* lives as long as the space */
	uint64_t image_id;
	uint64_t counter_addr;     /* process address of `_counter` */
	uint64_t initialized_addr; /* of `_initialized` (1 byte) */
	unsigned kind;             /* 1 throughput, 2 begin, 3 end */
	char name[128];
	/* Free bytes of the image's address space where counters can go:
	 * after its bss (16-byte aligned) to the end of that page. */
	uint64_t scratch_start, scratch_end;
};

/* *out (freed by the caller with free()) gets *count sites; *images is
 * the number of images that include coz.h (sites or not: none found means
 * no usable DWARF, e.g. no -g); *skipped the sites found whose name or type
 * could not be told (Clang at -O1 and up keeps no DWARF for them and may
 * load the name far from the call). 0 or -ENOMEM. */
int sym_space_coz_sites(struct sym_space *sp, struct sym_coz_site **out, size_t *count,
			unsigned *images, unsigned *skipped);

/* ---- an ELF file by path, for annotate (disasm.c) ---- */

/* An ELF file opened by its path (not through a process). Opaque. */
struct sym_file;

/* Opens path; free with sym_file_free(). -ENOENT, -EACCES, -ENOEXEC (not
 * an ELF file) or another -errno. */
int sym_file_open(const char *path, struct sym_file **out);
void sym_file_free(struct sym_file *f);
/* The file's GNU build-id in lowercase hex, NULL when it has none. */
const char *sym_file_build_id(const struct sym_file *f);
/* What ELF vaddr means in the source (as sym_space_resolve() would say
 * while recording); out's strings live as long as f. 0 or -errno. */
int sym_file_resolve(struct sym_file *f, uint64_t vaddr, struct sym_loc *out);
/* The function symbol (.symtab, else .dynsym) containing ELF vaddr: its
 * first address and size. 0, or -ENOENT when no sized symbol holds it. */
int sym_file_function_at(struct sym_file *f, uint64_t vaddr, uint64_t *start, uint64_t *size);
/* Copies len file bytes at ELF vaddr; false when they are not all in the
 * file. */
bool sym_file_read(const struct sym_file *f, uint64_t vaddr, void *buf, size_t len);
/* Zydis's Intel-syntax text of the x86-64 instruction at code[0..len),
 * which runs at addr (branch targets are absolute), into text. Returns its
 * length in bytes, or 0 with "(bad)" for bytes that are not one. */
unsigned sym_disasm(const uint8_t *code, size_t len, uint64_t addr, char *text, size_t textlen);

#endif
