#ifndef PSUP_CMD_WITCH_H
#define PSUP_CMD_WITCH_H

/*
 * psup run/attach --witch: the wiring of witch between the supervisor's
 * stops, the sampler's witch events, instruction decoding (symbols), the
 * analyses (experiments/witch.c, witch-exact.c) and the records. cmd-record.c
 * calls these from its hooks; everything runs on the supervisor thread.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct exp_profile;
struct rep_writer;
struct sup_session;
struct sym_space;

struct witch_options {
	unsigned kinds;      /* 1 << enum exp_witch_kind; 0: witch is off */
	uint64_t period;     /* ns of task-clock (or events of a precise event); 0: default */
	double fp_precision; /* relative */
	bool exact;          /* --witch-exact */
	bool by_insns;       /* --witch-weight instructions (else time) */
	bool weight_given;   /* --witch-weight was given */
	unsigned slots;      /* debug registers for witch per thread (4 - breakpoint progress points) */
};

/* The long options (getopt codes from base on) and their help text. */
enum {
	WITCH_OPT_KINDS, WITCH_OPT_PERIOD, WITCH_OPT_FP, WITCH_OPT_EXACT, WITCH_OPT_WEIGHT,
	WITCH_NOPTS
};
void witch_options_init(struct witch_options *o);
/* Parses option opt (WITCH_OPT_*) with its argument. Returns 0, or 2 after
 * printing a one-line error. */
int witch_option(struct witch_options *o, int opt, const char *arg);
void witch_usage(FILE *f);
/* Checks the combination after parsing (e.g. --witch-period without
 * --witch). Returns 0 or 2 after an error message. */
int witch_options_check(const struct witch_options *o);

struct rec_witch;

/* Sets up witch for a run recorded into w with profile contexts from prof.
 * Returns 0 (NULL *out when witch is off) or -errno after an error message. */
int witch_new(const struct witch_options *o, struct rep_writer *w, struct exp_profile *prof,
	      struct rec_witch **out);
void witch_free(struct rec_witch *x);
/* Attach mode (set before the session): exact mode steps from the attach. */
void witch_set_attach(struct rec_witch *x, bool attach);
/* The session exists (before its first thread is reported). */
void witch_session(struct rec_witch *x, struct sup_session *s);
/* Writes the witch_config record (after the header). */
int witch_write_config(struct rec_witch *x);
void witch_thread_new(struct rec_witch *x, pid_t tid, pid_t pid);
void witch_thread_gone(struct rec_witch *x, pid_t tid);
void witch_exec(struct rec_witch *x, pid_t pid);
/* The supervisor's signal_stop hook; sp resolves pid's addresses (may be
 * NULL). Returns enum sup_signal_action bits. */
int witch_signal_stop(struct rec_witch *x, struct sym_space *sp, pid_t tid, int sig);
/* From the tick: threads that block the signal, flushing records. */
int witch_tick(struct rec_witch *x);
/* The end: last records, and a one-line summary on stderr unless quiet. */
int witch_finish(struct rec_witch *x, bool quiet);

#endif
