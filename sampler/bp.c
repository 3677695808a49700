#include "sampler/sampler.h"

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>

/*
 * Breakpoint counters for progress points: perf_event_open with
 * PERF_TYPE_BREAKPOINT, HW_BREAKPOINT_X on one address, for one thread,
 * counting only. With sample_period 0 the kernel's hw_breakpoint handler
 * just adds 1 to the count at each debug exception: no sample, no signal,
 * no ptrace stop, so the traced thread never notices (but each visit still
 * costs a debug exception: see smp_bp_visit_cost_ns()).
 */

/* An execution breakpoint at addr of thread tid; period 0 counts, 1
 * samples every visit (created disabled then). */
static int bp_open_period(pid_t tid, uint64_t addr, bool remove_on_exec, uint64_t period)
{
	struct perf_event_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_BREAKPOINT;
	attr.bp_type = HW_BREAKPOINT_X;
	attr.bp_addr = addr;
	/* x86 accepts only sizeof(long) for execution breakpoints. */
	attr.bp_len = sizeof(long);
	attr.sample_period = period;
	attr.wakeup_events = period ? 1 : 0;
	attr.disabled = period != 0;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	/* After an exec the address means other code: the kernel drops the
	 * counter itself if psup has not closed it first (5.13+). */
	attr.remove_on_exec = remove_on_exec;
	fd = (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int bp_open(pid_t tid, uint64_t addr, bool remove_on_exec)
{
	return bp_open_period(tid, addr, remove_on_exec, 0);
}

int smp_bp_open(pid_t tid, uint64_t addr)
{
	static int have_remove_on_exec = -1; /* unknown, then 0 or 1 */
	int fd;

	if (!addr || tid <= 0)
		return -EINVAL;
	fd = bp_open(tid, addr, have_remove_on_exec != 0);
	if (fd == -EINVAL && have_remove_on_exec < 0) {
		/* A kernel before 5.13 refuses the unknown bit. */
		fd = bp_open(tid, addr, false);
		if (fd >= 0)
			have_remove_on_exec = 0;
	} else if (fd >= 0) {
		have_remove_on_exec = 1;
	}
	return fd;
}

int smp_bp_read(int fd, uint64_t *count)
{
	uint64_t v;
	ssize_t r = read(fd, &v, sizeof(v));

	if (r < 0)
		return -errno;
	if (r != sizeof(v))
		return -EIO;
	*count = v;
	return 0;
}

void smp_bp_close(int fd)
{
	if (fd >= 0)
		close(fd);
}

int smp_bp_trap_open(pid_t tid, uint64_t addr)
{
	struct f_owner_ex owner = { F_OWNER_TID, tid };
	int fd;

	if (!addr || tid <= 0)
		return -EINVAL;
	fd = bp_open_period(tid, addr, true, 1);
	if (fd < 0)
		return fd;
	/* Not perf's sigtrap: that is a forced SIGTRAP, which unblocks it in
	 * a thread that blocks it and resets the program's handler. */
	if (fcntl(fd, F_SETOWN_EX, &owner) < 0 || fcntl(fd, F_SETSIG, smp_witch_signal()) < 0 ||
	    fcntl(fd, F_SETFL, O_ASYNC) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int smp_bp_trap_enable(int fd, bool on)
{
	if (ioctl(fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0) < 0)
		return -errno;
	return 0;
}

bool smp_bp_trap_is_ours(const siginfo_t *si, int fd)
{
	return si->si_signo == smp_witch_signal() && si->si_code == POLL_IN && si->si_fd == fd;
}

const char *smp_bp_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case ENOSPC:
		return "no free debug register in the thread (x86 has 4 per thread, shared "
		       "by breakpoint progress points, watchpoints and debuggers)";
	case ESRCH:
		return "the thread is gone";
	case EACCES:
	case EPERM:
		return "not permitted (perf_event_paranoid; run as root or set "
		       "kernel.perf_event_paranoid to 2 or less)";
	case EINVAL:
		return "the kernel refused a breakpoint at this address";
	case ENOENT:
	case EOPNOTSUPP:
		return "this kernel has no hardware breakpoint events";
	default:
		return strerror(err);
	}
}
