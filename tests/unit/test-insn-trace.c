/*
 * Instruction decoding and the exact witch oracle against real execution:
 * single-steps witch target programs (tests/targets/witch-*.c, from the
 * dynamic loader's first instruction to exit), decodes every instruction
 * with sym_insn_decode() and feeds every access to exp_wexact. Checks that
 * no instruction is undecodable, that every computed access is readable
 * memory, that push/call write at the new rsp and pop/ret/leave read at the
 * old rsp/rbp, that a rep string instruction is stepped one iteration at a
 * time, and that the oracle finds the waste the targets document, per pair
 * of source lines (MARK: comments).
 *
 * Not pure code (ptrace), but it pins the two modules to what the CPU
 * does, which synthetic byte strings cannot. Skipped (77) without ptrace.
 */
#include "symbols/symbols.h"
#include "experiments/experiments.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/hash.h"
#include "tests/unit/tap.h"

struct trace {
	const char *source; /* file name of the target's source, for lines */
	struct exp_wexact *w;
	struct sym_space *sp;
	struct psup_u64map line_of; /* pc -> line + 1 in source, or 1 << 32 for none */
	unsigned long steps, accesses, undecodable, unreadable;
	unsigned long stack_checked, stack_wrong, string_steps, string_wrong;
	int exit_status;
};

static ssize_t peek(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0);
}

/* The context of pc: its line in the target's source, 0 elsewhere. */
static uint64_t trace_ctx(struct trace *t, uint64_t pc)
{
	uint64_t *slot = psup_u64map_find(&t->line_of, pc);
	struct sym_loc loc;
	uint64_t line = 0;
	bool created;

	if (slot)
		return *slot >> 32 ? 0 : *slot - 1;
	if (sym_space_resolve(t->sp, pc, false, &loc) == 0 && loc.nframes &&
	    loc.frames[0].file && loc.frames[0].line) {
		const char *f = loc.frames[0].file;
		size_t fl = strlen(f), sl = strlen(t->source);

		if (fl >= sl && strcmp(f + fl - sl, t->source) == 0)
			line = loc.frames[0].line;
	}
	slot = psup_u64map_upsert(&t->line_of, pc, &created);
	if (slot)
		*slot = line ? line + 1 : 1ULL << 32;
	return line;
}

static void trace_step_check(struct trace *t, const struct sym_insn *in,
			     const struct user_regs_struct *before,
			     const struct user_regs_struct *after)
{
	bool found = false;

	if ((in->flags & SYM_INSN_STACK) && after->rsp < before->rsp) {
		/* push, call, enter, pushf: a write at the new rsp */
		for (unsigned i = 0; i < in->naccess; i++)
			found |= (in->access[i].flags & SYM_ACCESS_WRITE) &&
				 in->access[i].addr == after->rsp;
		t->stack_checked++;
		t->stack_wrong += !found;
	} else if ((in->flags & SYM_INSN_STACK) && after->rsp > before->rsp) {
		/* pop, ret, leave, popf: a read at the old rsp (rbp for leave) */
		for (unsigned i = 0; i < in->naccess; i++)
			found |= in->access[i].flags == SYM_ACCESS_READ &&
				 (in->access[i].addr == before->rsp ||
				  in->access[i].addr == before->rbp);
		t->stack_checked++;
		t->stack_wrong += !found;
	}
	if ((in->flags & SYM_INSN_STRING) && in->naccess) {
		/* A rep string instruction runs one iteration per step (the
		 * accesses decoded are that iteration's): rcx goes down by
		 * one, not more; without rep it stays. */
		t->string_steps++;
		if (before->rcx != after->rcx && before->rcx - 1 != after->rcx)
			t->string_wrong++;
	}
}

/* The run-time address of function name in the executable path of pid
 * (PIE: its first mapping's start + the symbol's value); 0 when unknown. */
static uint64_t symbol_address(pid_t pid, const char *path, const char *name)
{
	uint64_t value = 0, start = 0;
	char maps[64], line[4096], real[4096];
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	Elf *elf;
	FILE *f;
	int fd;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && !value && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;

			if (!gelf_getsym(data, (int)i, &sym))
				continue;
			n = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (n && strcmp(n, name) == 0 && GELF_ST_TYPE(sym.st_info) == STT_FUNC)
				value = sym.st_value;
		}
	}
	if (!elf || !gelf_getehdr(elf, &eh))
		value = 0;
	if (value && eh.e_type == ET_DYN && realpath(path, real)) {
		snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
		f = fopen(maps, "r");
		while (f && fgets(line, sizeof(line), f)) {
			char *nl = strchr(line, '\n');

			if (nl)
				*nl = 0;
			if (strlen(line) > strlen(real) &&
			    strcmp(line + strlen(line) - strlen(real), real) == 0) {
				start = strtoull(line, NULL, 16);
				break;
			}
		}
		if (f)
			fclose(f);
		value = start ? start + value : 0;
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return value;
}

/* Lets the stopped pid run to addr with a breakpoint, and stops it there.
 * Returns 0 or -errno. */
static int run_to(pid_t pid, uint64_t addr)
{
	struct user_regs_struct regs;
	long word, trap;
	int status;

	errno = 0;
	word = ptrace(PTRACE_PEEKTEXT, pid, addr, 0);
	if (errno)
		return -errno;
	trap = (word & ~0xffL) | 0xcc;
	if (ptrace(PTRACE_POKETEXT, pid, addr, trap) < 0 || ptrace(PTRACE_CONT, pid, 0, 0) < 0 ||
	    waitpid(pid, &status, 0) < 0)
		return -errno;
	if (!WIFSTOPPED(status) || WSTOPSIG(status) != SIGTRAP)
		return -EINVAL;
	if (ptrace(PTRACE_POKETEXT, pid, addr, word) < 0 ||
	    ptrace(PTRACE_GETREGS, pid, 0, &regs) < 0)
		return -errno;
	if (regs.rip != addr + 1)
		return -EINVAL;
	regs.rip = addr;
	return ptrace(PTRACE_SETREGS, pid, 0, &regs) < 0 ? -errno : 0;
}

/* Runs path with args single-stepped, from its first instruction, or from
 * function start_at when not NULL (the dynamic loader's and libc's start-up
 * is ~115,000 instructions). Returns 0, or -errno when it could not be
 * traced. */
static int trace_run(struct trace *t, char *const argv[], const char *start_at)
{
	static uint8_t before[SYM_INSN_MAX_ACCESS][EXP_WEXACT_MAX_SIZE];
	static uint8_t after[SYM_INSN_MAX_ACCESS][EXP_WEXACT_MAX_SIZE];
	int status, err;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFSTOPPED(status))
		return WIFEXITED(status) && WEXITSTATUS(status) == 126 ? -EPERM : -ECHILD;
	ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_EXITKILL);
	if (start_at) {
		uint64_t addr = symbol_address(pid, argv[0], start_at);

		if (!addr) {
			fprintf(stderr, "no %s in %s\n", start_at, argv[0]);
			return -ENOENT;
		}
		err = run_to(pid, addr);
		if (err < 0)
			return err;
	}
	err = sym_space_new(pid, &t->sp);
	if (err < 0)
		return err;
	err = exp_wexact_new(EXP_WEXACT_PRECISION, &t->w);
	if (err < 0)
		return err;
	psup_u64map_init(&t->line_of);

	for (;;) {
		struct user_regs_struct regs, regs2;
		bool readable[SYM_INSN_MAX_ACCESS] = { false };
		struct sym_insn in;
		uint8_t code[16];
		ssize_t n;
		uint64_t ctx;

		if (ptrace(PTRACE_GETREGS, pid, 0, &regs) < 0)
			return -errno;
		/* Up to 16 bytes, fewer at the end of the last code page. */
		n = peek(pid, regs.rip, code, sizeof(code));
		if (n <= 0)
			n = peek(pid, regs.rip, code, 4096 - (regs.rip & 4095));
		err = sym_insn_decode(code, n > 0 ? (size_t)n : 0, &regs, &in);
		if (err < 0) {
			t->undecodable++;
			fprintf(stderr, "undecodable at %#llx: %02x %02x %02x %02x\n",
				(unsigned long long)regs.rip, code[0], code[1], code[2], code[3]);
		}
		for (unsigned i = 0; i < in.naccess; i++) {
			unsigned size = in.access[i].size;

			readable[i] = size <= EXP_WEXACT_MAX_SIZE &&
				      peek(pid, in.access[i].addr, before[i], size) == (ssize_t)size;
			if (!readable[i]) {
				t->unreadable++;
				fprintf(stderr, "unreadable %#llx+%u at %#llx: %02x %02x %02x %02x\n",
					(unsigned long long)in.access[i].addr, size,
					(unsigned long long)regs.rip, code[0], code[1], code[2], code[3]);
			}
		}
		ctx = trace_ctx(t, regs.rip);
		if (ptrace(PTRACE_SINGLESTEP, pid, 0, 0) < 0)
			return -errno;
		if (waitpid(pid, &status, 0) < 0)
			return -errno;
		if (WIFEXITED(status) || WIFSIGNALED(status))
			break;
		if (WSTOPSIG(status) != SIGTRAP) {
			fprintf(stderr, "target stopped by signal %d\n", WSTOPSIG(status));
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -EINTR;
		}
		t->steps++;
		if (ptrace(PTRACE_GETREGS, pid, 0, &regs2) == 0)
			trace_step_check(t, &in, &regs, &regs2);
		for (unsigned i = 0; i < in.naccess; i++) {
			struct exp_wexact_access a = {
				.ctx = ctx,
				.addr = in.access[i].addr,
				.size = in.access[i].size,
				.flags = in.access[i].flags | (in.flags & (SYM_INSN_FP32 | SYM_INSN_FP64)),
				.before = before[i],
				.after = after[i],
			};

			if (!readable[i])
				continue;
			if ((a.flags & EXP_WEXACT_WRITE) &&
			    peek(pid, a.addr, after[i], a.size) != (ssize_t)a.size)
				continue;
			t->accesses++;
			CHECK_EQ_INT(exp_wexact_access(t->w, pid, &a), 0);
		}
	}
	t->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	exp_wexact_process_end(t->w, pid);
	return 0;
}

static void trace_release(struct trace *t)
{
	exp_wexact_free(t->w);
	sym_space_free(t->sp);
	psup_u64map_release(&t->line_of);
	memset(t, 0, sizeof(*t));
}

static unsigned marker_line(const char *root, const char *file, const char *name)
{
	char path[4096], line[1024], mark[128];
	unsigned n = 0, found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/tests/targets/%s", root, file);
	snprintf(mark, sizeof(mark), "MARK:%s ", name);
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "cannot open %s\n", path);
		return 0;
	}
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, mark))
			found = n;
	}
	fclose(f);
	return found;
}

static struct exp_wexact_pair pair_of(struct trace *t, enum exp_wexact_kind k, uint64_t watch,
				      uint64_t trap)
{
	struct exp_wexact_pair *v, r = { watch, trap, 0, 0 };
	size_t n;

	CHECK_EQ_INT(exp_wexact_pairs(t->w, k, &v, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (v[i].watch_ctx == watch && v[i].trap_ctx == trap)
			r = v[i];
	free(v);
	return r;
}

static void check_trace_sane(const struct trace *t, const char *what)
{
	printf("# %s: %lu steps, %lu accesses, %lu stack checks, %lu string iterations\n", what,
	       t->steps, t->accesses, t->stack_checked, t->string_steps);
	CHECK_EQ_INT(t->exit_status, 0);
	CHECK(t->steps > 500);
	CHECK_EQ_INT(t->undecodable, 0);
	CHECK_EQ_INT(t->unreadable, 0);
	CHECK(t->stack_checked > 100);
	CHECK_EQ_INT(t->stack_wrong, 0);
	CHECK_EQ_INT(t->string_wrong, 0);
}

/* Listing 3, N = 40, 3 rounds: the four dead pairs, exactly. */
static int test_listing3(const char *build, const char *src)
{
	const unsigned n = 40, r = 3;
	unsigned zero = marker_line(src, "witch-listing3.c", "l3_zero"),
		 p = marker_line(src, "witch-listing3.c", "l3_p"),
		 q = marker_line(src, "witch-listing3.c", "l3_q"),
		 rezero = marker_line(src, "witch-listing3.c", "l3_rezero");
	char path[4096];
	char *argv[] = { path, "40", "3", NULL };
	struct trace t = { .source = "witch-listing3.c" };
	struct exp_wexact_pair pr;
	int err;

	CHECK(zero && p && q && rezero);
	snprintf(path, sizeof(path), "%s/tests/targets/witch-listing3", build);
	err = trace_run(&t, argv, NULL);
	if (err == -EPERM) {
		trace_release(&t);
		return 77;
	}
	CHECK_EQ_INT(err, 0);
	check_trace_sane(&t, "witch-listing3 40 3");
	pr = pair_of(&t, EXP_WEXACT_DEAD_STORE, zero, rezero);
	CHECK_EQ_INT(pr.waste, 4 * n * r);
	CHECK_EQ_INT(pr.use, 0);
	pr = pair_of(&t, EXP_WEXACT_DEAD_STORE, rezero, zero);
	CHECK_EQ_INT(pr.waste, 4 * n * (r - 1));
	pr = pair_of(&t, EXP_WEXACT_DEAD_STORE, p, q);
	CHECK_EQ_INT(pr.waste, 4 * n * r);
	pr = pair_of(&t, EXP_WEXACT_DEAD_STORE, q, p);
	CHECK_EQ_INT(pr.waste, 4 * ((n - 1) * r + r - 1));
	pr = pair_of(&t, EXP_WEXACT_SILENT_STORE, p, q);
	CHECK_EQ_INT(pr.waste, 4 * n * r);
	CHECK_EQ_INT(pr.use, 0);
	trace_release(&t);
	return 0;
}

/* Approximate floats, N = 16, 3 rounds: near[] is silent within 1% (its
 * movsd load and store are seen as doubles), far[] never. */
static void test_fp(const char *build, const char *src)
{
	const unsigned n = 16, r = 3;
	unsigned near = marker_line(src, "witch-fp.c", "fp_near"),
		 far = marker_line(src, "witch-fp.c", "fp_far");
	char path[4096];
	char *argv[] = { path, "16", "3", NULL };
	struct trace t = { .source = "witch-fp.c" };
	struct exp_wexact_pair pr;

	CHECK(near && far);
	snprintf(path, sizeof(path), "%s/tests/targets/witch-fp", build);
	CHECK_EQ_INT(trace_run(&t, argv, "main"), 0);
	check_trace_sane(&t, "witch-fp 16 3, from main");
	pr = pair_of(&t, EXP_WEXACT_SILENT_STORE, near, near);
	CHECK_EQ_INT(pr.waste, 8 * n * (r - 1));
	CHECK_EQ_INT(pr.use, 0);
	pr = pair_of(&t, EXP_WEXACT_SILENT_LOAD, near, near);
	CHECK_EQ_INT(pr.waste, 8 * n * (r - 1));
	CHECK_EQ_INT(pr.use, 0);
	pr = pair_of(&t, EXP_WEXACT_SILENT_STORE, far, far);
	CHECK_EQ_INT(pr.waste, 0);
	CHECK_EQ_INT(pr.use, 8 * n * (r - 1));
	pr = pair_of(&t, EXP_WEXACT_SILENT_LOAD, far, far);
	CHECK_EQ_INT(pr.waste, 0);
	CHECK_EQ_INT(pr.use, 8 * n * (r - 1));
	trace_release(&t);
}

int main(void)
{
	const char *build = getenv("PSUP_BUILD_ROOT"), *src = getenv("PSUP_SOURCE_ROOT");

	if (!build || !src) {
		fprintf(stderr, "test-insn-trace: PSUP_BUILD_ROOT and PSUP_SOURCE_ROOT must be set "
				"(meson test sets them)\n");
		return 1;
	}
	if (test_listing3(build, src) == 77) {
		printf("# skipped: cannot ptrace a child here\n");
		return 77;
	}
	test_fp(build, src);
	return tap_done();
}
