/*
 * What the recorder asks /proc about a thread it does not hold stopped:
 * its scheduler state (/proc/TID/stat), the system call it sleeps in
 * (/proc/TID/syscall) and its name (/proc/TID/comm). The thread may be gone
 * by the time the file is read: -ENOENT then.
 */
#include "supervisor/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int sup_thread_syscall(pid_t pid, pid_t tid, struct sup_syscall *out)
{
	/* "NR 0xARG1 ... 0xARG6 0xSP 0xPC", "-1 0xSP 0xPC", or "running" */
	char path[64], buf[256], *p, *end;
	uint64_t v[8];
	unsigned n = 0;
	ssize_t len;
	long nr;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	if (len < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	close(fd);
	buf[len] = '\0';
	errno = 0;
	nr = strtol(buf, &end, 10);
	if (end == buf || errno)
		return -EAGAIN; /* running: nothing to tell */
	for (p = end; n < 8; p = end) {
		v[n] = strtoull(p, &end, 16);
		if (end == p)
			break;
		n++;
	}
	memset(out, 0, sizeof(*out));
	out->nr = nr < 0 ? -1 : nr;
	if (nr >= 0 && n == 8) {
		memcpy(out->args, v, sizeof(out->args));
		out->sp = v[6];
		out->pc = v[7];
	} else if (nr < 0 && n == 2) {
		out->sp = v[0];
		out->pc = v[1];
	} else {
		return -EINVAL;
	}
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
