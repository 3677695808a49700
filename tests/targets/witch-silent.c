/* witch-silent [N [ROUNDS]]
 *
 * Silent stores: each round stores into same[0..N) the values it already
 * holds after the first round (MARK:silent_same), and into changing[0..N)
 * values that differ every round (MARK:silent_changing). From round 2 on
 * every store to same[] is silent, none to changing[]: the silent-store
 * fraction is about 50%, all of its waste on the pair (silent_same,
 * silent_same). Nothing is read in the loop: both lines' stores are also
 * dead. Defaults: N = 100000, ROUNDS = 2000.
 * Exit: 0 when the final values are right, 1 when not, 64 on a usage error.
 */
#include <stdio.h>
#include <stdlib.h>

#include "witch-args.h"

int main(int argc, char **argv)
{
	unsigned long n = 100000, rounds = 2000, bad = 0;
	volatile int *same, *changing;

	witch_args(argc, argv, "witch-silent [N [ROUNDS]]", &n, 1UL << 26, &rounds, 1UL << 30);
	same = calloc(n, sizeof(*same));
	changing = calloc(n, sizeof(*changing));
	if (!same || !changing)
		return 1;
	for (unsigned long r = 1; r <= rounds; r++) {
		for (unsigned long i = 0; i < n; i++) same[i] = (int)(i % 7 + 1); /* MARK:silent_same */
		for (unsigned long i = 0; i < n; i++) changing[i] = (int)(r + i); /* MARK:silent_changing */
	}
	for (unsigned long i = 0; i < n; i++)
		bad += same[i] != (int)(i % 7 + 1) || changing[i] != (int)(rounds + i);
	free((void *)same);
	free((void *)changing);
	if (bad) {
		fprintf(stderr, "witch-silent: %lu wrong values\n", bad);
		return 1;
	}
	return 0;
}
