/*
 * What reading a process's executable mappings costs psup, both ways it
 * can (symbols/maps.c): the whole /proc/PID/maps text read and parsed
 * (sym_maps_read(), sym_maps_parse()), and the executable mappings asked
 * of the kernel one by one (sym_maps_query_exec(), PROCMAP_QUERY, Linux
 * 6.11). Prints the mean time of each over ROUNDS reads, interleaved.
 *
 *   build/tests/bench/maps-read PID [ROUNDS]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "symbols/symbols.h"

int main(int argc, char **argv)
{
	pid_t pid = argc > 1 ? (pid_t)atoi(argv[1]) : 0;
	long rounds = argc > 2 ? atol(argv[2]) : 2000;
	uint64_t text_ns = 0, query_ns = 0;
	size_t ntext = 0, nexec = 0;

	if (pid <= 0 || rounds <= 0) {
		fprintf(stderr, "usage: %s PID [ROUNDS]\n", argv[0]);
		return 2;
	}
	for (long i = 0; i < rounds; i++) {
		struct sym_map *maps = NULL;
		char *text = NULL;
		size_t n = 0;
		uint64_t t0 = psup_now_ns();
		int err = sym_maps_read(pid, &text, NULL, 0, NULL);

		if (!err)
			err = sym_maps_parse(text, &maps, &n, NULL);
		text_ns += psup_now_ns() - t0;
		free(text);
		sym_maps_free(maps, n);
		if (err) {
			fprintf(stderr, "maps of %d: %s\n", (int)pid, strerror(-err));
			return 1;
		}
		ntext = n;
		t0 = psup_now_ns();
		err = sym_maps_query_exec(pid, &maps, &n);
		query_ns += psup_now_ns() - t0;
		sym_maps_free(maps, n);
		if (err) {
			fprintf(stderr, "PROCMAP_QUERY on %d: %s\n", (int)pid, strerror(-err));
			return 1;
		}
		nexec = n;
	}
	printf("text: %.1f us (%zu mappings); PROCMAP_QUERY: %.1f us (%zu executable)\n",
	       text_ns / 1e3 / (double)rounds, ntext, query_ns / 1e3 / (double)rounds, nexec);
	return 0;
}
