#include "common/hash.h"

#include <stdlib.h>

#include "tests/unit/tap.h"

int main(void)
{
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
