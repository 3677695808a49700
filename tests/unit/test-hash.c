#include "common/hash.h"

#include <stdlib.h>

#include "tests/unit/tap.h"

/* The inverse of an odd multiplier modulo 2^64 (Newton's iteration). */
static uint64_t mul_inverse(uint64_t a)
{
	uint64_t x = a;

	for (int i = 0; i < 6; i++)
		x *= 2 - a * x;
	return x;
}

static uint64_t unxorshift(uint64_t y, int s)
{
	uint64_t x = y;

	for (int i = 0; i < 64 / s + 1; i++)
		x = y ^ (x >> s);
	return x;
}

/* The inverse of psup_hash64 (splitmix64's finalizer): what a hostile
 * record's author computes to make ids share one home slot. */
static uint64_t unhash64(uint64_t h)
{
	h = unxorshift(h, 31);
	h *= mul_inverse(0x94d049bb133111ebULL);
	h = unxorshift(h, 27);
	h *= mul_inverse(0xbf58476d1ce4e5b9ULL);
	return unxorshift(h, 30);
}

/* Keys whose unkeyed hashes end in 32 zero bits all start at slot 0 of any
 * table; the keyed slot hash must still spread them: probes stay near the
 * load factor's few, not n / 2 (issue 22, item 10). */
static void test_crafted_collisions(void)
{
	enum { N = 40000 };
	struct psup_u64map m;
	size_t probes = 0, worst = 0;
	bool all = true;

	CHECK(psup_hash64(unhash64(12345)) == 12345);
	psup_u64map_init(&m);
	for (uint64_t i = 1; i <= N; i++) {
		uint64_t k = unhash64(i << 32), *v = psup_u64map_upsert(&m, k, NULL);

		all &= v != NULL && (psup_hash64(k) & 0xffffffffu) == 0;
		if (v)
			*v = i;
	}
	CHECK(all);
	for (uint64_t i = 1; i <= N; i++) {
		uint64_t k = unhash64(i << 32), *v = psup_u64map_find(&m, k);
		size_t n = psup_u64map_probes(&m, k);

		all &= v && *v == i;
		probes += n;
		worst = n > worst ? n : worst;
	}
	CHECK(all);
	/* linear probing at load <= 3/4: about 2.5 probes per hit on average */
	CHECK(probes <= 4 * (size_t)N);
	CHECK(worst <= 200);
	printf("crafted keys: %zu probes for %d lookups, worst %zu\n", probes, N, worst);
	psup_u64map_release(&m);
}

int main(void)
{
	test_crafted_collisions();
	struct psup_u64map m;
	bool created;

	psup_u64map_init(&m);
	CHECK(psup_u64map_find(&m, 5) == NULL);
	for (uint64_t k = 1; k <= 10000; k++) {
		uint64_t *v = psup_u64map_upsert(&m, k * 7919, &created);
		CHECK(v && created);
		*v = k;
	}
	CHECK_EQ_INT(m.len, 10000);
	for (uint64_t k = 1; k <= 10000; k++) {
		uint64_t *v = psup_u64map_upsert(&m, k * 7919, &created);
		CHECK(v && !created && *v == k);
	}
	CHECK(psup_u64map_find(&m, 3) == NULL);
	/* Remove every other key, in an order that crosses probe chains. */
	for (uint64_t k = 2; k <= 10000; k += 2)
		CHECK(psup_u64map_remove(&m, k * 7919));
	CHECK(!psup_u64map_remove(&m, 2 * 7919));
	CHECK_EQ_INT(m.len, 5000);
	for (uint64_t k = 1; k <= 10000; k++) {
		uint64_t *v = psup_u64map_find(&m, k * 7919);
		if (k % 2)
			CHECK(v && *v == k);
		else
			CHECK(v == NULL);
	}
	/* A tiny table where every key collides in a wrapped chain. */
	struct psup_u64map t;
	psup_u64map_init(&t);
	for (uint64_t k = 1; k <= 40; k++)
		*psup_u64map_upsert(&t, k, NULL) = k;
	for (uint64_t k = 1; k <= 40; k += 3)
		CHECK(psup_u64map_remove(&t, k));
	for (uint64_t k = 1; k <= 40; k++) {
		uint64_t *v = psup_u64map_find(&t, k);
		CHECK((k % 3 == 1) ? v == NULL : (v && *v == k));
	}
	psup_u64map_release(&t);
	psup_u64map_clear(&m);
	CHECK_EQ_INT(m.len, 0);
	CHECK(psup_u64map_find(&m, 7919) == NULL);
	psup_u64map_release(&m);
	psup_u64map_release(&m);
	/* Draining into pairs: nonzero values only, the map left empty, the
	 * buffer grown as needed and reused. */
	{
		struct psup_u64map d;
		uint64_t *buf = NULL, sum = 0;
		size_t cap = 0;
		psup_u64map_init(&d);
		for (uint64_t k = 1; k <= 100; k++)
			*psup_u64map_upsert(&d, k, NULL) = k % 10 ? k : 0;
		long n = psup_u64map_drain_pairs(&d, &buf, &cap);
		CHECK_EQ_INT(n, 90);
		CHECK_EQ_INT(d.len, 0);
		CHECK(cap >= 180);
		for (long i = 0; i < n; i++) {
			CHECK(buf[2 * i] == buf[2 * i + 1]);
			sum += buf[2 * i + 1];
		}
		CHECK_EQ_INT(sum, 5050 - 550); /* 10, 20, ..., 100 left out */
		CHECK_EQ_INT(psup_u64map_drain_pairs(&d, &buf, &cap), 0);
		free(buf);
		psup_u64map_release(&d);
	}
	return tap_done();
}
