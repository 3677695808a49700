/*
 * Control of a thread psup holds in a ptrace stop: registers, siginfo,
 * memory, and the x86 debug registers (witch watchpoints). Called from the
 * hooks, on the supervisor thread (rule 1).
 */
#include "supervisor/supervisor-internal.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>

#include "common/log.h"
#include "common/util.h"

#ifndef PTRACE_GETSIGMASK
#define PTRACE_GETSIGMASK 0x420a
#define PTRACE_SETSIGMASK 0x420b
#endif

#define DR_OFFSET(i) ((void *)offsetof(struct user, u_debugreg[i]))
/* DR6: B0-B3 say which slot's condition was met, BS a single-step. */
#define DR6_SLOTS 0xfULL

int sup_thread_siginfo(struct sup_session *s, pid_t tid, siginfo_t *si)
{
	struct sup_thread *t = sup_thread_find(s, tid);

	if (!t)
		return -ESRCH;
	if (!t->si_valid) {
		if (ptrace(PTRACE_GETSIGINFO, tid, 0L, &t->si) < 0)
			return -errno;
		t->si_valid = true;
	}
	*si = t->si;
	return 0;
}

const struct __ptrace_syscall_info *sup_thread_syscall_info(struct sup_thread *t)
{
	if (!t->sci_valid) {
		memset(&t->sci, 0, sizeof(t->sci));
		if (ptrace(PTRACE_GET_SYSCALL_INFO, t->tid, (void *)sizeof(t->sci), &t->sci) <= 0)
			return NULL;
		t->sci_valid = true;
	}
	return &t->sci;
}

int sup_thread_regs_of(struct sup_thread *t, struct user_regs_struct *regs)
{
	if (!t->regs_valid) {
		if (ptrace(PTRACE_GETREGS, t->tid, 0L, &t->regs) < 0)
			return -errno;
		t->regs_valid = true;
	}
	*regs = t->regs;
	return 0;
}

int sup_thread_set_regs(struct sup_thread *t, const struct user_regs_struct *regs)
{
	if (ptrace(PTRACE_SETREGS, t->tid, 0L, regs) < 0) {
		t->regs_valid = false;
		return -errno;
	}
	t->regs = *regs;
	t->regs_valid = true;
	return 0;
}

int sup_thread_regs(struct sup_session *s, pid_t tid, struct user_regs_struct *regs)
{
	struct sup_thread *t = sup_thread_find(s, tid);

	return t ? sup_thread_regs_of(t, regs) : -ESRCH;
}

long sup_proc_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n;

	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n >= 0)
		return (long)n;
	if (errno != EFAULT || len <= 1)
		return -errno;
	/* The range may run into an unmapped page: read up to it. */
	uint64_t page_end = (addr | 4095) + 1;
	if (page_end - addr >= len)
		return -EFAULT;
	local.iov_len = remote.iov_len = (size_t)(page_end - addr);
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	return n < 0 ? -errno : (long)n;
}

long sup_thread_read(struct sup_session *s, pid_t tid, uint64_t addr, void *buf, size_t len)
{
	struct sup_thread *t = sup_thread_find(s, tid);

	return t ? sup_proc_read(t->pid, addr, buf, len) : -ESRCH;
}

static int peek_dr(pid_t tid, int i, uint64_t *out)
{
	long v;

	errno = 0;
	v = ptrace(PTRACE_PEEKUSER, tid, DR_OFFSET(i), 0L);
	if (errno)
		return -errno;
	*out = (uint64_t)v;
	return 0;
}

static int poke_dr(pid_t tid, int i, uint64_t v)
{
	if (ptrace(PTRACE_POKEUSER, tid, DR_OFFSET(i), (void *)(uintptr_t)v) < 0)
		return -errno;
	return 0;
}

/* DR7's LEN field encoding: 1 -> 00, 2 -> 01, 8 -> 10, 4 -> 11. */
static int dr7_len_bits(unsigned len)
{
	switch (len) {
	case 1:
		return 0;
	case 2:
		return 1;
	case 4:
		return 3;
	case 8:
		return 2;
	default:
		return -1;
	}
}

int sup_thread_watch_set(struct sup_session *s, pid_t tid, unsigned slot, uint64_t addr,
			 unsigned len, enum sup_watch_kind kind)
{
	int lenbits = dr7_len_bits(len);
	uint64_t dr7, mask;
	int err;

	if (slot >= SUP_DEBUG_SLOTS || lenbits < 0 || (addr & (len - 1)) ||
	    addr >= 0x800000000000ULL ||
	    (kind != SUP_WATCH_WRITE && kind != SUP_WATCH_READWRITE && kind != SUP_WATCH_EXEC) ||
	    (kind == SUP_WATCH_EXEC && len != 1))
		return -EINVAL;
	if (!sup_thread_find(s, tid))
		return -ESRCH;
	err = peek_dr(tid, 7, &dr7);
	if (err)
		return err;
	/* Disable the slot before moving it, so the kernel never holds an
	 * enabled breakpoint of the old length at the new address. */
	mask = (3ULL << (2 * slot)) | (0xfULL << (16 + 4 * slot));
	if (dr7 & (3ULL << (2 * slot))) {
		err = poke_dr(tid, 7, dr7 & ~mask);
		if (err)
			return err;
	}
	/* Writing an address register creates the kernel's (disabled)
	 * breakpoint for the slot; enabling it in DR7 reserves a hardware slot:
	 * either may say ENOSPC when perf breakpoints (causal progress
	 * points) took them. */
	err = poke_dr(tid, (int)slot, addr);
	if (err)
		return err;
	dr7 = (dr7 & ~mask) | (1ULL << (2 * slot)) |
	      ((uint64_t)kind << (16 + 4 * slot)) | ((uint64_t)lenbits << (18 + 4 * slot));
	err = poke_dr(tid, 7, dr7);
	if (err == -ENOSPC || err == -EINVAL)
		pr_debug("thread %d: debug register %u: %s", tid, slot, strerror(-err));
	return err;
}

int sup_thread_watch_clear(struct sup_session *s, pid_t tid, unsigned slot)
{
	uint64_t dr7;
	int err;

	if (slot >= SUP_DEBUG_SLOTS)
		return -EINVAL;
	if (!sup_thread_find(s, tid))
		return -ESRCH;
	err = peek_dr(tid, 7, &dr7);
	if (err || !(dr7 & (3ULL << (2 * slot))))
		return err;
	return poke_dr(tid, 7, dr7 & ~(3ULL << (2 * slot)));
}

int sup_thread_debug_status(struct sup_session *s, pid_t tid, uint64_t *dr6)
{
	int err;

	if (!sup_thread_find(s, tid))
		return -ESRCH;
	err = peek_dr(tid, 6, dr6);
	if (err)
		return err;
	/* The kernel ORs trap bits into its copy of DR6 and clears it at
	 * the next debug exception; clear it here too so a later program
	 * SIGTRAP (int3, raise) never looks like one of psup's traps. */
	if (*dr6 & (DR6_SLOTS | (1ULL << 14)))
		return poke_dr(tid, 6, 0);
	return 0;
}

int sup_thread_debug_control(struct sup_session *s, pid_t tid, uint64_t *dr7)
{
	if (!sup_thread_find(s, tid))
		return -ESRCH;
	return peek_dr(tid, 7, dr7);
}

int sup_thread_set_stepping(struct sup_session *s, pid_t tid, bool on)
{
	struct sup_thread *t = sup_thread_find(s, tid);

	if (!t)
		return -ESRCH;
	if (on)
		t->flags |= SUP_THREAD_STEPPING;
	else
		t->flags &= ~SUP_THREAD_STEPPING;
	return 0;
}

void sup_session_set_own_signals(struct sup_session *s, const sigset_t *set)
{
	s->own_signals = *set;
	s->have_own_signals = true;
}

bool sup_session_is_stopping(const struct sup_session *s)
{
	return s->stopping;
}

bool sup_thread_own_signal_pending(struct sup_session *s, struct sup_thread *t)
{
	uint64_t pnd;

	/* A dying thread has nothing left to deliver to; and never loop:
	 * after a few tries the detach goes ahead. */
	if (!s->have_own_signals || (t->flags & SUP_THREAD_EXITING) || t->own_signal_waits >= 8)
		return false;
	/* SigPnd: the signals queued for the thread itself (psup's are sent
	 * to a thread: F_OWNER_TID, and the debug trap) */
	if (sup_thread_sigstate(t->tid, &pnd, NULL) < 0)
		return false;
	for (int sig = 1; sig <= 64; sig++) {
		uint64_t bit = 1ULL << (sig - 1), mask;

		if (!(pnd & bit) || sigismember(&s->own_signals, sig) != 1)
			continue;
		/* Blocked, it would never come (and kill the program once it
		 * unblocked it after psup left): unblocked until its
		 * delivery, as a drain does. */
		if (!t->mask_saved &&
		    ptrace(PTRACE_GETSIGMASK, t->tid, (void *)sizeof(mask), &mask) == 0 &&
		    (mask & bit)) {
			t->saved_mask = mask;
			t->drained_sig = sig;
			mask &= ~bit;
			if (ptrace(PTRACE_SETSIGMASK, t->tid, (void *)sizeof(mask), &mask) == 0)
				t->mask_saved = true;
		}
		t->own_signal_waits++;
		pr_debug("thread %d: psup's signal %d pending; detaching at its delivery", t->tid, sig);
		return true;
	}
	return false;
}


int sup_thread_drain_signal(struct sup_session *s, pid_t tid, int sig)
{
	struct sup_thread *t = sup_thread_find(s, tid);

	if (!t)
		return -ESRCH;
	if (sig < 1 || sig > 64)
		return -EINVAL;
	if (t->drain_sig > 0 || t->mask_saved || s->stopping)
		return 0; /* one at a time; detaching drains on its own */
	t->drain_sig = sig;
	if (ptrace(PTRACE_INTERRUPT, tid, 0L, 0L) < 0) {
		t->drain_sig = 0;
		return -errno;
	}
	return 0;
}

void sup_thread_drain_at_stop(struct sup_session *s, struct sup_thread *t, int delivered_sig)
{
	uint64_t mask;

	(void)s;
	if (t->drain_sig > 0 && !t->mask_saved) {
		int sig = t->drain_sig;
		/* -1: the interrupt stop still to come is ours (the loop
		 * restarts a call it broke). */
		t->drain_sig = -1;
		if (ptrace(PTRACE_GETSIGMASK, t->tid, (void *)sizeof(mask), &mask) < 0)
			return;
		if (!(mask & (1ULL << (sig - 1))))
			return; /* unblocked meanwhile: it comes on its own */
		t->saved_mask = mask;
		t->drained_sig = sig;
		mask &= ~(1ULL << (sig - 1));
		if (ptrace(PTRACE_SETSIGMASK, t->tid, (void *)sizeof(mask), &mask) == 0) {
			t->mask_saved = true;
			t->own_signal_waits = 0;
		}
		return;
	}
	if (t->mask_saved && delivered_sig > 0) {
		uint64_t pnd;
		/* The signal is being delivered (and consumed): the
		 * program's mask again, before it runs another instruction,
		 * once no other instance of it waits (a realtime signal
		 * queues each). Other signals stay as they were. */
		if (delivered_sig == t->drained_sig && sup_thread_sigstate(t->tid, &pnd, NULL) == 0 &&
		    (pnd & (1ULL << (delivered_sig - 1))))
			return;
		mask = t->saved_mask;
		if (ptrace(PTRACE_SETSIGMASK, t->tid, (void *)sizeof(mask), &mask) == 0 ||
		    errno == ESRCH)
			t->mask_saved = false;
		pr_trace("thread %d: drained signal %d", t->tid, delivered_sig);
	}
}

int sup_thread_sigmask(struct sup_session *s, pid_t tid, uint64_t *mask)
{
	if (!sup_thread_find(s, tid))
		return -ESRCH;
	if (ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(*mask), mask) < 0)
		return -errno;
	return 0;
}

void sup_thread_mask_restore(struct sup_thread *t)
{
	uint64_t mask = t->saved_mask;

	if (!t->mask_saved)
		return;
	if (ptrace(PTRACE_SETSIGMASK, t->tid, (void *)sizeof(mask), &mask) == 0 || errno == ESRCH)
		t->mask_saved = false;
}
