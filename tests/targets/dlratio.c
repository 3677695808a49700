/* dlratio LIBPATH CPU_SECONDS [fork]
 *
 * dlopen()s LIBPATH (libdlwork.so) after start, so the library is mapped while
 * psup is already tracing, then calls dl_three/dl_one 3:1 until the process
 * used CPU_SECONDS. With fork, a child forked right after the dlopen does the
 * work and exits, and the parent waits for it (the child's maps are a copy
 * of its parent's, made before the dlopen's mmap record reaches psup).
 * Exit: 0 on success, 64 usage, 2 dlopen failed, 3 dlsym failed, 4 the fork
 * or the child failed.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef unsigned long (*work_fn)(unsigned long);

static volatile unsigned long sink;

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	unsigned long acc = 1;
	work_fn three, one;
	double seconds;
	void *lib;
	char *end;

	if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "fork"))) {
		fprintf(stderr, "usage: dlratio LIBPATH CPU_SECONDS [fork]\n");
		return 64;
	}
	seconds = strtod(argv[2], &end);
	if (*end || seconds < 0) {
		fprintf(stderr, "dlratio: bad CPU_SECONDS '%s'\n", argv[2]);
		return 64;
	}
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlratio: dlopen %s: %s\n", argv[1], dlerror());
		return 2;
	}
	/* POSIX's blessed way to turn a dlsym() result into a function pointer. */
	*(void **)&three = dlsym(lib, "dl_three");
	*(void **)&one = dlsym(lib, "dl_one");
	if (!three || !one) {
		fprintf(stderr, "dlratio: dl_three/dl_one not found in %s\n", argv[1]);
		return 3;
	}

	if (argc == 4) {
		pid_t child = fork();
		int status;

		if (child < 0)
			return 4;
		if (child > 0)
			return waitpid(child, &status, 0) == child && WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : 4;
	}
	while (cpu_seconds() < seconds) {
		acc = three(acc);
		acc = one(acc);
	}
	sink = acc;
	/* Left open on purpose: unmapping at exit is not what this target tests. */
	return 0;
}
