#include "common/hash.h"

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
	psup_u64map_clear(&m);
	CHECK_EQ_INT(m.len, 0);
	CHECK(psup_u64map_find(&m, 7919) == NULL);
	psup_u64map_release(&m);
	psup_u64map_release(&m);
	return tap_done();
}
