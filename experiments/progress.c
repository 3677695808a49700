#include "experiments/experiments.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "common/hash.h"
#include "common/log.h"
#include "common/util.h"
#include "include/psup.h"
#include "sampler/sampler.h"
#include "symbols/symbols.h"

/*
 * Progress points (Coz, section 3.2), counted from outside the program:
 *  - breakpoint points (-p FILE:LINE | FUNCTION): one perf breakpoint
 *    counter per (thread, code site), opened when the thread appears
 *    (sampler/bp.c); a visit is a debug exception, not a ptrace stop;
 *  - sampled points (--sampled-progress): the samples whose ip is in the
 *    line's (or function's) code;
 *  - source-level points (include/psup.h): counters in the section
 *    "psup_points" of the program's images, read with process_vm_readv;
 *    Coz's coz.h sites, given a counter of psup's (proc_setup_coz()).
 * Counts are cumulative: what threads and processes that are gone counted
 * (retired) plus what the live ones count now. Nothing here stops a
 * thread or touches ptrace; the only writes into a target are coz.h's.
 */

#define NOTE_MAX 16
#define NOTE_LEN 256
/* Visit rates are measured over at least this long. */
#define RATE_WINDOW_NS (1000ULL * 1000 * 1000)
/* Warn when a point's breakpoint visits cost more than this share of one
 * CPU (per mille). */
#define RATE_WARN_PERMILLE 20u
/* x86-64: DR0-DR3. */
#define DEBUG_REGS 4u

enum prog_origin {
	ORIGIN_BREAKPOINT, /* -p, --latency */
	ORIGIN_SAMPLED,    /* --sampled-progress */
	ORIGIN_SOURCE,     /* psup.h, coz.h */
};

struct prog_point {
	char *name;
	enum exp_point_kind kind;
	enum prog_origin origin;
	char *spec_text;      /* CLI points */
	struct sym_spec spec; /* CLI points */
	uint64_t retired;     /* counts of threads / processes gone */
	uint64_t sampled;     /* ORIGIN_SAMPLED: samples in the code */
	bool resolved;
	/* notes said once */
	bool noted_line, noted_files, noted_missing, noted_nospace, noted_rate, noted_coz;
	uint64_t nospace; /* (thread, site) pairs without a debug register */
	/* visit rate */
	uint64_t rate_count, rate_ns;
};

/* A breakpoint site of one point in one process. */
struct prog_site {
	unsigned point;
	uint64_t addr;
};

/* A psup.h counter in one process. */
struct prog_counter {
	unsigned point;
	uint64_t key;  /* the image mapping it belongs to */
	uint64_t addr; /* of the count */
	uint64_t base; /* its value when found (counted from there) */
	uint64_t last; /* its last value read */
};

struct prog_proc {
	pid_t pid;
	bool fresh; /* exec'ed under psup: counters count from their initial values */
	bool have_generation;
	uint64_t generation;
	struct sym_lookup *lookups; /* per point (CLI points only), npoints_seen entries */
	unsigned nlookups;
	struct prog_site *sites;
	unsigned nsites;
	struct prog_counter *ctrs;
	unsigned nctrs, capctrs;
	uint64_t *scanned; /* image ids (sections already parsed) */
	unsigned nscanned, capscanned;
	uint64_t *coz;     /* coz.h sites set up: their `_counter` addresses ... */
	uint64_t *coz_key; /* ... and image keys (same capacity) */
	unsigned ncoz, capcoz;
	struct prog_scratch *scratch; /* per image: next free byte after its bss */
	unsigned nscratch, capscratch;
	struct iovec *iov_local, *iov_remote; /* one per counter, for reads */
	uint64_t *vals;
	bool *oks;
	unsigned capiov;
};

struct prog_scratch {
	uint64_t key; /* coz_key() */
	uint64_t next;
};

struct prog_bp {
	unsigned point;
	uint64_t addr;
	int fd;        /* -1: not open (no debug register) */
	uint64_t last; /* last count read */
};

struct prog_thread {
	pid_t tid, pid;
	struct prog_bp *bps;
	unsigned nbps, capbps;
};

struct exp_progress {
	struct prog_point *points;
	unsigned npoints, cappoints;
	struct prog_proc *procs;
	unsigned nprocs, capprocs;
	struct prog_thread *threads;
	unsigned nthreads, capthreads;
	struct psup_u64map thread_index; /* tid -> index + 1 */
	unsigned max_sites;              /* most sites seen in one process */
	bool noted_coz_unusable;
	char notes[NOTE_MAX][NOTE_LEN];
	unsigned note_head, note_len;
	uint64_t notes_dropped;
};

/* ---- small helpers ---- */

static int grow(void **arr, unsigned *cap, unsigned need, size_t elem)
{
	unsigned ncap;
	void *n;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 8;
	while (ncap < need)
		ncap *= 2;
	n = realloc(*arr, (size_t)ncap * elem);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = ncap;
	return 0;
}

static void note(struct exp_progress *pp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct exp_progress *pp, const char *fmt, ...)
{
	va_list ap;

	if (pp->note_len == NOTE_MAX) {
		pp->notes_dropped++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(pp->notes[(pp->note_head + pp->note_len) % NOTE_MAX], NOTE_LEN, fmt, ap);
	va_end(ap);
	pp->note_len++;
}

static const char *point_label(const struct prog_point *p)
{
	switch (p->origin) {
	case ORIGIN_SAMPLED:
		return "--sampled-progress";
	case ORIGIN_SOURCE:
		return "source-level point";
	default:
		return p->kind == EXP_POINT_THROUGHPUT ? "-p" : "--latency";
	}
}

/* ---- lifecycle ---- */

int exp_progress_new(struct exp_progress **out)
{
	struct exp_progress *pp = calloc(1, sizeof(*pp));

	if (!pp)
		return -ENOMEM;
	psup_u64map_init(&pp->thread_index);
	*out = pp;
	return 0;
}

static void proc_release(struct prog_proc *pr)
{
	for (unsigned i = 0; i < pr->nlookups; i++)
		sym_lookup_release(&pr->lookups[i]);
	free(pr->lookups);
	free(pr->sites);
	free(pr->ctrs);
	free(pr->scanned);
	free(pr->coz);
	free(pr->coz_key);
	free(pr->scratch);
	free(pr->iov_local);
	free(pr->iov_remote);
	free(pr->vals);
	free(pr->oks);
}

void exp_progress_free(struct exp_progress *pp)
{
	if (!pp)
		return;
	for (unsigned i = 0; i < pp->nthreads; i++) {
		for (unsigned j = 0; j < pp->threads[i].nbps; j++)
			smp_bp_close(pp->threads[i].bps[j].fd);
		free(pp->threads[i].bps);
	}
	free(pp->threads);
	psup_u64map_release(&pp->thread_index);
	for (unsigned i = 0; i < pp->nprocs; i++)
		proc_release(&pp->procs[i]);
	free(pp->procs);
	for (unsigned i = 0; i < pp->npoints; i++) {
		free(pp->points[i].name);
		free(pp->points[i].spec_text);
		sym_spec_release(&pp->points[i].spec);
	}
	free(pp->points);
	free(pp);
}

static int point_find(const struct exp_progress *pp, const char *name, enum exp_point_kind kind,
		      enum prog_origin origin)
{
	for (unsigned i = 0; i < pp->npoints; i++) {
		const struct prog_point *p = &pp->points[i];

		if (p->kind == kind && !strcmp(p->name, name) &&
		    (p->origin == ORIGIN_SOURCE) == (origin == ORIGIN_SOURCE))
			return (int)i;
	}
	return -1;
}

int exp_progress_add(struct exp_progress *pp, const char *spec, enum exp_point_kind kind,
		     const char *name, bool sampled, char *why, size_t whylen)
{
	struct prog_point *p;
	struct sym_spec s;
	int err;

	if (kind != EXP_POINT_THROUGHPUT && kind != EXP_POINT_BEGIN && kind != EXP_POINT_END) {
		snprintf(why, whylen, "bad progress point kind");
		return -EINVAL;
	}
	err = sym_spec_parse(spec, &s, why, whylen);
	if (err) {
		sym_spec_release(&s);
		return err;
	}
	if (!name || !*name)
		name = spec;
	if (point_find(pp, name, kind, ORIGIN_BREAKPOINT) >= 0) {
		snprintf(why, whylen, "progress point '%s' given twice", name);
		sym_spec_release(&s);
		return -EINVAL;
	}
	if (grow((void **)&pp->points, &pp->cappoints, pp->npoints + 1, sizeof(*pp->points))) {
		sym_spec_release(&s);
		return -ENOMEM;
	}
	p = &pp->points[pp->npoints];
	memset(p, 0, sizeof(*p));
	p->name = strdup(name);
	p->spec_text = strdup(spec);
	if (!p->name || !p->spec_text) {
		free(p->name);
		free(p->spec_text);
		sym_spec_release(&s);
		return -ENOMEM;
	}
	p->kind = kind;
	p->origin = sampled ? ORIGIN_SAMPLED : ORIGIN_BREAKPOINT;
	p->spec = s;
	pp->npoints++;
	return 0;
}

unsigned exp_progress_npoints(const struct exp_progress *pp)
{
	return pp->npoints;
}

/* ---- processes ---- */

static struct prog_proc *proc_find(struct exp_progress *pp, pid_t pid)
{
	for (unsigned i = 0; i < pp->nprocs; i++)
		if (pp->procs[i].pid == pid)
			return &pp->procs[i];
	return NULL;
}

static struct prog_proc *proc_get(struct exp_progress *pp, pid_t pid)
{
	struct prog_proc *pr = proc_find(pp, pid);

	if (pr)
		return pr;
	if (grow((void **)&pp->procs, &pp->capprocs, pp->nprocs + 1, sizeof(*pp->procs)))
		return NULL;
	pr = &pp->procs[pp->nprocs++];
	memset(pr, 0, sizeof(*pr));
	pr->pid = pid;
	return pr;
}

static struct prog_thread *thread_find(struct exp_progress *pp, pid_t tid)
{
	uint64_t *v = tid > 0 ? psup_u64map_find(&pp->thread_index, (uint64_t)tid) : NULL;

	return v ? &pp->threads[*v - 1] : NULL;
}

/* Opens the breakpoint of site on thread t (when it has none for it). */
static int thread_open_site(struct exp_progress *pp, struct prog_thread *t,
			    const struct prog_site *site)
{
	struct prog_point *p = &pp->points[site->point];
	struct prog_bp *bp;
	int fd;

	for (unsigned i = 0; i < t->nbps; i++)
		if (t->bps[i].point == site->point && t->bps[i].addr == site->addr)
			return 0;
	if (grow((void **)&t->bps, &t->capbps, t->nbps + 1, sizeof(*t->bps)))
		return -ENOMEM;
	fd = smp_bp_open(t->tid, site->addr);
	if (fd < 0) {
		if (fd == -ESRCH)
			return 0; /* going; thread_gone follows */
		p->nospace += fd == -ENOSPC;
		if (!p->noted_nospace) {
			p->noted_nospace = true;
			note(pp, "%s %s: no breakpoint at 0x%llx in thread %d: %s; its visits "
				 "there are not counted",
			     point_label(p), p->spec_text, (unsigned long long)site->addr,
			     (int)t->tid, smp_bp_strerror(fd));
		}
	}
	bp = &t->bps[t->nbps++];
	bp->point = site->point;
	bp->addr = site->addr;
	bp->fd = fd < 0 ? -1 : fd;
	bp->last = 0;
	return 0;
}

static void bp_retire(struct exp_progress *pp, struct prog_bp *bp)
{
	uint64_t v;

	if (bp->fd < 0)
		return;
	if (!smp_bp_read(bp->fd, &v) && v >= bp->last)
		bp->last = v;
	pp->points[bp->point].retired += bp->last;
	smp_bp_close(bp->fd);
	bp->fd = -1;
	bp->last = 0;
}

/* Closes t's breakpoints whose site is not in the process's set any more
 * (all of them when pr is NULL), keeping their counts. */
static void thread_prune(struct exp_progress *pp, struct prog_thread *t, const struct prog_proc *pr)
{
	unsigned k = 0;

	for (unsigned i = 0; i < t->nbps; i++) {
		bool keep = false;

		for (unsigned j = 0; pr && j < pr->nsites; j++) {
			if (pr->sites[j].point == t->bps[i].point && pr->sites[j].addr == t->bps[i].addr) {
				keep = true;
				break;
			}
		}
		if (keep)
			t->bps[k++] = t->bps[i];
		else
			bp_retire(pp, &t->bps[i]);
	}
	t->nbps = k;
}

static int proc_apply_sites(struct exp_progress *pp, struct prog_proc *pr)
{
	for (unsigned i = 0; i < pp->nthreads; i++) {
		struct prog_thread *t = &pp->threads[i];

		if (t->pid != pr->pid)
			continue;
		thread_prune(pp, t, pr);
		for (unsigned j = 0; j < pr->nsites; j++) {
			int err = thread_open_site(pp, t, &pr->sites[j]);

			if (err)
				return err;
		}
	}
	return 0;
}

static void note_lookup(struct exp_progress *pp, struct prog_point *p, const struct sym_lookup *l)
{
	if (p->spec.kind == SYM_SPEC_LINE && l->line && l->line != p->spec.line && !p->noted_line) {
		const char *base = l->file ? strrchr(l->file, '/') : NULL;

		p->noted_line = true;
		note(pp, "%s %s: no code at line %u; using line %u (%s:%u)", point_label(p),
		     p->spec_text, p->spec.line, l->line, base ? base + 1 : p->spec.file, l->line);
	}
	if (l->other_file && !p->noted_files) {
		p->noted_files = true;
		note(pp, "%s %s: matches %s and %s; counting both (give more of the path to choose)",
		     point_label(p), p->spec_text, l->file, l->other_file);
	}
}

/* Looks the CLI points up again in pr's space and rebuilds its sites. */
static int proc_lookup(struct exp_progress *pp, struct prog_proc *pr, struct sym_space *sp)
{
	struct prog_site *sites = NULL;
	unsigned nsites = 0, capsites = 0;
	int err = 0;

	if (pr->nlookups < pp->npoints) {
		struct sym_lookup *n = realloc(pr->lookups, pp->npoints * sizeof(*n));

		if (!n)
			return -ENOMEM;
		memset(n + pr->nlookups, 0, (pp->npoints - pr->nlookups) * sizeof(*n));
		pr->lookups = n;
		pr->nlookups = pp->npoints;
	}
	for (unsigned i = 0; i < pp->npoints && !err; i++) {
		struct prog_point *p = &pp->points[i];
		struct sym_lookup l;

		if (p->origin == ORIGIN_SOURCE)
			continue;
		err = sym_space_lookup(sp, &p->spec, &l);
		if (err)
			break;
		sym_lookup_release(&pr->lookups[i]);
		pr->lookups[i] = l;
		if (p->origin == ORIGIN_SAMPLED ? l.nranges > 0 : l.nsites > 0) {
			p->resolved = true;
			note_lookup(pp, p, &l);
		}
		if (p->origin == ORIGIN_BREAKPOINT)
			err = grow((void **)&sites, &capsites, nsites + (unsigned)l.nsites,
				   sizeof(*sites));
		if (!err && p->origin == ORIGIN_BREAKPOINT)
			nsites += (unsigned)l.nsites;
	}
	/* The 4 debug registers go round-robin: every point's first site
	 * before any point's second, so with too many sites each point (both
	 * ends of a latency pair) still counts somewhere. */
	if (!err) {
		unsigned k = 0;

		for (size_t round = 0; k < nsites; round++) {
			for (unsigned i = 0; i < pp->npoints; i++) {
				if (pp->points[i].origin != ORIGIN_BREAKPOINT ||
				    round >= pr->lookups[i].nsites)
					continue;
				sites[k].point = i;
				sites[k].addr = pr->lookups[i].sites[round];
				k++;
			}
		}
	}
	if (err) {
		free(sites);
		return err;
	}
	free(pr->sites);
	pr->sites = sites;
	pr->nsites = nsites;
	if (nsites > pp->max_sites) {
		pp->max_sites = nsites;
		if (nsites > DEBUG_REGS)
			note(pp, "progress points need %u breakpoints per thread in pid %d, and x86 "
				 "has %u debug registers: visits at %u of them are not counted "
				 "(use fewer or narrower points, --sampled-progress or psup.h)",
			     nsites, (int)pr->pid, DEBUG_REGS, nsites - DEBUG_REGS);
	}
	return proc_apply_sites(pp, pr);
}

/* Reads n u64 values; ok[i] (when ok is not NULL) says which arrived. A
 * counter whose page went away (dlclose) fails alone, not the others.
 * Returns 0 when all were read, -errno (-ESRCH: the process is gone) or
 * -EFAULT when some were not. */
static int read_u64s(pid_t pid, struct iovec *local, struct iovec *remote, unsigned n, bool *ok)
{
	int err = 0;

	for (unsigned off = 0; off < n;) {
		/* process_vm_readv takes at most IOV_MAX vectors per call and
		 * stops at the first one it cannot read. */
		unsigned k = n - off < IOV_MAX ? n - off : IOV_MAX, done;
		ssize_t r = process_vm_readv(pid, local + off, k, remote + off, k, 0);

		if (r < 0 && (errno == ESRCH || errno == EPERM || errno == ENOMEM)) {
			for (unsigned i = off; ok && i < n; i++)
				ok[i] = false;
			return -errno;
		}
		done = r < 0 ? 0 : (unsigned)((size_t)r / sizeof(uint64_t));
		for (unsigned i = 0; ok && i < done; i++)
			ok[off + i] = true;
		off += done;
		if (done < k) {
			if (ok)
				ok[off] = false; /* this one failed: skip it */
			off++;
			err = -EFAULT;
		}
	}
	return err;
}

static int proc_add_counter(struct exp_progress *pp, struct prog_proc *pr, unsigned point,
			    uint64_t key, uint64_t addr, uint64_t initial)
{
	struct prog_counter *c;
	struct iovec local, remote;
	uint64_t now = initial;

	if (grow((void **)&pr->ctrs, &pr->capctrs, pr->nctrs + 1, sizeof(*pr->ctrs)))
		return -ENOMEM;
	/* The read vectors are as big as the counters: no allocation per read. */
	if (pr->capiov < pr->capctrs) {
		struct iovec *a = realloc(pr->iov_local, pr->capctrs * sizeof(*a));
		struct iovec *b;
		uint64_t *v;
		bool *o;

		if (!a)
			return -ENOMEM;
		pr->iov_local = a;
		b = realloc(pr->iov_remote, pr->capctrs * sizeof(*b));
		if (!b)
			return -ENOMEM;
		pr->iov_remote = b;
		v = realloc(pr->vals, pr->capctrs * sizeof(*v));
		if (!v)
			return -ENOMEM;
		pr->vals = v;
		o = realloc(pr->oks, pr->capctrs * sizeof(*o));
		if (!o)
			return -ENOMEM;
		pr->oks = o;
		pr->capiov = pr->capctrs;
	}
	/* Counted from now, unless the process exec'ed under psup: then
	 * everything since it started is this process's. A forked child's
	 * counters start with its parent's counts: not its own. */
	if (!pr->fresh) {
		local.iov_base = &now;
		local.iov_len = sizeof(now);
		remote.iov_base = (void *)(uintptr_t)addr;
		remote.iov_len = sizeof(now);
		if (read_u64s(pr->pid, &local, &remote, 1, NULL))
			now = initial;
	}
	c = &pr->ctrs[pr->nctrs++];
	c->point = point;
	c->key = key;
	c->addr = addr;
	c->base = now;
	c->last = now;
	(void)pp;
	return 0;
}

static int source_point(struct exp_progress *pp, const char *name, enum exp_point_kind kind)
{
	int i = point_find(pp, name, kind, ORIGIN_SOURCE);
	struct prog_point *p;

	if (i >= 0)
		return i;
	if (grow((void **)&pp->points, &pp->cappoints, pp->npoints + 1, sizeof(*pp->points)))
		return -ENOMEM;
	p = &pp->points[pp->npoints];
	memset(p, 0, sizeof(*p));
	p->name = strdup(name);
	if (!p->name)
		return -ENOMEM;
	p->kind = kind;
	p->origin = ORIGIN_SOURCE;
	p->resolved = true;
	return (int)pp->npoints++;
}

/* Parses one psup_points section (see include/psup.h): records of 8-byte
 * aligned headers + names. A compiler or linker may pad between them:
 * anything that is not a record is skipped 8 bytes at a time. */
static int proc_scan_section(struct exp_progress *pp, struct prog_proc *pr,
			     const struct sym_section *s, uint64_t key)
{
	const size_t hsz = sizeof(struct psup_point_header);
	size_t off = 0;

	while (off + hsz <= s->size) {
		struct psup_point_header h;
		enum exp_point_kind kind;
		const char *name;
		int idx, err;

		memcpy(&h, s->data + off, hsz);
		if (h.magic != PSUP_POINT_MAGIC || h.size <= hsz || h.size > s->size - off ||
		    ((const char *)s->data)[off + h.size - 1] != '\0') {
			off += 8;
			continue;
		}
		name = (const char *)s->data + off + hsz;
		switch (h.kind) {
		case PSUP_POINT_THROUGHPUT:
			kind = EXP_POINT_THROUGHPUT;
			break;
		case PSUP_POINT_BEGIN:
			kind = EXP_POINT_BEGIN;
			break;
		case PSUP_POINT_END:
			kind = EXP_POINT_END;
			break;
		default:
			off += (h.size + 7) & ~(size_t)7;
			continue;
		}
		idx = source_point(pp, name, kind);
		if (idx < 0)
			return idx;
		err = proc_add_counter(pp, pr, (unsigned)idx, key,
				       s->addr + off + offsetof(struct psup_point_header, count),
				       h.count);
		if (err)
			return err;
		off += (h.size + 7) & ~(size_t)7;
	}
	return 0;
}

static uint64_t section_key(const struct sym_section *s)
{
	return s->image_id ^ psup_hash64(s->addr);
}

static uint64_t coz_key(const struct sym_coz_site *cs)
{
	return cs->image_id ^ psup_hash64(cs->scratch_start ^ 0xc0cULL);
}

/* The image mapping behind key is gone (dlclose): its counters keep what
 * they counted, and are read no more. */
static void proc_retire_key(struct exp_progress *pp, struct prog_proc *pr, uint64_t key)
{
	unsigned k = 0;

	for (unsigned i = 0; i < pr->nctrs; i++) {
		if (pr->ctrs[i].key == key)
			pp->points[pr->ctrs[i].point].retired += pr->ctrs[i].last - pr->ctrs[i].base;
		else
			pr->ctrs[k++] = pr->ctrs[i];
	}
	pr->nctrs = k;
}

static int proc_scan_sources(struct exp_progress *pp, struct prog_proc *pr, struct sym_space *sp)
{
	struct sym_section secs[64];
	unsigned n = 0;
	int err = sym_space_sections(sp, "psup_points", secs, PSUP_ARRAY_SIZE(secs), &n);

	if (err)
		return err;
	if (n > PSUP_ARRAY_SIZE(secs))
		n = PSUP_ARRAY_SIZE(secs);
	for (unsigned j = 0; j < pr->nscanned;) {
		bool mapped = false;

		for (unsigned i = 0; i < n; i++)
			mapped |= section_key(&secs[i]) == pr->scanned[j];
		if (mapped) {
			j++;
			continue;
		}
		proc_retire_key(pp, pr, pr->scanned[j]);
		pr->scanned[j] = pr->scanned[--pr->nscanned];
	}
	for (unsigned i = 0; i < n; i++) {
		uint64_t key = section_key(&secs[i]);
		bool seen = false;

		for (unsigned j = 0; j < pr->nscanned; j++)
			seen |= pr->scanned[j] == key;
		if (seen)
			continue;
		if (grow((void **)&pr->scanned, &pr->capscanned, pr->nscanned + 1,
			 sizeof(*pr->scanned)))
			return -ENOMEM;
		pr->scanned[pr->nscanned++] = key;
		err = proc_scan_section(pp, pr, &secs[i], key);
		if (err)
			return err;
	}
	return 0;
}

/* Reads pr's counters now, keeping the last values when the process
 * cannot be read (gone, exiting). */
static void proc_read_counters(struct prog_proc *pr)
{
	if (!pr->nctrs)
		return;
	for (unsigned k = 0; k < pr->nctrs; k++) {
		pr->iov_local[k].iov_base = &pr->vals[k];
		pr->iov_local[k].iov_len = sizeof(uint64_t);
		pr->iov_remote[k].iov_base = (void *)(uintptr_t)pr->ctrs[k].addr;
		pr->iov_remote[k].iov_len = sizeof(uint64_t);
	}
	read_u64s(pr->pid, pr->iov_local, pr->iov_remote, pr->nctrs, pr->oks);
	for (unsigned k = 0; k < pr->nctrs; k++) {
		if (pr->oks[k] && pr->vals[k] >= pr->ctrs[k].last)
			pr->ctrs[k].last = pr->vals[k];
	}
}

/*
 * Coz's coz.h without libcoz: each COZ_ macro site counts only once its
 * static `_counter` points to a coz_counter_t, which libcoz's
 * _coz_get_counter() would return. psup points it to 16 bytes of its own in
 * the image's free tail after the bss (mapped and zeroed by the loader,
 * used by nobody: the heap starts a page further) and sets `_initialized`
 * so the site never asks dlsym; then the count is read like a psup.h
 * counter. Done at the exec stop, before any site runs; a site already
 * pointing elsewhere (libcoz is there) is left alone.
 */
static int proc_setup_coz(struct exp_progress *pp, struct prog_proc *pr, struct sym_space *sp)
{
	struct sym_coz_site *sites = NULL;
	size_t n = 0;
	unsigned images = 0, skipped = 0;
	int err = sym_space_coz_sites(sp, &sites, &n, &images, &skipped);

	if (err)
		return err;
	if (images && !n && !skipped && !pp->noted_coz_unusable) {
		pp->noted_coz_unusable = true;
		note(pp, "pid %d includes Coz's coz.h, but psup found none of its COZ_ sites "
			 "(they need -g): they are not counted",
		     (int)pr->pid);
	} else if (skipped && !pp->noted_coz_unusable) {
		pp->noted_coz_unusable = true;
		note(pp, "pid %d: %u of its coz.h COZ_ sites could not be identified (built with "
			 "Clang -O1 or more? GCC, or Clang -O0, works): they are not counted",
		     (int)pr->pid, skipped);
	}
	for (unsigned j = 0; j < pr->ncoz;) {
		bool mapped = false;

		for (size_t i = 0; i < n; i++)
			mapped |= coz_key(&sites[i]) == pr->coz_key[j];
		if (mapped) {
			j++;
			continue;
		}
		proc_retire_key(pp, pr, pr->coz_key[j]);
		for (unsigned k = 0; k < pr->nscratch; k++)
			if (pr->scratch[k].key == pr->coz_key[j])
				pr->scratch[k] = pr->scratch[--pr->nscratch];
		pr->ncoz--;
		pr->coz[j] = pr->coz[pr->ncoz];
		pr->coz_key[j] = pr->coz_key[pr->ncoz];
	}
	for (size_t i = 0; i < n && !err; i++) {
		const struct sym_coz_site *cs = &sites[i];
		struct prog_scratch *sc = NULL;
		uint64_t cur = 0, slot;
		uint8_t one = 1;
		struct iovec l, r;
		enum exp_point_kind kind;
		bool seen = false;
		int idx;

		for (unsigned j = 0; j < pr->ncoz; j++)
			seen |= pr->coz[j] == cs->counter_addr;
		if (seen)
			continue;
		for (unsigned j = 0; j < pr->nscratch; j++)
			if (pr->scratch[j].key == coz_key(cs))
				sc = &pr->scratch[j];
		if (!sc) {
			err = grow((void **)&pr->scratch, &pr->capscratch, pr->nscratch + 1,
				   sizeof(*pr->scratch));
			if (err)
				break;
			sc = &pr->scratch[pr->nscratch++];
			sc->key = coz_key(cs);
			sc->next = cs->scratch_start;
		}
		if (pr->ncoz == pr->capcoz) {
			unsigned ncap = pr->capcoz ? pr->capcoz * 2 : 8;
			uint64_t *a = realloc(pr->coz, ncap * sizeof(*a));
			uint64_t *b;

			if (!a) {
				err = -ENOMEM;
				break;
			}
			pr->coz = a;
			b = realloc(pr->coz_key, ncap * sizeof(*b));
			if (!b) {
				err = -ENOMEM;
				break;
			}
			pr->coz_key = b;
			pr->capcoz = ncap;
		}
		pr->coz[pr->ncoz] = cs->counter_addr;
		pr->coz_key[pr->ncoz++] = coz_key(cs);
		kind = cs->kind == 2 ? EXP_POINT_BEGIN : cs->kind == 3 ? EXP_POINT_END
								       : EXP_POINT_THROUGHPUT;
		idx = source_point(pp, cs->name, kind);
		if (idx < 0) {
			err = idx;
			break;
		}
		if (sc->next + 16 > cs->scratch_end) {
			if (!pp->points[idx].noted_coz) {
				pp->points[idx].noted_coz = true;
				note(pp, "coz.h point %s in %s: no room for its counter after the "
					 "image's data; not counted",
				     cs->name, cs->image);
			}
			continue;
		}
		slot = sc->next;
		l.iov_base = &cur;
		l.iov_len = sizeof(cur);
		r.iov_base = (void *)(uintptr_t)cs->counter_addr;
		r.iov_len = sizeof(cur);
		if (process_vm_readv(pr->pid, &l, 1, &r, 1, 0) != (ssize_t)sizeof(cur))
			continue;
		if (cur && cur != slot) {
			/* libcoz (or something) owns it */
			if (!pp->points[idx].noted_coz) {
				pp->points[idx].noted_coz = true;
				note(pp, "coz.h point %s in %s already has a counter (libcoz "
					 "preloaded?); psup leaves it alone",
				     cs->name, cs->image);
			}
			continue;
		}
		sc->next += 16;
		if (!cur) {
			l.iov_base = &slot;
			if (process_vm_writev(pr->pid, &l, 1, &r, 1, 0) != (ssize_t)sizeof(slot))
				continue;
			l.iov_base = &one;
			l.iov_len = 1;
			r.iov_base = (void *)(uintptr_t)cs->initialized_addr;
			r.iov_len = 1;
			if (process_vm_writev(pr->pid, &l, 1, &r, 1, 0) != 1)
				continue;
		}
		err = proc_add_counter(pp, pr, (unsigned)idx, coz_key(cs), slot, 0);
	}
	free(sites);
	return err;
}

int exp_progress_process(struct exp_progress *pp, struct sym_space *sp, pid_t pid)
{
	struct prog_proc *pr = proc_get(pp, pid);
	int err;

	if (!pr)
		return -ENOMEM;
	err = sym_space_refresh(sp);
	if (err && err != -ESRCH)
		return err;
	if (pr->have_generation && pr->generation == sym_space_generation(sp) &&
	    pr->nlookups == pp->npoints)
		return 0;
	pr->generation = sym_space_generation(sp);
	pr->have_generation = true;
	err = proc_scan_sources(pp, pr, sp);
	if (!err)
		err = proc_setup_coz(pp, pr, sp);
	if (!err)
		err = proc_lookup(pp, pr, sp);
	for (unsigned i = 0; i < pp->npoints; i++) {
		struct prog_point *p = &pp->points[i];

		if (p->origin != ORIGIN_SOURCE && !p->resolved && !p->noted_missing) {
			p->noted_missing = true;
			note(pp, "%s %s: not found in pid %d%s (will look again when it loads "
				 "libraries)",
			     point_label(p), p->spec_text, (int)pid,
			     p->spec.kind == SYM_SPEC_LINE ? " (no such file:line in the line "
							     "tables; built with -g?)"
							   : "");
		}
	}
	return err;
}

void exp_progress_process_exec(struct exp_progress *pp, pid_t pid)
{
	struct prog_proc *pr;

	exp_progress_process_end(pp, pid);
	pr = proc_get(pp, pid);
	if (pr)
		pr->fresh = true;
}

void exp_progress_process_end(struct exp_progress *pp, pid_t pid)
{
	struct prog_proc *pr = proc_find(pp, pid);

	/* Its threads' breakpoints point into an address space that is gone. */
	for (unsigned i = 0; i < pp->nthreads; i++)
		if (pp->threads[i].pid == pid)
			thread_prune(pp, &pp->threads[i], NULL);
	if (!pr)
		return;
	/* No read here: after an exec the addresses are the new image's, and
	 * after the reaping the pid may be another process's. The last values
	 * read stand, so exp_progress_thread_exiting() reads at each exit stop. */
	for (unsigned i = 0; i < pr->nctrs; i++)
		pp->points[pr->ctrs[i].point].retired += pr->ctrs[i].last - pr->ctrs[i].base;
	proc_release(pr);
	*pr = pp->procs[--pp->nprocs];
}

void exp_progress_thread_exiting(struct exp_progress *pp, pid_t tid, pid_t pid)
{
	struct prog_proc *pr;

	if (pid <= 0) {
		const struct prog_thread *t = thread_find(pp, tid);
		if (!t)
			return;
		pid = t->pid;
	}
	pr = proc_find(pp, pid);
	if (pr)
		proc_read_counters(pr);
}

/* ---- threads ---- */

int exp_progress_thread_new(struct exp_progress *pp, pid_t tid, pid_t pid)
{
	struct prog_thread *t = thread_find(pp, tid);
	struct prog_proc *pr;
	uint64_t *slot;
	bool created;

	if (tid <= 0)
		return -EINVAL;
	if (t && t->pid != pid) {
		/* a thread id reused (or an exec from a non-leader) */
		thread_prune(pp, t, NULL);
		t->pid = pid;
	}
	if (!t) {
		if (grow((void **)&pp->threads, &pp->capthreads, pp->nthreads + 1,
			 sizeof(*pp->threads)))
			return -ENOMEM;
		slot = psup_u64map_upsert(&pp->thread_index, (uint64_t)tid, &created);
		if (!slot)
			return -ENOMEM;
		t = &pp->threads[pp->nthreads];
		memset(t, 0, sizeof(*t));
		t->tid = tid;
		t->pid = pid;
		*slot = ++pp->nthreads;
	}
	pr = proc_find(pp, pid);
	if (!pr)
		return 0; /* opened when the process is looked up */
	for (unsigned j = 0; j < pr->nsites; j++) {
		int err = thread_open_site(pp, t, &pr->sites[j]);

		if (err)
			return err;
	}
	return 0;
}

bool exp_progress_has_breakpoint(struct exp_progress *pp, pid_t tid, uint64_t addr)
{
	const struct prog_thread *t = thread_find(pp, tid);

	for (unsigned i = 0; t && i < t->nbps; i++)
		if (t->bps[i].addr == addr && t->bps[i].fd >= 0)
			return true;
	return false;
}

void exp_progress_thread_gone(struct exp_progress *pp, pid_t tid)
{
	struct prog_thread *t = thread_find(pp, tid);
	unsigned idx;

	if (!t)
		return;
	for (unsigned i = 0; i < t->nbps; i++)
		bp_retire(pp, &t->bps[i]);
	free(t->bps);
	idx = (unsigned)(t - pp->threads);
	psup_u64map_remove(&pp->thread_index, (uint64_t)tid);
	if (idx != pp->nthreads - 1) {
		uint64_t *v;

		pp->threads[idx] = pp->threads[pp->nthreads - 1];
		v = psup_u64map_find(&pp->thread_index, (uint64_t)pp->threads[idx].tid);
		if (v)
			*v = idx + 1;
	}
	pp->nthreads--;
}

/* ---- counting ---- */

void exp_progress_sample(struct exp_progress *pp, pid_t pid, uint64_t pc)
{
	struct prog_proc *pr = NULL;

	for (unsigned i = 0; i < pp->npoints; i++) {
		struct prog_point *p = &pp->points[i];

		if (p->origin != ORIGIN_SAMPLED)
			continue;
		if (!pr) {
			pr = proc_find(pp, pid);
			if (!pr)
				return;
		}
		if (i < pr->nlookups && sym_lookup_contains(&pr->lookups[i], pc))
			p->sampled++;
	}
}

/* The live part of every count into sums (npoints entries, zeroed). */
static void read_live(struct exp_progress *pp, uint64_t *sums)
{
	for (unsigned i = 0; i < pp->nthreads; i++) {
		struct prog_thread *t = &pp->threads[i];

		for (unsigned j = 0; j < t->nbps; j++) {
			struct prog_bp *bp = &t->bps[j];
			uint64_t v;

			if (bp->fd >= 0 && !smp_bp_read(bp->fd, &v) && v >= bp->last)
				bp->last = v;
			sums[bp->point] += bp->last;
		}
	}
	for (unsigned i = 0; i < pp->nprocs; i++) {
		struct prog_proc *pr = &pp->procs[i];

		/* A process that is exiting keeps its last values. */
		proc_read_counters(pr);
		for (unsigned k = 0; k < pr->nctrs; k++)
			sums[pr->ctrs[k].point] += pr->ctrs[k].last - pr->ctrs[k].base;
	}
}

int exp_progress_read(struct exp_progress *pp, struct exp_point_value *out, unsigned n)
{
	uint64_t stack_sums[32], *sums = stack_sums;
	unsigned m = n < pp->npoints ? n : pp->npoints;

	if (pp->npoints > PSUP_ARRAY_SIZE(stack_sums)) {
		sums = calloc(pp->npoints, sizeof(*sums));
		if (!sums)
			return -ENOMEM;
	} else {
		memset(stack_sums, 0, sizeof(stack_sums));
	}
	read_live(pp, sums);
	for (unsigned i = 0; i < m; i++) {
		const struct prog_point *p = &pp->points[i];

		out[i].name = p->name;
		out[i].kind = p->kind;
		out[i].count = p->retired + p->sampled + sums[i];
		out[i].resolved = p->resolved;
	}
	if (sums != stack_sums)
		free(sums);
	return (int)m;
}

unsigned exp_progress_debug_slots(const struct exp_progress *pp)
{
	unsigned n = pp->max_sites;

	/* Before any process is looked up, each breakpoint point needs one. */
	if (!n)
		for (unsigned i = 0; i < pp->npoints; i++)
			n += pp->points[i].origin == ORIGIN_BREAKPOINT;
	return n < DEBUG_REGS ? n : DEBUG_REGS;
}

int exp_progress_check(struct exp_progress *pp, uint64_t now_ns, char *msg, size_t len)
{
	bool due = false;

	if (pp->note_len) {
		snprintf(msg, len, "%s", pp->notes[pp->note_head]);
		pp->note_head = (pp->note_head + 1) % NOTE_MAX;
		pp->note_len--;
		return 1;
	}
	for (unsigned i = 0; i < pp->npoints; i++) {
		struct prog_point *p = &pp->points[i];

		if (p->origin == ORIGIN_BREAKPOINT && !p->noted_rate &&
		    (!p->rate_ns || now_ns - p->rate_ns >= RATE_WINDOW_NS))
			due = true;
	}
	if (!due)
		return 0;
	{
		uint64_t stack_sums[32], *sums = stack_sums;

		if (pp->npoints > PSUP_ARRAY_SIZE(stack_sums)) {
			sums = calloc(pp->npoints, sizeof(*sums));
			if (!sums)
				return 0;
		} else {
			memset(stack_sums, 0, sizeof(stack_sums));
		}
		read_live(pp, sums);
		for (unsigned i = 0; i < pp->npoints; i++) {
			struct prog_point *p = &pp->points[i];
			uint64_t count = p->retired + sums[i], dt, visits, rate, cost_pm;

			if (p->origin != ORIGIN_BREAKPOINT || p->noted_rate)
				continue;
			if (!p->rate_ns) {
				p->rate_ns = now_ns;
				p->rate_count = count;
				continue;
			}
			dt = now_ns - p->rate_ns;
			if (dt < RATE_WINDOW_NS)
				continue;
			visits = count - p->rate_count;
			rate = visits * 1000000000ULL / dt;
			/* Per mille of one CPU spent in debug exceptions. */
			cost_pm = rate * SMP_BP_VISIT_NS / 1000000ULL;
			p->rate_ns = now_ns;
			p->rate_count = count;
			if (cost_pm < RATE_WARN_PERMILLE)
				continue;
			p->noted_rate = true;
			snprintf(msg, len,
				 "%s %s: %llu visits/s, each a debug exception of ~%u us: about "
				 "%llu%% of a CPU spent counting; consider --sampled-progress %s, "
				 "or a PSUP_PROGRESS from include/psup.h in the source",
				 point_label(p), p->spec_text, (unsigned long long)rate,
				 SMP_BP_VISIT_NS / 1000, (unsigned long long)(cost_pm + 5) / 10,
				 p->spec_text);
			if (sums != stack_sums)
				free(sums);
			return 1;
		}
		if (sums != stack_sums)
			free(sums);
	}
	return 0;
}
