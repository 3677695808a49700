/*
 * Static paths through code (symbols/flow.c): distances to the next access
 * and the gap before an access, on snippets assembled with GNU as (the
 * listing below is objdump -d of them, at offsets from BASE).
 */
#include "symbols/symbols.h"

#include <string.h>
#include <sys/user.h>

#include "tests/unit/tap.h"

#define BASE 0x401000ULL
#define R SYM_ACCESS_READ
#define W SYM_ACCESS_WRITE

/* clang-format off */
static const uint8_t text[] = {
	/* one:  0: mov %edx,(%rax)   2: add $4,%rax   6: add $1,%edx
	 *       9: cmp %rdi,%rax     c: jne 0 */
	0x89, 0x10, 0x48, 0x83, 0xc0, 0x04, 0x83, 0xc2, 0x01, 0x48, 0x39, 0xf8, 0x75, 0xf2,
	/* two:  e: mov %edx,(%rax)  10: mov %edx,(%rsi)  12: add $4,%rax
	 *      16: add $4,%rsi      1a: dec %ecx         1c: jne e */
	0x89, 0x10, 0x89, 0x16, 0x48, 0x83, 0xc0, 0x04, 0x48, 0x83, 0xc6, 0x04, 0xff, 0xc9,
	0x75, 0xf0,
	/* line: 1e: mov %eax,(%rdi)  20: nop  21: nop  22: mov %eax,8(%rdi)  25: ret */
	0x89, 0x07, 0x90, 0x90, 0x89, 0x47, 0x08, 0xc3,
	/* iff: 26: mov %edx,(%rax)  28: test %edx,%edx  2a: je 35
	 *      2c, 2f, 32: add $1,%edx  35: add $4,%rax  39: cmp %rdi,%rax  3c: jne 26 */
	0x89, 0x10, 0x85, 0xd2, 0x74, 0x09, 0x83, 0xc2, 0x01, 0x83, 0xc2, 0x01, 0x83, 0xc2,
	0x01, 0x48, 0x83, 0xc0, 0x04, 0x48, 0x39, 0xf8, 0x75, 0xe8,
	/* reps: 3e: rep stos %al,(%rdi) */
	0xf3, 0xaa,
	/* call: 40: call 49  45: dec %ecx  47: jne 40   f: 49: ret */
	0xe8, 0x04, 0x00, 0x00, 0x00, 0xff, 0xc9, 0x75, 0xf7, 0xc3,
};
/* clang-format on */

static struct user_regs_struct regs;
static const struct sym_code code = { text, sizeof(text), BASE };

static unsigned gap(unsigned off, unsigned mask, bool want_cyclic)
{
	bool cyclic = !want_cyclic;
	unsigned g = sym_flow_gap(&code, BASE + off, mask, SYM_FLOW_LOOK, &regs, &cyclic);
	CHECK(cyclic == want_cyclic);
	return g;
}

static void test_distance(void)
{
	/* from the adds of "one" round the loop to its store */
	CHECK_EQ_INT(sym_flow_distance(&code, BASE + 0x2, W, SYM_FLOW_LOOK, &regs), 4);
	CHECK_EQ_INT(sym_flow_distance(&code, BASE + 0xc, W, SYM_FLOW_LOOK, &regs), 1);
	/* the store itself does not count: the next one after it */
	CHECK_EQ_INT(sym_flow_distance(&code, BASE + 0x0, W, SYM_FLOW_LOOK, &regs), 5);
	/* no load anywhere in "one": the walk goes round and finds none */
	CHECK_EQ_INT(sym_flow_distance(&code, BASE + 0x2, R, SYM_FLOW_LOOK, &regs), 0);
	/* a short look sees nothing */
	CHECK_EQ_INT(sym_flow_distance(&code, BASE + 0x2, W, 3, &regs), 0);
	/* the shorter way through a forward branch */
	CHECK_EQ_INT(sym_flow_distance(&code, BASE + 0x28, W, SYM_FLOW_LOOK, &regs), 5);
	/* a ret ends the path */
	CHECK_EQ_INT(sym_flow_distance(&code, BASE + 0x22, W, SYM_FLOW_LOOK, &regs), 0);
	/* the call's push is a store; the call is stepped over */
	CHECK_EQ_INT(sym_flow_distance(&code, BASE + 0x45, W, SYM_FLOW_LOOK, &regs), 2);
	/* outside the window */
	CHECK_EQ_INT(sym_flow_distance(&code, BASE - 1, W, SYM_FLOW_LOOK, &regs), 0);
	CHECK_EQ_INT(sym_flow_distance(&code, BASE + sizeof(text), W, SYM_FLOW_LOOK, &regs), 0);
}

static void test_path(void)
{
	uint64_t path[8];

	/* from the first add of "one" round its back edge to the store */
	CHECK_EQ_INT(sym_flow_path(&code, BASE + 0x2, W, SYM_FLOW_LOOK, &regs, path, 8), 5);
	CHECK_EQ_INT(path[0], BASE + 0x2);
	CHECK_EQ_INT(path[1], BASE + 0x6);
	CHECK_EQ_INT(path[2], BASE + 0x9);
	CHECK_EQ_INT(path[3], BASE + 0xc);
	CHECK_EQ_INT(path[4], BASE + 0x0);
	/* through the forward branch, the shorter way */
	CHECK_EQ_INT(sym_flow_path(&code, BASE + 0x28, W, SYM_FLOW_LOOK, &regs, path, 8), 6);
	CHECK_EQ_INT(path[1], BASE + 0x2a);
	CHECK_EQ_INT(path[2], BASE + 0x35);
	CHECK_EQ_INT(path[5], BASE + 0x26);
	/* longer than max, none at all, from an access */
	CHECK_EQ_INT(sym_flow_path(&code, BASE + 0x2, W, SYM_FLOW_LOOK, &regs, path, 4), 0);
	CHECK_EQ_INT(sym_flow_path(&code, BASE + 0x2, R, SYM_FLOW_LOOK, &regs, path, 8), 0);
	CHECK_EQ_INT(sym_flow_path(&code, BASE + 0x0, W, SYM_FLOW_LOOK, &regs, path, 8), 0);
}

/* The helpers witch's sampling uses (moved from builtin/record-witch.c). */
static void test_is_call_overlaps(void)
{
	static const uint8_t rel[] = { 0xe8, 0x04, 0x00, 0x00, 0x00 };
	static const uint8_t ind[] = { 0xff, 0xd0 };           /* call *%rax */
	static const uint8_t rex_ind[] = { 0x41, 0xff, 0xd3 }; /* call *%r11 */
	static const uint8_t jmp_ind[] = { 0xff, 0xe0 };       /* jmp *%rax */
	static const uint8_t prefixes[] = { 0x66, 0x67 };

	CHECK(sym_flow_is_call(rel, sizeof(rel)));
	CHECK(sym_flow_is_call(ind, sizeof(ind)));
	CHECK(sym_flow_is_call(rex_ind, sizeof(rex_ind)));
	CHECK(!sym_flow_is_call(jmp_ind, sizeof(jmp_ind)));
	CHECK(!sym_flow_is_call(prefixes, sizeof(prefixes)));
	CHECK(!sym_flow_is_call(ind, 1));
	CHECK(sym_flow_overlaps(0x1000, 4, 0x1003, 4));
	CHECK(!sym_flow_overlaps(0x1000, 4, 0x1004, 4));
	CHECK(!sym_flow_overlaps(0x1004, 4, 0x1000, 4));
	CHECK(sym_flow_overlaps(0x1000, 8, 0x1002, 1));
}

static void test_predict(void)
{
	struct user_regs_struct r = regs;
	struct sym_insn insn;
	uint64_t path[8], pc = 0;
	unsigned n;

	/* "one" from its first add: the store after the back edge is at rax
	 * + 4 (the add on the way runs on a copy of the registers) */
	r.rax = 0x10000;
	r.rdi = 0x20000;
	n = sym_flow_path(&code, BASE + 0x2, W, SYM_FLOW_LOOK, &r, path, 8);
	CHECK_EQ_INT(n, 5);
	CHECK(sym_flow_predict(&code, path, n, &r, &pc, &insn));
	CHECK_EQ_INT(pc, BASE + 0x0);
	CHECK_EQ_INT(insn.naccess, 1);
	CHECK_EQ_INT(insn.access[0].addr, 0x10004);
	CHECK_EQ_INT(r.rax, 0x10000); /* the caller's registers are left alone */
	/* a path of one instruction: nothing ahead to predict */
	CHECK(!sym_flow_predict(&code, path, 1, &r, &pc, &insn));
	/* "two": the way stores to (%rax); the access at its end, (%rsi),
	 * is predicted unless it touches the same bytes (that store would
	 * be the first trap) */
	path[0] = BASE + 0xe;
	path[1] = BASE + 0x10;
	r.rsi = 0x10010;
	CHECK(sym_flow_predict(&code, path, 2, &r, &pc, &insn));
	CHECK_EQ_INT(insn.access[0].addr, 0x10010);
	r.rsi = 0x10002;
	CHECK(!sym_flow_predict(&code, path, 2, &r, &pc, &insn));
	/* a call on the way: its push is an access the walk does not see */
	path[0] = BASE + 0x40;
	path[1] = BASE + 0x45;
	CHECK(!sym_flow_predict(&code, path, 2, &r, &pc, &insn));
}

static void test_gap(void)
{
	/* one store in a 5-instruction loop */
	CHECK_EQ_INT(gap(0x0, W, true), 5);
	/* two stores: one right after the other, then four instructions */
	CHECK_EQ_INT(gap(0xe, W, true), 5);
	CHECK_EQ_INT(gap(0x10, W, true), 1);
	/* loads only counted: no other on the loop, its length */
	CHECK_EQ_INT(gap(0xe, R, true), 6);
	/* the shortest loop through a forward branch */
	CHECK_EQ_INT(gap(0x26, W, true), 6);
	/* off a loop: the gap after stands in */
	CHECK_EQ_INT(gap(0x1e, W, false), 3);
	CHECK_EQ_INT(gap(0x22, W, false), 0);
	/* rep stos: every iteration is an access */
	CHECK_EQ_INT(gap(0x3e, W, true), 1);
	/* a call in a loop: its push, once a round */
	CHECK_EQ_INT(gap(0x40, W, true), 3);
	/* a too short look finds neither the loop nor the next store */
	bool cyclic = true;
	CHECK_EQ_INT(sym_flow_gap(&code, BASE + 0x0, W, 3, &regs, &cyclic), 0);
	CHECK(!cyclic);
}

int main(void)
{
	memset(&regs, 0, sizeof(regs));
	regs.rcx = 3;
	test_distance();
	test_path();
	test_is_call_overlaps();
	test_predict();
	test_gap();
	return tap_done();
}
