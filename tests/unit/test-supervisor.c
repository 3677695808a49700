/* The stop classifier, fed wait statuses built as the kernel builds them. */
#include "supervisor/supervisor.h"

#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "tests/unit/tap.h"

#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif

static int stopped(int sig, int event)
{
	return (event << 16) | (sig << 8) | 0x7f;
}

static void check(int status, enum sup_stop_kind kind, int sig)
{
	struct sup_stop st;

	sup_stop_classify(status, &st);
	CHECK_EQ_INT(st.kind, kind);
	CHECK_EQ_INT(st.sig, sig);
}

/* /proc of a thread (supervisor/procfs.c): the state after the last ')'
 * of a name that may hold any byte, the name, the system call slept in. */
static void test_procfs(void)
{
	char comm[16], state = 0;
	struct sup_syscall sc = { .nr = 0 };
	pid_t child;

	CHECK_EQ_INT(sup_proc_stat_state("1234 (app) S 1 1234"), 'S');
	CHECK_EQ_INT(sup_proc_stat_state("1234 (a) R (b) D 1 1234"), 'D');
	CHECK_EQ_INT(sup_proc_stat_state("1234 (x y) R 1"), 'R');
	CHECK_EQ_INT(sup_proc_stat_state("1234 (app)"), '?');
	CHECK_EQ_INT(sup_proc_stat_state("no parenthesis"), '?');
	CHECK(sup_proc_state(getpid(), &state) == 0);
	CHECK_EQ_INT(state, 'R');
	CHECK(sup_proc_comm(getpid(), comm, sizeof(comm)) == 0);
	CHECK(!strcmp(comm, "test-supervisor"));
	CHECK(sup_proc_state(-1, &state) < 0);
	CHECK(sup_proc_comm(-1, comm, sizeof(comm)) < 0 && comm[0] == '\0');
	child = fork();
	if (child == 0) {
		for (;;)
			pause();
	}
	CHECK(child > 0);
	/* asleep in pause() within a few seconds, however loaded the machine */
	for (int i = 0; i < 500 && !(sup_proc_state(child, &state) == 0 && state == 'S'); i++)
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	CHECK_EQ_INT(state, 'S');
	for (int i = 0; i < 500 && !(sup_thread_syscall(child, child, &sc) == 0 && sc.nr == SYS_pause); i++)
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	CHECK_EQ_INT(sc.nr, SYS_pause);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

int main(void)
{
	struct sup_stop st;

	test_procfs();

	sup_stop_classify(W_EXITCODE(3, 0), &st);
	CHECK_EQ_INT(st.kind, SUP_STOP_EXITED);
	CHECK_EQ_INT(st.status, 3);
	sup_stop_classify(W_EXITCODE(0, SIGSEGV) | 0x80, &st);
	CHECK_EQ_INT(st.kind, SUP_STOP_KILLED);
	CHECK_EQ_INT(st.sig, SIGSEGV);
	CHECK(st.core);
	sup_stop_classify(W_EXITCODE(0, SIGKILL), &st);
	CHECK(!st.core);

	/* Signal-delivery stops: the signal is to be injected, SIGTRAP too. */
	check(stopped(SIGUSR1, 0), SUP_STOP_SIGNAL, SIGUSR1);
	check(stopped(SIGTRAP, 0), SUP_STOP_SIGNAL, SIGTRAP);
	check(stopped(SIGSTOP, 0), SUP_STOP_SIGNAL, SIGSTOP);
	/* TRACESYSGOOD syscall stops. */
	check(stopped(SIGTRAP | 0x80, 0), SUP_STOP_SYSCALL, 0);

	/* Under SEIZE: group-stops carry the stop signal, the rest SIGTRAP. */
	check(stopped(SIGSTOP, PTRACE_EVENT_STOP), SUP_STOP_GROUP, SIGSTOP);
	check(stopped(SIGTSTP, PTRACE_EVENT_STOP), SUP_STOP_GROUP, SIGTSTP);
	check(stopped(SIGTTIN, PTRACE_EVENT_STOP), SUP_STOP_GROUP, SIGTTIN);
	check(stopped(SIGTTOU, PTRACE_EVENT_STOP), SUP_STOP_GROUP, SIGTTOU);
	check(stopped(SIGTRAP, PTRACE_EVENT_STOP), SUP_STOP_EVENT_STOP, SIGTRAP);

	/* Event stops never inject anything. */
	check(stopped(SIGTRAP, PTRACE_EVENT_CLONE), SUP_STOP_CLONE, 0);
	check(stopped(SIGTRAP, PTRACE_EVENT_FORK), SUP_STOP_FORK, 0);
	check(stopped(SIGTRAP, PTRACE_EVENT_VFORK), SUP_STOP_VFORK, 0);
	check(stopped(SIGTRAP, PTRACE_EVENT_VFORK_DONE), SUP_STOP_VFORK_DONE, 0);
	check(stopped(SIGTRAP, PTRACE_EVENT_EXEC), SUP_STOP_EXEC, 0);
	check(stopped(SIGTRAP, PTRACE_EVENT_EXIT), SUP_STOP_EXIT, 0);
	check(stopped(SIGTRAP, PTRACE_EVENT_SECCOMP), SUP_STOP_SECCOMP, 0);
	sup_stop_classify(stopped(SIGTRAP, 77), &st);
	CHECK_EQ_INT(st.kind, SUP_STOP_UNKNOWN);

	CHECK(sup_sig_is_stop(SIGSTOP) && sup_sig_is_stop(SIGTSTP));
	CHECK(!sup_sig_is_stop(SIGCONT) && !sup_sig_is_stop(SIGTRAP));
	for (int k = SUP_STOP_EXITED; k <= SUP_STOP_UNKNOWN; k++)
		CHECK(sup_stop_kind_name((enum sup_stop_kind)k)[0] != '\0');
	return tap_done();
}
