#include "report/report.h"

#include <cbor.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "report/report-internal.h"

/*
 * The reader walks the CBOR sequence one item head at a time with libcbor's
 * stateless streaming decoder, so it never builds a tree and never allocates
 * from a length it read: a definite array or map that claims more items than
 * bytes remain cannot be complete, so it counts as a truncated tail, and the
 * arrays it keeps (argv, frames, counts) grow only as items are actually read.
 * Nesting is bounded when skipping unknown values.
 */

#define MAX_DEPTH 64

/* Parse results besides 0 and -errno. */
#define R_TRUNC 1 /* the input ended inside an item */

/* clang-format off */
enum tok_kind {
	TK_UINT, TK_NEGINT, TK_BYTES, TK_TEXT, TK_BYTES_INDEF, TK_TEXT_INDEF,
	TK_ARRAY, TK_ARRAY_INDEF, TK_MAP, TK_MAP_INDEF, TK_TAG, TK_FLOAT,
	TK_BOOL, TK_NULL, TK_UNDEF, TK_BREAK,
};
/* clang-format on */

/* clang-format off */
static const char *const tok_names[] = {
	[TK_UINT] = "an unsigned integer", [TK_NEGINT] = "a negative integer",
	[TK_BYTES] = "a byte string", [TK_TEXT] = "a text string",
	[TK_BYTES_INDEF] = "an indefinite byte string",
	[TK_TEXT_INDEF] = "an indefinite text string", [TK_ARRAY] = "an array",
	[TK_ARRAY_INDEF] = "an array", [TK_MAP] = "a map", [TK_MAP_INDEF] = "a map",
	[TK_TAG] = "a tag", [TK_FLOAT] = "a float", [TK_BOOL] = "a boolean",
	[TK_NULL] = "null", [TK_UNDEF] = "undefined", [TK_BREAK] = "a break",
};
/* clang-format on */

struct tok {
	enum tok_kind kind;
	uint64_t v;    /* integer, length, tag or boolean */
	const char *p; /* string bytes */
};

struct reader {
	const uint8_t *buf;
	size_t len, pos;
	struct rep_loadctx *ctx;
	struct rep_rec rec;
	size_t argv_cap, frames_cap, counts_cap;
	struct rep_crec crec; /* rec.causal points here */
};

/* ---- the token layer over cbor_stream_decode --------------------------- */

#define TOKCB(fn, T, K) \
	static void fn(void *c, T v) \
	{ \
		((struct tok *)c)->kind = K; \
		((struct tok *)c)->v = (uint64_t)v; \
	}
TOKCB(cb_u8, uint8_t, TK_UINT)
TOKCB(cb_u16, uint16_t, TK_UINT)
TOKCB(cb_u32, uint32_t, TK_UINT)
TOKCB(cb_u64, uint64_t, TK_UINT)
TOKCB(cb_n8, uint8_t, TK_NEGINT)
TOKCB(cb_n16, uint16_t, TK_NEGINT)
TOKCB(cb_n32, uint32_t, TK_NEGINT)
TOKCB(cb_n64, uint64_t, TK_NEGINT)
TOKCB(cb_array, size_t, TK_ARRAY)
TOKCB(cb_map, size_t, TK_MAP)
TOKCB(cb_tag, uint64_t, TK_TAG)
TOKCB(cb_bool, bool, TK_BOOL)

#define TOKSIMPLE(fn, K) \
	static void fn(void *c) \
	{ \
		((struct tok *)c)->kind = K; \
		((struct tok *)c)->v = 0; \
	}
TOKSIMPLE(cb_bytes_indef, TK_BYTES_INDEF)
TOKSIMPLE(cb_text_indef, TK_TEXT_INDEF)
TOKSIMPLE(cb_array_indef, TK_ARRAY_INDEF)
TOKSIMPLE(cb_map_indef, TK_MAP_INDEF)
TOKSIMPLE(cb_undef, TK_UNDEF)
TOKSIMPLE(cb_null, TK_NULL)
TOKSIMPLE(cb_break, TK_BREAK)

static void cb_float(void *c, float f)
{
	(void)f;
	((struct tok *)c)->kind = TK_FLOAT;
}

static void cb_double(void *c, double f)
{
	(void)f;
	((struct tok *)c)->kind = TK_FLOAT;
}

static void cb_bytes(void *c, cbor_data p, size_t n)
{
	((struct tok *)c)->kind = TK_BYTES;
	((struct tok *)c)->p = (const char *)p;
	((struct tok *)c)->v = n;
}

static void cb_text(void *c, cbor_data p, size_t n)
{
	((struct tok *)c)->kind = TK_TEXT;
	((struct tok *)c)->p = (const char *)p;
	((struct tok *)c)->v = n;
}

/* libcbor 0.8 names the string callbacks confusingly: *_start are the
 * indefinite-length starts, the plain ones get a definite string's bytes. */
/* clang-format off */
static const struct cbor_callbacks tok_callbacks = {
	.uint8 = cb_u8, .uint16 = cb_u16, .uint32 = cb_u32, .uint64 = cb_u64,
	.negint8 = cb_n8, .negint16 = cb_n16, .negint32 = cb_n32, .negint64 = cb_n64,
	.byte_string_start = cb_bytes_indef, .byte_string = cb_bytes,
	.string = cb_text, .string_start = cb_text_indef,
	.indef_array_start = cb_array_indef, .array_start = cb_array,
	.indef_map_start = cb_map_indef, .map_start = cb_map, .tag = cb_tag,
	.float2 = cb_float, .float4 = cb_float, .float8 = cb_double,
	.undefined = cb_undef, .null = cb_null, .boolean = cb_bool,
	.indef_break = cb_break,
};
/* clang-format on */

static int bad(struct reader *rd, const char *fmt, const char *arg)
{
	char what[160];

	snprintf(what, sizeof(what), fmt, arg);
	rep_load_error(rd->ctx, "%s (byte %zu)", what, rd->pos);
	return -EINVAL;
}

static int next(struct reader *rd, struct tok *t)
{
	struct cbor_decoder_result r;
	size_t left = rd->len - rd->pos;

	if (left == 0)
		return R_TRUNC;
	memset(t, 0, sizeof(*t));
	r = cbor_stream_decode(rd->buf + rd->pos, left, &tok_callbacks, t);
	if (r.status == CBOR_DECODER_NEDATA)
		return R_TRUNC;
	if (r.status != CBOR_DECODER_FINISHED || r.read == 0 || r.read > left)
		return bad(rd, "%s", "not valid CBOR");
	rd->pos += r.read;
	left = rd->len - rd->pos;
	switch (t->kind) {
	case TK_BYTES:
	case TK_TEXT:
		/* libcbor claimed the bytes already; check anyway, cheaply. */
		if ((const uint8_t *)t->p < rd->buf ||
		    (const uint8_t *)t->p + t->v > rd->buf + rd->len)
			return R_TRUNC;
		break;
	case TK_ARRAY:
		if (t->v > left)
			return R_TRUNC;
		break;
	case TK_MAP:
		if (t->v > left / 2)
			return R_TRUNC;
		break;
	default:
		break;
	}
	return 0;
}

/* Skips the rest of the item whose head t was just read. */
static int skip(struct reader *rd, const struct tok *t, int depth)
{
	struct tok c;
	int rc;

	if (depth > MAX_DEPTH)
		return bad(rd, "items nested deeper than %s levels", "64");
	switch (t->kind) {
	case TK_TAG:
		rc = next(rd, &c);
		return rc ? rc : skip(rd, &c, depth + 1);
	case TK_BYTES_INDEF:
	case TK_TEXT_INDEF:
		for (;;) {
			rc = next(rd, &c);
			if (rc)
				return rc;
			if (c.kind == TK_BREAK)
				return 0;
			if (c.kind != (t->kind == TK_TEXT_INDEF ? TK_TEXT : TK_BYTES))
				return bad(rd, "%s", "bad chunk in an indefinite string");
		}
	case TK_ARRAY:
	case TK_MAP:
		for (uint64_t i = 0; i < (t->kind == TK_MAP ? 2 * t->v : t->v); i++) {
			rc = next(rd, &c);
			if (!rc)
				rc = skip(rd, &c, depth + 1);
			if (rc)
				return rc;
		}
		return 0;
	case TK_ARRAY_INDEF:
	case TK_MAP_INDEF:
		for (uint64_t i = 0;; i++) {
			rc = next(rd, &c);
			if (rc)
				return rc;
			if (c.kind == TK_BREAK) {
				if (t->kind == TK_MAP_INDEF && i % 2)
					return bad(rd, "%s", "a map ends between a key and its value");
				return 0;
			}
			rc = skip(rd, &c, depth + 1);
			if (rc)
				return rc;
		}
	case TK_BREAK:
		return bad(rd, "%s", "unexpected break");
	default:
		return 0;
	}
}

/* Iterates an array whose head is t (definite or not). */
struct items {
	bool indef;
	uint64_t left;
};

static int items_begin(struct reader *rd, const struct tok *t, struct items *it,
		       const char *key)
{
	if (t->kind == TK_ARRAY) {
		it->indef = false;
		it->left = t->v;
		return 0;
	}
	if (t->kind == TK_ARRAY_INDEF) {
		it->indef = true;
		return 0;
	}
	return bad(rd, "key \"%s\" is not an array", key);
}

/* Reads the next item's head into t; *done when the array ended. */
static int items_next(struct reader *rd, struct items *it, struct tok *t, bool *done)
{
	int rc;

	*done = false;
	if (!it->indef) {
		if (it->left == 0) {
			*done = true;
			return 0;
		}
		it->left--;
		return next(rd, t);
	}
	rc = next(rd, t);
	if (!rc && t->kind == TK_BREAK)
		*done = true;
	return rc;
}

/* Grows *arr to hold n + 1 elements of size sz; n is bounded by the bytes
 * read, since every element takes at least one byte. */
static int grow(void **arr, size_t *cap, size_t n, size_t sz)
{
	size_t ncap;
	void *na;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	na = realloc(*arr, ncap * sz);
	if (!na)
		return -ENOMEM;
	*arr = na;
	*cap = ncap;
	return 0;
}

/* ---- keys -------------------------------------------------------------- */

enum key_kind { KK_TEXT,
		KK_UINT,
		KK_INT,
		KK_BOOL,
		KK_ARGV,
		KK_FRAMES,
		KK_COUNTS };

static const struct {
	const char *name;
	enum key_kind kind;
} keys[REP_K_NKEYS] = {
	[REP_K_TYPE] = { "type", KK_TEXT },
	[REP_K_FORMAT] = { "format", KK_TEXT },
	[REP_K_VERSION] = { "version", KK_UINT },
	[REP_K_PSUP] = { "psup", KK_TEXT },
	[REP_K_MODE] = { "mode", KK_TEXT },
	[REP_K_ARGV] = { "argv", KK_ARGV },
	[REP_K_PID] = { "pid", KK_INT },
	[REP_K_WALL_NS] = { "wall_ns", KK_UINT },
	[REP_K_MONO_NS] = { "mono_ns", KK_UINT },
	[REP_K_EVENT] = { "event", KK_TEXT },
	[REP_K_PERIOD] = { "period", KK_UINT },
	[REP_K_JITTER] = { "jitter", KK_UINT },
	[REP_K_CLOCK] = { "clock", KK_BOOL },
	[REP_K_HW_PMU] = { "hw_pmu", KK_BOOL },
	[REP_K_PER_CPU] = { "per_cpu", KK_BOOL },
	[REP_K_THREAD_EVENTS] = { "thread_events", KK_TEXT },
	[REP_K_THREAD_EVENTS_WHY] = { "thread_events_why", KK_TEXT },
	[REP_K_NEW_THREADS] = { "new_threads", KK_TEXT },
	[REP_K_HOSTNAME] = { "hostname", KK_TEXT },
	[REP_K_TID] = { "tid", KK_INT },
	[REP_K_PARENT] = { "parent", KK_UINT },
	[REP_K_NAME] = { "name", KK_TEXT },
	[REP_K_TIME] = { "time", KK_UINT },
	[REP_K_CTX] = { "ctx", KK_UINT },
	[REP_K_ID] = { "id", KK_UINT },
	[REP_K_ADDR] = { "addr", KK_UINT },
	[REP_K_IMAGE] = { "image", KK_TEXT },
	[REP_K_BUILD_ID] = { "build_id", KK_TEXT },
	[REP_K_OFFSET] = { "offset", KK_UINT },
	[REP_K_FRAMES] = { "frames", KK_FRAMES },
	[REP_K_LOC] = { "loc", KK_UINT },
	[REP_K_COUNTS] = { "counts", KK_COUNTS },
	[REP_K_COUNT] = { "count", KK_UINT },
	[REP_K_PATH] = { "path", KK_TEXT },
	[REP_K_STATUS] = { "status", KK_INT },
	[REP_K_SIGNAL] = { "signal", KK_INT },
	[REP_K_REASON] = { "reason", KK_TEXT },
	[REP_K_SAMPLES] = { "samples", KK_UINT },
	[REP_K_LOST] = { "lost", KK_UINT },
	[REP_K_UNWIND_FAILURES] = { "unwind_failures", KK_UINT },
	[REP_K_RUNNING] = { "running", KK_UINT },
	[REP_K_RUNNABLE] = { "runnable", KK_UINT },
	[REP_K_BLOCKED_FUTEX] = { "blocked_futex", KK_UINT },
	[REP_K_BLOCKED_IO] = { "blocked_io", KK_UINT },
	[REP_K_BLOCKED_SLEEP] = { "blocked_sleep", KK_UINT },
	[REP_K_BLOCKED_OTHER] = { "blocked_other", KK_UINT },
	[REP_K_CPUS] = { "cpus", KK_UINT },
	[REP_K_WEIGHTING] = { "weighting", KK_TEXT },
	[REP_K_NEAR] = { "near", KK_TEXT },
	[REP_K_SYMBOLS] = { "symbols", KK_TEXT },
	[REP_K_WAIT_NS] = { "wait_ns", KK_UINT },
	[REP_K_TRACED] = { "traced", KK_BOOL },
};

static const struct {
	const char *name;
	enum rep_rec_type type;
} types[] = {
	{ "header", REP_REC_HEADER },
	{ "thread", REP_REC_THREAD },
	{ "thread_end", REP_REC_THREAD_END },
	{ "loc", REP_REC_LOC },
	{ "node", REP_REC_NODE },
	{ "samples", REP_REC_SAMPLES },
	{ "lost", REP_REC_LOST },
	{ "exec", REP_REC_EXEC },
	{ "exit", REP_REC_EXIT },
	{ "end", REP_REC_END },
	{ "thread_times", REP_REC_THREAD_TIMES },
	{ "idleness", REP_REC_IDLENESS },
	{ "lock_waits", REP_REC_LOCK_WAITS },
	{ "witch_config", REP_REC_WITCH_CONFIG },
	{ "witch_pairs", REP_REC_WITCH_PAIRS },
	{ "witch_stats", REP_REC_WITCH_STATS },
	{ "experiment", REP_REC_EXPERIMENT },
	{ "line_samples", REP_REC_LINE_SAMPLES },
	{ "causal_info", REP_REC_CAUSAL_INFO },
	{ "progress_totals", REP_REC_PROGRESS_TOTALS },
};

static int ckey_lookup(const struct tok *t);
static int read_cvalue(struct reader *rd, int k, const struct tok *t);

static bool slice_is(const char *p, size_t n, const char *s)
{
	return strlen(s) == n && memcmp(p, s, n) == 0;
}

static int key_lookup(const struct tok *t)
{
	for (int k = 0; k < REP_K_NKEYS; k++)
		if (slice_is(t->p, t->v, keys[k].name))
			return k;
	return -1;
}

static int read_text(struct reader *rd, const struct tok *t, struct rep_slice *s,
		     const char *key)
{
	if (t->kind != TK_TEXT)
		return bad(rd, "key \"%s\" is not a text string", key);
	s->p = t->p;
	s->len = t->v;
	return 0;
}

/* A frame: [function|null, file|null, line, ...more ignored]. */
static int read_frame(struct reader *rd, const struct tok *t, struct rep_rframe *f)
{
	struct items it;
	struct tok c;
	bool done;
	int rc;

	memset(f, 0, sizeof(*f));
	rc = items_begin(rd, t, &it, "frames");
	for (int i = 0; !rc; i++) {
		rc = items_next(rd, &it, &c, &done);
		if (rc)
			break;
		if (done) {
			if (i < 3)
				return bad(rd, "%s", "a frame has fewer than 3 items");
			break;
		}
		if (i >= 3) {
			rc = skip(rd, &c, 2);
		} else if (c.kind == TK_NULL) {
			continue;
		} else if (i == 2) {
			if (c.kind != TK_UINT || c.v > UINT32_MAX)
				return bad(rd, "%s", "a frame's line is not a number");
			f->line = c.v;
		} else {
			rc = read_text(rd, &c, i == 0 ? &f->function : &f->file, "frames");
		}
	}
	return rc;
}

static int read_value(struct reader *rd, int k, const struct tok *t)
{
	struct rep_rec *r = &rd->rec;
	const char *key = keys[k].name;
	struct items it;
	struct tok c;
	bool done;
	size_t n = 0;
	int rc;

	if (t->kind == TK_NULL) {
		r->have &= ~((unsigned __int128)1 << k);
		return 0;
	}
	switch (keys[k].kind) {
	case KK_TEXT:
		rc = read_text(rd, t, &r->s[k], key);
		break;
	case KK_UINT:
		if (t->kind != TK_UINT)
			return bad(rd, "key \"%s\" is not an unsigned integer", key);
		r->u[k] = t->v;
		rc = 0;
		break;
	case KK_INT:
		if (t->kind != TK_UINT || t->v > INT32_MAX)
			return bad(rd, "key \"%s\" is not a pid or status", key);
		r->u[k] = t->v;
		rc = 0;
		break;
	case KK_BOOL:
		if (t->kind != TK_BOOL)
			return bad(rd, "key \"%s\" is not a boolean", key);
		r->u[k] = t->v;
		rc = 0;
		break;
	case KK_ARGV:
		rc = items_begin(rd, t, &it, key);
		while (!rc) {
			rc = items_next(rd, &it, &c, &done);
			if (rc || done)
				break;
			rc = grow((void **)&r->argv, &rd->argv_cap, n, sizeof(*r->argv));
			if (!rc)
				rc = read_text(rd, &c, &r->argv[n++], key);
		}
		r->nargv = n;
		break;
	case KK_FRAMES:
		rc = items_begin(rd, t, &it, key);
		while (!rc) {
			rc = items_next(rd, &it, &c, &done);
			if (rc || done)
				break;
			rc = grow((void **)&r->frames, &rd->frames_cap, n, sizeof(*r->frames));
			if (!rc)
				rc = read_frame(rd, &c, &r->frames[n++]);
		}
		r->nframes = n;
		break;
	case KK_COUNTS:
		rc = items_begin(rd, t, &it, key);
		while (!rc) {
			rc = items_next(rd, &it, &c, &done);
			if (rc || done)
				break;
			if (c.kind != TK_UINT)
				return bad(rd, "%s", "\"counts\" holds a value that is not a number");
			rc = grow((void **)&r->counts, &rd->counts_cap, n, sizeof(*r->counts));
			if (!rc)
				r->counts[n++] = c.v;
		}
		r->ncounts = n;
		break;
	default:
		rc = -EINVAL;
	}
	if (!rc)
		r->have |= (unsigned __int128)1 << k;
	return rc;
}

/* Reads one record into rd->rec. Returns 0, R_TRUNC or -errno. */
static int read_record(struct reader *rd)
{
	struct rep_rec *r = &rd->rec;
	struct tok t, v;
	bool indef;
	uint64_t left = 0;
	int rc;

	r->type = REP_REC_UNKNOWN;
	r->have = 0;
	/* absent keys read as 0 / NULL, never as the previous record's value */
	memset(r->u, 0, sizeof(r->u));
	memset(r->s, 0, sizeof(r->s));
	r->nargv = r->nframes = r->ncounts = 0;
	if (r->causal) {
		r->causal->have = 0;
		memset(r->causal->u, 0, sizeof(r->causal->u));
		memset(r->causal->s, 0, sizeof(r->causal->s));
		r->causal->npoints = 0;
	}
	/* tags before a record (e.g. 55799, "self-described CBOR") say nothing
	 * we need; each takes a byte at least, so this loop ends */
	do {
		rc = next(rd, &t);
		if (rc)
			return rc;
	} while (t.kind == TK_TAG);
	if (t.kind != TK_MAP && t.kind != TK_MAP_INDEF)
		return bad(rd, "not a map but %s", tok_names[t.kind]);
	indef = t.kind == TK_MAP_INDEF;
	left = t.v;
	for (;;) {
		int k;

		if (!indef && left-- == 0)
			break;
		rc = next(rd, &t);
		if (rc)
			return rc;
		if (indef && t.kind == TK_BREAK)
			break;
		k = t.kind == TK_TEXT ? key_lookup(&t) : -1;
		if (t.kind != TK_TEXT) {
			/* Not our schema's key; skip the pair like an unknown key. */
			rc = skip(rd, &t, 1);
			if (rc)
				return rc;
		}
		rc = next(rd, &v);
		if (rc)
			return rc;
		if (v.kind == TK_BREAK)
			return bad(rd, "%s", "a map ends between a key and its value");
		if (k < 0 && t.kind == TK_TEXT && (k = ckey_lookup(&t)) >= 0)
			rc = read_cvalue(rd, k, &v);
		else
			rc = k < 0 ? skip(rd, &v, 1) : read_value(rd, k, &v);
		if (rc)
			return rc;
	}
	if (!rep_rec_has(r, REP_K_TYPE))
		return bad(rd, "%s", "a record without a \"type\"");
	for (size_t i = 0; i < PSUP_ARRAY_SIZE(types); i++)
		if (slice_is(r->s[REP_K_TYPE].p, r->s[REP_K_TYPE].len, types[i].name))
			r->type = types[i].type;
	/* A newer recorder's record: skipped (the model ignores it), never an
	 * error, so new record types stay additive within a format version. */
	if (r->type == REP_REC_UNKNOWN)
		pr_debug("%s: record %zu: skipping a record of unknown type \"%.*s\"",
			 rd->ctx->name, rd->ctx->index + 1, (int)(r->s[REP_K_TYPE].len < 64 ? r->s[REP_K_TYPE].len : 64),
			 r->s[REP_K_TYPE].p);
	return 0;
}

int rep_profile_load_buf(struct rep_profile *p, const void *buf, size_t len,
			 const char *name, char *err, size_t errlen)
{
	struct rep_loadctx ctx;
	struct reader rd = { .buf = buf, .len = len, .ctx = &ctx };
	bool truncated = false;
	int rc = 0;

	if (!name)
		name = "<buffer>";
	rep_loadctx_init(&ctx, p, name, err, errlen);
	rd.rec.causal = &rd.crec;
	while (rd.pos < rd.len) {
		rc = read_record(&rd);
		if (rc == R_TRUNC) {
			truncated = true;
			rc = 0;
			break;
		}
		if (rc)
			break;
		rc = rep_model_apply(&ctx, &rd.rec);
		if (!rc && p->observe)
			rc = p->observe(p->observe_arg, &rd.rec);
		if (rc)
			break;
		ctx.index++;
	}
	if (!rc && ctx.run == REP_NONE) {
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", name,
				 len == 0 ? "empty file, not a psup record file"
					  : "not a psup record file (it ends before its header does)");
		rc = -EINVAL;
	}
	if (!rc)
		rep_model_finish(&ctx, truncated);
	if (rc == -ENOMEM)
		rep_load_error(&ctx, "out of memory");
	free(rd.rec.argv);
	free(rd.rec.frames);
	free(rd.rec.counts);
	free(rd.crec.points);
	rep_loadctx_release(&ctx);
	return rc;
}

/* Whether buf[0, n) settles the first record: 0 while it may still become a
 * header (the item is incomplete), 1 once it is a complete header, -1 when
 * it cannot be one (the load then reports why, from this prefix alone). */
static int first_record_state(struct rep_profile *p, const uint8_t *buf, size_t n)
{
	struct rep_loadctx ctx;
	struct reader rd = { .buf = buf, .len = n, .ctx = &ctx };
	int rc;

	rep_loadctx_init(&ctx, p, "", NULL, 0);
	rd.rec.causal = &rd.crec;
	rc = read_record(&rd);
	free(rd.rec.argv);
	free(rd.rec.frames);
	free(rd.rec.counts);
	free(rd.crec.points);
	rep_loadctx_release(&ctx);
	if (rc == R_TRUNC)
		return 0;
	return rc == 0 && rd.rec.type == REP_REC_HEADER ? 1 : -1;
}

/*
 * Reads a whole file; record files are read once, so a plain read loop is
 * enough and also works for pipes. Never unbounded: a file that cannot
 * start a record file (/dev/zero) is refused after its first item, and past
 * the size a regular file had when opened, at most stream_max more bytes
 * are read (-EFBIG). *out is the caller's to free.
 */
static int read_all(struct rep_profile *p, const char *path, size_t stream_max, uint8_t **out,
		    size_t *outlen, bool *regular)
{
	struct stat st;
	size_t cap = 1 << 16, n = 0, max = stream_max, check_at = 0;
	uint8_t *buf = NULL;
	int fd, err = 0, head = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	if (*regular && st.st_size > 0 && (uint64_t)st.st_size < SIZE_MAX / 4) {
		cap = (size_t)st.st_size + 1;
		max = (size_t)st.st_size > SIZE_MAX / 2 - stream_max ? SIZE_MAX / 2
								     : (size_t)st.st_size + stream_max;
	}
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t r;

		if (n == cap) {
			size_t ncap = cap < SIZE_MAX / 4 ? cap * 2 : SIZE_MAX / 2;
			uint8_t *nb;

			if (ncap > max + 1)
				ncap = max + 1;
			nb = ncap > cap ? realloc(buf, ncap) : NULL;
			if (!nb) {
				err = -ENOMEM;
				goto out;
			}
			buf = nb;
			cap = ncap;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			err = -EFBIG;
			goto out;
		}
		/* parsed again at doubling sizes only: linear in all */
		if (!head && n >= check_at) {
			head = first_record_state(p, buf, n);
			if (head < 0)
				break; /* the load says what is wrong with these bytes */
			check_at = 2 * n;
		}
	}
	*out = buf;
	*outlen = n;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return err;
}

int rep_profile_load_max(struct rep_profile *p, const char *path, size_t stream_max, char *err,
			 size_t errlen)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	bool regular = false;
	int rc;

	rc = read_all(p, path, stream_max, &buf, &len, &regular);
	if (rc == -EFBIG) {
		if (err && errlen && regular)
			snprintf(err, errlen, "%s: grew by more than %zu MiB while being read", path,
				 stream_max >> 20);
		else if (err && errlen)
			snprintf(err, errlen,
				 "%s: more than %zu MiB from a pipe or device; save the record to a "
				 "regular file first",
				 path, stream_max >> 20);
		return -EINVAL;
	}
	if (rc) {
		if (err && errlen) {
			/* git style: lowercase, no final period */
			int n = snprintf(err, errlen, "%s: ", path);

			if (n >= 0 && (size_t)n < errlen) {
				snprintf(err + n, errlen - (size_t)n, "%s", strerror(-rc));
				if (err[n] >= 'A' && err[n] <= 'Z')
					err[n] += 'a' - 'A';
			}
		}
		return rc;
	}
	rc = rep_profile_load_buf(p, buf, len, path, err, errlen);
	free(buf);
	return rc;
}

int rep_profile_load(struct rep_profile *p, const char *path, char *err, size_t errlen)
{
	return rep_profile_load_max(p, path, REP_STREAM_MAX, err, errlen);
}

/* ---- causal records (docs/format.md, "Causal records") ------------------ */

static const struct {
	const char *name;
	enum key_kind kind;
} ckeys[REP_CK_NKEYS] = {
	[REP_CK_FILE] = { "file", KK_TEXT },
	[REP_CK_LINE] = { "line", KK_UINT },
	[REP_CK_SPEEDUP] = { "speedup", KK_UINT },
	[REP_CK_DURATION] = { "duration", KK_UINT },
	[REP_CK_DELAY] = { "delay", KK_UINT },
	[REP_CK_DELAYS] = { "delays", KK_UINT },
	[REP_CK_SELECTED_SAMPLES] = { "selected_samples", KK_UINT },
	[REP_CK_TOTAL_SAMPLES] = { "total_samples", KK_UINT },
	[REP_CK_PAUSE] = { "pause", KK_UINT },
	[REP_CK_PAUSES] = { "pauses", KK_UINT },
	[REP_CK_END_TO_END] = { "end_to_end", KK_BOOL },
	[REP_CK_POINTS] = { "points", KK_COUNTS }, /* parsed by read_points() */
	[REP_CK_SYSCALL_CREDITING] = { "syscall_crediting", KK_BOOL },
	[REP_CK_PERIOD_NS] = { "period_ns", KK_UINT },
	[REP_CK_SCOPE_LINES] = { "scope_lines", KK_UINT },
	[REP_CK_NOTE] = { "note", KK_TEXT },
	[REP_CK_COUNT0] = { "count0", KK_UINT },
	[REP_CK_TIME0] = { "time0", KK_UINT },
};

static int ckey_lookup(const struct tok *t)
{
	for (int k = 0; k < REP_CK_NKEYS; k++)
		if (slice_is(t->p, t->v, ckeys[k].name))
			return k;
	return -1;
}

/* A signed integer item into *v; false when it is none. */
static bool tok_int64(const struct tok *c, int64_t *v)
{
	if (c->kind == TK_UINT && c->v <= INT64_MAX)
		*v = (int64_t)c->v;
	else if (c->kind == TK_NEGINT && c->v < INT64_MAX)
		*v = -(int64_t)c->v - 1;
	else
		return false;
	return true;
}

/* A point: [name|null, kind, delta, arrivals, departures, in_flight,
 * mean in flight in thousandths (optional), ...more ignored]; in_flight and
 * the mean may be negative. */
static int read_point(struct reader *rd, const struct tok *t, struct rep_rpoint *pt)
{
	struct items it = { false, 0 };
	struct tok c;
	bool done;
	int rc;

	memset(pt, 0, sizeof(*pt));
	rc = items_begin(rd, t, &it, "points");
	for (int i = 0; !rc; i++) {
		rc = items_next(rd, &it, &c, &done);
		if (rc)
			break;
		if (done) {
			if (i < 6)
				return bad(rd, "%s", "a progress point has fewer than 6 items");
			break;
		}
		if (i >= 7) {
			rc = skip(rd, &c, 3);
		} else if (i == 0) {
			if (c.kind != TK_NULL)
				rc = read_text(rd, &c, &pt->name, "points");
		} else if (i == 1) {
			rc = read_text(rd, &c, &pt->kind, "points");
		} else if (i == 5) {
			if (!tok_int64(&c, &pt->in_flight))
				return bad(rd, "%s", "a progress point's in-flight count is not an integer");
		} else if (i == 6) {
			if (!tok_int64(&c, &pt->mean_milli))
				return bad(rd, "%s", "a progress point's mean in flight is not an integer");
			pt->have_mean = true;
		} else {
			if (c.kind != TK_UINT)
				return bad(rd, "%s", "a progress point's count is not a number");
			if (i == 2)
				pt->delta = c.v;
			else if (i == 3)
				pt->arrivals = c.v;
			else
				pt->departures = c.v;
		}
	}
	return rc;
}

static int read_cvalue(struct reader *rd, int k, const struct tok *t)
{
	struct rep_crec *r = &rd->crec;
	const char *key = ckeys[k].name;
	struct items it = { false, 0 };
	struct tok c;
	bool done;
	size_t n = 0;
	int rc = 0;

	if (t->kind == TK_NULL) {
		r->have &= ~(1ULL << k);
		return 0;
	}
	if (k == REP_CK_POINTS) {
		rc = items_begin(rd, t, &it, key);
		while (!rc) {
			rc = items_next(rd, &it, &c, &done);
			if (rc || done)
				break;
			rc = grow((void **)&r->points, &r->points_cap, n, sizeof(*r->points));
			if (!rc)
				rc = read_point(rd, &c, &r->points[n++]);
		}
		r->npoints = n;
	} else if (ckeys[k].kind == KK_TEXT) {
		rc = read_text(rd, t, &r->s[k], key);
	} else if (ckeys[k].kind == KK_BOOL) {
		if (t->kind != TK_BOOL)
			return bad(rd, "key \"%s\" is not a boolean", key);
		r->u[k] = t->v;
	} else {
		if (t->kind != TK_UINT)
			return bad(rd, "key \"%s\" is not an unsigned integer", key);
		r->u[k] = t->v;
	}
	if (!rc)
		r->have |= 1ULL << k;
	return rc;
}
