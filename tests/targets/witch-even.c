/* witch-even MODE [N [ROUNDS]]
 *
 * Known fractions that do not depend on time: the wasted and the useful
 * accesses run the very same code on the same memory (one fill() and one
 * sum() called twice from different lines), so time-weighted samples and
 * exact counts agree. Per round, on a volatile int array of N:
 *  dead:   fill(0) (marked even_dead_fill, killed by the next fill),
 *          fill(round) (marked even_used_fill, read by sum): dead 50%;
 *  silent: fill(round) twice (marked even_first_fill / even_again_fill): the
 *          second stores what is there: silent 50%;
 *  load:   fill(round), then sum twice (marked even_sum1 / even_sum2): the
 *          second sum loads what the first loaded: silent loads 50%.
 * Defaults: N = 50000, ROUNDS = 2000. Exit 0 when the sums are right, 1 when
 * not, 64 on a usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static __attribute__((noinline)) void fill(volatile int *a, long n, int v)
{
	for (long i = 0; i < n; i++)
		a[i] = v;
}

static __attribute__((noinline)) long sum(volatile int *a, long n)
{
	long s = 0;

	for (long i = 0; i < n; i++)
		s += a[i];
	return s;
}

int main(int argc, char **argv)
{
	long n = 50000, rounds = 2000, bad = 0;
	volatile int *a;
	const char *mode;

	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: witch-even dead|silent|load [N [ROUNDS]]\n");
		return 64;
	}
	mode = argv[1];
	if (argc > 2)
		n = atol(argv[2]);
	if (argc > 3)
		rounds = atol(argv[3]);
	if (n <= 0 || rounds <= 0 || (strcmp(mode, "dead") && strcmp(mode, "silent") && strcmp(mode, "load"))) {
		fprintf(stderr, "usage: witch-even dead|silent|load [N [ROUNDS]]\n");
		return 64;
	}
	a = malloc(n * sizeof(*a));
	if (!a)
		return 1;
	for (long r = 1; r <= rounds; r++) {
		if (!strcmp(mode, "dead")) {
			fill(a, n, 0); /* MARK:even_dead_fill */
			fill(a, n, (int)r); /* MARK:even_used_fill */
			bad += sum(a, n) != r * n;
		} else if (!strcmp(mode, "silent")) {
			fill(a, n, (int)r); /* MARK:even_first_fill */
			fill(a, n, (int)r); /* MARK:even_again_fill */
		} else {
			fill(a, n, (int)r);
			bad += sum(a, n) != r * n; /* MARK:even_sum1 */
			bad += sum(a, n) != r * n; /* MARK:even_sum2 */
		}
	}
	free((void *)a);
	if (bad) {
		fprintf(stderr, "witch-even: %ld wrong sums\n", bad);
		return 1;
	}
	return 0;
}
