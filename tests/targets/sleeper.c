/* sleeper [WALL_SECONDS | --until FILE]
 *
 * Prints "<pid> ready" on stdout (flushed), then four threads block until
 * WALL_SECONDS (default 6) of wall time have passed since start, or, with
 * --until, until FILE exists (the main thread looks every 20 ms; the
 * nanosleep thread notices within 3 s): a test that needs the threads
 * blocked while it works says when they end, whatever the machine's load:
 *   nanosleep   nanosleep(3 s or what is left) in a loop
 *   read        read() on a pipe that is written once, at the end
 *   futex       raw FUTEX_WAIT (3 s relative timeout) on a word set at the end
 *   epoll_wait  epoll_wait (3 s timeout) on that pipe
 * Attaching or detaching a tracer must not make any of them fail with EINTR:
 * the kernel restarts read and (through restart_syscall) nanosleep and
 * FUTEX_WAIT transparently. epoll_wait is different: signal(7) documents that
 * it fails with EINTR after any stop, even with no handler, so an EINTR there
 * means the tracer stopped the thread (e.g. PTRACE_INTERRUPT) and has its own
 * exit status. SIGUSR2 has an SA_RESTART handler and is blocked in the four
 * threads, so `kill -USR2` reaches only the main thread and must change nothing.
 * Exit: 0 if no call returned EINTR, 4 if nanosleep/read/futex did, 5 if only
 * epoll_wait did, 64 usage, 71 setup or an unexpected error, 124 a thread did
 * not finish within 30 s after the end.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WAIT_TIMEOUT_S 30
#define CHUNK_S 3

enum kind { K_NANOSLEEP, K_READ, K_FUTEX, K_EPOLL, K_MAX };
static const char *const kind_name[K_MAX] = { "nanosleep", "read", "futex", "epoll_wait" };

static double deadline;
static const char *until_file;
static int pipefd[2], epfd;
static volatile int done;
static int futex_word;
static volatile int eintr[K_MAX], errors;
static volatile sig_atomic_t usr2_count;

static double monotonic_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Time left before the end, capped at CHUNK_S; 0 once past the end. */
static double chunk_left(void)
{
	if (until_file)
		return done ? 0 : CHUNK_S;
	double left = deadline - monotonic_seconds();

	return left <= 0 ? 0 : left > CHUNK_S ? CHUNK_S : left;
}

static struct timespec to_timespec(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	return ts;
}

static void unexpected(enum kind k, int err)
{
	fprintf(stderr, "sleeper: %s: %s\n", kind_name[k], strerror(err));
	__atomic_add_fetch(&errors, 1, __ATOMIC_SEQ_CST);
}

static void note_eintr(enum kind k)
{
	__atomic_add_fetch(&eintr[k], 1, __ATOMIC_SEQ_CST);
}

static void *do_nanosleep(void *arg)
{
	double left;

	(void)arg;
	while ((left = chunk_left()) > 0) {
		struct timespec ts = to_timespec(left);

		if (nanosleep(&ts, NULL) && errno == EINTR)
			note_eintr(K_NANOSLEEP);
	}
	return NULL;
}

static void *do_read(void *arg)
{
	char c;
	ssize_t n;

	(void)arg;
	for (;;) {
		n = read(pipefd[0], &c, 1);
		if (n >= 0)
			break; /* the end-of-run byte (or EOF) */
		if (errno == EINTR) {
			note_eintr(K_READ);
			continue;
		}
		unexpected(K_READ, errno);
		break;
	}
	return NULL;
}

static void *do_futex(void *arg)
{
	double left;

	(void)arg;
	while (!__atomic_load_n(&futex_word, __ATOMIC_SEQ_CST) && (left = chunk_left()) > 0) {
		struct timespec ts = to_timespec(left);

		if (syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0) == 0)
			continue;
		if (errno == EINTR)
			note_eintr(K_FUTEX);
		else if (errno != EAGAIN && errno != ETIMEDOUT)
			unexpected(K_FUTEX, errno);
	}
	return NULL;
}

static void *do_epoll(void *arg)
{
	struct epoll_event ev;
	double left;

	(void)arg;
	while (!done && (left = chunk_left()) > 0) {
		int n = epoll_wait(epfd, &ev, 1, (int)(left * 1000) + 1);

		if (n > 0)
			break; /* the end-of-run byte arrived */
		if (n < 0 && errno == EINTR)
			note_eintr(K_EPOLL);
		else if (n < 0)
			unexpected(K_EPOLL, errno);
	}
	return NULL;
}

static void on_usr2(int sig)
{
	(void)sig;
	usr2_count++;
}

int main(int argc, char **argv)
{
	static void *(*const fns[K_MAX])(void *) = { do_nanosleep, do_read, do_futex, do_epoll };
	struct epoll_event ev = { .events = EPOLLIN };
	struct sigaction sa;
	struct timespec end, join_deadline;
	pthread_t tids[K_MAX];
	sigset_t usr2;
	double wall = 6;
	char *endp;
	int err, ret = 0;

	if (argc == 3 && !strcmp(argv[1], "--until")) {
		until_file = argv[2];
	} else if (argc > 2 || (argc == 2 && ((wall = strtod(argv[1], &endp)), *endp || wall < 0))) {
		fprintf(stderr, "usage: sleeper [WALL_SECONDS | --until FILE]\n");
		return 64;
	}
	deadline = monotonic_seconds() + wall;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr2;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	epfd = epoll_create1(0);
	if (pipe(pipefd) || epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, pipefd[0], &ev) ||
	    sigaction(SIGUSR2, &sa, NULL)) {
		perror("sleeper: setup");
		return 71;
	}

	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &usr2, NULL);
	for (int k = 0; k < K_MAX; k++) {
		err = pthread_create(&tids[k], NULL, fns[k], NULL);
		if (err) {
			fprintf(stderr, "sleeper: pthread_create: %s\n", strerror(err));
			return 71;
		}
	}
	pthread_sigmask(SIG_UNBLOCK, &usr2, NULL);

	printf("%d ready\n", getpid());
	fflush(stdout);

	/* The main thread takes SIGUSR2, so EINTR here is expected: retry. */
	if (until_file) {
		struct timespec poll = { 0, 20 * 1000 * 1000 };

		while (access(until_file, F_OK) != 0)
			nanosleep(&poll, NULL);
	} else {
		end = to_timespec(deadline);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &end, NULL) == EINTR)
			;
	}

	done = 1;
	__atomic_store_n(&futex_word, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	if (write(pipefd[1], "x", 1) != 1) {
		perror("sleeper: write");
		return 71;
	}

	clock_gettime(CLOCK_REALTIME, &join_deadline);
	join_deadline.tv_sec += WAIT_TIMEOUT_S;
	for (int k = 0; k < K_MAX; k++) {
		err = pthread_timedjoin_np(tids[k], NULL, &join_deadline);
		if (err) {
			fprintf(stderr, "sleeper: %s thread still blocked %d s after the end: %s\n",
				kind_name[k], WAIT_TIMEOUT_S, strerror(err));
			return 124;
		}
	}

	for (int k = 0; k < K_MAX; k++) {
		if (!eintr[k])
			continue;
		fprintf(stderr, "sleeper: %s failed with EINTR %d time(s)\n", kind_name[k], eintr[k]);
		if (k != K_EPOLL)
			ret = 4;
		else if (!ret)
			ret = 5;
	}
	if (errors && !ret)
		ret = 71;
	return ret;
}
