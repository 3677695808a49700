/*
 * report --format pprof: the profile as pprof's profile.proto (the
 * interchange format of `go tool pprof`, Parca and Pyroscope), gzipped as
 * the format asks. The message code is generated at build time by
 * protoc-c from report/profile.proto; libprotobuf-c packs it and zlib
 * compresses it.
 *
 * What goes in:
 * - sample_type [samples, count] and, when every run counted time (the
 *   period is in ns), [cpu, nanoseconds] = samples x the run's period; the
 *   last is the default. No wait (off-CPU) time: the recordings keep
 *   blocked time per thread (thread_times) and futex waits per waker, not
 *   per calling context of the waiter, so no stack could honestly carry it.
 * - a Sample per (thread, leaf context), leaf first (the locations of its
 *   innermost REP_EXPORT_MAX_FRAMES frames), labelled with the thread's
 *   name, tid and pid;
 * - a Location per merged loc of the report: address = its offset in the
 *   image's file, one Line per frame, innermost (inlined) first;
 * - a Mapping per (image, build-id), the program's own first. A merged loc
 *   stands for its address in every process and run, so a mapping gives
 *   file offsets (memory_start 0, file_offset 0), not one process's layout;
 * - a Function per (name, source file);
 * - period, duration (the runs' wall times added up), the start time, and
 *   a comment naming psup and the command.
 * Every string from the program goes through rep_text_dup(): proto3 strings
 * are UTF-8, and the names are untrusted.
 */
#include "report/export.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "report/escape.h"
#include "report/profile.pb-c.h"

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__ValueType pb_value_type;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Label pb_label;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Function pb_function;

struct pp {
	const struct rep_profile *p;
	pb_profile prof;
	/* the string table: [0] = "", then copies the builder owns */
	char **strs;
	size_t nstrs, strs_cap;
	struct psup_u64map str_ix; /* profile string id -> table index */
	pb_value_type types[2], period_type;
	pb_value_type *type_ptrs[2];
	pb_mapping *maps;
	pb_mapping **map_ptrs;
	size_t nmaps;
	struct psup_u64map map_ix; /* image << 32 | build_id -> mapping row + 1 */
	pb_location *locs;
	pb_location **loc_ptrs;
	pb_line *lines;
	pb_line **line_ptrs;
	pb_function *fns;
	pb_function **fn_ptrs;
	size_t nfns;
	struct psup_u64map fn_ix; /* name << 32 | file -> function row + 1 */
	pb_sample *samples;
	pb_sample **sample_ptrs;
	size_t nsamples, samples_cap;
	pb_label *labels; /* 3 per sample */
	pb_label **label_ptrs;
	uint64_t *loc_ids; /* every sample's location ids, back to back */
	size_t loc_ids_cap;
	int64_t *values; /* 2 per sample */
	int64_t comment;
};

/* A sample's value: the proto's int64, saturated (a record may say a
 * count and a period of 1e18 each). */
static int64_t value_of(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* Index of a copy of s in the table (s untrusted: made UTF-8). -1 when out of memory. */
static int64_t str_add(struct pp *b, const char *s)
{
	char *d;

	if (b->nstrs == b->strs_cap) {
		size_t nc = b->strs_cap ? b->strs_cap * 2 : 256;
		char **ns = realloc(b->strs, nc * sizeof(*ns));

		if (!ns)
			return -1;
		b->strs = ns;
		b->strs_cap = nc;
	}
	d = rep_text_dup(s);
	if (!d)
		return -1;
	b->strs[b->nstrs] = d;
	return (int64_t)b->nstrs++;
}

/* Index of the profile's string id (0: ""). -1 when out of memory. */
static int64_t str_of(struct pp *b, uint32_t id)
{
	uint64_t *v;
	bool created;
	int64_t ix;

	if (!id)
		return 0;
	v = psup_u64map_upsert(&b->str_ix, id, &created);
	if (!v)
		return -1;
	if (!created)
		return (int64_t)*v;
	ix = str_add(b, rep_str(b->p, id));
	if (ix < 0) {
		psup_u64map_remove(&b->str_ix, id);
		return -1;
	}
	*v = (uint64_t)ix;
	return ix;
}

static int add_mapping(struct pp *b, const struct rep_mloc *l, uint32_t *row)
{
	uint64_t key = (uint64_t)l->image << 32 | l->build_id, *v;
	pb_mapping *m;
	bool created;
	int64_t fname, bid;

	v = psup_u64map_upsert(&b->map_ix, key, &created);
	if (!v)
		return -ENOMEM;
	if (created) {
		fname = str_of(b, l->image);
		bid = str_of(b, l->build_id);
		if (fname < 0 || bid < 0)
			return -ENOMEM;
		m = &b->maps[b->nmaps];
		perftools__profiles__mapping__init(m);
		m->id = b->nmaps + 1;
		m->filename = fname;
		m->build_id = bid;
		b->map_ptrs[b->nmaps] = m;
		*v = ++b->nmaps;
	}
	m = &b->maps[*v - 1];
	if (l->offset >= m->memory_limit)
		m->memory_limit = l->offset + 1;
	*row = (uint32_t)(*v - 1);
	return 0;
}

static int64_t fn_of(struct pp *b, const struct rep_mframe *f)
{
	uint64_t key = (uint64_t)f->function << 32 | f->file, *v;
	bool created;
	pb_function *fn;
	int64_t name, file;

	v = psup_u64map_upsert(&b->fn_ix, key, &created);
	if (!v)
		return -1;
	if (!created)
		return (int64_t)*v;
	name = str_of(b, f->function);
	file = str_of(b, f->file);
	if (name < 0 || file < 0) {
		psup_u64map_remove(&b->fn_ix, key);
		return -1;
	}
	fn = &b->fns[b->nfns];
	perftools__profiles__function__init(fn);
	fn->id = b->nfns + 1;
	fn->name = name;
	fn->system_name = name;
	fn->filename = file;
	b->fn_ptrs[b->nfns] = fn;
	*v = ++b->nfns;
	return (int64_t)*v;
}

/* Mappings (the program's image first), locations, lines and functions. */
static int build_locations(struct pp *b)
{
	const struct rep_profile *p = b->p;
	uint32_t main_image = 0, *loc_map = NULL;
	int rc = -ENOMEM;

	b->maps = calloc(p->nlocs + 1, sizeof(*b->maps));
	b->map_ptrs = calloc(p->nlocs + 1, sizeof(*b->map_ptrs));
	b->locs = calloc(p->nlocs + 1, sizeof(*b->locs));
	b->loc_ptrs = calloc(p->nlocs + 1, sizeof(*b->loc_ptrs));
	b->lines = calloc(p->nframes + 1, sizeof(*b->lines));
	b->line_ptrs = calloc(p->nframes + 1, sizeof(*b->line_ptrs));
	b->fns = calloc(p->nframes + 1, sizeof(*b->fns));
	b->fn_ptrs = calloc(p->nframes + 1, sizeof(*b->fn_ptrs));
	loc_map = calloc(p->nlocs + 1, sizeof(*loc_map));
	if (!b->maps || !b->map_ptrs || !b->locs || !b->loc_ptrs || !b->lines || !b->line_ptrs ||
	    !b->fns || !b->fn_ptrs || !loc_map)
		goto out;
	for (uint32_t r = 0; r < p->nruns && !main_image; r++)
		main_image = p->runs[r].exec_path;
	/* the program's mappings first: pprof takes mapping[0] as the main binary */
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t i = 0; i < p->nlocs; i++) {
			if ((p->locs[i].image == main_image) != (pass == 0))
				continue;
			if (add_mapping(b, &p->locs[i], &loc_map[i]))
				goto out;
		}
	}
	for (uint32_t i = 0; i < p->nlocs; i++) {
		const struct rep_mloc *l = &p->locs[i];
		pb_location *loc = &b->locs[i];
		pb_mapping *m = &b->maps[loc_map[i]];

		perftools__profiles__location__init(loc);
		loc->id = i + 1;
		loc->mapping_id = m->id;
		loc->address = l->offset;
		loc->n_line = l->nframes;
		loc->line = &b->line_ptrs[l->frames];
		for (uint32_t f = 0; f < l->nframes; f++) {
			const struct rep_mframe *fr = &p->frames[l->frames + f];
			pb_line *ln = &b->lines[l->frames + f];
			int64_t fid = fn_of(b, fr);

			if (fid < 0)
				goto out;
			perftools__profiles__line__init(ln);
			ln->function_id = (uint64_t)fid;
			ln->line = fr->line;
			b->line_ptrs[l->frames + f] = ln;
			m->has_filenames |= fr->file != 0;
			m->has_line_numbers |= fr->line != 0;
		}
		m->has_functions |= !l->unnamed;
		m->has_inline_frames |= l->nframes > 1;
		b->loc_ptrs[i] = loc;
	}
	b->prof.n_mapping = b->nmaps;
	b->prof.mapping = b->map_ptrs;
	b->prof.n_location = p->nlocs;
	b->prof.location = b->loc_ptrs;
	b->prof.n_function = b->nfns;
	b->prof.function = b->fn_ptrs;
	rc = 0;
out:
	free(loc_map);
	return rc;
}

static int build_samples(struct pp *b, bool timed)
{
	const struct rep_profile *p = b->p;
	int64_t k_thread = str_add(b, "thread"), k_tid = str_add(b, "tid"), k_pid = str_add(b, "pid");
	struct rep_export_path path = { 0 };
	size_t npairs;
	uint64_t *pairs = NULL;
	int rc = 0;

	if (k_thread < 0 || k_tid < 0 || k_pid < 0)
		return -ENOMEM;
	/* count first: the samples' arrays point into these, so they never move */
	for (uint32_t t = 0; t < p->nthreads; t++)
		b->samples_cap += p->threads[t].leaves.len;
	b->samples = calloc(b->samples_cap + 1, sizeof(*b->samples));
	b->sample_ptrs = calloc(b->samples_cap + 1, sizeof(*b->sample_ptrs));
	b->labels = calloc(3 * b->samples_cap + 1, sizeof(*b->labels));
	b->label_ptrs = calloc(3 * b->samples_cap + 1, sizeof(*b->label_ptrs));
	b->values = calloc(2 * b->samples_cap + 1, sizeof(*b->values));
	if (!b->samples || !b->sample_ptrs || !b->labels || !b->label_ptrs || !b->values)
		return -ENOMEM;
	/* first pass: every stack's length, for one array of location ids */
	for (int pass = 0; pass < 2 && !rc; pass++) {
		size_t at = 0;

		if (pass == 1) {
			b->loc_ids = calloc(b->loc_ids_cap + 1, sizeof(*b->loc_ids));
			if (!b->loc_ids) {
				rc = -ENOMEM;
				break;
			}
		}
		for (uint32_t t = 0; t < p->nthreads && !rc; t++) {
			const struct rep_mthread *th = &p->threads[t];
			uint64_t period = timed ? p->runs[th->run].period : 0;
			int64_t tname = 0;

			rc = rep_export_leaves(th, &pairs, &npairs);
			if (!rc && pass == 1 && npairs && (tname = str_of(b, th->name)) < 0)
				rc = -ENOMEM;
			for (size_t i = 0; i < npairs && !rc; i++) {
				pb_sample *s;
				pb_label *lb;

				rc = rep_export_stack(p, (uint32_t)pairs[2 * i], &path);
				if (rc)
					break;
				if (pass == 0) {
					b->loc_ids_cap += path.n;
					continue;
				}
				if (b->nsamples >= b->samples_cap || at + path.n > b->loc_ids_cap) {
					rc = -EINVAL; /* the maps changed under us: cannot be */
					break;
				}
				s = &b->samples[b->nsamples];
				lb = &b->labels[3 * b->nsamples];
				perftools__profiles__sample__init(s);
				for (size_t k = 0; k < path.n; k++)
					b->loc_ids[at + k] = (uint64_t)path.locs[k] + 1;
				s->location_id = &b->loc_ids[at];
				s->n_location_id = path.n;
				at += path.n;
				s->value = &b->values[2 * b->nsamples];
				s->value[0] = value_of(pairs[2 * i + 1]);
				s->value[1] = value_of(rep_sat_mul(pairs[2 * i + 1], period));
				s->n_value = timed ? 2 : 1;
				for (int j = 0; j < 3; j++) {
					perftools__profiles__label__init(&lb[j]);
					b->label_ptrs[3 * b->nsamples + j] = &lb[j];
				}
				lb[0].key = k_thread;
				lb[0].str = tname;
				lb[1].key = k_tid;
				lb[1].num = th->tid;
				lb[2].key = k_pid;
				lb[2].num = th->pid;
				/* no name: the thread label would be "" */
				s->label = &b->label_ptrs[3 * b->nsamples + (tname ? 0 : 1)];
				s->n_label = tname ? 3 : 2;
				b->sample_ptrs[b->nsamples++] = s;
			}
			free(pairs);
			pairs = NULL;
		}
	}
	free(pairs);
	free(path.locs);
	b->prof.n_sample = b->nsamples;
	b->prof.sample = b->sample_ptrs;
	return rc;
}

static int build(struct pp *b)
{
	const struct rep_profile *p = b->p;
	bool timed = rep_export_timed(p);
	int64_t s_samples = str_add(b, "samples"), s_count = str_add(b, "count");
	int64_t s_cpu = str_add(b, "cpu"), s_ns = str_add(b, "nanoseconds");
	uint64_t duration = 0, start = 0;
	int rc;

	if (s_samples < 0 || s_count < 0 || s_cpu < 0 || s_ns < 0)
		return -ENOMEM;
	for (int i = 0; i < 2; i++) {
		perftools__profiles__value_type__init(&b->types[i]);
		b->type_ptrs[i] = &b->types[i];
	}
	b->types[0].type = s_samples;
	b->types[0].unit = s_count;
	b->types[1].type = s_cpu;
	b->types[1].unit = s_ns;
	b->prof.sample_type = b->type_ptrs;
	b->prof.n_sample_type = timed ? 2 : 1;
	for (uint32_t r = 0; r < p->nruns; r++) {
		duration += rep_export_run_ns(&p->runs[r]);
		if (p->runs[r].wall_ns && (!start || p->runs[r].wall_ns < start))
			start = p->runs[r].wall_ns;
	}
	b->prof.time_nanos = (int64_t)start;
	b->prof.duration_nanos = (int64_t)duration;
	if (timed) {
		perftools__profiles__value_type__init(&b->period_type);
		b->period_type.type = s_cpu;
		b->period_type.unit = s_ns;
		b->prof.period_type = &b->period_type;
		b->prof.period = (int64_t)p->runs[0].period;
		b->prof.default_sample_type = s_cpu;
	}
	rc = build_locations(b);
	if (!rc)
		rc = build_samples(b, timed);
	if (!rc && p->nruns) {
		/* "psup 0.1.0: ./app --n 3" (the first run's command) */
		const struct rep_run *r0 = &p->runs[0];
		char *text = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&text, &len);

		if (!mem)
			return -ENOMEM;
		fputs("psup " PSUP_VERSION, mem);
		for (uint32_t i = 0; r0->has_argv && i < r0->nargv; i++) {
			const char *a = rep_str(p, r0->argv[i]);

			fprintf(mem, "%s%s", i ? " " : ": ", a ? a : "");
		}
		if (fclose(mem) != 0 || !text) {
			free(text);
			return -ENOMEM;
		}
		b->comment = str_add(b, text);
		free(text);
		if (b->comment < 0)
			return -ENOMEM;
		b->prof.comment = &b->comment;
		b->prof.n_comment = 1;
	}
	b->prof.string_table = b->strs;
	b->prof.n_string_table = b->nstrs;
	return rc;
}

/* Writes the len bytes at buf gzipped (RFC 1952, as pprof reads them). */
static int write_gzip(const uint8_t *buf, size_t len, FILE *out)
{
	unsigned char chunk[65536];
	z_stream z;
	int zrc, rc = 0;

	memset(&z, 0, sizeof(z));
	/* 15 + 16: a gzip header and trailer around deflate's window of 2^15 */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	z.next_in = (unsigned char *)buf;
	do {
		size_t give = len > UINT32_MAX ? UINT32_MAX : len;

		z.avail_in = (uInt)give;
		len -= give;
		do {
			z.next_out = chunk;
			z.avail_out = sizeof(chunk);
			zrc = deflate(&z, len ? Z_NO_FLUSH : Z_FINISH);
			if (zrc == Z_STREAM_ERROR) {
				rc = -ENOMEM;
				goto out;
			}
			if (fwrite(chunk, 1, sizeof(chunk) - z.avail_out, out) !=
			    sizeof(chunk) - z.avail_out) {
				rc = -EIO;
				goto out;
			}
		} while (z.avail_out == 0);
	} while (len);
	if (zrc != Z_STREAM_END)
		rc = -EIO;
out:
	deflateEnd(&z);
	return rc;
}

int rep_export_pprof(const struct rep_profile *p, FILE *out)
{
	struct pp b;
	uint8_t *buf = NULL;
	size_t len;
	int rc;

	memset(&b, 0, sizeof(b));
	b.p = p;
	perftools__profiles__profile__init(&b.prof);
	psup_u64map_init(&b.str_ix);
	psup_u64map_init(&b.map_ix);
	psup_u64map_init(&b.fn_ix);
	rc = str_add(&b, "") < 0 ? -ENOMEM : build(&b);
	if (!rc) {
		len = perftools__profiles__profile__get_packed_size(&b.prof);
		buf = malloc(len + 1);
		if (!buf)
			rc = -ENOMEM;
		else if (perftools__profiles__profile__pack(&b.prof, buf) != len)
			rc = -EIO;
		else
			rc = write_gzip(buf, len, out);
	}
	free(buf);
	for (size_t i = 0; i < b.nstrs; i++)
		free(b.strs[i]);
	free(b.strs);
	free(b.maps);
	free(b.map_ptrs);
	free(b.locs);
	free(b.loc_ptrs);
	free(b.lines);
	free(b.line_ptrs);
	free(b.fns);
	free(b.fn_ptrs);
	free(b.samples);
	free(b.sample_ptrs);
	free(b.labels);
	free(b.label_ptrs);
	free(b.loc_ids);
	free(b.values);
	psup_u64map_release(&b.str_ix);
	psup_u64map_release(&b.map_ix);
	psup_u64map_release(&b.fn_ix);
	return rc;
}
