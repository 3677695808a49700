/* witch-ratio321 [K [ROUNDS]]
 *
 * The Witch paper's Figure 2: a[], b[] and x take dead stores in a 3:2:1
 * ratio. Each round stores the round number into a[0..3K) (MARK:r321_a),
 * b[0..2K) (MARK:r321_b), and K times into the scalar x (MARK:r321_x);
 * nothing reads them until the end. Each round's stores to a and b are
 * killed by the next round's; each store to x by the next one. Dead bytes:
 * (r321_a, r321_a) 12K(ROUNDS - 1), (r321_b, r321_b) 8K(ROUNDS - 1),
 * (r321_x, r321_x) 4(K * ROUNDS - 1): 50% : 33% : 17%. The values change
 * every round: no silent store among a and b (x's K stores of one round are
 * silent but the first). Defaults: K = 20000, ROUNDS = 5000.
 * Exit: 0 when the final values are right, 1 when not, 64 on a usage error.
 */
#include <stdio.h>
#include <stdlib.h>

#include "witch-args.h"

static volatile int x;

int main(int argc, char **argv)
{
	unsigned long k = 20000, rounds = 5000, bad = 0;
	volatile int *a, *b;

	witch_args(argc, argv, "witch-ratio321 [K [ROUNDS]]", &k, 1UL << 24, &rounds, 1UL << 30);
	a = calloc(3 * k, sizeof(*a));
	b = calloc(2 * k, sizeof(*b));
	if (!a || !b)
		return 1;
	for (unsigned long r = 1; r <= rounds; r++) {
		for (unsigned long i = 0; i < 3 * k; i++) a[i] = (int)r; /* MARK:r321_a */
		for (unsigned long i = 0; i < 2 * k; i++) b[i] = (int)r; /* MARK:r321_b */
		for (unsigned long i = 0; i < k; i++) x = (int)r; /* MARK:r321_x */
	}
	for (unsigned long i = 0; i < 3 * k; i++)
		bad += a[i] != (int)rounds;
	for (unsigned long i = 0; i < 2 * k; i++)
		bad += b[i] != (int)rounds;
	bad += x != (int)rounds;
	free((void *)a);
	free((void *)b);
	if (bad) {
		fprintf(stderr, "witch-ratio321: %lu wrong values\n", bad);
		return 1;
	}
	return 0;
}
