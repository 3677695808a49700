#ifndef PSUP_COMMON_UTIL_H
#define PSUP_COMMON_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PSUP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* CLOCK_MONOTONIC in nanoseconds (the clock perf samples use with use_clockid). */
uint64_t psup_now_ns(void);
/* CLOCK_REALTIME in nanoseconds, for record headers. */
uint64_t psup_wall_ns(void);

/* Reads a whole small file (/proc) into a NUL-terminated heap buffer the
 * caller frees. Returns 0 or -errno. */
int psup_read_file(const char *path, char **out, size_t *len);

/* A small xorshift PRNG for randomized sampling periods and experiment choices.
 * State must be seeded non-zero. */
static inline uint64_t psup_rand_next(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}
uint64_t psup_rand_seed(void);

/* Parses a decimal integer in [min, max]; returns 0 or -EINVAL / -ERANGE. */
int psup_parse_long(const char *s, long min, long max, long *out);

#endif
