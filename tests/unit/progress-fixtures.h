#ifndef PSUP_TESTS_UNIT_PROGRESS_FIXTURES_H
#define PSUP_TESTS_UNIT_PROGRESS_FIXTURES_H

/*
 * Fixture programs for test-lookup and test-progress, compiled at test time
 * with cc into a temporary directory (as test-symbols-dwarf does), in
 * several variants: -O0 and -O2, PIE and non-PIE, static, C++. Each runs a
 * loop argv[1] times, visiting known lines and functions a known number of
 * times, and stops itself (SIGSTOP) before and after the loop so the test
 * can set up and read counts while its memory is still there. Lines are
 * found by marker comments, never hard-coded.
 *
 * Visits for n iterations (n even):
 *   pf.c @BODY, work()              n
 *   pf.c @HELPER, helper() (inlined into work under an odd i, and into
 *   other() always)                 n/2 + n
 *   pl.c @LIB_BODY, lib_step()      n  (a shared library, or linked in)
 *   psup.h: "iter" n (pf.c) + n (pl.c); "tx" begin n/4 end n/4;
 *   the unnamed PSUP_PROGRESS of pf.c  n
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/fixture.h"

/*
 * On some KVM guests a breakpoint visit now and then raises a debug
 * exception whose DR6 names no cause; the kernel takes it for an int1 and
 * sends SIGTRAP. psup's supervisor drops those (stray_debug_trap), but these
 * children are not traced: each ignores SIGTRAP with a handler (SIG_IGN would
 * not do: a forced signal resets it). The visit is still counted: without RF
 * set the instruction runs again and the breakpoint fires again.
 */
#define PF_TRAP_GUARD \
	"#include <signal.h>\n" \
	"static void pf_trap(int sig) { (void)sig; }\n" \
	"__attribute__((constructor)) static void pf_guard(void) { signal(SIGTRAP, pf_trap); }\n"

static const char pf_lib_src[] =
	"#include \"psup.h\"\n"
	"volatile int lib_sink;\n"
	"__attribute__((noinline)) void lib_step(int i)\n"
	"{\n"
	"	lib_sink += i; /* @LIB_BODY */\n"
	"}\n"
	"void lib_count(int n)\n"
	"{\n"
	"	for (int i = 0; i < n; i++) {\n"
	"		lib_step(i);\n"
	"		PSUP_PROGRESS_NAMED(\"iter\");\n"
	"	}\n"
	"}\n"
	"#ifdef PL_VERSIONED\n"
	"/* as glibc names its functions in its symbol table: name@@VERSION */\n"
	"__attribute__((noinline)) int lib_v_impl(int i)\n"
	"{\n"
	"	return lib_sink + i;\n"
	"}\n"
	"__asm__(\".symver lib_v_impl, lib_versioned@@PL_1\");\n"
	"#endif\n";

static const char pf_src[] = PF_TRAP_GUARD
	"#include <signal.h>\n"
	"#include <stdint.h>\n"
	"#include <stdio.h>\n"
	"#include <stdlib.h>\n"
	"#include \"psup.h\"\n"
	"\n"
	"void lib_count(int n);\n"
	"volatile int sink;\n"
	"\n"
	"static inline __attribute__((always_inline)) void helper(int x)\n"
	"{\n"
	"	sink += x; /* @HELPER */\n"
	"}\n"
	"\n"
	"__attribute__((noinline)) void work(int i)\n"
	"{\n"
	"	/* a line without code: @COMMENT */\n"
	"	sink += i; /* @BODY */\n"
	"	if (i & 1)\n"
	"		helper(i);\n"
	"}\n"
	"\n"
	"__attribute__((noinline)) void other(int i)\n"
	"{\n"
	"	helper(i * 2);\n"
	"}\n"
	"\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	int n = argc > 1 ? atoi(argv[1]) : 10;\n"
	"	printf(\"work %lx\\nother %lx\\nend\\n\", (unsigned long)(uintptr_t)work,\n"
	"	       (unsigned long)(uintptr_t)other);\n"
	"	fflush(stdout);\n"
	"	raise(SIGSTOP);\n"
	"	for (int i = 0; i < n; i++) {\n"
	"		work(i);\n"
	"		other(i);\n"
	"		PSUP_PROGRESS_NAMED(\"iter\");\n"
	"		PSUP_PROGRESS;\n"
	"		if (i % 4 == 0) {\n"
	"			PSUP_BEGIN(\"tx\");\n"
	"			PSUP_END(\"tx\");\n"
	"		}\n"
	"	}\n"
	"	lib_count(n);\n"
	"	raise(SIGSTOP);\n"
	"	return 0;\n"
	"}\n";

/* C++: a point in a template instantiated twice and in a namespace. */
static const char pfx_src[] = PF_TRAP_GUARD
	"#include <csignal>\n"
	"#include <cstdlib>\n"
	"#include \"psup.h\"\n"
	"namespace ns {\n"
	"volatile int sink;\n"
	"template <typename T> __attribute__((noinline)) void step(T x)\n"
	"{\n"
	"	sink += (int)x;\n"
	"	PSUP_PROGRESS_NAMED(\"step\");\n"
	"}\n"
	"__attribute__((noinline)) int scale(int x) { sink += x; return x * 2; } /* @SCALE */\n"
	"}\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	int n = argc > 1 ? atoi(argv[1]) : 10;\n"
	"	raise(SIGSTOP);\n"
	"	for (int i = 0; i < n; i++) {\n"
	"		ns::step<int>(i);\n"
	"		ns::step<double>(i);\n"
	"		ns::scale(i);\n"
	"	}\n"
	"	raise(SIGSTOP);\n"
	"	return 0;\n"
	"}\n";

/* The library loaded with dlopen after psup looked, then unloaded. */
static const char pfd_src[] = PF_TRAP_GUARD
	"#include <dlfcn.h>\n"
	"#include <signal.h>\n"
	"#include <stdlib.h>\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	int n = argc > 1 ? atoi(argv[1]) : 10;\n"
	"	raise(SIGSTOP);\n"
	"	void *h = dlopen(PF_LIB, RTLD_NOW);\n"
	"	if (!h)\n"
	"		return 3;\n"
	"	void (*count)(int) = (void (*)(int))dlsym(h, \"lib_count\");\n"
	"	raise(SIGSTOP);\n"
	"	count(n);\n"
	"	raise(SIGSTOP);\n"
	"	dlclose(h);\n"
	"	raise(SIGSTOP);\n"
	"	return 0;\n"
	"}\n";

/* A child forked after the parent counted n: its counters start as copies. */
static const char pff_src[] = PF_TRAP_GUARD
	"#include <signal.h>\n"
	"#include <stdio.h>\n"
	"#include <stdlib.h>\n"
	"#include <sys/wait.h>\n"
	"#include <unistd.h>\n"
	"#include \"psup.h\"\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	int n = argc > 1 ? atoi(argv[1]) : 10;\n"
	"	raise(SIGSTOP);\n"
	"	for (int i = 0; i < n; i++)\n"
	"		PSUP_PROGRESS_NAMED(\"f\");\n"
	"	pid_t c = fork();\n"
	"	if (c == 0) {\n"
	"		raise(SIGSTOP);\n"
	"		for (int i = 0; i < n; i++)\n"
	"			PSUP_PROGRESS_NAMED(\"f\");\n"
	"		raise(SIGSTOP);\n"
	"		_exit(0);\n"
	"	}\n"
	"	printf(\"child %d\\nend\\n\", (int)c);\n"
	"	fflush(stdout);\n"
	"	waitpid(c, NULL, 0);\n"
	"	raise(SIGSTOP);\n"
	"	return 0;\n"
	"}\n";

/* Coz's coz.h (Debian coz-profiler), counted without libcoz. */
static const char pfc_src[] = PF_TRAP_GUARD
	"#include <coz.h>\n"
	"#include <signal.h>\n"
	"#include <stdlib.h>\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	int n = argc > 1 ? atoi(argv[1]) : 10;\n"
	"	raise(SIGSTOP);\n"
	"	for (int i = 0; i < n; i++) {\n"
	"		COZ_PROGRESS_NAMED(\"x\");\n"
	"		if (i % 4 == 0) {\n"
	"			COZ_BEGIN(\"tx\");\n"
	"			COZ_END(\"tx\");\n"
	"		}\n"
	"		COZ_PROGRESS; /* @COZ_UNNAMED */\n"
	"	}\n"
	"	raise(SIGSTOP);\n"
	"	return 0;\n"
	"}\n";

/* Built only when coz.h is installed. */
static const char *const pfc_variants[][2] = {
	{ "pfc_o0", "cc -O0 -g pfc.c -o pfc_o0" },
	{ "pfc_o2", "cc -O2 -g pfc.c -o pfc_o2" },
	{ "pfc_cxx", "c++ -O2 -g -x c++ pfc.c -o pfc_cxx" },
	{ "pfc_clang", "clang -O0 -g pfc.c -o pfc_clang" }, /* skipped without clang */
};
static bool pf_have_coz, pf_have_clang;

struct pf_variant {
	const char *name;
	const char *build; /* shell command run in the fixture directory */
	bool shared_lib;   /* lib_step is in libpl.so */
	bool cxx;
};

#define PF_INC "-I\"$PSUP_SOURCE_ROOT/include\" "
static const struct pf_variant pf_variants[] = {
	{ "pf_o0", "cc -O0 -g " PF_INC "pf.c -L. -lpl -Wl,-rpath,$PWD -o pf_o0", true, false },
	{ "pf_o2", "cc -O2 -g " PF_INC "pf.c -L. -lpl -Wl,-rpath,$PWD -o pf_o2", true, false },
	{ "pf_intel", "cc -O2 -g -masm=intel " PF_INC "pf.c -L. -lpl -Wl,-rpath,$PWD -o pf_intel", true,
	  false },
	{ "pf_nopie",
	  "cc -O2 -g -fno-pie -no-pie " PF_INC "pf.c -L. -lpl -Wl,-rpath,$PWD -o pf_nopie", true,
	  false },
	{ "pf_static",
	  "cc -O2 -g -static -ffunction-sections -fdata-sections -Wl,--gc-sections " PF_INC
	  "pf.c pl.c -o pf_static",
	  false, false },
	{ "pf_stripped",
	  "cc -O2 -g " PF_INC "pf.c -L. -lpl -Wl,-rpath,$PWD -o pf_stripped.full && "
	  "objcopy --only-keep-debug pf_stripped.full pf_stripped.debug && "
	  "objcopy --strip-all --add-gnu-debuglink=pf_stripped.debug pf_stripped.full pf_stripped",
	  true, false },
	{ "pfx", "c++ -O2 -g " PF_INC "pfx.cc -o pfx", false, true },
};

static char pf_dir[64];

static bool pf_have_cxx;

/* Builds every variant into a new temporary directory; exits 77 without a
 * compiler, 2 when a build fails. */
static inline void pf_build(void)
{
	if (system("cc --version >/dev/null 2>&1")) {
		printf("skipped: no cc\n");
		exit(77);
	}
	if (!getenv("PSUP_SOURCE_ROOT")) {
		fprintf(stderr, "PSUP_SOURCE_ROOT is not set (run through meson test)\n");
		exit(2);
	}
	snprintf(pf_dir, sizeof(pf_dir), "/tmp/psup-pf-XXXXXX");
	if (!mkdtemp(pf_dir)) {
		perror("mkdtemp");
		exit(2);
	}
	fx_write(pf_dir, "pf.c", pf_src);
	fx_write(pf_dir, "pl.c", pf_lib_src);
	fx_write(pf_dir, "pfx.cc", pfx_src);
	fx_write(pf_dir, "pfc.c", pfc_src);
	fx_write(pf_dir, "pfd.c", pfd_src);
	fx_write(pf_dir, "pff.c", pff_src);
	pf_have_cxx = system("c++ --version >/dev/null 2>&1") == 0;
	pf_have_coz = pf_have_cxx && system("test -e /usr/include/coz.h") == 0;
	pf_have_clang = system("clang --version >/dev/null 2>&1") == 0;
	for (size_t i = 0; pf_have_coz && i < sizeof(pfc_variants) / sizeof(pfc_variants[0]); i++)
		if ((pf_have_clang || strncmp(pfc_variants[i][1], "clang", 5)) &&
		    fx_run("cd %s && %s", pf_dir, pfc_variants[i][1]))
			exit(2);
	fx_write(pf_dir, "pl.map", "PL_1 { global: *; };\n");
	if (fx_run("cd %s && cc -O2 -g -shared -fPIC -DPL_VERSIONED -Wl,--version-script=pl.map " PF_INC
		   "pl.c -o libpl.so",
		   pf_dir))
		exit(2);
	if (fx_run("cd %s && cc -O2 -g " PF_INC "pff.c -o pff", pf_dir))
		exit(2);
	if (fx_run("cd %s && cc -O2 -g -DPF_LIB=\\\"$PWD/libpl.so\\\" pfd.c -ldl -o pfd", pf_dir))
		exit(2);
	for (size_t i = 0; i < sizeof(pf_variants) / sizeof(pf_variants[0]); i++) {
		if (pf_variants[i].cxx && !pf_have_cxx)
			continue;
		if (fx_run("cd %s && %s", pf_dir, pf_variants[i].build))
			exit(2);
	}
}

static inline void pf_cleanup(void)
{
	if (pf_dir[0])
		fx_run("rm -rf %s", pf_dir);
}

#endif
