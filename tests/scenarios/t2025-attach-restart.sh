#!/usr/bin/env bash
# Scenario 7, the calls the kernel never restarts after a stop (signal(7)):
# semop, semtimedop, sigwaitinfo, epoll_wait. Attaching and detaching twice
# must not make any of them fail with EINTR.
. "$(dirname "$0")/lib.sh"
cd "$WORK"
cat >rs.c <<'C'
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <unistd.h>
static int sem, pipefd[2], failures;
static void bad(const char *what)
{
	fprintf(stderr, "rs: %s failed: %s\n", what, strerror(errno));
	__atomic_add_fetch(&failures, 1, __ATOMIC_SEQ_CST);
}
static void *t_semop(void *a)
{
	struct sembuf op = { 0, -1, 0 };
	(void)a;
	if (semop(sem, &op, 1) < 0)
		bad("semop");
	return NULL;
}
static void *t_semtimedop(void *a)
{
	struct sembuf op = { 1, -1, 0 };
	struct timespec ts = { 60, 0 };
	(void)a;
	if (semtimedop(sem, &op, 1, &ts) < 0)
		bad("semtimedop");
	return NULL;
}
static void *t_epoll(void *a)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	int ep = epoll_create1(0);
	(void)a;
	epoll_ctl(ep, EPOLL_CTL_ADD, pipefd[0], &ev);
	if (epoll_wait(ep, &out, 1, 60000) != 1)
		bad("epoll_wait");
	return NULL;
}
int main(void)
{
	pthread_t t[3];
	sigset_t set;
	siginfo_t si;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	sem = semget(IPC_PRIVATE, 2, 0600);
	if (sem < 0 || pipe(pipefd) < 0)
		return 71;
	pthread_create(&t[0], NULL, t_semop, NULL);
	pthread_create(&t[1], NULL, t_semtimedop, NULL);
	pthread_create(&t[2], NULL, t_epoll, NULL);
	printf("%d ready\n", (int)getpid());
	fflush(stdout);
	if (sigwaitinfo(&set, &si) != SIGUSR2)
		bad("sigwaitinfo");
	struct sembuf up[2] = { { 0, 1, 0 }, { 1, 1, 0 } };
	semop(sem, up, 2);
	if (write(pipefd[1], "x", 1) != 1)
		return 71;
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	semctl(sem, 0, IPC_RMID);
	return failures ? 4 : 0;
}
C
gcc -O1 -pthread -o rs rs.c || fail "cannot compile"
start_bg ./rs
sleep 0.3
for i in 1 2; do
	run_psup 30 attach -q -f -d 0.5 -o r.cbor $BG
	expect_rc 0
done
kill -USR2 $BG
wait $BG
rc=$?
[ $rc -eq 0 ] || { cat "$WORK/bg.err" >&2; fail "calls were interrupted (exit $rc)"; }
