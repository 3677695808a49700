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
};

/* The address space of one process. Opaque. */
struct sym_space;

/* Creates the space of pid and reads its maps. Caller frees with
 * sym_space_free(). Returns 0 or -errno (-ESRCH when pid is gone). */
int sym_space_new(pid_t pid, struct sym_space **out);
void sym_space_free(struct sym_space *sp);
pid_t sym_space_pid(const struct sym_space *sp);
/* Re-reads /proc/PID/maps now. Lookups that miss do this on their own:
 * the first miss always, later ones at most every 10 ms, backing off to
 * once a second while refreshes keep missing (JIT or anonymous code). */
int sym_space_refresh(struct sym_space *sp);
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

/*
 * Unwinds a sample over its register + stack snapshot (libunwind with
 * accessors reading the snapshot for stack addresses and the image files for
 * code and unwind tables). pcs[0] = the sample ip, then return addresses,
 * innermost first. Returns the number of pcs (>= 1 when the sample has an ip).
 */
int sym_space_unwind_sample(struct sym_space *sp, const struct smp_sample *s,
			    uint64_t *pcs, unsigned max);

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

struct sym_insn {
	unsigned length;  /* bytes of the instruction */
	unsigned flags;   /* enum sym_insn_flags */
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
 * For a watchpoint: the x86 debug-register range (*waddr, *wlen) covering
 * the first bytes of the access [addr, addr + size): *waddr = addr, *wlen
 * the largest of {1, 2, 4, 8} that is <= size and divides addr (a debug
 * register's address must be aligned to its length). E.g. (0x1003, 8) ->
 * (0x1003, 1); (0x1004, 6) -> (0x1004, 4); (0x1000, 32) -> (0x1000, 8).
 * Returns the number of bytes covered (*wlen), or 0 when size is 0.
 */
unsigned sym_watch_range(uint64_t addr, unsigned size, uint64_t *waddr, unsigned *wlen);

#endif
