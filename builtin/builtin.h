#ifndef PSUP_BUILTIN_H
#define PSUP_BUILTIN_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/output.h"

/* The commands (git's builtin.h): each gets argv from its own name on and
 * returns psup's exit status. */
int cmd_run(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_annotate(int argc, char **argv);

/* The option getopt_long() just returned as c, as the user wrote it
 * ("-o", "--output"), for a message; longindex is what getopt_long() set
 * (-1 before the call). For '?' and ':' (an optstring starting with ':')
 * the unknown option or the one missing its value. Returns buf. */
const char *builtin_option_name(int c, int longindex, const struct option *longopts,
				char **argv, char *buf, size_t len);
/* Says in one line what is wrong with the option getopt_long() returned as
 * ':' (a missing value) or '?' (unknown), and where help is: "psup: diff:
 * option '-o' needs a value; see 'psup diff --help'". prefix: "diff", or
 * NULL for none. Returns 2, the exit status for bad usage. */
/* Opens a command's -o FILE by common/output.c's rules (no clobbering
 * without force, no writing through another user's link), saying in one
 * line why not: "report: x.txt already exists; ...". Returns the stream, or
 * NULL after the message with nothing left behind. *of keeps what
 * psup_output_discard() needs if the writing fails later. */
FILE *builtin_output_open(const char *cmd, const char *path, bool force, struct psup_output *of);
int builtin_option_error(const char *prefix, const char *cmd, int c, int longindex,
			 const struct option *longopts, char **argv);

#endif
