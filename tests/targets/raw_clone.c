/* raw_clone
 *
 * 1. clone(CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|
 *    CLONE_SYSVSEM) on an mmap'd stack, without pthread (no CLEARTID, no TLS):
 *    the thread spins a little, sets a flag and leaves with a raw SYS_exit.
 *    The main thread waits for the flag, then for /proc/self/task/<tid> to go
 *    away (a traced thread lingers until its tracer reaps it).
 * 2. clone(CLONE_VM) without CLONE_THREAD and with no exit signal: a new
 *    process sharing our memory; it sets a flag and exits 11. Waited with
 *    waitpid(__WALL) (plain waitpid would not see it).
 * Exit: 0 on success, 2 the CLONE_VM child did not exit 11, 3 its write was
 * not visible (memory not shared), 64 usage, 71 setup failed, 124 a wait took
 * more than 30 s (the thread never finished or was never reaped, the child
 * was never reaped).
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WAIT_TIMEOUT_S 30
#define STACK_SIZE (256 * 1024)

static volatile int thread_done, child_wrote;
static volatile unsigned long sink;

static double monotonic_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Runs with the main thread's TLS: touch nothing of libc that uses it. */
__attribute__((noipa)) static int raw_thread(void *arg)
{
	unsigned long acc = (unsigned long)arg;

	for (unsigned long i = 0; i < 20000000; i++) { acc = acc * 6364136223846793005UL + i; __asm__ volatile("" : "+r"(acc)); } /* MARK:raw_thread */
	sink = acc;
	__atomic_store_n(&thread_done, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_exit, 0); /* this thread only */
	return 0;
}

__attribute__((noipa)) static int vm_child(void *arg)
{
	(void)arg;
	__atomic_store_n(&child_wrote, 1, __ATOMIC_SEQ_CST);
	return 11; /* glibc's clone() passes it to SYS_exit */
}

static void *new_stack(void)
{
	void *stack = mmap(NULL, STACK_SIZE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);

	if (stack == MAP_FAILED) {
		perror("raw_clone: mmap");
		exit(71);
	}
	return (char *)stack + STACK_SIZE; /* stacks grow down */
}

static void wait_until(const char *what, int (*cond)(void *), void *arg)
{
	double deadline = monotonic_seconds() + WAIT_TIMEOUT_S;
	struct timespec ms = { 0, 1000000 };

	while (!cond(arg)) {
		if (monotonic_seconds() > deadline) {
			fprintf(stderr, "raw_clone: %s: not within %d s\n", what, WAIT_TIMEOUT_S);
			exit(124);
		}
		nanosleep(&ms, NULL);
	}
}

static int is_thread_done(void *arg)
{
	(void)arg;
	return __atomic_load_n(&thread_done, __ATOMIC_SEQ_CST);
}

static int is_task_gone(void *arg)
{
	return access((const char *)arg, F_OK) && errno == ENOENT;
}

static int child_status;

static int is_child_reaped(void *arg)
{
	pid_t pid = *(pid_t *)arg;
	pid_t got = waitpid(pid, &child_status, WNOHANG | __WALL);

	if (got < 0 && errno != EINTR) {
		perror("raw_clone: waitpid");
		exit(71);
	}
	return got == pid;
}

int main(int argc, char **argv)
{
	char task_path[64];
	pid_t tid, pid;

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "usage: raw_clone\n");
		return 64;
	}

	tid = clone(raw_thread, new_stack(),
		    CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM, (void *)1UL);
	if (tid < 0) {
		perror("raw_clone: clone(CLONE_THREAD)");
		return 71;
	}
	wait_until("raw thread finished its work", is_thread_done, NULL);
	snprintf(task_path, sizeof(task_path), "/proc/self/task/%d", tid);
	wait_until("raw thread gone from /proc/self/task", is_task_gone, task_path);

	pid = clone(vm_child, new_stack(), CLONE_VM, NULL);
	if (pid < 0) {
		perror("raw_clone: clone(CLONE_VM)");
		return 71;
	}
	wait_until("CLONE_VM child reaped with __WALL", is_child_reaped, &pid);
	if (!WIFEXITED(child_status) || WEXITSTATUS(child_status) != 11) {
		fprintf(stderr, "raw_clone: CLONE_VM child: status 0x%x, expected exit 11\n", child_status);
		return 2;
	}
	if (!child_wrote) {
		fprintf(stderr, "raw_clone: CLONE_VM child's write not visible to the parent\n");
		return 3;
	}
	return 0;
}
