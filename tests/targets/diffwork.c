/* diffwork UNITS_A UNITS_B
 *
 * A fixed amount of work, not a fixed time: work_a() runs UNITS_A units and
 * work_b() UNITS_B units, one unit being the same loop of 1,000,000
 * dependent multiply-adds everywhere (an asm barrier keeps the compiler from
 * dropping or vectorizing it). Two "builds" of a program are two argument
 * sets: doubling UNITS_A doubles work_a's time per run and leaves work_b's
 * alone (t8080-diff).
 * Exit: 0 on success, 64 on a usage error.
 */
#include <stdio.h>
#include <stdlib.h>

#define UNIT_ITERS 1000000UL

static volatile unsigned long sink;

__attribute__((noipa)) unsigned long work_a(unsigned long units, unsigned long acc)
{
	for (unsigned long i = 0; i < units * UNIT_ITERS; i++) { acc = acc * 6364136223846793005UL + i; __asm__ volatile("" : "+r"(acc)); }
	return acc;
}

__attribute__((noipa)) unsigned long work_b(unsigned long units, unsigned long acc)
{
	for (unsigned long i = 0; i < units * UNIT_ITERS; i++) { acc = acc * 6364136223846793005UL + i; __asm__ volatile("" : "+r"(acc)); }
	return acc;
}

int main(int argc, char **argv)
{
	char *ea, *eb;
	unsigned long a, b;

	if (argc != 3) {
		fprintf(stderr, "usage: diffwork UNITS_A UNITS_B\n");
		return 64;
	}
	a = strtoul(argv[1], &ea, 10);
	b = strtoul(argv[2], &eb, 10);
	if (*ea || *eb || ea == argv[1] || eb == argv[2]) {
		fprintf(stderr, "diffwork: UNITS_A and UNITS_B are numbers\n");
		return 64;
	}
	sink = work_b(b, work_a(a, 1));
	return 0;
}
