#include "supervisor/supervisor-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

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
	if (ps.tracer > 0) {
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
	} else if (psup_read_file("/proc/sys/kernel/yama/ptrace_scope", &scope, NULL) == 0 &&
		   atoi(scope) >= 1) {
		snprintf(extra, sizeof(extra),
			 " (kernel.yama.ptrace_scope = %d; set it to 0 or run psup as root)", atoi(scope));
	}
	free(scope);
	snprintf(buf, len, "cannot attach to pid %d: %s%s", pid, reason, extra);
	return buf;
}
