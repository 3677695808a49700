/* witch-search [N [SEARCHES]]
 *
 * Silent loads (the paper's section 6.2, Kallisto's linear probing): a
 * table of N distinct keys, never changed after it is filled, searched
 * linearly SEARCHES times for keys spread over it (MARK:search_load: each
 * scan reloads the same values as the previous scan). Each hit bumps a
 * counter (MARK:search_count, a load + store of a value that changed since
 * its previous load). Loads at search_load are silent but for the first
 * scan reaching each slot; loads at search_count never are.
 * Defaults: N = 2000, SEARCHES = 400000.
 * Exit: 0 when every key was found where it is, 1 when not, 64 on a usage
 * error.
 */
#include <stdio.h>
#include <stdlib.h>

#include "witch-args.h"

/* noipa: the search stays a call with its own frame and lines. */
__attribute__((noipa)) static long find(const volatile long *table, unsigned long n, long key)
{
	for (unsigned long i = 0; i < n; i++) if (table[i] == key) return (long)i; /* MARK:search_load */
	return -1;
}

int main(int argc, char **argv)
{
	unsigned long n = 2000, searches = 400000, bad = 0;
	volatile long *table, *count;

	witch_args(argc, argv, "witch-search [N [SEARCHES]]", &n, 1UL << 24, &searches, 1UL << 30);
	table = calloc(n, sizeof(*table));
	count = calloc(n, sizeof(*count));
	if (!table || !count)
		return 1;
	for (unsigned long i = 0; i < n; i++)
		table[i] = (long)(i * 2654435761UL % 1000003UL) + 1;
	for (unsigned long s = 0; s < searches; s++) {
		unsigned long want = s * 7919 % n;
		long at = find(table, n, table[want]);

		if (at != (long)want)
			bad++;
		else
			count[at]++; /* MARK:search_count */
	}
	for (unsigned long i = 0; i < n; i++)
		bad += (unsigned long)count[i] > searches;
	free((void *)table);
	free((void *)count);
	if (bad) {
		fprintf(stderr, "witch-search: %lu searches went wrong\n", bad);
		return 1;
	}
	return 0;
}
