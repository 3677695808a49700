#include "experiments/experiments.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

/*
 * Work, idleness and lock waits (Tallent & Mellor-Crummey 2009, section 2.1;
 * HPCToolkit's blame shifting for locks).
 *
 * A sample's idleness depends on how many threads worked at its instant, and
 * a wait is blamed on the thread that ended it: both need every thread's
 * events in one time order, but each thread's events arrive from its own
 * ring, drained at its own moment. So events are buffered, and processed in
 * time order up to a time the caller knows every ring has been drained to
 * (exp_par_advance). The buffer holds one tick's events: small fixed-size
 * entries, no stacks (those are interned into node ids on arrival).
 */

#define PAR_MICRO 1000000ULL /* idleness is kept in millionths of a sample */

enum par_ev_kind { EV_START,
		   EV_END,
		   EV_SWITCH,
		   EV_SAMPLE,
		   EV_BLOCK,
		   EV_WAKE,
		   EV_WORD };

struct par_ev {
	uint64_t time;
	uint64_t seq; /* arrival order: ties keep it */
	uint64_t a;   /* sample: node; block: futex address; wake: waker node;
			   start/switch: working */
	pid_t tid;    /* the thread the event is about (wake: the waker) */
	pid_t other;  /* wake: the wakee; block: the pid; switch: out */
	uint8_t kind;
};

/* One thread, as the time-ordered replay sees it. */
struct par_thread {
	pid_t tid;
	bool working;
	uint64_t last_node; /* of its last sample */
	bool ended;         /* its end was replayed: freed once written */
	pid_t pid;          /* with tid_word: its process */
	uint64_t tid_word;  /* what its exit clears and wakes (0: none) */
	/* The last wait a wakeup without context ended, for the sampled
	 * report of the same wakeup that may follow. */
	bool last_unsampled;
	pid_t last_waker, last_pid;
	uint64_t last_addr, last_ns, last_time;
	/* A wakeup that came while the thread was still on its way to sleep
	 * (a FUTEX_WAKE between its FUTEX_WAIT and its switch-out): it ends
	 * the wait that switch-out begins. */
	bool early;
	pid_t early_waker;
	uint64_t early_node, early_time;
	bool blocked_futex;  /* a futex wait not yet ended */
	bool wait_confirmed; /* its switch-out was not a preemption */
	pid_t wait_pid;
	uint64_t wait_addr, wait_since;
	struct psup_u64map idle; /* node -> micro-samples since the last flush */
};

/* One (process, futex address, waker context): the waits it ended; exit:
 * ended by the exit of a thread last sampled in node (pthread_join). */
struct par_lock {
	pid_t pid;
	uint64_t addr, node;
	uint64_t waits, wait_ns;
	bool exit;
};

/* A thread's exit, for the joins it ends (exp_par_thread_word()). */
struct par_exit {
	pid_t pid, tid;
	uint64_t tid_word, node, time;
};
#define PAR_EXITS 32
#define PAR_EXIT_WINDOW_NS 1000000000ULL

struct exp_par {
	struct exp_sink out;
	unsigned ncpus;
	unsigned nworking;
	struct psup_u64map threads; /* tid -> struct par_thread * */
	struct par_ev *evs;
	size_t nevs, cap;
	uint64_t seq;
	struct par_lock *locks;
	size_t nlocks, locks_cap;
	struct psup_u64map lock_ix;       /* hash of (pid, addr, node, exit) -> index + 1 */
	struct psup_u64map words;         /* hash of (pid, tid word) -> the live thread's tid */
	struct par_exit exits[PAR_EXITS]; /* the latest, a ring */
	unsigned nexits;
	uint64_t *pairs;
	size_t pairs_cap;
	struct exp_par_stats stats;
};

int exp_par_new(const struct exp_sink *out, unsigned ncpus, struct exp_par **out_x)
{
	struct exp_par *x = calloc(1, sizeof(*x));

	if (!x)
		return -ENOMEM;
	if (out)
		x->out = *out;
	x->ncpus = ncpus ? ncpus : 1;
	psup_u64map_init(&x->threads);
	psup_u64map_init(&x->lock_ix);
	psup_u64map_init(&x->words);
	*out_x = x;
	return 0;
}

static struct par_thread *thread_find(struct exp_par *x, pid_t tid)
{
	uint64_t *v = psup_u64map_find(&x->threads, (uint64_t)tid);

	return v ? (struct par_thread *)(uintptr_t)*v : NULL;
}

static void thread_free(struct par_thread *t)
{
	psup_u64map_release(&t->idle);
	free(t);
}

void exp_par_free(struct exp_par *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->threads.cap; i++)
		if (x->threads.keys[i] && x->threads.vals[i])
			thread_free((struct par_thread *)(uintptr_t)x->threads.vals[i]);
	psup_u64map_release(&x->threads);
	psup_u64map_release(&x->lock_ix);
	psup_u64map_release(&x->words);
	free(x->evs);
	free(x->locks);
	free(x->pairs);
	free(x);
}

static int push(struct exp_par *x, const struct par_ev *e)
{
	if (x->nevs == x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 1024;
		struct par_ev *n = realloc(x->evs, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		x->evs = n;
		x->cap = cap;
	}
	x->evs[x->nevs] = *e;
	x->evs[x->nevs++].seq = x->seq++;
	return 0;
}

int exp_par_thread_start(struct exp_par *x, pid_t tid, uint64_t time, bool working)
{
	return push(x, &(struct par_ev){ .time = time, .a = working, .tid = tid, .kind = EV_START });
}

int exp_par_thread_end(struct exp_par *x, pid_t tid, uint64_t time)
{
	return push(x, &(struct par_ev){ .time = time, .tid = tid, .kind = EV_END });
}

int exp_par_thread_word(struct exp_par *x, pid_t pid, pid_t tid, uint64_t time, uint64_t tid_word)
{
	if (!tid_word)
		return 0;
	return push(x, &(struct par_ev){ .time = time, .a = tid_word, .tid = tid, .other = pid, .kind = EV_WORD });
}

int exp_par_switch(struct exp_par *x, pid_t tid, uint64_t time, bool out, bool preempt)
{
	return push(x, &(struct par_ev){ .time = time, .a = !out || preempt, .tid = tid, .other = out, .kind = EV_SWITCH });
}

int exp_par_sample(struct exp_par *x, pid_t tid, uint64_t time, uint64_t node)
{
	if (!node)
		return 0;
	return push(x, &(struct par_ev){ .time = time, .a = node, .tid = tid, .kind = EV_SAMPLE });
}

int exp_par_block_futex(struct exp_par *x, pid_t pid, pid_t tid, uint64_t time, uint64_t addr)
{
	return push(x, &(struct par_ev){ .time = time, .a = addr, .tid = tid, .other = pid, .kind = EV_BLOCK });
}

int exp_par_wake(struct exp_par *x, pid_t waker, pid_t wakee, uint64_t time, uint64_t node)
{
	return push(x, &(struct par_ev){ .time = time, .a = node, .tid = waker, .other = wakee, .kind = EV_WAKE });
}

static int cmp_ev(const void *p, const void *q)
{
	const struct par_ev *a = p, *b = q;

	if (a->time != b->time)
		return a->time < b->time ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static struct par_thread *thread_get(struct exp_par *x, pid_t tid)
{
	struct par_thread *t = thread_find(x, tid);
	uint64_t *v;

	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	v = psup_u64map_upsert(&x->threads, (uint64_t)tid, NULL);
	if (!v) {
		free(t);
		return NULL;
	}
	*v = (uintptr_t)t;
	t->tid = tid;
	psup_u64map_init(&t->idle);
	return t;
}

static void set_working(struct exp_par *x, struct par_thread *t, bool working)
{
	if (t->working == working)
		return;
	t->working = working;
	if (working)
		x->nworking++;
	else
		x->nworking--;
}

/* Keyed: the program chooses its futex addresses. Never 0 (a free slot). */
static uint64_t addr_key(pid_t pid, uint64_t addr)
{
	uint64_t h = psup_hash64(addr ^ psup_hash_seed() ^ ((uint64_t)(uint32_t)pid << 40));

	return h ? h : 1;
}

/* Colliding keys are chained by rehashing. */
static uint64_t lock_key(pid_t pid, uint64_t addr, uint64_t node, bool exit)
{
	uint64_t h = psup_hash64(addr_key(pid, addr ^ exit) ^ node);

	return h ? h : 1;
}

static struct par_lock *lock_find(struct exp_par *x, pid_t pid, uint64_t addr, uint64_t node,
				  bool exit)
{
	uint64_t key = lock_key(pid, addr, node, exit), *v;

	while ((v = psup_u64map_find(&x->lock_ix, key))) {
		struct par_lock *l = &x->locks[*v - 1];
		if (l->pid == pid && l->addr == addr && l->node == node && l->exit == exit)
			return l;
		key = psup_hash64(key) | 1;
	}
	return NULL;
}

static int lock_add(struct exp_par *x, pid_t pid, uint64_t addr, uint64_t node, bool exit,
		    uint64_t ns)
{
	struct par_lock *l = lock_find(x, pid, addr, node, exit);
	uint64_t key = lock_key(pid, addr, node, exit), *v;
	bool created;

	if (l) {
		l->waits++;
		l->wait_ns += ns;
		return 0;
	}
	/* the first free slot of the probe sequence lock_find() walked */
	for (;;) {
		v = psup_u64map_upsert(&x->lock_ix, key, &created);
		if (!v)
			return -ENOMEM;
		if (created)
			break;
		key = psup_hash64(key) | 1;
	}
	if (x->nlocks == x->locks_cap) {
		size_t cap = x->locks_cap ? 2 * x->locks_cap : 64;
		struct par_lock *n = realloc(x->locks, cap * sizeof(*n));
		if (!n) {
			psup_u64map_remove(&x->lock_ix, key);
			return -ENOMEM;
		}
		x->locks = n;
		x->locks_cap = cap;
	}
	x->locks[x->nlocks] = (struct par_lock){ pid, addr, node, 1, ns, exit };
	*v = ++x->nlocks;
	return 0;
}

/* The live thread of pid whose tid word is word, or NULL. */
static struct par_thread *word_owner(struct exp_par *x, pid_t pid, uint64_t word)
{
	uint64_t *v = psup_u64map_find(&x->words, addr_key(pid, word));
	struct par_thread *o = v ? thread_find(x, (pid_t)*v) : NULL;

	return o && !o->ended && o->pid == pid && o->tid_word == word ? o : NULL;
}

/* A thread's end: a join on its tid word may still end after it. */
static void word_end(struct exp_par *x, struct par_thread *t, uint64_t time)
{
	uint64_t key = addr_key(t->pid, t->tid_word), *v;

	if (!t->tid_word)
		return;
	x->exits[x->nexits++ % PAR_EXITS] = (struct par_exit){ t->pid, t->tid, t->tid_word, t->last_node, time };
	v = psup_u64map_find(&x->words, key);
	if (v && *v == (uint64_t)(uint32_t)t->tid)
		psup_u64map_remove(&x->words, key);
	t->tid_word = 0;
}

/*
 * The thread whose exit ended t's wait, when the wait was a join: on the
 * thread's tid word, in its process (any other futex near the thread's
 * data, a Go runtime's, a lock in its TLS, is no join). The kernel clears
 * and wakes the word in exit_mm(): a wakeup by the exiting thread, seen
 * where its events outlive that (inherited per-CPU sampling), or none
 * (per-thread events, gone first). A thread is joined once its end was
 * replayed, or before: psup learns its end from its death status, which
 * may come after the joiner's switch-in. Returns the node to blame (the
 * thread's last sample), or false.
 */
static bool join_of(struct exp_par *x, const struct par_thread *t, pid_t waker, uint64_t time,
		    uint64_t *node)
{
	struct par_thread *o = word_owner(x, t->wait_pid, t->wait_addr);

	if (o && (!waker || waker == o->tid)) {
		*node = o->last_node;
		return true;
	}
	/* newest first: glibc reuses a joined thread's stack, so its struct
	 * pthread and tid word, for the next thread */
	for (unsigned k = 0; k < PAR_EXITS && k < x->nexits; k++) {
		const struct par_exit *e = &x->exits[(x->nexits - 1 - k) % PAR_EXITS];
		if (waker && waker != e->tid)
			continue;
		if (e->pid == t->wait_pid && t->wait_addr == e->tid_word && e->time <= time &&
		    time - e->time <= PAR_EXIT_WINDOW_NS) {
			*node = e->node;
			return true;
		}
	}
	return false;
}

/* A futex wait ended at time: blame it on node (0 when nobody we watch
 * woke it: a timeout, a signal, a waker psup does not trace). */
static int wait_end(struct exp_par *x, struct par_thread *t, pid_t waker, uint64_t time,
		    uint64_t node)
{
	uint64_t ns, exit_node;

	if (!t->blocked_futex)
		return 0;
	t->blocked_futex = false;
	ns = time > t->wait_since ? time - t->wait_since : 0;
	x->stats.waits++;
	if (node)
		x->stats.blamed++;
	if (node && node != EXP_PAR_UNSAMPLED)
		x->stats.sampled++;
	t->last_unsampled = node == EXP_PAR_UNSAMPLED;
	t->last_waker = waker;
	t->last_pid = t->wait_pid;
	t->last_addr = t->wait_addr;
	t->last_ns = ns;
	t->last_time = time;
	/* A join is charged to the exit, whoever's wakeup ended it. */
	if ((!node || waker) && join_of(x, t, node ? waker : 0, time, &exit_node)) {
		x->stats.blamed += !node;
		return lock_add(x, t->wait_pid, t->wait_addr, exit_node, true, ns);
	}
	return lock_add(x, t->wait_pid, t->wait_addr, node, false, ns);
}

/* The sampled report of a wakeup whose unsampled report ended the wait a
 * moment before (the two events' records carry their own times, a few us
 * apart): the wait goes to the sampled context. */
#define SAME_WAKEUP_NS 20000ULL
/* A wakeup at most this long before a futex switch-out ended that wait. */
#define EARLY_WAKE_NS 200000ULL

static int wake_sampled_late(struct exp_par *x, struct par_thread *t, pid_t waker,
			     uint64_t time, uint64_t node)
{
	struct par_lock *l;

	if (!t->last_unsampled || t->last_waker != waker || node == EXP_PAR_UNSAMPLED || !node ||
	    (time > t->last_time ? time - t->last_time : t->last_time - time) > SAME_WAKEUP_NS)
		return 0;
	t->last_unsampled = false;
	l = lock_find(x, t->last_pid, t->last_addr, EXP_PAR_UNSAMPLED, false);
	if (!l || !l->waits || l->wait_ns < t->last_ns)
		return 0; /* written by a flush in between: it stays unsampled */
	l->waits--;
	l->wait_ns -= t->last_ns;
	x->stats.sampled++;
	return lock_add(x, t->last_pid, t->last_addr, node, false, t->last_ns);
}

static int replay(struct exp_par *x, const struct par_ev *e)
{
	struct par_thread *t = thread_get(x, e->tid);
	uint64_t *v;

	if (!t)
		return -ENOMEM;
	switch (e->kind) {
	case EV_START:
		t->ended = false; /* a tid reused before the flush */
		set_working(x, t, e->a);
		break;
	case EV_END:
		word_end(x, t, e->time);
		set_working(x, t, false);
		/* the idleness map is written by the next flush */
		t->blocked_futex = false;
		t->ended = true;
		break;
	case EV_SWITCH:
		/* preempted inside a futex call (a FUTEX_WAKE, say): no wait */
		if (e->other && e->a && t->blocked_futex && !t->wait_confirmed) {
			t->blocked_futex = false;
			set_working(x, t, true);
			break;
		}
		if (e->other && !e->a)
			t->wait_confirmed = true;
		if (!e->other && t->blocked_futex) {
			bool early = t->early;
			t->early = false;
			return wait_end(x, t, early ? t->early_waker : 0, e->time,
					early ? t->early_node : 0);
		}
		set_working(x, t, e->a);
		break;
	case EV_SAMPLE: {
		/* Section 2.1: n_w working threads, at most one per core; each
		 * working sample carries n_idle / n_w of idleness. The sampled
		 * thread is running, whatever its switch records said. */
		unsigned nw = x->nworking + !t->working;
		if (nw > x->ncpus)
			nw = x->ncpus;
		uint64_t idle = (uint64_t)(x->ncpus - nw) * PAR_MICRO / nw;
		x->stats.samples++;
		t->last_node = e->a;
		if (!idle)
			break;
		v = psup_u64map_upsert(&t->idle, e->a, NULL);
		if (!v)
			return -ENOMEM;
		*v += idle;
		x->stats.idle_micro += idle;
		break;
	}
	case EV_BLOCK:
		t->early = t->early && e->time - t->early_time <= EARLY_WAKE_NS;
		t->blocked_futex = true;
		t->wait_confirmed = false;
		t->wait_pid = e->other;
		t->wait_addr = e->a;
		t->wait_since = e->time;
		break;
	case EV_WORD:
		word_end(x, t, e->time); /* a tid reused before its end was seen */
		v = psup_u64map_upsert(&x->words, addr_key((pid_t)e->other, e->a), NULL);
		if (!v)
			return -ENOMEM;
		*v = (uint64_t)(uint32_t)t->tid;
		t->pid = (pid_t)e->other;
		t->tid_word = e->a;
		break;
	case EV_WAKE: {
		struct par_thread *w = thread_find(x, e->other);
		if (w && w->blocked_futex)
			return wait_end(x, w, e->tid, e->time, e->a);
		if (!w)
			break;
		if (w->early && w->early_waker == e->tid && w->early_node == EXP_PAR_UNSAMPLED &&
		    e->time - w->early_time <= SAME_WAKEUP_NS) {
			w->early_node = e->a; /* the same early wakeup, sampled */
			break;
		}
		if (w->last_unsampled && w->last_waker == e->tid && e->a != EXP_PAR_UNSAMPLED)
			return wake_sampled_late(x, w, e->tid, e->time, e->a);
		/* the unsampled twin of the sampled wakeup that ended the wait */
		if (!w->last_unsampled && w->last_waker == e->tid && e->a == EXP_PAR_UNSAMPLED &&
		    (e->time > w->last_time ? e->time - w->last_time : w->last_time - e->time) <=
			    SAME_WAKEUP_NS)
			break;
		w->early = true;
		w->early_waker = e->tid;
		w->early_node = e->a;
		w->early_time = e->time;
		break;
	}
	}
	return 0;
}

/* Forgets a thread whose end was replayed and whose idleness is written. */
static void drop_if_done(struct exp_par *x, pid_t tid)
{
	struct par_thread *t = thread_find(x, tid);

	if (!t || !t->ended || t->idle.len)
		return;
	psup_u64map_remove(&x->threads, (uint64_t)tid);
	thread_free(t);
}

int exp_par_advance(struct exp_par *x, uint64_t until)
{
	size_t n = 0;
	int err = 0;

	if (!x->nevs)
		return 0;
	qsort(x->evs, x->nevs, sizeof(*x->evs), cmp_ev);
	while (n < x->nevs && x->evs[n].time <= until)
		n++;
	for (size_t i = 0; i < n && !err; i++) {
		err = replay(x, &x->evs[i]);
		if (!err && x->evs[i].kind == EV_END)
			drop_if_done(x, x->evs[i].tid);
	}
	/* keep the later ones, in order */
	memmove(x->evs, x->evs + n, (x->nevs - n) * sizeof(*x->evs));
	x->nevs -= n;
	return err;
}

static int flush_thread(struct exp_par *x, struct par_thread *t)
{
	long n = psup_u64map_drain_pairs(&t->idle, &x->pairs, &x->pairs_cap);

	if (n <= 0)
		return (int)n;
	return x->out.idleness ? x->out.idleness(x->out.ctx, t->tid, x->pairs, (size_t)n) : 0;
}

int exp_par_flush(struct exp_par *x)
{
	pid_t ended[64];
	size_t nended;
	int err = 0;

	for (size_t i = 0; i < x->threads.cap && !err; i++)
		if (x->threads.keys[i] && x->threads.vals[i])
			err = flush_thread(x, (struct par_thread *)(uintptr_t)x->threads.vals[i]);
	for (size_t i = 0; i < x->nlocks && !err; i++) {
		const struct par_lock *l = &x->locks[i];
		if (!l->waits)
			continue;
		if (x->out.lock_waits)
			err = x->out.lock_waits(x->out.ctx, l->pid, l->addr,
						l->node == EXP_PAR_UNSAMPLED ? 0 : l->node,
						l->node != 0 || l->exit, l->exit ? "exit" : NULL, l->waits,
						l->wait_ns);
	}
	x->nlocks = 0;
	psup_u64map_clear(&x->lock_ix);
	/* Threads that ended are forgotten once written (collected first: a
	 * removal may move the map's entries). */
	do {
		nended = 0;
		for (size_t i = 0; i < x->threads.cap && nended < 64; i++) {
			struct par_thread *t = (struct par_thread *)(uintptr_t)x->threads.vals[i];
			if (x->threads.keys[i] && t && t->ended && !t->idle.len)
				ended[nended++] = t->tid;
		}
		for (size_t i = 0; i < nended; i++)
			drop_if_done(x, ended[i]);
	} while (nended == 64);
	return err;
}

void exp_par_stats(const struct exp_par *x, struct exp_par_stats *out)
{
	*out = x->stats;
}
