/*
 * The analyses' records into the record file: experiments/ produces them
 * through a struct exp_sink and never calls report/ (data flows one way,
 * experiments -> report); this fills one in with report/'s writer.
 */
#include "builtin/record.h"

#include "report/report.h"
#include "symbols/symbols.h"

static int sink_loc(void *ctx, uint64_t id, pid_t pid, uint64_t addr, const struct sym_loc *sl)
{
	struct rep_frame frames[SYM_MAX_FRAMES];
	struct rep_loc l = {
		.id = id,
		.pid = pid,
		.addr = addr,
		.image = sl ? sl->image : "[kernel]",
		.build_id = sl ? sl->build_id : NULL,
		.offset = sl ? sl->offset : 0,
		.nframes = sl ? sl->nframes : 0,
		.frames = frames,
	};
	struct rep_loc_symbols ls = { sl ? sl->near : NULL, sl ? sl->symbols : NULL };

	for (unsigned i = 0; i < l.nframes; i++) {
		frames[i].function = sl->frames[i].function;
		frames[i].file = sl->frames[i].file;
		frames[i].line = sl->frames[i].line;
	}
	return rep_write_loc_ext(ctx, &l, &ls);
}

static int sink_node(void *ctx, uint64_t id, uint64_t parent, uint64_t loc)
{
	return rep_write_node(ctx, id, parent, loc);
}

static int sink_samples(void *ctx, pid_t tid, const uint64_t *pairs, size_t npairs)
{
	return rep_write_samples(ctx, tid, pairs, npairs);
}

static int sink_idleness(void *ctx, pid_t tid, const uint64_t *pairs, size_t npairs)
{
	return rep_write_idleness(ctx, tid, pairs, npairs);
}

static int sink_lock_waits(void *ctx, pid_t pid, uint64_t addr, uint64_t node, bool traced,
			   const char *reason, uint64_t waits, uint64_t wait_ns)
{
	return rep_write_lock_waits(ctx, pid, addr, node, traced, reason, waits, wait_ns);
}

static int sink_witch_pairs(void *ctx, const char *kind, const uint64_t *vals, size_t n)
{
	return rep_write_witch_pairs(ctx, kind, vals, n);
}

static int sink_witch_stats(void *ctx, const char *name, const uint64_t *vals, size_t n)
{
	return rep_write_witch_stats(ctx, name, vals, n);
}

static int sink_experiment(void *ctx, const struct exp_experiment *e)
{
	return rep_write_experiment(ctx, e);
}

static int sink_line_samples(void *ctx, const struct exp_line_samples *ls)
{
	return rep_write_line_samples(ctx, ls);
}

static int sink_progress_totals(void *ctx, uint64_t time, unsigned n, const struct exp_point_delta *totals)
{
	return rep_write_progress_totals(ctx, time, n, totals);
}

void rec_sink_init(struct exp_sink *s, struct rep_writer *w)
{
	if (!w) {
		*s = (struct exp_sink){ 0 }; /* records dropped */
		return;
	}
	*s = (struct exp_sink){
		.ctx = w,
		.loc = sink_loc,
		.node = sink_node,
		.samples = sink_samples,
		.idleness = sink_idleness,
		.lock_waits = sink_lock_waits,
		.witch_pairs = sink_witch_pairs,
		.witch_stats = sink_witch_stats,
		.experiment = sink_experiment,
		.line_samples = sink_line_samples,
		.progress_totals = sink_progress_totals,
	};
}
