/*
 * Helpers the unit tests share: building small programs from sources held
 * in strings, waiting for a task to sleep, checking JSON output. Header
 * only (each test is one program); everything here exits or reports on
 * failure, as a test wants.
 */
#ifndef PSUP_TESTS_FIXTURE_H
#define PSUP_TESTS_FIXTURE_H

#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "report/report.h"

/* The line of the marker comment in src that ends with "@name" (1-based);
 * exits 2 when there is none. */
static inline unsigned fx_marker(const char *src, const char *name)
{
	char pat[64];
	const char *p;
	unsigned line = 1;

	snprintf(pat, sizeof(pat), "@%s */", name);
	p = strstr(src, pat);
	if (!p) {
		fprintf(stderr, "no marker %s\n", name);
		exit(2);
	}
	for (const char *q = src; q < p; q++)
		line += *q == '\n';
	return line;
}

/* Runs a shell command; its exit status (0: fine), said on stderr when not. */
static int fx_run(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static int fx_run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	if (st != 0)
		fprintf(stderr, "command failed (%d): %s\n", st, cmd);
	return st;
}

/* Reads fd into buf (size bytes, NUL-terminated) until it holds end;
 * returns the length, -1 on end of file, an error, or a minute without
 * output (a guard against a broken fixture, not a timing check). */
static inline long fx_read_until(int fd, char *buf, size_t size, const char *end)
{
	size_t len = 0;

	buf[0] = '\0';
	while (!strstr(buf, end)) {
		struct pollfd pfd = { fd, POLLIN, 0 };
		ssize_t r;

		if (len + 1 >= size || poll(&pfd, 1, 60000) <= 0)
			return -1;
		r = read(fd, buf + len, size - 1 - len);
		if (r <= 0)
			return -1;
		len += (size_t)r;
		buf[len] = '\0';
	}
	return (long)len;
}

/* Writes text to dir/name; exits 2 when it cannot. */
static inline void fx_write(const char *dir, const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f)) {
		perror(path);
		exit(2);
	}
}

/* Waits (10 s at most) until task tid of pid sleeps (state S); tid 0: the
 * process itself. */
static inline void fx_wait_sleeping(pid_t pid, pid_t tid)
{
	char path[96], *text = NULL, *p;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 100000; i++) {
		if (psup_read_file(path, &text, NULL))
			return;
		p = strrchr(text, ')');
		if (p && p[1] == ' ' && p[2] == 'S') {
			free(text);
			return;
		}
		free(text);
		usleep(100);
	}
}

/* Reaps child pid into *status if it ended, without waiting; once
 * psup_now_ns() is past deadline it kills the child first (a safety net, not
 * a measurement). 0: still running; 1: it ended; -1: killed at the deadline. */
static inline int fx_reap(pid_t pid, int *status, uint64_t deadline)
{
	if (waitpid(pid, status, WNOHANG) == pid)
		return 1;
	if (psup_now_ns() <= deadline)
		return 0;
	kill(pid, SIGKILL);
	waitpid(pid, status, 0);
	return -1;
}

/* Whether json parses with python3's json module (written to dir/out.json
 * first); the caller knows python3 is there. */
static inline bool fx_json_parses(const char *dir, const char *json)
{
	char path[256], cmd[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/out.json", dir);
	f = fopen(path, "w");
	if (!f)
		return false;
	fputs(json, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "python3 -m json.tool '%s' >/dev/null", path);
	return system(cmd) == 0;
}

/* p printed with o (and tree options t, NULL for the defaults) into a
 * heap string the caller frees; NULL when printing failed. */
static inline char *fx_render_ext(const struct rep_profile *p, const struct rep_options *o,
				  const struct rep_tree_options *t)
{
	char *s = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&s, &n);
	int rc;

	if (!m)
		return NULL;
	rc = t ? rep_print_ext(p, o, t, m) : rep_print(p, o, m);
	fclose(m);
	if (rc) {
		free(s);
		return NULL;
	}
	return s;
}

#endif
