/* libdlwork.so: loaded by dlratio with dlopen after start. dl_three does 3
 * units, dl_one 1, the same unit as ratio.c. */
#define UNIT_ITERS 1000000UL

unsigned long dl_three(unsigned long acc);
unsigned long dl_one(unsigned long acc);

/* noipa: keep both exported bodies apart (no identical-code folding). */
__attribute__((noipa)) unsigned long dl_three(unsigned long acc)
{
	for (unsigned long i = 0; i < 3 * UNIT_ITERS; i++) { acc = acc * 6364136223846793005UL + i; __asm__ volatile("" : "+r"(acc)); } /* MARK:dl_three */
	return acc;
}

__attribute__((noipa)) unsigned long dl_one(unsigned long acc)
{
	for (unsigned long i = 0; i < UNIT_ITERS; i++) { acc = acc * 6364136223846793005UL + i; __asm__ volatile("" : "+r"(acc)); } /* MARK:dl_one */
	return acc;
}
