/*
 * What the recorder asks /proc about a thread it does not hold stopped:
 * its scheduler state (/proc/TID/stat), the system call it sleeps in
 * (/proc/TID/syscall) and its name (/proc/TID/comm). The thread may be gone
 * by the time the file is read: -ENOENT then.
 */
#include "supervisor/supervisor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

char sup_proc_stat_state(const char *stat)
{
	/* The name in parentheses may hold any byte, ')' and spaces too:
	 * the state follows the last ')'. */
	const char *st = strrchr(stat, ')');

	if (!st || st[1] != ' ' || !st[2])
		return '?';
	return st[2];
}

int sup_proc_state(pid_t tid, char *state)
{
	char path[64], *buf;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/stat", tid);
	err = psup_read_file(path, &buf, NULL);
	if (err < 0)
		return err;
	*state = sup_proc_stat_state(buf);
	free(buf);
	return 0;
}

int sup_proc_syscall_nr(pid_t tid, long *nr)
{
	char path[64], *buf;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/syscall", tid);
	err = psup_read_file(path, &buf, NULL);
	if (err < 0)
		return err;
	*nr = atol(buf);
	free(buf);
	return 0;
}

int sup_proc_comm(pid_t tid, char *buf, size_t len)
{
	char path[64], *c;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/comm", tid);
	buf[0] = '\0';
	err = psup_read_file(path, &c, NULL);
	if (err < 0)
		return err;
	snprintf(buf, len, "%s", c);
	buf[strcspn(buf, "\n")] = '\0';
	free(c);
	return 0;
}
