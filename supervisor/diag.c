#include "supervisor/supervisor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

static long status_field(const char *status, const char *key)
{
	const char *line = strstr(status, key);

	if (!line)
		return -1;
	return strtol(line + strlen(key), NULL, 10);
}

const char *sup_attach_diagnose(pid_t pid, int err, char *buf, size_t len)
{
	char path[64], *status = NULL, *scope = NULL;
	const char *reason = strerror(err < 0 ? -err : err);
	char extra[160] = "";

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (psup_read_file(path, &status, NULL) < 0) {
		snprintf(buf, len, "cannot attach to pid %d: no such process", pid);
		return buf;
	}
	long tracer = status_field(status, "\nTracerPid:");
	long uid = status_field(status, "\nUid:");
	const char *state = strstr(status, "\nState:");
	bool zombie = false;

	if (state) {
		state += 7;
		while (*state == ' ' || *state == '\t')
			state++;
		zombie = *state == 'Z' || *state == 'X';
	}
	if (err == -ESRCH || err == ESRCH) {
		snprintf(buf, len, zombie ? "cannot attach to pid %d: it is a zombie (exited, not yet reaped)"
					  : "cannot attach to pid %d: no such process", pid);
		goto out;
	}
	if (tracer > 0) {
		char comm[64] = "?", *c = NULL;
		snprintf(path, sizeof(path), "/proc/%ld/comm", tracer);
		if (psup_read_file(path, &c, NULL) == 0) {
			snprintf(comm, sizeof(comm), "%s", c);
			comm[strcspn(comm, "\n")] = '\0';
			free(c);
		}
		snprintf(extra, sizeof(extra), " (already traced by pid %ld, %s)", tracer, comm);
	} else if (zombie) {
		snprintf(extra, sizeof(extra), " (it is a zombie)");
	} else if (uid >= 0 && geteuid() != 0 && (uid_t)uid != geteuid()) {
		snprintf(extra, sizeof(extra), " (owned by another user, uid %ld; run psup as that user or as root)", uid);
	} else if (psup_read_file("/proc/sys/kernel/yama/ptrace_scope", &scope, NULL) == 0 &&
		   atoi(scope) >= 1) {
		snprintf(extra, sizeof(extra),
			 " (kernel.yama.ptrace_scope = %d; set it to 0 or run psup as root)", atoi(scope));
	}
	snprintf(buf, len, "cannot attach to pid %d: %s%s", pid, reason, extra);
out:
	free(status);
	free(scope);
	return buf;
}
