/*
 * The recorder of psup run / psup attach: one event hub that wires the
 * supervisor's thread events to the sampler's per-thread rings, the rings'
 * samples through unwinding and symbols, and drives the modes (record.h)
 * with the results; the calling contexts and the thread records are its
 * own. It calls no mode by name.
 */
#include "builtin/record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/user.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/log.h"
#include "common/output.h"
#include "common/util.h"
#include "experiments/experiments.h"
#include "report/report.h"
#include "sampler/sampler.h"
#include "supervisor/supervisor.h"
#include "symbols/symbols.h"

#define REC_MAX_FRAMES 128
#define REC_TICK_NS (100ULL * 1000000ULL)
/* In the run's first second the tick is 10 ms: the first samples of each
 * image load its symbols and debug info (milliseconds each), and a short
 * program's samples drained only at its end made it wait for all of it
 * after its exit (docs/performance.md, "Big binaries: start-up"). */
#define REC_YOUNG_NS (1000ULL * 1000000ULL)
#define REC_YOUNG_TICK_NS (10ULL * 1000000ULL)
/* Counts are flushed every 2 s at first, then less often as the run goes on
 * (a tenth of the time elapsed, at most every 30 s): a kill of psup loses
 * little of a short run, and a long run's record grows with its distinct
 * contexts rather than with its seconds. */
#define REC_FLUSH_MIN_NS (2ULL * 1000000000ULL)
#define REC_FLUSH_MAX_NS (30ULL * 1000000000ULL)
#define REC_PROGRESS_NS (500ULL * 1000000ULL)

struct rec;

/* How long a thread told by the records waits for its creator's sample
 * before its record is written without a creation context. */
#define TOLD_CREATOR_WAIT_NS 50000000ULL

/* A creator's registers and stack, copied while it is stopped at its clone
 * event; unwound and symbolized once it runs again. */
struct rec_snapshot {
	struct smp_sample s;
	pid_t pid;
	uint8_t stack[SMP_STACK_SNAPSHOT];
};

/*
 * A ring and what writes into it: one thread's events, or with inheritance
 * (smp_thread_inherits()) also every thread created in its process since it
 * was opened. An inherited ring belongs to its process, and is closed when
 * the last traced thread of the process is gone (closing it removes the
 * copies the kernel made in those threads); a thread's own ring when the
 * thread is.
 */
struct rec_ring {
	struct rec *r;
	struct smp_thread *st;
	struct rec_ring *next, *prev;  /* every ring of r, for drain_all() */
	struct rec_ring *next_of_proc; /* an inherited ring: the process's */
};

struct rec_thread {
	struct rec *r;
	pid_t tid, pid, parent;
	struct rec_ring *ring; /* its own, or its process's inherited one */
	/* Its "thread" record waits for the creation context (see
	 * thread_record_pending()). */
	bool record_pending;
	uint64_t exiting_ns; /* when psup saw its exit stop (mono ns); 0 before, or none */
	bool reaped;         /* its death was reaped: no /proc files, no memory */
	uint64_t exit_ip;    /* its IP there: the exit call's */
	uint64_t exec_ip;    /* an exec's survivor: its IP at the exec stop (the new entry) */
	int comm_fd;         /* its /proc comm file, once it created a thread; else -1 */
	uint64_t created;
	char comm[16];
	struct rec_snapshot *creator;
	/* Its last /proc read of the call it blocks in (block_probe_nr()):
	 * when, and at which address in which call (0: running, or none). */
	uint64_t probe_ns, probe_pc;
	long probe_nr;
	bool told; /* begun from the records (no stop) */
};

struct rec_proc {
	pid_t pid;
	struct sym_space *sp;
	struct psup_u64map block_kinds; /* user ip -> exp_block_site_kind()'s word */
	bool told_unreadable;           /* warned that its maps cannot be read */
	struct rec_ring *rings;         /* inherited rings (struct rec_ring) */
	unsigned nthreads;              /* threads reported and not gone */
	pid_t exec_survivor;            /* exec'ed: the thread reported next keeps rings */
	/* Its executable mappings come as mmap records (its events are
	 * inherited ones: on_mmap()). Those after its exec's comm record
	 * (exec_pending) are the new program's, kept in next_maps until its
	 * exec stop forgets the old ones (on_exec()). */
	bool maps_told, exec_pending;
	/* Its root is not psup's (exec_file_of()): its records name files as
	 * it sees them, so its maps come from /proc; its children's too. */
	bool maps_elsewhere;
	uint64_t forked_ns; /* when psup saw its fork (0: not forked in the run) */
	/* Its exec's comm record came, and the exec has no stop to report it
	 * (sup_session_no_exec_stops()): exec_from_records() does, at the new
	 * program's first mapping; exec_ns is the comm record's time. */
	bool exec_by_records;
	uint64_t exec_ns;
	char exec_comm[16];  /* the name its exec's comm record gave it, until its survivor is reported */
	pid_t leader_parent; /* told by the records: its leader's creator, once its leader exited */
	bool exec_by_other;  /* told by the records: its exec's caller was another thread, ended */
	struct sym_map *next_maps;
	size_t nnext;
};

#define REC_ATTACH_ARGS 64

struct rec {
	const char *path;
	bool unwind;
	bool wakeups; /* every wakeup is recorded (who woke whom) */
	bool quiet;
	bool told_setid; /* warned that a setuid program ran unprivileged */
	struct rep_writer *w;
	struct smp_event *ev;
	struct exp_profile *prof; /* calling contexts, and the samples' counts */
	unsigned cpus;            /* CPUs the program may use */
	struct sup_session *sup;
	struct psup_u64map threads;          /* tid -> struct rec_thread * */
	struct rec_ring *rings;              /* every open ring but the CPUs' */
	uint64_t rings_opened, rings_shared; /* threads given events of their own, or inherited ones */
	bool inherit_refused;                /* smp_thread_open_inherited() failed once */
	char inherit_refused_why[96];        /* the refusal, for the end record */
	uint64_t own_sets_after;             /* sets opened per thread since the refusal */
	uint64_t inherit_opens;              /* smp_thread_open_inherited() calls (a test's fault) */
	uint64_t test_refuse_inherit;        /* PSUP_TEST_REFUSE_INHERIT: refuse from this call on */
	bool inherit_processes;              /* new processes inherit too (run mode, forks followed) */
	/* no_stops: rec_options.no_stops (psup run's default, --no-stops),
	 * and per-CPU inherited events allow it (rec_setup()); told: this
	 * run's session stops none of the threads and processes the root
	 * creates, the records tell them (on_task()). */
	bool no_stops, told;
	bool told_then_stopped;        /* told, then stopped after all (the end record says) */
	uint64_t threads_told;         /* threads begun from the records */
	uint64_t threads_adopted;      /* ... of them from a sample, their fork record lost */
	struct psup_u64map told_ended; /* tid -> 1: ended by its exit record (told_adopt()) */
	struct psup_u64map told_forks; /* creator tid -> the thread its last fork record made */
	bool told_over;                /* told_threads_end() ran: nothing begins any more */
	struct rec_ring *tree_ring;    /* then the root's, which every thread of the run has */
	bool program_started;          /* run mode: the run's first process exec'ed the program (attach: from the start) */
	uint64_t execs_told;           /* execs reported from records (exec_from_records()) */
	const char *per_thread_why;    /* why threads' events are their own (header) */
	uint64_t threads_seen;         /* threads ever opened (ring sizes) */
	struct psup_u64map procs;      /* pid -> struct rec_proc * */
	/* The blocking sites in files' code (sym_space_code_key() ->
	 * exp_block_site_kind()'s word): each learned once per program or
	 * library, not once per process (a fork/exec storm's every process
	 * ends at the same exit call). */
	struct psup_u64map code_sites;
	struct smp_sink sink;
	/* Sampled per CPU (smp_event_per_cpu()): one ring per CPU, whose
	 * samples of other tasks cpu_sink drops. */
	struct smp_thread **cpu_rings;
	unsigned ncpu_rings;
	struct smp_sink cpu_sink;
	pid_t self_pid;          /* psup's: its samples in the CPU rings are the observer's */
	struct smp_merge *merge; /* the CPU rings' events in time order */
	bool merging;            /* drain_cpus_until() is handing them on */
	/* lost: in the program's own rings; cpu_lost: in the CPU rings, whose
	 * losses cannot be told apart from other tasks' (psup's own). */
	uint64_t samples, lost, cpu_lost, unwind_failures, open_failures;
	uint64_t mmaps; /* mmap records: mappings told as they were made */
	bool maps_lost; /* the CPU rings lost records since the last tick: maps_reread() */
	struct rec_fork {
		pid_t parent, child;
		uint64_t at;
	} forks[256]; /* the last processes forked (fork_propagate()) */
	unsigned nforks;
	struct {
		uint64_t inode;
		unsigned dev_major, dev_minor;
		char *path;
	} exec_files[8]; /* exec_file_of() */
	unsigned nexec_files;
	uint64_t start_ns, last_flush_ns, last_progress_ns, last_mode_tick_ns;
	uint64_t tick_ns; /* the loop's tick period now (tick_period()) */
	int write_err;
	const char *mode;  /* "run" or "attach", for the header */
	char *const *argv; /* run: the command; attach: attach_argv */
	/* Attach: the process's command line from /proc (attach_argv()), its
	 * arguments pointing into it, NULL-terminated. */
	char *attach_cmdline, *attach_argv[REC_ATTACH_ARGS + 1];
	bool header_written;
	uint64_t pcs[REC_MAX_FRAMES];
	unsigned records_pending; /* threads whose record waits */
	struct rec_mode **modes;  /* in the order their hooks are called */
	unsigned nmodes;
	bool own_writer; /* w is closed (and removed on abort) here */
	struct sup_hooks hooks;
	/* The last thread reported gone, and when (before its events were
	 * closed): a process ends right after its leader's reaping. */
	pid_t last_gone;
	uint64_t last_gone_ns;
};

/* Every mode m of r that has hook h: for_each_mode(r, m, h) { ... }. */
#define for_each_mode(r, m, h) \
	for (struct rec_mode **m##_it = (r)->modes, *m; \
	     m##_it < (r)->modes + (r)->nmodes && ((m = *m##_it), 1); m##_it++) \
		if (m->h)

static int write_header(struct rec *r, pid_t pid);

static void rec_write_failed(struct rec *r, int err)
{
	if (err >= 0 || r->write_err)
		return;
	r->write_err = err;
	if (err == -ENOMEM)
		pr_err("out of memory; profiling stops, the program runs on");
	else
		pr_err("cannot write %s: %s; profiling stops, the program runs on", r->path, strerror(-err));
	/* Never harm the target for our own failure: let it go. */
	for_each_mode(r, m, stop)
		m->stop(m);
	if (r->sup)
		sup_session_request_stop(r->sup);
}

static struct rec_proc *proc_find(struct rec *r, pid_t pid)
{
	uint64_t *v = psup_u64map_find(&r->procs, (uint64_t)pid);

	return v ? (struct rec_proc *)(uintptr_t)*v : NULL;
}

static struct rec_thread *thread_find(struct rec *r, pid_t tid)
{
	uint64_t *v = psup_u64map_find(&r->threads, (uint64_t)tid);

	return v ? (struct rec_thread *)(uintptr_t)*v : NULL;
}

static struct rec_proc *proc_get(struct rec *r, pid_t pid, const struct rec_proc *parent)
{
	struct rec_proc *p = proc_find(r, pid);
	uint64_t *v;
	int err;

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	err = parent && parent->sp ? sym_space_fork(parent->sp, pid, &p->sp) : sym_space_new(pid, &p->sp);
	if (err < 0)
		pr_debug("no address space for %d: %s", pid, strerror(-err));
	v = psup_u64map_upsert(&r->procs, (uint64_t)pid, NULL);
	if (!v) {
		sym_space_free(p->sp);
		free(p);
		return NULL;
	}
	*v = (uintptr_t)p;
	return p;
}

static void proc_rings_free(struct rec *r, struct rec_proc *p);

static void next_maps_free(struct rec_proc *p)
{
	for (size_t i = 0; i < p->nnext; i++)
		free(p->next_maps[i].path);
	free(p->next_maps);
	p->next_maps = NULL;
	p->nnext = 0;
}

static void proc_drop(struct rec *r, pid_t pid)
{
	struct rec_proc *p = proc_find(r, pid);

	if (!p)
		return;
	proc_rings_free(r, p);
	psup_u64map_remove(&r->procs, (uint64_t)pid);
	exp_profile_process_end(r->prof, pid);
	sym_space_free(p->sp);
	psup_u64map_release(&p->block_kinds);
	next_maps_free(p);
	free(p);
}

static void on_sample(void *arg, const struct smp_sample *s)
{
	struct rec *r = arg;
	struct rec_proc *p;
	struct smp_sample user;
	const struct smp_sample *u = s;
	unsigned flags = 0, n = 0;

	r->samples++;
	if (r->write_err)
		return;
	p = proc_get(r, s->pid, NULL);
	if (!s->user) {
		/* Taken in a system call: the user registers say where the
		 * program entered the kernel. */
		flags |= EXP_SAMPLE_KERNEL;
		if (s->have_regs) {
			user = *s;
			user.ip = s->regs[SMP_REG_IP];
			user.user = true;
			u = &user;
		} else {
			u = NULL;
		}
	}
	if (u && r->unwind && u->have_regs && p && p->sp) {
		int k = sym_space_unwind_sample(p->sp, u, r->pcs, REC_MAX_FRAMES);
		if (k < 0) {
			r->unwind_failures++;
			r->pcs[0] = u->ip;
			n = 1;
		} else {
			/* A stack cut short keeps the frames found, and counts. */
			if (sym_space_unwind_was_cut(p->sp))
				r->unwind_failures++;
			n = (unsigned)k;
		}
	} else if (u) {
		r->pcs[0] = u->ip;
		n = 1;
	}
	struct rec_sample rs = {
		.pid = s->pid,
		.tid = s->tid,
		.sp = p ? p->sp : NULL,
		.pcs = r->pcs,
		.n = n,
		.time = s->time,
		.period = s->period,
		.cpu = s->cpu,
		.flags = flags,
	};
	for_each_mode(r, m, sample)
		rec_write_failed(r, m->sample(m, &rs));
	if (p && p->sp && !p->told_unreadable &&
	    (sym_space_maps_error(p->sp) == -EACCES || sym_space_maps_error(p->sp) == -EPERM)) {
		p->told_unreadable = true;
		pr_warn("cannot read the memory map of pid %d: it is not dumpable (an unreadable or "
			"setuid program, or prctl(PR_SET_DUMPABLE, 0)); its samples show as "
			"[not dumpable]; run psup as root",
			s->pid);
	}
}

static struct rec_thread *told_adopt(struct rec *r, pid_t pid, pid_t tid, uint64_t time);

/* The program's thread tid (of process pid) that an event of a CPU ring
 * names, NULL for another task's; told by the records, one psup does not
 * know in a process it knows begins here (told_adopt()). */
static struct rec_thread *cpu_thread(struct rec *r, pid_t pid, pid_t tid, uint64_t time)
{
	struct rec_thread *t = tid > 0 ? thread_find(r, tid) : NULL;

	return t || !r->told || tid <= 0 ? t : told_adopt(r, pid, tid, time);
}

/* A CPU ring holds every task's samples: only the program's threads' count
 * (told by the records, a thread whose fork record was lost begins here),
 * and psup's own say where the observer took a CPU (the observer hook). */
static void on_cpu_sample(void *arg, const struct smp_sample *s)
{
	struct rec *r = arg;

	if (cpu_thread(r, s->pid, s->tid, s->time)) {
		on_sample(arg, s);
		return;
	}
	if (s->pid != r->self_pid || s->cpu < 0)
		return;
	for_each_mode(r, m, observer)
		m->observer(m, s->cpu, s->time, s->period);
}

static void on_cpu_lost(void *arg, pid_t tid, uint64_t count)
{
	struct rec *r = arg;

	/* Whose samples were lost is not known: the trailer names whatever
	 * ran when the kernel wrote the record. */
	(void)tid;
	r->cpu_lost += count;
	r->maps_lost = true;
	if (!r->write_err)
		rec_write_failed(r, rep_write_lost(r->w, 0, count));
}

static void on_lost(void *arg, pid_t tid, uint64_t count)
{
	struct rec *r = arg;

	r->lost += count;
	if (!r->write_err)
		rec_write_failed(r, rep_write_lost(r->w, tid, count));
}

static void exec_from_records(struct rec *r, struct rec_proc *p);
static bool on_exec_may_run(void *arg, pid_t pid);

static void thread_new_at(struct rec *r, pid_t tid, pid_t pid, pid_t parent, bool new_process, uint64_t time,
			  bool told);
static void thread_gone_at(struct rec *r, struct rec_thread *t, bool exited, uint64_t now);
static bool thread_traced(const struct rec *r, const struct rec_thread *t);
static void told_threads_of_end(struct rec *r, pid_t pid, pid_t keep, uint64_t time, bool exited);

/*
 * Told by the records: process p execs (time: its exec's comm record). The
 * kernel ended every other thread first (their exit records came before
 * this one); where a thread other than the leader called the exec, it took
 * the process's id: the threads of p still known but the leader (the
 * caller, and any whose exit record was lost) end there. Without a leader
 * known (its exit record came), the exec's thread (by the process's id,
 * named by the exec, created by the leader's creator) begins as any exec's
 * told by the records (exec_from_records()); with one (the first process's,
 * whose exit psup does not take from the records), the leader's thread
 * becomes the new program's.
 */
static void told_exec_survivor(struct rec *r, struct rec_proc *p, uint64_t time)
{
	bool leader = thread_find(r, p->pid) != NULL;
	unsigned before = p->nthreads;

	/* (A storm's process: one thread, its leader; nothing to look for.) */
	if (before <= (leader ? 1u : 0u))
		return;
	told_threads_of_end(r, p->pid, p->pid, time, true);
	if (!leader && p->nthreads < before)
		p->exec_by_other = true;
}

/* A traced thread renamed itself (or was renamed): the record of a thread
 * still to be written carries the new name, else a rename record. An exec
 * is the exec record's. */
static void on_comm(void *arg, pid_t pid, pid_t tid, const char *name, bool exec, uint64_t time)
{
	struct rec *r = arg;
	struct rec_thread *t = thread_find(r, tid);

	if (exec) {
		/* The kernel names the process in the exec before it maps the
		 * new program's images: the mappings told from here on are the
		 * new program's. Its records until the exec stop (blocks and
		 * samples in the exec system call) still name the old one's
		 * code: the old maps stay until then (without a stop, until
		 * the new program's first mapping, exec_from_records()). */
		struct rec_proc *p = proc_find(r, pid);

		if (p && r->told)
			told_exec_survivor(r, p, time);
		if (p && p->exec_by_records)
			exec_from_records(r, p); /* the one before had no mapping told */
		if (p && p->maps_told) {
			next_maps_free(p);
			p->exec_pending = true;
		}
		if (p && name)
			snprintf(p->exec_comm, sizeof(p->exec_comm), "%s", name);
		/* (The session is gone at the last drain: nothing to tell.) */
		if (p && r->sup && (thread_find(r, pid) || p->exec_by_other) &&
		    !sup_session_exec_stops(r->sup, pid, time)) {
			p->exec_by_records = true;
			p->exec_ns = time;
			/* Its maps are read from /proc: no mapping to wait for. */
			if (!p->maps_told)
				exec_from_records(r, p);
		}
		return;
	}
	if (!t || !*name || !strncmp(t->comm, name, sizeof(t->comm)))
		return;
	snprintf(t->comm, sizeof(t->comm), "%s", name);
	if (t->record_pending || r->write_err)
		return;
	rec_write_failed(r, rep_write_thread_rename(r->w, tid, pid, t->comm));
}

/* A new process p, forked by process parent at time (its fork stop, or its
 * fork record's time): its maps are a copy of
 * what psup knows of its parent's, whose mmap records from before the fork
 * may still be in the CPU rings (the merge hands them on later). */
static void fork_note(struct rec *r, pid_t parent, struct rec_proc *p, uint64_t time)
{
	struct rec_fork *f = &r->forks[r->nforks++ % PSUP_ARRAY_SIZE(r->forks)];

	p->forked_ns = time;
	f->parent = parent;
	f->child = p->pid;
	f->at = p->forked_ns;
}

/* The k-th of the last n forks (n at most the ring's size), oldest first. */
static const struct rec_fork *fork_kept(const struct rec *r, unsigned n, unsigned k)
{
	return &r->forks[(r->nforks - n + k) % PSUP_ARRAY_SIZE(r->forks)];
}

/* m, told for process pid at time: also the mapping of the processes it
 * forked after that (and theirs), whose copies of its maps were made
 * before the record came. A dlopen() just before a fork is the child's
 * too. */
static void fork_propagate(struct rec *r, pid_t pid, uint64_t time, const struct sym_map *m)
{
	pid_t got[16];
	unsigned ngot = 0, n = r->nforks < PSUP_ARRAY_SIZE(r->forks) ? r->nforks : PSUP_ARRAY_SIZE(r->forks);
	unsigned k0 = n;

	/* The forks after time: the newest ones (the ring is in time order);
	 * mostly none, the record having come before the next fork. */
	while (k0 > 0 && fork_kept(r, n, k0 - 1)->at > time)
		k0--;
	got[ngot++] = pid;
	/* Oldest first: a grandchild after its parent. */
	for (unsigned k = k0; k < n && ngot < PSUP_ARRAY_SIZE(got); k++) {
		const struct rec_fork *f = fork_kept(r, n, k);
		struct rec_proc *c;
		bool from = false;

		for (unsigned j = 0; j < ngot && !from; j++)
			from = got[j] == f->parent;
		c = from ? proc_find(r, f->child) : NULL;
		/* (a reused pid: another process, forked at another time) */
		if (!c || c->forked_ns != f->at || !c->sp || !c->maps_told)
			continue;
		if (sym_space_map_add(c->sp, m) == 0)
			got[ngot++] = f->child;
	}
}

/* An executable mapping a process made (its inherited events' records,
 * in time order with its samples): its maps as they change, known after
 * it is gone too, without a read of /proc (a process of a fork/exec storm
 * lives shorter than the drain that names its samples). */
static void on_mmap(void *arg, const struct smp_mmap *mm)
{
	struct rec *r = arg;
	struct rec_proc *p = proc_find(r, mm->pid);
	struct sym_map m = {
		.start = mm->start,
		.end = mm->start + mm->len,
		.offset = mm->pgoff,
		.inode = mm->inode,
		.dev_major = mm->dev_major,
		.dev_minor = mm->dev_minor,
		.prot = mm->prot,
		.path = (char *)mm->path,
	};

	r->mmaps++;
	if (!p || !p->sp || !p->maps_told || m.end <= m.start)
		return;
	if (p->exec_pending) {
		struct sym_map *n = realloc(p->next_maps, (p->nnext + 1) * sizeof(*n));

		if (!n || !(m.path = strdup(mm->path))) {
			if (n)
				p->next_maps = n;
			pr_debug("mapping of %d at 0x%llx not kept", mm->pid, (unsigned long long)mm->start);
			return;
		}
		p->next_maps = n;
		p->next_maps[p->nnext++] = m;
		/* The new program's first mapping (its executable's): the exec
		 * without a stop is reported now. */
		if (p->exec_by_records)
			exec_from_records(r, p);
		return;
	}
	if (sym_space_map_add(p->sp, &m) < 0)
		pr_debug("mapping of %d at 0x%llx not kept", mm->pid, (unsigned long long)mm->start);
	fork_propagate(r, mm->pid, mm->time, &m);
}

static void on_switch(void *arg, const struct smp_switch *sw)
{
	struct rec *r = arg;

	for_each_mode(r, m, context_switch)
		rec_write_failed(r, m->context_switch(m, sw));
}

/* Whether an event of t at time (mono ns) came after its exit stop. The
 * CPU rings are drained late: a waiter's last lock waits were still in them
 * when its exit stop came, and were taken for its exit's last switch-outs
 * (t1095: 42 of 50 waits named, 4 runs in 30 under a sanitizer build). */
static bool thread_exited_by(const struct rec_thread *t, uint64_t time)
{
	return t && t->exiting_ns && time >= t->exiting_ns;
}

/* Whether b is t's switch-out into its exit stop: before psup saw the stop
 * (drained later), at the exit call's IP. No wait to name. */
static bool is_exit_switch(const struct rec_thread *t, const struct smp_block *b)
{
	return t && t->exiting_ns && b->regs[SMP_REG_IP] == t->exit_ip;
}

/* Whether b is an exec survivor's switch-out into its exec stop, at the new
 * program's entry, where it has run nothing yet: no wait to name, and naming
 * its site would read the new process's maps for it alone (they are read at
 * its exit stop anyway), the code before the entry and /proc's syscall file,
 * in every exec of a fork/exec storm. Test: t3076-process-storm-syscalls. */
static bool is_exec_switch(const struct rec *r, const struct rec_thread *t, const struct smp_block *b)
{
	uint64_t ip = b->regs[SMP_REG_IP];

	/* Drained while the exec stop is handled (the old thread's end), or
	 * later (the survivor's). */
	return ip && ((t && t->exec_ip == ip) || sup_session_exec_entry(r->sup, b->pid) == ip);
}

/* Whether t (NULL: not known) is at its exit stop or past it, or reaped:
 * its /proc files and its memory are going or gone. */
static bool thread_past_exit(const struct rec_thread *t)
{
	return t && (t->exiting_ns || t->reaped);
}

/* What a thread blocks on: the system call it made at the block sample's
 * IP, learned per address and process (exp_block_site_kind()). */
struct block_probe {
	struct rec *r;
	struct rec_proc *p;
	struct rec_thread *t; /* NULL: not known (any more) */
	const struct smp_block *b;
};

/* A thread is not read again for a while: a ring drained at once holds
 * many of its samples, and /proc says where it is now, not where each of
 * them was. Read again at once, a thread found blocked elsewhere used up
 * all of a site's first reads in one instant (Go's sysmon found in a futex
 * 16 times for its usleep's site, 1 ms into a drain every 10 ms: the
 * site's sleeps read "other" for the whole run). */
#define BLOCK_PROBE_AGAIN_NS (1000ULL * 1000ULL)

static long block_probe_nr(void *arg)
{
	const struct block_probe *bp = arg;
	struct rec_thread *t = bp->t;
	uint64_t now = psup_now_ns();
	struct sup_syscall sc;
	int err;

	if (t && t->probe_ns && now - t->probe_ns < BLOCK_PROBE_AGAIN_NS)
		return t->probe_pc && t->probe_pc == bp->b->regs[SMP_REG_IP] ? t->probe_nr : EXP_BLOCK_NR_NOT_NOW;
	/* Past its exit stop it is in exit(), not at the site: /proc would
	 * show another call (block_probe_code()); reaped, it has none. */
	if (thread_past_exit(t))
		return EXP_BLOCK_NR_UNKNOWN;
	/* Drained at its process's exec stop, a block of the old program:
	 * /proc shows the exec (and its code is gone, block_probe_code()).
	 * The site's name tells; the exec forgets the sites anyway. */
	if (sup_session_exec_entry(bp->r->sup, bp->b->pid))
		return EXP_BLOCK_NR_NOT_NOW;
	err = sup_thread_syscall(bp->b->pid, bp->b->tid, &sc);
	if (t && (err == 0 || err == -EAGAIN)) {
		t->probe_ns = now;
		t->probe_pc = err == 0 && sc.nr >= 0 ? sc.pc : 0;
		t->probe_nr = err == 0 ? sc.nr : EXP_BLOCK_NR_UNKNOWN;
	}
	if (err < 0 || sc.pc != bp->b->regs[SMP_REG_IP])
		return EXP_BLOCK_NR_UNKNOWN;
	return sc.nr;
}

static enum exp_block_kind block_probe_name(void *arg, bool *raw)
{
	const struct block_probe *bp = arg;
	enum exp_block_kind kind = EXP_BLOCK_OTHER;
	struct sym_loc loc;

	if (sym_space_resolve(bp->p->sp, bp->b->regs[SMP_REG_IP], false, &loc) < 0)
		return kind;
	for (unsigned i = 0; i < loc.nframes && kind == EXP_BLOCK_OTHER; i++)
		kind = exp_block_kind_of(loc.frames[i].function, 0, 0);
	*raw = loc.nframes && loc.frames[0].function && !strcmp(loc.frames[0].function, "syscall");
	return kind;
}

/* The code before a block's IP, from its thread's process. A thread the
 * session does not hold (told by the records: every thread but the first
 * when psup runs without stops) is read through its process id: its sites
 * in the program's own code (Go's runtime makes its system calls there)
 * were named by /proc's timing alone before (t1100: Go's sysmon, blocked
 * elsewhere at each read, had its sleeps named "other"). A process that
 * exec'd or ended since shows other bytes or none: a site misread is
 * named by its function, as when the read fails. */
static long code_read(const struct block_probe *bp, uint64_t from, uint8_t *buf, size_t len)
{
	long n = sup_thread_read(bp->r->sup, bp->b->tid, from, buf, len);

	if (n == -ESRCH && bp->t && !bp->t->reaped)
		n = sup_proc_read(bp->b->pid, from, buf, len);
	return n;
}

static size_t block_probe_code(void *arg, uint8_t *buf, size_t len)
{
	const struct block_probe *bp = arg;
	uint64_t ip = bp->b->regs[SMP_REG_IP], from = ip > len ? ip - len : 0;

	/* The session ends before the last drain (rec_end()): a process
	 * psup could not let go of in time (t3055-vfork-wait) still writes
	 * into the rings it inherited, and is traced no more. */
	if (!bp->r->sup)
		return 0;
	if (sup_session_exec_entry(bp->r->sup, bp->b->pid))
		return 0; /* the new program's memory by now */
	/* Past its exit stop its memory goes at any time: a block drained
	 * later (a short process's, at its death) is named without its code,
	 * as when the read failed (EFAULT, t3076); reaped, it has none. */
	if (thread_past_exit(bp->t))
		return 0;
	if (code_read(bp, from, buf, (size_t)(ip - from)) == (long)(ip - from))
		return (size_t)(ip - from);
	if ((ip & ~4095ULL) > from) { /* the page before may be unmapped */
		from = ip & ~4095ULL;
		if (code_read(bp, from, buf, (size_t)(ip - from)) == (long)(ip - from))
			return (size_t)(ip - from);
	}
	return 0;
}

/* Whether b's thread switched out inside a system call: its user regs' AX
 * is the kernel's placeholder (-ENOSYS) until the call returns
 * (test-sampler-blocks checks it of every FUTEX_WAIT). Anything else is a
 * preemption in user code or on the way out of a call (dropped at its
 * switch record anyway) or a fault: no call to name, and its site, a new
 * one at each preemption, is not probed (on a loaded machine a fork/exec
 * storm's processes are preempted everywhere in ld.so, and read after
 * they died, t3076). */
static bool in_syscall(const struct smp_block *b)
{
	return b->regs[SMP_REG_AX] == (uint64_t)-ENOSYS;
}

/* b of thread t (NULL: not traced, or gone). */
static void block_of(struct rec *r, struct rec_thread *t, const struct smp_block *b)
{
	struct rec_proc *p = proc_find(r, b->pid);
	uint64_t ip = b->regs[SMP_REG_IP], di = b->regs[SMP_REG_DI], si = b->regs[SMP_REG_SI];
	struct block_probe bp = { r, p, t, b };
	struct exp_block_probe probe = { block_probe_nr, block_probe_name, block_probe_code, &bp };
	enum exp_block_kind kind = EXP_BLOCK_OTHER;
	uint64_t *v, key;

	/* An exiting thread switches out into its exit stop and for the last
	 * time in exit(): no wait to name, and naming its site would load the
	 * symbols of the C library (tens of ms with its debug file) for
	 * nothing, now that the maps are read at the exit stop. Its blocks
	 * from before, drained after that stop, are named. Tests: t1101,
	 * t1095. Only a thread inside a system call waits there
	 * (in_syscall()). A site in a file's code is known from any process
	 * that ran it: a process preempted in its exit call, drained before
	 * psup saw it die, is not probed once its memory is gone (t3076).
	 * Elsewhere (JIT code) the site is the process's. */
	if (b->have_regs && p && p->sp && ip && in_syscall(b) && !thread_exited_by(t, b->time) &&
	    !is_exit_switch(t, b) && !is_exec_switch(r, t, b)) {
		key = sym_space_code_key(p->sp, ip);
		v = key ? psup_u64map_upsert(&r->code_sites, key, NULL) : psup_u64map_upsert(&p->block_kinds, ip, NULL);
		if (v)
			kind = exp_block_site_kind(v, di, si, &probe);
	}
	/* The futex word: the first argument (syscall(2) has moved it there
	 * too before entering the kernel). */
	for_each_mode(r, m, block)
		rec_write_failed(r, m->block(m, b, kind, kind == EXP_BLOCK_FUTEX ? di : 0));
}

static void on_block(void *arg, const struct smp_block *b)
{
	struct rec *r = arg;

	block_of(r, thread_find(r, b->tid), b);
}

/* A CPU ring's switch records and blocks of a thread psup does not trace
 * (a process released to a tracer of the program's own, one psup could not
 * let go of at the end: the run's inherited events go on in them until
 * they are closed) are dropped, as their samples are. */
static void on_cpu_switch(void *arg, const struct smp_switch *sw)
{
	struct rec *r = arg;

	if (cpu_thread(r, sw->pid, sw->tid, sw->time))
		on_switch(arg, sw);
}

static void on_cpu_block(void *arg, const struct smp_block *b)
{
	struct rec *r = arg;
	struct rec_thread *t = cpu_thread(r, b->pid, b->tid, b->time);

	if (t)
		block_of(r, t, b);
}

/* A traced thread woke another: if the wakee waited in a futex, the wait
 * is blamed on the waker's calling context, unwound here from the stack of
 * the wakeups that carry one (a sample of them: SMP_WAKEUP_PERIOD). */
static void on_wakeup(void *arg, const struct smp_wakeup *wk)
{
	struct rec *r = arg;
	struct rec_proc *p = proc_find(r, wk->pid);
	uint64_t node = EXP_PAR_UNSAMPLED;

	struct rec_thread *waker = thread_find(r, wk->tid);

	/* Both traced: the CPUs' wakeup events (inherited sampling) see every
	 * task's, a thread's own those of whatever interrupt ran on it. A
	 * thread past its exit stop wakes its joiner after its own events
	 * are gone, where the CPU's still see it: the join is its exit's
	 * (its tid word, record-profile.c), as without inheritance. */
	if (!thread_find(r, wk->wakee_tid) || !waker || thread_exited_by(waker, wk->time) || r->write_err)
		return;
	/* Every wakeup has an unsampled record; a sampled twin adds a stack. */
	if (wk->sampled && !(wk->have_regs && p && p->sp && r->unwind))
		return; /* no context to add: its unsampled twin reports it */
	if (wk->sampled) {
		struct smp_sample s = {
			.pid = wk->pid,
			.tid = wk->tid,
			.time = wk->time,
			.cpu = -1,
			.ip = wk->regs[SMP_REG_IP],
			.user = true,
			.have_regs = true,
			.stack = wk->stack,
			.stack_size = wk->stack_size,
		};
		int n;

		memcpy(s.regs, wk->regs, sizeof(s.regs));
		n = sym_space_unwind_sample(p->sp, &s, r->pcs, REC_MAX_FRAMES);
		if (n <= 0)
			return;
		int64_t ctx = exp_profile_context(r->prof, p->sp, wk->pid, r->pcs, (unsigned)n);
		if (ctx < 0) {
			rec_write_failed(r, (int)ctx);
			return;
		}
		if (!ctx)
			return;
		node = (uint64_t)ctx;
	}
	for_each_mode(r, m, wakeup)
		rec_write_failed(r, m->wakeup(m, wk, node));
}

static void drain_ring(struct rec *r, struct rec_ring *g)
{
	if (g && smp_thread_drain(g->st, &r->sink) < 0)
		pr_debug("drain of %d's ring failed", smp_thread_tid(g->st));
}

/* The CPU rings, before anything leaves the threads' map (their samples
 * would be dropped as another task's) or reads the threads' state; their
 * events in time order (smp_merge: an inherited thread's events are in the
 * rings of every CPU it ran on), up to horizon. */
static void drain_cpus_until(struct rec *r, uint64_t horizon)
{
	const struct smp_sink *into = r->merge ? smp_merge_sink(r->merge) : &r->cpu_sink;

	if (r->merging)
		return; /* from one of the events being handed on */
	r->merging = true;
	for (unsigned i = 0; i < r->ncpu_rings; i++)
		if (smp_thread_drain(r->cpu_rings[i], into) < 0)
			pr_debug("drain of CPU ring %u failed", i);
	if (r->merge && smp_merge_flush(r->merge, horizon, &r->cpu_sink) < 0)
		pr_warn("out of memory: events of the CPU rings were dropped");
	r->merging = false;
}

static void drain_cpus(struct rec *r)
{
	drain_cpus_until(r, psup_now_ns());
}

/* A ring past its watermark: all of them, to keep the order. */
static void on_cpu_ring(void *arg, int fd)
{
	(void)fd;
	drain_cpus(arg);
}

static void on_thread_ring(void *arg, int fd)
{
	struct rec_ring *g = arg;

	(void)fd;
	drain_ring(g->r, g);
}

/*
 * Where a thread was created: the creator's call stack. The supervisor
 * reports a new thread from its creator's clone/fork stop, so the creator is
 * ptrace-stopped: only its registers and stack are copied then (a few us).
 * Unwinding and symbolizing wait until it runs again, since a first lookup in
 * an image can take tens of ms (inflating libc's compressed debug info)
 * that the program would otherwise spend stopped.
 */
static struct rec_snapshot *snapshot_creator(struct rec *r, pid_t parent)
{
	struct rec_thread *pt = parent ? thread_find(r, parent) : NULL;
	struct user_regs_struct regs;
	struct rec_snapshot *c;
	int n;

	if (!pt || !r->sup)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	n = sup_thread_snapshot(r->sup, parent, &regs, c->stack, sizeof(c->stack));
	if (n < 0) {
		free(c);
		return NULL;
	}
	c->pid = pt->pid;
	c->s = (struct smp_sample){
		.pid = pt->pid,
		.tid = parent,
		.ip = regs.rip,
		.user = true,
		.have_regs = true,
		.stack = c->stack,
		.stack_size = (size_t)n,
	};
	c->s.regs[SMP_REG_AX] = regs.rax;
	c->s.regs[SMP_REG_BX] = regs.rbx;
	c->s.regs[SMP_REG_CX] = regs.rcx;
	c->s.regs[SMP_REG_DX] = regs.rdx;
	c->s.regs[SMP_REG_SI] = regs.rsi;
	c->s.regs[SMP_REG_DI] = regs.rdi;
	c->s.regs[SMP_REG_BP] = regs.rbp;
	c->s.regs[SMP_REG_SP] = regs.rsp;
	c->s.regs[SMP_REG_IP] = regs.rip;
	c->s.regs[SMP_REG_FLAGS] = regs.eflags;
	c->s.regs[SMP_REG_R8] = regs.r8;
	c->s.regs[SMP_REG_R9] = regs.r9;
	c->s.regs[SMP_REG_R10] = regs.r10;
	c->s.regs[SMP_REG_R11] = regs.r11;
	c->s.regs[SMP_REG_R12] = regs.r12;
	c->s.regs[SMP_REG_R13] = regs.r13;
	c->s.regs[SMP_REG_R14] = regs.r14;
	c->s.regs[SMP_REG_R15] = regs.r15;
	return c;
}

/* The creation context's node, 0 when unknown. */
static uint64_t creation_context(struct rec *r, const struct rec_snapshot *c)
{
	struct rec_proc *pp = c ? proc_find(r, c->pid) : NULL;
	int n;

	if (!pp || !pp->sp || !r->unwind)
		return 0;
	n = sym_space_unwind_sample(pp->sp, &c->s, r->pcs, REC_MAX_FRAMES);
	if (n <= 0)
		return 0;
	int64_t node = exp_profile_context(r->prof, pp->sp, c->pid, r->pcs, (unsigned)n);
	return node > 0 ? (uint64_t)node : 0;
}

/* Writes the "thread" record of t, with its creation context. */
static void thread_record(struct rec *r, struct rec_thread *t)
{
	struct rep_thread rt = {
		.tid = t->tid,
		.pid = t->pid,
		.parent = t->parent,
		.name = t->comm[0] ? t->comm : NULL,
		.time = t->created,
		.ctx = creation_context(r, t->creator),
	};

	rec_write_failed(r, rep_write_thread(r->w, &rt));
	free(t->creator);
	t->creator = NULL;
	t->record_pending = false;
	r->records_pending--;
}

/* From the loop's tick: every thread whose record still waits. */
static void thread_records_pending(struct rec *r)
{
	uint64_t now = r->records_pending ? psup_now_ns() : 0;

	for (size_t i = 0; r->records_pending && i < r->threads.cap; i++) {
		struct rec_thread *t = (struct rec_thread *)(uintptr_t)r->threads.vals[i];
		/* Told by the records, its creator's sample follows its fork
		 * record by microseconds, but a drain's horizon may fall
		 * between them: it waits a little for it. */
		if (r->threads.keys[i] && t && t->record_pending &&
		    !(t->told && t->parent && !t->creator && now - t->created < TOLD_CREATOR_WAIT_NS))
			thread_record(r, t);
	}
}

/*
 * Ring size per thread. The drain stalls while an image's debug info loads
 * for the first time (tens of ms for a compressed libc debug file), so the
 * first threads get rings that hold a quarter second of 1 kHz stack samples.
 * Mapping a ring costs the kernel about 0.8 us a page (each page allocated
 * and remapped), paid while the new thread and its creator wait in their
 * clone stops: with 2 MiB for every thread a program that keeps creating
 * threads ran at half speed. The threads after the first 16 get the
 * sampler's default (62 ms of samples; psup drains every 10 ms or at half a
 * ring), fewer pages once hundreds live, so pinned memory stays bounded
 * (about 250 MiB at 1,000 threads).
 */
static unsigned ring_pages_for(const struct rec *r)
{
	if (!r->unwind)
		return 0; /* the sampler's default for stackless samples */
	/* Sampled per CPU, a thread's ring has its switch records and extra
	 * events only (one wakeup in 16 with a 2 KiB stack). */
	if (smp_event_per_cpu(r->ev))
		return 32;
	if (r->threads_seen < 16)
		return 512;
	if (r->threads.len < 256)
		return SMP_RING_PAGES_STACK;
	return 32;
}

/* Opens tid's own ring and watches it; NULL when it cannot be sampled
 * (said here). An inherited one joins p's. */
static struct rec_ring *ring_new(struct rec *r, struct rec_proc *p, pid_t tid)
{
	struct rec_ring *g = calloc(1, sizeof(*g));
	int err = !g ? -ENOMEM : -ENODEV;

	if (g && r->ev && smp_event_inherits(r->ev) && r->ncpu_rings && !r->inherit_refused) {
		if (r->test_refuse_inherit && ++r->inherit_opens >= r->test_refuse_inherit)
			err = -EMFILE;
		else
			err = smp_thread_open_inherited(r->ev, tid, r->cpu_rings, r->ncpu_rings, r->inherit_processes,
							&g->st);
		if (err < 0 && err != -ESRCH) {
			pr_debug("inherited events refused for thread %d (%s): one set per thread from now on",
				 tid, strerror(-err));
			r->inherit_refused = true;
			snprintf(r->inherit_refused_why, sizeof(r->inherit_refused_why),
				 "thread %d: %s", (int)tid, strerror(-err));
		}
	}
	if (g && r->ev && err < 0 && err != -ESRCH) {
		err = smp_thread_open(r->ev, tid, ring_pages_for(r), &g->st);
		if (err == 0 && r->inherit_refused)
			r->own_sets_after++;
	}
	r->threads_seen++;
	if (err < 0) {
		free(g);
		/* -ESRCH: the thread is already gone, nothing was missed.
		 * -ENODEV: a recorder without a sampler (rec_new_bare()). */
		if (err != -ESRCH && err != -ENODEV) {
			char why[192] = "";

			r->open_failures++;
			if (err == -EACCES || err == -EPERM)
				sup_proc_access_why(tid, why, sizeof(why));
			if (why[0])
				pr_warn("cannot sample thread %d: permission denied%s", tid, why);
			else
				pr_warn("cannot sample thread %d: %s", tid, smp_open_strerror(err));
		}
		return NULL;
	}
	g->r = r;
	/* Inherited events write into the CPUs' rings: nothing to watch. */
	if (smp_thread_fd(g->st) >= 0 && sup_session_watch(r->sup, smp_thread_fd(g->st), on_thread_ring, g) < 0)
		pr_warn("cannot watch the ring of thread %d", tid);
	g->next = r->rings;
	if (r->rings)
		r->rings->prev = g;
	r->rings = g;
	if (r->inherit_processes && smp_thread_inherits(g->st) && !r->tree_ring) {
		/* Every process of the run descends from this one: closed at
		 * the end of the run, not with its process (closing it would
		 * take the events of every descendant with it). */
		r->tree_ring = g;
		/* This process and every one after it have their maps
		 * from their mmap records: a leader's exit stop read
		 * them, for the samples drained after its end. Where no
		 * mode needs that stop, it goes (a fork/exec storm's
		 * process: 48-57 us of psup's time, and a stop and a
		 * resume of the process). Test:
		 * t1101-short-process-attributed. */
		bool exit_hook = false;

		for_each_mode(r, m, thread_exiting)
			exit_hook = true;
		if (!exit_hook)
			sup_session_no_exit_stops(r->sup);
		/* Nor, while they have one thread, at their execs: the
		 * exec's comm record and the new program's mappings tell
		 * it (exec_from_records()), unless a mode acts on the new
		 * program at its exec stop (on_exec_may_run()). Test:
		 * t3078-exec-without-stop. */
		if (on_exec_may_run(r, 0))
			sup_session_no_exec_stops(r->sup);
	} else if (p && smp_thread_inherits(g->st)) {
		g->next_of_proc = p->rings;
		p->rings = g;
	}
	r->rings_opened++;
	return g;
}

/* Its last records are read (sink), then it is closed. */
static void ring_free(struct rec *r, struct rec_ring *g, const struct smp_sink *sink)
{
	if (r->sup && smp_thread_fd(g->st) >= 0)
		sup_session_unwatch(r->sup, smp_thread_fd(g->st));
	smp_thread_close(g->st, sink);
	if (g->prev)
		g->prev->next = g->next;
	else
		r->rings = g->next;
	if (g->next)
		g->next->prev = g->prev;
	free(g);
}

/* The inherited rings of p, once none of its threads is traced. */
static void proc_rings_free(struct rec *r, struct rec_proc *p)
{
	while (p->rings) {
		struct rec_ring *g = p->rings;

		p->rings = g->next_of_proc;
		ring_free(r, g, &r->sink);
	}
}

/*
 * The ring a new thread writes into without an open of its own: the kernel
 * copied its creator's inherited events into it in clone(), so its records
 * go where its creator's go. A thread whose first stop came before its
 * creator's clone event (rule 10, docs/ptrace-rules.md) has no known creator
 * yet: it is one of its process's threads, and in run mode (the only one
 * that inherits) every thread of a process descends from one opened at the
 * process's exec or fork, whose ring is the process's.
 */
static struct rec_ring *inherited_ring(struct rec *r, struct rec_proc *p, pid_t tid, pid_t parent,
				       bool new_process)
{
	struct rec_thread *pt;

	/* Processes inherit too: every thread of the run has the root's
	 * events, copied by the kernel in its fork() or clone(), kept through
	 * exec. A fork stop opened one event per CPU (each an IPI to install
	 * it in the stopped child's context) with two ioctls each, closed at
	 * the process's end. Test: t3076-process-storm-syscalls. */
	if (r->tree_ring) {
		if (p && p->exec_survivor == tid)
			p->exec_survivor = 0;
		return r->tree_ring;
	}
	if (new_process || !p || !p->rings)
		return NULL;
	/* An exec's survivor: the events opened for the process were not
	 * closed with its threads (thread_close()), and the kernel keeps them
	 * on the task through the exec (on a leader that another thread's
	 * exec removed, its threads' inherited copies write on into the same
	 * rings). Reopening them cost 2 perf_event_open, 6 ioctls and 2
	 * closes per CPU pair in every exec stop of a build's processes. */
	if (p->exec_survivor == tid) {
		p->exec_survivor = 0;
		return p->rings;
	}
	pt = parent ? thread_find(r, parent) : NULL;
	if (pt && pt->pid == p->pid)
		return pt->ring && smp_thread_inherits(pt->ring->st) ? pt->ring : NULL;
	return parent ? NULL : p->rings;
}

/*
 * The name a new thread or process starts with: its creator's, read while
 * the creator is stopped at its clone or fork event (so it is the one copied;
 * psup's own copy may lag a rename whose comm record is not drained yet). The
 * creator's comm file stays open for the next thread it makes: a pread
 * instead of an open, read and close of the new thread's own file, whose
 * /proc entry is made for it (about 11 us of the creator's stop, 1-2 now).
 */
static void creator_comm(struct rec_thread *pt, char *out, size_t len)
{
	char path[64], buf[32];
	ssize_t n = -1;

	if (pt->comm_fd < 0) {
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pt->pid, pt->tid);
		pt->comm_fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (pt->comm_fd >= 0)
		n = pread(pt->comm_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0) {
		sup_proc_comm(pt->tid, out, len);
		return;
	}
	buf[n] = '\0';
	n = (ssize_t)strcspn(buf, "\n");
	if ((size_t)n >= len)
		n = (ssize_t)len - 1;
	memcpy(out, buf, (size_t)n);
	out[n] = '\0';
}

/*
 * A thread begins: reported by the supervisor from a stop (told false), or
 * told by the kernel's records while it runs (on_task()): then time is its
 * fork record's, its creator runs on, and its creation context comes with
 * the creator's sample that follows.
 */
/* The modes' thread_creator hook for t: its creator's registers and stack. */
static void creator_told(struct rec *r, struct rec_thread *t, const struct smp_sample *creator, uint64_t time)
{
	for_each_mode(r, m, thread_creator)
		rec_write_failed(r, m->thread_creator(m, t->tid, t->pid, time, creator));
}

static void thread_new_at(struct rec *r, pid_t tid, pid_t pid, pid_t parent, bool new_process, uint64_t time,
			  bool told)
{
	struct rec_thread *t;
	struct rec_proc *p;
	uint64_t *v;

	/* The header comes first: the first thread is reported from inside
	 * sup_spawn()/sup_attach(), once the pid is known. */
	if (!r->header_written) {
		rec_write_failed(r, write_header(r, pid));
		for_each_mode(r, m, header)
			rec_write_failed(r, m->header(m, r->sup));
	}
	/* Run mode: psup's own child before its exec, in psup's code (in
	 * each run of causal --runs N). The program starts at the exec, where
	 * this thread is reported again: until then nothing is sampled or
	 * recorded. */
	if (!strcmp(r->mode, "run") && !r->program_started)
		return;
	/* A thread the records told already keeps what it has when a stop
	 * reports it later (an attach's scan finds it, the rings drained
	 * meanwhile: a thread's end drains them). */
	t = thread_find(r, tid);
	if (t && t->told && !told)
		return;
	if (new_process) {
		struct rec_thread *pt = parent ? thread_find(r, parent) : NULL;
		struct rec_proc *pp = pt ? proc_find(r, pt->pid) : NULL;
		bool known = proc_find(r, pid) != NULL;

		p = proc_get(r, pid, pp);
		if (p && pp && !known) {
			fork_note(r, pp->pid, p, told ? time : psup_now_ns());
			p->maps_elsewhere = pp->maps_elsewhere;
		}
	} else {
		p = proc_get(r, pid, NULL);
	}
	t = calloc(1, sizeof(*t));
	v = t ? psup_u64map_upsert(&r->threads, (uint64_t)tid, NULL) : NULL;
	if (!v) {
		free(t);
		pr_err("out of memory tracking thread %d", tid);
		return;
	}
	*v = (uintptr_t)t;
	t->r = r;
	t->tid = tid;
	t->pid = pid;
	t->comm_fd = -1;
	if (p)
		p->nthreads++;
	/* An exec's survivor is at its exec stop (or told by the records):
	 * its creator (another process's thread, running by now) has no
	 * clone stop to read. */
	bool survivor = !told && !new_process && sup_session_in_exec(r->sup, pid);

	t->exec_ip = new_process ? 0 : sup_session_exec_entry(r->sup, pid);
	/* A thread found running by attach inherited nothing: events of its
	 * own, which the threads it creates inherit (an exec's survivor keeps
	 * the ones it had). */
	bool found = !told && !parent && !strcmp(r->mode, "attach") && !(p && p->exec_survivor == tid && p->rings);

	t->ring = found ? NULL : inherited_ring(r, p, tid, parent, new_process);
	if (t->ring)
		r->rings_shared++;
	else
		t->ring = ring_new(r, p, tid);
	if (p && t->ring && smp_thread_inherits(t->ring->st) && !p->maps_elsewhere)
		p->maps_told = true;
	/* No stops needs the root's events inherited by all it creates:
	 * refused (at its exec, its one thread stopped), the threads and
	 * processes it creates are stopped and reported after all. */
	if (r->told && !told && r->sup && tid == sup_session_pid(r->sup) && !strcmp(r->mode, "run") &&
	    !(t->ring && smp_thread_inherits(t->ring->st))) {
		int err = sup_session_stops_back(r->sup);

		if (err < 0)
			pr_warn("the threads the program creates cannot be sampled: its events are not "
				"inherited, and it cannot be traced to open theirs (%s)",
				strerror(-err));
		else
			pr_debug("threads stopped at their creation: the root's events are not inherited");
		r->told = false;
		r->told_then_stopped = true;
	}
	/* A new thread or process has its creator's name (clone and fork copy
	 * it; a rename later comes as a comm record). An exec's survivor
	 * (another process's parent) has its own. */
	/* (An exec's survivor may name itself: its tid is its old leader's.) */
	struct rec_thread *pt = parent && parent != tid ? thread_find(r, parent) : NULL;
	if (pt && told) {
		/* The creator runs: its name as the records told it so far. */
		memcpy(t->comm, pt->comm, sizeof(t->comm));
	} else if (pt && (new_process || pt->pid == pid)) {
		creator_comm(pt, t->comm, sizeof(t->comm));
	} else if (survivor && p && p->exec_comm[0]) {
		/* Its exec's comm record came (drained up to the exec stop):
		 * no open and read of its comm file. */
		snprintf(t->comm, sizeof(t->comm), "%s", p->exec_comm);
		p->exec_comm[0] = '\0';
	} else {
		sup_proc_comm(tid, t->comm, sizeof(t->comm));
	}
	t->parent = parent;
	t->created = told ? time : sup_session_exec_time(r->sup, pid);
	t->creator = survivor || told ? NULL : snapshot_creator(r, parent);
	t->record_pending = true;
	r->records_pending++;
	t->told = told;
	if (told)
		r->threads_told++;
	for_each_mode(r, m, thread_new)
		rec_write_failed(r, m->thread_new(m, p ? p->sp : NULL, tid, pid, parent, new_process, t->created));
	/* A thread of its creator's process (a new process has its own copy
	 * of what the creator's registers point at). Told by the records, the
	 * creator's sample comes later (on_task()). */
	if (t->creator && pt && pt->pid == pid)
		creator_told(r, t, &t->creator->s, t->created);
}

static void on_thread_new(void *arg, pid_t tid, pid_t pid, pid_t parent, bool new_process)
{
	thread_new_at(arg, tid, pid, parent, new_process, 0, false);
}

/* Whether psup stops t: not a thread told by the records (on_task()). */
static bool thread_traced(const struct rec *r, const struct rec_thread *t)
{
	return !r->told || (r->sup && t->tid == sup_session_pid(r->sup));
}

/* A creator's sample at its clone (struct smp_task): its registers and
 * stack, as snapshot_creator() copies them at a clone stop. */
static struct rec_snapshot *snapshot_of_task(const struct smp_task *k, pid_t pid)
{
	struct rec_snapshot *c;

	if (!k->have_regs)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	size_t n = k->stack_size < sizeof(c->stack) ? k->stack_size : sizeof(c->stack);

	if (n)
		memcpy(c->stack, k->stack, n);
	c->pid = pid;
	c->s = (struct smp_sample){
		.pid = pid,
		.tid = k->tid,
		.ip = k->regs[SMP_REG_IP],
		.user = true,
		.have_regs = true,
		.stack = c->stack,
		.stack_size = n,
	};
	memcpy(c->s.regs, k->regs, sizeof(c->s.regs));
	return c;
}

/*
 * Told by the records: an event (a sample, a switch, a block) of a thread
 * psup does not know, in a process it knows: the thread's fork record was
 * lost (the CPU's ring filled), and it begins here, its creator unknown,
 * rather than lose its events. Not one whose exit record came (its last
 * switch-out follows it; a zombie leader stays in /proc: told_rescan()),
 * until a fork record reuses its tid; nor psup's own; nor any once the run
 * is over or psup detaches (attach: the threads it detached, ended then,
 * run on).
 */
static struct rec_thread *told_adopt(struct rec *r, pid_t pid, pid_t tid, uint64_t time)
{
	struct rec_thread *t;

	/* Another task's event first (the CPU rings have every task's).
	 * (The root's first thread is the supervisor's, reported at its
	 * exec: its samples before are psup's child's.) */
	if (!proc_find(r, pid) || pid == r->self_pid || !r->program_started || r->told_over ||
	    (r->sup && (tid == sup_session_pid(r->sup) || sup_session_is_stopping(r->sup))) ||
	    psup_u64map_find(&r->told_ended, (uint64_t)tid))
		return NULL;
	thread_new_at(r, tid, pid, 0, false, time, true);
	t = thread_find(r, tid);
	if (t)
		r->threads_adopted++;
	return t;
}

/*
 * Told by the records: the threads of process pid (-1: of every process)
 * still known, but the one by tid keep (-1: none), end at time: their exit
 * records were lost, or an exec ended them (de_thread()), or the run is
 * over. The process's rings go with it: none of its threads may keep one.
 */
static void told_threads_of_end(struct rec *r, pid_t pid, pid_t keep, uint64_t time, bool exited)
{
	pid_t *tids;
	size_t n = 0;

	if (!r->told)
		return;
	tids = calloc(r->threads.cap ? r->threads.cap : 1, sizeof(*tids));
	if (!tids)
		return;
	for (size_t i = 0; i < r->threads.cap; i++) {
		const struct rec_thread *t = (const struct rec_thread *)(uintptr_t)r->threads.vals[i];
		if (r->threads.keys[i] && t && (pid < 0 || t->pid == pid) && t->tid != keep && !thread_traced(r, t))
			tids[n++] = t->tid;
	}
	for (size_t i = 0; i < n; i++) {
		struct rec_thread *t = thread_find(r, tids[i]);
		if (t)
			thread_gone_at(r, t, exited, time);
	}
	free(tids);
}

/* A process told by the records ended with its last thread: no status is
 * known (psup is not its parent nor its tracer). */
static void process_end_told(struct rec *r, pid_t pid, uint64_t time)
{
	for_each_mode(r, m, process_exit)
		rec_write_failed(r, m->process_exit(m, pid, false, time));
	proc_drop(r, pid);
}

/*
 * No stops (psup run's default when only sampling per CPU): the threads
 * and processes the program creates, told by the
 * kernel's records in time order (SMP_EVENT_TASKS): a fork record begins a
 * thread whose creator is known (a process, when it has a process of its
 * own and children are followed), the creator's sample right after it
 * gives its creation context, an exit record ends it, and the last thread
 * of a process told so ends the process. The root's first thread is
 * traced: its end is the supervisor's.
 */
static void on_task(void *arg, const struct smp_task *k)
{
	struct rec *r = arg;
	struct rec_thread *t, *pt;
	struct rec_proc *p;

	uint64_t *v;

	if (!r->told || r->told_over)
		return;
	switch (k->kind) {
	case SMP_TASK_FORK:
		pt = thread_find(r, k->ptid);
		if (!pt || thread_find(r, k->tid))
			return;
		if (k->pid != k->ppid && !r->inherit_processes)
			return;
		psup_u64map_remove(&r->told_ended, (uint64_t)k->tid); /* a tid used again */
		/* The creator's sample names the new thread by its id in the
		 * initial pid namespace: matched to this record instead. */
		v = psup_u64map_upsert(&r->told_forks, (uint64_t)k->ptid, NULL);
		if (v)
			*v = (uint64_t)k->tid;
		thread_new_at(r, k->tid, k->pid, k->ptid, k->pid != k->ppid, k->time, true);
		return;
	case SMP_TASK_CREATOR:
		v = psup_u64map_find(&r->told_forks, (uint64_t)k->tid);
		t = thread_find(r, v ? (pid_t)*v : k->child);
		psup_u64map_remove(&r->told_forks, (uint64_t)k->tid);
		pt = thread_find(r, k->tid);
		if (!t || !pt || t->parent != k->tid || t->creator || thread_traced(r, t))
			return;
		struct rec_snapshot *c = snapshot_of_task(k, pt->pid);

		if (!c)
			return;
		if (t->pid == pt->pid) /* (as in thread_new_at()) */
			creator_told(r, t, &c->s, k->time);
		/* Its record may have gone out (a drain's horizon between the
		 * two records, and the wait over): no creation context then. */
		if (t->record_pending)
			t->creator = c;
		else
			free(c);
		return;
	case SMP_TASK_EXIT:
		t = thread_find(r, k->tid);
		if (!t || thread_traced(r, t))
			return;
		p = proc_find(r, t->pid);
		if (p && t->tid == p->pid)
			p->leader_parent = t->parent; /* for an exec of another thread */
		uint64_t *e = psup_u64map_upsert(&r->told_ended, (uint64_t)t->tid, NULL);

		if (e)
			*e = 1;
		t->reaped = true;
		thread_gone_at(r, t, true, k->time);
		if (p && !p->nthreads && (!r->sup || p->pid != sup_session_pid(r->sup)))
			process_end_told(r, p->pid, k->time);
		return;
	}
}

/* The thread's last records are in its ring by now (it was reaped): read
 * them; its own ring is closed, its process's once the process has no
 * traced thread left and psup let go of it (exited: at the process's exit,
 * proc_drop(), for an exec may follow, whose survivor keeps them). */
static void thread_close(struct rec *r, struct rec_thread *t, bool exited)
{
	struct rec_proc *p = proc_find(r, t->pid);
	struct rec_ring *g = t->ring;

	t->ring = NULL;
	if (g && !smp_thread_inherits(g->st))
		ring_free(r, g, &r->sink);
	else if (g && !(p && p->nthreads == 1))
		drain_ring(r, g);
	if (p && p->nthreads && !--p->nthreads && !exited) {
		proc_rings_free(r, p);
		/* Let go of (a nested tracer's now): its records, which the
		 * run's events still write, are not followed any more (an exec
		 * stop will not come to end its pending mappings). */
		p->maps_told = false;
		p->exec_pending = false;
		next_maps_free(p);
	}
}

static void on_thread_exiting(void *arg, pid_t tid, pid_t pid)
{
	struct rec *r = arg;
	struct rec_thread *t = thread_find(r, tid);

	if (t) {
		struct user_regs_struct regs;

		t->exiting_ns = psup_now_ns();
		if (r->sup && sup_thread_regs(r->sup, tid, &regs) == 0)
			t->exit_ip = regs.rip;
	}
	/* A leader at its exit stop still has its maps: read them now for
	 * the samples still in the CPU rings, named after its exit (a process
	 * shorter than the tick was all [unknown]). Where the mmap records
	 * tell them, no process stops at its exit
	 * (sup_session_no_exit_stops()). Test:
	 * t1101-short-process-attributed. */
	if (tid == pid) {
		struct rec_proc *p = proc_find(r, pid);

		if (p && p->sp)
			sym_space_snapshot(p->sp);
	}

	for_each_mode(r, m, thread_exiting)
		rec_write_failed(r, m->thread_exiting(m, tid, pid));
}

/* What follows t's end (now): its records written, its ring and state freed. */
static void thread_gone_at(struct rec *r, struct rec_thread *t, bool exited, uint64_t now)
{
	pid_t tid = t->tid;

	if (t->record_pending)
		thread_record(r, t);
	for_each_mode(r, m, thread_gone)
		rec_write_failed(r, m->thread_gone(m, tid, exited, now));
	thread_close(r, t, exited);
	psup_u64map_remove(&r->threads, (uint64_t)tid);
	if (t->comm_fd >= 0)
		close(t->comm_fd);
	free(t);
	for_each_mode(r, m, thread_drained)
		rec_write_failed(r, m->thread_drained(m, tid, exited, now));
	rec_write_failed(r, exp_profile_thread_end(r->prof, tid));
	rec_write_failed(r, rep_write_thread_end(r->w, tid, now));
}

static void on_thread_gone(void *arg, pid_t tid, pid_t pid, bool exited)
{
	struct rec *r = arg;
	struct rec_thread *t = thread_find(r, tid);
	struct rec_proc *p;
	/* Taken before the thread's events are closed: closing the last
	 * event on a tracepoint waits for an RCU grace period, 30-60 ms on
	 * the development VM, which the records must not count as the
	 * thread's (nor the running experiment as the program's). Dropped by
	 * an exec, it ended then; its tid may run the new program already
	 * (on_exec_may_run()), whose records wait. */
	uint64_t now = sup_session_exec_time(r->sup, pid);

	r->last_gone = tid;
	r->last_gone_ns = now;
	if (!t)
		return;
	/* Its blocks drained now are named without reading /proc's syscall
	 * file or its code: both went with it (an open failing with ENOENT
	 * and a read with ESRCH, 2.5 each per process of a fork/exec storm).
	 * Test: t3076-process-storm-syscalls. */
	t->reaped = exited;
	drain_cpus_until(r, now);
	/* An exec without a stop, told by the records drained, reported the
	 * thread anew (the new program's); one whose mappings never came is
	 * reported now. */
	p = tid == pid ? proc_find(r, pid) : NULL;
	if (p && p->exec_by_records)
		exec_from_records(r, p);
	t = thread_find(r, tid); /* the new program's, reaped as the old (exec_from_records()) */
	if (t)
		thread_gone_at(r, t, exited, now);
}

/*
 * What psup knows of the file an exec maps first (image, its mmap record:
 * the executable), found by its device and inode among the last few seen
 * (a build runs cc1, as and ld hundreds of times):
 * - EXEC_FILE_OURS: psup's path names it (its mmap records' paths are
 *   psup's too) and it has no setuid or setgid bit to lose;
 * - EXEC_FILE_SETID: the same path, with such a bit (the process's ids
 *   tell whether it lost it);
 * - EXEC_FILE_ELSEWHERE: the process's root is not psup's (a chroot,
 *   another mount namespace): its records name files as it sees them, and
 *   its maps are read from /proc instead.
 * A file psup's path names by another device (an overlay) is psup's where
 * the process's root is psup's. A stat of the path, and of the process's
 * root where that does not match; only EXEC_FILE_OURS is remembered (a
 * setuid file is asked of each process, sup_proc_lost_setid()).
 */
enum exec_file { EXEC_FILE_OURS,
		 EXEC_FILE_SETID,
		 EXEC_FILE_ELSEWHERE };

static enum exec_file exec_file_of(struct rec *r, pid_t pid, const struct sym_map *image)
{
	char root[64];
	struct stat st, rs, ours;
	unsigned i;

	/* The same file at the same path (the same file at another path may
	 * be inside a chroot). */
	for (i = 0; i < r->nexec_files && i < PSUP_ARRAY_SIZE(r->exec_files); i++)
		if (r->exec_files[i].inode == image->inode && r->exec_files[i].dev_major == image->dev_major &&
		    r->exec_files[i].dev_minor == image->dev_minor && !strcmp(r->exec_files[i].path, image->path))
			return EXEC_FILE_OURS;
	if (stat(image->path, &st) < 0)
		st.st_ino = 0;
	if (st.st_ino != image->inode || major(st.st_dev) != image->dev_major || minor(st.st_dev) != image->dev_minor) {
		snprintf(root, sizeof(root), "/proc/%d/root", pid);
		if (stat(root, &rs) < 0 || stat("/", &ours) < 0 || rs.st_dev != ours.st_dev || rs.st_ino != ours.st_ino)
			return EXEC_FILE_ELSEWHERE;
		return EXEC_FILE_SETID; /* the mode read was not this file's */
	}
	if (st.st_mode & (S_ISUID | S_ISGID))
		return EXEC_FILE_SETID;
	char *path = strdup(image->path);

	if (!path)
		return EXEC_FILE_OURS;
	i = r->nexec_files++ % PSUP_ARRAY_SIZE(r->exec_files);
	free(r->exec_files[i].path);
	r->exec_files[i].inode = image->inode;
	r->exec_files[i].dev_major = image->dev_major;
	r->exec_files[i].dev_minor = image->dev_minor;
	r->exec_files[i].path = path;
	return EXEC_FILE_OURS;
}

static void on_exec(void *arg, pid_t pid, pid_t old_tid)
{
	struct rec *r = arg;
	/* A process first seen here (the run's first, psup's child until
	 * now) has its maps read now, at its exec stop: the new program's. */
	bool fresh = !proc_find(r, pid);
	struct rec_proc *p = proc_get(r, pid, NULL);
	uint64_t when = sup_session_exec_time(r->sup, pid);
	char path[64], exe[PATH_MAX];
	ssize_t n;

	r->program_started = true; /* the run's first exec is its first process's */
	(void)old_tid;
	/* The old image's samples, not the new one's (told by the records,
	 * the exec comes in their order: those before it are handed on, and
	 * this drain hands on nothing more). */
	drain_cpus_until(r, when);
	/* The executable is the first file the exec mapped (its mmap
	 * records, told since its comm record): /proc/PID/exe's link names
	 * the same file. */
	const struct sym_map *image = p && p->exec_pending && p->nnext && p->next_maps[0].path[0] == '/' &&
						      p->next_maps[0].path[1] != '/'
					      ? &p->next_maps[0]
					      : NULL;
	enum exec_file kind = image ? exec_file_of(r, pid, image) : EXEC_FILE_SETID;

	if (kind == EXEC_FILE_ELSEWHERE) {
		/* Its maps from /proc, read as psup sees them. */
		next_maps_free(p);
		p->maps_told = false;
		p->maps_elsewhere = true;
		image = NULL;
	}
	if (image) {
		snprintf(exe, sizeof(exe), "%s", image->path);
	} else {
		/* The process may run already (on_exec_may_run()): killed
		 * meanwhile, its exec record has no path. */
		snprintf(path, sizeof(path), "/proc/%d/exe", pid);
		n = readlink(path, exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = '\0';
	}
	if (!r->told_setid && kind != EXEC_FILE_OURS && sup_proc_lost_setid(pid)) {
		char shown[256];
		size_t i;

		/* The path is the program's text: no control bytes to the
		 * terminal. */
		for (i = 0; exe[i] && i + 1 < sizeof(shown); i++) {
			unsigned char c = (unsigned char)exe[i], next = (unsigned char)exe[i + 1];
			bool c1 = (c == 0xc2 && next >= 0x80 && next <= 0x9f) ||
				  (c >= 0x80 && c <= 0x9f && i && (unsigned char)exe[i - 1] == 0xc2);

			shown[i] = c < 0x20 || c == 0x7f || c1 ? '?' : exe[i];
		}
		shown[i] = '\0';
		r->told_setid = true; /* once: a build runs many */
		pr_warn("%s is a setuid or setgid program: traced, it runs without those privileges "
			"(the kernel drops them); run psup as root to profile it as it runs",
			shown);
	}
	/* The new program's mappings, told since the exec's comm record
	 * (where that record was lost, /proc's are read at the next miss). */
	if (p && p->sp) {
		if (!fresh)
			sym_space_exec(p->sp);
		for (size_t i = 0; i < p->nnext; i++)
			if (sym_space_map_add(p->sp, &p->next_maps[i]) < 0)
				pr_debug("mapping of %d at 0x%llx not kept", pid,
					 (unsigned long long)p->next_maps[i].start);
	}
	if (p) {
		next_maps_free(p);
		p->exec_pending = false;
		psup_u64map_clear(&p->block_kinds); /* addresses of the old image */
		p->exec_survivor = pid;
	}
	exp_profile_forget_process(r->prof, pid);
	for_each_mode(r, m, exec)
		m->exec(m, p ? p->sp : NULL, pid);
	rec_write_failed(r, rep_write_exec(r->w, pid, exe, when));
}

/*
 * A process at its exec stop may run its new program while psup reports the
 * exec (supervisor's exec_may_run): where its records wait in the CPU rings'
 * merge until they are drained past the exec (drain_cpus_until() with the
 * exec's time), its events are the run's inherited ones (nothing to open
 * for it), and no mode acts on the new program before it runs (a mode's
 * exec hook: causal's progress points and unlock traps, witch's
 * watchpoints). A fork/exec storm's exec stops took 60-90 us before the
 * resume.
 */
static bool on_exec_may_run(void *arg, pid_t pid)
{
	struct rec *r = arg;

	(void)pid;
	if (!r->tree_ring || !r->merge)
		return false;
	for_each_mode(r, m, exec) return false;
	return true;
}

/*
 * An exec without a stop (sup_session_no_exec_stops(): a process with one
 * thread), reported as its stop would report it: the old program's thread
 * gone, the exec, the new program's thread, at the time of its comm record.
 * Called from the records' order (the new program's first mapping, the
 * next exec, the thread's end), so what came before it is handed on and
 * what comes after is the new program's.
 */
static void exec_from_records(struct rec *r, struct rec_proc *p)
{
	pid_t pid = p->pid;
	struct rec_thread *t = thread_find(r, pid);
	/* (Called by another thread, told_exec_survivor() ended that one.) */
	pid_t parent = t ? t->parent : p->leader_parent;
	struct sup_exec_told before;
	bool by_other = p->exec_by_other;

	p->exec_by_records = false;
	p->exec_by_other = false;
	if (!t && !by_other)
		return;
	/* Told in the drain of its death (a storm's process lives shorter
	 * than the drains): the new program's thread is reaped too, its
	 * blocks named without /proc (t3076, 30 of 100 probed in CI). */
	bool reaped = t && t->reaped;

	r->execs_told++;
	before = sup_session_exec_told(r->sup, (struct sup_exec_told){ .pid = pid, .ns = p->exec_ns });
	if (t) {
		t->reaped = true; /* as at an exec stop: its memory is the new program's */
		thread_gone_at(r, t, true, p->exec_ns);
	}
	on_exec(r, pid, pid);
	on_thread_new(r, pid, pid, parent, false);
	sup_session_exec_told(r->sup, before);
	if (reaped && (t = thread_find(r, pid)))
		t->reaped = true;
}

static void on_process_exit(void *arg, pid_t pid, int status, int sig)
{
	struct rec *r = arg;
	/* The process ended when its leader was reaped, just before. */
	uint64_t now = r->last_gone == pid ? r->last_gone_ns : psup_now_ns();

	bool root = r->sup && pid == sup_session_pid(r->sup);

	told_threads_of_end(r, pid, -1, now, true);
	for_each_mode(r, m, process_exit)
		rec_write_failed(r, m->process_exit(m, pid, root, now));
	/* (An attached process told by the records: its end without its
	 * status, as any process told so.) */
	if (status != SUP_STATUS_UNKNOWN || sig)
		rec_write_failed(r, rep_write_exit(r->w, pid, status, sig, now));
	proc_drop(r, pid);
}

static void flush(struct rec *r)
{
	/* idleness and lock records name nodes the profile wrote already */
	if (!r->write_err)
		rec_write_failed(r, exp_profile_flush(r->prof));
	for_each_mode(r, m, flush) if (!r->write_err)
		rec_write_failed(r, m->flush(m));
	r->last_flush_ns = psup_now_ns();
}

/* Causal profiling needs every sample taken so far before it decides
 * what a thread owes at a synchronization call (record-causal.c). */
static void drain_all(void *arg)
{
	struct rec *r = arg;

	drain_cpus(r);
	for (struct rec_ring *g = r->rings; g; g = g->next)
		drain_ring(r, g);
}

/* The CPU rings lost records: mmap records among them, maybe, so the maps
 * the records told may lack a mapping or keep one replaced. Those of the
 * live processes are read again from /proc (a process gone keeps what it
 * was told). */
static void maps_reread(struct rec *r)
{
	r->maps_lost = false;
	for (size_t i = 0; i < r->procs.cap; i++) {
		struct rec_proc *p = (struct rec_proc *)(uintptr_t)r->procs.vals[i];

		if (r->procs.keys[i] && p && p->sp && p->maps_told && !p->exec_pending)
			sym_space_refresh(p->sp);
	}
}

/*
 * Told by the records: records of the CPU rings were lost (on_cpu_lost()),
 * and with them perhaps the fork records of threads that live on: each
 * known process's threads are listed in /proc, and those psup does not
 * know begin now (their creator unknown). A thread that was born and died
 * within the loss is gone with its records.
 */
static void told_rescan(struct rec *r)
{
	for (size_t i = 0; i < r->procs.cap; i++) {
		const struct rec_proc *p = (const struct rec_proc *)(uintptr_t)r->procs.vals[i];
		char path[64];
		struct dirent *de;
		DIR *d;

		if (!r->procs.keys[i] || !p)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task", p->pid);
		d = opendir(path);
		if (!d)
			continue;
		while ((de = readdir(d))) {
			long tid = strtol(de->d_name, NULL, 10);

			if (tid > 0 && tid <= INT_MAX)
				cpu_thread(r, p->pid, (pid_t)tid, psup_now_ns());
		}
		closedir(d);
	}
}

/* The shortest period a mode needs now (record.h, tick_ns), at most
 * REC_TICK_NS. */
static uint64_t tick_base(struct rec *r)
{
	uint64_t tick = REC_TICK_NS;

	for_each_mode(r, m, tick_ns) if (m->tick_ns(m) && m->tick_ns(m) < tick)
		tick = m->tick_ns(m);
	return tick;
}

/* The loop's period at now: base (tick_base()), shorter in the run's first
 * second. */
static uint64_t tick_period(const struct rec *r, uint64_t base, uint64_t now)
{
	return now - r->start_ns < REC_YOUNG_NS && REC_YOUNG_TICK_NS < base ? REC_YOUNG_TICK_NS : base;
}

static void on_tick(void *arg)
{
	struct rec *r = arg;
	uint64_t now = psup_now_ns();

	smp_keep_probes(); /* the first tick: the program has started */
	thread_records_pending(r);
	/* Threads that sample slowly never reach the ring's watermark. Every
	 * ring is drained past now, so the events up to now can be replayed
	 * in time order. */
	drain_all(r);
	if (r->maps_lost && r->told)
		told_rescan(r);
	if (r->maps_lost)
		maps_reread(r);
	/* The first second's shorter ticks are for draining: the modes' own
	 * work keeps its period (witch reads each thread's signal mask from
	 * /proc at its tick). */
	uint64_t base = tick_base(r);
	uint64_t due_after = base > REC_YOUNG_TICK_NS / 2 ? base - REC_YOUNG_TICK_NS / 2 : 0;
	bool mode_due = r->tick_ns >= base || now - r->last_mode_tick_ns >= due_after;
	if (mode_due)
		r->last_mode_tick_ns = now;
	for_each_mode(r, m, tick) if (!r->write_err && mode_due)
		rec_write_failed(r, m->tick(m, now));
	uint64_t period = tick_period(r, base, now);
	if (period != r->tick_ns && r->sup && sup_session_tick_period(r->sup, period) == 0)
		r->tick_ns = period;
	uint64_t interval = (now - r->start_ns) / 10;
	if (interval < REC_FLUSH_MIN_NS)
		interval = REC_FLUSH_MIN_NS;
	if (interval > REC_FLUSH_MAX_NS)
		interval = REC_FLUSH_MAX_NS;
	if (now - r->last_flush_ns >= interval)
		flush(r);
	/* The records of this tick reach the file together (report/record.c):
	 * a kill of psup loses one tick of them at most. */
	if (!r->write_err)
		rec_write_failed(r, rep_writer_flush(r->w));
	if (!r->quiet && now - r->last_progress_ns >= REC_PROGRESS_NS) {
		r->last_progress_ns = now;
		unsigned n = sup_session_nthreads(r->sup);
		char more[128] = "";
		for_each_mode(r, m, progress)
			m->progress(m, more + strlen(more), sizeof(more) - strlen(more));
		psup_progress("psup: %.1f s, %llu samples, %u thread%s%s%s",
			      (double)(now - r->start_ns) / 1e9, (unsigned long long)r->samples,
			      n, n == 1 ? "" : "s", more, r->lost || r->cpu_lost ? ", samples lost" : "");
	}
}

void rec_tick(struct rec *r)
{
	on_tick(r);
}

static int open_output(struct rec *r, const struct rec_options *o)
{
	int err = rep_writer_open(o->output, o->force ? REP_WRITER_FORCE : 0, &r->w);

	r->own_writer = err == 0;

	if (err == -EEXIST) {
		pr_err("%s already exists; use -o FILE for another name, or --force to replace it",
		       o->output);
		return err;
	}
	if (err < 0)
		pr_err("cannot write %s: %s", o->output, psup_output_strerror(err));
	return err;
}

static int write_header(struct rec *r, pid_t pid)
{
	char host[256] = "";
	struct rep_header h = {
		.mode = r->mode,
		.argv = r->argv,
		.pid = pid,
		.wall_ns = psup_wall_ns(),
		.mono_ns = r->start_ns,
		.event = r->ev ? smp_event_name(r->ev) : "none",
		.period = r->ev ? smp_event_period(r->ev) : 0,
		.jitter_pct = r->ev ? smp_event_jitter(r->ev) : 0,
		.clock_event = r->ev && smp_event_is_clock(r->ev),
		.hw_pmu = smp_have_hw_pmu(),
		.per_cpu = r->ncpu_rings > 0,
		.hostname = host,
		.cpus = r->cpus,
	};

	/* (Attach mode: the threads found are seized, and but the leader let
	 * go of at their first stop; the new ones told, or stopped with
	 * --stops.) */
	if (r->ev)
		h.new_threads = r->told ? "records" : "stopped";
	if (r->ev && smp_event_inherits(r->ev) && r->ncpu_rings) {
		h.thread_events = "inherited";
	} else if (r->ev) {
		h.thread_events = "per_thread";
		h.thread_events_why = r->per_thread_why;
		if (r->ncpu_rings)
			h.thread_events_why = "the kernel has no inherit_thread (5.13 and later)";
	}
	gethostname(host, sizeof(host) - 1);
	r->header_written = true;
	return rep_write_header(r->w, &h);
}

static void finish(struct rec *r, const char *reason)
{
	struct exp_profile_stats st;
	struct rep_end e;

	drain_cpus_until(r, UINT64_MAX);
	for_each_mode(r, m, finish) if (!r->write_err)
		rec_write_failed(r, m->finish(m, r->quiet));
	flush(r);
	exp_profile_stats(r->prof, &st);
	e = (struct rep_end){
		.time = psup_now_ns(),
		.reason = reason,
		.samples = r->samples,
		.lost = r->lost,
		.unwind_failures = r->unwind_failures,
		.inherit_refused = r->inherit_refused ? r->inherit_refused_why : NULL,
		.own_sets_after = r->own_sets_after,
		.new_threads_stopped = r->told_then_stopped,
	};
	for_each_mode(r, m, end) if (!r->write_err)
		rec_write_failed(r, m->end(m));
	if (!r->write_err)
		rec_write_failed(r, rep_write_end(r->w, &e));
	psup_progress_end();
	if (!r->quiet)
		pr_info("%llu samples (%llu lost), %llu contexts, in %.2f s",
			(unsigned long long)r->samples, (unsigned long long)r->lost,
			(unsigned long long)st.nodes, (double)(e.time - r->start_ns) / 1e9);
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		pr_debug("psup itself used %.3f s of CPU (user %.3f, system %.3f)",
			 (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
				 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6,
			 (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
			 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
	pr_debug("thread events: %llu set(s) opened, %llu thread(s) inherited theirs",
		 (unsigned long long)r->rings_opened, (unsigned long long)r->rings_shared);
	if (r->told)
		pr_debug("no stops: %llu thread(s) and process(es) told by the kernel's records, none stopped "
			 "(%llu of them begun at a sample, their fork record lost)",
			 (unsigned long long)r->threads_told, (unsigned long long)r->threads_adopted);
	if (r->open_failures)
		pr_warn("%llu thread(s) could not be sampled (see the messages above)",
			(unsigned long long)r->open_failures);
	if (r->lost && r->samples && r->lost * 100 > r->samples)
		pr_warn("%llu of the program's samples were lost: its rings filled before psup "
			"drained them (psup was busy unwinding and writing); a longer --period "
			"gives it fewer to drain",
			(unsigned long long)r->lost);
	if (r->cpu_lost && r->cpu_lost * 100 > r->samples)
		pr_warn("%llu samples were lost in the CPU rings, whose they were is not known "
			"(every task's on those CPUs, psup's own included); --sample-per-thread "
			"counts only the program's",
			(unsigned long long)r->cpu_lost);
}

static void close_cpu_rings(struct rec *r)
{
	smp_merge_free(r->merge);
	r->merge = NULL;
	for (unsigned i = 0; i < r->ncpu_rings; i++)
		smp_thread_close(r->cpu_rings[i], NULL);
	free(r->cpu_rings);
	r->cpu_rings = NULL;
	r->ncpu_rings = 0;
}

/*
 * A clock is sampled per CPU where the kernel permits it (root, CAP_PERFMON
 * or perf_event_paranoid <= 0), with a ring per CPU; the threads' own
 * events then only count. A per-thread sampling timer is stopped and
 * started at every context switch of its thread, which costs a program that
 * switches often (docs/performance.md, "Programs that switch threads often"). Otherwise, or with
 * --sample-per-thread, each thread samples itself as before.
 */
static void open_cpu_rings(struct rec *r)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	int err = 0;

	if (n <= 0 || smp_event_set_per_cpu(r->ev, true) < 0)
		return;
	r->cpu_rings = calloc((size_t)n, sizeof(*r->cpu_rings));
	if (!r->cpu_rings) {
		smp_event_set_per_cpu(r->ev, false);
		return;
	}
	/* A quarter second of 1 kHz stack samples per CPU, as for the first
	 * threads: the drain stalls while debug info loads. */
	unsigned pages = !r->unwind ? 0 : n <= 16 ? 512
						  : 128;
	for (long cpu = 0; cpu < n; cpu++) {
		err = smp_cpu_open(r->ev, (int)cpu, pages, &r->cpu_rings[r->ncpu_rings]);
		if (err == -ENODEV)
			continue; /* offline */
		if (err < 0) {
			pr_debug("sampling per thread: per-CPU events need root, CAP_PERFMON or "
				 "perf_event_paranoid <= 0 (CPU %ld: %s)",
				 cpu, strerror(-err));
			r->per_thread_why = err == -EACCES || err == -EPERM
						    ? "no permission for per-CPU events (root, CAP_PERFMON or "
						      "perf_event_paranoid <= 0)"
						    : "per-CPU events could not be opened";
			break;
		}
		r->ncpu_rings++;
	}
	if ((err < 0 && err != -ENODEV) || !r->ncpu_rings) {
		close_cpu_rings(r);
		smp_event_set_per_cpu(r->ev, false);
		return;
	}
	if (r->ncpu_rings > 1 && smp_merge_new(&r->merge) < 0)
		r->merge = NULL; /* ring by ring, as they come */
	pr_debug("sampling per CPU: %u CPUs", r->ncpu_rings);
}

static void rec_release(struct rec *r)
{
	/* The recorder's end, however it ends (a program killed before the
	 * first tick, whose signal psup run re-raises without exit()): the
	 * probes go to their keeper if no tick handed them over. */
	smp_keep_probes();
	free(r->attach_cmdline);
	for (size_t i = 0; i < r->threads.cap; i++) {
		struct rec_thread *t = (struct rec_thread *)(uintptr_t)r->threads.vals[i];
		if (r->threads.keys[i] && t) {
			if (t->comm_fd >= 0)
				close(t->comm_fd);
			free(t->creator);
			free(t);
		}
	}
	for (size_t i = 0; i < r->procs.cap; i++) {
		struct rec_proc *p = (struct rec_proc *)(uintptr_t)r->procs.vals[i];
		if (r->procs.keys[i] && p) {
			sym_space_free(p->sp);
			psup_u64map_release(&p->block_kinds);
			next_maps_free(p);
			free(p);
		}
	}
	for (size_t i = 0; i < PSUP_ARRAY_SIZE(r->exec_files); i++)
		free(r->exec_files[i].path);
	while (r->rings)
		ring_free(r, r->rings, NULL);
	psup_u64map_release(&r->threads);
	psup_u64map_release(&r->procs);
	psup_u64map_release(&r->told_ended);
	psup_u64map_release(&r->told_forks);
	psup_u64map_release(&r->code_sites);
	close_cpu_rings(r);
	for (unsigned i = 0; i < r->nmodes; i++)
		rec_mode_free(r->modes[i]);
	free(r->modes);
	exp_profile_free(r->prof);
	smp_event_free(r->ev);
	free(r);
}

static int rec_setup(struct rec *r, const struct rec_options *o)
{
	const char *why = NULL;
	unsigned flags = o->no_unwind ? 0 : SMP_EVENT_STACK;
	int err;

	if (o->no_stops && !o->per_thread)
		flags |= SMP_EVENT_TASKS; /* (per CPU only: rec_setup() below) */
	psup_u64map_init(&r->threads);
	psup_u64map_init(&r->procs);
	r->unwind = !o->no_unwind;
	r->quiet = psup_log_level < PSUP_LOG_INFO;
	r->path = o->output;
	/* Thread states come with the samples: switch records, and block
	 * samples for what a thread blocks on. Block samples need kernel
	 * sampling (root, CAP_PERFMON or perf_event_paranoid <= 1); without it
	 * the blocked time is not split by cause. */
	/* Wakeup samples (a tracepoint: root or CAP_PERFMON) blame futex
	 * waits on the thread that ended them. */
	static const unsigned extras[] = {
		SMP_EVENT_BLOCKS | SMP_EVENT_WAKEUPS,
		SMP_EVENT_BLOCKS,
		0,
	};
	for (size_t i = o->no_lock_blame ? 1 : 0; i < PSUP_ARRAY_SIZE(extras); i++) {
		smp_event_free(r->ev);
		r->ev = NULL;
		err = smp_event_new(o->event, o->period, o->jitter,
				    flags | SMP_EVENT_SWITCHES | extras[i], &r->ev, &why);
		if (err == 0) {
			r->wakeups = extras[i] & SMP_EVENT_WAKEUPS;
			if (!r->wakeups)
				pr_debug("no wakeup samples: lock waits are not blamed on holders");
			if (!(extras[i] & SMP_EVENT_BLOCKS))
				pr_debug("no block samples: blocked time is not split by cause");
			break;
		}
	}
	if (err < 0) {
		pr_err("%s", why ? why : smp_open_strerror(err));
		return err;
	}
	r->sink = (struct smp_sink){ .sample = on_sample, .lost = on_lost, .context_switch = on_switch, .block = on_block, .wakeup = on_wakeup, .comm = on_comm, .arg = r };
	r->self_pid = getpid();
	r->cpu_sink = (struct smp_sink){ .sample = on_cpu_sample, .lost = on_cpu_lost, .context_switch = on_cpu_switch, .block = on_cpu_block, .wakeup = on_wakeup, .comm = on_comm, .mmap = on_mmap, .task = on_task, .arg = r };
	if (!o->per_thread && smp_event_is_clock(r->ev))
		open_cpu_rings(r);
	else
		r->per_thread_why = o->per_thread ? "--sample-per-thread" : "the event is not a clock";
	/* The records tell threads only where every thread of the run
	 * inherits its events from the root's, whose records go to the CPUs'
	 * rings. */
	if (o->no_stops) {
		r->no_stops = r->ncpu_rings && smp_event_inherits(r->ev);
		const char *why = r->per_thread_why ? r->per_thread_why
						    : "the kernel has no inherit_thread (5.13 and later)";

		if (!r->no_stops && o->no_stops_asked)
			pr_warn("--no-stops: threads are stopped at their creation all the same: %s", why);
		else if (!r->no_stops)
			pr_debug("threads stopped at their creation: %s", why);
	}
	return 0;
}

static int on_signal_stop(void *arg, pid_t tid, int sig)
{
	struct rec *r = arg;
	struct rec_thread *t = thread_find(r, tid);
	struct rec_proc *p = t ? proc_find(r, t->pid) : NULL;

	for_each_mode(r, m, signal_stop)
	{
		int action = m->signal_stop(m, p ? p->sp : NULL, tid, sig);
		if (action)
			return action;
	}
	return SUP_SIGNAL_DELIVER;
}

static bool on_own_breakpoint(void *arg, pid_t tid, uint64_t addr)
{
	struct rec *r = arg;

	for_each_mode(r, m, own_breakpoint) if (m->own_breakpoint(m, tid, addr)) return true;
	return false;
}

const struct sup_hooks *rec_hooks(struct rec *r)
{
	bool signals = false, exit_stops = false;

	for_each_mode(r, m, signal_stop)
		signals = true;
	for_each_mode(r, m, thread_exiting) if (!m->exiting_leaders_only) exit_stops = true;
	r->hooks = (struct sup_hooks){
		.thread_new = on_thread_new,
		.thread_gone = on_thread_gone,
		.exec = on_exec,
		.process_exit = on_process_exit,
		.arg = r,
		.signal_stop = signals ? on_signal_stop : NULL,
		.thread_exiting = on_thread_exiting,
		.own_breakpoint = on_own_breakpoint,
		/* The hub's own use of an exit stop is the leader's (its
		 * maps); a thread's last switch-outs and its join need none
		 * (exiting_ns stays 0 without one). */
		.thread_exit_stops = exit_stops,
		.exec_may_run = on_exec_may_run,
	};
	return &r->hooks;
}

const struct smp_sink *rec_sink(struct rec *r)
{
	return &r->sink;
}

/* The modes' start, once the record file is open. */
static int start_modes(struct rec *r)
{
	struct rec_env env = {
		.w = r->w,
		.prof = r->prof,
		.period = r->ev ? smp_event_period(r->ev) : 1000000,
		.clock = !r->ev || smp_event_is_clock(r->ev),
		.attach = !strcmp(r->mode, "attach"),
		.wakeups = r->wakeups,
		.cpus = r->cpus,
		.drain = drain_all,
		.drain_arg = r,
	};

	for_each_mode(r, m, start) if (m->start(m, &env) < 0) return -1;
	return 0;
}

static struct rec *rec_alloc(const char *mode, struct rec_mode **modes, unsigned n)
{
	struct rec *r = calloc(1, sizeof(*r));

	if (r)
		r->modes = calloc(n ? n : 1, sizeof(*r->modes));
	if (!r || !r->modes) {
		free(r);
		for (unsigned i = 0; i < n; i++)
			rec_mode_free(modes[i]);
		pr_err("out of memory");
		return NULL;
	}
	memcpy(r->modes, modes, n * sizeof(*modes));
	r->nmodes = n;
	r->mode = mode;
	psup_u64map_init(&r->threads);
	psup_u64map_init(&r->procs);
	psup_u64map_init(&r->code_sites);
	psup_u64map_init(&r->told_ended);
	psup_u64map_init(&r->told_forks);
	return r;
}

/* Everything both commands do before the supervisor starts. Returns 0, or
 * an exit status after cleaning up. */
int rec_new(const struct rec_options *o, const char *mode, pid_t pid, struct rec_mode **modes,
	    unsigned n, struct rec **out)
{
	cpu_set_t cpus;
	struct exp_sink sink_out;
	struct rec *r;
	int err;

	*out = NULL;
	r = rec_alloc(mode, modes, n);
	if (!r)
		return 1;
	/* Idleness's n (Tallent, section 2.1): the CPUs the program may run
	 * on; a run's child inherits psup's. */
	CPU_ZERO(&cpus);
	r->cpus = sched_getaffinity(pid, sizeof(cpus), &cpus) == 0 ? (unsigned)CPU_COUNT(&cpus) : 0;
	if (!r->cpus)
		r->cpus = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
	/* Tests: the kernel's refusal of inherited events, from the Nth
	 * process on (t1066), which no test machine can be made to do. */
	const char *refuse = getenv("PSUP_TEST_REFUSE_INHERIT");
	if (refuse)
		r->test_refuse_inherit = strtoull(refuse, NULL, 10);

	if (rec_setup(r, o) < 0 || open_output(r, o) < 0) {
		rec_release(r);
		return 1;
	}
	rec_sink_init(&sink_out, r->w);
	err = exp_profile_new(&sink_out, &r->prof);
	if (err < 0) {
		pr_err("cannot set up the profile: %s", strerror(-err));
		rec_abort(r);
		return 1;
	}
	if (start_modes(r) < 0) {
		rec_abort(r);
		return 1;
	}
	r->start_ns = r->last_flush_ns = psup_now_ns();
	*out = r;
	return 0;
}

int rec_new_bare(struct rep_writer *w, const char *mode, struct rec_mode **modes, unsigned n,
		 struct rec **out)
{
	struct rec *r = rec_alloc(mode, modes, n);
	struct exp_sink sink_out;
	int err;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->w = w;
	r->path = "(test)";
	r->unwind = true;
	r->quiet = true;
	r->cpus = 1;
	r->sink = (struct smp_sink){ .sample = on_sample, .lost = on_lost, .context_switch = on_switch, .block = on_block, .wakeup = on_wakeup, .comm = on_comm, .arg = r };
	rec_sink_init(&sink_out, r->w);
	err = exp_profile_new(&sink_out, &r->prof);
	if (err == 0 && start_modes(r) < 0)
		err = -EINVAL;
	if (err < 0) {
		rec_release(r);
		return err;
	}
	r->start_ns = r->last_flush_ns = psup_now_ns();
	*out = r;
	return 0;
}

void rec_set_argv(struct rec *r, char *const *argv)
{
	r->argv = argv;
}

int rec_spawn(struct rec *r, char *const argv[], bool follow_forks, char *why, size_t whylen)
{
	unsigned flags = follow_forks ? SUP_SPAWN_FOLLOW_FORKS : 0;
	int err;

	for_each_mode(r, m, spawn_flags)
		flags |= m->spawn_flags(m);
	/* --no-stops: every mode works on threads it does not stop (run.c
	 * refused the others). */
	r->told = r->no_stops && !(flags & SUP_SPAWN_CAUSAL_FILTER);
	if (r->told)
		flags |= SUP_SPAWN_NO_STOPS;
	/* Children traced, or told by the records: they inherit their events
	 * from the root. Not followed, they must not (they would record what
	 * nobody reads). */
	r->inherit_processes = flags & (SUP_SPAWN_FOLLOW_FORKS | SUP_SPAWN_CAUSAL_FILTER);
	err = sup_spawn(argv, flags, rec_hooks(r), &r->sup, why, whylen);
	if (err < 0)
		return err;
	for_each_mode(r, m, session)
		m->session(m, r->sup);
	return 0;
}

/* Attach: the process's command line as its /proc file has it (the
 * program may have rewritten it), for the report's command in place of
 * "pid N"; at most ATTACH_CMDLINE_MAX bytes and REC_ATTACH_ARGS arguments.
 * Untrusted text, as every name from the program is. */
#define ATTACH_CMDLINE_MAX 4096

static void attach_argv(struct rec *r, pid_t pid)
{
	char path[64];
	size_t len, n = 0;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if (psup_read_file(path, &r->attach_cmdline, &len) < 0)
		return;
	if (len > ATTACH_CMDLINE_MAX)
		r->attach_cmdline[len = ATTACH_CMDLINE_MAX] = '\0';
	for (size_t i = 0; i < len && n < REC_ATTACH_ARGS; i += strlen(r->attach_cmdline + i) + 1)
		r->attach_argv[n++] = r->attach_cmdline + i;
	if (n) /* none: a kernel thread, a zombie */
		r->argv = r->attach_argv;
}

int rec_attach(struct rec *r, pid_t pid, char *why, size_t whylen)
{
	int err;

	attach_argv(r, pid);

	/* --no-stops (the default where modes allow): each thread found gets
	 * its events, which those it creates inherit, and is let go of at its
	 * first stop (the leader stays traced); the new ones are told by the
	 * records. */
	r->told = r->no_stops;
	r->program_started = true;
	err = sup_attach(pid, r->told ? SUP_ATTACH_NO_STOPS : 0, rec_hooks(r), &r->sup, why, whylen);
	if (err < 0)
		return err;
	/* (No pidfd: stopped after all. A thread whose events the kernel
	 * would not let it pass on makes threads told all the same, which
	 * open their own.) */
	if (r->told && !sup_session_told(r->sup)) {
		r->told = false;
		r->told_then_stopped = true;
	}
	for_each_mode(r, m, session)
		m->session(m, r->sup);
	return 0;
}

struct sup_session *rec_session(struct rec *r)
{
	return r->sup;
}

void rec_session_end(struct rec *r)
{
	sup_session_free(r->sup);
	r->sup = NULL;
	r->program_started = false;
	/* The run's inherited events: the next run's first process opens
	 * its own (causal --runs N). */
	if (r->tree_ring) {
		drain_cpus_until(r, UINT64_MAX);
		ring_free(r, r->tree_ring, &r->sink);
		r->tree_ring = NULL;
	}
}

int rec_run_begin(struct rec *r)
{
	for_each_mode(r, m, run_begin)
		rec_write_failed(r, m->run_begin(m));
	return r->write_err;
}

int rec_run_end(struct rec *r)
{
	for_each_mode(r, m, run_end)
		rec_write_failed(r, m->run_end(m));
	return r->write_err;
}

unsigned rec_runs(struct rec *r)
{
	unsigned runs = 1;

	for_each_mode(r, m, runs) if (m->runs(m) > runs)
		runs = m->runs(m);
	return runs;
}

bool rec_failed(const struct rec *r)
{
	return r->write_err != 0;
}

bool rec_quiet(const struct rec *r)
{
	return r->quiet;
}

/* Before any record that matters: drop the file, it would only mislead. */
void rec_abort(struct rec *r)
{
	sup_session_free(r->sup);
	r->sup = NULL;
	if (r->own_writer)
		rep_writer_discard(r->w, r->path);
	rec_release(r);
}

/*
 * Told by the records: the run is over (its root ended, or psup let go of it), and
 * the threads told by the records that live on (the program's children
 * that outlive it, or a thread whose exit record was lost) are let go of,
 * as the supervisor lets go of the threads it traces: gone, not exited.
 */
static void told_threads_end(struct rec *r)
{
	if (!r->told)
		return;
	drain_cpus(r);
	told_threads_of_end(r, -1, -1, psup_now_ns(), false);
	r->told_over = true;
}

void rec_loop(struct rec *r, struct sup_result *res)
{
	struct sup_loop_stats ls;
	struct sym_cache_stats cs;
	int err;

	r->tick_ns = tick_period(r, tick_base(r), psup_now_ns());
	if (sup_session_set_tick(r->sup, r->tick_ns, on_tick, r) < 0)
		pr_warn("no periodic drain: samples may be lost");
	for (unsigned i = 0; i < r->ncpu_rings; i++)
		if (sup_session_watch(r->sup, smp_thread_fd(r->cpu_rings[i]), on_cpu_ring, r) < 0)
			pr_warn("cannot watch the ring of a CPU: samples may be lost");
	err = sup_session_run(r->sup);
	if (err < 0)
		pr_err("event loop failed: %s", strerror(-err));
	told_threads_end(r);
	sup_session_loop_stats(r->sup, &ls);
	pr_debug("supervisor loop: %llu waits for %llu wait statuses and %llu timer expirations "
		 "(%llu hung-up fds dropped; %llu new threads resumed at their creator's stop, "
		 "%llu held for their creator's later event, %llu of them let go without it; "
		 "%llu execs resumed before they were reported, %llu told by records without a stop); "
		 "%llu mappings from mmap records",
		 (unsigned long long)ls.waits, (unsigned long long)ls.statuses,
		 (unsigned long long)ls.timers, (unsigned long long)ls.hangups,
		 (unsigned long long)ls.early_first_stops, (unsigned long long)ls.creator_late,
		 (unsigned long long)ls.creator_never, (unsigned long long)ls.exec_early,
		 (unsigned long long)r->execs_told, (unsigned long long)r->mmaps);
	sym_cache_stats(&cs);
	pr_debug("symbols: %llu images loaded, %llu reused (%llu idle ones), %llu evicted; "
		 "%llu addresses resolved, %llu from the images' caches; "
		 "%llu debug files from the debug cache, %llu written to it; "
		 "%llu symbol tables from it, %llu written to it; %llu unit digests from it, %llu written to it",
		 (unsigned long long)cs.loads, (unsigned long long)cs.reuses,
		 (unsigned long long)cs.revived, (unsigned long long)cs.evictions,
		 (unsigned long long)cs.resolves, (unsigned long long)cs.resolve_hits,
		 (unsigned long long)cs.debug_hits, (unsigned long long)cs.debug_written,
		 (unsigned long long)cs.symtab_hits, (unsigned long long)cs.symtab_written,
		 (unsigned long long)cs.unit_hits, (unsigned long long)cs.unit_written);
	sup_session_result(r->sup, res);
}

/* Writes the last records and frees everything. Returns 0 or -errno. */
int rec_end(struct rec *r, const char *reason, bool *bad_end)
{
	int err = 0;

	/* Threads still traced (an error path) are detached first: their
	 * last records go before the end record. */
	sup_session_free(r->sup);
	r->sup = NULL;
	finish(r, reason);
	*bad_end = false;
	for_each_mode(r, m, bad_end)
		*bad_end |= m->bad_end(m);
	if (r->own_writer)
		err = rep_writer_close(r->w);
	if (err < 0 && !r->write_err)
		pr_err("cannot write %s: %s", r->path, strerror(-err));
	err = err < 0 ? err : r->write_err;
	rec_release(r);
	return err;
}

void rec_mode_free(struct rec_mode *m)
{
	if (m && m->free)
		m->free(m);
}
