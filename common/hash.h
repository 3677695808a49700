#ifndef PSUP_COMMON_HASH_H
#define PSUP_COMMON_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * An open-addressing map from a non-zero 64-bit key to a 64-bit value, for the
 * hot paths (sample aggregation): no allocation per insert, only when the
 * table doubles. Key 0 is reserved as "empty".
 */
struct psup_u64map {
	uint64_t *keys;
	uint64_t *vals;
	size_t cap; /* a power of two, or 0 */
	size_t len;
};

void psup_u64map_init(struct psup_u64map *m);
void psup_u64map_release(struct psup_u64map *m);
/* Returns a pointer to the value for key, inserting 0 if absent (*created set
 * true). NULL only on allocation failure. The pointer is valid until the next
 * insert. key must not be 0. */
uint64_t *psup_u64map_upsert(struct psup_u64map *m, uint64_t key, bool *created);
/* Returns the value's address, or NULL when key is absent. */
uint64_t *psup_u64map_find(const struct psup_u64map *m, uint64_t key);
/* Removes key; returns whether it was present. Entries may move: do not
 * remove while iterating over the slots. */
bool psup_u64map_remove(struct psup_u64map *m, uint64_t key);
/* Iterate: for (size_t i = 0; i < m->cap; i++) if (m->keys[i]) ... */
void psup_u64map_clear(struct psup_u64map *m);
/* Moves m's entries with a nonzero value into *buf as key, value, key,
 * value, ... (growing *buf, *cap entries, as needed) and clears m. Returns
 * the number of pairs, or -ENOMEM (m is then left as it was). */
long psup_u64map_drain_pairs(struct psup_u64map *m, uint64_t **buf, size_t *cap);

/* A 64-bit finalizer (splitmix64). */
static inline uint64_t psup_hash64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

#endif
