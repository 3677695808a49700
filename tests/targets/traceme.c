/*
 * Programs that ask for ptrace themselves (t1093-nested-tracers).
 *
 * traceme: asks its parent to trace it (PTRACE_TRACEME, an anti-debugging
 * check's way), prints the answer, works on, and exits 3. Under `psup run`
 * its parent is psup, which traces it already: the answer is EPERM, as for
 * any traced process, and psup keeps tracing it to its end.
 *
 * traceme zombie: forks a child whose main thread ends (pthread_exit) while
 * another thread lives on, then PTRACE_ATTACHes the child's zombie leader,
 * which the kernel refuses (EPERM: it is exiting); prints the answer, kills
 * the child and exits 3. psup must not hold the call until the child ends.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned long sink;

static void work(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i;
}

static void *forever(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static char state_of(pid_t pid)
{
	char path[64], buf[256], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

static int zombie_attach(void)
{
	pid_t child = fork();
	long r;

	if (child < 0)
		return 70;
	if (child == 0) {
		pthread_t t;

		if (pthread_create(&t, NULL, forever, NULL))
			_exit(71);
		pthread_exit(NULL);
	}
	while (state_of(child) != 'Z')
		usleep(1000);
	r = ptrace(PTRACE_ATTACH, child, 0, 0);
	printf("attach: %s\n", r ? strerror(errno) : "ok");
	fflush(stdout);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return 3;
}

int main(int argc, char **argv)
{
	long r;

	if (argc > 1 && !strcmp(argv[1], "zombie"))
		return zombie_attach();
	work(20000000UL);
	r = ptrace(PTRACE_TRACEME, 0, 0, 0);
	printf("traceme: %s\n", r ? strerror(errno) : "ok");
	fflush(stdout);
	work(20000000UL);
	return 3;
}
