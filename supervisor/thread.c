#include "supervisor/supervisor-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

struct sup_thread *sup_thread_find(struct sup_session *s, pid_t tid)
{
	uint64_t *v = psup_u64map_find(&s->threads, (uint64_t)tid);

	return v ? (struct sup_thread *)(uintptr_t)*v : NULL;
}

struct sup_process *sup_process_find(struct sup_session *s, pid_t pid)
{
	uint64_t *v = psup_u64map_find(&s->procs, (uint64_t)pid);

	return v ? (struct sup_process *)(uintptr_t)*v : NULL;
}

struct sup_process *sup_process_get(struct sup_session *s, pid_t pid)
{
	bool created;
	uint64_t *v = psup_u64map_upsert(&s->procs, (uint64_t)pid, &created);

	if (!v)
		return NULL;
	if (created) {
		struct sup_process *p = calloc(1, sizeof(*p));
		if (!p) {
			/* Leave no NULL value behind: the map has no delete, so
			 * store a sentinel-free entry by retrying later. */
			*v = 0;
			return NULL;
		}
		p->pid = pid;
		*v = (uintptr_t)p;
	}
	return (struct sup_process *)(uintptr_t)*v;
}

struct sup_thread *sup_thread_add(struct sup_session *s, pid_t tid, pid_t pid, pid_t parent)
{
	struct sup_thread *t = sup_thread_find(s, tid);
	struct sup_process *p;
	uint64_t *v;

	if (t)
		return t;
	p = sup_process_get(s, pid);
	if (!p)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	v = psup_u64map_upsert(&s->threads, (uint64_t)tid, NULL);
	if (!v) {
		free(t);
		return NULL;
	}
	t->tid = tid;
	t->pid = pid;
	t->parent = parent;
	*v = (uintptr_t)t;
	/* Its first thread (a new process, or one that reuses the pid of a
	 * process psup let go of; an exec's survivor, whose exec stopped):
	 * its execs stop until first_stop_options() says otherwise. */
	if (!p->nthreads)
		p->exec_stops_from = 0;
	p->nthreads++;
	p->ended = false;
	s->nthreads++;
	pr_trace("thread %d (process %d, parent %d) added", tid, pid, parent);
	return t;
}

void sup_thread_report(struct sup_session *s, struct sup_thread *t, bool new_process)
{
	if (t->flags & SUP_THREAD_REPORTED)
		return;
	t->flags |= SUP_THREAD_REPORTED;
	if (s->hooks.thread_new)
		s->hooks.thread_new(s->hooks.arg, t->tid, t->pid, t->parent, new_process);
}

void sup_thread_remove(struct sup_session *s, struct sup_thread *t, bool exited)
{
	struct sup_process *p = sup_process_find(s, t->pid);

	pr_trace("thread %d (process %d) removed", t->tid, t->pid);
	if (t->flags & SUP_THREAD_AWAIT_CREATOR)
		s->awaiting--;
	if ((t->flags & SUP_THREAD_REPORTED) && s->hooks.thread_gone)
		s->hooks.thread_gone(s->hooks.arg, t->tid, t->pid, exited);
	psup_u64map_remove(&s->threads, (uint64_t)t->tid);
	if (p && p->nthreads)
		p->nthreads--;
	s->nthreads--;
	free(t->stack);
	free(t);
}

static long status_field(const char *status, const char *key)
{
	const char *line = strstr(status, key);

	return line ? strtol(line + strlen(key), NULL, 10) : -1;
}

static uint64_t status_mask(const char *status, const char *key)
{
	const char *line = strstr(status, key);

	return line ? strtoull(line + strlen(key), NULL, 16) : 0;
}

int sup_proc_status(pid_t tid, struct sup_proc_status *out)
{
	char path[64], *buf;
	const char *state;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	err = psup_read_file(path, &buf, NULL);
	if (err < 0)
		return err;
	out->tgid = (pid_t)status_field(buf, "\nTgid:");
	out->ppid = (pid_t)status_field(buf, "\nPPid:");
	out->tracer = (pid_t)status_field(buf, "\nTracerPid:");
	out->uid = status_field(buf, "\nUid:");
	out->signal_pending = false;
	for (const char *p = buf; (p = strstr(p, "Pnd:")); p += 4)
		if (strtoull(p + 4, NULL, 16))
			out->signal_pending = true;
	out->sigpnd = status_mask(buf, "\nSigPnd:");
	out->sigblk = status_mask(buf, "\nSigBlk:");
	out->shdpnd = status_mask(buf, "\nShdPnd:");
	out->sigign = status_mask(buf, "\nSigIgn:");
	out->sigcgt = status_mask(buf, "\nSigCgt:");
	out->state = '?';
	state = strstr(buf, "\nState:");
	if (state) {
		state += 7;
		while (*state == ' ' || *state == '\t')
			state++;
		out->state = *state;
	}
	free(buf);
	return 0;
}

int sup_thread_sigstate(pid_t tid, uint64_t *pending, uint64_t *blocked)
{
	struct sup_proc_status ps;
	int err = sup_proc_status(tid, &ps);

	if (err < 0)
		return err;
	if (pending)
		*pending = ps.sigpnd;
	if (blocked)
		*blocked = ps.sigblk;
	return 0;
}


int sup_thread_snapshot(struct sup_session *s, pid_t tid, struct user_regs_struct *regs,
			void *stack, size_t len)
{
	struct sup_thread *t = sup_thread_find(s, tid);
	struct iovec local = { stack, len }, remote;
	ssize_t n;

	if (!t)
		return -ESRCH;
	int err = sup_thread_regs_of(t, regs);
	if (err < 0)
		return err;
	if (!len)
		return 0;
	remote.iov_base = (void *)(uintptr_t)regs->rsp;
	remote.iov_len = len;
	n = process_vm_readv(t->pid, &local, 1, &remote, 1, 0);
	if (n < 0) {
		/* The stack may end within len: take what is mapped. */
		for (size_t part = len / 2; part >= 256 && n < 0; part /= 2) {
			local.iov_len = remote.iov_len = part;
			n = process_vm_readv(t->pid, &local, 1, &remote, 1, 0);
		}
	}
	if (n <= 0)
		return 0;
	if (t->stack_cap < (size_t)n) {
		unsigned char *b = realloc(t->stack, (size_t)n);

		if (!b)
			return (int)n;
		t->stack = b;
		t->stack_cap = (size_t)n;
	}
	memcpy(t->stack, stack, (size_t)n);
	t->stack_addr = regs->rsp;
	t->stack_len = (size_t)n;
	t->stack_valid = true;
	return (int)n;
}

long sup_thread_read_stack(struct sup_session *s, pid_t tid, uint64_t addr, void *buf, size_t len)
{
	struct sup_thread *t = sup_thread_find(s, tid);

	if (t && t->stack_valid && addr >= t->stack_addr &&
	    addr - t->stack_addr <= t->stack_len && len <= t->stack_len - (addr - t->stack_addr)) {
		memcpy(buf, t->stack + (addr - t->stack_addr), len);
		return (long)len;
	}
	return sup_thread_read(s, tid, addr, buf, len);
}

/* Whether process pid descends from ancestor (itself included), by /proc's
 * parent links. */
bool sup_proc_descends_from(pid_t pid, pid_t ancestor)
{
	for (int depth = 0; pid > 1 && depth < 64; depth++) {
		struct sup_proc_status ps;

		if (pid == ancestor)
			return true;
		if (sup_proc_status(pid, &ps) < 0)
			return false;
		pid = ps.ppid;
	}
	return false;
}
