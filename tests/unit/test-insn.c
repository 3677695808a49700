/*
 * Memory accesses of x86-64 instructions (symbols/insn.c). The byte strings
 * were assembled with GNU as and checked with objdump -d; the AT&T text is
 * in the comment of each.
 */
#include "symbols/symbols.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/user.h>
#include <time.h>

#include "tests/unit/tap.h"

static struct user_regs_struct regs;
static struct sym_insn in;

#define BYTES(...) (const uint8_t[]){ __VA_ARGS__ }, sizeof((const uint8_t[]){ __VA_ARGS__ })

static int decode(const uint8_t *code, size_t len)
{
	return sym_insn_decode(code, len, &regs, &in);
}

/* Checks access i of the last decode; the line of the caller is reported. */
#define CHECK_ACCESS(i, a, s, f) \
	do { \
		CHECK((unsigned)(i) < in.naccess); \
		if ((unsigned)(i) < in.naccess) { \
			CHECK_EQ_INT(in.access[i].addr, (a)); \
			CHECK_EQ_INT(in.access[i].size, (s)); \
			CHECK_EQ_INT(in.access[i].flags, (f)); \
		} \
	} while (0)

#define R SYM_ACCESS_READ
#define W SYM_ACCESS_WRITE

static void reset_regs(void)
{
	memset(&regs, 0, sizeof(regs));
	regs.rax = 0x10000;
	regs.rbx = 0x20000;
	regs.rcx = 3;
	regs.rdx = 0x30000;
	regs.rsi = 0x40000;
	regs.rdi = 0x50000;
	regs.rbp = 0x60000;
	regs.rsp = 0x7ff000;
	regs.rip = 0x401000;
	regs.fs_base = 0x7f0000001000;
	regs.gs_base = 0x7f0000002000;
}

static void test_mov(void)
{
	/* mov (%rax),%bl / %bx / %ebx / %rbx */
	CHECK_EQ_INT(decode(BYTES(0x8a, 0x18)), 0);
	CHECK_EQ_INT(in.length, 2);
	CHECK_EQ_INT(in.naccess, 1);
	CHECK_EQ_INT(in.flags, 0);
	CHECK_ACCESS(0, 0x10000, 1, R);
	CHECK_EQ_INT(decode(BYTES(0x66, 0x8b, 0x18)), 0);
	CHECK_EQ_INT(in.length, 3);
	CHECK_ACCESS(0, 0x10000, 2, R);
	CHECK_EQ_INT(decode(BYTES(0x8b, 0x18)), 0);
	CHECK_ACCESS(0, 0x10000, 4, R);
	CHECK_EQ_INT(decode(BYTES(0x48, 0x8b, 0x18)), 0);
	CHECK_ACCESS(0, 0x10000, 8, R);

	/* mov %bl / %bx / %ebx / %rbx,(%rax) */
	CHECK_EQ_INT(decode(BYTES(0x88, 0x18)), 0);
	CHECK_EQ_INT(in.naccess, 1);
	CHECK_ACCESS(0, 0x10000, 1, W);
	CHECK_EQ_INT(decode(BYTES(0x66, 0x89, 0x18)), 0);
	CHECK_ACCESS(0, 0x10000, 2, W);
	CHECK_EQ_INT(decode(BYTES(0x89, 0x18)), 0);
	CHECK_ACCESS(0, 0x10000, 4, W);
	CHECK_EQ_INT(decode(BYTES(0x48, 0x89, 0x18)), 0);
	CHECK_ACCESS(0, 0x10000, 8, W);
	CHECK_EQ_INT(in.flags, 0);

	/* movl $0x5,(%rax) */
	CHECK_EQ_INT(decode(BYTES(0xc7, 0x00, 0x05, 0x00, 0x00, 0x00)), 0);
	CHECK_EQ_INT(in.length, 6);
	CHECK_ACCESS(0, 0x10000, 4, W);

	/* movb $0x1,0x1000 (absolute, no base) */
	CHECK_EQ_INT(decode(BYTES(0xc6, 0x04, 0x25, 0x00, 0x10, 0x00, 0x00, 0x01)), 0);
	CHECK_ACCESS(0, 0x1000, 1, W);

	/* mov 0x10(%rip),%rax: relative to the next instruction (7 bytes) */
	CHECK_EQ_INT(decode(BYTES(0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00)), 0);
	CHECK_EQ_INT(in.length, 7);
	CHECK_ACCESS(0, 0x401000 + 7 + 0x10, 8, R);

	/* mov %fs:0x28,%rax (the stack protector's canary) */
	CHECK_EQ_INT(decode(BYTES(0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00)), 0);
	CHECK_EQ_INT(in.length, 9);
	CHECK_ACCESS(0, 0x7f0000001000 + 0x28, 8, R);
	/* mov %gs:(%rbx),%eax */
	CHECK_EQ_INT(decode(BYTES(0x65, 0x8b, 0x03)), 0);
	CHECK_ACCESS(0, 0x7f0000002000 + 0x20000, 4, R);

	/* mov -0x10(%rbx,%rcx,4),%eax: SIB with a negative displacement */
	CHECK_EQ_INT(decode(BYTES(0x8b, 0x44, 0x8b, 0xf0)), 0);
	CHECK_ACCESS(0, 0x20000 + 3 * 4 - 0x10, 4, R);
	/* mov 0x7fff(%rax,%rbx,8),%cx */
	CHECK_EQ_INT(decode(BYTES(0x66, 0x8b, 0x8c, 0xd8, 0xff, 0x7f, 0x00, 0x00)), 0);
	CHECK_ACCESS(0, 0x10000 + 0x20000 * 8 + 0x7fff, 2, R);
	/* mov %rax,-0x8(%rbp): a local variable, not an implicit stack access */
	CHECK_EQ_INT(decode(BYTES(0x48, 0x89, 0x45, 0xf8)), 0);
	CHECK_ACCESS(0, 0x60000 - 8, 8, W);
	CHECK_EQ_INT(in.flags, 0);

	/* mov (%eax),%ebx and mov (%eax,%ecx,2),%ebx: 32-bit address size
	 * uses and wraps the low halves */
	regs.rax = 0xdead0000fffffff0ULL;
	regs.rcx = 0xffffffff00000010ULL;
	CHECK_EQ_INT(decode(BYTES(0x67, 0x8b, 0x18)), 0);
	CHECK_ACCESS(0, 0xfffffff0, 4, R);
	CHECK_EQ_INT(decode(BYTES(0x67, 0x8b, 0x1c, 0x48)), 0);
	CHECK_ACCESS(0, (0xfffffff0 + 0x20) & 0xffffffff, 4, R);
	reset_regs();

	/* bts %rax,(%rbx): a bit string, the qword holding bit rax */
	regs.rax = 130;
	CHECK_EQ_INT(decode(BYTES(0x48, 0x0f, 0xab, 0x03)), 0);
	CHECK_ACCESS(0, 0x20000 + 16, 8, R | W);
	regs.rax = (uint64_t)-1; /* bit -1: the qword before */
	CHECK_EQ_INT(decode(BYTES(0x48, 0x0f, 0xab, 0x03)), 0);
	CHECK_ACCESS(0, 0x20000 - 8, 8, R | W);
	/* bt %eax,(%rbx): dwords, the offset a signed 32-bit value */
	regs.rax = 0xffffffff00000040ULL;
	CHECK_EQ_INT(decode(BYTES(0x0f, 0xa3, 0x03)), 0);
	CHECK_ACCESS(0, 0x20000 + 8, 4, R);
	regs.rax = 0xffffffe0; /* -32 */
	CHECK_EQ_INT(decode(BYTES(0x0f, 0xa3, 0x03)), 0);
	CHECK_ACCESS(0, 0x20000 - 4, 4, R);
	/* btr %ax,(%rbx): words */
	regs.rax = 0x11;
	CHECK_EQ_INT(decode(BYTES(0x66, 0x0f, 0xb3, 0x03)), 0);
	CHECK_ACCESS(0, 0x20000 + 2, 2, R | W);
	/* btcl $0x46,(%rbx): an immediate stays in the operand */
	CHECK_EQ_INT(decode(BYTES(0x0f, 0xba, 0x3b, 0x46)), 0);
	CHECK_ACCESS(0, 0x20000, 4, R | W);
	reset_regs();
	/* cmovne (%rax),%rbx reads whether or not it moves */
	CHECK_EQ_INT(decode(BYTES(0x48, 0x0f, 0x45, 0x18)), 0);
	CHECK_ACCESS(0, 0x10000, 8, R);
	/* xlat: [rbx + al] */
	regs.rax = 0x1234;
	CHECK_EQ_INT(decode(BYTES(0xd7)), 0);
	CHECK_ACCESS(0, 0x20000 + 0x34, 1, R);
	reset_regs();
}

static void test_stack(void)
{
	/* push %rbp */
	CHECK_EQ_INT(decode(BYTES(0x55)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_STACK);
	CHECK_EQ_INT(in.naccess, 1);
	CHECK_ACCESS(0, 0x7ff000 - 8, 8, W);
	/* push %ax */
	CHECK_EQ_INT(decode(BYTES(0x66, 0x50)), 0);
	CHECK_ACCESS(0, 0x7ff000 - 2, 2, W);
	/* pop %rbp */
	CHECK_EQ_INT(decode(BYTES(0x5d)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_STACK);
	CHECK_ACCESS(0, 0x7ff000, 8, R);
	/* push (%rax): reads (%rax), writes the slot */
	CHECK_EQ_INT(decode(BYTES(0xff, 0x30)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_STACK);
	CHECK_EQ_INT(in.naccess, 2);
	CHECK_ACCESS(0, 0x10000, 8, R);
	CHECK_ACCESS(1, 0x7ff000 - 8, 8, W);
	/* pop (%rax): reads the slot first, then writes (%rax) */
	CHECK_EQ_INT(decode(BYTES(0x8f, 0x00)), 0);
	CHECK_EQ_INT(in.naccess, 2);
	CHECK_ACCESS(0, 0x7ff000, 8, R);
	CHECK_ACCESS(1, 0x10000, 8, W);
	/* pop 0x8(%rsp): the destination is computed with rsp incremented */
	CHECK_EQ_INT(decode(BYTES(0x8f, 0x44, 0x24, 0x08)), 0);
	CHECK_EQ_INT(in.naccess, 2);
	CHECK_ACCESS(0, 0x7ff000, 8, R);
	CHECK_ACCESS(1, 0x7ff000 + 8 + 8, 8, W);
	/* call *%rax: only the return address */
	CHECK_EQ_INT(decode(BYTES(0xff, 0xd0)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_STACK);
	CHECK_EQ_INT(in.naccess, 1);
	CHECK_ACCESS(0, 0x7ff000 - 8, 8, W);
	/* call *0x8(%rax): reads the target, writes the return address */
	CHECK_EQ_INT(decode(BYTES(0xff, 0x50, 0x08)), 0);
	CHECK_EQ_INT(in.naccess, 2);
	CHECK_ACCESS(0, 0x10008, 8, R);
	CHECK_ACCESS(1, 0x7ff000 - 8, 8, W);
	/* call rel32 */
	CHECK_EQ_INT(decode(BYTES(0xe8, 0x00, 0x00, 0x00, 0x00)), 0);
	CHECK_EQ_INT(in.length, 5);
	CHECK_ACCESS(0, 0x7ff000 - 8, 8, W);
	/* repz ret (old AMD advice): a ret, not a string op */
	CHECK_EQ_INT(decode(BYTES(0xf3, 0xc3)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_STACK);
	CHECK_EQ_INT(in.naccess, 1);
	CHECK_ACCESS(0, 0x7ff000, 8, R);
	/* ret; ret $0x10 */
	CHECK_EQ_INT(decode(BYTES(0xc3)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_STACK);
	CHECK_ACCESS(0, 0x7ff000, 8, R);
	CHECK_EQ_INT(decode(BYTES(0xc2, 0x10, 0x00)), 0);
	CHECK_ACCESS(0, 0x7ff000, 8, R);
	/* leave: reads [rbp] */
	CHECK_EQ_INT(decode(BYTES(0xc9)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_STACK);
	CHECK_ACCESS(0, 0x60000, 8, R);
	/* enter $0x10,$0: pushes rbp */
	CHECK_EQ_INT(decode(BYTES(0xc8, 0x10, 0x00, 0x00)), 0);
	CHECK_ACCESS(0, 0x7ff000 - 8, 8, W);
	/* pushfq; popfq */
	CHECK_EQ_INT(decode(BYTES(0x9c)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_STACK);
	CHECK_ACCESS(0, 0x7ff000 - 8, 8, W);
	CHECK_EQ_INT(decode(BYTES(0x9d)), 0);
	CHECK_ACCESS(0, 0x7ff000, 8, R);
	/* vmovaps %xmm0,0x10(%rsp): explicit rsp-based, not a stack op */
	CHECK_EQ_INT(decode(BYTES(0xc5, 0xf8, 0x29, 0x44, 0x24, 0x10)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_FP32);
	CHECK_ACCESS(0, 0x7ff010, 16, W);
}

static void test_string(void)
{
	/* rep movsb: this iteration reads [rsi], writes [rdi] */
	CHECK_EQ_INT(decode(BYTES(0xf3, 0xa4)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_STRING);
	CHECK_EQ_INT(in.naccess, 2);
	CHECK_ACCESS(0, 0x40000, 1, R);
	CHECK_ACCESS(1, 0x50000, 1, W);
	/* rep stosq */
	CHECK_EQ_INT(decode(BYTES(0xf3, 0x48, 0xab)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_STRING);
	CHECK_EQ_INT(in.naccess, 1);
	CHECK_ACCESS(0, 0x50000, 8, W);
	/* rep with rcx == 0 runs no iteration */
	regs.rcx = 0;
	CHECK_EQ_INT(decode(BYTES(0xf3, 0x48, 0xab)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_STRING);
	CHECK_EQ_INT(in.naccess, 0);
	/* ... but a string op without rep runs once */
	CHECK_EQ_INT(decode(BYTES(0xaa)), 0); /* stos %al,%es:(%rdi) */
	CHECK_EQ_INT(in.naccess, 1);
	CHECK_ACCESS(0, 0x50000, 1, W);
	reset_regs();
	/* movsq, lodsq, cmpsb, scasl */
	CHECK_EQ_INT(decode(BYTES(0x48, 0xa5)), 0);
	CHECK_EQ_INT(in.naccess, 2);
	CHECK_ACCESS(0, 0x40000, 8, R);
	CHECK_ACCESS(1, 0x50000, 8, W);
	CHECK_EQ_INT(decode(BYTES(0x48, 0xad)), 0);
	CHECK_EQ_INT(in.naccess, 1);
	CHECK_ACCESS(0, 0x40000, 8, R);
	CHECK_EQ_INT(decode(BYTES(0xa6)), 0);
	CHECK_EQ_INT(in.naccess, 2);
	CHECK(in.access[0].flags == R && in.access[1].flags == R);
	CHECK((in.access[0].addr == 0x40000 && in.access[1].addr == 0x50000) ||
	      (in.access[0].addr == 0x50000 && in.access[1].addr == 0x40000));
	CHECK_EQ_INT(decode(BYTES(0xaf)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_STRING);
	CHECK_ACCESS(0, 0x50000, 4, R);
}

static void test_atomic(void)
{
	/* lock cmpxchg %rcx,(%rdx) */
	CHECK_EQ_INT(decode(BYTES(0xf0, 0x48, 0x0f, 0xb1, 0x0a)), 0);
	CHECK_EQ_INT(in.naccess, 1);
	CHECK_ACCESS(0, 0x30000, 8, R | W);
	/* cmpxchg16b (%rdx): 16 bytes, watchable through its first 8 */
	CHECK_EQ_INT(decode(BYTES(0x48, 0x0f, 0xc7, 0x0a)), 0);
	CHECK_ACCESS(0, 0x30000, 16, R | W);
	CHECK_EQ_INT(in.flags, 0);
	/* xchg %rax,(%rdx); xchg %bl,(%rdx) */
	CHECK_EQ_INT(decode(BYTES(0x48, 0x87, 0x02)), 0);
	CHECK_ACCESS(0, 0x30000, 8, R | W);
	CHECK_EQ_INT(decode(BYTES(0x86, 0x1a)), 0);
	CHECK_ACCESS(0, 0x30000, 1, R | W);
	/* lock xadd %eax,(%rdx); add %eax,(%rdx); lock incl (%rdx) */
	CHECK_EQ_INT(decode(BYTES(0xf0, 0x0f, 0xc1, 0x02)), 0);
	CHECK_ACCESS(0, 0x30000, 4, R | W);
	CHECK_EQ_INT(decode(BYTES(0x01, 0x02)), 0);
	CHECK_ACCESS(0, 0x30000, 4, R | W);
	CHECK_EQ_INT(decode(BYTES(0xf0, 0xff, 0x02)), 0);
	CHECK_ACCESS(0, 0x30000, 4, R | W);
}

static void test_vector(void)
{
	/* movss (%rax),%xmm0 */
	CHECK_EQ_INT(decode(BYTES(0xf3, 0x0f, 0x10, 0x00)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_FP32);
	CHECK_ACCESS(0, 0x10000, 4, R);
	/* movsd %xmm0,(%rax) (the SSE2 one, not the string op) */
	CHECK_EQ_INT(decode(BYTES(0xf2, 0x0f, 0x11, 0x00)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_FP64);
	CHECK_ACCESS(0, 0x10000, 8, W);
	/* movaps (%rax),%xmm1 */
	CHECK_EQ_INT(decode(BYTES(0x0f, 0x28, 0x08)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_FP32);
	CHECK_ACCESS(0, 0x10000, 16, R);
	/* vmovupd %ymm0,(%rax) */
	CHECK_EQ_INT(decode(BYTES(0xc5, 0xfd, 0x11, 0x00)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_FP64);
	CHECK_ACCESS(0, 0x10000, 32, W);
	/* vmovups 0x40(%rax),%zmm1: EVEX disp8 * 64 */
	CHECK_EQ_INT(decode(BYTES(0x62, 0xf1, 0x7c, 0x48, 0x10, 0x48, 0x01)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_FP32);
	CHECK_ACCESS(0, 0x10040, 64, R);
	/* vaddps (%rax){1to16},%zmm1,%zmm2: a broadcast reads one float */
	CHECK_EQ_INT(decode(BYTES(0x62, 0xf1, 0x74, 0x58, 0x58, 0x10)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_FP32);
	CHECK_ACCESS(0, 0x10000, 4, R);
	/* vmovdqu32 %zmm0,(%rax){%k1}: masked, counted as a full write */
	CHECK_EQ_INT(decode(BYTES(0x62, 0xf1, 0x7e, 0x49, 0x7f, 0x00)), 0);
	CHECK_EQ_INT(in.flags, 0);
	CHECK_ACCESS(0, 0x10000, 64, W);
	/* vpmaskmovd %xmm0,%xmm1,(%rax) */
	CHECK_EQ_INT(decode(BYTES(0xc4, 0xe2, 0x71, 0x8e, 0x00)), 0);
	CHECK_ACCESS(0, 0x10000, 16, W);
	/* movdqa (%rax),%xmm0 and movq (%rax),%xmm0: integers */
	CHECK_EQ_INT(decode(BYTES(0x66, 0x0f, 0x6f, 0x00)), 0);
	CHECK_EQ_INT(in.flags, 0);
	CHECK_ACCESS(0, 0x10000, 16, R);
	CHECK_EQ_INT(decode(BYTES(0xf3, 0x0f, 0x7e, 0x00)), 0);
	CHECK_EQ_INT(in.flags, 0);
	CHECK_ACCESS(0, 0x10000, 8, R);
	/* cvtsi2sdl (%rax),%xmm0 reads an int; addsd (%rax),%xmm0 a double */
	CHECK_EQ_INT(decode(BYTES(0xf2, 0x0f, 0x2a, 0x00)), 0);
	CHECK_EQ_INT(in.flags, 0);
	CHECK_ACCESS(0, 0x10000, 4, R);
	CHECK_EQ_INT(decode(BYTES(0xf2, 0x0f, 0x58, 0x00)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_FP64);
	CHECK_ACCESS(0, 0x10000, 8, R);
	/* x87: flds, fldl, fstps are floats; fldt's 80 bits are bytes */
	CHECK_EQ_INT(decode(BYTES(0xd9, 0x00)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_FP32);
	CHECK_ACCESS(0, 0x10000, 4, R);
	CHECK_EQ_INT(decode(BYTES(0xdd, 0x00)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_FP64);
	CHECK_ACCESS(0, 0x10000, 8, R);
	CHECK_EQ_INT(decode(BYTES(0xdb, 0x28)), 0);
	CHECK_EQ_INT(in.flags, 0);
	CHECK_ACCESS(0, 0x10000, 10, R);
	CHECK_EQ_INT(decode(BYTES(0xd9, 0x18)), 0);
	CHECK_EQ_INT(in.flags, SYM_INSN_FP32);
	CHECK_ACCESS(0, 0x10000, 4, W);
	/* fxsave (%rax): bytes 0-463 of the area (464-511 are software's) */
	CHECK_EQ_INT(decode(BYTES(0x0f, 0xae, 0x00)), 0);
	CHECK_EQ_INT(in.naccess, 1);
	CHECK_ACCESS(0, 0x10000, 464, W);
	/* fxrstor (%rsp) */
	CHECK_EQ_INT(decode(BYTES(0x0f, 0xae, 0x0c, 0x24)), 0);
	CHECK_ACCESS(0, 0x7ff000, 464, R);
	/* xsavec (%rsp): the legacy area, then XSTATE_BV and XCOMP_BV; not
	 * the reserved header bytes glibc clears before it */
	CHECK_EQ_INT(decode(BYTES(0x0f, 0xc7, 0x24, 0x24)), 0);
	CHECK_EQ_INT(in.naccess, 2);
	CHECK_ACCESS(0, 0x7ff000, 464, W);
	CHECK_ACCESS(1, 0x7ff000 + 512, 16, W);
	/* xsave (%rsp): XSTATE_BV only */
	CHECK_EQ_INT(decode(BYTES(0x0f, 0xae, 0x24, 0x24)), 0);
	CHECK_EQ_INT(in.naccess, 2);
	CHECK_ACCESS(0, 0x7ff000, 464, W);
	CHECK_ACCESS(1, 0x7ff000 + 512, 8, W);
	/* xrstor (%rsp): reads the legacy area and the whole header */
	CHECK_EQ_INT(decode(BYTES(0x0f, 0xae, 0x2c, 0x24)), 0);
	CHECK_EQ_INT(in.naccess, 1);
	CHECK_ACCESS(0, 0x7ff000, 576, R);
	/* clzero: the 64-byte line of rax */
	regs.rax = 0x10047;
	CHECK_EQ_INT(decode(BYTES(0x0f, 0x01, 0xfc)), 0);
	CHECK_ACCESS(0, 0x10040, 64, W);
	reset_regs();
	/* movdir64b (%rax),%rcx: 64 bytes from (%rax) to (%rcx) */
	CHECK_EQ_INT(decode(BYTES(0x66, 0x0f, 0x38, 0xf8, 0x08)), 0);
	CHECK_EQ_INT(in.naccess, 2);
	CHECK_ACCESS(0, 0x10000, 64, R);
	CHECK_ACCESS(1, 3, 64, W);
	/* maskmovdqu %xmm1,%xmm0: an implicit 16-byte store at rdi */
	CHECK_EQ_INT(decode(BYTES(0x66, 0x0f, 0xf7, 0xc1)), 0);
	CHECK_ACCESS(0, 0x50000, 16, W);

	/* vpgatherdd %xmm2,(%rax,%xmm1,4),%xmm0: one address per element */
	CHECK_EQ_INT(decode(BYTES(0xc4, 0xe2, 0x69, 0x90, 0x04, 0x88)), 0);
	CHECK_EQ_INT(in.length, 6);
	CHECK_EQ_INT(in.flags & SYM_INSN_UNWATCHABLE, SYM_INSN_UNWATCHABLE);
	CHECK_EQ_INT(in.naccess, 0);
	/* vscatterdps %zmm0,(%rax,%zmm1,4){%k1} */
	CHECK_EQ_INT(decode(BYTES(0x62, 0xf2, 0x7d, 0x49, 0xa2, 0x04, 0x88)), 0);
	CHECK_EQ_INT(in.flags & SYM_INSN_UNWATCHABLE, SYM_INSN_UNWATCHABLE);
	CHECK_EQ_INT(in.naccess, 0);
}

static void test_no_access(void)
{
	/* lea 0x8(%rax,%rbx,2),%rcx */
	CHECK_EQ_INT(decode(BYTES(0x48, 0x8d, 0x4c, 0x58, 0x08)), 0);
	CHECK_EQ_INT(in.length, 5);
	CHECK_EQ_INT(in.naccess, 0);
	CHECK_EQ_INT(in.flags, 0);
	/* nopl (%rax,%rax,1); nopw (%rax,%rax,1) */
	CHECK_EQ_INT(decode(BYTES(0x0f, 0x1f, 0x04, 0x00)), 0);
	CHECK_EQ_INT(in.length, 4);
	CHECK_EQ_INT(in.naccess, 0);
	CHECK_EQ_INT(decode(BYTES(0x66, 0x0f, 0x1f, 0x04, 0x00)), 0);
	CHECK_EQ_INT(in.naccess, 0);
	/* prefetcht0, prefetchnta, prefetchw, clflush, clflushopt */
	CHECK_EQ_INT(decode(BYTES(0x0f, 0x18, 0x08)), 0);
	CHECK_EQ_INT(in.naccess, 0);
	CHECK_EQ_INT(decode(BYTES(0x0f, 0x18, 0x00)), 0);
	CHECK_EQ_INT(in.naccess, 0);
	CHECK_EQ_INT(decode(BYTES(0x0f, 0x0d, 0x08)), 0);
	CHECK_EQ_INT(in.naccess, 0);
	CHECK_EQ_INT(decode(BYTES(0x0f, 0xae, 0x38)), 0);
	CHECK_EQ_INT(in.naccess, 0);
	CHECK_EQ_INT(decode(BYTES(0x66, 0x0f, 0xae, 0x38)), 0);
	CHECK_EQ_INT(in.naccess, 0);
	/* endbr64 */
	CHECK_EQ_INT(decode(BYTES(0xf3, 0x0f, 0x1e, 0xfa)), 0);
	CHECK_EQ_INT(in.length, 4);
	CHECK_EQ_INT(in.naccess, 0);
	/* register-only: add %rbx,%rax; ud2; syscall */
	CHECK_EQ_INT(decode(BYTES(0x48, 0x01, 0xd8)), 0);
	CHECK_EQ_INT(in.naccess, 0);
	CHECK_EQ_INT(decode(BYTES(0x0f, 0x0b)), 0);
	CHECK_EQ_INT(in.naccess, 0);
	CHECK_EQ_INT(decode(BYTES(0x0f, 0x05)), 0);
	CHECK_EQ_INT(in.naccess, 0);
}

static void test_undecodable(void)
{
	static const uint8_t too_long[17] = { 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
					      0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x90 };

	/* push %es does not exist in 64-bit mode */
	CHECK_EQ_INT(decode(BYTES(0x06)), -EINVAL);
	CHECK_EQ_INT(in.length, 0);
	CHECK_EQ_INT(in.naccess, 0);
	/* ff /7 is undefined */
	CHECK_EQ_INT(decode(BYTES(0xff, 0xff)), -EINVAL);
	/* cut short: mov (%rax),%rbx without its ModRM byte */
	CHECK_EQ_INT(decode(BYTES(0x48, 0x8b)), -EINVAL);
	CHECK_EQ_INT(sym_insn_decode((const uint8_t *)"\x90", 0, &regs, &in), -EINVAL);
	CHECK_EQ_INT(sym_insn_decode(NULL, 4, &regs, &in), -EINVAL);
	/* more than 15 bytes */
	CHECK_EQ_INT(decode(too_long, sizeof(too_long)), -EINVAL);
	/* A valid instruction followed by garbage decodes the first only */
	CHECK_EQ_INT(decode(BYTES(0x55, 0x06, 0xff)), 0);
	CHECK_EQ_INT(in.length, 1);
}

static void test_watch_range(void)
{
	uint64_t a;
	unsigned l;

	CHECK_EQ_INT(sym_watch_range(0x1000, 8, &a, &l), 8);
	CHECK_EQ_INT(a, 0x1000);
	CHECK_EQ_INT(l, 8);
	CHECK_EQ_INT(sym_watch_range(0x1000, 32, &a, &l), 8);
	CHECK_EQ_INT(a, 0x1000);
	CHECK_EQ_INT(sym_watch_range(0x1000, 512, &a, &l), 8);
	CHECK_EQ_INT(sym_watch_range(0x1003, 8, &a, &l), 1);
	CHECK_EQ_INT(a, 0x1003);
	CHECK_EQ_INT(l, 1);
	CHECK_EQ_INT(sym_watch_range(0x1004, 8, &a, &l), 4);
	CHECK_EQ_INT(a, 0x1004);
	CHECK_EQ_INT(sym_watch_range(0x1004, 6, &a, &l), 4);
	CHECK_EQ_INT(sym_watch_range(0x1002, 6, &a, &l), 2);
	CHECK_EQ_INT(sym_watch_range(0x1000, 7, &a, &l), 4);
	CHECK_EQ_INT(sym_watch_range(0x1000, 3, &a, &l), 2);
	CHECK_EQ_INT(sym_watch_range(0x1000, 10, &a, &l), 8);
	CHECK_EQ_INT(sym_watch_range(0x1008, 1, &a, &l), 1);
	CHECK_EQ_INT(sym_watch_range(0x1006, 16, &a, &l), 2);
	CHECK_EQ_INT(a, 0x1006);
	CHECK_EQ_INT(l, 2);
	CHECK_EQ_INT(sym_watch_range(0x1000, 0, &a, &l), 0);
	CHECK_EQ_INT(l, 0);
	CHECK_EQ_INT(sym_watch_range(UINT64_MAX - 7, 8, &a, &l), 8);
	/* Every answer, for every alignment and size up to 64: a debug
	 * register's rules hold and the range stays inside the access. */
	for (uint64_t base = 0x2000; base < 0x2010; base++) {
		for (unsigned size = 1; size <= 64; size++) {
			unsigned got = sym_watch_range(base, size, &a, &l);

			CHECK(got == l && (l == 1 || l == 2 || l == 4 || l == 8));
			CHECK(a == base && a % l == 0 && l <= size);
			/* the longest: twice as long would break a rule */
			CHECK(l == 8 || 2 * l > size || a % (2 * l) != 0);
		}
	}
}

/* Random bytes and registers: never a crash or a read past len (the
 * sanitizer build checks), and every answer keeps the documented shape. */
static void test_random_bytes(void)
{
	uint64_t state = 0x9e3779b97f4a7c15ULL;
	unsigned decoded = 0, with_access = 0;

	for (unsigned i = 0; i < 200000; i++) {
		uint8_t buf[15];
		size_t len;
		int err;

		for (unsigned j = 0; j < sizeof(buf); j++) {
			state ^= state << 13, state ^= state >> 7, state ^= state << 17;
			buf[j] = (uint8_t)state;
		}
		len = state % 16;
		regs.rax = state, regs.rsp = state >> 3, regs.rsi = ~state, regs.rcx = state & 3;
		/* a copy of exactly len bytes, so ASan sees any read past it */
		uint8_t *code = malloc(len ? len : 1);

		memcpy(code, buf, len);
		err = sym_insn_decode(code, len, &regs, &in);
		free(code);
		CHECK(err == 0 || err == -EINVAL);
		if (err)
			continue;
		decoded++;
		with_access += in.naccess > 0;
		CHECK(in.length >= 1 && in.length <= len && in.length <= 15);
		CHECK(in.naccess <= SYM_INSN_MAX_ACCESS);
		CHECK((in.flags & ~(unsigned)(SYM_INSN_UNWATCHABLE | SYM_INSN_STRING | SYM_INSN_FP32 |
					      SYM_INSN_FP64 | SYM_INSN_STACK)) == 0);
		for (unsigned k = 0; k < in.naccess; k++) {
			CHECK(in.access[k].size >= 1 && in.access[k].size <= 4096);
			CHECK(in.access[k].flags && !(in.access[k].flags & ~(unsigned)(R | W)));
		}
	}
	printf("# random bytes: %u of 200000 decoded, %u with memory accesses\n", decoded,
	       with_access);
	CHECK(decoded > 10000 && with_access > 1000);
	reset_regs();
}

/* How long one decode takes (thread CPU time, so a loaded machine does
 * not inflate it), printed, not asserted. */
static void bench(void)
{
	static const uint8_t code[] = { 0x8b, 0x44, 0x8b, 0xf0 }; /* mov -0x10(%rbx,%rcx,4),%eax */
	struct timespec t0, t1;
	unsigned n = 200000, ok = 0;
	double ns;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	for (unsigned i = 0; i < n; i++) {
		regs.rcx = i;
		ok += sym_insn_decode(code, sizeof(code), &regs, &in) == 0;
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
	ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n;
	CHECK_EQ_INT(ok, n);
	printf("# sym_insn_decode: %.0f ns per decode (%u decodes of a SIB load)\n", ns, n);
	reset_regs();
}

/* The registers an instruction writes and those it addresses memory with
 * (bits in the encoding's order: rax 0, rcx 1, rdx 2, rbx 3, rsp 4, rbp 5,
 * rsi 6, rdi 7, r8 8, ...). */
static void test_gprs(void)
{
	/* mov %edx,(%rax) */
	CHECK_EQ_INT(decode(BYTES(0x89, 0x10)), 0);
	CHECK_EQ_INT(in.gpr_written, 0);
	CHECK_EQ_INT(in.gpr_address, 1u << 0);
	/* add $4,%rax */
	CHECK_EQ_INT(decode(BYTES(0x48, 0x83, 0xc0, 0x04)), 0);
	CHECK_EQ_INT(in.gpr_written, 1u << 0);
	CHECK_EQ_INT(in.gpr_address, 0);
	/* push %rbx: rsp, implied */
	CHECK_EQ_INT(decode(BYTES(0x53)), 0);
	CHECK_EQ_INT(in.gpr_written, SYM_GPR_RSP);
	CHECK_EQ_INT(in.gpr_address, SYM_GPR_RSP);
	/* imul %r9: rdx:rax, implied */
	CHECK_EQ_INT(decode(BYTES(0x49, 0xf7, 0xe9)), 0);
	CHECK_EQ_INT(in.gpr_written, (1u << 0) | (1u << 2));
	/* mov 0x8(%rsi,%rcx,4),%r8d */
	CHECK_EQ_INT(decode(BYTES(0x44, 0x8b, 0x44, 0x8e, 0x08)), 0);
	CHECK_EQ_INT(in.gpr_written, 1u << 8);
	CHECK_EQ_INT(in.gpr_address, (1u << 6) | (1u << 1));
	/* xlat reads [rbx + al]; bt %rcx,(%rdx) the word rcx's bit is in */
	CHECK_EQ_INT(decode(BYTES(0xd7)), 0);
	CHECK_EQ_INT(in.gpr_address, (1u << 3) | (1u << 0));
	CHECK_EQ_INT(decode(BYTES(0x48, 0x0f, 0xa3, 0x0a)), 0);
	CHECK_EQ_INT(in.gpr_address, (1u << 2) | (1u << 1));
	/* lea 0x8(%rdi),%rsi: no access, still its registers */
	CHECK_EQ_INT(decode(BYTES(0x48, 0x8d, 0x77, 0x08)), 0);
	CHECK_EQ_INT(in.naccess, 0);
	CHECK_EQ_INT(in.gpr_written, 1u << 6);
	CHECK_EQ_INT(in.gpr_address, 1u << 7);
}

/* Registers some instructions ahead, without running them. */
static void test_advance(void)
{
	uint32_t unknown = 0;

	reset_regs();
	/* add $4,%rax */
	CHECK_EQ_INT(sym_insn_advance(BYTES(0x48, 0x83, 0xc0, 0x04), &regs, &unknown), 0);
	CHECK_EQ_INT(regs.rax, 0x10004);
	CHECK_EQ_INT(regs.rip, 0x401004);
	CHECK_EQ_INT(unknown, 0);
	/* add $1,%edx: a 32-bit result clears the upper half */
	regs.rdx = 0xffffffff00000005ULL;
	CHECK_EQ_INT(sym_insn_advance(BYTES(0x83, 0xc2, 0x01), &regs, &unknown), 0);
	CHECK_EQ_INT(regs.rdx, 6);
	/* lea 0x8(%rdi),%rsi */
	CHECK_EQ_INT(sym_insn_advance(BYTES(0x48, 0x8d, 0x77, 0x08), &regs, &unknown), 0);
	CHECK_EQ_INT(regs.rsi, 0x50008);
	/* sub $0x10,%rsp */
	CHECK_EQ_INT(sym_insn_advance(BYTES(0x48, 0x83, 0xec, 0x10), &regs, &unknown), 0);
	CHECK_EQ_INT(regs.rsp, 0x7feff0);
	/* mov %edx,(%rax): memory only, nothing changes but rip */
	uint64_t rip = regs.rip;
	CHECK_EQ_INT(sym_insn_advance(BYTES(0x89, 0x10), &regs, &unknown), 0);
	CHECK_EQ_INT(regs.rip, rip + 2);
	CHECK_EQ_INT(unknown, 0);
	/* imul %r9: rdx:rax unknown */
	CHECK_EQ_INT(sym_insn_advance(BYTES(0x49, 0xf7, 0xe9), &regs, &unknown), 0);
	CHECK_EQ_INT(unknown, (1u << 0) | (1u << 2));
	/* add %rcx,%rax with rax unknown stays unknown */
	CHECK_EQ_INT(sym_insn_advance(BYTES(0x48, 0x01, 0xc8), &regs, &unknown), 0);
	CHECK_EQ_INT(unknown & 1u, 1u);
	/* mov $5,%ecx: known again */
	unknown |= 1u << 1;
	CHECK_EQ_INT(sym_insn_advance(BYTES(0xb9, 0x05, 0x00, 0x00, 0x00), &regs, &unknown), 0);
	CHECK_EQ_INT(regs.rcx, 5);
	CHECK_EQ_INT(unknown & (1u << 1), 0);
	/* add %al,%bl: a byte result is not computed */
	CHECK_EQ_INT(sym_insn_advance(BYTES(0x00, 0xc3), &regs, &unknown), 0);
	CHECK_EQ_INT(unknown & (1u << 3), 1u << 3);
	/* add $-8,%rax: the immediate sign-extended */
	reset_regs();
	unknown = 0;
	CHECK_EQ_INT(sym_insn_advance(BYTES(0x48, 0x83, 0xc0, 0xf8), &regs, &unknown), 0);
	CHECK_EQ_INT(regs.rax, 0x10000 - 8);
	/* lea 0x10(%rip),%rcx: from the next instruction (rip 0x401004) */
	CHECK_EQ_INT(sym_insn_advance(BYTES(0x48, 0x8d, 0x0d, 0x10, 0x00, 0x00, 0x00), &regs, &unknown),
		     0);
	CHECK_EQ_INT(regs.rcx, 0x40100b + 0x10);
	/* lea 0x8(%edi),%rax: a 32-bit address wraps */
	regs.rdi = 0xffffffffULL;
	CHECK_EQ_INT(sym_insn_advance(BYTES(0x67, 0x48, 0x8d, 0x47, 0x08), &regs, &unknown), 0);
	CHECK_EQ_INT(regs.rax, 7);
	CHECK_EQ_INT(sym_insn_advance(BYTES(0x0f, 0xff), &regs, &unknown), -EINVAL);
	reset_regs();
}

int main(void)
{
	reset_regs();
	test_gprs();
	test_advance();
	test_mov();
	test_stack();
	test_string();
	test_atomic();
	test_vector();
	test_no_access();
	test_undecodable();
	test_watch_range();
	test_random_bytes();
	bench();
	return tap_done();
}
