/*
 * Symbols against real binaries: small C fixtures compiled at test time with
 * cc (-O2 -g, -O0 -g, a shared library, a dlopen'ed library, an object
 * without DWARF, an always_inline helper, stripped binaries whose DWARF is
 * in a .gnu_debuglink file checked by build-id or by CRC, one of them
 * compressed and read through psup's debug cache, one found in debuginfod's
 * client cache). Each fixture runs
 * as a ptraced child that stops itself inside fx_a -> fx_b -> fx_c; the test
 * resolves the addresses the child printed, and unwinds the stopped thread
 * both with ptrace and from a register + stack snapshot.
 *
 * Lines are found by scanning the fixture sources for marker comments, so
 * nothing here is hard-coded. Skips (77) only when cc is missing.
 */
#include "symbols/symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "symbols/symbols-internal.h"
#include "tests/unit/fixture.h"
#include "tests/unit/tap.h"

static const char lib_src[] =
	"int lib_func(int x) /* @LIB_BEGIN */\n"
	"{\n"
	"	int r = x * 5;\n"
	"	return r + 3;\n"
	"} /* @LIB_END */\n"
	"/* The real address even in a non-PIE executable, where &lib_func\n"
	" * is the executable's canonical PLT entry. */\n"
	"extern int lib_func_local(int) __attribute__((alias(\"lib_func\"), visibility(\"hidden\")));\n"
	"void *lib_func_addr(void) { return (void *)lib_func_local; }\n";

static const char dl_src[] =
	"volatile int dl_sink;\n"
	"int dl_func(int x) /* @DL_BEGIN */\n"
	"{\n"
	"	dl_sink = x;\n"
	"	return x * 9 + dl_sink;\n"
	"} /* @DL_END */\n";

static const char nodebug_src[] =
	"int nodebug_func(int x)\n"
	"{\n"
	"	return x * 11 + 2;\n"
	"}\n";

static const char fx_src[] =
	"#include <dlfcn.h>\n"
	"#include <signal.h>\n"
	"#include <stdint.h>\n"
	"#include <stdio.h>\n"
	"\n"
	"int lib_func(int x);\n"
	"int nodebug_func(int x);\n"
	"void *lib_func_addr(void);\n"
	"volatile int sink;\n"
	"void *inl_ra;\n"
	"\n"
	"__attribute__((noinline, noipa)) int record_ra(int x)\n"
	"{\n"
	"	inl_ra = __builtin_return_address(0);\n"
	"	return x + sink;\n"
	"}\n"
	"\n"
	"static inline __attribute__((always_inline)) int helper(int x)\n"
	"{\n"
	"	int r = x * 3;\n"
	"	r += record_ra(x); /* @HELPER_CALL */\n"
	"	return r;\n"
	"}\n"
	"\n"
	"__attribute__((noinline, noipa)) int uses_helper(int x) /* @UH_BEGIN */\n"
	"{\n"
	"	int v = helper(x) + 1; /* @UH_CALL */\n"
	"	sink = v;\n"
	"	return v;\n"
	"} /* @UH_END */\n"
	"\n"
	"__attribute__((noinline, noipa)) int fx_c(int x) /* @C_BEGIN */\n"
	"{\n"
	"	raise(SIGSTOP); /* @C_RAISE */\n"
	"	sink = x;\n"
	"	return x + 1;\n"
	"} /* @C_END */\n"
	"\n"
	"__attribute__((noinline, noipa)) int fx_b(int x) /* @B_BEGIN */\n"
	"{\n"
	"	int r = fx_c(x + 1); /* @B_CALL */\n"
	"	sink = r;\n"
	"	return r + 1;\n"
	"} /* @B_END */\n"
	"\n"
	"__attribute__((noinline, noipa)) int fx_a(int x) /* @A_BEGIN */\n"
	"{\n"
	"	int r = fx_b(x + 1); /* @A_CALL */\n"
	"	sink = r;\n"
	"	return r + 1;\n"
	"} /* @A_END */\n"
	"\n"
	"#define P(name, p) printf(\"%s %lx\\n\", name, (unsigned long)(uintptr_t)(p))\n"
	"int main(int argc, char **argv) /* @MAIN_BEGIN */\n"
	"{\n"
	"	raise(SIGSTOP);\n"
	"	void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW) : NULL;\n"
	"	int (*dlf)(int) = h ? (int (*)(int))dlsym(h, \"dl_func\") : NULL;\n"
	"	void *vh = dlopen(\"linux-vdso.so.1\", RTLD_LAZY | RTLD_NOLOAD);\n"
	"	uses_helper(argc);\n"
	"	P(\"fx_a\", fx_a);\n"
	"	P(\"fx_b\", fx_b);\n"
	"	P(\"fx_c\", fx_c);\n"
	"	P(\"main\", main);\n"
	"	P(\"uses_helper\", uses_helper);\n"
	"	P(\"lib_func\", lib_func_addr());\n"
	"	P(\"nodebug_func\", nodebug_func);\n"
	"	P(\"dl_func\", dlf);\n"
	"	P(\"vdso\", vh ? dlsym(vh, \"__vdso_clock_gettime\") : NULL);\n"
	"	P(\"inl_ra\", inl_ra);\n"
	"	printf(\"end\\n\");\n"
	"	fflush(stdout);\n"
	"	int r = fx_a(argc); /* @MAIN_CALL */\n"
	"	sink = r + (dlf ? dlf(1) : 0) + lib_func(2) + nodebug_func(3);\n"
	"	return 0;\n"
	"} /* @MAIN_END */\n";

/* Demangling through DWARF linkage names; same protocol as fx.c. */
static const char fxx_src[] =
	"#include <csignal>\n"
	"#include <cstdint>\n"
	"#include <cstdio>\n"
	"namespace ns {\n"
	"volatile int sink;\n"
	"__attribute__((noinline)) int scale(int x) /* @SCALE_BEGIN */\n"
	"{\n"
	"	sink = x;\n"
	"	return x * 2 + sink;\n"
	"} /* @SCALE_END */\n"
	"__attribute__((noinline)) double scale(double x) { return x * 3; }\n"
	"}\n"
	"int main()\n"
	"{\n"
	"	raise(SIGSTOP);\n"
	"	int (*f)(int) = ns::scale;\n"
	"	printf(\"cxx %lx\\nend\\n\", (unsigned long)(uintptr_t)f);\n"
	"	fflush(stdout);\n"
	"	raise(SIGSTOP);\n"
	"	return f(1) + (int)ns::scale(2.0);\n"
	"}\n";

static char dir[64];
static int verbose;

/* ---- the fixture variants ---- */

struct variant {
	const char *name; /* binary in dir */
	bool stripped;    /* DWARF only in the debuglink file */
	bool build_id;
	bool bad_debug;  /* the debuglink file does not match: must be refused */
	bool deleted_dl; /* unlink the dlopen'ed library before resolving */
	bool cxx;        /* the C++ fixture (built only when c++ exists) */
};

static bool have_cxx;

static const struct variant variants[] = {
	{ .name = "fx_o2", .build_id = true, .deleted_dl = true },
	{ .name = "fx_o0", .build_id = true },
	{ .name = "fx_nopie", .build_id = true },
	{ .name = "fx_s", .stripped = true, .build_id = true },
	{ .name = "fx_crc", .stripped = true },
	{ .name = "fx_bad", .stripped = true, .bad_debug = true },
	{ .name = "fx_z", .stripped = true, .build_id = true },
	{ .name = "fxx", .build_id = true, .cxx = true },
};

static int build_fixtures(void)
{
	const char *ld = "-L. -lfx -Wl,-rpath,$PWD -ldl";

	fx_write(dir, "lib.c", lib_src);
	fx_write(dir, "dl.c", dl_src);
	fx_write(dir, "nodebug.c", nodebug_src);
	fx_write(dir, "fx.c", fx_src);
	fx_write(dir, "fxx.cc", fxx_src);
	have_cxx = system("c++ --version >/dev/null 2>&1") == 0;
	if (have_cxx && fx_run("cd %s && c++ -O2 -g fxx.cc -o fxx", dir))
		return -1;
	if (fx_run("cd %s && cc -O2 -g -shared -fPIC lib.c -o libfx.so && "
		   "cc -O2 -g -shared -fPIC dl.c -o libfxdl.so && "
		   "cc -O2 -c nodebug.c -o nodebug.o",
		   dir))
		return -1;
	if (fx_run("cd %s && cc -O2 -g fx.c nodebug.o %s -o fx_o2 && "
		   "cc -O0 -g fx.c nodebug.o %s -o fx_o0 && "
		   "cc -O2 -g -fno-pie -no-pie fx.c nodebug.o %s -o fx_nopie",
		   dir, ld, ld, ld))
		return -1;
	/* Stripped of everything (no .symtab either): names can only come
	 * from the debug file. */
	if (fx_run("cd %s && cc -O2 -g fx.c nodebug.o %s -o fx_s.full && "
		   "objcopy --only-keep-debug fx_s.full fx_s.debug && "
		   "objcopy --strip-all --add-gnu-debuglink=fx_s.debug fx_s.full fx_s",
		   dir, ld))
		return -1;
	/* Its debug sections zlib-compressed, as Debian's -dbgsym files. */
	if (fx_run("cd %s && cc -O2 -g fx.c nodebug.o %s -o fx_z.full && "
		   "objcopy --only-keep-debug --compress-debug-sections=zlib fx_z.full fx_z.debug && "
		   "objcopy --strip-all --add-gnu-debuglink=fx_z.debug fx_z.full fx_z",
		   dir, ld))
		return -1;
	CHECK(fx_run("readelf -SW %s/fx_z.debug | grep debug_info | grep -q ' C '", dir) == 0);
	/* No debuglink, a build-id of its own: its debug file is only in
	 * debuginfod's client cache (test_debuginfod_cache). */
	if (fx_run("cd %s && cc -O2 -g -Wl,--build-id=0x7073757064630000000000000000000000000001 fx.c nodebug.o "
		   "%s -o fx_dc.full && objcopy --only-keep-debug fx_dc.full fx_dc.debug && "
		   "objcopy --strip-all fx_dc.full fx_dc",
		   dir, ld))
		return -1;
	/* No build-id: the debuglink's CRC is the only check. */
	if (fx_run("cd %s && cc -O2 -g -Wl,--build-id=none fx.c nodebug.o %s -o fx_crc.full && "
		   "objcopy --only-keep-debug fx_crc.full fx_crc.debug && "
		   "objcopy --strip-all --add-gnu-debuglink=fx_crc.debug fx_crc.full fx_crc",
		   dir, ld))
		return -1;
	/* The link is made to a good file, which is then replaced by the
	 * debug info of a different build (-O0): the CRC no longer matches. */
	if (fx_run("cd %s && cc -O2 -g -Wl,--build-id=none fx.c nodebug.o %s -o fx_bad.full && "
		   "objcopy --only-keep-debug fx_bad.full fx_bad.debug && "
		   "objcopy --strip-all --add-gnu-debuglink=fx_bad.debug fx_bad.full fx_bad && "
		   "cc -O0 -g -Wl,--build-id=none fx.c nodebug.o %s -o fx_bad.other && "
		   "objcopy --only-keep-debug fx_bad.other fx_bad.debug",
		   dir, ld, ld))
		return -1;
	return 0;
}

/* ---- the child ---- */

struct child {
	pid_t pid;
	int out; /* its stdout */
	char dlpath[160];
	/* addresses it printed */
	uint64_t fx_a, fx_b, fx_c, main, uses_helper, lib_func, nodebug_func, dl_func, vdso,
		inl_ra, cxx;
};

static int wait_stop(pid_t pid, int sig)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
		printf("skipped: ptrace is not permitted here\n");
		fx_run("rm -rf %s", dir);
		exit(77);
	}
	if (!WIFSTOPPED(st) || WSTOPSIG(st) != sig) {
		fprintf(stderr, "child %d: status 0x%x, expected stop by %d\n", pid, st, sig);
		return -1;
	}
	return 0;
}

static int child_start(const struct variant *v, struct child *c)
{
	char path[128];
	int fds[2];

	memset(c, 0, sizeof(*c));
	snprintf(path, sizeof(path), "%s/%s", dir, v->name);
	snprintf(c->dlpath, sizeof(c->dlpath), "%s/dl-%s.so", dir, v->name);
	if (fx_run("cp %s/libfxdl.so %s", dir, c->dlpath) || pipe(fds))
		return -1;
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (c->pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		/* Never outlive the test, even stopped. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL))
			_exit(77);
		execl(path, path, c->dlpath, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	c->out = fds[0];
	if (wait_stop(c->pid, SIGTRAP)) /* the exec */
		return -1;
	if (ptrace(PTRACE_CONT, c->pid, NULL, NULL))
		return -1;
	return wait_stop(c->pid, SIGSTOP); /* first stop, in main before dlopen */
}

/* Lets the child print its addresses and stop again inside fx_c. */
static int child_continue(struct child *c)
{
	char buf[4096], *line, *save;

	if (ptrace(PTRACE_CONT, c->pid, NULL, NULL) ||
	    fx_read_until(c->out, buf, sizeof(buf), "end\n") < 0)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[32];
		unsigned long val;

		if (sscanf(line, "%31s %lx", name, &val) != 2)
			continue;
/* clang-format off */
#define F(n) if (!strcmp(name, #n)) c->n = val;
		F(fx_a) F(fx_b) F(fx_c) F(main) F(uses_helper) F(lib_func) F(nodebug_func)
		F(dl_func) F(vdso) F(inl_ra) F(cxx)
#undef F
		/* clang-format on */
	}
	return wait_stop(c->pid, SIGSTOP);
}

static void child_kill(struct child *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
	}
	if (c->out > 0)
		close(c->out);
	unlink(c->dlpath);
}

/* ---- checks ---- */

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = s ? strlen(s) : 0, b = strlen(suffix);

	return s && a >= b && !strcmp(s + a - b, suffix);
}

static bool fn_is(const struct sym_loc *l, unsigned i, const char *name)
{
	return i < l->nframes && l->frames[i].function && !strcmp(l->frames[i].function, name);
}

/* A function's entry: its name, its file, a line within its body. */
static void check_function(struct sym_space *sp, uint64_t pc, const char *name,
			   const char *file, const char *src, const char *begin,
			   const char *end, const char *variant)
{
	struct sym_loc l;
	unsigned lo = fx_marker(src, begin), hi = fx_marker(src, end);

	CHECK(pc != 0);
	CHECK_EQ_INT(sym_space_resolve(sp, pc, false, &l), 0);
	CHECK_EQ_INT(l.nframes, 1);
	CHECK(fn_is(&l, 0, name));
	CHECK(l.nframes && ends_with(l.frames[0].file, file));
	CHECK(l.nframes && l.frames[0].line >= lo && l.frames[0].line <= hi);
	if (!fn_is(&l, 0, name) || !l.nframes || l.frames[0].line < lo || l.frames[0].line > hi)
		fprintf(stderr, "%s: %s at %#llx -> %s %s:%u (want %s:%u-%u)\n", variant, name,
			(unsigned long long)pc, l.nframes ? l.frames[0].function : "-",
			l.nframes ? l.frames[0].file : "-", l.nframes ? l.frames[0].line : 0,
			file, lo, hi);
}

static void read_build_id(const char *bin, char *out, size_t size)
{
	char cmd[256];
	FILE *p;

	out[0] = '\0';
	snprintf(cmd, sizeof(cmd), "readelf -n %s/%s 2>/dev/null | sed -n 's/.*Build ID: *//p'",
		 dir, bin);
	p = popen(cmd, "r");
	if (!p)
		return;
	if (fgets(out, (int)size, p))
		out[strcspn(out, "\n")] = '\0';
	pclose(p);
}

static uint64_t nm_address(const struct variant *v, const char *sym)
{
	char cmd[256], line[128];
	unsigned long long a = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm %s/%s%s | sed -n 's/ T %s$//p'", dir, v->name,
		 v->stripped ? ".full" : "", sym);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	if (fgets(line, sizeof(line), p))
		a = strtoull(line, NULL, 16);
	pclose(p);
	return a;
}

static void check_unwound(struct sym_space *sp, const uint64_t *pcs, int n, const char *how,
			  const char *variant)
{
	struct sym_loc l;
	int k = -1;

	CHECK(n >= 5);
	for (int i = 0; i < n; i++) {
		CHECK_EQ_INT(sym_space_resolve(sp, pcs[i], i > 0, &l), 0);
		if (verbose)
			fprintf(stderr, "  %s #%d %#llx %s %s:%u\n", how, i,
				(unsigned long long)pcs[i], l.nframes ? l.frames[0].function : "?",
				l.nframes ? l.frames[0].file : "?", l.nframes ? l.frames[0].line : 0);
		if (k < 0 && fn_is(&l, 0, "fx_c")) {
			k = i;
			CHECK_EQ_INT(l.frames[0].line, fx_marker(fx_src, "C_RAISE"));
		} else if (k >= 0 && i == k + 1) {
			CHECK(fn_is(&l, 0, "fx_b"));
			CHECK_EQ_INT(l.frames[0].line, fx_marker(fx_src, "B_CALL"));
		} else if (k >= 0 && i == k + 2) {
			CHECK(fn_is(&l, 0, "fx_a"));
			CHECK_EQ_INT(l.frames[0].line, fx_marker(fx_src, "A_CALL"));
		} else if (k >= 0 && i == k + 3) {
			CHECK(fn_is(&l, 0, "main"));
			CHECK_EQ_INT(l.frames[0].line, fx_marker(fx_src, "MAIN_CALL"));
		}
	}
	CHECK(k >= 1); /* raise() and friends in libc come first */
	CHECK(k >= 0 && k + 3 < n);
	if (k < 0 || k + 3 >= n)
		fprintf(stderr, "%s: %s unwind: fx_c at %d of %d frames\n", variant, how, k, n);
}

static void sample_from_thread(pid_t pid, struct smp_sample *s, uint8_t *stack, size_t max)
{
	struct user_regs_struct r;
	struct iovec local, remote;
	ssize_t got;

	memset(s, 0, sizeof(*s));
	CHECK_EQ_INT(ptrace(PTRACE_GETREGS, pid, NULL, &r), 0);
	s->pid = s->tid = pid;
	s->ip = r.rip;
	s->user = true;
	s->have_regs = true;
	s->regs[SMP_REG_AX] = r.rax;
	s->regs[SMP_REG_BX] = r.rbx;
	s->regs[SMP_REG_CX] = r.rcx;
	s->regs[SMP_REG_DX] = r.rdx;
	s->regs[SMP_REG_SI] = r.rsi;
	s->regs[SMP_REG_DI] = r.rdi;
	s->regs[SMP_REG_BP] = r.rbp;
	s->regs[SMP_REG_SP] = r.rsp;
	s->regs[SMP_REG_IP] = r.rip;
	s->regs[SMP_REG_FLAGS] = r.eflags;
	s->regs[SMP_REG_R8] = r.r8;
	s->regs[SMP_REG_R9] = r.r9;
	s->regs[SMP_REG_R10] = r.r10;
	s->regs[SMP_REG_R11] = r.r11;
	s->regs[SMP_REG_R12] = r.r12;
	s->regs[SMP_REG_R13] = r.r13;
	s->regs[SMP_REG_R14] = r.r14;
	s->regs[SMP_REG_R15] = r.r15;
	/* As perf would: up to max bytes from sp, fewer at the stack's top. */
	for (size_t want = max; want >= 512; want /= 2) {
		local = (struct iovec){ stack, want };
		remote = (struct iovec){ (void *)(uintptr_t)r.rsp, want };
		got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
		if (got > 0) {
			s->stack_size = (size_t)got;
			break;
		}
	}
	s->stack = stack;
}

static void fuzz_unwind(struct sym_space *sp, const struct smp_sample *real, const struct child *c)
{
	static uint8_t stack[4096];
	uint64_t state = 0x2545f4914f6cdd1dULL, pcs[64];
	const uint64_t code[] = { real->ip, c->fx_a + 5, c->fx_c + 9, c->main + 20, c->lib_func,
				  c->vdso };
	int bad = 0;

	for (int it = 0; it < 20000; it++) {
		struct smp_sample s = *real;
		uint64_t *w = (uint64_t *)stack;
		int n;

		for (size_t i = 0; i < sizeof(stack) / 8; i++) {
			uint64_t r = psup_rand_next(&state);

			switch (r & 3) {
			case 0: w[i] = code[(r >> 8) % PSUP_ARRAY_SIZE(code)] + ((r >> 20) & 31); break;
			case 1: w[i] = real->regs[SMP_REG_SP] + ((r >> 8) & 4095); break;
			default: w[i] = psup_rand_next(&state); break;
			}
		}
		s.stack = stack;
		s.stack_size = (size_t)(psup_rand_next(&state) % (sizeof(stack) + 1));
		if (it & 1)
			s.regs[SMP_REG_IP] = s.ip = code[psup_rand_next(&state) % PSUP_ARRAY_SIZE(code)];
		if ((it & 7) == 3)
			s.regs[SMP_REG_IP] = s.ip = psup_rand_next(&state) | 1;
		if ((it & 3) == 2)
			s.regs[SMP_REG_SP] = psup_rand_next(&state);
		s.regs[SMP_REG_BP] = (it & 4) ? real->regs[SMP_REG_SP] + (psup_rand_next(&state) & 4095)
					      : psup_rand_next(&state);
		n = sym_space_unwind_sample(sp, &s, pcs, PSUP_ARRAY_SIZE(pcs));
		if (n < 1 || n > (int)PSUP_ARRAY_SIZE(pcs) || pcs[0] != s.ip)
			bad++;
		for (int i = 0; i < n; i++) {
			struct sym_loc l;

			if (sym_space_resolve(sp, pcs[i], i > 0, &l))
				bad++;
		}
	}
	CHECK_EQ_INT(bad, 0);
}

static void test_variant(const struct variant *v)
{
	struct sym_space *sp = NULL;
	struct child c;
	struct sym_loc l;
	char bid[128];
	static uint8_t stack[8192];
	struct smp_sample s;
	uint64_t pcs_t[64], pcs_s[64];
	int nt, ns;

	if (v->cxx && !have_cxx) {
		fprintf(stderr, "# %s: skipped, no c++ compiler\n", v->name);
		return;
	}
	fprintf(stderr, "# %s\n", v->name);
	if (child_start(v, &c)) {
		CHECK(!"fixture start");
		child_kill(&c);
		return;
	}
	/* The space is made before the child dlopens: its library is found by
	 * the refresh on a miss. */
	CHECK_EQ_INT(sym_space_new(c.pid, &sp), 0);
	if (!sp || child_continue(&c)) {
		CHECK(!"fixture run");
		child_kill(&c);
		sym_space_free(sp);
		return;
	}

	if (v->stripped) /* so names and lines can only come from the debug file */
		CHECK(fx_run("! readelf -S %s/%s | grep -q -e debug_info -e '\\.symtab'", dir,
			     v->name) == 0);
	if (v->cxx) {
		char *probe = sym_demangle("_ZN2ns5scaleEi");

		/* Without libiberty the DWARF name is all there is. */
		if (!probe)
			fprintf(stderr, "# %s: demangling not built in\n", v->name);
		check_function(sp, c.cxx, probe ? "ns::scale(int)" : "scale", "/fxx.cc", fxx_src,
			       "SCALE_BEGIN", "SCALE_END", v->name);
		free(probe);
		goto out;
	}
	if (v->bad_debug) {
		/* A debug file whose CRC does not match is not used; with
		 * .symtab stripped, fx_a has no name at all. */
		CHECK_EQ_INT(sym_space_resolve(sp, c.fx_a, false, &l), 0);
		CHECK(!fn_is(&l, 0, "fx_a") || l.frames[0].line == 0);
		CHECK(l.nframes == 0 || !l.frames[0].file);
		goto out;
	}

	check_function(sp, c.fx_a, "fx_a", "/fx.c", fx_src, "A_BEGIN", "A_END", v->name);
	check_function(sp, c.fx_b, "fx_b", "/fx.c", fx_src, "B_BEGIN", "B_END", v->name);
	check_function(sp, c.fx_c, "fx_c", "/fx.c", fx_src, "C_BEGIN", "C_END", v->name);
	check_function(sp, c.main, "main", "/fx.c", fx_src, "MAIN_BEGIN", "MAIN_END", v->name);
	check_function(sp, c.uses_helper, "uses_helper", "/fx.c", fx_src, "UH_BEGIN", "UH_END",
		       v->name);
	check_function(sp, c.lib_func, "lib_func", "/lib.c", lib_src, "LIB_BEGIN", "LIB_END",
		       v->name);

	/* The executable's identity. */
	CHECK_EQ_INT(sym_space_resolve(sp, c.fx_a, false, &l), 0);
	CHECK(ends_with(l.image, v->name));
	read_build_id(v->name, bid, sizeof(bid));
	if (v->build_id) {
		CHECK(bid[0] != '\0');
		CHECK(l.build_id && !strcmp(l.build_id, bid));
	} else {
		CHECK(bid[0] == '\0');
		CHECK(l.build_id == NULL);
	}
	/* offset is the ELF virtual address, as nm shows it. */
	CHECK(l.offset == nm_address(v, "fx_a"));

	/* No DWARF: the ELF symbol, no line. */
	CHECK_EQ_INT(sym_space_resolve(sp, c.nodebug_func, false, &l), 0);
	CHECK_EQ_INT(l.nframes, 1);
	CHECK(fn_is(&l, 0, "nodebug_func"));
	CHECK(l.nframes && l.frames[0].file == NULL && l.frames[0].line == 0);

	/* Inlined: the helper at its own line, then its caller at the call. */
	CHECK_EQ_INT(sym_space_resolve(sp, c.inl_ra, true, &l), 0);
	CHECK_EQ_INT(l.nframes, 2);
	CHECK(fn_is(&l, 0, "helper"));
	CHECK(l.nframes >= 1 && l.frames[0].line == fx_marker(fx_src, "HELPER_CALL"));
	CHECK(l.nframes >= 1 && ends_with(l.frames[0].file, "/fx.c"));
	CHECK(fn_is(&l, 1, "uses_helper"));
	CHECK(l.nframes >= 2 && l.frames[1].line == fx_marker(fx_src, "UH_CALL"));
	CHECK(l.nframes >= 2 && ends_with(l.frames[1].file, "/fx.c"));

	/* The vdso, read from the child's memory. */
	CHECK(c.vdso != 0);
	CHECK_EQ_INT(sym_space_resolve(sp, c.vdso, false, &l), 0);
	CHECK(!strcmp(l.image, "[vdso]"));
	CHECK(l.nframes >= 1 && l.frames[0].function && strstr(l.frames[0].function, "clock_gettime"));

	/* dlopen'ed after the space was made (and maybe deleted since). */
	if (v->deleted_dl)
		CHECK_EQ_INT(unlink(c.dlpath), 0);
	check_function(sp, c.dl_func, "dl_func", "/dl.c", dl_src, "DL_BEGIN", "DL_END", v->name);
	CHECK_EQ_INT(sym_space_resolve(sp, c.dl_func, false, &l), 0);
	CHECK(!strcmp(l.image, c.dlpath));

	/* Unwinding: ptrace, then a snapshot of the same stop. */
	nt = sym_space_unwind_thread(sp, c.pid, pcs_t, PSUP_ARRAY_SIZE(pcs_t));
	check_unwound(sp, pcs_t, nt, "ptrace", v->name);
	sample_from_thread(c.pid, &s, stack, sizeof(stack));
	CHECK(s.stack_size >= 512);
	ns = sym_space_unwind_sample(sp, &s, pcs_s, PSUP_ARRAY_SIZE(pcs_s));
	check_unwound(sp, pcs_s, ns, "snapshot", v->name);
	for (int i = 0; i < nt && i < ns && i < 8; i++)
		CHECK(pcs_t[i] == pcs_s[i]);
	CHECK(!sym_space_unwind_was_cut(sp));

	/* A snapshot ending inside the frames (a frame larger than it): the
	 * words above are read from the stopped child, the same chain. When
	 * the process cannot be read, the stack is cut short and says so. */
	{
		struct smp_sample d = s;
		uint64_t pcs_d[64];
		int nd;
		pid_t pid = sp->mem_pid;

		d.stack_size = 64;
		nd = sym_space_unwind_sample(sp, &d, pcs_d, PSUP_ARRAY_SIZE(pcs_d));
		CHECK_EQ_INT(nd, ns);
		for (int i = 0; i < nd && i < ns; i++)
			CHECK(pcs_d[i] == pcs_s[i]);
		CHECK(!sym_space_unwind_was_cut(sp));
		sp->mem_pid = 0;
		nd = sym_space_unwind_sample(sp, &d, pcs_d, PSUP_ARRAY_SIZE(pcs_d));
		sp->mem_pid = pid;
		CHECK(nd >= 1 && nd < ns);
		CHECK(sym_space_unwind_was_cut(sp));
	}

	/* Degenerate samples. */
	{
		struct smp_sample d = s;

		CHECK_EQ_INT(sym_space_unwind_sample(sp, &s, pcs_s, 0), 0);
		CHECK_EQ_INT(sym_space_unwind_sample(sp, &s, pcs_s, 1), 1);
		d.have_regs = false;
		CHECK_EQ_INT(sym_space_unwind_sample(sp, &d, pcs_s, 8), 1);
		d = s;
		d.stack_size = 0;
		CHECK(sym_space_unwind_sample(sp, &d, pcs_s, 8) >= 1);
		d.ip = 0;
		CHECK_EQ_INT(sym_space_unwind_sample(sp, &d, pcs_s, 8), 0);
	}

	if (v == &variants[0]) {
		/* The cost of the hot path, reported, never asserted. */
		const char *env = getenv("PSUP_UNWIND_ITERS");
		int iters = env ? atoi(env) : 5000, frames = 0;
		struct rusage ru0, ru1;
		uint64_t t0;

		if (iters < 1)
			iters = 1;
		getrusage(RUSAGE_SELF, &ru0);
		t0 = psup_now_ns();
		for (int i = 0; i < iters; i++)
			frames += sym_space_unwind_sample(sp, &s, pcs_s, PSUP_ARRAY_SIZE(pcs_s));
		getrusage(RUSAGE_SELF, &ru1);
		fprintf(stderr, "# unwind_sample: %.2f us per unwind of %d frames (%d runs, "
				"max rss +%ld KiB)\n",
			(double)(psup_now_ns() - t0) / 1000.0 / iters,
			frames / iters, iters, ru1.ru_maxrss - ru0.ru_maxrss);
		fuzz_unwind(sp, &s, &c);
	}
out:
	child_kill(&c);
	sym_space_free(sp);
}

static long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/*
 * The debug cache (PSUP_DEBUG_CACHE, set by main): fx_z's compressed debug
 * file was inflated into it by its first test_variant(), by build-id. Once
 * the image is dropped, the next load opens the copy (a hit, nothing
 * written); a damaged copy is not used but replaced. Names and lines come
 * out right each time (test_variant's checks).
 */
static void test_debug_cache(void)
{
	const struct variant *z = NULL;
	struct sym_cache_stats a, b;
	char bid[128], copy[512], debug[256];

	for (size_t i = 0; i < PSUP_ARRAY_SIZE(variants); i++)
		if (!strcmp(variants[i].name, "fx_z"))
			z = &variants[i];
	read_build_id("fx_z", bid, sizeof(bid));
	CHECK(z && strlen(bid) > 2);
	if (!z || strlen(bid) <= 2)
		return;
	fprintf(stderr, "# debug cache\n");
	snprintf(copy, sizeof(copy), "%s/cache/%.2s/%s.debug", dir, bid, bid + 2);
	snprintf(debug, sizeof(debug), "%s/fx_z.debug", dir);
	/* Inflated: larger than the compressed file, nothing compressed. */
	CHECK(file_size(copy) > file_size(debug));
	CHECK(fx_run("! readelf -SW %s 2>/dev/null | grep debug_info | grep -q ' C '", copy) == 0);

	sym_cache_trim();
	sym_cache_stats(&a);
	test_variant(z);
	sym_cache_trim();
	sym_cache_stats(&b);
	/* (libc's copy may be among the hits: its debug file is compressed
	 * too where libc6-dbg is installed) */
	CHECK(b.debug_hits > a.debug_hits);
	CHECK(b.debug_written == a.debug_written);

	CHECK(truncate(copy, 4096) == 0);
	test_variant(z);
	sym_cache_trim();
	sym_cache_stats(&a);
	CHECK(a.debug_written == b.debug_written + 1);
	CHECK(file_size(copy) > file_size(debug));
}

/*
 * debuginfod's client cache (DEBUGINFOD_CACHE_PATH): fx_dc, stripped and
 * without a debuglink, whose debug file is only in ID/debuginfo there, as
 * debuginfod-find leaves it; names and lines come out right (test_variant's
 * checks). With PSUP_TEST_NO_DEBUGINFOD_CACHE=1 the variable is not set and
 * the checks must fail (how the test itself is checked).
 */
static void test_debuginfod_cache(void)
{
	static const struct variant dc = { .name = "fx_dc", .stripped = true, .build_id = true };
	char bid[128], cache[256];
	int before = tap_failures;

	fprintf(stderr, "# debuginfod's cache\n");
	snprintf(cache, sizeof(cache), "%s/dcache", dir);
	read_build_id("fx_dc", bid, sizeof(bid));
	CHECK(strlen(bid) > 2);
	if (strlen(bid) <= 2 || fx_run("cd %s && mkdir -p dcache/%s && mv fx_dc.debug dcache/%s/debuginfo", dir, bid, bid)) {
		CHECK(!"debuginfod cache fixture");
		return;
	}
	if (!getenv("PSUP_TEST_NO_DEBUGINFOD_CACHE"))
		setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
	test_variant(&dc);
	unsetenv("DEBUGINFOD_CACHE_PATH");
	if (tap_failures > before)
		fprintf(stderr, "# fx_dc, its debug file in debuginfod's cache only: %d checks failed\n",
			tap_failures - before);
}

/* Whether a file whose name holds what is mapped in this process. */
static bool mapped_here(const char *what)
{
	char line[4096];
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, what) != NULL;
	if (f)
		fclose(f);
	return found;
}

int main(int argc, char **argv)
{
	verbose = argc > 1 && !strcmp(argv[1], "-v");
	if (system("cc --version >/dev/null 2>&1") != 0) {
		printf("skipped: no cc to build the fixtures\n");
		return 77;
	}
	snprintf(dir, sizeof(dir), "/tmp/psup-symtest-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 2;
	}
	CHECK_EQ_INT(build_fixtures(), 0);
	{
		char cache[128];

		snprintf(cache, sizeof(cache), "%s/cache", dir);
		setenv("PSUP_DEBUG_CACHE", cache, 1);
	}
	/* No debuginfod server: a file without a debug file (the stripped
	 * variants, libc without libc6-dbg) must not load libdebuginfod, which
	 * libdwfl's full search does only to learn that none is set. */
	unsetenv("DEBUGINFOD_URLS");
	if (!tap_failures) {
		for (size_t i = 0; i < PSUP_ARRAY_SIZE(variants); i++)
			test_variant(&variants[i]);
		test_debug_cache();
		test_debuginfod_cache();
		CHECK(!mapped_here("libdebuginfod"));
	}
	if (!getenv("PSUP_KEEP_FIXTURES"))
		fx_run("rm -rf %s", dir);
	else
		fprintf(stderr, "fixtures kept in %s\n", dir);
	return tap_done();
}
