/* causal-short [ITEMS] [EXIT_STATUS]
 *
 * A short program for "exit is not delayed by the current experiment": two
 * threads each do ITEMS (default 60) items of ~1 ms (marker causal_short_work)
 * counted at marker causal_short_done (also causal_short_item_done()), then the
 * program exits with EXIT_STATUS (default 7). Well under 0.3 s natively.
 * Exit: EXIT_STATUS, 64 on a usage error.
 */
#include <pthread.h>

#include "causal-common.h"

static unsigned long nitems;
static unsigned long done_items;
static volatile unsigned long sink;

__attribute__((noipa)) void causal_short_item_done(void)
{
	__atomic_add_fetch(&done_items, 1, __ATOMIC_RELAXED); CAUSAL_PROGRESS; /* MARK:causal_short_done */
}

static void *worker(void *arg)
{
	unsigned long acc = (unsigned long)arg;

	for (unsigned long i = 0; i < nitems; i++) {
		CAUSAL_WORK(acc, 600000) /* MARK:causal_short_work */
		causal_short_item_done();
	}
	sink = acc;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	nitems = (unsigned long)causal_arg(argc, argv, 1, 60);
	if (pthread_create(&t, NULL, worker, (void *)3))
		return 70;
	worker((void *)5);
	pthread_join(t, NULL);
	printf("items %lu\n", done_items);
	return (int)causal_arg(argc, argv, 2, 7);
}
