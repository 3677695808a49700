/* Witch sampling (sampler/witch.c): precise memory samples parsed from
 * synthetic PERF_RECORD_SAMPLE records (IP, TID, ADDR), refused when cut
 * short or of another layout; and, on this machine, a witch event that
 * signals its own thread with the realtime signal, recognised by si_fd. */
#include "sampler/sampler.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "tests/unit/tap.h"

static size_t build(uint8_t *buf, uint32_t type, uint64_t ip, uint32_t pid, uint32_t tid,
		    uint64_t addr)
{
	struct perf_event_header h = { .type = type, .misc = 0, .size = sizeof(h) + 24 };

	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), &ip, 8);
	memcpy(buf + sizeof(h) + 8, &pid, 4);
	memcpy(buf + sizeof(h) + 12, &tid, 4);
	memcpy(buf + sizeof(h) + 16, &addr, 8);
	return h.size;
}

static void test_parse(void)
{
	const uint64_t st = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_ADDR;
	uint8_t buf[64];
	struct smp_mem_sample s;
	size_t n = build(buf, PERF_RECORD_SAMPLE, 0x401000, 10, 11, 0x7ffd1234);

	CHECK_EQ_INT(smp_mem_sample_parse(buf, n, st, &s), 0);
	CHECK(s.ip == 0x401000 && s.pid == 10 && s.tid == 11 && s.addr == 0x7ffd1234);
	/* cut short: the header's size is more than the bytes given */
	CHECK_EQ_INT(smp_mem_sample_parse(buf, n - 1, st, &s), -EINVAL);
	/* a record too small for its fields */
	((struct perf_event_header *)buf)->size = sizeof(struct perf_event_header) + 16;
	CHECK_EQ_INT(smp_mem_sample_parse(buf, n, st, &s), -EINVAL);
	/* another record type */
	n = build(buf, PERF_RECORD_LOST, 1, 2, 3, 4);
	CHECK_EQ_INT(smp_mem_sample_parse(buf, n, st, &s), -ENOENT);
	/* layouts the witch event never asks for */
	n = build(buf, PERF_RECORD_SAMPLE, 1, 2, 3, 4);
	CHECK_EQ_INT(smp_mem_sample_parse(buf, n, PERF_SAMPLE_IP | PERF_SAMPLE_TID, &s), -EINVAL);
	CHECK_EQ_INT(smp_mem_sample_parse(buf, n, st | PERF_SAMPLE_TIME, &s), -EINVAL);
	/* ADDR alone */
	uint64_t addr = 0x5555;
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .size = sizeof(h) + 8 };
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), &addr, 8);
	CHECK_EQ_INT(smp_mem_sample_parse(buf, h.size, PERF_SAMPLE_ADDR, &s), 0);
	CHECK(s.addr == 0x5555 && s.ip == 0);
}

static volatile sig_atomic_t got;
static volatile int got_fd, got_code;

static void on_sig(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	got++;
	got_fd = si->si_fd;
	got_code = si->si_code;
}

/* The event of this very thread: its overflow raises the realtime signal
 * here, with si_code POLL_IN and si_fd = the event's fd. */
static void test_signal(void)
{
	struct smp_witch_config c = { .period = 200000, .jitter_pct = 10 };
	struct sigaction sa = { .sa_sigaction = on_sig, .sa_flags = SA_SIGINFO };
	struct smp_witch *w = NULL;
	struct timespec t0, t;
	int err;

	sigaction(smp_witch_signal(), &sa, NULL);
	err = smp_witch_open(&c, (pid_t)syscall(SYS_gettid), &w);
	if (err < 0) {
		printf("# skipped: no witch event here: %s\n", strerror(-err));
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (volatile int i = 0; i < 100000; i++)
			;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (got < 3 && t.tv_sec - t0.tv_sec < 5);
	CHECK(got >= 3);
	CHECK_EQ_INT(got_fd, smp_witch_fd(w));
	CHECK_EQ_INT(got_code, POLL_IN);
	siginfo_t si = { .si_signo = smp_witch_signal(), .si_code = POLL_IN };
	si.si_fd = smp_witch_fd(w);
	CHECK(smp_witch_is_ours(w, &si));
	si.si_fd = smp_witch_fd(w) + 1;
	CHECK(!smp_witch_is_ours(w, &si));
	si.si_fd = smp_witch_fd(w);
	si.si_code = SI_QUEUE; /* sigqueue() by the program itself */
	CHECK(!smp_witch_is_ours(w, &si));
	/* Off: no more signals. */
	CHECK_EQ_INT(smp_witch_enable(w, false), 0);
	CHECK(!smp_witch_is_enabled(w));
	int before = got;
	for (volatile long i = 0; i < 20000000; i++)
		;
	CHECK_EQ_INT(got, before);
	smp_witch_close(w);
	signal(smp_witch_signal(), SIG_DFL);
}

/* A watchpoint of this thread: a write to the watched int raises the witch
 * signal (no SIGTRAP) with si_fd = the watchpoint's fd; a read does not
 * when only writes are watched; closed, nothing more. */
static volatile int watched;
static volatile sig_atomic_t traps;

static void on_trap(int sig)
{
	(void)sig;
	traps++;
}

static void test_watchpoint(void)
{
	struct sigaction sa = { .sa_sigaction = on_sig, .sa_flags = SA_SIGINFO };
	struct smp_wp *w = NULL;
	int err;

	got = 0;
	sigaction(smp_witch_signal(), &sa, NULL);
	signal(SIGTRAP, on_trap);
	err = smp_wp_open((pid_t)syscall(SYS_gettid), (uint64_t)(uintptr_t)&watched, sizeof(watched),
			  false, &w);
	if (err < 0) {
		printf("# skipped: no breakpoint events here: %s\n", strerror(-err));
		return;
	}
	int v = watched; /* a read: no trap on a write watchpoint */
	(void)v;
	CHECK_EQ_INT(got, 0);
	watched = 1;
	CHECK_EQ_INT(got, 1);
	CHECK_EQ_INT(got_fd, smp_wp_fd(w));
	CHECK_EQ_INT(got_code, POLL_IN);
	watched = 2;
	CHECK_EQ_INT(got, 2);
	CHECK_EQ_INT(traps, 0);
	siginfo_t si = { .si_signo = smp_witch_signal(), .si_code = POLL_IN };
	si.si_fd = smp_wp_fd(w);
	CHECK(smp_wp_is_ours(w, &si));
	smp_wp_close(w);
	watched = 3;
	CHECK_EQ_INT(got, 2);
	CHECK_EQ_INT(smp_wp_open((pid_t)syscall(SYS_gettid), 0x1001, 4, true, &w), -EINVAL);
	signal(smp_witch_signal(), SIG_DFL);
	signal(SIGTRAP, SIG_DFL);
}

int main(void)
{
	test_parse();
	test_signal();
	test_watchpoint();
	return tap_done();
}
