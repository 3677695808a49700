/* libratio.so: the "lib" mode of ratio. lib_three does 3 units, lib_one 1,
 * the same unit as ratio.c (UNIT_ITERS dependent multiply-adds). */
#define UNIT_ITERS 1000000UL

unsigned long lib_three(unsigned long acc);
unsigned long lib_one(unsigned long acc);

/* noipa: keep both exported bodies apart (no identical-code folding). */
__attribute__((noipa)) unsigned long lib_three(unsigned long acc)
{
	for (unsigned long i = 0; i < 3 * UNIT_ITERS; i++) { acc = acc * 6364136223846793005UL + i; __asm__ volatile("" : "+r"(acc)); } /* MARK:lib_three */
	return acc;
}

__attribute__((noipa)) unsigned long lib_one(unsigned long acc)
{
	for (unsigned long i = 0; i < UNIT_ITERS; i++) { acc = acc * 6364136223846793005UL + i; __asm__ volatile("" : "+r"(acc)); } /* MARK:lib_one */
	return acc;
}
