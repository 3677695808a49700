#include "symbols/symbols-internal.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "common/util.h"

/*
 * /proc/PID/maps, one line per mapping, as the kernel's show_map_vma() prints it:
 *   start-end perms offset major:minor inode [padding path]
 * The path runs to the end of the line and may contain spaces; the kernel
 * escapes '\n' in it as "\012", so a line is always one line.
 */

static const char deleted_suffix[] = " (deleted)";

/* The length of path (len bytes) without the kernel's " (deleted)", which
 * sets m->deleted. */
static size_t strip_deleted(const char *path, size_t len, struct sym_map *m)
{
	const size_t n = sizeof(deleted_suffix) - 1;

	if (len < n || memcmp(path + len - n, deleted_suffix, n))
		return len;
	m->deleted = true;
	return len - n;
}

/* Parses a hex number of at most 16 digits ending at a delimiter (not
 * consumed). Returns false on no digits or overflow. */
static bool parse_hex(const char **pp, uint64_t *out)
{
	const char *p = *pp;
	uint64_t v = 0;
	int n = 0;

	for (;; p++, n++) {
		unsigned d;

		if (*p >= '0' && *p <= '9')
			d = (unsigned)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			d = (unsigned)(*p - 'a' + 10);
		else if (*p >= 'A' && *p <= 'F')
			d = (unsigned)(*p - 'A' + 10);
		else
			break;
		if (n >= 16)
			return false;
		v = (v << 4) | d;
	}
	if (n == 0)
		return false;
	*pp = p;
	*out = v;
	return true;
}

static bool parse_dec(const char **pp, uint64_t *out)
{
	const char *p = *pp;
	uint64_t v = 0;
	int n = 0;

	for (; *p >= '0' && *p <= '9'; p++, n++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (n == 0)
		return false;
	*pp = p;
	*out = v;
	return true;
}

static bool expect(const char **pp, char c)
{
	if (**pp != c)
		return false;
	(*pp)++;
	return true;
}

/* Parses one line [p, end) (no newline). Returns 0, -EINVAL or -ENOMEM. */
static int parse_line(const char *p, const char *end, struct sym_map *m)
{
	uint64_t major, minor;
	const char *path;
	size_t len;

	memset(m, 0, sizeof(*m));
	if (!parse_hex(&p, &m->start) || !expect(&p, '-') || !parse_hex(&p, &m->end) ||
	    !expect(&p, ' '))
		return -EINVAL;
	if (m->end < m->start)
		return -EINVAL;
	if (end - p < 5)
		return -EINVAL;
	if ((p[0] != 'r' && p[0] != '-') || (p[1] != 'w' && p[1] != '-') ||
	    (p[2] != 'x' && p[2] != '-') || (p[3] != 'p' && p[3] != 's' && p[3] != '-'))
		return -EINVAL;
	m->prot = (p[0] == 'r' ? PROT_READ : 0) | (p[1] == 'w' ? PROT_WRITE : 0) |
		  (p[2] == 'x' ? PROT_EXEC : 0);
	p += 4;
	if (!expect(&p, ' ') || !parse_hex(&p, &m->offset) || !expect(&p, ' '))
		return -EINVAL;
	if (!parse_hex(&p, &major) || !expect(&p, ':') || !parse_hex(&p, &minor) ||
	    major > 0xffffffffu || minor > 0xffffffffu)
		return -EINVAL;
	m->dev_major = (unsigned)major;
	m->dev_minor = (unsigned)minor;
	if (!expect(&p, ' ') || !parse_dec(&p, &m->inode))
		return -EINVAL;
	if (p > end)
		return -EINVAL;
	/* Anonymous lines end right after the inode (some kernels add one
	 * space); named ones pad with spaces up to the path column. */
	if (p < end && *p != ' ')
		return -EINVAL;
	while (p < end && *p == ' ')
		p++;
	path = p;
	len = strip_deleted(path, (size_t)(end - path), m);
	m->path = strndup(path, len);
	if (!m->path)
		return -ENOMEM;
	return 0;
}

/* Room for one more entry after the len in *maps (*cap of them): false
 * when out of memory. */
static bool maps_room(struct sym_map **maps, size_t len, size_t *cap)
{
	size_t ncap = *cap ? *cap * 2 : 32;
	struct sym_map *nm;

	if (len < *cap)
		return true;
	nm = realloc(*maps, ncap * sizeof(*nm));
	if (!nm)
		return false;
	*maps = nm;
	*cap = ncap;
	return true;
}

int sym_maps_parse(const char *text, struct sym_map **out, size_t *n, size_t *bad_line)
{
	struct sym_map *maps = NULL;
	size_t len = 0, cap = 0, lineno = 0;
	const char *p = text;
	int err;

	*out = NULL;
	*n = 0;
	if (bad_line)
		*bad_line = 0;
	while (*p) {
		const char *nl = strchr(p, '\n');
		const char *end = nl ? nl : p + strlen(p);

		lineno++;
		if (!maps_room(&maps, len, &cap)) {
			err = -ENOMEM;
			goto fail;
		}
		err = parse_line(p, end, &maps[len]);
		if (err) {
			if (err == -EINVAL && bad_line)
				*bad_line = lineno;
			goto fail;
		}
		len++;
		if (!nl)
			break;
		p = nl + 1;
	}
	*out = maps;
	*n = len;
	return 0;
fail:
	sym_maps_free(maps, len);
	return err;
}

void sym_maps_free(struct sym_map *maps, size_t n)
{
	if (!maps)
		return;
	for (size_t i = 0; i < n; i++)
		free(maps[i].path);
	free(maps);
}

/* The kernel's PROCMAP_QUERY (Linux 6.11, include/uapi/linux/fs.h), not in
 * older headers. */
struct maps_query {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
	uint32_t dev_major, dev_minor;
	uint32_t vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
#define MAPS_QUERY _IOWR('f', 17, struct maps_query)
#define MAPS_QUERY_READ 0x01
#define MAPS_QUERY_WRITE 0x02
#define MAPS_QUERY_EXEC 0x04
#define MAPS_QUERY_OR_NEXT 0x10

int sym_kernel_path(const char *name, size_t len, struct sym_map *m)
{
	size_t extra = 0, o = 0;

	len = strip_deleted(name, len, m);
	for (size_t i = 0; i < len; i++)
		extra += name[i] == '\n' ? 3 : 0;
	m->path = malloc(len + extra + 1);
	if (!m->path)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		if (name[i] == '\n') {
			memcpy(m->path + o, "\\012", 4);
			o += 4;
		} else {
			m->path[o++] = name[i];
		}
	}
	m->path[o] = '\0';
	return 0;
}

static bool query_refused;

void sym_maps_query_refuse(void)
{
	query_refused = true;
}

int sym_maps_query_exec(pid_t pid, struct sym_map **out, size_t *n)
{
	struct sym_map *maps = NULL;
	size_t len = 0, cap = 0;
	char path[64], name[PATH_MAX + sizeof(deleted_suffix)];
	uint64_t addr = 0;
	int fd, err = 0;

	*out = NULL;
	*n = 0;
	if (query_refused)
		return -ENOTTY;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		struct maps_query q = {
			.size = sizeof(q),
			.query_flags = MAPS_QUERY_EXEC | MAPS_QUERY_OR_NEXT,
			.query_addr = addr,
			.vma_name_size = sizeof(name),
			.vma_name_addr = (uint64_t)(uintptr_t)name,
		};
		struct sym_map *m;

		if (ioctl(fd, MAPS_QUERY, &q) < 0) {
			/* ENOENT: no executable mapping at or above addr */
			err = errno == ENOENT ? 0 : -errno;
			/* A kernel before 6.11 (ENOTTY), or one whose
			 * structure differs (EINVAL): not asked again. */
			if (!len && (errno == ENOTTY || errno == EINVAL))
				query_refused = true;
			break;
		}
		if (q.vma_end <= q.vma_start || q.vma_start < addr) {
			err = -EINVAL;
			break;
		}
		if (!maps_room(&maps, len, &cap)) {
			err = -ENOMEM;
			break;
		}
		m = &maps[len];
		memset(m, 0, sizeof(*m));
		m->start = q.vma_start;
		m->end = q.vma_end;
		m->offset = q.vma_offset;
		m->inode = q.inode;
		m->dev_major = q.dev_major;
		m->dev_minor = q.dev_minor;
		m->prot = (q.vma_flags & MAPS_QUERY_READ ? PROT_READ : 0) |
			  (q.vma_flags & MAPS_QUERY_WRITE ? PROT_WRITE : 0) |
			  (q.vma_flags & MAPS_QUERY_EXEC ? PROT_EXEC : 0);
		/* vma_name_size counts the terminating NUL; 0: anonymous */
		err = sym_kernel_path(name, q.vma_name_size ? strnlen(name, q.vma_name_size) : 0, m);
		if (err)
			break;
		len++;
		addr = q.vma_end;
	}
	close(fd);
	if (err) {
		sym_maps_free(maps, len);
		return err;
	}
	*out = maps;
	*n = len;
	return 0;
}

int sym_maps_read(pid_t pid, char **text, char *path, size_t pathlen, pid_t *from)
{
	char own[64], dir[64];
	struct dirent *de;
	size_t len = 0;
	DIR *d;
	int err;

	if (!path) {
		path = own;
		pathlen = sizeof(own);
	}
	if (from)
		*from = pid;
	snprintf(path, pathlen, "/proc/%d/maps", (int)pid);
	err = psup_read_file(path, text, &len);
	if (err || len)
		return err;
	/* Empty: a kernel thread, a process on its way out, or a leader that
	 * called pthread_exit (its mm is gone, its threads share theirs). */
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	d = opendir(dir);
	if (!d)
		return 0; /* the empty text stands */
	while ((de = readdir(d))) {
		char *t = NULL;
		size_t tlen = 0;

		if (de->d_name[0] < '1' || de->d_name[0] > '9' || atoi(de->d_name) == pid)
			continue;
		snprintf(path, pathlen, "/proc/%d/task/%s/maps", (int)pid, de->d_name);
		if (psup_read_file(path, &t, &tlen) == 0 && tlen) {
			free(*text);
			*text = t;
			if (from)
				*from = (pid_t)atoi(de->d_name);
			break;
		}
		free(t);
		snprintf(path, pathlen, "/proc/%d/maps", (int)pid);
	}
	closedir(d);
	return 0;
}

int sym_maps_file_base(pid_t pid, dev_t dev, ino_t ino, uint64_t *base)
{
	struct sym_map *maps;
	char *text;
	size_t n;
	int err;

	err = sym_maps_read(pid, &text, NULL, 0, NULL);
	if (err < 0)
		return err;
	err = sym_maps_parse(text, &maps, &n, NULL);
	free(text);
	if (err < 0)
		return err;
	err = -ENOENT;
	for (size_t i = 0; i < n && err; i++) {
		const struct sym_map *m = &maps[i];
		struct stat st;

		/* The device in maps is the filesystem's own (an overlay's
		 * upper one, say): the file itself says whether it is the one. */
		if (m->offset != 0 || m->path[0] != '/' || m->deleted || m->inode != (uint64_t)ino)
			continue;
		if (stat(m->path, &st) == 0 && st.st_dev == dev && st.st_ino == ino) {
			*base = m->start;
			err = 0;
		}
	}
	sym_maps_free(maps, n);
	return err;
}

int sym_own_symbol(const char *lib, const char *name, uint64_t *offset, dev_t *dev, ino_t *ino)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD), *f = NULL;
	struct stat st;
	Dl_info di;
	int err = -ENOENT;

	if (h)
		f = dlsym(h, name);
	if (f && dladdr(f, &di) && di.dli_fname && di.dli_fbase && stat(di.dli_fname, &st) == 0) {
		*offset = (uint64_t)((uintptr_t)f - (uintptr_t)di.dli_fbase);
		*dev = st.st_dev;
		*ino = st.st_ino;
		err = 0;
	}
	if (h)
		dlclose(h);
	return err;
}
