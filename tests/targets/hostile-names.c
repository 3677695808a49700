/*
 * Names that attack the reader of a report (issue 22, item 5): functions
 * whose symbols hold ESC/BEL (a terminal title), a C1 CSI (U+009B), markdown
 * (| and `) and HTML (<script>), a thread name with ESC, a progress point
 * and a source file name of the same kind. It runs a holder thread that
 * releases a mutex a waiter blocks on (locks view), stores it never reads
 * (witch), and a progress point (causal).
 *
 *   hostile-names ROUNDS
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "psup.h"

/* An entry with a plain name (C can call it) jumping to a function whose
 * symbol is hostile: it spins n times, then calls cb (so the hostile
 * function is on the stack of whatever cb does), with CFI for unwinders. */
#define HOSTILE(entry, name) \
	__asm__(".text\n.globl " #entry "\n.type " #entry ", @function\n" #entry ":\n" \
		" jmp " name "\n.size " #entry ", .-" #entry "\n" \
		".globl " name "\n.type " name ", @function\n" name ":\n" \
		" .cfi_startproc\n push %rbx\n .cfi_adjust_cfa_offset 8\n .cfi_offset %rbx, -16\n" \
		" mov %rsi, %rbx\n mov %rdi, %rcx\n1: dec %rcx\n jnz 1b\n call *%rbx\n" \
		" pop %rbx\n .cfi_adjust_cfa_offset -8\n ret\n .cfi_endproc\n" \
		".size " name ", .-" name "\n")

HOSTILE(spin_esc, "\"evil_\x1b]0;pwned\x07_esc\"");
HOSTILE(spin_c1, "\"c1_\xc2\x9b" "31m|pipe`tick<script>alert(1)</script>\"");
void spin_esc(long n, void (*cb)(void));
void spin_c1(long n, void (*cb)(void));

/* Everything below is in a source file with a hostile name. */
#line 40 "file_\x1b]0;pwned\x07_\xc2\x9b|`<script>.c"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int phase;
static volatile long dead[64];

static void nothing(void)
{
}

static void unlock(void)
{
	pthread_mutex_unlock(&lock);
}

static void *waiter(void *arg)
{
	long rounds = (long)arg;

	prctl(PR_SET_NAME, "w\x1b]0;t\x07|`<b>");
	for (long r = 0; r < rounds; r++) {
		while (phase != 1)
			;
		pthread_mutex_lock(&lock);
		pthread_mutex_unlock(&lock);
		phase = 0;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 200;
	pthread_t t;

	if (pthread_create(&t, NULL, waiter, (void *)rounds))
		return 1;
	for (long r = 0; r < rounds; r++) {
		pthread_mutex_lock(&lock);
		phase = 1;
		usleep(200); /* the waiter blocks on the lock */
		spin_esc(300000, unlock); /* releases it: blamed on the hostile name */
		spin_c1(300000, nothing);
		for (int i = 0; i < 64; i++)
			dead[i] = r; /* dead stores: overwritten next round, never read */
		PSUP_PROGRESS_NAMED("point_\x1b]0;pwned\x07_\xc2\x9b|`<script>");
		while (phase)
			;
	}
	pthread_join(t, NULL);
	puts("done");
	return 0;
}
