#include "supervisor/supervisor-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

/* PF_KTHREAD, in /proc/PID/stat's flags (field 9). */
#define PF_KTHREAD_FLAG 0x00200000UL

static bool is_kernel_thread(pid_t pid)
{
	char path[64], *text = NULL, *p;
	unsigned long flags = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (psup_read_file(path, &text, NULL) < 0)
		return false;
	p = strrchr(text, ')'); /* the name may hold anything */
	if (p && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
		flags = 0;
	free(text);
	return flags & PF_KTHREAD_FLAG;
}

/* Whether a /proc/PID/status line "Uid:" or "Gid:" lists an id other than
 * mine (real, effective, saved, filesystem): a setuid or setgid program. */
static bool ids_differ(const char *status, const char *key, unsigned long mine)
{
	const char *p = strstr(status, key);
	unsigned long id[4];

	if (!p || sscanf(p + strlen(key), "%lu %lu %lu %lu", &id[0], &id[1], &id[2], &id[3]) != 4)
		return false;
	for (int i = 0; i < 4; i++)
		if (id[i] != mine)
			return true;
	return false;
}

/*
 * Why an ordinary user may not trace or read pid, which their own uid runs
 * (issue 22): a setuid or setgid program keeps other ids, and a process that is not
 * dumpable (an unreadable program, prctl(PR_SET_DUMPABLE, 0), a uid change)
 * has the files of /proc/PID owned by root (not the directory). Empty when
 * neither.
 */
const char *sup_proc_access_why(pid_t pid, char *buf, size_t len)
{
	char path[64], *status = NULL;
	struct stat st;

	buf[0] = '\0';
	if (geteuid() == 0)
		return buf;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (psup_read_file(path, &status, NULL) == 0 &&
	    (ids_differ(status, "\nUid:", geteuid()) || ids_differ(status, "\nGid:", getegid())))
		snprintf(buf, len,
			 " (it runs a setuid or setgid program, with another user's privileges; "
			 "run psup as root)");
	free(status);
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (!buf[0] && stat(path, &st) == 0 && st.st_uid != geteuid())
		snprintf(buf, len,
			 " (it is not dumpable: an unreadable program, or it called "
			 "prctl(PR_SET_DUMPABLE, 0); run psup as root)");
	return buf;
}

/* The n-th id (0: real, 1: effective) of a "Uid:" or "Gid:" status line. */
static long status_id(const char *status, const char *key, int n)
{
	const char *p = strstr(status, key);
	long id[2];

	if (!p || sscanf(p + strlen(key), "%ld %ld", &id[0], &id[1]) != 2)
		return -1;
	return id[n];
}

bool sup_proc_lost_setid(pid_t pid)
{
	char path[64], *status = NULL;
	struct stat st;
	bool lost = false;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	if (stat(path, &st) < 0 || !(st.st_mode & (S_ISUID | S_ISGID)))
		return false;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (psup_read_file(path, &status, NULL) < 0)
		return false;
	if ((st.st_mode & S_ISUID) && status_id(status, "\nUid:", 1) != (long)st.st_uid)
		lost = true;
	if ((st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP) &&
	    status_id(status, "\nGid:", 1) != (long)st.st_gid)
		lost = true;
	free(status);
	return lost;
}

const char *sup_attach_diagnose(pid_t pid, int err, char *buf, size_t len)
{
	struct sup_proc_status ps;
	char path[64], *scope = NULL;
	const char *reason = strerror(err < 0 ? -err : err);
	char extra[160] = "";
	bool zombie;

	if (sup_proc_status(pid, &ps) < 0) {
		snprintf(buf, len, "cannot attach to pid %d: no such process", pid);
		return buf;
	}
	zombie = ps.state == 'Z' || ps.state == 'X';
	if (err == -ESRCH || err == ESRCH) {
		snprintf(buf, len, zombie ? "cannot attach to pid %d: it is a zombie (exited, not yet reaped)" : "cannot attach to pid %d: no such process", pid);
		return buf;
	}
	/* (Traced by psup itself: a thread of it failed, its leader seized
	 * already.) */
	if (ps.tracer > 0 && ps.tracer != getpid()) {
		char comm[64] = "?", *c = NULL;
		snprintf(path, sizeof(path), "/proc/%d/comm", ps.tracer);
		if (psup_read_file(path, &c, NULL) == 0) {
			snprintf(comm, sizeof(comm), "%s", c);
			comm[strcspn(comm, "\n")] = '\0';
			free(c);
		}
		snprintf(extra, sizeof(extra), " (already traced by pid %d, %s)", ps.tracer, comm);
	} else if (zombie) {
		snprintf(extra, sizeof(extra), " (it is a zombie)");
	} else if (ps.uid >= 0 && geteuid() != 0 && (uid_t)ps.uid != geteuid()) {
		snprintf(extra, sizeof(extra), " (owned by another user, uid %ld; run psup as that user or as root)",
			 ps.uid);
	} else if ((err == -EPERM || err == EPERM) && is_kernel_thread(pid)) {
		snprintf(buf, len, "cannot attach to pid %d: it is a kernel thread, with no program to profile",
			 pid);
		return buf;
	} else if ((err == -EPERM || err == EPERM) && sup_proc_access_why(pid, extra, sizeof(extra))[0]) {
		/* extra says why */
	} else if (psup_read_file("/proc/sys/kernel/yama/ptrace_scope", &scope, NULL) == 0 &&
		   atoi(scope) >= 1) {
		snprintf(extra, sizeof(extra),
			 " (kernel.yama.ptrace_scope = %d; set it to 0 or run psup as root)", atoi(scope));
	}
	free(scope);
	snprintf(buf, len, "cannot attach to pid %d: %s%s", pid, reason, extra);
	return buf;
}
