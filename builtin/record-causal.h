#ifndef PSUP_CMD_CAUSAL_H
#define PSUP_CMD_CAUSAL_H

/*
 * Causal profiling inside `psup run` / `psup attach` (cmd-causal.c): the
 * options, and the hooks cmd-record.c calls at each event. Command-layer
 * state: one causal session per psup process. Every hook does nothing when
 * causal profiling is off. Hooks returning int return 0 or -errno (a record
 * write failed; the recorder stops profiling).
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct rep_writer;
struct sup_session;
struct sym_space;

/* getopt values of the causal options (cmd-record.c's longopts take
 * CMD_CAUSAL_LONGOPTS); 'p' is -p/--progress. */
enum {
	CMD_CAUSAL_OPT_BASE = 512,
	CMD_CAUSAL_OPT_CAUSAL = CMD_CAUSAL_OPT_BASE,
	CMD_CAUSAL_OPT_LATENCY,
	CMD_CAUSAL_OPT_SAMPLED,
	CMD_CAUSAL_OPT_RUNS,
	CMD_CAUSAL_OPT_SCOPE,
	CMD_CAUSAL_OPT_BINARY_SCOPE,
	CMD_CAUSAL_OPT_LINE,
	CMD_CAUSAL_OPT_SPEEDUP,
	CMD_CAUSAL_OPT_EXPERIMENT_MS,
	CMD_CAUSAL_OPT_NO_INTERCEPT,
	CMD_CAUSAL_OPT_NO_WAKE_STOPS,
	CMD_CAUSAL_OPT_END,
};

#define CMD_CAUSAL_LONGOPTS                                                        \
	{ "causal", no_argument, NULL, CMD_CAUSAL_OPT_CAUSAL },                     \
	{ "progress", required_argument, NULL, 'p' },                              \
	{ "latency", required_argument, NULL, CMD_CAUSAL_OPT_LATENCY },             \
	{ "sampled-progress", required_argument, NULL, CMD_CAUSAL_OPT_SAMPLED },    \
	{ "runs", required_argument, NULL, CMD_CAUSAL_OPT_RUNS },                   \
	{ "scope", required_argument, NULL, CMD_CAUSAL_OPT_SCOPE },                 \
	{ "binary-scope", required_argument, NULL, CMD_CAUSAL_OPT_BINARY_SCOPE },   \
	{ "line", required_argument, NULL, CMD_CAUSAL_OPT_LINE },                   \
	{ "speedup", required_argument, NULL, CMD_CAUSAL_OPT_SPEEDUP },             \
	{ "experiment-ms", required_argument, NULL, CMD_CAUSAL_OPT_EXPERIMENT_MS }, \
	{ "no-intercept", no_argument, NULL, CMD_CAUSAL_OPT_NO_INTERCEPT },           \
	{ "no-wake-stops", no_argument, NULL, CMD_CAUSAL_OPT_NO_WAKE_STOPS }

/* Whether getopt's c is a causal option. */
static inline bool cmd_causal_is_option(int c)
{
	return c == 'p' || (c >= CMD_CAUSAL_OPT_BASE && c < CMD_CAUSAL_OPT_END);
}
/* Takes one option. Returns -1 to go on, or an exit status (2) after an
 * error message. */
int cmd_causal_option(int c, const char *arg, bool attach);
/* After all options: -1 to go on, or an exit status. */
int cmd_causal_check(bool attach);
void cmd_causal_usage(FILE *f, bool attach);
bool cmd_causal_enabled(void);
/* Whether addr is an execution breakpoint causal profiling set in tid (a
 * breakpoint progress point, the unlock trap). */
bool cmd_causal_own_breakpoint(pid_t tid, uint64_t addr);
/* --runs N (1 when not given). */
unsigned cmd_causal_runs(void);
/* Extra sup_spawn() flags (the seccomp filter). */
unsigned cmd_causal_spawn_flags(void);
/* The loop's tick period in causal mode (0: keep the recorder's). */
uint64_t cmd_causal_tick_ns(void);

/* Set-up once the record file is open; period_ns the sampling period
 * (clock: a time-based event, whose samples' periods are ns too); wakeups:
 * every wakeup reaches cmd_causal_wakeup(), so the wakes need no stop. */
int cmd_causal_setup(struct rep_writer *w, uint64_t period_ns, bool clock, bool attach, bool wakeups);
/* fn(arg) drains every thread's ring now (samples reach the engine). */
void cmd_causal_set_drain(void (*fn)(void *arg), void *arg);
/* At the end of psup run/attach: true (after one error line) when the
 * causal options named nothing the program has: no progress point at all,
 * a -p/--latency spec that matched no code, a --line never seen. The
 * command then exits 1. */
bool cmd_causal_bad_end(void);
/* After the header record. */
int cmd_causal_header(void);
/* The session exists (after sup_spawn()/sup_attach()): pause hooks. */
void cmd_causal_session(struct sup_session *s);
/* End-to-end: a run starts / ended. */
int cmd_causal_run_begin(void);
int cmd_causal_run_end(void);

void cmd_causal_thread_new(struct sym_space *sp, pid_t tid, pid_t pid, pid_t parent, bool new_process);
/* tid exited, or was detached alive (exited false) at time: the first
 * thread detached ends the running experiment. Returns a write error. */
int cmd_causal_thread_gone(pid_t tid, bool exited, uint64_t time);
void cmd_causal_exec(struct sym_space *sp, pid_t pid);
/* Process pid ended at time. Returns a write error when the root's end
 * ended the experiment. */
int cmd_causal_process_exit(pid_t pid, bool root, uint64_t time);
void cmd_causal_sample(struct sym_space *sp, pid_t pid, pid_t tid, const uint64_t *pcs, unsigned n,
		       uint64_t time, uint64_t period, int cpu);
void cmd_causal_switch(pid_t tid, bool out, bool preempt, uint64_t time, int cpu);
void cmd_causal_block_futex(pid_t tid);
/* waker woke wakee at time (every wakeup record). */
void cmd_causal_wakeup(pid_t waker, pid_t wakee, uint64_t time);
/* From the loop's tick, after the rings were drained. */
int cmd_causal_tick(uint64_t now);
/* At each flush of the recorder. */
int cmd_causal_flush(void);
/* Before the end record: cut the experiment, totals, statistics. */
int cmd_causal_finish(void);
/* Profiling stops (a write failed): no more pauses, stops pass at once. */
void cmd_causal_stop(void);
/* ", 12 experiments" for the progress line ("" when off). */
const char *cmd_causal_progress(void);
void cmd_causal_release(void);

/* Thread tid of pid is at its PTRACE_EVENT_EXIT stop (added by
 * causal-progress): psup.h counters are read while the memory is there. */
void cmd_causal_thread_exiting(pid_t tid, pid_t pid);

/* Debug registers per thread the command line's breakpoint progress points
 * take (at most 4): witch gets the rest. */
unsigned cmd_causal_debug_slots(void);

#endif
