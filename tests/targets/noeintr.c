/*
 * One thread per blocking system call that signal(7) names as never
 * restarted after a stop or a handler (the socket calls with SO_RCVTIMEO /
 * SO_SNDTIMEO, the multiplexers, the sleeps, the signal waits, System V IPC,
 * io_getevents), and a few restartable ones beside them (a pipe read,
 * wait4, futex). Each thread makes its call again and again; the calls with
 * a timeout time out (200 ms), the others block until the end. A call that
 * fails with EINTR is counted as a failure unless this program's own
 * SIGUSR1 handler ran in that thread meanwhile: psup's attach, detach or
 * pause must never be the cause (docs/ptrace-rules.md rule 12, scenario 7).
 *
 * usage: noeintr [SECONDS]
 * Without SECONDS: prints "PID ready" once every thread made its call,
 * runs until SIGUSR2. With SECONDS: runs that long (a spinning thread gives
 * psup samples and lines to experiment on). Then every thread is woken by
 * SIGUSR1 and joined; exit 0, or 4 after an EINTR (each named on stderr).
 */

#include <errno.h>
#include <linux/aio_abi.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/select.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_MS 200

static volatile int stop;
static int failures, started;
static __thread volatile sig_atomic_t handled;
static char sockdir[64];
static int sem, msq, wait_pipe[2], read_pipe[2];
static volatile unsigned spin_sink;

static void on_usr1(int sig)
{
	(void)sig;
	handled++;
}

static const struct timeval tv = { 0, TIMEOUT_MS * 1000 };

static void set_timeouts(int fd)
{
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0) {
		perror("noeintr: setsockopt");
		exit(71);
	}
}

/* A connected pair whose ends time out; full: fd[0] cannot send. */
static void pair(int fd[2], int full)
{
	int small = 4096;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, fd) < 0) {
		perror("noeintr: socketpair");
		exit(71);
	}
	set_timeouts(fd[0]);
	set_timeouts(fd[1]);
	if (full) {
		char buf[4096] = { 0 };
		setsockopt(fd[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
		while (send(fd[0], buf, sizeof(buf), MSG_DONTWAIT) > 0)
			;
	}
}

static int listener(const char *name, int backlog, struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s", sockdir, name);
	if (fd < 0 || bind(fd, (struct sockaddr *)sa, sizeof(*sa)) < 0 || listen(fd, backlog) < 0) {
		perror("noeintr: listen");
		exit(71);
	}
	set_timeouts(fd);
	return fd;
}

enum call {
	C_ACCEPT, C_ACCEPT4, C_RECV, C_RECVFROM, C_RECVMSG, C_RECVMMSG, C_READ_SOCK, C_READV_SOCK,
	C_SEND, C_SENDTO, C_SENDMSG, C_SENDMMSG, C_WRITE_SOCK, C_WRITEV_SOCK, C_CONNECT,
	C_EPOLL_WAIT, C_EPOLL_PWAIT, C_POLL, C_PPOLL, C_SELECT, C_PSELECT, C_NANOSLEEP,
	C_CLOCK_NANOSLEEP, C_CLOCK_NANOSLEEP_ABS, C_PAUSE, C_SIGSUSPEND, C_SIGTIMEDWAIT, C_SEMOP,
	C_SEMTIMEDOP, C_MSGRCV, C_MSGSND, C_IO_GETEVENTS, C_FUTEX, C_READ_PIPE, C_WAIT4, NCALLS
};

static const char *const names[NCALLS] = {
	"accept", "accept4", "recv", "recvfrom", "recvmsg", "recvmmsg", "read (socket)",
	"readv (socket)", "send", "sendto", "sendmsg", "sendmmsg", "write (socket)",
	"writev (socket)", "connect", "epoll_wait", "epoll_pwait", "poll", "ppoll", "select",
	"pselect", "nanosleep", "clock_nanosleep", "clock_nanosleep (absolute)", "pause",
	"sigsuspend", "sigtimedwait", "semop", "semtimedop", "msgrcv", "msgsnd", "io_getevents",
	"futex", "read (pipe)", "wait4",
};

static pthread_t threads[NCALLS];
static int eintrs[NCALLS];

/* Whatever one call needs, set up once by its thread. */
struct ctx {
	int fd[2], fd2, ep;
	struct sockaddr_un sa;
	aio_context_t aio;
	unsigned futex_word;
	pid_t child;
};

static void setup(enum call c, struct ctx *x)
{
	struct epoll_event ev = { .events = EPOLLIN };

	switch (c) {
	case C_ACCEPT:
	case C_ACCEPT4:
		x->fd2 = listener(c == C_ACCEPT ? "a" : "a4", 4, &x->sa);
		break;
	case C_CONNECT: {
		/* Backlog 0 and one connection queued: the next connect waits
		 * for room, with SO_SNDTIMEO. */
		int first = socket(AF_UNIX, SOCK_STREAM, 0);
		x->fd2 = listener("c", 0, &x->sa);
		if (first < 0 || connect(first, (struct sockaddr *)&x->sa, sizeof(x->sa)) < 0) {
			perror("noeintr: first connect");
			exit(71);
		}
		break;
	}
	case C_SEND:
	case C_SENDTO:
	case C_SENDMSG:
	case C_SENDMMSG:
	case C_WRITE_SOCK:
	case C_WRITEV_SOCK:
		pair(x->fd, 1);
		break;
	case C_RECV:
	case C_RECVFROM:
	case C_RECVMSG:
	case C_RECVMMSG:
	case C_READ_SOCK:
	case C_READV_SOCK:
		pair(x->fd, 0);
		break;
	case C_EPOLL_WAIT:
	case C_EPOLL_PWAIT:
		pair(x->fd, 0);
		x->ep = epoll_create1(0);
		epoll_ctl(x->ep, EPOLL_CTL_ADD, x->fd[0], &ev);
		break;
	case C_POLL:
	case C_PPOLL:
	case C_SELECT:
	case C_PSELECT:
		pair(x->fd, 0);
		break;
	case C_IO_GETEVENTS:
		if (syscall(SYS_io_setup, 1, &x->aio) < 0)
			x->aio = 0; /* not in this kernel: the thread sleeps instead */
		break;
	case C_WAIT4:
		x->child = fork();
		if (x->child == 0) {
			char b;
			close(wait_pipe[1]);
			while (read(wait_pipe[0], &b, 1) < 0 && errno == EINTR)
				;
			_exit(0);
		}
		break;
	default:
		break;
	}
}

/* One call; returns -1 with errno on failure, as the call does. */
static long call_once(enum call c, struct ctx *x)
{
	char buf[64] = { 0 };
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct mmsghdr mm = { .msg_hdr = mh };
	struct timespec ts = { 0, TIMEOUT_MS * 1000000L };
	struct timeval t = tv;
	struct epoll_event ev;
	struct pollfd pfd = { x->fd[0], POLLIN, 0 };
	fd_set rd;
	sigset_t mask;
	long r;

	switch (c) {
	case C_ACCEPT:
		r = accept(x->fd2, NULL, NULL);
		break;
	case C_ACCEPT4:
		r = accept4(x->fd2, NULL, NULL, SOCK_CLOEXEC);
		break;
	case C_RECV:
		return recv(x->fd[0], buf, sizeof(buf), 0);
	case C_RECVFROM:
		return recvfrom(x->fd[0], buf, sizeof(buf), 0, NULL, NULL);
	case C_RECVMSG:
		return recvmsg(x->fd[0], &mh, 0);
	case C_RECVMMSG:
		return recvmmsg(x->fd[0], &mm, 1, 0, NULL);
	case C_READ_SOCK:
		return read(x->fd[0], buf, sizeof(buf));
	case C_READV_SOCK:
		return readv(x->fd[0], &iov, 1);
	case C_SEND:
		return send(x->fd[0], buf, sizeof(buf), 0);
	case C_SENDTO:
		return sendto(x->fd[0], buf, sizeof(buf), 0, NULL, 0);
	case C_SENDMSG:
		return sendmsg(x->fd[0], &mh, 0);
	case C_SENDMMSG:
		return sendmmsg(x->fd[0], &mm, 1, 0);
	case C_WRITE_SOCK:
		return write(x->fd[0], buf, sizeof(buf));
	case C_WRITEV_SOCK:
		return writev(x->fd[0], &iov, 1);
	case C_CONNECT: {
		int fd = socket(AF_UNIX, SOCK_STREAM, 0), e;
		set_timeouts(fd);
		r = connect(fd, (struct sockaddr *)&x->sa, sizeof(x->sa));
		e = errno;
		close(fd);
		errno = e;
		return r;
	}
	case C_EPOLL_WAIT:
		return epoll_wait(x->ep, &ev, 1, TIMEOUT_MS);
	case C_EPOLL_PWAIT:
		return epoll_pwait(x->ep, &ev, 1, TIMEOUT_MS, NULL);
	case C_POLL:
		return poll(&pfd, 1, TIMEOUT_MS);
	case C_PPOLL:
		return ppoll(&pfd, 1, &ts, NULL);
	case C_SELECT:
		FD_ZERO(&rd);
		FD_SET(x->fd[0], &rd);
		return select(x->fd[0] + 1, &rd, NULL, NULL, &t);
	case C_PSELECT:
		FD_ZERO(&rd);
		FD_SET(x->fd[0], &rd);
		return pselect(x->fd[0] + 1, &rd, NULL, NULL, &ts, NULL);
	case C_NANOSLEEP:
		return nanosleep(&ts, NULL);
	case C_CLOCK_NANOSLEEP:
		errno = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
		return errno ? -1 : 0;
	case C_CLOCK_NANOSLEEP_ABS: {
		struct timespec at;
		clock_gettime(CLOCK_MONOTONIC, &at);
		at.tv_nsec += TIMEOUT_MS * 1000000L;
		if (at.tv_nsec >= 1000000000L) {
			at.tv_sec++;
			at.tv_nsec -= 1000000000L;
		}
		errno = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
		return errno ? -1 : 0;
	}
	case C_PAUSE:
		return pause();
	case C_SIGSUSPEND:
		sigemptyset(&mask);
		sigaddset(&mask, SIGUSR2);
		return sigsuspend(&mask);
	case C_SIGTIMEDWAIT:
		sigemptyset(&mask);
		sigaddset(&mask, SIGRTMIN + 1); /* never sent */
		return sigtimedwait(&mask, NULL, &ts);
	case C_SEMOP: {
		struct sembuf op = { 0, -1, 0 };
		return semop(sem, &op, 1);
	}
	case C_SEMTIMEDOP: {
		struct sembuf op = { 1, -1, 0 };
		return semtimedop(sem, &op, 1, &ts);
	}
	case C_MSGRCV: {
		struct {
			long type;
			char text[8];
		} m;
		return msgrcv(msq, &m, sizeof(m.text), 2, 0); /* type 2 never comes */
	}
	case C_MSGSND: {
		struct {
			long type;
			char text[1024];
		} m = { 1, { 0 } };
		return msgsnd(msq, &m, sizeof(m.text), 0); /* the queue is full */
	}
	case C_IO_GETEVENTS: {
		struct io_event e;
		if (!x->aio)
			return nanosleep(&ts, NULL);
		return syscall(SYS_io_getevents, x->aio, 1, 1, &e, &ts);
	}
	case C_FUTEX:
		return syscall(SYS_futex, &x->futex_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
	case C_READ_PIPE:
		return read(read_pipe[0], buf, sizeof(buf));
	case C_WAIT4:
		return wait4(x->child, NULL, 0, NULL);
	default:
		return 0;
	}
	if (r >= 0)
		close((int)r);
	return r;
}

static void *caller(void *arg)
{
	enum call c = (enum call)(long)arg;
	struct ctx x;

	memset(&x, 0, sizeof(x));
	setup(c, &x);
	__atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
	while (!stop) {
		sig_atomic_t before = handled;
		long r = call_once(c, &x);
		if (r < 0 && errno == EINTR && handled == before) {
			fprintf(stderr, "noeintr: %s failed with EINTR, no signal was delivered\n",
				names[c]);
			eintrs[c]++;
			__atomic_add_fetch(&failures, 1, __ATOMIC_SEQ_CST);
		}
		if (c == C_WAIT4 && r > 0)
			break;
	}
	return NULL;
}

static void *spinner(void *arg)
{
	(void)arg;
	while (!stop)
		for (unsigned i = 0; i < 100000; i++)
			spin_sink += i * i; /* MARK:noeintr_spin */
	return NULL;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	sigset_t set;
	pthread_t spin;
	double secs = argc > 1 ? atof(argv[1]) : 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1; /* no SA_RESTART: every wait ends with EINTR */
	sigaction(SIGUSR1, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGRTMIN + 1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	snprintf(sockdir, sizeof(sockdir), "/tmp/noeintr.XXXXXX");
	if (!mkdtemp(sockdir) || pipe(wait_pipe) < 0 || pipe(read_pipe) < 0)
		return 71;
	sem = semget(IPC_PRIVATE, 2, 0600);
	msq = msgget(IPC_PRIVATE, 0600);
	if (sem < 0 || msq < 0)
		return 71;
	/* Fill the message queue so that msgsnd blocks. */
	struct {
		long type;
		char text[1024];
	} m = { 1, { 0 } };
	while (msgsnd(msq, &m, sizeof(m.text), IPC_NOWAIT) == 0)
		;
	for (long c = 0; c < NCALLS; c++)
		pthread_create(&threads[c], NULL, caller, (void *)c);
	while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < NCALLS)
		usleep(1000);
	if (secs > 0) {
		struct timespec t0, now;
		pthread_create(&spin, NULL, spinner, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			usleep(10000);
			clock_gettime(CLOCK_MONOTONIC, &now);
		} while ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) * 1e-9 < secs);
	} else {
		usleep(TIMEOUT_MS * 1000); /* every call made at least once */
		printf("%d ready\n", (int)getpid());
		fflush(stdout);
		siginfo_t si;
		while (sigwaitinfo(&set, &si) != SIGUSR2)
			if (errno != EINTR)
				break;
	}
	stop = 1;
	close(wait_pipe[1]);
	for (int c = 0; c < NCALLS; c++) {
		while (pthread_tryjoin_np(threads[c], NULL) == EBUSY) {
			pthread_kill(threads[c], SIGUSR1);
			usleep(2000);
		}
	}
	if (secs > 0)
		pthread_join(spin, NULL);
	semctl(sem, 0, IPC_RMID);
	msgctl(msq, IPC_RMID, NULL);
	char path[96];
	for (const char *const *n = (const char *const[]){ "a", "a4", "c", NULL }; *n; n++) {
		snprintf(path, sizeof(path), "%s/%s", sockdir, *n);
		unlink(path);
	}
	rmdir(sockdir);
	for (int c = 0; c < NCALLS; c++)
		if (eintrs[c])
			fprintf(stderr, "noeintr: %s: %d EINTR\n", names[c], eintrs[c]);
	return failures ? 4 : 0;
}
