/*
 * causal-placement SECONDS [HAMMERERS]: where a virtual speedup's delays are
 * paid, measured without psup. The program of tests/targets/causal-contention.c
 * (a client does 1 unit of work, then a short update under a mutex; hammer
 * threads prepare 1 unit, then hold the mutex for 1 unit) runs Coz's virtual
 * speedup in-process with exact line timing: no sampling, no ptrace, so only
 * the method and where the delays go are measured.
 *
 * Environment: VS=0..1 the speedup of the selected line; VLINE=hammer (the
 * preparation, default) or cs (the critical section); PAY=unlock (before the
 * release, as Coz's pthread_mutex_unlock wrapper), after (after the release,
 * where psup's futex-wake stop was), lock (before taking the lock, where
 * psup's futex-wait stop was). Counts as in Coz 3.4.3: a thread's line time
 * times VS adds to its local count, which raises the global count when ahead;
 * a thread pays global - local by sleeping; a lock wait is credited with the
 * global's rise during it.
 *
 * SAMPLE_NS=N (default 0: exact) counts the line as psup and Coz do, from
 * samples: every N ns (+-10%) of a thread's work, a sample lands, and one in
 * the line adds N x VS to its local count; the rest of the rules are the
 * same. Whether sampling alone changes what the curve shows.
 *
 * Prints the client's rate in real time and in effective time (real minus the
 * global delay, the paper's D). The truth is CAUSAL_CUT on the real target:
 * cutting the hammer line 50% costs the client ~16-25%, the critical section
 * 50% gains ~45%. Exit: 0, 64 on a usage error.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define UNIT 300000UL
#define MAX_HAMMERERS 16
#define WORK(acc, iters) for (unsigned long i_ = 0; i_ < (iters); i_++) { (acc) = (acc) * 6364136223846793005UL + i_; __asm__ volatile("" : "+r"(acc)); }

enum pay_at { PAY_UNLOCK, PAY_AFTER, PAY_LOCK };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop;
static unsigned long ops, shared_state;
static volatile unsigned long sink;
static double speedup;
static enum pay_at pay_at;
static int select_cs;
static uint64_t global_ns;
static __thread uint64_t local_ns;
static uint64_t sample_ns;
/* Sampled mode: the thread's work so far and where its next sample lands. */
static __thread uint64_t work_ns, next_sample_ns, rng;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Pays what the thread owes; the time really slept counts (Coz's excess). */
static void pay(void)
{
	uint64_t g = __atomic_load_n(&global_ns, __ATOMIC_RELAXED), d, t0;
	struct timespec ts;

	if (local_ns >= g)
		return;
	d = g - local_ns;
	ts.tv_sec = (time_t)(d / 1000000000ULL);
	ts.tv_nsec = (long)(d % 1000000000ULL);
	t0 = now_ns();
	nanosleep(&ts, NULL);
	local_ns += now_ns() - t0;
}

static void add_local(uint64_t ns)
{
	uint64_t g = __atomic_load_n(&global_ns, __ATOMIC_RELAXED);

	local_ns += ns;
	while (local_ns > g &&
	       !__atomic_compare_exchange_n(&global_ns, &g, local_ns, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* The thread worked for ns, in the selected line or not. */
static void ran(uint64_t ns, int in_line)
{
	if (!sample_ns) {
		if (in_line)
			add_local((uint64_t)(speedup * (double)ns));
		return;
	}
	if (!rng)
		rng = (uint64_t)(uintptr_t)&rng | 1;
	work_ns += ns;
	while (next_sample_ns <= work_ns) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		next_sample_ns += sample_ns * 9 / 10 + rng % (sample_ns / 5 + 1);
		if (in_line)
			add_local((uint64_t)(speedup * (double)sample_ns));
	}
}

static void v_lock(void)
{
	uint64_t before;

	if (pay_at == PAY_LOCK)
		pay();
	before = __atomic_load_n(&global_ns, __ATOMIC_RELAXED);
	pthread_mutex_lock(&lock);
	/* Coz's post_block: the delays inserted while it waited. */
	local_ns += __atomic_load_n(&global_ns, __ATOMIC_RELAXED) - before;
}

static void v_unlock(void)
{
	if (pay_at == PAY_UNLOCK)
		pay();
	pthread_mutex_unlock(&lock);
	if (pay_at == PAY_AFTER)
		pay();
}

static void *hammerer(void *arg)
{
	unsigned long acc = (unsigned long)arg;

	while (!stop) {
		uint64_t t0 = now_ns();
		WORK(acc, UNIT);
		ran(now_ns() - t0, !select_cs);
		v_lock();
		t0 = now_ns();
		WORK(acc, UNIT);
		shared_state += acc;
		ran(now_ns() - t0, select_cs);
		v_unlock();
	}
	return (void *)acc;
}

int main(int argc, char **argv)
{
	const char *pay_env = getenv("PAY"), *line = getenv("VLINE"), *vs = getenv("VS");
	double seconds = argc > 1 ? atof(argv[1]) : 3;
	int n = argc > 2 ? atoi(argv[2]) : 2;
	pthread_t t[MAX_HAMMERERS];
	unsigned long acc = 1;
	uint64_t t0, end, real;

	if (seconds <= 0 || n < 1 || n > MAX_HAMMERERS) {
		fprintf(stderr, "usage: causal-placement SECONDS [HAMMERERS 1..%d]\n", MAX_HAMMERERS);
		return 64;
	}
	speedup = vs ? atof(vs) : 0;
	sample_ns = getenv("SAMPLE_NS") ? strtoull(getenv("SAMPLE_NS"), NULL, 10) : 0;
	pay_at = !pay_env || !strcmp(pay_env, "unlock") ? PAY_UNLOCK : !strcmp(pay_env, "after") ? PAY_AFTER : PAY_LOCK;
	select_cs = line && !strcmp(line, "cs");
	for (long i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, hammerer, (void *)(i + 2)))
			return 70;
	t0 = now_ns();
	end = t0 + (uint64_t)(seconds * 1e9);
	while (now_ns() < end) {
		uint64_t w0 = now_ns();
		WORK(acc, UNIT);
		ran(now_ns() - w0, 0);
		v_lock();
		w0 = now_ns();
		WORK(acc, UNIT / 10);
		shared_state ^= acc;
		ran(now_ns() - w0, 0);
		v_unlock();
		ops++;
	}
	pay();
	real = now_ns() - t0;
	stop = 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("line %s speedup %.2f pay %s%s: ops %lu, %.0f/s real, %.0f/s effective (delay %.0f%% of the time)\n",
	       select_cs ? "cs" : "hammer", speedup,
	       pay_at == PAY_UNLOCK ? "unlock" : pay_at == PAY_AFTER ? "after" : "lock",
	       sample_ns ? " (sampled)" : "", ops,
	       (double)ops / ((double)real / 1e9),
	       (double)ops / (((double)real - (double)global_ns) / 1e9),
	       100.0 * (double)global_ns / (double)real);
	sink = acc;
	return 0;
}
