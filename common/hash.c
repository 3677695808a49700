#include "common/hash.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

static _Atomic uint64_t seed;

void psup_hash_seed_set(uint64_t s)
{
	atomic_store(&seed, s);
}

uint64_t psup_hash_seed(void)
{
	uint64_t s = atomic_load_explicit(&seed, memory_order_relaxed), expected = 0;

	if (s)
		return s;
	s = psup_rand_seed() | 1;
	/* two threads may race here: both keep the first one stored */
	if (!atomic_compare_exchange_strong(&seed, &expected, s))
		s = expected;
	return s;
}

static size_t home_of(const struct psup_u64map *m, uint64_t key)
{
	return psup_hash64(key ^ m->seed) & (m->cap - 1);
}

void psup_u64map_init(struct psup_u64map *m)
{
	memset(m, 0, sizeof(*m));
}

void psup_u64map_release(struct psup_u64map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

void psup_u64map_clear(struct psup_u64map *m)
{
	if (m->cap)
		memset(m->keys, 0, m->cap * sizeof(*m->keys));
	m->len = 0;
}

static size_t slot_of(const struct psup_u64map *m, uint64_t key)
{
	size_t mask = m->cap - 1;
	size_t i = home_of(m, key);

	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & mask;
	return i;
}

static int grow(struct psup_u64map *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 64;
	struct psup_u64map n = { .cap = ncap, .seed = m->cap ? m->seed : psup_hash_seed() };

	n.keys = calloc(ncap, sizeof(*n.keys));
	n.vals = calloc(ncap, sizeof(*n.vals));
	if (!n.keys || !n.vals) {
		free(n.keys);
		free(n.vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		size_t j = slot_of(&n, m->keys[i]);
		n.keys[j] = m->keys[i];
		n.vals[j] = m->vals[i];
	}
	n.len = m->len;
	free(m->keys);
	free(m->vals);
	*m = n;
	return 0;
}

uint64_t *psup_u64map_find(const struct psup_u64map *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	size_t i = slot_of(m, key);
	return m->keys[i] ? &m->vals[i] : NULL;
}

size_t psup_u64map_probes(const struct psup_u64map *m, uint64_t key)
{
	size_t mask, i, n = 1;

	if (!m->cap)
		return 0;
	mask = m->cap - 1;
	for (i = home_of(m, key); m->keys[i] && m->keys[i] != key; i = (i + 1) & mask)
		n++;
	return n;
}

uint64_t *psup_u64map_upsert(struct psup_u64map *m, uint64_t key, bool *created)
{
	if (created)
		*created = false;
	if ((m->len + 1) * 4 > m->cap * 3 && grow(m) < 0)
		return NULL;
	size_t i = slot_of(m, key);
	if (!m->keys[i]) {
		m->keys[i] = key;
		m->vals[i] = 0;
		m->len++;
		if (created)
			*created = true;
	}
	return &m->vals[i];
}

bool psup_u64map_remove(struct psup_u64map *m, uint64_t key)
{
	size_t mask, i, j;

	if (!m->cap)
		return false;
	mask = m->cap - 1;
	i = slot_of(m, key);
	if (!m->keys[i])
		return false;
	/* Backward-shift deletion keeps every probe chain unbroken. */
	j = i;
	for (;;) {
		j = (j + 1) & mask;
		if (!m->keys[j])
			break;
		size_t home = home_of(m, m->keys[j]);
		/* Move j into the hole at i unless its home lies in (i, j]. */
		bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
		if (stays)
			continue;
		m->keys[i] = m->keys[j];
		m->vals[i] = m->vals[j];
		i = j;
	}
	m->keys[i] = 0;
	m->vals[i] = 0;
	m->len--;
	return true;
}

long psup_u64map_drain_pairs(struct psup_u64map *m, uint64_t **buf, size_t *cap)
{
	size_t n = 0;

	if (m->len * 2 > *cap) {
		size_t c = m->len * 4;
		uint64_t *nb = realloc(*buf, c * sizeof(*nb));
		if (!nb)
			return -ENOMEM;
		*buf = nb;
		*cap = c;
	}
	for (size_t j = 0; j < m->cap; j++) {
		if (!m->keys[j] || !m->vals[j])
			continue;
		(*buf)[2 * n] = m->keys[j];
		(*buf)[2 * n + 1] = m->vals[j];
		n++;
	}
	psup_u64map_clear(m);
	return (long)n;
}
