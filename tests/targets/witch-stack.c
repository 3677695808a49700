/* witch-stack [ROUNDS]
 *
 * Implicit stack accesses and loads that overwrite their own address
 * register, the instruction shapes a watch armed before its sampled access
 * must still recognize at its first trap: each round pushes and pops a
 * register twice (MARK:stack_pushpop: every push is read by its pop, so no
 * dead store) and loads through a pointer into the pointer's own register
 * (MARK:stack_selfload: mov (%rax),%eax, loads of a value never changed:
 * silent loads). Default ROUNDS = 200000000.
 * Exit: 0, 64 on a usage error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "witch-args.h"

static volatile int cell = 7;

int main(int argc, char **argv)
{
	unsigned long rounds = 200000000, unused = 1, sum = 0;

	witch_args(argc, argv, "witch-stack [ROUNDS]", &rounds, 1UL << 40, &unused, 1);
	for (unsigned long i = 0; i < rounds; i++) {
		unsigned long v = (unsigned long)(uintptr_t)&cell;
		__asm__ volatile("push %%rbx\n\tpop %%rbx\n\tpush %%rbx\n\tpop %%rbx\n"
				 ::: "memory"); /* MARK:stack_pushpop */
		__asm__ volatile("mov (%0), %k0" : "+r"(v) : : "memory"); /* MARK:stack_selfload */
		sum += v;
	}
	printf("%lu\n", sum);
	return 0;
}
