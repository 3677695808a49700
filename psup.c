/* psup: the command table. */
#include "builtin/builtin.h"

#include <elfutils/libdwfl.h>
#include <perfmon/pfmlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <Zydis/Zydis.h>

#include "common/log.h"
#include "sampler/sampler.h"

struct cmd_struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static const struct cmd_struct commands[] = {
	{ "run", cmd_run, "run a program under psup and record its profile" },
	{ "attach", cmd_attach, "profile a running process, then detach" },
	{ "report", cmd_report, "print the report of one or more record files" },
	{ "diff", cmd_diff, "compare the runs of two builds: what got slower, beyond noise" },
	{ "annotate", cmd_annotate, "a function's instructions and source lines with samples" },
};

/* psup --version: the version, and what this build and this machine offer
 * (each line "feature: state", so scripts can grep them). */
static void version(FILE *f)
{
	const char *pfm_why = NULL;
	int pfm = smp_pfm_version(&pfm_why);
	long paranoid = 99;
	FILE *pf;

	fprintf(f, "psup %s\n", PSUP_VERSION);
	if (pfm >= 0)
		fprintf(f, "events: libpfm4, API %d.%d (hardware event names)\n", PFM_MAJ_VERSION(pfm),
			PFM_MIN_VERSION(pfm));
	else
		fprintf(f, "events: task-clock and cpu-clock only (libpfm4 not loaded: %s)\n", pfm_why);
	fprintf(f, "disassembly: zydis %u.%u (witch, annotate)\n",
		(unsigned)ZYDIS_VERSION_MAJOR(ZYDIS_VERSION),
		(unsigned)ZYDIS_VERSION_MINOR(ZYDIS_VERSION));
	fprintf(f, "debug info: libdw %s\n", dwfl_version(NULL));
	/* symbols/debugcache.c: no server is asked while recording */
	fputs("debuginfod: its client's cache is read (fill it with debuginfod-find before recording)\n", f);
#ifdef PSUP_HAVE_LIBIBERTY
	fputs("demangling: libiberty (C++, Rust)\n", f);
#else
	fputs("demangling: none (built without libiberty)\n", f);
#endif
	fputs("progress points: coz.h and include/psup.h (no library needed)\n", f);
	pf = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	if (pf) {
		if (fscanf(pf, "%ld", &paranoid) != 1)
			paranoid = 99;
		fclose(pf);
	}
	if (geteuid() == 0)
		fputs("per-CPU sampling: yes (root)\n", f);
	else if (paranoid <= 0)
		fprintf(f, "per-CPU sampling: yes (perf_event_paranoid %ld)\n", paranoid);
	else
		fprintf(f, "per-CPU sampling: only with CAP_PERFMON (needs root, CAP_PERFMON or "
			   "perf_event_paranoid <= 0, which is %ld); else each thread samples itself\n",
			paranoid);
}

static void usage(FILE *f)
{
	fputs("usage: psup [--version] [--help] COMMAND [ARGS]\n\n"
	      "psup profiles native Linux programs from outside: no relink, no preload.\n\n"
	      "commands:\n",
	      f);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
	fputs("\n'psup COMMAND --help' describes a command's options.\n"
	      "example: psup run -- ./app args && psup report\n",
	      f);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		if (argc > 2 && strcmp(argv[1], "help") == 0) {
			char *hargv[] = { argv[2], "--help", NULL };
			for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
				if (!strcmp(commands[i].name, argv[2]))
					return commands[i].fn(2, hargv);
		}
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		version(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, argv[1]))
			return commands[i].fn(argc - 1, argv + 1);
	pr_err("'%s' is not a psup command; see 'psup --help'", argv[1]);
	return 2;
}
