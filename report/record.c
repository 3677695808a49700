#include "report/report.h"

#include <cbor.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The writer encodes each record into one buffer that is reused (it only
 * grows) and appends it with a single write(), so a kill of the recorder loses
 * at most the record being written and the reader sees a truncated tail, never
 * interleaved halves. The schema is docs/format.md.
 */
struct rep_writer {
	int fd;
	int err;          /* first write error, returned from then on */
	unsigned char *buf;
	size_t len, cap;
	bool nomem;       /* an encoding ran out of memory: drop the record */
};

int rep_writer_open(const char *path, unsigned flags, struct rep_writer **out)
{
	struct rep_writer *w;
	int oflags = O_WRONLY | O_CREAT | O_CLOEXEC;

	oflags |= (flags & REP_WRITER_FORCE) ? O_TRUNC : O_EXCL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->cap = 4096;
	w->buf = malloc(w->cap);
	if (!w->buf) {
		free(w);
		return -ENOMEM;
	}
	w->fd = open(path, oflags, 0666);
	if (w->fd < 0) {
		int err = -errno;

		free(w->buf);
		free(w);
		return err;
	}
	*out = w;
	return 0;
}

int rep_writer_close(struct rep_writer *w)
{
	int err;

	if (!w)
		return 0;
	err = w->err;
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

static void enc_text(struct rep_writer *w, const char *s)
{
	size_t n = strlen(s);
	unsigned char *p = enc_room(w, HEAD_MAX + n);

	if (!p)
		return;
	w->len += cbor_encode_string_start(n, p, HEAD_MAX);
	memcpy(w->buf + w->len, s, n);
	w->len += n;
}

static void enc_text_or_null(struct rep_writer *w, const char *s)
{
	if (s)
		enc_text(w, s);
	else
		enc_null(w);
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
	w->len = 0;
	w->nomem = false;
	enc_map(w, nkeys);
	enc_text(w, "type");
	enc_text(w, type);
	return 0;
}

/* Appends the encoded record with one write(); a short write continues where
 * it stopped (a signal can interrupt a large write on some file systems). */
static int rec_end(struct rep_writer *w)
{
	size_t off = 0;

	if (w->nomem)
		return -ENOMEM;
	while (off < w->len) {
		ssize_t r = write(w->fd, w->buf + off, w->len - off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			w->err = -errno;
			return w->err;
		}
		if (r == 0) {
			w->err = -EIO;
			return w->err;
		}
		off += (size_t)r;
	}
	return 0;
}

int rep_write_header(struct rep_writer *w, const struct rep_header *h)
{
	size_t nkeys = 14, argc = 0;
	int err;

	if (h->argv) {
		nkeys++;
		while (h->argv[argc])
			argc++;
	}
	err = rec_begin(w, nkeys, "header");
	if (err)
		return err;
	enc_text(w, "format");
	enc_text(w, "psup");
	enc_text(w, "version");
	enc_uint(w, REP_FORMAT_VERSION);
	enc_text(w, "psup");
	enc_text(w, PSUP_VERSION);
	enc_text(w, "mode");
	enc_text_or_null(w, h->mode);
	if (h->argv) {
		enc_text(w, "argv");
		enc_array(w, argc);
		for (size_t i = 0; i < argc; i++)
			enc_text(w, h->argv[i]);
	}
	enc_text(w, "pid");
	enc_int(w, h->pid);
	enc_text(w, "wall_ns");
	enc_uint(w, h->wall_ns);
	enc_text(w, "mono_ns");
	enc_uint(w, h->mono_ns);
	enc_text(w, "event");
	enc_text_or_null(w, h->event);
	enc_text(w, "period");
	enc_uint(w, h->period);
	enc_text(w, "jitter");
	enc_uint(w, h->jitter_pct);
	enc_text(w, "clock");
	enc_bool(w, h->clock_event);
	enc_text(w, "hw_pmu");
	enc_bool(w, h->hw_pmu);
	enc_text(w, "hostname");
	enc_text_or_null(w, h->hostname);
	return rec_end(w);
}

int rep_write_thread(struct rep_writer *w, const struct rep_thread *t)
{
	int err = rec_begin(w, t->name ? 7 : 6, "thread");

	if (err)
		return err;
	enc_text(w, "tid");
	enc_int(w, t->tid);
	enc_text(w, "pid");
	enc_int(w, t->pid);
	enc_text(w, "parent");
	enc_int(w, t->parent);
	if (t->name) {
		enc_text(w, "name");
		enc_text(w, t->name);
	}
	enc_text(w, "time");
	enc_uint(w, t->time);
	enc_text(w, "ctx");
	enc_uint(w, t->ctx);
	return rec_end(w);
}

int rep_write_thread_end(struct rep_writer *w, pid_t tid, uint64_t time)
{
	int err = rec_begin(w, 3, "thread_end");

	if (err)
		return err;
	enc_text(w, "tid");
	enc_int(w, tid);
	enc_text(w, "time");
	enc_uint(w, time);
	return rec_end(w);
}

int rep_write_thread_times(struct rep_writer *w, pid_t tid, uint64_t time,
			   const struct rep_thread_times *t)
{
	int err = rec_begin(w, 9, "thread_times");

	if (err)
		return err;
	enc_text(w, "tid");
	enc_int(w, tid);
	enc_text(w, "time");
	enc_uint(w, time);
	enc_text(w, "running");
	enc_uint(w, t->running);
	enc_text(w, "runnable");
	enc_uint(w, t->runnable);
	enc_text(w, "blocked_futex");
	enc_uint(w, t->blocked_futex);
	enc_text(w, "blocked_io");
	enc_uint(w, t->blocked_io);
	enc_text(w, "blocked_sleep");
	enc_uint(w, t->blocked_sleep);
	enc_text(w, "blocked_other");
	enc_uint(w, t->blocked_other);
	return rec_end(w);
}

int rep_write_loc(struct rep_writer *w, const struct rep_loc *l)
{
	int err = rec_begin(w, l->build_id ? 8 : 7, "loc");

	if (err)
		return err;
	enc_text(w, "id");
	enc_uint(w, l->id);
	enc_text(w, "pid");
	enc_int(w, l->pid);
	enc_text(w, "addr");
	enc_uint(w, l->addr);
	enc_text(w, "image");
	enc_text_or_null(w, l->image);
	if (l->build_id) {
		enc_text(w, "build_id");
		enc_text(w, l->build_id);
	}
	enc_text(w, "offset");
	enc_uint(w, l->offset);
	enc_text(w, "frames");
	enc_array(w, l->nframes);
	for (unsigned i = 0; i < l->nframes; i++) {
		const struct rep_frame *f = &l->frames[i];

		enc_array(w, 3);
		enc_text_or_null(w, f->function);
		enc_text_or_null(w, f->file);
		enc_uint(w, f->line);
	}
	return rec_end(w);
}

int rep_write_node(struct rep_writer *w, uint64_t id, uint64_t parent, uint64_t loc)
{
	int err = rec_begin(w, 4, "node");

	if (err)
		return err;
	enc_text(w, "id");
	enc_uint(w, id);
	enc_text(w, "parent");
	enc_uint(w, parent);
	enc_text(w, "loc");
	enc_uint(w, loc);
	return rec_end(w);
}

int rep_write_samples(struct rep_writer *w, pid_t tid, const uint64_t *pairs, size_t npairs)
{
	int err = rec_begin(w, 3, "samples");

	if (err)
		return err;
	enc_text(w, "tid");
	enc_int(w, tid);
	enc_text(w, "counts");
	enc_array(w, 2 * npairs);
	for (size_t i = 0; i < 2 * npairs; i++)
		enc_uint(w, pairs[i]);
	return rec_end(w);
}

int rep_write_lost(struct rep_writer *w, pid_t tid, uint64_t count)
{
	int err = rec_begin(w, 3, "lost");

	if (err)
		return err;
	enc_text(w, "tid");
	enc_int(w, tid);
	enc_text(w, "count");
	enc_uint(w, count);
	return rec_end(w);
}

int rep_write_exec(struct rep_writer *w, pid_t pid, const char *path, uint64_t time)
{
	int err = rec_begin(w, 4, "exec");

	if (err)
		return err;
	enc_text(w, "pid");
	enc_int(w, pid);
	enc_text(w, "path");
	enc_text_or_null(w, path);
	enc_text(w, "time");
	enc_uint(w, time);
	return rec_end(w);
}

int rep_write_exit(struct rep_writer *w, pid_t pid, int status, int signal, uint64_t time)
{
	int err = rec_begin(w, 5, "exit");

	if (err)
		return err;
	enc_text(w, "pid");
	enc_int(w, pid);
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
	enc_text(w, "time");
	enc_uint(w, time);
	return rec_end(w);
}

int rep_write_end(struct rep_writer *w, const struct rep_end *e)
{
	int err = rec_begin(w, 6, "end");

	if (err)
		return err;
	enc_text(w, "time");
	enc_uint(w, e->time);
	enc_text(w, "reason");
	enc_text_or_null(w, e->reason);
	enc_text(w, "samples");
	enc_uint(w, e->samples);
	enc_text(w, "lost");
	enc_uint(w, e->lost);
	enc_text(w, "unwind_failures");
	enc_uint(w, e->unwind_failures);
	return rec_end(w);
}
