#include "symbols/symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "symbols/symbols-internal.h"

/*
 * Perf map files: the convention of JITs (the JVM's perf map options and
 * agents, node --perf-basic-prof, python -X perf) for naming the code they
 * generate. /tmp/perf-PID.map holds one "START SIZE name" line per code
 * blob, hex without or with 0x, appended as code is made; a later line for
 * the same addresses (recompiled code) wins. Read here at record time,
 * since the file may be gone when the program is; read again, from where
 * the last read stopped, when it has grown.
 */

/* A miss stats the file at most this often: JIT code is all misses. */
#define PERFMAP_STAT_NS (5ULL * 1000 * 1000)
/* Entries before a match that may still contain it (nested or
 * overlapping blobs): looked at, newest wins. */
#define PERFMAP_BACK 16
/* A map file is the target's text, not trusted: at most this many entries
 * (a JVM writes tens of thousands), the rest ignored. */
#define PERFMAP_MAX_ENTS (4u << 20)

static int ent_cmp(const void *a, const void *b)
{
	const struct sym_perfmap_ent *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* One "START SIZE name" line (without its newline). */
/* Anybody can write /tmp: a map file counts only when root, psup's user or
 * the process's own user owns it (perf asks the same of its user). */
static bool owner_trusted(pid_t pid, const struct stat *st)
{
	char proc[32];
	struct stat pst;

	if (st->st_uid == 0 || st->st_uid == geteuid())
		return true;
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	return stat(proc, &pst) == 0 && pst.st_uid == st->st_uid;
}

static int parse_line(struct sym_space *sp, char *line)
{
	struct sym_perfmap *pm = &sp->perfmap;
	unsigned long long start, size;
	char *p = line, *end;
	const char *name;

	start = strtoull(p, &end, 16);
	if (end == p || (*end != ' ' && *end != '\t'))
		return 0;
	p = end;
	size = strtoull(p, &end, 16);
	if (end == p || (*end != ' ' && *end != '\t') || !size || start + size < start)
		return 0;
	while (*end == ' ' || *end == '\t')
		end++;
	if (!*end)
		return 0;
	name = sym_strpool_intern(&sp->strings, end);
	if (!name)
		return -ENOMEM;
	if (pm->n >= PERFMAP_MAX_ENTS)
		return -E2BIG;
	if (pm->n == pm->cap) {
		size_t ncap = pm->cap ? pm->cap * 2 : 256;
		struct sym_perfmap_ent *ne = realloc(pm->ents, ncap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		pm->ents = ne;
		pm->cap = ncap;
	}
	pm->ents[pm->n++] = (struct sym_perfmap_ent){ start, size, pm->seq++, name };
	return 0;
}

/* Reads what was appended since the last read: complete lines only. */
static void perfmap_update(struct sym_space *sp)
{
	struct sym_perfmap *pm = &sp->perfmap;
	uint64_t now = psup_now_ns();
	char path[64], buf[8192];
	size_t have = 0;
	struct stat st;
	size_t n0 = pm->n;
	int fd;

	if (pm->checked_ns && now - pm->checked_ns < PERFMAP_STAT_NS)
		return;
	pm->checked_ns = now;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)sp->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size == pm->read ||
	    !owner_trusted(sp->pid, &st)) {
		close(fd);
		return;
	}
	if ((uint64_t)st.st_size < pm->read) {
		/* rewritten: a new program's (the pid reused) */
		pm->read = 0;
		pm->n = 0;
		n0 = 0;
	}
	if (!pm->path) {
		pm->path = sym_strpool_intern(&sp->strings, path);
		if (!pm->path) {
			close(fd);
			return;
		}
	}
	for (;;) {
		ssize_t got = pread(fd, buf + have, sizeof(buf) - 1 - have, (off_t)(pm->read + have));
		char *line = buf, *nl;

		if (got <= 0)
			break;
		have += (size_t)got;
		buf[have] = '\0';
		while ((nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
			*nl = '\0';
			if (parse_line(sp, line) < 0)
				goto out;
			line = nl + 1;
		}
		pm->read += (uint64_t)(line - buf);
		have -= (size_t)(line - buf);
		if (have == sizeof(buf) - 1) { /* a line longer than buf: skip it */
			pm->read += have;
			have = 0;
		} else {
			memmove(buf, line, have);
		}
	}
out:
	close(fd);
	if (pm->n != n0)
		qsort(pm->ents, pm->n, sizeof(*pm->ents), ent_cmp);
}

const char *sym_perfmap_lookup(struct sym_space *sp, uint64_t pc, const char **path)
{
	struct sym_perfmap *pm = &sp->perfmap;
	const struct sym_perfmap_ent *best = NULL;
	size_t lo = 0, hi;

	if (sp->pid <= 0)
		return NULL;
	for (int pass = 0; pass < 2; pass++) {
		/* the last entry with start <= pc */
		lo = 0;
		hi = pm->n;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (pm->ents[mid].start <= pc)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t i = lo, k = 0; i > 0 && k < PERFMAP_BACK; i--, k++) {
			const struct sym_perfmap_ent *e = &pm->ents[i - 1];

			if (pc - e->start < e->size && (!best || e->seq > best->seq))
				best = e;
		}
		if (best || pass)
			break;
		perfmap_update(sp);
	}
	if (!best)
		return NULL;
	*path = pm->path;
	return best->name;
}

void sym_perfmap_release(struct sym_perfmap *pm)
{
	free(pm->ents);
	memset(pm, 0, sizeof(*pm));
}
