#ifndef PSUP_BUILTIN_H
#define PSUP_BUILTIN_H

/* The commands (git's builtin.h): each gets argv from its own name on and
 * returns psup's exit status. */
int cmd_run(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_report(int argc, char **argv);

#endif
