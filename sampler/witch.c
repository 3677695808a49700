/*
 * Witch sampling: one event per thread whose every overflow sends a signal to
 * that very thread. The signal stops the thread at a ptrace signal-delivery
 * stop, where the supervisor reads the sampled instruction (or, with a
 * precise memory event, the sample's data address) and consumes the signal.
 *
 * The signal is a realtime one (queued, so it never merges with a signal of
 * the program's; a standard one would be lost when the program's was
 * pending), sent by the kernel's fasync path: F_SETOWN_EX F_OWNER_TID +
 * F_SETSIG + O_ASYNC. Its siginfo says si_code POLL_IN and si_fd = the
 * event's fd -- an fd number in psup, not in the program -- which tells
 * psup's signals from any the program sends itself.
 *
 * Not perf's attr.sigtrap: that forces SIGTRAP, resetting the program's
 * handler to the default when it blocks or ignores SIGTRAP (force_sig_info),
 * which changes the program.
 */
#include "sampler/sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <perfmon/pfmlib_perf_event.h>

#include "common/util.h"
#include "sampler/sampler-internal.h"

struct smp_witch {
	int fd;
	pid_t tid;
	uint64_t period;
	unsigned jitter_pct;
	uint64_t rng;
	bool enabled;
	/* precise memory events: the ring holding the last sample */
	void *ring;
	size_t ring_len;
	uint64_t sample_type;
};

int smp_witch_signal(void)
{
	/* The second-highest realtime signal: glibc keeps the lowest ones
	 * (SIGCANCEL, SIGSETXID) and programs that use realtime signals count
	 * up from SIGRTMIN. */
	return SIGRTMAX - 1;
}

static long sys_perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group,
				unsigned long flags)
{
	return syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

static uint64_t jittered(struct smp_witch *w)
{
	uint64_t p = w->period, span;

	if (!w->jitter_pct || p < 100)
		return p;
	/* DCPI: a randomized period, so sampling cannot lock onto a loop. */
	span = p / 100 * w->jitter_pct;
	return p - span + psup_rand_next(&w->rng) % (2 * span + 1);
}

int smp_witch_open(const struct smp_witch_config *c, pid_t tid, struct smp_witch **out)
{
	struct perf_event_attr a;
	struct f_owner_ex owner = { F_OWNER_TID, tid };
	struct smp_witch *w;
	int err;

	if (!c->period || c->jitter_pct >= 100)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = -1;
	w->tid = tid;
	w->period = c->period;
	w->jitter_pct = c->jitter_pct;
	w->rng = psup_rand_seed() ^ (uint64_t)tid;
	if (!w->rng)
		w->rng = 1;
	memset(&a, 0, sizeof(a));
	if (c->mem_event) {
		a = c->mem_attr;
		a.sample_period = c->period;
		w->sample_type = a.sample_type;
	} else {
		a.type = PERF_TYPE_SOFTWARE;
		a.config = PERF_COUNT_SW_TASK_CLOCK;
		a.sample_period = jittered(w);
		/* Nothing is read from a ring: the signal is the sample. */
		a.sample_type = PERF_SAMPLE_IP;
	}
	a.size = sizeof(a);
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.wakeup_events = 1;
	a.disabled = 1;
	w->fd = (int)sys_perf_event_open(&a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (w->fd < 0) {
		err = -errno;
		goto fail;
	}
	if (c->mem_event) {
		/* One page of header and one of data: only the newest sample
		 * is read, at the signal it raised. */
		w->ring_len = 2 * 4096;
		w->ring = mmap(NULL, w->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, w->fd, 0);
		if (w->ring == MAP_FAILED) {
			w->ring = NULL;
			err = -errno;
			goto fail;
		}
	}
	if (fcntl(w->fd, F_SETOWN_EX, &owner) < 0 || fcntl(w->fd, F_SETSIG, smp_witch_signal()) < 0 ||
	    fcntl(w->fd, F_SETFL, O_ASYNC) < 0) {
		err = -errno;
		goto fail;
	}
	if (ioctl(w->fd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
		err = -errno;
		goto fail;
	}
	w->enabled = true;
	*out = w;
	return 0;
fail:
	smp_witch_close(w);
	return err;
}

int smp_witch_fd(const struct smp_witch *w)
{
	return w->fd;
}

bool smp_witch_is_ours(const struct smp_witch *w, const siginfo_t *si)
{
	return w && si->si_signo == smp_witch_signal() && si->si_code == POLL_IN &&
	       si->si_fd == w->fd;
}

void smp_witch_next(struct smp_witch *w)
{
	uint64_t p;

	if (!w->jitter_pct || w->ring)
		return;
	p = jittered(w);
	/* The thread is stopped: no IPI, only the event's context lock. */
	ioctl(w->fd, PERF_EVENT_IOC_PERIOD, &p);
}

int smp_witch_enable(struct smp_witch *w, bool on)
{
	if (w->enabled == on)
		return 0;
	if (ioctl(w->fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0) < 0)
		return -errno;
	w->enabled = on;
	return 0;
}

bool smp_witch_is_enabled(const struct smp_witch *w)
{
	return w->enabled;
}

void smp_witch_close(struct smp_witch *w)
{
	if (!w)
		return;
	if (w->ring)
		munmap(w->ring, w->ring_len);
	if (w->fd >= 0)
		close(w->fd);
	free(w);
}

/* ---- precise memory events ---------------------------------------------- */

int smp_mem_sample_parse(const void *rec, size_t len, uint64_t sample_type,
			 struct smp_mem_sample *out)
{
	const struct perf_event_header *h = rec;
	const uint8_t *p, *end;

	if (len < sizeof(*h) || h->size < sizeof(*h) || h->size > len)
		return -EINVAL;
	if (h->type != PERF_RECORD_SAMPLE)
		return -ENOENT;
	/* Only the fields smp_witch_open() asks for, in the kernel's order:
	 * IP, TID, ADDR (perf_output_sample). */
	if (sample_type & ~(uint64_t)(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_ADDR))
		return -EINVAL;
	if (!(sample_type & PERF_SAMPLE_ADDR))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	p = (const uint8_t *)rec + sizeof(*h);
	end = (const uint8_t *)rec + h->size;
	if (sample_type & PERF_SAMPLE_IP) {
		if (end - p < 8)
			return -EINVAL;
		memcpy(&out->ip, p, 8);
		p += 8;
	}
	if (sample_type & PERF_SAMPLE_TID) {
		uint32_t v[2];
		if (end - p < 8)
			return -EINVAL;
		memcpy(v, p, 8);
		out->pid = (pid_t)v[0];
		out->tid = (pid_t)v[1];
		p += 8;
	}
	if (end - p < 8)
		return -EINVAL;
	memcpy(&out->addr, p, 8);
	return 0;
}

int smp_witch_last_mem_sample(struct smp_witch *w, struct smp_mem_sample *out)
{
	struct perf_event_mmap_page *pg = w->ring;
	const uint8_t *data;
	uint64_t head, tail, size, pos, found = UINT64_MAX;
	uint8_t rec[256];

	if (!pg)
		return -ENOENT;
	head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	tail = pg->data_tail;
	size = pg->data_size;
	data = (const uint8_t *)w->ring + pg->data_offset;
	/* Walk to the newest sample; older ones are history. */
	for (pos = tail; pos < head;) {
		struct perf_event_header h;
		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = data[(pos + i) % size];
		if (!h.size)
			break;
		if (h.type == PERF_RECORD_SAMPLE && h.size <= sizeof(rec))
			found = pos;
		pos += h.size;
	}
	if (found != UINT64_MAX) {
		struct perf_event_header h;
		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = data[(found + i) % size];
		for (size_t i = 0; i < h.size; i++)
			rec[i] = data[(found + i) % size];
	}
	__atomic_store_n(&pg->data_tail, head, __ATOMIC_RELEASE);
	if (found == UINT64_MAX)
		return -ENOENT;
	return smp_mem_sample_parse(rec, sizeof(rec), w->sample_type, out);
}

int smp_mem_event_find(bool loads, struct smp_witch_config *c, char *name, size_t namelen)
{
	/* Intel PEBS (Haswell..Skylake+ names) with data addresses; AMD IBS
	 * would be the ibs_op PMU (sampled ops, not only memory ones). */
	static const char *const stores[] = { "MEM_INST_RETIRED:ALL_STORES",
					      "MEM_UOPS_RETIRED:ALL_STORES" };
	static const char *const lds[] = { "MEM_INST_RETIRED:ALL_LOADS",
					   "MEM_UOPS_RETIRED:ALL_LOADS" };
	const char *const *names = loads ? lds : stores;

	if (!smp_have_hw_pmu())
		return -ENOENT;
	for (size_t i = 0; i < 2; i++) {
		struct perf_event_attr a;
		pfm_perf_encode_arg_t arg;
		int fd;

		memset(&a, 0, sizeof(a));
		memset(&arg, 0, sizeof(arg));
		arg.attr = &a;
		arg.size = sizeof(arg);
		if (smp_pfm_encode(names[i], PFM_PLM3, PFM_OS_PERF_EVENT, &arg) != PFM_SUCCESS)
			continue;
		a.size = sizeof(a);
		a.precise_ip = 2;
		a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_ADDR;
		a.sample_period = 1000003;
		a.exclude_kernel = 1;
		a.disabled = 1;
		fd = (int)sys_perf_event_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			continue;
		close(fd);
		c->mem_event = true;
		c->mem_attr = a;
		snprintf(name, namelen, "%s", names[i]);
		return 0;
	}
	return -ENOENT;
}

/* ---- watchpoints ----------------------------------------------------------
 *
 * A debug-register watchpoint as a perf breakpoint event of one thread
 * (PERF_TYPE_BREAKPOINT, period 1), whose overflow sends the witch signal to
 * the thread like a sample does. Not a ptrace watchpoint (PTRACE_POKEUSER of
 * DR7): that one's trap is a forced SIGTRAP, and a forced signal the thread
 * blocks makes the kernel unblock it and reset the program's handler to the
 * default (force_sig_info_to_task), which a thread blocking every signal in
 * a worker loop would hit. A perf breakpoint's trap raises no SIGTRAP; the
 * kernel takes the debug exception itself and the signal is an ordinary one.
 * Test: t6040-witch-signals.
 */
struct smp_wp {
	int fd;
};

int smp_wp_open(pid_t tid, uint64_t addr, unsigned len, bool readwrite, struct smp_wp **out)
{
	struct perf_event_attr a;
	struct f_owner_ex owner = { F_OWNER_TID, tid };
	struct smp_wp *w;
	int err;

	if (len != 1 && len != 2 && len != 4 && len != 8)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_BREAKPOINT;
	a.bp_type = readwrite ? HW_BREAKPOINT_RW : HW_BREAKPOINT_W;
	a.bp_addr = addr;
	a.bp_len = len;
	a.sample_period = 1;
	a.wakeup_events = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.disabled = 1;
	w->fd = (int)sys_perf_event_open(&a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (w->fd < 0) {
		err = -errno;
		free(w);
		return err;
	}
	if (fcntl(w->fd, F_SETOWN_EX, &owner) < 0 || fcntl(w->fd, F_SETSIG, smp_witch_signal()) < 0 ||
	    fcntl(w->fd, F_SETFL, O_ASYNC) < 0 || ioctl(w->fd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
		err = -errno;
		smp_wp_close(w);
		return err;
	}
	*out = w;
	return 0;
}

int smp_wp_fd(const struct smp_wp *w)
{
	return w->fd;
}

bool smp_wp_is_ours(const struct smp_wp *w, const siginfo_t *si)
{
	return w && si->si_signo == smp_witch_signal() && si->si_code == POLL_IN &&
	       si->si_fd == w->fd;
}

void smp_wp_close(struct smp_wp *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	free(w);
}
