/*
 * The demo psup profiles in the README's first command: a small program with
 * a few hot spots of different kinds, so the report has something to say.
 *   - a checksum over a buffer (a tight loop in the program itself),
 *   - sorting with libc's qsort (time in libc, called from one line here),
 *   - an inlined helper (attributed to the helper, inlined into its caller),
 *   - a second thread doing its own work.
 * It takes about a second of CPU.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N (1 << 16)

static uint32_t state = 12345;

static inline __attribute__((always_inline)) uint32_t next_random(void)
{
	state ^= state << 13;
	state ^= state >> 17;
	state ^= state << 5;
	return state;
}

static __attribute__((noinline)) void fill(uint32_t *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		a[i] = next_random();
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	return (a > b) - (a < b);
}

static __attribute__((noinline)) uint64_t checksum(const uint32_t *a, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ a[i]) * 1099511628211ULL;
	return h;
}

static void *worker(void *arg)
{
	volatile uint64_t *out = arg;
	uint64_t x = 0;

	for (uint64_t i = 0; i < 600000000ULL; i++)
		x += i * i ^ (x >> 3);
	*out = x;
	return NULL;
}

int main(void)
{
	uint32_t *a = malloc(N * sizeof(*a));
	uint64_t h = 0, w = 0;
	pthread_t t;

	if (!a)
		return 1;
	pthread_create(&t, NULL, worker, (void *)&w);
	for (int round = 0; round < 120; round++) {
		fill(a, N);
		qsort(a, N, sizeof(*a), cmp_u32);
		for (int k = 0; k < 20; k++)
			h += checksum(a, N);
	}
	pthread_join(t, NULL);
	printf("demo: checksum %016llx, worker %016llx\n", (unsigned long long)h, (unsigned long long)w);
	free(a);
	return 0;
}
