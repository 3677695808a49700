/*
 * The seccomp filter of causal profiling (run mode): which system calls stop
 * the thread for the supervisor. Coz (section 3.4.2, tables 1 and 2) makes a
 * thread execute its owed delays before any call that can wake another
 * thread or block on one, and credits it after a blocking one returns. Every
 * stop costs tens of microseconds on these machines (docs/notes.md), so the
 * filter is as narrow as that rule allows: futex operations that block or
 * wake (not FUTEX_FD or the like; --no-wake-stops leaves the wakes out: psup
 * learns who woke whom from wakeup records, and the woken thread takes over
 * its waker's debt instead, experiments/causal.c; --no-futex-stops leaves the
 * waits out too: a blocked thread is credited from its block and switch
 * records), futex_waitv, the calls
 * that send a signal to a thread or process (a wakeup in Coz's table 1),
 * sigtimedwait and sigsuspend (table 2), and exit of a thread (it wakes its
 * joiner through CLONE_CHILD_CLEARTID; left out where wakeup records tell
 * that wake, and the joiner takes over the thread's debt), and the calls
 * that block on I/O or time (paid before, never credited: see other_calls).
 */
#include "supervisor/supervisor.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/kcompat.h"
#include "common/util.h"

/* Futex commands that can block the caller (left out with
 * SUP_SPAWN_CAUSAL_NO_FUTEX), and those that wake another thread (left out
 * when the engine learns who woke whom from wakeup records instead:
 * SUP_SPAWN_CAUSAL_NO_WAKES). */
/* clang-format off */
static const unsigned futex_waits[] = {
	FUTEX_WAIT, FUTEX_LOCK_PI, FUTEX_WAIT_BITSET, FUTEX_WAIT_REQUEUE_PI, FUTEX_LOCK_PI2,
};
/* clang-format on */
/* clang-format off */
static const unsigned futex_wakes[] = {
	FUTEX_WAKE, FUTEX_REQUEUE, FUTEX_CMP_REQUEUE, FUTEX_WAKE_OP, FUTEX_UNLOCK_PI,
	FUTEX_WAKE_BITSET, FUTEX_CMP_REQUEUE_PI,
};
/* clang-format on */

/* Other calls that stop, whatever their arguments. A thread's exit first:
 * it is left out where its joiner's wake-up is told by the records
 * (SUP_SPAWN_CAUSAL_NO_EXIT). */
/* clang-format off */
static const int other_calls[] = {
	SYS_exit, SYS_futex_waitv, SYS_kill, SYS_tkill, SYS_tgkill, SYS_rt_sigqueueinfo,
	SYS_rt_tgsigqueueinfo, SYS_rt_sigtimedwait, SYS_rt_sigsuspend,
	/* Calls that block on I/O or time. Not credited (Coz 3.4.1: the
	 * delays that accumulate while a thread waits for I/O are added when
	 * it resumes), but paid before: a thread that runs in short bursts
	 * between them is almost never seen running by the pause timer, so
	 * without these stops it ended experiments with its debt unpaid and
	 * the inserted delay subtracted from the duration anyway (a phantom
	 * speedup of every line beside an I/O-paced thread). Paying before
	 * the wait or after it delays the thread the same. */
	SYS_nanosleep, SYS_clock_nanosleep, SYS_pause, SYS_poll, SYS_ppoll, SYS_select,
	SYS_pselect6, SYS_epoll_wait, SYS_epoll_pwait, SYS_read, SYS_readv, SYS_recvfrom,
	SYS_recvmsg, SYS_accept, SYS_accept4, SYS_wait4, SYS_waitid,
};
/* clang-format on */

#define NOTHER PSUP_ARRAY_SIZE(other_calls)

/* The futex commands that stop, waits first: how many, and the k-th. */
static size_t nfutex(bool waits, bool wakes)
{
	return (waits ? PSUP_ARRAY_SIZE(futex_waits) : 0) + (wakes ? PSUP_ARRAY_SIZE(futex_wakes) : 0);
}

static unsigned futex_cmd(bool waits, size_t k)
{
	size_t nw = waits ? PSUP_ARRAY_SIZE(futex_waits) : 0;

	return k < nw ? futex_waits[k] : futex_wakes[k - nw];
}

bool sup_seccomp_traps(int nr, const uint64_t args[6], bool waits, bool wakes, bool exits)
{
	if (nr == SYS_futex) {
		unsigned cmd = (unsigned)args[1] & FUTEX_CMD_MASK;
		for (size_t i = 0; i < nfutex(waits, wakes); i++)
			if (cmd == futex_cmd(waits, i))
				return true;
		return false;
	}
	for (size_t i = exits ? 0 : 1; i < NOTHER; i++)
		if (nr == other_calls[i])
			return true;
	return false;
}

int sup_seccomp_filter(struct sock_fprog **out, bool waits, bool wakes, bool exits)
{
	/* Layout: arch check, nr dispatch to TRACE or the futex op check,
	 * ALLOW, TRACE. Jumps are relative, computed from the final layout. */
	size_t nf = nfutex(waits, wakes), first = exits ? 0 : 1, no = NOTHER - first;
	size_t n = 4 + 1 + no + 1 + 2 + nf + 1 + 1;
	struct sock_filter *f = calloc(n, sizeof(*f));
	struct sock_fprog *prog = malloc(sizeof(*prog));
	size_t i = 0, allow, trace, futex_check;

	if (!f || !prog) {
		free(f);
		free(prog);
		return -ENOMEM;
	}
	/* Positions of the shared targets. */
	futex_check = 4 + 1 + no + 1;
	allow = futex_check + 2 + nf;
	trace = allow + 1;

	f[i++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0,
					    (unsigned char)(allow - i - 1));
	i++;
	f[i++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	/* x32 calls (bit 30) are never ours. */
	f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u,
					    (unsigned char)(allow - i - 1), 0);
	i++;
	f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_futex,
					    (unsigned char)(futex_check - i - 1), 0);
	i++;
	for (size_t k = first; k < NOTHER; k++, i++)
		f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)other_calls[k],
						    (unsigned char)(trace - i - 1), 0);
	f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA, (unsigned)(allow - i - 1), 0, 0);
	i++;
	/* futex_check: the op is the low word of args[1] (little endian). */
	f[i++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, args[1]));
	f[i++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, FUTEX_CMD_MASK);
	for (size_t k = 0; k < nf; k++, i++)
		f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, futex_cmd(waits, k),
						    (unsigned char)(trace - i - 1), 0);
	/* allow */
	f[i++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	/* trace */
	f[i++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE | SUP_SECCOMP_DATA);
	if (i != n) {
		free(f);
		free(prog);
		return -EINVAL;
	}
	prog->len = (unsigned short)n;
	prog->filter = f;
	*out = prog;
	return 0;
}

int sup_seccomp_install(const struct sock_fprog *prog)
{
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog) == 0)
		return 0;
	if (errno != EACCES)
		return -errno;
	/* Unprivileged: the kernel wants NO_NEW_PRIVS (a setuid program then
	 * runs without its privileges; README says so). */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog) < 0)
		return -errno;
	return 0;
}

/*
 * A program that traces its own children (strace, gdb, a sandbox) fails
 * under psup, which traces every child already: PTRACE_TRACEME or the
 * ATTACH/SEIZE of a child gave EPERM (issue 22 item 8). This filter stops
 * those three requests for psup (nested.c), which lets go of the thread
 * the program wants before its call runs. Every other call, ptrace's other
 * requests included, is allowed by the filter at no more than its run.
 */
int sup_seccomp_ptrace_filter(struct sock_fprog **out)
{
	/* clang-format off */
	static const struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 6),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ptrace, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PTRACE_TRACEME, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PTRACE_ATTACH, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PTRACE_SEIZE, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE | SUP_SECCOMP_PTRACE_DATA),
	};
	/* clang-format on */
	struct sock_filter *f = malloc(sizeof(code));
	struct sock_fprog *prog = malloc(sizeof(*prog));

	if (!f || !prog) {
		free(f);
		free(prog);
		return -ENOMEM;
	}
	memcpy(f, code, sizeof(code));
	prog->len = (unsigned short)PSUP_ARRAY_SIZE(code);
	prog->filter = f;
	*out = prog;
	return 0;
}

int sup_seccomp_install_privileged(const struct sock_fprog *prog)
{
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog) == 0)
		return 0;
	return -errno;
}
