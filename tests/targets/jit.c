/* A JIT in miniature: generates machine code into an anonymous executable
 * mapping, names it in its own perf map file (/tmp/perf-PID.map, as the
 * JVM, node --perf-basic-prof and python -X perf do) and runs it hot; the
 * file is removed at exit, as some JITs do. x86-64 only.
 * Usage: jit SECONDS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	/* mov %rdi,%rax; 1: dec %rax; jnz 1b; ret */
	static const uint8_t code[] = { 0x48, 0x89, 0xf8, 0x48, 0xff, 0xc8, 0x75, 0xfb, 0xc3 };
	double secs = argc > 1 ? atof(argv[1]) : 1.0, until;
	char path[64];
	uint8_t *mem;
	FILE *f;

	mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	memcpy(mem + 64, code, sizeof(code));
	if (mprotect(mem, 4096, PROT_READ | PROT_EXEC))
		return 1;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return 1;
	/* another blob first, then ours: the file is read as it grows */
	fprintf(f, "%lx 20 jit_cold_stub\n", (unsigned long)(uintptr_t)mem);
	fprintf(f, "%lx %zx jit_hot_loop [compiled]\n", (unsigned long)(uintptr_t)(mem + 64), sizeof(code));
	fclose(f);
	until = now() + secs;
	while (now() < until)
		((void (*)(long))(void *)(mem + 64))(1000000);
	unlink(path);
	return 0;
}
