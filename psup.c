/* psup: the command table. */
#include "builtin/builtin.h"

#include <stdio.h>
#include <string.h>

#include "common/log.h"

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
		printf("psup %s\n", PSUP_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, argv[1]))
			return commands[i].fn(argc - 1, argv + 1);
	pr_err("'%s' is not a psup command; see 'psup --help'", argv[1]);
	return 2;
}
