/*
 * Static paths through a window of code, for witch: how far the next
 * access is (to step a sampled thread to it) and how many instructions run
 * between two accesses of a kind (a timer sample picks an access in
 * proportion to that gap; witch weighs the sample by its inverse).
 */
#include "symbols/symbols.h"

#include <string.h>
#include <sys/user.h>

/* A direct branch at c: its target's offset from the next instruction and
 * whether it is conditional. Returns false for anything else, with *exit
 * set when the path cannot be followed past it (returns, indirect jumps and
 * calls, loop/jrcxz, syscall). */
static bool direct_branch(const uint8_t *c, unsigned len, int64_t *rel, bool *cond, bool *exit)
{
	unsigned i = 0;

	*exit = false;
	while (i < len && (c[i] == 0x66 || c[i] == 0x67 || c[i] == 0xf2 || c[i] == 0xf3 ||
			   c[i] == 0x2e || c[i] == 0x3e || c[i] == 0x26 || c[i] == 0x36 ||
			   c[i] == 0x64 || c[i] == 0x65 || (c[i] >= 0x40 && c[i] <= 0x4f)))
		i++;
	if (i >= len)
		return false;
	if (c[i] >= 0x70 && c[i] <= 0x7f && i + 1 < len) {
		*rel = (int8_t)c[i + 1];
		*cond = true;
		return true;
	}
	if (c[i] == 0xeb && i + 1 < len) {
		*rel = (int8_t)c[i + 1];
		*cond = false;
		return true;
	}
	if (c[i] == 0xe9 && i + 4 < len) {
		int32_t r;
		memcpy(&r, c + i + 1, 4);
		*rel = r;
		*cond = false;
		return true;
	}
	if (c[i] == 0x0f && i + 5 < len && c[i + 1] >= 0x80 && c[i + 1] <= 0x8f) {
		int32_t r;
		memcpy(&r, c + i + 2, 4);
		*rel = r;
		*cond = true;
		return true;
	}
	if (c[i] == 0xc3 || c[i] == 0xc2 || (c[i] >= 0xe0 && c[i] <= 0xe3) ||
	    (c[i] == 0x0f && i + 1 < len && c[i + 1] == 0x05) ||
	    (c[i] == 0xff && i + 1 < len && ((c[i + 1] >> 3) & 7) >= 2 && ((c[i + 1] >> 3) & 7) <= 5))
		*exit = true;
	return false;
}

struct walk {
	const struct sym_code *code;
	const struct user_regs_struct *regs;
	unsigned mask;
	/* breadth-first queue: code offset, distance, queue index of the parent */
	size_t off[SYM_FLOW_LOOK];
	unsigned dist[SYM_FLOW_LOOK];
	int parent[SYM_FLOW_LOOK];
	bool access[SYM_FLOW_LOOK];
	unsigned n;
};

static bool decode_at(const struct walk *w, size_t off, struct sym_insn *insn)
{
	struct user_regs_struct r = *w->regs;

	r.rip = w->code->base + off;
	return off < w->code->len &&
	       sym_insn_decode(w->code->bytes + off, w->code->len - off, &r, insn) == 0;
}

static bool is_access(const struct walk *w, const struct sym_insn *insn)
{
	for (unsigned i = 0; i < insn->naccess; i++)
		if (insn->access[i].flags & w->mask)
			return true;
	return false;
}

static bool queued(const struct walk *w, size_t off)
{
	for (unsigned i = 0; i < w->n; i++)
		if (w->off[i] == off)
			return true;
	return false;
}

/*
 * Breadth first from `start` (queued at distance 0). Stops at the first
 * access after start (returns its queue index) or when a path comes back
 * to start, with `target` or when start is an access itself (returns the
 * index of the instruction that leads there, with *back set). -1 when
 * neither is within look.
 */
static int walk(struct walk *w, size_t start, unsigned look, bool target, bool *back)
{
	*back = false;
	w->n = 0;
	if (look > SYM_FLOW_LOOK)
		look = SYM_FLOW_LOOK;
	w->off[0] = start;
	w->dist[0] = 0;
	w->parent[0] = -1;
	w->access[0] = false;
	w->n = 1;
	for (unsigned head = 0; head < w->n; head++) {
		struct sym_insn insn;
		size_t next[2], off = w->off[head];
		unsigned nn = 0;
		int64_t rel;
		bool cond, exit;

		if (!decode_at(w, off, &insn))
			continue;
		w->access[head] = is_access(w, &insn);
		if (head > 0 && w->access[head] && !target)
			return (int)head;
		if (direct_branch(w->code->bytes + off, insn.length, &rel, &cond, &exit)) {
			int64_t to = (int64_t)(off + insn.length) + rel;
			if (to >= 0 && (size_t)to < w->code->len)
				next[nn++] = (size_t)to;
			if (cond && rel >= 0)
				next[nn++] = off + insn.length;
		} else if (!exit) {
			next[nn++] = off + insn.length;
		}
		for (unsigned i = 0; i < nn; i++) {
			if (next[i] == start && (target || w->access[0])) {
				*back = true;
				return (int)head;
			}
			if (w->n >= look || queued(w, next[i]))
				continue;
			w->off[w->n] = next[i];
			w->dist[w->n] = w->dist[head] + 1;
			w->parent[w->n] = (int)head;
			w->access[w->n] = false;
			w->n++;
		}
	}
	return -1;
}

static bool rep_string(const struct walk *w, size_t off)
{
	struct sym_insn insn;
	const uint8_t *c = w->code->bytes + off;

	if (!decode_at(w, off, &insn) || !(insn.flags & SYM_INSN_STRING))
		return false;
	for (unsigned i = 0; i < insn.length; i++) {
		if (c[i] == 0xf3 || c[i] == 0xf2)
			return true;
		if (!(c[i] == 0x66 || c[i] == 0x67 || c[i] == 0x2e || c[i] == 0x3e || c[i] == 0x26 ||
		      c[i] == 0x36 || c[i] == 0x64 || c[i] == 0x65 || (c[i] >= 0x40 && c[i] <= 0x4f)))
			return false;
	}
	return false;
}

static bool offset_of(const struct sym_code *code, uint64_t at, size_t *off)
{
	if (!code || !code->bytes || at < code->base || at - code->base >= code->len)
		return false;
	*off = (size_t)(at - code->base);
	return true;
}

/* walk() from the instruction at `at`; -1 when it is outside the code. */
static int walk_at(struct walk *w, uint64_t at, unsigned look, bool target, bool *back)
{
	size_t off;

	*back = false;
	if (!offset_of(w->code, at, &off))
		return -1;
	if (target && rep_string(w, off)) {
		/* rep movs/stos/...: every iteration an access at the same ip */
		*back = true;
		return -2;
	}
	return walk(w, off, look, target, back);
}

unsigned sym_flow_distance(const struct sym_code *code, uint64_t at, unsigned mask, unsigned look,
			   const struct user_regs_struct *regs)
{
	struct walk w = { .code = code, .regs = regs, .mask = mask };
	bool back;
	int i = walk_at(&w, at, look, false, &back);

	if (i < 0)
		return 0;
	return back ? w.dist[i] + 1 : w.dist[i];
}

unsigned sym_flow_path(const struct sym_code *code, uint64_t at, unsigned mask, unsigned look,
		       const struct user_regs_struct *regs, uint64_t *path, unsigned max)
{
	struct walk w = { .code = code, .regs = regs, .mask = mask };
	bool back;
	int i = walk_at(&w, at, look, false, &back);

	if (i <= 0 || back || w.dist[i] + 1 > max)
		return 0;
	for (int j = i; j >= 0; j = w.parent[j])
		path[w.dist[j]] = code->base + w.off[j];
	return w.dist[i] + 1;
}

unsigned sym_flow_gap(const struct sym_code *code, uint64_t at, unsigned mask, unsigned look,
		      const struct user_regs_struct *regs, bool *cyclic)
{
	struct walk w = { .code = code, .regs = regs, .mask = mask };
	bool back;
	int i = walk_at(&w, at, look, true, &back);

	*cyclic = back;
	if (i == -2)
		return 1;
	if (i >= 0 && back) {
		/* The loop: at, ..., w.off[i], at. The previous access is the
		 * last one on it before at comes round again. */
		unsigned len = w.dist[i] + 1;
		for (int j = i; j > 0; j = w.parent[j])
			if (w.access[j])
				return len - w.dist[j];
		return len;
	}
	*cyclic = false;
	return sym_flow_distance(code, at, mask, look, regs);
}

bool sym_flow_overlaps(uint64_t a, unsigned alen, uint64_t b, unsigned blen)
{
	return a < b + blen && b < a + alen;
}

/* A call instruction (its implicit access is the pushed return address). */
bool sym_flow_is_call(const uint8_t *c, unsigned len)
{
	unsigned i = 0;

	while (i < len && ((c[i] >= 0x40 && c[i] <= 0x4f) || c[i] == 0x66 || c[i] == 0x67 ||
			   c[i] == 0xf2 || c[i] == 0xf3 || c[i] == 0x2e || c[i] == 0x3e))
		i++;
	if (i >= len)
		return false;
	if (c[i] == 0xe8)
		return true;
	return c[i] == 0xff && i + 1 < len && ((c[i + 1] >> 3) & 7) == 2;
}

/*
 * The access a few instructions ahead of rip, when its address can be
 * computed already: the shortest way there (sym_flow_path) makes no call,
 * and the registers the access is addressed with are known when it comes
 * (sym_insn_advance runs the adds, leas and movs of the way on a copy of
 * the registers). *insn gets it decoded with those, *pc its address. Saves
 * the steps to it (a stop each); when the program goes another way, the
 * watch armed for it starts at whatever touches those bytes first
 * (builtin/record-witch.c, on_first_trap()).
 */
bool sym_flow_predict(const struct sym_code *code, const uint64_t *path, unsigned n,
		      const struct user_regs_struct *regs, uint64_t *pc, struct sym_insn *insn)
{
	struct user_regs_struct r = *regs;
	struct sym_insn in;
	struct sym_access seen[SYM_FLOW_LOOK * SYM_INSN_MAX_ACCESS];
	unsigned nseen = 0;
	uint32_t unknown = 0;

	if (n < 2)
		return false;
	for (unsigned i = 0; i + 1 < n; i++) {
		size_t off = path[i] - code->base;
		r.rip = path[i];
		if (sym_flow_is_call(code->bytes + off, (unsigned)(code->len - off < 16 ? code->len - off : 16)) ||
		    sym_insn_decode(code->bytes + off, code->len - off, &r, &in) < 0)
			return false;
		/* what the way touches, with the registers of its turn (an
		 * access through an unknown register may be anywhere) */
		for (unsigned j = 0; j < in.naccess; j++) {
			if (in.gpr_address & unknown)
				return false;
			if (nseen < sizeof(seen) / sizeof(seen[0]))
				seen[nseen++] = in.access[j];
		}
		if (sym_insn_advance(code->bytes + off, code->len - off, &r, &unknown) < 0)
			return false;
	}
	size_t off = path[n - 1] - code->base;
	r.rip = path[n - 1];
	if (sym_insn_decode(code->bytes + off, code->len - off, &r, &in) < 0 ||
	    (in.gpr_address & unknown) || (in.flags & SYM_INSN_STRING))
		return false;
	/* an access on the way to the same bytes would be the first trap */
	for (unsigned i = 0; i < nseen; i++)
		for (unsigned j = 0; j < in.naccess; j++)
			if (sym_flow_overlaps(seen[i].addr, seen[i].size, in.access[j].addr, in.access[j].size))
				return false;
	*insn = in;
	*pc = path[n - 1];
	return true;
}
