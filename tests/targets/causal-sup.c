/* causal-sup MODE [ARG]: the hazards of psup's seccomp filter (causal run
 * mode), each checked by the program itself; exit 0 when all is as without
 * psup.
 *   ownfilter        installs its own filter: getppid -> SECCOMP_RET_TRACE
 *                    (data 0x1234), getpgrp -> SECCOMP_RET_ERRNO(EPERM); then
 *                    checks getppid fails with ENOSYS (a RET_TRACE nobody
 *                    answers, exactly as without psup), getpgrp with EPERM,
 *                    and that a mutex + condvar hand-off between two threads
 *                    still works (psup's own stops under both filters).
 *   orphan FILE      forks a child and exits at once; the child, outliving
 *                    its parent, does 2000 condvar hand-offs between two
 *                    threads and writes "ok N" to FILE (a futex failing with
 *                    ENOSYS would break the hand-offs).
 *   handoff N        N condvar hand-offs between two threads, "handoff ok".
 *   wait             two threads hand a token back and forth over a mutex
 *                    and condvar forever, printing "ready" first (for killing
 *                    psup while threads sit in intercepted futex calls).
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int turn;
static long rounds;

static void *player(void *arg)
{
	int me = (int)(long)arg;

	for (long i = 0; rounds < 0 || i < rounds; i++) {
		pthread_mutex_lock(&mu);
		while (turn != me)
			pthread_cond_wait(&cv, &mu);
		turn = !me;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

/* Returns 0 when the hand-offs completed. */
static int handoffs(long n)
{
	pthread_t t;

	rounds = n;
	turn = 0;
	if (pthread_create(&t, NULL, player, (void *)1L))
		return 1;
	player((void *)0L);
	return pthread_join(t, NULL) ? 1 : 0;
}

static int own_filter(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE | 0x1234),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getpgrp, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	long r;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("seccomp");
		return 2;
	}
	errno = 0;
	r = syscall(SYS_getppid);
	if (r != -1 || errno != ENOSYS) {
		fprintf(stderr, "getppid gave %ld (%s), expected ENOSYS\n", r, strerror(errno));
		return 1;
	}
	errno = 0;
	r = syscall(SYS_getpgrp);
	if (r != -1 || errno != EPERM) {
		fprintf(stderr, "getpgrp gave %ld (%s), expected EPERM\n", r, strerror(errno));
		return 1;
	}
	if (handoffs(2000)) {
		fprintf(stderr, "hand-offs failed\n");
		return 1;
	}
	printf("ownfilter ok\n");
	return 0;
}

static int orphan(const char *path)
{
	pid_t pid = fork();

	if (pid < 0)
		return 1;
	if (pid > 0)
		return 0; /* the parent exits at once */
	usleep(200000); /* the parent is gone by now */
	int bad = handoffs(2000);
	FILE *f = fopen(path, "w");
	if (!f)
		_exit(1);
	fprintf(f, bad ? "failed\n" : "ok %d\n", 2000);
	fclose(f);
	_exit(bad);
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "ownfilter"))
		return own_filter();
	if (argc >= 3 && !strcmp(argv[1], "orphan"))
		return orphan(argv[2]);
	if (argc >= 3 && !strcmp(argv[1], "handoff")) {
		if (handoffs(atol(argv[2])))
			return 1;
		printf("handoff ok\n");
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "wait")) {
		printf("ready\n");
		fflush(stdout);
		return handoffs(-1);
	}
	fprintf(stderr, "usage: causal-sup ownfilter | orphan FILE | wait\n");
	return 64;
}
