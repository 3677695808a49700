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
	uint64_t seed; /* psup_hash_seed() when the table was first allocated */
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

/* Returns the number of slots a lookup of key reads (1 when it sits in its
 * home slot); 0 when the map is empty. For tests of the worst case. */
size_t psup_u64map_probes(const struct psup_u64map *m, uint64_t key);

/*
 * A random value, the same for the whole process, that every hash table
 * mixes into its slot hash: keys come from untrusted input (node ids of a
 * record, addresses a program chooses), and with a fixed hash anyone who
 * inverts it can make every key share one probe chain (quadratic time). What
 * a table holds never depends on it; only where the entries sit does, so
 * nothing may print in slot order.
 */
uint64_t psup_hash_seed(void);
/* Tests only, while no table or keyed hash is alive: the seed from now on
 * (0: a new random one). */
void psup_hash_seed_set(uint64_t seed);

/* A 64-bit finalizer (splitmix64). Not keyed: mix psup_hash_seed() into what
 * goes into a table. */
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
