#include "report/report.h"

#include <cbor.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/output.h"
#include "report/escape.h"

/*
 * The writer encodes records one after the other into one buffer that is
 * reused (it only grows) and appends whole records with one write() when
 * REP_WRITER_BATCH bytes are pending, at rep_writer_flush() (the recorder
 * calls it at every tick) and at close: a kill of the recorder loses the
 * records of its last tick at most, and the reader sees a truncated tail,
 * never interleaved halves. A write per record cost a thread-churning program
 * three system calls per thread (thread, thread_times, thread_end: 4% of
 * psup's CPU time on tests/bench/spawn). The header is written at once. The
 * schema is docs/format.md.
 */
#define REP_WRITER_BATCH (64u * 1024u)

struct rep_writer {
	struct psup_output out;
	int fd;
	int err; /* first write error, returned from then on */
	unsigned char *buf;
	size_t len, cap;
	size_t rec_start; /* where the record being encoded starts in buf */
	bool nomem;       /* an encoding ran out of memory: drop the record */
};

int rep_writer_open(const char *path, unsigned flags, struct rep_writer **out)
{
	struct rep_writer *w;
	int err;

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->cap = 4096;
	w->buf = malloc(w->cap);
	if (!w->buf) {
		free(w);
		return -ENOMEM;
	}
	err = psup_output_open(path, (flags & REP_WRITER_FORCE) ? PSUP_OUTPUT_FORCE : 0, &w->out);
	if (err < 0) {
		free(w->buf);
		free(w);
		return err;
	}
	w->fd = w->out.fd;
	*out = w;
	return 0;
}

void rep_writer_discard(struct rep_writer *w, const char *path)
{
	if (w)
		psup_output_discard(&w->out, path);
	rep_writer_close(w);
}

int rep_writer_close(struct rep_writer *w)
{
	int err;

	if (!w)
		return 0;
	err = rep_writer_flush(w);
	if (close(w->fd) < 0 && !err && errno != EINTR)
		err = -errno;
	free(w->buf);
	free(w);
	return err;
}

/* Makes room for n more bytes; on failure the record is marked and dropped. */
static unsigned char *enc_room(struct rep_writer *w, size_t n)
{
	if (w->nomem)
		return NULL;
	if (w->cap - w->len < n) {
		size_t cap = w->cap;
		unsigned char *nb;

		while (cap - w->len < n) {
			if (cap > SIZE_MAX / 2) {
				w->nomem = true;
				return NULL;
			}
			cap *= 2;
		}
		nb = realloc(w->buf, cap);
		if (!nb) {
			w->nomem = true;
			return NULL;
		}
		w->buf = nb;
		w->cap = cap;
	}
	return w->buf + w->len;
}

/* A CBOR head is at most 9 bytes; libcbor returns 0 when it does not fit,
 * which enc_room() rules out. */
#define HEAD_MAX 9

static void enc_uint(struct rep_writer *w, uint64_t v)
{
	unsigned char *p = enc_room(w, HEAD_MAX);

	if (p)
		w->len += cbor_encode_uint(v, p, HEAD_MAX);
}

static void enc_int(struct rep_writer *w, int64_t v)
{
	unsigned char *p = enc_room(w, HEAD_MAX);

	if (!p)
		return;
	if (v >= 0)
		w->len += cbor_encode_uint((uint64_t)v, p, HEAD_MAX);
	else
		w->len += cbor_encode_negint((uint64_t)(-(v + 1)), p, HEAD_MAX);
}

static void enc_bool(struct rep_writer *w, bool v)
{
	unsigned char *p = enc_room(w, 1);

	if (p)
		w->len += cbor_encode_bool(v, p, 1);
}

static void enc_null(struct rep_writer *w)
{
	unsigned char *p = enc_room(w, 1);

	if (p)
		w->len += cbor_encode_null(p, 1);
}

/* The character at s: *in bytes of s, written as the returned number of
 * bytes from *out. A byte that begins no well-formed UTF-8 sequence (names
 * and argv are the profiled program's bytes) is written as U+FFFD. */
static size_t text_char(const char *s, size_t *in, const char **out)
{
	static const char replacement[] = "\xef\xbf\xbd";
	uint32_t cp;
	size_t k = (unsigned char)*s < 0x80 ? 1 : rep_utf8_seq(s, &cp);

	*in = k ? k : 1;
	*out = k ? s : replacement;
	return k ? k : sizeof(replacement) - 1;
}

/* CBOR text is UTF-8 (RFC 8949, 3.1): a strict decoder refuses a file
 * with a stray byte in any string, so each becomes U+FFFD here, as every
 * view shows it anyway. */
static void enc_text(struct rep_writer *w, const char *s)
{
	size_t n = 0, in, m;
	const char *q, *from;

	for (q = s; *q; q += in)
		n += text_char(q, &in, &from);
	unsigned char *p = enc_room(w, HEAD_MAX + n);

	if (!p)
		return;
	w->len += cbor_encode_string_start(n, p, HEAD_MAX);
	if (n == (size_t)(q - s)) { /* no stray byte: as it is */
		memcpy(w->buf + w->len, s, n);
		w->len += n;
		return;
	}
	for (; *s; s += in) {
		m = text_char(s, &in, &from);
		memcpy(w->buf + w->len, from, m);
		w->len += m;
	}
}

static void enc_text_or_null(struct rep_writer *w, const char *s)
{
	if (s)
		enc_text(w, s);
	else
		enc_null(w);
}

/* A key and its value, the unit of every record map. */
static void kv_uint(struct rep_writer *w, const char *k, uint64_t v)
{
	enc_text(w, k);
	enc_uint(w, v);
}

static void kv_int(struct rep_writer *w, const char *k, int64_t v)
{
	enc_text(w, k);
	enc_int(w, v);
}

static void kv_bool(struct rep_writer *w, const char *k, bool v)
{
	enc_text(w, k);
	enc_bool(w, v);
}

static void kv_text(struct rep_writer *w, const char *k, const char *v)
{
	enc_text(w, k);
	enc_text(w, v);
}

static void kv_text_or_null(struct rep_writer *w, const char *k, const char *v)
{
	enc_text(w, k);
	enc_text_or_null(w, v);
}

static void enc_map(struct rep_writer *w, size_t n)
{
	unsigned char *p = enc_room(w, HEAD_MAX);

	if (p)
		w->len += cbor_encode_map_start(n, p, HEAD_MAX);
}

static void enc_array(struct rep_writer *w, size_t n)
{
	unsigned char *p = enc_room(w, HEAD_MAX);

	if (p)
		w->len += cbor_encode_array_start(n, p, HEAD_MAX);
}

/* Starts a record: a map of nkeys entries, the first being "type". */
static int rec_begin(struct rep_writer *w, size_t nkeys, const char *type)
{
	if (w->err)
		return w->err;
	w->rec_start = w->len;
	w->nomem = false;
	enc_map(w, nkeys);
	kv_text(w, "type", type);
	return 0;
}

/* Writes the pending records; a short write continues where it stopped (a
 * signal can interrupt a large write on some file systems). */
int rep_writer_flush(struct rep_writer *w)
{
	size_t off = 0;

	if (!w || w->err)
		return w ? w->err : 0;
	while (off < w->len) {
		ssize_t r = write(w->fd, w->buf + off, w->len - off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			w->err = -errno;
			break;
		}
		if (r == 0) {
			w->err = -EIO;
			break;
		}
		off += (size_t)r;
	}
	w->len = 0;
	return w->err;
}

/* Ends the record: dropped when it ran out of memory, written with the
 * others once REP_WRITER_BATCH bytes wait. */
static int rec_end(struct rep_writer *w)
{
	if (w->nomem) {
		w->len = w->rec_start;
		return -ENOMEM;
	}
	if (w->len >= REP_WRITER_BATCH)
		return rep_writer_flush(w);
	return 0;
}

int rep_write_header(struct rep_writer *w, const struct rep_header *h)
{
	size_t nkeys = 14 + (h->cpus != 0) + h->per_cpu + (h->thread_events != NULL) +
		       (h->thread_events_why != NULL) + (h->new_threads != NULL),
	       argc = 0;
	int err;

	if (h->argv) {
		nkeys++;
		while (h->argv[argc])
			argc++;
	}
	err = rec_begin(w, nkeys, "header");
	if (err)
		return err;
	kv_text(w, "format", "psup");
	kv_uint(w, "version", REP_FORMAT_VERSION);
	kv_text(w, "psup", PSUP_VERSION);
	kv_text_or_null(w, "mode", h->mode);
	if (h->argv) {
		enc_text(w, "argv");
		enc_array(w, argc);
		for (size_t i = 0; i < argc; i++)
			enc_text(w, h->argv[i]);
	}
	kv_int(w, "pid", h->pid);
	kv_uint(w, "wall_ns", h->wall_ns);
	kv_uint(w, "mono_ns", h->mono_ns);
	kv_text_or_null(w, "event", h->event);
	kv_uint(w, "period", h->period);
	kv_uint(w, "jitter", h->jitter_pct);
	kv_bool(w, "clock", h->clock_event);
	kv_bool(w, "hw_pmu", h->hw_pmu);
	if (h->per_cpu)
		kv_bool(w, "per_cpu", true);
	if (h->thread_events)
		kv_text(w, "thread_events", h->thread_events);
	if (h->thread_events_why)
		kv_text(w, "thread_events_why", h->thread_events_why);
	if (h->new_threads)
		kv_text(w, "new_threads", h->new_threads);
	kv_text_or_null(w, "hostname", h->hostname);
	if (h->cpus)
		kv_uint(w, "cpus", h->cpus);
	/* At once: a file that names its format from the start. */
	err = rec_end(w);
	return err ? err : rep_writer_flush(w);
}

int rep_write_thread(struct rep_writer *w, const struct rep_thread *t)
{
	int err = rec_begin(w, t->name ? 7 : 6, "thread");

	if (err)
		return err;
	kv_int(w, "tid", t->tid);
	kv_int(w, "pid", t->pid);
	kv_int(w, "parent", t->parent);
	if (t->name) {
		kv_text(w, "name", t->name);
	}
	kv_uint(w, "time", t->time);
	kv_uint(w, "ctx", t->ctx);
	return rec_end(w);
}

int rep_write_thread_rename(struct rep_writer *w, pid_t tid, pid_t pid, const char *name)
{
	int err = rec_begin(w, 4, "thread");

	if (err)
		return err;
	kv_int(w, "tid", tid);
	kv_int(w, "pid", pid);
	kv_text(w, "name", name);
	return rec_end(w);
}

int rep_write_thread_end(struct rep_writer *w, pid_t tid, uint64_t time)
{
	int err = rec_begin(w, 3, "thread_end");

	if (err)
		return err;
	kv_int(w, "tid", tid);
	kv_uint(w, "time", time);
	return rec_end(w);
}

int rep_write_thread_times(struct rep_writer *w, pid_t tid, uint64_t time,
			   const struct rep_thread_times *t)
{
	int err = rec_begin(w, 9, "thread_times");

	if (err)
		return err;
	kv_int(w, "tid", tid);
	kv_uint(w, "time", time);
	kv_uint(w, "running", t->running);
	kv_uint(w, "runnable", t->runnable);
	kv_uint(w, "blocked_futex", t->blocked_futex);
	kv_uint(w, "blocked_io", t->blocked_io);
	kv_uint(w, "blocked_sleep", t->blocked_sleep);
	kv_uint(w, "blocked_other", t->blocked_other);
	return rec_end(w);
}

int rep_write_loc(struct rep_writer *w, const struct rep_loc *l)
{
	return rep_write_loc_ext(w, l, NULL);
}

int rep_write_loc_ext(struct rep_writer *w, const struct rep_loc *l,
		      const struct rep_loc_symbols *s)
{
	const char *near = s && !l->nframes ? s->near : NULL;
	const char *symbols = s ? s->symbols : NULL;
	int err = rec_begin(w, 7 + !!l->build_id + !!near + !!symbols, "loc");

	if (err)
		return err;
	kv_uint(w, "id", l->id);
	kv_int(w, "pid", l->pid);
	kv_uint(w, "addr", l->addr);
	kv_text_or_null(w, "image", l->image);
	if (l->build_id) {
		kv_text(w, "build_id", l->build_id);
	}
	kv_uint(w, "offset", l->offset);
	enc_text(w, "frames");
	enc_array(w, l->nframes);
	for (unsigned i = 0; i < l->nframes; i++) {
		const struct rep_frame *f = &l->frames[i];

		enc_array(w, 3);
		enc_text_or_null(w, f->function);
		enc_text_or_null(w, f->file);
		enc_uint(w, f->line);
	}
	if (near)
		kv_text(w, "near", near);
	if (symbols)
		kv_text(w, "symbols", symbols);
	return rec_end(w);
}

int rep_write_node(struct rep_writer *w, uint64_t id, uint64_t parent, uint64_t loc)
{
	int err = rec_begin(w, 4, "node");

	if (err)
		return err;
	kv_uint(w, "id", id);
	kv_uint(w, "parent", parent);
	kv_uint(w, "loc", loc);
	return rec_end(w);
}

/* A per-thread record of (leaf node, value) pairs: samples, idleness. */
static int write_node_pairs(struct rep_writer *w, const char *type, pid_t tid,
			    const uint64_t *pairs, size_t npairs)
{
	int err = rec_begin(w, 3, type);

	if (err)
		return err;
	kv_int(w, "tid", tid);
	enc_text(w, "counts");
	enc_array(w, 2 * npairs);
	for (size_t i = 0; i < 2 * npairs; i++)
		enc_uint(w, pairs[i]);
	return rec_end(w);
}

int rep_write_samples(struct rep_writer *w, pid_t tid, const uint64_t *pairs, size_t npairs)
{
	return write_node_pairs(w, "samples", tid, pairs, npairs);
}

int rep_write_idleness(struct rep_writer *w, pid_t tid, const uint64_t *pairs, size_t npairs)
{
	return write_node_pairs(w, "idleness", tid, pairs, npairs);
}

int rep_write_lock_waits(struct rep_writer *w, pid_t pid, uint64_t addr, uint64_t ctx,
			 bool traced, const char *reason, uint64_t waits, uint64_t wait_ns)
{
	int err = rec_begin(w, reason ? 8 : 7, "lock_waits");

	if (err)
		return err;
	kv_int(w, "pid", pid);
	kv_uint(w, "addr", addr);
	kv_uint(w, "ctx", ctx);
	kv_bool(w, "traced", traced);
	if (reason)
		kv_text(w, "reason", reason);
	kv_uint(w, "count", waits);
	kv_uint(w, "wait_ns", wait_ns);
	return rec_end(w);
}

int rep_write_lost(struct rep_writer *w, pid_t tid, uint64_t count)
{
	int err = rec_begin(w, 3, "lost");

	if (err)
		return err;
	kv_int(w, "tid", tid);
	kv_uint(w, "count", count);
	return rec_end(w);
}

int rep_write_exec(struct rep_writer *w, pid_t pid, const char *path, uint64_t time)
{
	int err = rec_begin(w, 4, "exec");

	if (err)
		return err;
	kv_int(w, "pid", pid);
	kv_text_or_null(w, "path", path);
	kv_uint(w, "time", time);
	return rec_end(w);
}

int rep_write_exit(struct rep_writer *w, pid_t pid, int status, int signal, uint64_t time)
{
	int err = rec_begin(w, 5, "exit");

	if (err)
		return err;
	kv_int(w, "pid", pid);
	enc_text(w, "status");
	if (status >= 0 && signal <= 0)
		enc_int(w, status);
	else
		enc_null(w);
	enc_text(w, "signal");
	if (signal > 0)
		enc_int(w, signal);
	else
		enc_null(w);
	kv_uint(w, "time", time);
	return rec_end(w);
}

int rep_write_end(struct rep_writer *w, const struct rep_end *e)
{
	int err = rec_begin(w, 6 + (e->inherit_refused ? 3 : 0) + e->new_threads_stopped, "end");

	if (err)
		return err;
	kv_uint(w, "time", e->time);
	kv_text_or_null(w, "reason", e->reason);
	kv_uint(w, "samples", e->samples);
	kv_uint(w, "lost", e->lost);
	kv_uint(w, "unwind_failures", e->unwind_failures);
	if (e->inherit_refused) {
		/* The header's thread_events, as it ended (docs/format.md). */
		kv_text(w, "thread_events", "inherited_then_per_thread");
		kv_text(w, "thread_events_why", e->inherit_refused);
		kv_uint(w, "count", e->own_sets_after);
	}
	if (e->new_threads_stopped)
		kv_text(w, "new_threads", "stopped"); /* the header's, as it ended */
	return rec_end(w);
}

/* ---- witch (docs/format.md, "Witch records") ---------------------------- */

int rep_write_witch_config(struct rep_writer *w, const struct rep_witch_config *c)
{
	int err = rec_begin(w, 8, "witch_config");

	if (err)
		return err;
	kv_text(w, "name", c->kinds);
	kv_text_or_null(w, "event", c->event);
	kv_uint(w, "period", c->period);
	kv_bool(w, "clock", c->clock);
	kv_text_or_null(w, "mode", c->exact ? "exact" : "sampled");
	kv_text_or_null(w, "weighting", c->weighting);
	enc_text(w, "counts");
	enc_array(w, 3);
	enc_uint(w, c->fp_precision_ppm);
	enc_uint(w, c->slots);
	enc_uint(w, c->weight);
	return rec_end(w);
}

static int write_witch_counts(struct rep_writer *w, const char *type, const char *name,
			      const uint64_t *vals, size_t n)
{
	int err = rec_begin(w, 3, type);

	if (err)
		return err;
	kv_text(w, "name", name);
	enc_text(w, "counts");
	enc_array(w, n);
	for (size_t i = 0; i < n; i++)
		enc_uint(w, vals[i]);
	return rec_end(w);
}

int rep_write_witch_pairs(struct rep_writer *w, const char *kind, const uint64_t *vals, size_t n)
{
	return write_witch_counts(w, "witch_pairs", kind, vals, n);
}

int rep_write_witch_stats(struct rep_writer *w, const char *name, const uint64_t *vals, size_t n)
{
	return write_witch_counts(w, "witch_stats", name, vals, n);
}

/* ---- causal records (docs/format.md, "Causal records") ------------------ */

static void enc_points(struct rep_writer *w, unsigned n, const struct exp_point_delta *pts);

int rep_write_experiment(struct rep_writer *w, const struct exp_experiment *e)
{
	int err = rec_begin(w, 15, "experiment");

	if (err)
		return err;
	kv_uint(w, "time", e->time);
	kv_text_or_null(w, "file", e->file);
	kv_uint(w, "line", e->line);
	kv_uint(w, "speedup", e->speedup_pct);
	kv_uint(w, "duration", e->duration_ns);
	kv_uint(w, "delay", e->delay_ns);
	kv_uint(w, "observer", e->observer_ns);
	kv_uint(w, "delays", e->delays);
	kv_uint(w, "selected_samples", e->selected_samples);
	kv_uint(w, "total_samples", e->total_samples);
	kv_uint(w, "pause", e->pause_ns);
	kv_uint(w, "pauses", e->pauses);
	kv_bool(w, "end_to_end", e->end_to_end);
	/* an array per point keeps the record small at many points */
	enc_points(w, e->npoints, e->points);
	return rec_end(w);
}

/* The monotonic clock the recorder's other times use (header mono_ns). */
static uint64_t mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int rep_write_line_samples(struct rep_writer *w, const struct exp_line_samples *ls)
{
	return rep_write_line_samples_at(w, ls, mono_now());
}

int rep_write_line_samples_at(struct rep_writer *w, const struct exp_line_samples *ls,
			      uint64_t time)
{
	int err = rec_begin(w, ls->time0 ? 7 : 5, "line_samples");

	if (err)
		return err;
	kv_uint(w, "time", time);
	kv_text_or_null(w, "file", ls->file);
	kv_uint(w, "line", ls->line);
	kv_uint(w, "count", ls->count);
	if (ls->time0) {
		kv_uint(w, "count0", ls->count0);
		kv_uint(w, "time0", ls->time0);
	}
	return rec_end(w);
}

/* Progress points as [name, kind, delta, arrivals, departures, in_flight],
 * latency pairs measured over time with a seventh: the mean in flight, in
 * thousandths. */
static void enc_points(struct rep_writer *w, unsigned n, const struct exp_point_delta *pts)
{
	enc_text(w, "points");
	enc_array(w, n);
	for (unsigned i = 0; i < n; i++) {
		const struct exp_point_delta *d = &pts[i];

		enc_array(w, d->have_mean ? 7 : 6);
		enc_text_or_null(w, d->name);
		enc_text(w, d->kind == EXP_MEASURE_LATENCY ? "latency" : "throughput");
		enc_uint(w, d->delta);
		enc_uint(w, d->arrivals);
		enc_uint(w, d->departures);
		enc_int(w, d->in_flight_begin);
		if (d->have_mean)
			enc_int(w, (int64_t)llround(d->mean_in_flight * 1000));
	}
}

int rep_write_progress_totals(struct rep_writer *w, uint64_t time, unsigned n,
			      const struct exp_point_delta *totals)
{
	int err = rec_begin(w, 3, "progress_totals");

	if (err)
		return err;
	kv_uint(w, "time", time);
	enc_points(w, n, totals);
	return rec_end(w);
}

int rep_write_causal_info(struct rep_writer *w, const struct rep_causal_info *ci)
{
	int err = rec_begin(w, ci->note ? 6 : 5, "causal_info");

	if (err)
		return err;
	kv_text_or_null(w, "mode", ci->mode);
	kv_bool(w, "syscall_crediting", ci->syscall_crediting);
	kv_uint(w, "period_ns", ci->period_ns);
	kv_uint(w, "scope_lines", ci->scope_lines);
	if (ci->note)
		kv_text(w, "note", ci->note);
	return rec_end(w);
}
