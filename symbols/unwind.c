#include "symbols/symbols.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include <libunwind-ptrace.h>
#include <libunwind.h>

#include "symbols/symbols-internal.h"

/*
 * Remote unwinding with libunwind over a sample's snapshot: registers from
 * the sample, stack bytes from the snapshot, code and unwind tables from the
 * image files (never the live process: the sample is history, the process
 * has moved on). The approach of perf's unwind-libunwind-local.c.
 */

/* Exported by libunwind-x86_64 but not declared in its headers. */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip,
					      unw_dyn_info_t *di, unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);
#define dwarf_search_unwind_table UNW_OBJ(dwarf_search_unwind_table)

/* Lives on the stack of one sym_space_unwind_sample() call. */
struct unwind_ctx {
	struct sym_space *sp;
	const struct smp_sample *s;
	uint64_t stack_lo, stack_hi;
	/* The image last read from (most reads are the current frame's
	 * unwind table and FDEs). */
	struct sym_image *img;
	uint64_t bias;
	/* Words above the snapshot, read from the live stack (a frame larger
	 * than the snapshot): one block at a time. live_from is the number of
	 * pcs found before the first live read (0: none yet); cut is set when
	 * a stack word could not be had at all. */
	uint64_t live_lo;
	size_t live_len;
	uint8_t live[512];
	unsigned n, live_from;
	bool cut;
};

static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			  int need_unwind_info, void *arg)
{
	struct unwind_ctx *ctx = arg;
	const struct sym_load *l;
	struct sym_mapping *m;
	struct sym_image *img;
	unw_dyn_info_t di;

	m = sym_space_find(ctx->sp, ip, true);
	if (!m)
		return -UNW_ENOINFO;
	img = sym_space_mapping_image(ctx->sp, m);
	if (!img || !img->have_eh_hdr)
		return -UNW_ENOINFO;
	l = sym_image_load_at(img, ip - m->bias);
	if (!l)
		return -UNW_ENOINFO;
	ctx->img = img;
	ctx->bias = m->bias;
	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = l->vaddr + m->bias;
	di.end_ip = di.start_ip + l->memsz;
	di.u.rti.segbase = img->eh_hdr_vaddr + m->bias;
	di.u.rti.table_data = img->eh_table_vaddr + m->bias;
	di.u.rti.table_len = img->eh_fde_count * 8 / sizeof(unw_word_t);
	return dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
}

static void put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	(void)as;
	(void)pi;
	(void)arg;
}

static int get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dilap, void *arg)
{
	(void)as;
	(void)dilap;
	(void)arg;
	return -UNW_ENOINFO;
}

static bool read_image(struct unwind_ctx *ctx, struct sym_mapping *m, unw_word_t addr,
		       unw_word_t *valp)
{
	struct sym_image *img = sym_space_mapping_image(ctx->sp, m);

	if (!img || !sym_image_read(img, addr - m->bias, valp, sizeof(*valp)))
		return false;
	ctx->img = img;
	ctx->bias = m->bias;
	return true;
}

/* How far above the snapshot a frame may reach (the default stack limit):
 * past it a "stack" address is garbage from a bad unwind. */
#define LIVE_STACK_MAX (8ULL << 20)

/*
 * A stack word above the snapshot, read from the process now. The frames
 * above the sampled one are its callers': unchanged while the sampled frame
 * is live, and the chain found through them is kept only when it ends at
 * the root (sym_space_unwind_sample()), so a stack that has moved on since
 * the sample cannot pass as one.
 */
static bool read_live(struct unwind_ctx *ctx, uint64_t addr, unw_word_t *valp)
{
	if (addr < ctx->stack_hi || addr - ctx->stack_hi >= LIVE_STACK_MAX || ctx->sp->mem_pid <= 0)
		return false;
	if (!ctx->live_len || addr < ctx->live_lo || addr + sizeof(*valp) > ctx->live_lo + ctx->live_len) {
		struct iovec local = { ctx->live, sizeof(ctx->live) };
		struct iovec remote;
		ssize_t got;

		ctx->live_lo = addr & ~(uint64_t)(sizeof(ctx->live) - 1);
		remote.iov_base = (void *)(uintptr_t)ctx->live_lo;
		remote.iov_len = sizeof(ctx->live);
		got = process_vm_readv(ctx->sp->mem_pid, &local, 1, &remote, 1, 0);
		ctx->live_len = got > 0 ? (size_t)got : 0;
		if (addr + sizeof(*valp) > ctx->live_lo + ctx->live_len) {
			ctx->live_len = 0;
			return false;
		}
	}
	memcpy(valp, ctx->live + (addr - ctx->live_lo), sizeof(*valp));
	if (!ctx->live_from)
		ctx->live_from = ctx->n;
	return true;
}

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *valp, int write,
		      void *arg)
{
	struct unwind_ctx *ctx = arg;
	struct sym_space *sp = ctx->sp;
	ssize_t i;

	(void)as;
	if (write)
		return -UNW_EINVAL;
	if (addr >= ctx->stack_lo && addr < ctx->stack_hi &&
	    ctx->stack_hi - addr >= sizeof(*valp)) {
		memcpy(valp, ctx->s->stack + (addr - ctx->stack_lo), sizeof(*valp));
		return 0;
	}
	if (ctx->img && sym_image_read(ctx->img, addr - ctx->bias, valp, sizeof(*valp)))
		return 0;
	/* Only executable mappings are kept; an image's read-only segments
	 * (.eh_frame, .rodata) sit just before or after its text. */
	i = sym_space_floor(sp, addr);
	if (i >= 0 && read_image(ctx, &sp->maps[i], addr, valp))
		return 0;
	if (i + 1 < (ssize_t)sp->nmaps && read_image(ctx, &sp->maps[i + 1], addr, valp))
		return 0;
	if (addr >= ctx->stack_lo) {
		if (read_live(ctx, addr, valp))
			return 0;
		/* The stack above the snapshot is out of reach. */
		if (addr >= ctx->stack_hi && addr - ctx->stack_hi < LIVE_STACK_MAX)
			ctx->cut = true;
	}
	return -UNW_EINVAL;
}

static int access_reg(unw_addr_space_t as, unw_regnum_t regnum, unw_word_t *valp,
		      int write, void *arg)
{
	struct unwind_ctx *ctx = arg;
	int r;

	(void)as;
	if (write)
		return -UNW_EINVAL;
	switch (regnum) {
	case UNW_X86_64_RAX: r = SMP_REG_AX; break;
	case UNW_X86_64_RDX: r = SMP_REG_DX; break;
	case UNW_X86_64_RCX: r = SMP_REG_CX; break;
	case UNW_X86_64_RBX: r = SMP_REG_BX; break;
	case UNW_X86_64_RSI: r = SMP_REG_SI; break;
	case UNW_X86_64_RDI: r = SMP_REG_DI; break;
	case UNW_X86_64_RBP: r = SMP_REG_BP; break;
	case UNW_X86_64_RSP: r = SMP_REG_SP; break;
	case UNW_X86_64_R8: r = SMP_REG_R8; break;
	case UNW_X86_64_R9: r = SMP_REG_R9; break;
	case UNW_X86_64_R10: r = SMP_REG_R10; break;
	case UNW_X86_64_R11: r = SMP_REG_R11; break;
	case UNW_X86_64_R12: r = SMP_REG_R12; break;
	case UNW_X86_64_R13: r = SMP_REG_R13; break;
	case UNW_X86_64_R14: r = SMP_REG_R14; break;
	case UNW_X86_64_R15: r = SMP_REG_R15; break;
	case UNW_X86_64_RIP: r = SMP_REG_IP; break;
	default:
		return -UNW_EBADREG;
	}
	*valp = ctx->s->regs[r];
	return 0;
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t regnum, unw_fpreg_t *fpvalp,
			int write, void *arg)
{
	(void)as;
	(void)regnum;
	(void)fpvalp;
	(void)write;
	(void)arg;
	return -UNW_EINVAL;
}

static int resume(unw_addr_space_t as, unw_cursor_t *cp, void *arg)
{
	(void)as;
	(void)cp;
	(void)arg;
	return -UNW_EINVAL;
}

static int get_proc_name(unw_addr_space_t as, unw_word_t addr, char *bufp, size_t buf_len,
			 unw_word_t *offp, void *arg)
{
	(void)as;
	(void)addr;
	(void)bufp;
	(void)buf_len;
	(void)offp;
	(void)arg;
	return -UNW_ENOINFO;
}

static unw_accessors_t snapshot_accessors = {
	.find_proc_info = find_proc_info,
	.put_unwind_info = put_unwind_info,
	.get_dyn_info_list_addr = get_dyn_info_list_addr,
	.access_mem = access_mem,
	.access_reg = access_reg,
	.access_fpreg = access_fpreg,
	.resume = resume,
	.get_proc_name = get_proc_name,
};

/* Steps the cursor, storing return addresses after pcs[0]. Stops at max,
 * at the end of the chain, on an error, at a zero pc, or when a step makes
 * no progress (same pc and sp), so garbage cannot loop. With ctx (a
 * snapshot unwind), ctx->n follows n and ctx->cut is set when the chain
 * ended on an error rather than at its root or at max. */
static unsigned unwind_steps(unw_cursor_t *c, uint64_t *pcs, unsigned n, unsigned max,
			     uint64_t sp0, struct unwind_ctx *ctx)
{
	uint64_t prev_ip = pcs[0], prev_sp = sp0;

	while (n < max) {
		unw_word_t ip, spv;
		int step;

		if (ctx)
			ctx->n = n;
		step = unw_step(c);
		if (step < 0 && ctx)
			ctx->cut = true;
		if (step <= 0)
			break;
		if (unw_get_reg(c, UNW_REG_IP, &ip) < 0 || unw_get_reg(c, UNW_REG_SP, &spv) < 0)
			break;
		if (!ip || (ip == prev_ip && spv == prev_sp))
			break;
		pcs[n++] = ip;
		prev_ip = ip;
		prev_sp = spv;
	}
	return n;
}

/*
 * The first step found no unwind info for the sampled instruction: code
 * without CFI, like glibc's __clone3 around its syscall ("in the child the
 * unwind info will be wrong") where every new thread's creator stops. Treat
 * it as a frameless leaf, as gdb and perf do: the return address is at the
 * stack pointer. Accepted only when that value points into mapped code, then
 * unwound on from there. Returns the number of pcs.
 */
static unsigned frameless_leaf(struct sym_space *sp, const struct smp_sample *s,
			       uint64_t *pcs, unsigned max)
{
	struct smp_sample caller = *s;
	uint64_t ra;
	int n;

	memcpy(&ra, s->stack, sizeof(ra));
	if (!ra || !sym_space_find(sp, ra, false))
		return 1;
	caller.ip = ra;
	caller.regs[SMP_REG_IP] = ra;
	caller.regs[SMP_REG_SP] += 8;
	caller.stack += 8;
	caller.stack_size -= 8;
	n = sym_space_unwind_sample(sp, &caller, pcs + 1, max - 1);
	return n > 0 ? 1 + (unsigned)n : 1;
}

int sym_space_unwind_sample(struct sym_space *sp, const struct smp_sample *s,
			    uint64_t *pcs, unsigned max)
{
	struct unwind_ctx ctx;
	unw_cursor_t c;

	sp->unwind_cut = false;
	if (!max || !s->ip)
		return 0;
	pcs[0] = s->ip;
	if (!s->have_regs || !s->stack || !s->stack_size || max == 1)
		return 1;
	if (!sp->unw_as) {
		sp->unw_as = unw_create_addr_space(&snapshot_accessors, 0);
		if (!sp->unw_as)
			return 1;
		unw_set_caching_policy(sp->unw_as, UNW_CACHE_GLOBAL);
		sp->unw_generation = sp->generation;
	}
	/* libunwind caches register rules by ip: stale once code moved. */
	if (sp->unw_generation != sp->generation) {
		unw_flush_cache(sp->unw_as, 0, 0);
		sp->unw_generation = sp->generation;
	}
	ctx.sp = sp;
	ctx.s = s;
	ctx.stack_lo = s->regs[SMP_REG_SP];
	ctx.stack_hi = ctx.stack_lo + s->stack_size;
	if (ctx.stack_hi < ctx.stack_lo) /* wraps: trust nothing */
		ctx.stack_hi = ctx.stack_lo;
	ctx.img = NULL;
	ctx.bias = 0;
	ctx.live_lo = 0;
	ctx.live_len = 0;
	ctx.n = 1;
	ctx.live_from = 0;
	ctx.cut = false;
	/* libunwind starts from regs[IP]; pcs[0] is the sample's ip, which is
	 * the same address. */
	if (unw_init_remote(&c, sp->unw_as, &ctx) < 0)
		return 1;
	unsigned n = unwind_steps(&c, pcs, 1, max, s->regs[SMP_REG_SP], &ctx);
	/* Frames found through the live stack stand only when the chain
	 * reached its root through them: else the stack had moved on. */
	if (ctx.live_from && ctx.cut && n > ctx.live_from)
		n = ctx.live_from;
	if (n == 1 && s->stack_size >= 16) {
		n = frameless_leaf(sp, s, pcs, max);
		if (n > 1)
			return (int)n;
	}
	sp->unwind_cut = ctx.cut;
	return (int)n;
}

int sym_space_unwind_thread(struct sym_space *sp, pid_t tid, uint64_t *pcs, unsigned max)
{
	unw_word_t ip, spv;
	unw_cursor_t c;
	void *upt;
	int n = 0;

	if (!max)
		return 0;
	if (!sp->upt_as) {
		sp->upt_as = unw_create_addr_space(&_UPT_accessors, 0);
		if (!sp->upt_as)
			return -ENOMEM;
		/* Not a hot path; no cache to keep coherent across exec. */
		unw_set_caching_policy(sp->upt_as, UNW_CACHE_NONE);
	}
	upt = _UPT_create(tid);
	if (!upt)
		return -ENOMEM;
	if (unw_init_remote(&c, sp->upt_as, upt) < 0 || unw_get_reg(&c, UNW_REG_IP, &ip) < 0 ||
	    unw_get_reg(&c, UNW_REG_SP, &spv) < 0) {
		n = -ESRCH;
		goto out;
	}
	if (!ip)
		goto out;
	pcs[0] = ip;
	n = (int)unwind_steps(&c, pcs, 1, max, spv, NULL);
out:
	_UPT_destroy(upt);
	return n;
}

void sym_unwind_release(struct sym_space *sp)
{
	if (sp->unw_as)
		unw_destroy_addr_space(sp->unw_as);
	if (sp->upt_as)
		unw_destroy_addr_space(sp->upt_as);
	sp->unw_as = NULL;
	sp->upt_as = NULL;
}

bool sym_space_unwind_was_cut(const struct sym_space *sp)
{
	return sp->unwind_cut;
}
