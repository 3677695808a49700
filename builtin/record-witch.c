/*
 * psup run/attach --witch (Witch paper, sections 4-6), on a machine with or
 * without a precise memory event:
 *
 *  sample: the thread's witch event overflows and signals the thread; at the
 *    signal-delivery stop the next access of a watched kind is found (the
 *    instruction about to run, or one a few instructions ahead whose
 *    address the code lets compute: sym_flow_predict(); else the thread is stepped
 *    to it), its effective address computed from the registers, and the
 *    sample counted in its calling context; when the reservoir (section
 *    4.1) picks it, a debug register is armed at once (a perf breakpoint
 *    event of the thread, signalling it), pending until its first trap,
 *    the sampled access, leaves the value to watch.
 *  trap: the next access to the watched bytes stops the thread at the
 *    signal's delivery (si_fd says which register); the trapping
 *    instruction (the one that ended just before the trap's ip) says load
 *    or store, the memory the new value, the stack the trapping context;
 *    experiments/witch.c attributes (section 4.2).
 *  exact (--witch-exact): every instruction is single-stepped and every
 *    access given to experiments/witch-exact.c (ground truth, slow).
 *
 * Everything runs inside a ptrace stop of the thread: a stop costs tens of us
 * here, the unwinding of a snapshot about as much; the default period keeps
 * it under 5% (docs/performance.md, "Witch: overhead and accuracy").
 */
#include "builtin/record.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/user.h>

#include "common/hash.h"
#include "common/log.h"
#include "common/util.h"
#include "experiments/experiments.h"
#include "report/report.h"
#include "sampler/sampler.h"
#include "supervisor/supervisor.h"
#include "symbols/symbols.h"

/* 10 ms of task-clock between samples: 100 samples a second per busy
 * thread, each costing a stop (+ the steps to the access and over it, and a
 * trap, when watched): a few percent of CPU on memory-bound loops on these
 * VMs (docs/performance.md, "Witch: overhead and accuracy"; tests/bench/witch.py). */
#define WITCH_DEFAULT_PERIOD_NS 10000000ULL
#define WITCH_MAX_FRAMES 128
#define WITCH_STACK 8192
#define WITCH_FLUSH_NS (2ULL * 1000000000ULL)
#define WITCH_EXACT_BUF EXP_WEXACT_MAX_SIZE
/* A time sample lands on the instruction after the one the time went to
 * (the interrupt waits for a slow store to retire), often an add or a jump:
 * the thread is stepped to the next access of a watched kind, when a static
 * look at the code ahead (WITCH_LOOK instructions, following direct jumps and
 * both ways of a conditional one) finds one within WITCH_SEEK_MAX
 * instructions; each step is a stop, so code without such accesses (a
 * compute loop) is skipped at once. */
#define WITCH_SEEK_MAX 12
#define WITCH_LOOK SYM_FLOW_LOOK
#define WITCH_CODE 256

#ifndef TRAP_TRACE
#define TRAP_TRACE 2
#endif
#ifndef TRAP_HWBKPT
#define TRAP_HWBKPT 4
#endif
#ifndef TRAP_BRKPT
#define TRAP_BRKPT 1
#endif

struct witch_options {
	unsigned kinds;      /* 1 << enum exp_witch_kind; 0: witch is off */
	uint64_t period;     /* ns of task-clock (or events of a precise event); 0: default */
	double fp_precision; /* relative */
	bool exact;          /* --witch-exact */
	bool by_insns;       /* --witch-weight instructions (else time) */
	bool weight_given;   /* --witch-weight was given */
	unsigned slots;      /* debug registers for witch per thread (4 - breakpoint progress points) */
};

/* The ids of its options. */
enum {
	WITCH_OPT_KINDS,
	WITCH_OPT_PERIOD,
	WITCH_OPT_FP,
	WITCH_OPT_EXACT,
	WITCH_OPT_WEIGHT,
	WITCH_NOPTS
};
/* A watch armed before its sampled access ran: what it watches and the
 * instruction it waits for. */
struct wt_pending {
	struct exp_witch_arm arm;
	uint64_t pc;
	unsigned len;
	bool string, stack; /* a string instruction; an implicit stack access */
};

struct wt_thread {
	pid_t tid, pid;
	struct smp_witch *ev;
	bool blocked;                       /* the thread blocks the signal: event off */
	unsigned armed;                     /* debug registers armed (bit per slot) */
	struct smp_wp *wp[SUP_DEBUG_SLOTS]; /* the armed watchpoints */
	unsigned pending;                   /* armed, waiting for the sampled access (bit per slot) */
	struct wt_pending pend[SUP_DEBUG_SLOTS];
	unsigned seek;     /* steps taken looking for an access */
	unsigned mask;     /* the accesses the sample under way looks for */
	unsigned seek_max; /* steps the look ahead allows */
	struct exp_witch_plan plan;
	/* exact mode: the accesses of the instruction being stepped */
	unsigned nexact;
	struct exp_wexact_access exact[SYM_INSN_MAX_ACCESS];
	uint8_t *exact_buf; /* 2 * SYM_INSN_MAX_ACCESS * WITCH_EXACT_BUF */
	uint64_t exact_pc;
	bool exact_waiting; /* a breakpoint at the entry point is set */
};

struct rec_witch {
	struct rec_mode mode; /* first: the recorder's view */
	struct witch_options o;
	struct rep_writer *w;
	struct exp_profile *prof;
	struct sup_session *sup;
	struct exp_witch *x;
	struct exp_wexact *exact;
	struct smp_witch_config ev;
	char event[64];
	struct psup_u64map threads;   /* tid -> struct wt_thread * */
	struct psup_u64map fds;       /* witch fds ever used + 1 -> 1 */
	struct psup_u64map exact_ctx; /* exact: pid << 48 ^ pc -> node + 1 */
	uint64_t pcs[WITCH_MAX_FRAMES];
	uint8_t stack[WITCH_STACK];
	uint64_t last_flush;
	bool attach;
	int err;
	uint64_t open_failures;
	uint64_t predicted; /* samples whose access sym_flow_predict() found */
	uint64_t rng;       /* which accesses a sample looks for */
};

/* ---- options -------------------------------------------------------------- */

static void witch_options_init(struct witch_options *o)
{
	*o = (struct witch_options){ .fp_precision = EXP_WEXACT_PRECISION, .slots = 4 };
}

static int witch_option(struct witch_options *o, int opt, const char *arg)
{
	char *end;

	switch (opt) {
	case WITCH_OPT_KINDS: {
		const char *s = arg;
		o->kinds = 0;
		while (*s) {
			size_t n = strcspn(s, ",");
			bool found = false;
			for (unsigned k = 0; k < EXP_WITCH_KINDS; k++) {
				const char *name = exp_witch_kind_name((enum exp_witch_kind)k);
				if (strlen(name) == n && !strncmp(s, name, n)) {
					o->kinds |= 1u << k;
					found = true;
				}
			}
			if (!found) {
				pr_err("unknown witch analysis '%.*s' (dead, silent, load)", (int)n, s);
				return 2;
			}
			s += n;
			if (*s == ',')
				s++;
		}
		if (!o->kinds) {
			pr_err("--witch needs at least one analysis: dead, silent, load");
			return 2;
		}
		return 0;
	}
	case WITCH_OPT_PERIOD: {
		errno = 0;
		unsigned long long p = strtoull(arg, &end, 10);
		if (*end || errno || !p || arg[0] == '-' || p < 10000) {
			pr_err("invalid witch period '%s': expected an integer >= 10000 (ns of task-clock)",
			       arg);
			return 2;
		}
		o->period = p;
		return 0;
	}
	case WITCH_OPT_FP: {
		errno = 0;
		double d = strtod(arg, &end);
		if (*end == '%') {
			d /= 100.0;
			end++;
		}
		if (*end || errno || !(d >= 0.0) || d >= 1.0) {
			pr_err("invalid float precision '%s': expected a fraction like 0.01 or 1%%", arg);
			return 2;
		}
		o->fp_precision = d;
		return 0;
	}
	case WITCH_OPT_EXACT:
		o->exact = true;
		return 0;
	case WITCH_OPT_WEIGHT:
		if (!strcmp(arg, "time") || !strcmp(arg, "instructions")) {
			o->by_insns = arg[0] == 'i';
			o->weight_given = true;
			return 0;
		}
		pr_err("unknown witch weighting '%s' (time, instructions)", arg);
		return 2;
	default:
		return 2;
	}
}

static int witch_options_check(const struct witch_options *o)
{
	if (!o->kinds && (o->period || o->exact || o->weight_given)) {
		pr_err("--witch-period, --witch-exact and --witch-weight need --witch dead,silent,load");
		return 2;
	}
	return 0;
}

static void witch_usage(FILE *f)
{
	fputs("      --witch LIST      watch memory accesses for waste (WITCH): dead (stores\n"
	      "                        overwritten unread), silent (stores of the value already\n"
	      "                        there), load (loads of the value loaded last time)\n"
	      "      --witch-period N  one witch sample per N ns of each thread's CPU time\n"
	      "                        (default 10000000)\n"
	      "      --witch-fp-precision P  floats equal within relative P (default 0.01)\n"
	      "      --witch-exact     check every access by single-stepping (ground truth;\n"
	      "                        thousands of times slower: small programs only)\n"
	      "      --witch-weight W  time (default): a timer sample picks an access by the\n"
	      "                        time since the previous one; instructions: weighed by\n"
	      "                        the instructions between accesses (see README)\n",
	      f);
}

/* ---- set-up ----------------------------------------------------------------- */

/* Sets up witch for a run recorded into w with profile contexts from prof.
 * Returns 0 or -errno after an error message. */
static int witch_start(struct rec_witch *x, struct rep_writer *w, struct exp_profile *prof)
{
	const struct witch_options *o = &x->o;
	struct exp_sink out;
	int err;

	x->w = w;
	x->prof = prof;
	x->rng = psup_rand_seed();
	if (o->exact) {
		err = exp_wexact_new(o->fp_precision, &x->exact);
		snprintf(x->event, sizeof(x->event), "single-step");
	} else {
		struct exp_witch_config c = {
			.kinds = o->kinds,
			.slots = o->slots,
			.fp_precision = o->fp_precision,
			.weight = 1,
		};
		x->ev.period = o->period ? o->period : WITCH_DEFAULT_PERIOD_NS;
		x->ev.jitter_pct = 10;
		/* A precise event with data addresses where the PMU has one
		 * (stores for dead/silent; loads only when that is all). */
		if (smp_mem_event_find(o->kinds == (1u << EXP_WITCH_LOAD), &x->ev, x->event,
				       sizeof(x->event)) == 0) {
			if (!o->period)
				x->ev.period = 100003;
			c.weight = x->ev.period;
		} else {
			snprintf(x->event, sizeof(x->event), "task-clock");
		}
		rec_sink_init(&out, w);
		err = exp_witch_new(&out, &c, &x->x);
	}
	if (err < 0) {
		pr_err("cannot set up witch: %s", strerror(-err));
		return err;
	}
	return 0;
}

static void thread_free(struct rec_witch *x, struct wt_thread *t)
{
	(void)x;
	for (unsigned i = 0; i < SUP_DEBUG_SLOTS; i++)
		smp_wp_close(t->wp[i]);
	smp_witch_close(t->ev);
	free(t->exact_buf);
	free(t);
}

static void witch_free(struct rec_witch *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->threads.cap; i++)
		if (x->threads.keys[i] && x->threads.vals[i])
			thread_free(x, (struct wt_thread *)(uintptr_t)x->threads.vals[i]);
	psup_u64map_release(&x->threads);
	psup_u64map_release(&x->fds);
	psup_u64map_release(&x->exact_ctx);
	exp_witch_free(x->x);
	exp_wexact_free(x->exact);
	free(x);
}

static void witch_session(struct rec_witch *x, struct sup_session *s)
{
	sigset_t own;

	x->sup = s;
	sigemptyset(&own);
	sigaddset(&own, SIGTRAP);
	if (!x->o.exact)
		sigaddset(&own, smp_witch_signal());
	/* none: the recorder fed by hand (rec_new_bare()) */
	if (s)
		sup_session_set_own_signals(s, &own);
}

static int witch_write_config(struct rec_witch *x)
{
	char kinds[32] = "";

	for (unsigned k = 0; k < EXP_WITCH_KINDS; k++)
		if (x->o.kinds & (1u << k)) {
			if (kinds[0])
				strcat(kinds, ",");
			strcat(kinds, exp_witch_kind_name((enum exp_witch_kind)k));
		}
	struct rep_witch_config c = {
		.kinds = kinds,
		.event = x->event,
		.period = x->o.exact ? 1 : x->ev.period,
		.clock = !x->o.exact && !x->ev.mem_event,
		.exact = x->o.exact,
		.fp_precision_ppm = (uint64_t)llround(x->o.fp_precision * 1e6),
		.slots = x->o.exact ? 0 : x->o.slots,
		.weight = x->ev.mem_event ? x->ev.period : 1,
		.weighting = x->o.exact ? NULL : x->ev.mem_event ? "events"
					 : x->o.by_insns         ? "instructions"
								 : "time",
	};
	return rep_write_witch_config(x->w, &c);
}

static struct wt_thread *thread_find(struct rec_witch *x, pid_t tid)
{
	uint64_t *v = psup_u64map_find(&x->threads, (uint64_t)tid);

	return v ? (struct wt_thread *)(uintptr_t)*v : NULL;
}

/* AT_ENTRY of /proc/PID/auxv: where the program starts (after ld.so). */
static int program_entry(pid_t pid, uint64_t *entry)
{
	char path[64], *buf;
	size_t len;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/auxv", pid);
	err = psup_read_file(path, &buf, &len);
	if (err < 0)
		return err;
	err = -ENOENT;
	for (size_t i = 0; i + 16 <= len; i += 16) {
		uint64_t kv[2];
		memcpy(kv, buf + i, 16);
		if (kv[0] == 9 /* AT_ENTRY */) {
			*entry = kv[1];
			err = 0;
			break;
		}
		if (!kv[0])
			break;
	}
	free(buf);
	return err;
}

static void witch_thread_new(struct rec_witch *x, pid_t tid, pid_t pid)
{
	struct wt_thread *t = calloc(1, sizeof(*t));
	uint64_t *v;
	int err;

	if (!t || !(v = psup_u64map_upsert(&x->threads, (uint64_t)tid, NULL))) {
		free(t);
		pr_warn("witch: out of memory for thread %d", tid);
		return;
	}
	if (*v)
		thread_free(x, (struct wt_thread *)(uintptr_t)*v);
	*v = (uintptr_t)t;
	t->tid = tid;
	t->pid = pid;
	if (x->o.exact) {
		uint64_t entry;
		t->exact_buf = malloc(2 * SYM_INSN_MAX_ACCESS * WITCH_EXACT_BUF);
		if (!t->exact_buf) {
			pr_warn("witch: out of memory for thread %d", tid);
			return;
		}
		/* The first thread of a program about to start (run mode,
		 * at its exec): stepping begins at the program's entry point,
		 * not in the dynamic loader (most of a small program's
		 * instructions, and not the program's). */
		if (tid == pid && !x->attach && program_entry(pid, &entry) == 0 &&
		    sup_thread_watch_set(x->sup, tid, 0, entry, 1, SUP_WATCH_EXEC) == 0) {
			t->exact_waiting = true;
			return;
		}
		if (sup_thread_set_stepping(x->sup, tid, true) < 0)
			pr_warn("witch: cannot single-step thread %d", tid);
		return;
	}
	/* Debug registers are per thread and not inherited by new threads
	 * (the kernel clears them at clone and exec): each thread starts with
	 * its own empty set, as in the paper (6.3: intra-thread analyses). */
	err = smp_witch_open(&x->ev, tid, &t->ev);
	if (err < 0) {
		t->ev = NULL;
		if (err != -ESRCH) {
			x->open_failures++;
			pr_warn("witch: cannot sample thread %d: %s", tid, smp_open_strerror(err));
		}
		return;
	}
	v = psup_u64map_upsert(&x->fds, (uint64_t)smp_witch_fd(t->ev) + 1, NULL);
	if (v)
		*v = 1;
}

static void exact_flush_thread(struct rec_witch *x, struct wt_thread *t);


static void witch_thread_gone(struct rec_witch *x, pid_t tid)
{
	struct wt_thread *t = thread_find(x, tid);

	if (!t)
		return;
	if (x->x)
		exp_witch_thread_end(x->x, tid);
	psup_u64map_remove(&x->threads, (uint64_t)tid);
	thread_free(x, t);
}

static void witch_exec(struct rec_witch *x, pid_t pid)
{
	/* The threads were reported gone (their watches forgotten: the kernel
	 * cleared the debug registers); addresses mean something else now. */
	if (x->exact)
		exp_wexact_process_end(x->exact, pid);
	for (size_t i = 0; i < x->exact_ctx.cap; i++)
		if (x->exact_ctx.keys[i] && (pid_t)((x->exact_ctx.keys[i] - 1) >> 48) == (pid & 0xffff))
			x->exact_ctx.vals[i] = 0;
}

/* ---- contexts ----------------------------------------------------------------- */

/* The calling context of the stopped thread: pcs[0] = pc (the accessing
 * instruction), then the return addresses unwound from a copy of its
 * registers and stack. Returns a node id, 0 when unknown. */
static uint64_t context_of(struct rec_witch *x, struct sym_space *sp, struct wt_thread *t,
			   const struct user_regs_struct *regs, uint64_t pc)
{
	struct smp_sample s = { .pid = t->pid, .tid = t->tid, .cpu = -1, .ip = regs->rip, .user = true, .have_regs = true };
	long n;
	int k;

	if (!sp)
		return 0;
	n = sup_thread_read(x->sup, t->tid, regs->rsp, x->stack, sizeof(x->stack));
	s.stack = x->stack;
	s.stack_size = n > 0 ? (size_t)n : 0;
	s.regs[SMP_REG_AX] = regs->rax;
	s.regs[SMP_REG_BX] = regs->rbx;
	s.regs[SMP_REG_CX] = regs->rcx;
	s.regs[SMP_REG_DX] = regs->rdx;
	s.regs[SMP_REG_SI] = regs->rsi;
	s.regs[SMP_REG_DI] = regs->rdi;
	s.regs[SMP_REG_BP] = regs->rbp;
	s.regs[SMP_REG_SP] = regs->rsp;
	s.regs[SMP_REG_IP] = regs->rip;
	s.regs[SMP_REG_FLAGS] = regs->eflags;
	s.regs[SMP_REG_R8] = regs->r8;
	s.regs[SMP_REG_R9] = regs->r9;
	s.regs[SMP_REG_R10] = regs->r10;
	s.regs[SMP_REG_R11] = regs->r11;
	s.regs[SMP_REG_R12] = regs->r12;
	s.regs[SMP_REG_R13] = regs->r13;
	s.regs[SMP_REG_R14] = regs->r14;
	s.regs[SMP_REG_R15] = regs->r15;
	k = sym_space_unwind_sample(sp, &s, x->pcs, WITCH_MAX_FRAMES);
	if (k <= 0) {
		x->pcs[0] = pc;
		k = 1;
	}
	x->pcs[0] = pc;
	int64_t node = exp_profile_context(x->prof, sp, t->pid, x->pcs, (unsigned)k);
	if (node < 0 && !x->err)
		x->err = (int)node;
	return node > 0 ? (uint64_t)node : 0;
}

/* ---- samples --------------------------------------------------------------- */

/* The access masks an analysis looks at (stores for dead and silent, loads
 * for load). */
static unsigned kind_mask(enum exp_witch_kind k)
{
	return k == EXP_WITCH_LOAD ? SYM_ACCESS_READ : SYM_ACCESS_WRITE;
}

/* The access masks of every analysis asked for. */
static unsigned wanted_mask(const struct rec_witch *x)
{
	unsigned mask = 0;

	for (unsigned k = 0; k < EXP_WITCH_KINDS; k++)
		if (x->o.kinds & (1u << k))
			mask |= kind_mask((enum exp_witch_kind)k);
	return mask;
}

/*
 * The accesses a new sample looks for. A time sample picks the next access
 * of the kinds it looks for, so with loads and stores both wanted a load
 * would be picked in proportion to the time since the previous load *or
 * store*: in a loop that waits on a multiply before its store, the loads
 * got almost no samples (witch-fp's silent loads read 3% with silent,load
 * where load alone read 69%, on an AMD VM whose timer lands on the store).
 * Each sample looks for stores or for loads, chosen at random, and weighs
 * twice (a mask narrower than wanted_mask()): each analysis then sees what
 * it would see alone, at half the samples.
 */
static unsigned sample_mask(struct rec_witch *x)
{
	unsigned mask = wanted_mask(x);

	if (mask == (SYM_ACCESS_READ | SYM_ACCESS_WRITE) && !x->ev.mem_event)
		mask = psup_rand_next(&x->rng) & 1 ? SYM_ACCESS_READ : SYM_ACCESS_WRITE;
	return mask;
}

static bool accesses_wanted(unsigned mask, const struct sym_insn *insn)
{
	for (unsigned i = 0; i < insn->naccess; i++)
		if (insn->access[i].flags & mask)
			return true;
	return false;
}

static int sample_here(struct rec_witch *x, struct sym_space *sp, struct wt_thread *t);
static void cancel_pending(struct rec_witch *x, struct wt_thread *t);

static int on_sample(struct rec_witch *x, struct sym_space *sp, struct wt_thread *t)
{
	uint64_t mask = 0;

	exp_witch_signal_seen(x->x);
	smp_witch_next(t->ev);
	/* A step is under way (the step's own kernel time counts as task
	 * time too): the signal stopped the thread before the stepped
	 * instruction ran, so the step is asked again. */
	if (t->seek)
		return SUP_SIGNAL_SUPPRESS | SUP_SIGNAL_STEP;
	cancel_pending(x, t);
	/* A debug trap (a step, a watchpoint) is a forced SIGTRAP: when the
	 * thread blocks SIGTRAP the kernel unblocks it and resets its handler
	 * to the default (force_sig_info), even though psup consumes the
	 * signal. So nothing is stepped or armed in such a thread. */
	if (sup_thread_sigmask(x->sup, t->tid, &mask) < 0 || (mask & (1ULL << (SIGTRAP - 1)))) {
		exp_witch_skip(x->x, EXP_WITCH_SKIP_BLOCKED);
		return SUP_SIGNAL_SUPPRESS;
	}
	return sample_here(x, sp, t);
}

/* The code around rip: WITCH_CODE bytes before it (loops branch back) and
 * WITCH_CODE from it. Returns false when not even the bytes from rip can be
 * read. */
static bool code_around(struct rec_witch *x, struct wt_thread *t, uint64_t rip,
			uint8_t buf[2 * WITCH_CODE], struct sym_code *code)
{
	long got = sup_thread_read(x->sup, t->tid, rip - WITCH_CODE, buf, 2 * WITCH_CODE);

	if (got > (long)WITCH_CODE) {
		*code = (struct sym_code){ buf, (size_t)got, rip - WITCH_CODE };
		return true;
	}
	/* rip near the start of a mapping: from rip only */
	got = sup_thread_read(x->sup, t->tid, rip, buf, WITCH_CODE);
	*code = (struct sym_code){ buf, got > 0 ? (size_t)got : 0, rip };
	return got > 0;
}

/*
 * A timer sample picks an access in proportion to the time since the
 * previous access of its kind: in a loop storing once every 14
 * instructions a store is picked 14/5 as often as in one storing every 5.
 * With --witch-weight instructions each sample weighs 1 / (instructions
 * since that previous access, from the code: sym_flow_gap), which makes
 * the fractions count accesses, as the paper's store and load events do,
 * up to the difference in time per instruction. That difference is large
 * where the accesses are the cost (a store-bound loop runs a store a cycle
 * however many instructions surround it): there time weighs better, hence
 * the default (docs/witch.md, "Time-weighted samples"). The unit is a gap of
 * WITCH_LOOK instructions, which is also what a gap not found within
 * WITCH_LOOK counts as: weights are 1 to WITCH_LOOK, so the byte counts
 * keep their resolution.
 */
static void sample_weights(struct rec_witch *x, struct wt_thread *t,
			   const struct user_regs_struct *regs, uint64_t pc,
			   double weight[EXP_WITCH_KINDS])
{
	uint8_t buf[2 * WITCH_CODE];
	struct sym_code code;
	bool have = code_around(x, t, pc, buf, &code);

	for (unsigned k = 0; k < EXP_WITCH_KINDS; k++) {
		unsigned gap = 0;
		bool cyclic;

		if (have && (x->o.kinds & (1u << k)))
			gap = sym_flow_gap(&code, pc, kind_mask((enum exp_witch_kind)k), WITCH_LOOK,
					   regs, &cyclic);
		weight[k] = (double)WITCH_LOOK / (gap ? gap : WITCH_LOOK);
	}
}

static void arm_pending(struct rec_witch *x, struct wt_thread *t, uint64_t pc,
			const struct sym_insn *insn);

/* The sample at the instruction about to run (or, seeking, the next one). */
static int sample_here(struct rec_witch *x, struct sym_space *sp, struct wt_thread *t)
{
	struct user_regs_struct regs;
	struct exp_witch_access acc[SYM_INSN_MAX_ACCESS];
	struct sym_insn insn;
	struct smp_mem_sample ms;
	uint8_t code[16];
	unsigned nacc = 0;
	long n;

	if (sup_session_is_stopping(x->sup)) {
		t->seek = 0;
		return SUP_SIGNAL_SUPPRESS;
	}
	if (sup_thread_regs(x->sup, t->tid, &regs) < 0) {
		exp_witch_skip(x->x, EXP_WITCH_SKIP_READ);
		return SUP_SIGNAL_SUPPRESS;
	}
	/* Delivered on the way out of a system call: the next user
	 * instruction is not where the time went, and a step here would race
	 * the kernel's syscall restart. */
	if ((long long)regs.orig_rax >= 0 && !t->seek) {
		exp_witch_skip(x->x, EXP_WITCH_SKIP_SYSCALL);
		return SUP_SIGNAL_SUPPRESS;
	}
	n = sup_thread_read(x->sup, t->tid, regs.rip, code, sizeof(code));
	if (n <= 0) {
		exp_witch_skip(x->x, EXP_WITCH_SKIP_READ);
		return SUP_SIGNAL_SUPPRESS;
	}
	if (sym_insn_decode(code, (size_t)n, &regs, &insn) < 0) {
		exp_witch_skip(x->x, EXP_WITCH_SKIP_DECODE);
		return SUP_SIGNAL_SUPPRESS;
	}
	if (x->ev.mem_event && smp_witch_last_mem_sample(t->ev, &ms) == 0 && ms.addr) {
		/* A precise sample names its address: keep only the access
		 * that used it (the instruction at ip is the sampled one only
		 * when the PMU is precise about it too). */
		unsigned kept = 0;
		for (unsigned i = 0; i < insn.naccess; i++)
			if (ms.addr >= insn.access[i].addr &&
			    ms.addr < insn.access[i].addr + insn.access[i].size)
				insn.access[kept++] = insn.access[i];
		insn.naccess = kept;
	}
	pr_trace("witch: sample of %d at %#llx: %u accesses, flags %#x", t->tid,
		 (unsigned long long)regs.rip, insn.naccess, insn.flags);
	uint64_t pc = regs.rip;
	bool syscall = n >= 2 && code[0] == 0x0f && code[1] == 0x05;
	if (!t->seek)
		t->mask = sample_mask(x);
	bool wanted = insn.naccess && accesses_wanted(t->mask, &insn);
	if (!wanted && !t->seek && !x->ev.mem_event && !syscall) {
		/* The way to the next access: the sample is taken there at
		 * once when its address can be computed (sym_flow_predict()), else
		 * the thread is stepped there, with slack for the way the
		 * program really goes. */
		uint8_t buf[2 * WITCH_CODE];
		uint64_t path[WITCH_SEEK_MAX + 1];
		struct sym_code cw;
		unsigned np = code_around(x, t, regs.rip, buf, &cw)
				      ? sym_flow_path(&cw, regs.rip, t->mask, WITCH_LOOK, &regs,
						      path, WITCH_SEEK_MAX + 1)
				      : 0;
		wanted = sym_flow_predict(&cw, path, np, &regs, &pc, &insn);
		if (wanted)
			x->predicted++;
		else
			t->seek_max = np ? np + 1 : 0; /* np - 1 instructions, + 2 */
	}
	if (!wanted) {
		/* Step to the next instruction, unless it is a system call
		 * (0f 05: stepping it would wait for the call), an int1 (f1:
		 * its SIGTRAP would look like the step's, and the program's
		 * handler would never see it) or too far. */
		if (!x->ev.mem_event && !syscall && code[0] != 0xf1 && t->seek < t->seek_max) {
			t->seek++;
			return SUP_SIGNAL_SUPPRESS | SUP_SIGNAL_STEP;
		}
		t->seek = 0;
		exp_witch_skip(x->x, (insn.flags & SYM_INSN_UNWATCHABLE) ? EXP_WITCH_SKIP_UNWATCHABLE
									 : EXP_WITCH_SKIP_NO_ACCESS);
		return SUP_SIGNAL_SUPPRESS;
	}
	t->seek = 0;
	for (unsigned i = 0; i < insn.naccess; i++) {
		const struct sym_access *a = &insn.access[i];
		uint64_t waddr;
		unsigned wlen;

		if (!(a->flags & t->mask) || !sym_watch_range(a->addr, a->size, &waddr, &wlen))
			continue;
		acc[nacc++] = (struct exp_witch_access){
			.addr = waddr,
			.size = a->size,
			.len = wlen,
			.flags = (a->flags & t->mask) | (insn.flags & (SYM_INSN_FP32 | SYM_INSN_FP64)),
		};
	}
	uint64_t ctx = context_of(x, sp, t, &regs, pc);
	double weight[EXP_WITCH_KINDS];
	/* A precise event's samples count accesses already. */
	bool weigh = !x->ev.mem_event && x->o.by_insns;
	if (weigh)
		sample_weights(x, t, &regs, pc, weight);
	double scale = t->mask == wanted_mask(x) ? 1.0 : 2.0;
	for (unsigned k = 0; k < EXP_WITCH_KINDS; k++)
		weight[k] = (weigh ? weight[k] : 1.0) * scale;
	weigh = weigh || scale != 1.0;
	if (exp_witch_sample(x->x, t->tid, ctx, acc, nacc, weigh ? weight : NULL, &t->plan) < 0 &&
	    !x->err)
		x->err = -ENOMEM;
	arm_pending(x, t, pc, &insn);
	return SUP_SIGNAL_SUPPRESS;
}

static void disarm(struct rec_witch *x, struct wt_thread *t, unsigned slot)
{
	(void)x;
	smp_wp_close(t->wp[slot]);
	t->wp[slot] = NULL;
	t->armed &= ~(1u << slot);
	t->pending &= ~(1u << slot);
}

/*
 * Arms each register of the plan before the sampled access runs: its first
 * trap is then that access (or whatever touches those bytes first), which
 * leaves the value the watch starts from (on_first_trap). One stop, the
 * trap, where stepping over the access and arming after it took one too,
 * and none to reach an access sym_flow_predict() saw ahead.
 */
static void arm_pending(struct rec_witch *x, struct wt_thread *t, uint64_t pc,
			const struct sym_insn *insn)
{
	for (unsigned i = 0; i < t->plan.narm; i++) {
		const struct exp_witch_arm *a = &t->plan.arm[i];
		struct smp_wp *nw = NULL;
		/* The slot may hold an older watch the reservoir replaced. The
		 * new one is opened first, so it gets another fd number: a
		 * signal of the old one still queued is then told apart.
		 * Only when no debug register is free does the old one go
		 * first. */
		int err = smp_wp_open(t->tid, a->addr, a->len, a->readwrite, &nw);

		if (err == -ENOSPC && t->wp[a->slot]) {
			disarm(x, t, a->slot);
			err = smp_wp_open(t->tid, a->addr, a->len, a->readwrite, &nw);
		}
		disarm(x, t, a->slot);
		if (err) {
			exp_witch_armed(x->x, t->tid, a->slot, err, NULL);
			continue;
		}
		t->wp[a->slot] = nw;
		uint64_t *v = psup_u64map_upsert(&x->fds, (uint64_t)smp_wp_fd(nw) + 1, NULL);
		if (v)
			*v = 1;
		t->armed |= 1u << a->slot;
		t->pending |= 1u << a->slot;
		t->pend[a->slot] = (struct wt_pending){
			.arm = *a,
			.pc = pc,
			.len = insn->length,
			.string = insn->flags & SYM_INSN_STRING,
			.stack = insn->flags & SYM_INSN_STACK,
		};
	}
	t->plan.narm = 0;
}

/* Drops a pending watch whose sampled access never came (the program went
 * another way than predicted; a handler jumped away; something else touched
 * the bytes first). */
static void drop_pending(struct rec_witch *x, struct wt_thread *t, unsigned slot)
{
	exp_witch_disarmed(x->x, t->tid, slot);
	exp_witch_skip(x->x, EXP_WITCH_SKIP_STEP);
	disarm(x, t, slot);
}

/* All of them: a new sample of the thread came first. */
static void cancel_pending(struct rec_witch *x, struct wt_thread *t)
{
	for (unsigned slot = 0; slot < SUP_DEBUG_SLOTS; slot++)
		if (t->pending & (1u << slot))
			drop_pending(x, t, slot);
}

static void cancel_seek(struct rec_witch *x, struct wt_thread *t)
{
	exp_witch_skip(x->x, EXP_WITCH_SKIP_STEP);
	t->seek = 0;
}

/* ---- traps ----------------------------------------------------------------- */

/*
 * What the trapping access did: a data watchpoint traps after the
 * instruction, so the instruction is the one ending at the trap's ip. x86
 * cannot be decoded backwards, so each length 1-15 is tried: the candidate
 * that decodes to exactly that length and touches the watched bytes (with
 * the registers as they are now) is it; when several do, the longest: the
 * tail of a longer instruction often decodes on its own (the zero bytes of
 * movl $0,(%rax) end in 00 00, add %al,(%rax)), while bytes before an
 * instruction that extend it are mostly prefixes that keep its access.
 * A call leaves ip at its target
 * (its pushed slot is at rsp); after a ret ip is right after a call (the
 * ret read the slot below rsp); a rep string instruction stops with ip on
 * itself between iterations. *pc gets the instruction's address. Returns
 * EXP_WITCH_READ/WRITE bits, 0 when unknown.
 */
/* The access flags of insn's accesses that touch [waddr, waddr + wlen). */
static unsigned touching(const struct sym_insn *insn, uint64_t waddr, unsigned wlen)
{
	unsigned f = 0;

	for (unsigned i = 0; i < insn->naccess; i++)
		if (sym_flow_overlaps(insn->access[i].addr, insn->access[i].size, waddr, wlen))
			f |= insn->access[i].flags;
	return f;
}

static unsigned trap_access(struct rec_witch *x, struct wt_thread *t,
			    const struct user_regs_struct *regs, uint64_t waddr, unsigned wlen,
			    uint64_t *pc)
{
	uint8_t code[32];
	struct sym_insn insn;
	struct user_regs_struct r = *regs;
	unsigned flags = 0, guess = 0, nguess = 0;
	uint64_t guess_pc = 0;
	bool guess_clobbers = false;
	long n;

	*pc = regs->rip - 1;
	/* code[0..16) are the bytes before ip, code[16..32) from ip on. */
	n = sup_thread_read(x->sup, t->tid, regs->rip - 16, code, sizeof(code));
	if (n < 16)
		return 0;
	/* rep string: ip still on the instruction, its last iteration just
	 * behind rsi/rdi. */
	if (sym_insn_decode(code + 16, (size_t)n - 16, regs, &insn) == 0 &&
	    (insn.flags & SYM_INSN_STRING)) {
		for (unsigned i = 0; i < insn.naccess; i++) {
			const struct sym_access *a = &insn.access[i];
			if (sym_flow_overlaps(a->addr - a->size, a->size, waddr, wlen) ||
			    sym_flow_overlaps(a->addr + a->size, a->size, waddr, wlen))
				flags |= a->flags;
		}
		if (flags) {
			*pc = regs->rip;
			return flags;
		}
	}
	for (unsigned k = 1; k <= 15; k++) {
		r.rip = regs->rip - k;
		if (sym_insn_decode(code + 16 - k, k, &r, &insn) < 0 || insn.length != k)
			continue;
		if (sym_flow_is_call(code + 16 - k, k)) {
			/* ip after a call: the callee's ret read the slot. */
			if (sym_flow_overlaps(regs->rsp - 8, 8, waddr, wlen)) {
				*pc = regs->rip - k;
				return EXP_WITCH_READ;
			}
			continue;
		}
		unsigned f = touching(&insn, waddr, wlen);
		/* push, pop and leave moved rsp (leave also rbp) after their
		 * access: decode again with the registers they had before */
		static const struct {
			int64_t dsp;
			bool rbp;
		} undo[] = {
			{ 8, false },
			{ -8, false },
			{ 0, true },
		};
		for (unsigned u = 0; !f && (insn.flags & SYM_INSN_STACK) && u < 3; u++) {
			struct user_regs_struct b = r;
			struct sym_insn bi;
			b.rsp = regs->rsp + (uint64_t)undo[u].dsp;
			if (undo[u].rbp)
				b.rbp = regs->rsp - 8;
			if (sym_insn_decode(code + 16 - k, k, &b, &bi) == 0)
				f |= touching(&bi, waddr, wlen);
		}
		if (f) {
			*pc = regs->rip - k;
			flags = f;
			continue;
		}
		if (insn.naccess) {
			/* The registers the address came from may have been
			 * overwritten by the instruction itself (mov
			 * (%rdi,%rax,4),%eax): remember it as a guess. */
			nguess++;
			guess = 0;
			for (unsigned i = 0; i < insn.naccess; i++)
				guess |= insn.access[i].flags;
			guess_pc = regs->rip - k;
			guess_clobbers = insn.gpr_written & insn.gpr_address;
		}
	}
	if (flags)
		return flags;
	/* A short candidate is often the tail of a longer instruction (the
	 * 00 00 ending movl $0,(%rax) is add %al,(%rax)); one that overwrote
	 * its own address register is what a miss here looks like. */
	if (nguess >= 1 && (guess_pc + 2 < regs->rip || guess_clobbers)) {
		*pc = guess_pc;
		return guess;
	}
	/* A call: ip at the callee, the return address just pushed. */
	if (sym_flow_overlaps(regs->rsp, 8, waddr, wlen)) {
		uint64_t ra;
		if (sup_thread_read(x->sup, t->tid, regs->rsp, &ra, 8) == 8 &&
		    sup_thread_read(x->sup, t->tid, ra - 16, code, 16) == 16) {
			for (unsigned k = 2; k <= 7; k++)
				if (sym_flow_is_call(code + 16 - k, k)) {
					*pc = ra - k;
					return EXP_WITCH_WRITE;
				}
		}
	}
	return 0;
}

/* The first trap of a pending watch: the sampled instruction ran when the
 * thread stopped right after it (a rep string instruction between its
 * iterations stops on itself; a call at its target with rsp on the slot it
 * pushed, a ret with rsp just above the one it popped); the watch starts
 * from the value it left. Anything else touched the bytes first (the
 * program went another way than predicted, a load before the sampled
 * store): the sample is dropped. */
static void on_first_trap(struct rec_witch *x, struct wt_thread *t, unsigned slot)
{
	const struct wt_pending *p = &t->pend[slot];
	struct user_regs_struct regs;
	uint8_t value[8] = { 0 };
	bool ran;

	t->pending &= ~(1u << slot);
	ran = sup_thread_regs(x->sup, t->tid, &regs) == 0 &&
	      (regs.rip == p->pc + p->len || (p->string && regs.rip == p->pc) ||
	       (p->stack && (regs.rsp == p->arm.addr || regs.rsp == p->arm.addr + 8)));
	if (!ran || sup_thread_read(x->sup, t->tid, p->arm.addr, value, p->arm.len) !=
			    (long)p->arm.len) {
		drop_pending(x, t, slot);
		return;
	}
	exp_witch_armed(x->x, t->tid, slot, 0, value);
}

/* The watchpoint of slot trapped: the thread stopped right after the
 * trapping instruction. */
static void on_trap(struct rec_witch *x, struct sym_space *sp, struct wt_thread *t, unsigned slot)
{
	struct user_regs_struct regs;
	struct exp_witch_verdict v;
	uint8_t value[8] = { 0 };
	uint64_t waddr, pc, ctx;
	unsigned wlen, flags;

	if (exp_witch_slot_range(x->x, t->tid, slot, &waddr, &wlen) < 0 ||
	    sup_thread_regs(x->sup, t->tid, &regs) < 0) {
		exp_witch_skip(x->x, EXP_WITCH_SKIP_STRAY);
		disarm(x, t, slot);
		return;
	}
	flags = trap_access(x, t, &regs, waddr, wlen, &pc);
	if (sup_thread_read(x->sup, t->tid, waddr, value, wlen) != (long)wlen)
		flags = 0;
	ctx = context_of(x, sp, t, &regs, pc);
	if (exp_witch_trap(x->x, t->tid, slot, flags, value, ctx, &v) < 0) {
		exp_witch_skip(x->x, EXP_WITCH_SKIP_STRAY);
		v.disarm = true;
	}
	if (v.disarm)
		disarm(x, t, slot);
}

/* ---- exact mode --------------------------------------------------------------- */

static uint64_t exact_context(struct rec_witch *x, struct sym_space *sp, struct wt_thread *t,
			      uint64_t pc)
{
	/* Leaf-only contexts: unwinding at every instruction would take
	 * hours. Interned once per address. */
	uint64_t key = (((uint64_t)(t->pid & 0xffff) << 48) ^ pc) + 1;
	uint64_t *v = psup_u64map_upsert(&x->exact_ctx, key, NULL);

	if (v && *v)
		return *v - 1;
	int64_t node = sp ? exp_profile_context(x->prof, sp, t->pid, &pc, 1) : 0;
	if (node < 0)
		node = 0;
	if (v)
		*v = (uint64_t)node + 1;
	return (uint64_t)node;
}

/* Feeds the accesses of the instruction just stepped over. */
static void exact_flush_thread(struct rec_witch *x, struct wt_thread *t)
{
	for (unsigned i = 0; i < t->nexact; i++) {
		struct exp_wexact_access *a = &t->exact[i];
		if (a->flags & EXP_WEXACT_WRITE) {
			uint8_t *after = (uint8_t *)a->after;
			if (sup_thread_read(x->sup, t->tid, a->addr, after, a->size) != (long)a->size)
				continue;
		}
		if (exp_wexact_access(x->exact, t->pid, a) == -ENOMEM && !x->err)
			x->err = -ENOMEM;
	}
	t->nexact = 0;
}

static int on_exact_step(struct rec_witch *x, struct sym_space *sp, struct wt_thread *t)
{
	struct user_regs_struct regs;
	struct sym_insn insn;
	uint8_t code[16];
	long n;

	exact_flush_thread(x, t);
	if (sup_thread_regs(x->sup, t->tid, &regs) < 0)
		return SUP_SIGNAL_SUPPRESS;
	n = sup_thread_read(x->sup, t->tid, regs.rip, code, sizeof(code));
	if (n <= 0 || sym_insn_decode(code, (size_t)n, &regs, &insn) < 0)
		return SUP_SIGNAL_SUPPRESS;
	uint64_t ctx = insn.naccess ? exact_context(x, sp, t, regs.rip) : 0;
	for (unsigned i = 0; i < insn.naccess && t->exact_buf; i++) {
		const struct sym_access *a = &insn.access[i];
		struct exp_wexact_access *e = &t->exact[t->nexact];
		uint8_t *before = t->exact_buf + 2 * i * WITCH_EXACT_BUF;

		if (!a->size || a->size > WITCH_EXACT_BUF)
			continue;
		if (sup_thread_read(x->sup, t->tid, a->addr, before, a->size) != (long)a->size)
			continue;
		*e = (struct exp_wexact_access){
			.ctx = ctx,
			.addr = a->addr,
			.size = a->size,
			.flags = a->flags | (insn.flags & (SYM_INSN_FP32 | SYM_INSN_FP64)),
			.before = before,
			.after = before + WITCH_EXACT_BUF,
		};
		t->nexact++;
	}
	t->exact_pc = regs.rip;
	return SUP_SIGNAL_SUPPRESS;
}

/* ---- the hook ---------------------------------------------------------------- */

static int witch_signal_stop(struct rec_witch *x, struct sym_space *sp, pid_t tid, int sig)
{
	struct wt_thread *t = thread_find(x, tid);
	siginfo_t si;

	if (!t)
		return SUP_SIGNAL_DELIVER;
	if (sig != SIGTRAP && sig != smp_witch_signal()) {
		/* The program's signal comes first: a pending single-step
		 * would end in its handler, not after the sampled access. */
		if (t->seek)
			cancel_seek(x, t);
		t->nexact = 0; /* exact: the instruction runs later */
		return SUP_SIGNAL_DELIVER;
	}
	if (sup_thread_siginfo(x->sup, tid, &si) < 0)
		return SUP_SIGNAL_DELIVER;
	if (sig != SIGTRAP) {
		if (t->ev && smp_witch_is_ours(t->ev, &si)) {
			if (sup_session_is_stopping(x->sup)) {
				smp_witch_enable(t->ev, false);
				return SUP_SIGNAL_SUPPRESS;
			}
			return on_sample(x, sp, t);
		}
		for (unsigned slot = 0; slot < SUP_DEBUG_SLOTS; slot++) {
			if (!smp_wp_is_ours(t->wp[slot], &si))
				continue;
			if (sup_session_is_stopping(x->sup))
				disarm(x, t, slot);
			else if (t->pending & (1u << slot))
				on_first_trap(x, t, slot);
			else
				on_trap(x, sp, t, slot);
			/* A trap of the instruction a step was toward: the
			 * step is asked again. */
			return SUP_SIGNAL_SUPPRESS | (t->seek ? SUP_SIGNAL_STEP : 0);
		}
		/* One of an earlier event of this thread (a closed
		 * watchpoint, a sampling event before an exec). */
		if (si.si_code == POLL_IN && psup_u64map_find(&x->fds, (uint64_t)si.si_fd + 1)) {
			exp_witch_skip(x->x, EXP_WITCH_SKIP_STRAY);
			return SUP_SIGNAL_SUPPRESS | (t->seek ? SUP_SIGNAL_STEP : 0);
		}
		if (t->seek)
			cancel_seek(x, t);
		return SUP_SIGNAL_DELIVER;
	}
	/* SIGTRAP: psup's (its single-step, its watchpoints: DR6 says) or
	 * the program's own (int3, raise, kill: delivered unchanged). */
	/* A step over a system call instruction reports TRAP_BRKPT (the
	 * kernel's syscall-exit step report), any other TRAP_TRACE; a
	 * program's own int3 is SI_KERNEL, its raise() SI_TKILL. */
	bool step = si.si_code == TRAP_TRACE || si.si_code == TRAP_BRKPT;
	if (x->o.exact) {
		if (t->exact_waiting && si.si_code == TRAP_HWBKPT) {
			uint64_t dr6 = 0;
			sup_thread_debug_status(x->sup, tid, &dr6);
			sup_thread_watch_clear(x->sup, tid, 0);
			t->exact_waiting = false;
			sup_thread_set_stepping(x->sup, tid, true);
			/* At the entry, before its first instruction. */
			return on_exact_step(x, sp, t) | SUP_SIGNAL_STEP;
		}
		if (step)
			return on_exact_step(x, sp, t);
		t->nexact = 0;
		return SUP_SIGNAL_DELIVER;
	}
	if (!step && si.si_code != TRAP_HWBKPT) {
		if (t->seek)
			cancel_seek(x, t);
		return SUP_SIGNAL_DELIVER;
	}
	/* psup's watchpoints raise no SIGTRAP (perf breakpoints): a SIGTRAP
	 * here is one of psup's steps, or the program's. */
	if (step && t->seek)
		return sample_here(x, sp, t);
	/* A single-step or hardware trap psup did not ask for: the
	 * program's (it may single-step itself through its own debugger
	 * logic); leave it alone. */
	return SUP_SIGNAL_DELIVER;
}

/* ---- periodic work and the end ------------------------------------------------- */

/* A thread that blocks the witch signal would queue them (a realtime
 * signal queues every instance; ptrace sees a signal only when the thread
 * dequeues it, which a blocked one never is), visible to its sigpending()
 * and taken by a sigwait or signalfd of its own: its event is turned off
 * while it blocks the signal, and what it queued meanwhile is drained (the
 * supervisor unblocks it at a stop, the hook consumes it, the mask comes
 * back). Test: t6040-witch-signals. */
static void check_blocked(struct rec_witch *x, struct wt_thread *t)
{
	int sig = smp_witch_signal();
	uint64_t blk, pnd;

	if (!t->ev || sup_thread_sigstate(t->tid, &pnd, &blk) < 0)
		return;
	bool blocked = (blk >> (sig - 1)) & 1;
	if (blocked != t->blocked) {
		t->blocked = blocked;
		smp_witch_enable(t->ev, !blocked);
		if (blocked)
			exp_witch_skip(x->x, EXP_WITCH_SKIP_BLOCKED);
		pr_debug("witch: thread %d %s the sampling signal", t->tid,
			 blocked ? "blocks" : "unblocked");
	}
	/* Its watchpoints' traps would wait too, and be judged late: off. */
	if (blocked) {
		for (unsigned slot = 0; slot < SUP_DEBUG_SLOTS; slot++)
			if (t->wp[slot]) {
				exp_witch_disarmed(x->x, t->tid, slot);
				disarm(x, t, slot);
			}
	}
	if (blocked && ((pnd >> (sig - 1)) & 1))
		sup_thread_drain_signal(x->sup, t->tid, sig);
}

static int write_exact(struct rec_witch *x)
{
	static const enum exp_wexact_kind map[EXP_WITCH_KINDS] = {
		[EXP_WITCH_DEAD] = EXP_WEXACT_DEAD_STORE,
		[EXP_WITCH_SILENT] = EXP_WEXACT_SILENT_STORE,
		[EXP_WITCH_LOAD] = EXP_WEXACT_SILENT_LOAD,
	};
	for (unsigned k = 0; k < EXP_WITCH_KINDS; k++) {
		struct exp_wexact_pair *pairs = NULL;
		size_t n = 0;
		int err;

		if (!(x->o.kinds & (1u << k)))
			continue;
		err = exp_wexact_pairs(x->exact, map[k], &pairs, &n);
		if (err < 0)
			return err;
		for (size_t i = 0; i < n; i += 256) {
			uint64_t vals[4 * 256];
			size_t m = n - i < 256 ? n - i : 256;
			for (size_t j = 0; j < m; j++) {
				vals[4 * j] = pairs[i + j].watch_ctx;
				vals[4 * j + 1] = pairs[i + j].trap_ctx;
				vals[4 * j + 2] = pairs[i + j].waste;
				vals[4 * j + 3] = pairs[i + j].use;
			}
			err = rep_write_witch_pairs(x->w, exp_witch_kind_name((enum exp_witch_kind)k),
						    vals, 4 * m);
			if (err < 0) {
				free(pairs);
				return err;
			}
		}
		free(pairs);
	}
	return 0;
}

static int witch_tick(struct rec_witch *x)
{
	uint64_t now = psup_now_ns();

	if (x->err)
		return x->err;
	if (x->x) {
		for (size_t i = 0; i < x->threads.cap; i++)
			if (x->threads.keys[i] && x->threads.vals[i])
				check_blocked(x, (struct wt_thread *)(uintptr_t)x->threads.vals[i]);
		if (now - x->last_flush >= WITCH_FLUSH_NS) {
			x->last_flush = now;
			return exp_witch_flush(x->x);
		}
	}
	return 0;
}

static int witch_finish(struct rec_witch *x, bool quiet)
{
	int err;

	if (x->exact) {
		for (size_t i = 0; i < x->threads.cap; i++)
			if (x->threads.keys[i] && x->threads.vals[i])
				exact_flush_thread(x, (struct wt_thread *)(uintptr_t)x->threads.vals[i]);
		err = write_exact(x);
		if (!err && !quiet) {
			for (unsigned k = 0; k < EXP_WITCH_KINDS; k++) {
				static const enum exp_wexact_kind map[] = { EXP_WEXACT_DEAD_STORE,
									    EXP_WEXACT_SILENT_STORE,
									    EXP_WEXACT_SILENT_LOAD };
				struct exp_wexact_total tot;
				if (!(x->o.kinds & (1u << k)))
					continue;
				exp_wexact_total(x->exact, map[k], &tot);
				pr_info("witch exact: %s %.1f%% wasted (%llu of %llu bytes)",
					exp_witch_kind_name((enum exp_witch_kind)k),
					100.0 * exp_wexact_fraction(&tot), (unsigned long long)tot.waste,
					(unsigned long long)(tot.waste + tot.use));
			}
		}
		return err ? err : x->err;
	}
	err = exp_witch_flush(x->x);
	if (!err && !quiet) {
		struct exp_witch_stats st;
		exp_witch_get_stats(x->x, &st);
		pr_debug("witch: %llu signals, %llu samples reached by prediction (no step)",
			 (unsigned long long)st.signals, (unsigned long long)x->predicted);
		for (unsigned k = 0; k < EXP_WITCH_KINDS; k++) {
			double waste, use;
			if (!(x->o.kinds & (1u << k)))
				continue;
			exp_witch_totals(x->x, (enum exp_witch_kind)k, &waste, &use);
			pr_info("witch: %s %.1f%% wasted (%llu samples, %llu traps)",
				exp_witch_kind_name((enum exp_witch_kind)k),
				waste + use > 0 ? 100.0 * waste / (waste + use) : 0.0,
				(unsigned long long)st.kind[k].samples, (unsigned long long)st.kind[k].traps);
		}
	}
	if (x->open_failures)
		pr_warn("witch: %llu thread(s) could not be sampled", (unsigned long long)x->open_failures);
	return err ? err : x->err;
}

/* ---- the recorder's mode ------------------------------------------------------ */

static struct rec_witch *to_witch(struct rec_mode *m)
{
	return (struct rec_witch *)m;
}

static const struct rec_option witch_mode_options[] = {
	{ "witch", required_argument, 0, WITCH_OPT_KINDS },
	{ "witch-period", required_argument, 0, WITCH_OPT_PERIOD },
	{ "witch-fp-precision", required_argument, 0, WITCH_OPT_FP },
	{ "witch-exact", no_argument, 0, WITCH_OPT_EXACT },
	{ "witch-weight", required_argument, 0, WITCH_OPT_WEIGHT },
	{ NULL, 0, 0, 0 },
};

static int witch_mode_option(struct rec_mode *m, int id, const char *arg, bool attach)
{
	(void)attach;
	return witch_option(&to_witch(m)->o, id, arg) ? 2 : -1;
}

static int witch_mode_check(struct rec_mode *m, bool attach, unsigned free_slots)
{
	struct witch_options *o = &to_witch(m)->o;

	(void)attach;
	/* x86 has 4 debug registers per thread: breakpoint progress points
	 * first, witch's watchpoints get the rest */
	o->slots = free_slots;
	if (o->kinds && !o->slots) {
		pr_err("--witch: the progress points (-p, --latency) take all 4 debug registers; "
		       "use --sampled-progress or psup.h points for some of them");
		return 2;
	}
	if (witch_options_check(o))
		return 2;
	return -1;
}

static void witch_mode_usage(FILE *f, bool attach)
{
	(void)attach;
	witch_usage(f);
}

static bool witch_mode_enabled(const struct rec_mode *m)
{
	return ((const struct rec_witch *)m)->o.kinds != 0;
}

static int witch_mode_start(struct rec_mode *m, const struct rec_env *env)
{
	struct rec_witch *x = to_witch(m);

	/* exact mode steps from the attach */
	x->attach = env->attach;
	return witch_start(x, env->w, env->prof);
}

/* The session exists, before its first thread is reported. */
static int witch_mode_header(struct rec_mode *m, struct sup_session *s)
{
	witch_session(to_witch(m), s);
	return witch_write_config(to_witch(m));
}

static int witch_mode_thread_new(struct rec_mode *m, struct sym_space *sp, pid_t tid, pid_t pid,
				 pid_t parent, bool new_process, uint64_t time)
{
	(void)sp;
	(void)time;
	(void)parent;
	(void)new_process;
	witch_thread_new(to_witch(m), tid, pid);
	return 0;
}

static int witch_mode_thread_gone(struct rec_mode *m, pid_t tid, bool exited, uint64_t time)
{
	(void)exited;
	(void)time;
	witch_thread_gone(to_witch(m), tid);
	return 0;
}

static void witch_mode_exec(struct rec_mode *m, struct sym_space *sp, pid_t pid)
{
	(void)sp;
	witch_exec(to_witch(m), pid);
}

static int witch_mode_signal_stop(struct rec_mode *m, struct sym_space *sp, pid_t tid, int sig)
{
	return witch_signal_stop(to_witch(m), sp, tid, sig);
}

static int witch_mode_tick(struct rec_mode *m, uint64_t now)
{
	(void)now;
	return witch_tick(to_witch(m));
}

static int witch_mode_finish(struct rec_mode *m, bool quiet)
{
	return witch_finish(to_witch(m), quiet);
}

static void witch_mode_free(struct rec_mode *m)
{
	witch_free(to_witch(m));
}

struct rec_mode *rec_witch_new(void)
{
	struct rec_witch *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	witch_options_init(&x->o);
	psup_u64map_init(&x->threads);
	psup_u64map_init(&x->fds);
	psup_u64map_init(&x->exact_ctx);
	x->mode = (struct rec_mode){
		.name = "witch",
		.options = witch_mode_options,
		.option = witch_mode_option,
		.check = witch_mode_check,
		.usage = witch_mode_usage,
		.enabled = witch_mode_enabled,
		.start = witch_mode_start,
		.header = witch_mode_header,
		.thread_new = witch_mode_thread_new,
		.thread_gone = witch_mode_thread_gone,
		.exec = witch_mode_exec,
		.signal_stop = witch_mode_signal_stop,
		.tick = witch_mode_tick,
		.finish = witch_mode_finish,
		.free = witch_mode_free,
	};
	return &x->mode;
}
