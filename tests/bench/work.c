/* A fixed amount of CPU-bound work per thread, for overhead benchmarks:
 * `work THREADS ITERATIONS`. Unlike the test targets, it does not run "until
 * N seconds of CPU", so a slowdown shows in its run time. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t iterations;

static __attribute__((noinline)) uint64_t kernel_a(uint64_t x, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + (i ^ (x >> 29));
	return x;
}

static __attribute__((noinline)) uint64_t kernel_b(uint64_t x, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		x ^= (x << 7) + (x >> 11) + i;
	return x;
}

static void *run(void *arg)
{
	uint64_t x = (uintptr_t)arg + 1;

	for (uint64_t done = 0; done < iterations; done += 1000000) {
		x = kernel_a(x, 750000);
		x = kernel_b(x, 250000);
	}
	return (void *)(uintptr_t)(x & 1);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;
	pthread_t t[64];

	iterations = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000000ULL;
	if (n < 1 || n > 64) {
		fprintf(stderr, "work: THREADS must be 1..64\n");
		return 2;
	}
	for (int i = 1; i < n; i++)
		pthread_create(&t[i], NULL, run, (void *)(uintptr_t)i);
	run(NULL);
	for (int i = 1; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}
