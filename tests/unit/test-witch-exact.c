/*
 * Witch exact mode (experiments/witch-exact.c) fed synthetic access streams
 * whose answers are computed by hand. A small simulated memory per process
 * supplies the before/after values as a single-stepping supervisor would.
 * Contexts are source lines of the paper's listings where there is one.
 */
#include "experiments/experiments.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/unit/tap.h"

#define BASE 0x7f0000000000ULL
#define MEM_SIZE (1u << 20)
#define NPROC 2

static uint8_t mem[NPROC][MEM_SIZE];
static struct exp_wexact *w;

static pid_t pid_of(int proc)
{
	return 100 + 100 * proc;
}

static uint8_t *at(int proc, uint64_t addr)
{
	if (addr < BASE || addr - BASE >= MEM_SIZE) {
		fprintf(stderr, "test bug: address %#llx outside the simulated memory\n",
			(unsigned long long)addr);
		abort();
	}
	return &mem[proc][addr - BASE];
}

/* A store of size bytes of val by ctx: before is what memory held. */
static int store_p(int proc, uint64_t ctx, uint64_t addr, unsigned size, const void *val,
		   unsigned flags)
{
	uint8_t before[EXP_WEXACT_MAX_SIZE];
	struct exp_wexact_access a = {
		.ctx = ctx,
		.addr = addr,
		.size = size,
		.flags = EXP_WEXACT_WRITE | flags,
		.before = before,
		.after = val,
	};

	memcpy(before, at(proc, addr), size);
	memcpy(at(proc, addr), val, size);
	return exp_wexact_access(w, pid_of(proc), &a);
}

static int load_p(int proc, uint64_t ctx, uint64_t addr, unsigned size, unsigned flags)
{
	struct exp_wexact_access a = {
		.ctx = ctx,
		.addr = addr,
		.size = size,
		.flags = EXP_WEXACT_READ | flags,
		.before = at(proc, addr),
	};

	return exp_wexact_access(w, pid_of(proc), &a);
}

static int store32(uint64_t ctx, uint64_t addr, uint32_t v)
{
	return store_p(0, ctx, addr, 4, &v, 0);
}

static int load32(uint64_t ctx, uint64_t addr)
{
	return load_p(0, ctx, addr, 4, 0);
}

static int stored(uint64_t ctx, uint64_t addr, double v)
{
	return store_p(0, ctx, addr, 8, &v, EXP_WEXACT_FP64);
}

static int storef(uint64_t ctx, uint64_t addr, float v)
{
	return store_p(0, ctx, addr, 4, &v, EXP_WEXACT_FP32);
}

static void fresh(double precision)
{
	exp_wexact_free(w);
	memset(mem, 0, sizeof(mem));
	CHECK_EQ_INT(exp_wexact_new(precision, &w), 0);
}

static struct exp_wexact_total total(enum exp_wexact_kind k)
{
	struct exp_wexact_total t;

	exp_wexact_total(w, k, &t);
	return t;
}

/* The pair (watch, trap) of analysis k: waste and use, or -1 -1 when absent. */
static struct exp_wexact_pair pair(enum exp_wexact_kind k, uint64_t watch, uint64_t trap)
{
	struct exp_wexact_pair *v, r = { watch, trap, (uint64_t)-1, (uint64_t)-1 };
	size_t n;

	CHECK_EQ_INT(exp_wexact_pairs(w, k, &v, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (v[i].watch_ctx == watch && v[i].trap_ctx == trap)
			r = v[i];
	free(v);
	return r;
}

static size_t npairs(enum exp_wexact_kind k)
{
	struct exp_wexact_pair *v;
	size_t n;

	CHECK_EQ_INT(exp_wexact_pairs(w, k, &v, &n), 0);
	free(v);
	return n;
}

#define CHECK_PAIR(k, watch, trap, waste_, use_) \
	do { \
		struct exp_wexact_pair _p = pair(k, watch, trap); \
		CHECK_EQ_INT(_p.waste, waste_); \
		CHECK_EQ_INT(_p.use, use_); \
	} while (0)

#define CHECK_TOTAL(k, waste_, use_) \
	do { \
		struct exp_wexact_total _t = total(k); \
		CHECK_EQ_INT(_t.waste, waste_); \
		CHECK_EQ_INT(_t.use, use_); \
	} while (0)

#define CHECK_FRACTION(k, expect) \
	do { \
		struct exp_wexact_total _t = total(k); \
		double _f = exp_wexact_fraction(&_t); \
		CHECK(_f > (expect)-1e-9 && _f < (expect) + 1e-9); \
	} while (0)

#define DEAD EXP_WEXACT_DEAD_STORE
#define SSTORE EXP_WEXACT_SILENT_STORE
#define SLOAD EXP_WEXACT_SILENT_LOAD

/* Listing 2: an array zeroed (line 2), then rewritten (line 5), then read
 * (ctx 9). Every zeroing store is dead; the rewrite is used. */
static void test_listing2(void)
{
	const unsigned n = 1000;
	uint64_t a = BASE + 0x100;

	fresh(EXP_WEXACT_PRECISION);
	for (unsigned i = 1; i <= n; i++)
		CHECK_EQ_INT(store32(2, a + 4 * i, 0), 0);
	CHECK_TOTAL(DEAD, 0, 0); /* nothing judged yet */
	for (unsigned j = 1; j <= n; j++)
		CHECK_EQ_INT(store32(5, a + 4 * j, j), 0);
	CHECK_TOTAL(DEAD, 4 * n, 0);
	CHECK_PAIR(DEAD, 2, 5, 4 * n, 0);
	CHECK_EQ_INT(npairs(DEAD), 1);
	/* The rewrite changes every value: no silent store. */
	CHECK_TOTAL(SSTORE, 0, 4 * n);
	CHECK_PAIR(SSTORE, 2, 5, 0, 4 * n);
	for (unsigned j = 1; j <= n; j++)
		CHECK_EQ_INT(load32(9, a + 4 * j), 0);
	CHECK_TOTAL(DEAD, 4 * n, 4 * n);
	CHECK_PAIR(DEAD, 5, 9, 0, 4 * n);
	CHECK_FRACTION(DEAD, 0.5);
	/* First loads: no earlier load to compare with. */
	CHECK_TOTAL(SLOAD, 0, 0);

	struct exp_wexact_stats st;
	exp_wexact_stats(w, &st);
	CHECK_EQ_INT(st.accesses, 3 * n);
	CHECK_EQ_INT(st.bytes_stored, 8 * n);
	CHECK_EQ_INT(st.bytes_loaded, 4 * n);
	CHECK_EQ_INT(st.processes, 1);
}

/* Listing 3: array zeroed (line 3) and zeroed again (line 11), and *p (line
 * 7) killed by *q (line 8) through aliasing, in an outer loop of r rounds. */
static void test_listing3(void)
{
	const unsigned n = 500, r = 3;
	uint64_t array = BASE + 0x1000, p = BASE + 0x40, q = p;
	uint64_t dead_3_11 = 4ull * n * r, dead_11_3 = 4ull * n * (r - 1);
	uint64_t dead_7_8 = 4ull * n * r, dead_8_7 = 4ull * ((n - 1) * r + (r - 1));
	struct exp_wexact_pair *v;
	size_t np;

	fresh(EXP_WEXACT_PRECISION);
	for (unsigned it = 0; it < r; it++) {
		for (unsigned i = 1; i <= n; i++)
			CHECK_EQ_INT(store32(3, array + 4 * i, 0), 0);
		for (unsigned k = 1; k <= n; k++) {
			CHECK_EQ_INT(store32(7, p, 0), 0);
			CHECK_EQ_INT(store32(8, q, 0), 0);
		}
		for (unsigned j = 1; j <= n; j++)
			CHECK_EQ_INT(store32(11, array + 4 * j, 0), 0);
	}
	CHECK_PAIR(DEAD, 3, 11, dead_3_11, 0);
	CHECK_PAIR(DEAD, 11, 3, dead_11_3, 0);
	CHECK_PAIR(DEAD, 7, 8, dead_7_8, 0);
	CHECK_PAIR(DEAD, 8, 7, dead_8_7, 0);
	CHECK_EQ_INT(npairs(DEAD), 4);
	CHECK_TOTAL(DEAD, dead_3_11 + dead_11_3 + dead_7_8 + dead_8_7, 0);
	CHECK_FRACTION(DEAD, 1.0);
	/* Ranked by waste; the tie of <3,11> and <7,8> by context. */
	CHECK_EQ_INT(exp_wexact_pairs(w, DEAD, &v, &np), 0);
	CHECK_EQ_INT(np, 4);
	if (np == 4) {
		CHECK(v[0].watch_ctx == 3 && v[0].trap_ctx == 11);
		CHECK(v[1].watch_ctx == 7 && v[1].trap_ctx == 8);
		CHECK(v[2].watch_ctx == 8 && v[2].trap_ctx == 7);
		CHECK(v[3].watch_ctx == 11 && v[3].trap_ctx == 3);
	}
	free(v);
	/* Zero over zero, everywhere but the first store of each byte. */
	CHECK_PAIR(SSTORE, 3, 11, 4ull * n * r, 0);
	CHECK_PAIR(SSTORE, 11, 3, 4ull * n * (r - 1), 0);
	CHECK_PAIR(SSTORE, 7, 8, 4ull * n * r, 0);
	CHECK_PAIR(SSTORE, 8, 7, 4ull * (n * r - 1), 0);
	CHECK_FRACTION(SSTORE, 1.0);
	CHECK_TOTAL(SLOAD, 0, 0);
}

/* Figure 2: a[], b[] and x[] dead in a 3:2:1 ratio; the last round is read
 * (used) so the fraction is not all waste. */
static void test_ratio_321(void)
{
	const unsigned k = 200, rounds = 5;
	uint64_t a = BASE + 0x10000, b = BASE + 0x20000, x = BASE + 0x30000;
	uint64_t wa = 4ull * 3 * k * (rounds - 1), wb = 4ull * 2 * k * (rounds - 1),
		 wx = 4ull * k * (rounds - 1);
	struct exp_wexact_total t;

	fresh(EXP_WEXACT_PRECISION);
	for (unsigned it = 0; it < rounds; it++) {
		for (unsigned i = 0; i < 3 * k; i++)
			CHECK_EQ_INT(store32(15, a + 4 * i, it), 0);
		for (unsigned i = 0; i < 2 * k; i++)
			CHECK_EQ_INT(store32(16, b + 4 * i, it), 0);
		for (unsigned i = 0; i < k; i++)
			CHECK_EQ_INT(store32(17, x + 4 * i, it), 0);
	}
	for (unsigned i = 0; i < 3 * k; i++)
		CHECK_EQ_INT(load32(20, a + 4 * i), 0);
	for (unsigned i = 0; i < 2 * k; i++)
		CHECK_EQ_INT(load32(20, b + 4 * i), 0);
	for (unsigned i = 0; i < k; i++)
		CHECK_EQ_INT(load32(20, x + 4 * i), 0);
	CHECK_PAIR(DEAD, 15, 15, wa, 0);
	CHECK_PAIR(DEAD, 16, 16, wb, 0);
	CHECK_PAIR(DEAD, 17, 17, wx, 0);
	CHECK_EQ_INT(wa * 2, wb * 3);
	CHECK_EQ_INT(wb, wx * 2);
	CHECK_PAIR(DEAD, 15, 20, 0, 4 * 3 * k);
	t = total(DEAD);
	CHECK_EQ_INT(t.waste, wa + wb + wx);
	CHECK_EQ_INT(t.use, 4ull * 6 * k);
	CHECK_FRACTION(DEAD, (double)(rounds - 1) / rounds);
	/* The values change every round: no silent store. */
	CHECK_TOTAL(SSTORE, 0, 4ull * 6 * k * (rounds - 1));
}

/* A loop storing values already present: silent after the first round. */
static void test_silent_store(void)
{
	const unsigned n = 300, rounds = 4;
	uint64_t a = BASE + 0x4000;

	fresh(EXP_WEXACT_PRECISION);
	for (unsigned it = 0; it < rounds; it++)
		for (unsigned i = 0; i < n; i++)
			CHECK_EQ_INT(store32(50, a + 4 * i, 2 * i + 7), 0);
	CHECK_PAIR(SSTORE, 50, 50, 4ull * n * (rounds - 1), 0);
	CHECK_FRACTION(SSTORE, 1.0);
	for (unsigned i = 0; i < n; i++)
		CHECK_EQ_INT(store32(51, a + 4 * i, 2 * i + 8), 0);
	CHECK_PAIR(SSTORE, 50, 51, 0, 4 * n);
	CHECK_FRACTION(SSTORE, (double)(rounds - 1) / rounds);
	/* Judged per instruction (section 6.4): an 8-byte store that changes
	 * one byte out of 8 is not silent, all 8 bytes are use. */
	uint64_t v = 0x1122334455667788ULL;
	CHECK_EQ_INT(store_p(0, 52, a + 0x1000, 8, &v, 0), 0);
	v ^= 0xff;
	CHECK_EQ_INT(store_p(0, 53, a + 0x1000, 8, &v, 0), 0);
	CHECK_PAIR(SSTORE, 52, 53, 0, 8);
}

/* A linear search reloading the same values: silent loads. */
static void test_silent_load(void)
{
	const unsigned n = 400, rounds = 5;
	uint64_t a = BASE + 0x8000;

	fresh(EXP_WEXACT_PRECISION);
	for (unsigned i = 0; i < n; i++)
		CHECK_EQ_INT(store32(60, a + 4 * i, 1000 + i), 0);
	for (unsigned it = 0; it < rounds; it++)
		for (unsigned i = 0; i < n; i++) /* search for a key not there */
			CHECK_EQ_INT(load32(61, a + 4 * i), 0);
	CHECK_PAIR(SLOAD, 61, 61, 4ull * n * (rounds - 1), 0);
	CHECK_EQ_INT(npairs(SLOAD), 1);
	CHECK_FRACTION(SLOAD, 1.0);
	/* The stores were read: used, not dead. */
	CHECK_TOTAL(DEAD, 0, 4 * n);
	CHECK_PAIR(DEAD, 60, 61, 0, 4 * n);

	/* a[5] changes: its next load is use. a[7] is changed and restored
	 * between two loads: still silent (LoadCraft ignores the stores). */
	CHECK_EQ_INT(store32(62, a + 4 * 5, 77), 0);
	CHECK_EQ_INT(store32(62, a + 4 * 7, 77), 0);
	CHECK_EQ_INT(store32(63, a + 4 * 7, 1007), 0);
	for (unsigned i = 0; i < n; i++)
		CHECK_EQ_INT(load32(61, a + 4 * i), 0);
	CHECK_PAIR(SLOAD, 61, 61, 4ull * n * (rounds - 1) + 4 * (n - 1), 4);
	/* The restore (63) of a[7] is not silent: it changes 77 back. */
	CHECK_PAIR(SSTORE, 62, 63, 0, 4);
	/* The first store (62) to a[7] was killed by 63 before any load. */
	CHECK_PAIR(DEAD, 62, 63, 4, 0);
	CHECK_PAIR(DEAD, 62, 61, 0, 4);
	CHECK_PAIR(DEAD, 63, 61, 0, 4);
}

/* Floats and doubles within the precision are equal (1% as the paper). */
static void test_float(void)
{
	uint64_t d = BASE + 0x200, f = BASE + 0x300, pk = BASE + 0x400;
	float v4[4] = { 1.0f, -2.0f, 1000.0f, 0.0f };

	fresh(EXP_WEXACT_PRECISION);
	CHECK_EQ_INT(stored(70, d, 1.0), 0);
	CHECK_EQ_INT(stored(71, d, 1.005), 0); /* 0.5%: silent */
	CHECK_PAIR(SSTORE, 70, 71, 8, 0);
	CHECK_EQ_INT(stored(72, d, 1.02), 0); /* 1.5%: not */
	CHECK_PAIR(SSTORE, 71, 72, 0, 8);
	CHECK_EQ_INT(stored(73, d, -1.02), 0); /* sign */
	CHECK_PAIR(SSTORE, 72, 73, 0, 8);
	CHECK_EQ_INT(storef(74, f, 100.0f), 0);
	CHECK_EQ_INT(storef(75, f, 100.9f), 0); /* 0.9%: silent */
	CHECK_PAIR(SSTORE, 74, 75, 4, 0);
	CHECK_EQ_INT(storef(76, f, 102.0f), 0); /* 1.1%: not */
	CHECK_PAIR(SSTORE, 75, 76, 0, 4);
	/* Without the FP flag the same change is a changed integer. */
	double one = 1.0, near = 1.005;
	CHECK_EQ_INT(store_p(0, 77, d + 0x1000, 8, &one, 0), 0);
	CHECK_EQ_INT(store_p(0, 78, d + 0x1000, 8, &near, 0), 0);
	CHECK_PAIR(SSTORE, 77, 78, 0, 8);
	/* Packed: 4 floats, all within 1% -> the 16 bytes are silent; one
	 * element out -> all 16 are use. */
	CHECK_EQ_INT(store_p(0, 79, pk, 16, v4, EXP_WEXACT_FP32), 0);
	v4[0] = 1.001f, v4[1] = -2.01f, v4[2] = 1009.0f, v4[3] = 0.0f;
	CHECK_EQ_INT(store_p(0, 80, pk, 16, v4, EXP_WEXACT_FP32), 0);
	CHECK_PAIR(SSTORE, 79, 80, 16, 0);
	v4[3] = 1e-30f; /* from 0: any change of 0 is 100% */
	CHECK_EQ_INT(store_p(0, 81, pk, 16, v4, EXP_WEXACT_FP32), 0);
	CHECK_PAIR(SSTORE, 80, 81, 0, 16);
	/* Silent loads compare floats the same way: 2.0 then 2.01. */
	CHECK_EQ_INT(stored(82, d + 0x40, 2.0), 0);
	CHECK_EQ_INT(load_p(0, 83, d + 0x40, 8, EXP_WEXACT_FP64), 0);
	CHECK_EQ_INT(stored(82, d + 0x40, 2.01), 0);
	CHECK_EQ_INT(load_p(0, 84, d + 0x40, 8, EXP_WEXACT_FP64), 0);
	CHECK_PAIR(SLOAD, 83, 84, 8, 0);
	CHECK_EQ_INT(stored(82, d + 0x40, 2.1), 0);
	CHECK_EQ_INT(load_p(0, 85, d + 0x40, 8, EXP_WEXACT_FP64), 0);
	CHECK_PAIR(SLOAD, 84, 85, 0, 8);

	/* Precision 0: floats must be equal; -0.0 == 0.0 numerically. */
	fresh(0);
	CHECK_EQ_INT(stored(70, d, 1.0), 0);
	CHECK_EQ_INT(stored(71, d, 1.005), 0);
	CHECK_PAIR(SSTORE, 70, 71, 0, 8);
	CHECK_EQ_INT(stored(72, d, 1.005), 0);
	CHECK_PAIR(SSTORE, 71, 72, 8, 0);
	CHECK_EQ_INT(stored(73, d, -0.0), 0);
	CHECK_EQ_INT(stored(74, d, 0.0), 0);
	CHECK_PAIR(SSTORE, 73, 74, 8, 0);
	/* NaN: the same bits are the same value; another NaN is not. */
	uint64_t nan1 = 0x7ff8000000000001ULL, nan2 = 0x7ff8000000000002ULL;
	CHECK_EQ_INT(store_p(0, 75, d, 8, &nan1, EXP_WEXACT_FP64), 0);
	CHECK_EQ_INT(store_p(0, 76, d, 8, &nan1, EXP_WEXACT_FP64), 0);
	CHECK_PAIR(SSTORE, 75, 76, 8, 0);
	CHECK_EQ_INT(store_p(0, 77, d, 8, &nan2, EXP_WEXACT_FP64), 0);
	CHECK_PAIR(SSTORE, 76, 77, 0, 8);

	{
		struct exp_wexact *bad = (void *)1;

		CHECK_EQ_INT(exp_wexact_new(-0.5, &bad), -EINVAL);
		CHECK(bad == NULL);
		CHECK_EQ_INT(exp_wexact_new(0.0 / 0.0, &bad), -EINVAL);
	}
}

/* Accesses that overlap in part, and accesses across 64-byte lines. */
static void test_overlap(void)
{
	uint64_t x = BASE + 0x5000, edge = BASE + 0x503c; /* 4 bytes before a line end */
	uint64_t v8 = 0x0102030405060708ULL, z = 0;
	uint32_t v4 = 0xaabbccdd;
	uint8_t big[32];

	fresh(EXP_WEXACT_PRECISION);
	CHECK_EQ_INT(store_p(0, 80, x, 8, &v8, 0), 0);
	CHECK_EQ_INT(store_p(0, 81, x + 2, 4, &v4, 0), 0);
	CHECK_PAIR(DEAD, 80, 81, 4, 0); /* bytes 2..5 of the first store */
	CHECK_EQ_INT(load_p(0, 82, x, 2, 0), 0);
	CHECK_PAIR(DEAD, 80, 82, 0, 2);
	CHECK_EQ_INT(load_p(0, 83, x, 8, 0), 0);
	CHECK_PAIR(DEAD, 81, 83, 0, 4);
	CHECK_PAIR(DEAD, 80, 83, 0, 2); /* bytes 6, 7; 0, 1 were read by 82 */
	CHECK_TOTAL(DEAD, 4, 8);
	/* 83 reloads bytes 0, 1 that 82 loaded: silent for those only. */
	CHECK_PAIR(SLOAD, 82, 83, 2, 0);
	/* 81's 4 bytes had a store before (80), with other values: use. */
	CHECK_PAIR(SSTORE, 80, 81, 0, 4);
	/* A store rewriting its 4 middle bytes with the same value is silent
	 * though it changes nothing else. */
	CHECK_EQ_INT(store_p(0, 84, x + 2, 4, &v4, 0), 0);
	CHECK_PAIR(SSTORE, 81, 84, 4, 0);
	/* A store half over fresh memory: only bytes stored before are
	 * judged (and they decide the verdict). */
	CHECK_EQ_INT(store_p(0, 85, x + 4, 8, &v8, 0), 0);
	CHECK_PAIR(SSTORE, 84, 85, 0, 2);
	CHECK_PAIR(SSTORE, 80, 85, 0, 2);

	/* Across a line boundary: 8 bytes at ...3c, twice. */
	CHECK_EQ_INT(store_p(0, 86, edge, 8, &v8, 0), 0);
	CHECK_EQ_INT(store_p(0, 87, edge, 8, &z, 0), 0);
	CHECK_PAIR(DEAD, 86, 87, 8, 0);
	CHECK_EQ_INT(load_p(0, 88, edge + 4, 4, 0), 0);
	CHECK_PAIR(DEAD, 87, 88, 0, 4);
	/* 32 bytes over two lines, then 1 byte in each line. */
	memset(big, 0x5a, sizeof(big));
	CHECK_EQ_INT(store_p(0, 89, edge - 12, 32, big, 0), 0);
	CHECK_PAIR(DEAD, 87, 89, 4, 0); /* bytes edge..edge+3 not loaded */
	CHECK_EQ_INT(load_p(0, 90, edge - 12, 1, 0), 0);
	CHECK_EQ_INT(load_p(0, 90, edge + 19, 1, 0), 0);
	CHECK_PAIR(DEAD, 89, 90, 0, 2);
}

/* Read-modify-write accesses: the load, then the store. */
static void test_rmw(void)
{
	uint64_t x = BASE + 0x6000;
	uint32_t five = 5, six = 6;
	uint8_t before[4];
	struct exp_wexact_access a = { .ctx = 2, .addr = x, .size = 4, .flags = EXP_WEXACT_READ | EXP_WEXACT_WRITE, .before = before, .after = (const uint8_t *)&six };

	fresh(EXP_WEXACT_PRECISION);
	CHECK_EQ_INT(store32(1, x, 5), 0);
	memcpy(before, &five, 4); /* add $1,(x) */
	CHECK_EQ_INT(exp_wexact_access(w, pid_of(0), &a), 0);
	memcpy(at(0, x), &six, 4);
	CHECK_PAIR(DEAD, 1, 2, 0, 4);
	CHECK_PAIR(SSTORE, 1, 2, 0, 4);
	/* xchg with the value already there: a silent store; its load is not
	 * silent (the load before, in 2, read 5) */
	a.ctx = 3;
	memcpy(before, &six, 4);
	CHECK_EQ_INT(exp_wexact_access(w, pid_of(0), &a), 0);
	CHECK_PAIR(SSTORE, 2, 3, 4, 0);
	CHECK_PAIR(SLOAD, 2, 3, 0, 4); /* 2 read 5, 3 reads 6 */
	CHECK_PAIR(DEAD, 2, 3, 0, 4);
	CHECK_EQ_INT(store32(4, x, 9), 0);
	CHECK_PAIR(DEAD, 3, 4, 4, 0);
}

/* Two processes: the same address in each is a different location. */
static void test_two_processes(void)
{
	uint64_t x = BASE + 0x7000;
	uint32_t v = 1;
	struct exp_wexact_stats st;

	fresh(EXP_WEXACT_PRECISION);
	CHECK_EQ_INT(store_p(0, 90, x, 4, &v, 0), 0);
	CHECK_EQ_INT(store_p(1, 91, x, 4, &v, 0), 0);
	CHECK_TOTAL(DEAD, 0, 0);
	CHECK_TOTAL(SSTORE, 0, 0);
	CHECK_EQ_INT(load_p(1, 93, x, 4, 0), 0);
	CHECK_PAIR(DEAD, 91, 93, 0, 4);
	CHECK_EQ_INT(store_p(0, 92, x, 4, &v, 0), 0);
	CHECK_PAIR(DEAD, 90, 92, 4, 0);
	CHECK_PAIR(SSTORE, 90, 92, 4, 0);
	exp_wexact_stats(w, &st);
	CHECK_EQ_INT(st.processes, 2);
	CHECK(st.shadow_bytes > 0);
	/* Process 0 ends (or execs): its shadow goes, the totals stay. */
	exp_wexact_process_end(w, pid_of(0));
	exp_wexact_process_end(w, 12345); /* unknown: nothing */
	exp_wexact_stats(w, &st);
	CHECK_EQ_INT(st.processes, 1);
	CHECK_EQ_INT(store_p(0, 94, x, 4, &v, 0), 0);
	CHECK_TOTAL(DEAD, 4, 4);
	CHECK_TOTAL(SSTORE, 4, 0);
	/* process 1 kept its history */
	CHECK_EQ_INT(store_p(1, 95, x, 4, &v, 0), 0);
	CHECK_PAIR(SSTORE, 91, 95, 4, 0);
}

static void test_contexts_and_errors(void)
{
	uint64_t x = BASE + 0x9000;
	uint8_t buf[8] = { 0 };
	struct exp_wexact_access a = { .ctx = 0, .addr = x, .size = 4, .flags = EXP_WEXACT_WRITE, .before = buf, .after = buf };
	struct exp_wexact_stats st;

	fresh(EXP_WEXACT_PRECISION);
	/* Context 0 and UINT64_MAX are contexts like any other. */
	CHECK_EQ_INT(exp_wexact_access(w, 1, &a), 0);
	a.ctx = UINT64_MAX;
	CHECK_EQ_INT(exp_wexact_access(w, 1, &a), 0);
	a.ctx = 0;
	CHECK_EQ_INT(exp_wexact_access(w, 1, &a), 0);
	CHECK_PAIR(DEAD, 0, UINT64_MAX, 4, 0);
	CHECK_PAIR(DEAD, UINT64_MAX, 0, 4, 0);

	exp_wexact_stats(w, &st);
	a.size = 0;
	CHECK_EQ_INT(exp_wexact_access(w, 1, &a), -EINVAL);
	a.size = EXP_WEXACT_MAX_SIZE + 1;
	CHECK_EQ_INT(exp_wexact_access(w, 1, &a), -EINVAL);
	a.size = 4;
	a.flags = EXP_WEXACT_FP32;
	CHECK_EQ_INT(exp_wexact_access(w, 1, &a), -EINVAL);
	a.flags = EXP_WEXACT_WRITE;
	a.after = NULL;
	CHECK_EQ_INT(exp_wexact_access(w, 1, &a), -EINVAL);
	a.after = buf;
	a.before = NULL;
	CHECK_EQ_INT(exp_wexact_access(w, 1, &a), -EINVAL);
	a.before = buf;
	a.addr = UINT64_MAX - 2; /* wraps around */
	CHECK_EQ_INT(exp_wexact_access(w, 1, &a), -EINVAL);
	a.addr = UINT64_MAX - 3; /* the last 4 bytes: fine */
	CHECK_EQ_INT(exp_wexact_access(w, 1, &a), 0);
	CHECK_EQ_INT(exp_wexact_pairs(w, EXP_WEXACT_KINDS, &(struct exp_wexact_pair *){ NULL },
				      &(size_t){ 0 }),
		     -EINVAL);
	{
		struct exp_wexact_stats st2;

		exp_wexact_stats(w, &st2);
		CHECK_EQ_INT(st2.accesses, st.accesses + 1); /* rejected ones not counted */
	}
	/* An empty analysis: no pairs, fraction 0. */
	{
		struct exp_wexact_pair *v = (void *)1;
		size_t n = 7;

		CHECK_EQ_INT(exp_wexact_pairs(w, SLOAD, &v, &n), 0);
		CHECK(v == NULL && n == 0);
		CHECK_FRACTION(SLOAD, 0.0);
	}
	exp_wexact_free(NULL);
}

/* The shadow grows with the bytes touched, not with the accesses. */
static void test_memory_bound(void)
{
	const unsigned touched = 256 * 1024;
	struct exp_wexact_stats st1, st2;
	uint64_t v = 3;

	fresh(EXP_WEXACT_PRECISION);
	for (unsigned off = 0; off < touched; off += 8)
		CHECK_EQ_INT(store_p(0, 1, BASE + off, 8, &v, 0), 0);
	exp_wexact_stats(w, &st1);
	for (int round = 0; round < 3; round++)
		for (unsigned off = 0; off < touched; off += 8)
			CHECK_EQ_INT(load_p(0, 2, BASE + off, 8, 0), 0);
	exp_wexact_stats(w, &st2);
	printf("# shadow: %llu bytes for %u bytes touched\n", (unsigned long long)st2.shadow_bytes,
	       touched);
	CHECK(st1.shadow_bytes >= (uint64_t)touched);
	CHECK(st2.shadow_bytes == st1.shadow_bytes);
	CHECK(st2.shadow_bytes < 16ull * touched);
	exp_wexact_process_end(w, pid_of(0));
	exp_wexact_stats(w, &st2);
	CHECK_EQ_INT(st2.shadow_bytes, 0);
	CHECK_EQ_INT(st2.processes, 0);
}

/*
 * Random access streams over 256 bytes that cross five 64-byte lines,
 * against a plain per-byte model of the same rules: checks the lines, the
 * pair tables and their caches, not the rules themselves (the tests above
 * do). Few values and few contexts, so every verdict happens often.
 */
#define RM_SIZE 256
#define RM_CTXS 6

struct rm_byte {
	bool has_store, pending, has_load;
	unsigned store_ctx, load_ctx;
	uint8_t load_val;
};

static struct rm_byte rm[RM_SIZE];
static uint64_t rm_waste[EXP_WEXACT_KINDS][RM_CTXS][RM_CTXS], rm_use[EXP_WEXACT_KINDS][RM_CTXS][RM_CTXS];

static void rm_add(enum exp_wexact_kind k, unsigned watch, unsigned trap, bool waste)
{
	if (waste)
		rm_waste[k][watch][trap]++;
	else
		rm_use[k][watch][trap]++;
}

/* The verdict over the judged bytes, written the plain way. */
static bool rm_same(const uint8_t *prev, const uint8_t *now, const bool *judged, unsigned size,
		    bool fp64)
{
	for (unsigned e = 0; e < size; e += fp64 ? 8 : 1) {
		unsigned esize = fp64 ? 8 : 1, nj = 0, ndiff = 0;

		for (unsigned b = e; b < e + esize; b++) {
			nj += judged[b];
			ndiff += judged[b] && prev[b] != now[b];
		}
		if (!ndiff)
			continue;
		if (!fp64 || nj != 8)
			return false;
		double x, y;
		memcpy(&x, prev + e, 8);
		memcpy(&y, now + e, 8);
		if (isnan(x) || isnan(y) || !(fabs(x - y) <= 0.01 * fmax(fabs(x), fabs(y))))
			return false;
	}
	return true;
}

static void rm_access(unsigned ctx, unsigned off, unsigned size, bool rd, bool wr, bool fp64,
		      const uint8_t *before, const uint8_t *after)
{
	bool judged[64];
	uint8_t prev[64];
	unsigned nj = 0;
	bool waste;

	if (rd) {
		for (unsigned i = 0; i < size; i++) {
			struct rm_byte *m = &rm[off + i];

			if (m->pending)
				rm_add(EXP_WEXACT_DEAD_STORE, m->store_ctx, ctx, false);
			m->pending = false;
			judged[i] = m->has_load;
			prev[i] = m->load_val;
			nj += judged[i];
		}
		waste = nj && rm_same(prev, before, judged, size, fp64);
		for (unsigned i = 0; i < size; i++) {
			struct rm_byte *m = &rm[off + i];

			if (judged[i])
				rm_add(EXP_WEXACT_SILENT_LOAD, m->load_ctx, ctx, waste);
			m->has_load = true;
			m->load_ctx = ctx;
			m->load_val = before[i];
		}
	}
	if (wr) {
		nj = 0;
		for (unsigned i = 0; i < size; i++)
			nj += judged[i] = rm[off + i].has_store;
		waste = nj && rm_same(before, after, judged, size, fp64);
		for (unsigned i = 0; i < size; i++) {
			struct rm_byte *m = &rm[off + i];

			if (m->pending)
				rm_add(EXP_WEXACT_DEAD_STORE, m->store_ctx, ctx, true);
			if (judged[i])
				rm_add(EXP_WEXACT_SILENT_STORE, m->store_ctx, ctx, waste);
			m->pending = m->has_store = true;
			m->store_ctx = ctx;
		}
	}
}

static void test_random_model(void)
{
	static const double fvals[] = { 1.0, 1.005, 1.02, 2.0 };
	static const unsigned sizes[] = { 1, 2, 4, 8, 16, 32, 64 };
	uint64_t base = BASE + 0x1030, state = 0x243f6a8885a308d3ULL;
	unsigned mismatches = 0;

	fresh(EXP_WEXACT_PRECISION);
	memset(rm, 0, sizeof(rm));
	memset(rm_waste, 0, sizeof(rm_waste));
	memset(rm_use, 0, sizeof(rm_use));
	for (unsigned n = 0; n < 50000; n++) {
		uint8_t before[64], after[64];
		unsigned size, off, ctx, what;
		bool fp64;

		state ^= state << 13, state ^= state >> 7, state ^= state << 17;
		size = sizes[state % 7];
		fp64 = size >= 8 && (state >> 8) % 4 == 0;
		off = (unsigned)((state >> 16) % (RM_SIZE - size + 1));
		ctx = (unsigned)((state >> 32) % RM_CTXS);
		what = (unsigned)((state >> 40) % 5); /* 0, 1: load; 2, 3: store; 4: both */
		memcpy(before, at(0, base + off), size);
		for (unsigned i = 0; i < size; i++) {
			state ^= state << 13, state ^= state >> 7, state ^= state << 17;
			after[i] = (uint8_t)(state % 3);
		}
		if (fp64)
			for (unsigned e = 0; e < size; e += 8)
				memcpy(after + e, &fvals[(state >> (e % 60)) % 4], 8);

		struct exp_wexact_access a = {
			.ctx = ctx,
			.addr = base + off,
			.size = size,
			.flags = (what < 2 ? EXP_WEXACT_READ : what < 4 ? EXP_WEXACT_WRITE
									: EXP_WEXACT_READ | EXP_WEXACT_WRITE) |
				 (fp64 ? EXP_WEXACT_FP64 : 0),
			.before = before,
			.after = after,
		};
		CHECK_EQ_INT(exp_wexact_access(w, pid_of(0), &a), 0);
		rm_access(ctx, off, size, a.flags & EXP_WEXACT_READ, a.flags & EXP_WEXACT_WRITE, fp64,
			  before, after);
		if (a.flags & EXP_WEXACT_WRITE)
			memcpy(at(0, base + off), after, size);
	}
	for (int k = 0; k < EXP_WEXACT_KINDS; k++) {
		struct exp_wexact_pair *v;
		size_t np, expect_np = 0;
		uint64_t tw = 0, tu = 0;

		CHECK_EQ_INT(exp_wexact_pairs(w, k, &v, &np), 0);
		for (unsigned i = 0; i < RM_CTXS; i++)
			for (unsigned j = 0; j < RM_CTXS; j++) {
				expect_np += rm_waste[k][i][j] || rm_use[k][i][j];
				tw += rm_waste[k][i][j];
				tu += rm_use[k][i][j];
			}
		CHECK_EQ_INT(np, expect_np);
		for (size_t i = 0; i < np; i++) {
			if (v[i].watch_ctx >= RM_CTXS || v[i].trap_ctx >= RM_CTXS) {
				mismatches++;
				continue;
			}
			mismatches += v[i].waste != rm_waste[k][v[i].watch_ctx][v[i].trap_ctx];
			mismatches += v[i].use != rm_use[k][v[i].watch_ctx][v[i].trap_ctx];
			if (i)
				CHECK(v[i - 1].waste >= v[i].waste);
		}
		CHECK_TOTAL(k, tw, tu);
		/* every verdict occurs */
		CHECK(tw > 0 && tu > 0);
		free(v);
	}
	CHECK_EQ_INT(mismatches, 0);
}

/* How long one access takes (thread CPU time), printed, not asserted. */
static void bench(void)
{
	const unsigned n = 1u << 20;
	struct timespec t0, t1;
	uint64_t v = 0;
	unsigned failed = 0;
	double ns;

	fresh(EXP_WEXACT_PRECISION);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	for (unsigned i = 0; i < n; i++) {
		uint64_t addr = BASE + (i * 8) % (64 * 1024);

		v = i;
		failed += (i & 1 ? load_p(0, i % 16, addr, 8, 0) : store_p(0, i % 16, addr, 8, &v, 0)) != 0;
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
	ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n;
	CHECK_EQ_INT(failed, 0);
	printf("# exp_wexact_access: %.0f ns per 8-byte access (%u accesses over 64 KiB)\n", ns, n);
}

int main(void)
{
	test_listing2();
	test_listing3();
	test_ratio_321();
	test_silent_store();
	test_silent_load();
	test_float();
	test_overlap();
	test_rmw();
	test_two_processes();
	test_contexts_and_errors();
	test_memory_bound();
	test_random_model();
	bench();
	exp_wexact_free(w);
	return tap_done();
}
