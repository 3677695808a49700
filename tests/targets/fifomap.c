/* fifomap VICTIM OTHER SECONDS
 *
 * dlopen()s VICTIM and OTHER (two copies of libdlwork.so), works in OTHER
 * for SECONDS of CPU time (a profiler sampling it reads the maps, VICTIM's
 * mapping still named by its path), then replaces VICTIM's path by a FIFO
 * that nobody ever opens for writing, and works in VICTIM for SECONDS more.
 * A profiler that opens VICTIM's path to read its symbols finds the FIFO
 * (issue 22 item 7): an open() without O_NONBLOCK blocks for ever.
 * Prints "done" and exits 0; 64 usage, 2 dlopen failed, 3 dlsym failed,
 * 5 the FIFO could not replace VICTIM.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

typedef unsigned long (*work_fn)(unsigned long);

static volatile unsigned long sink;

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void work(work_fn f, double seconds)
{
	double t0 = cpu_seconds();
	unsigned long acc = 1;

	while (cpu_seconds() - t0 < seconds)
		acc = f(acc);
	sink = acc;
}

int main(int argc, char **argv)
{
	char fifo[4096];
	void *victim, *other;
	work_fn fv, fo;

	if (argc != 4) {
		fprintf(stderr, "usage: fifomap VICTIM OTHER SECONDS\n");
		return 64;
	}
	double seconds = atof(argv[3]);
	victim = dlopen(argv[1], RTLD_NOW);
	other = dlopen(argv[2], RTLD_NOW);
	if (!victim || !other) {
		fprintf(stderr, "fifomap: %s\n", dlerror());
		return 2;
	}
	fv = (work_fn)dlsym(victim, "dl_three");
	fo = (work_fn)dlsym(other, "dl_three");
	if (!fv || !fo)
		return 3;
	work(fo, seconds);
	snprintf(fifo, sizeof(fifo), "%s.fifo", argv[1]);
	if (mkfifo(fifo, 0600) < 0 || rename(fifo, argv[1]) < 0) {
		perror("fifomap: fifo");
		return 5;
	}
	work(fv, seconds);
	printf("done\n");
	return 0;
}
