/* witch-fp [N [ROUNDS]]
 *
 * Floating-point silent stores and loads, approximately (the paper's lbm:
 * values that change by less than the 1% precision). Each round scales
 * near[0..N) by 1.001 (MARK:fp_near: the load reads a value within 0.1% of
 * the previous load, the store writes one within 0.1% of what is there:
 * both silent within 1%) and negates far[0..N) (MARK:fp_far: never silent).
 * With a precision of 0 nothing is silent. Silent-store and silent-load
 * fractions about 50% at 1%. Defaults: N = 50000, ROUNDS = 10000.
 * Exit: 0 when the final values are right, 1 when not, 64 on a usage error.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "witch-args.h"

int main(int argc, char **argv)
{
	unsigned long n = 50000, rounds = 10000, bad = 0;
	volatile double *near, *far;
	double grow = 1.0;

	witch_args(argc, argv, "witch-fp [N [ROUNDS]]", &n, 1UL << 24, &rounds, 100000);
	near = calloc(n, sizeof(*near));
	far = calloc(n, sizeof(*far));
	if (!near || !far)
		return 1;
	for (unsigned long i = 0; i < n; i++) {
		near[i] = 1.0 + (double)i;
		far[i] = 1.0 + (double)i;
	}
	for (unsigned long r = 0; r < rounds; r++) {
		for (unsigned long i = 0; i < n; i++) near[i] = near[i] * 1.001; /* MARK:fp_near */
		for (unsigned long i = 0; i < n; i++) far[i] = -far[i]; /* MARK:fp_far */
		grow *= 1.001;
	}
	for (unsigned long i = 0; i < n; i++) {
		double want = (1.0 + (double)i) * grow;

		bad += fabs(near[i] - want) > 1e-9 * want;
		bad += far[i] != (rounds % 2 ? -(1.0 + (double)i) : 1.0 + (double)i);
	}
	free((void *)near);
	free((void *)far);
	if (bad) {
		fprintf(stderr, "witch-fp: %lu wrong values\n", bad);
		return 1;
	}
	return 0;
}
