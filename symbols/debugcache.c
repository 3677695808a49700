#include "symbols/symbols-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>

#include "common/log.h"

/*
 * Uncompressed copies of separate debug files, by build-id; the sorted
 * symbol tables of symtab.c beside them (sym_cache_file()).
 *
 * Debian's -dbg and -dbgsym files (and most distributions') keep their
 * .debug_* sections zlib-compressed, and libdw inflates every one of them
 * when it opens the file: 35-40 ms of psup's time for libc's alone, on every
 * run, while the program waits for psup at its next stop (issue 20: a short
 * run of a big program). Once inflated, the copy is kept under the cache
 * directory as BB/REST.debug, the layout of /usr/lib/debug/.build-id, and the
 * next run opens it as it is (perf keeps binaries in ~/.debug the same way).
 *
 * The directory is $PSUP_DEBUG_CACHE, else $XDG_CACHE_HOME/psup/debug, else
 * $HOME/.cache/psup/debug; PSUP_DEBUG_CACHE=off (or empty) turns it off. It
 * is used only when it belongs to psup's effective user and nobody else may
 * write in it. A copy is written to a temporary name and renamed into place
 * (two psups at once both succeed), and is checked on every use: a regular
 * file of ours whose ELF build-id is the one asked for, else it is replaced.
 * The least recently used copies go when the directory passes
 * SYM_DEBUG_CACHE_MAX_BYTES. Test: t1102-debug-cache.
 */

#define SYM_DEBUG_CACHE_MAX_BYTES (2ULL << 30)

static struct {
	bool resolved;
	char *dir; /* NULL: off */
	uint64_t hits, written;
} dc;

/* mkdir -p of path's components below an existing prefix, mode 0700. */
static int mkdirs(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST) {
			*p = '/';
			return -errno;
		}
		*p = '/';
	}
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* A directory psup may trust: ours, a directory, nobody else writes there. */
static bool dir_is_ours(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       !(st.st_mode & (S_IWGRP | S_IWOTH));
}

static const char *cache_dir(void)
{
	const char *env, *home;
	char *dir = NULL;

	if (dc.resolved)
		return dc.dir;
	dc.resolved = true;
	env = getenv("PSUP_DEBUG_CACHE");
	if (env) {
		if (!*env || !strcmp(env, "off"))
			return NULL;
		dir = strdup(env);
	} else if ((env = getenv("XDG_CACHE_HOME")) && env[0] == '/') {
		if (asprintf(&dir, "%s/psup/debug", env) < 0)
			dir = NULL;
	} else if ((home = getenv("HOME")) && home[0] == '/') {
		if (asprintf(&dir, "%s/.cache/psup/debug", home) < 0)
			dir = NULL;
	}
	if (!dir)
		return NULL;
	if (mkdirs(dir) < 0 || !dir_is_ours(dir)) {
		pr_debug("debug cache %s: not a directory of this user's; not used", dir);
		free(dir);
		return NULL;
	}
	dc.dir = dir;
	return dc.dir;
}

/* What the cache needs to know of the ELF file fd: whether its build-id
 * is id and whether a section is compressed. false when it is not ELF. */
static bool elf_facts(int fd, const unsigned char *id, size_t idlen, bool *id_matches, bool *compressed)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Elf_Scn *scn = NULL;
	const void *bits;

	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		return false;
	}
	*id_matches = dwelf_elf_gnu_build_id(elf, &bits) == (ssize_t)idlen && !memcmp(bits, id, idlen);
	*compressed = false;
	while (!*compressed && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;

		*compressed = gelf_getshdr(scn, &shdr) && (shdr.sh_flags & SHF_COMPRESSED);
	}
	elf_end(elf);
	return true;
}

/* Opens path if it is a copy psup may use for build-id id: a regular file
 * of ours, ELF, with that build-id and nothing compressed. Returns the fd or
 * -1. */
static int open_checked(const char *path, const unsigned char *id, size_t idlen)
{
	size_t size;
	int fd = sym_cache_open(path, UINT64_MAX, &size);
	bool id_matches, compressed;

	if (fd < 0)
		return -1;
	if (!elf_facts(fd, id, idlen, &id_matches, &compressed) || !id_matches || compressed) {
		close(fd);
		return -1;
	}
	return fd;
}

static int copy_fd(int from, int to)
{
	char buf[1 << 16];
	off_t off = 0;

	for (;;) {
		ssize_t n = pread(from, buf, sizeof(buf), off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(to, buf + done, (size_t)(n - done));

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return -errno;
			done += w;
		}
		off += n;
	}
}

/* Inflates every compressed section of the ELF file fd, open read-write,
 * in place (libelf lays the file out again). Returns 0 or -1. */
static int inflate(int fd)
{
	Elf *elf = elf_begin(fd, ELF_C_RDWR, NULL);
	Elf_Scn *scn = NULL;
	int ret = -1;

	if (!elf || elf_kind(elf) != ELF_K_ELF)
		goto out;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;

		if (!gelf_getshdr(scn, &shdr))
			goto out;
		if ((shdr.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0) {
			pr_debug("debug cache: cannot inflate a section: %s", elf_errmsg(-1));
			goto out;
		}
	}
	if (elf_update(elf, ELF_C_WRITE) < 0) {
		pr_debug("debug cache: cannot write the inflated file: %s", elf_errmsg(-1));
		goto out;
	}
	ret = 0;
out:
	elf_end(elf);
	return ret;
}

/* Frees the least recently used copies (by mtime: a hit touches it) until
 * the directory holds at most SYM_DEBUG_CACHE_MAX_BYTES. */
static void trim(const char *dir)
{
	for (;;) {
		char oldest[PATH_MAX] = "", path[PATH_MAX];
		struct timespec oldest_t = { 0 };
		unsigned long long total = 0;
		DIR *top = opendir(dir), *sub;
		struct dirent *de, *fe;

		if (!top)
			return;
		while ((de = readdir(top))) {
			if (de->d_name[0] == '.' || strlen(de->d_name) != 2)
				continue;
			if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path) ||
			    !(sub = opendir(path)))
				continue;
			while ((fe = readdir(sub))) {
				struct stat st;
				char file[PATH_MAX];

				if (fe->d_name[0] == '.')
					continue;
				if (snprintf(file, sizeof(file), "%s/%s", path, fe->d_name) >=
					    (int)sizeof(file) ||
				    lstat(file, &st) < 0 || !S_ISREG(st.st_mode))
					continue;
				total += (unsigned long long)st.st_size;
				if (!oldest[0] || st.st_mtim.tv_sec < oldest_t.tv_sec ||
				    (st.st_mtim.tv_sec == oldest_t.tv_sec &&
				     st.st_mtim.tv_nsec < oldest_t.tv_nsec)) {
					oldest_t = st.st_mtim;
					memcpy(oldest, file, sizeof(oldest));
				}
			}
			closedir(sub);
		}
		closedir(top);
		if (total <= SYM_DEBUG_CACHE_MAX_BYTES || !oldest[0] || unlink(oldest) < 0)
			return;
		pr_debug("debug cache: over %llu bytes, removed %s", SYM_DEBUG_CACHE_MAX_BYTES, oldest);
	}
}

/* Writes the inflated copy of fd to path, through a temporary file renamed
 * into place. Returns 0 or -1. */
static int write_copy(int fd, const char *dir, const char *path)
{
	char tmp[PATH_MAX];
	int out;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp-XXXXXX", path) >= (int)sizeof(tmp))
		return -1;
	out = mkostemp(tmp, O_CLOEXEC);
	if (out < 0)
		return -1;
	if (copy_fd(fd, out) < 0 || inflate(out) < 0 || fdatasync(out) < 0 ||
	    rename(tmp, path) < 0) {
		close(out);
		unlink(tmp);
		return -1;
	}
	close(out);
	dc.written++;
	trim(dir);
	return 0;
}

/* The copy's path for build-id id, and its directory. */
static int copy_path(const char *dir, const unsigned char *id, size_t idlen, char *sub, char *path)
{
	char hex[2 * SYM_BUILD_ID_MAX + 1];

	if (idlen < 2 || idlen > SYM_BUILD_ID_MAX)
		return -1;
	sym_hex(id, idlen, hex);
	snprintf(sub, PATH_MAX, "%s/%.2s", dir, hex);
	if (snprintf(path, PATH_MAX, "%s/%s.debug", sub, hex + 2) >= PATH_MAX)
		return -1;
	return 0;
}

char *sym_cache_file(const char *hex, const char *suffix, bool create)
{
	const char *dir = cache_dir();
	char sub[PATH_MAX], *path = NULL;
	size_t n = hex ? strlen(hex) : 0;

	if (!dir || n < 3 || n > 2 * SYM_BUILD_ID_MAX || strspn(hex, "0123456789abcdef") != n)
		return NULL;
	snprintf(sub, sizeof(sub), "%s/%.2s", dir, hex);
	if (create && ((mkdir(sub, 0700) < 0 && errno != EEXIST) || !dir_is_ours(sub)))
		return NULL;
	if (asprintf(&path, "%s/%s%s", sub, hex + 2, suffix) < 0)
		return NULL;
	return path;
}

int sym_cache_open(const char *path, uint64_t max, size_t *size)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_size <= 0 ||
	    (uint64_t)st.st_size > max) {
		close(fd);
		return -1;
	}
	futimens(fd, NULL);
	*size = (size_t)st.st_size;
	return fd;
}

FILE *sym_cache_create(const char *path, char **tmp)
{
	FILE *f;
	int fd;

	if (asprintf(tmp, "%s.tmp-XXXXXX", path) < 0) {
		*tmp = NULL;
		return NULL;
	}
	fd = mkostemp(*tmp, O_CLOEXEC);
	f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		if (fd >= 0) {
			close(fd);
			unlink(*tmp);
		}
		free(*tmp);
		*tmp = NULL;
	}
	return f;
}

bool sym_cache_commit(FILE *f, char *tmp, const char *path, bool ok)
{
	ok = fclose(f) == 0 && ok && rename(tmp, path) == 0;
	if (!ok) {
		pr_debug("debug cache: cannot write %s", path);
		unlink(tmp);
	}
	free(tmp);
	return ok;
}

void sym_cache_file_written(void)
{
	const char *dir = cache_dir();

	if (dir)
		trim(dir);
}

int sym_debug_cache_lookup(const unsigned char *id, size_t idlen, char **path_out)
{
	const char *dir = cache_dir();
	char path[PATH_MAX], sub[PATH_MAX];
	int fd;

	*path_out = NULL;
	if (!dir || copy_path(dir, id, idlen, sub, path) < 0)
		return -1;
	fd = open_checked(path, id, idlen);
	if (fd < 0)
		return -1;
	*path_out = strdup(path);
	if (!*path_out) {
		close(fd);
		return -1;
	}
	dc.hits++;
	return fd;
}

int sym_debug_cache_add(int fd, const unsigned char *id, size_t idlen, char **path_out)
{
	const char *dir = cache_dir();
	char path[PATH_MAX], sub[PATH_MAX];
	int cfd;

	bool id_matches, compressed;

	*path_out = NULL;
	if (!dir || copy_path(dir, id, idlen, sub, path) < 0 ||
	    !elf_facts(fd, id, idlen, &id_matches, &compressed) || !id_matches || !compressed)
		return -1; /* nothing to inflate (or not the file): it serves as it is */
	if ((mkdir(sub, 0700) < 0 && errno != EEXIST) || !dir_is_ours(sub) ||
	    write_copy(fd, dir, path) < 0) {
		pr_debug("debug cache: cannot keep an inflated copy as %s", path);
		return -1;
	}
	cfd = open_checked(path, id, idlen);
	if (cfd < 0)
		return -1;
	*path_out = strdup(path);
	if (!*path_out) {
		close(cfd);
		return -1;
	}
	return cfd;
}

int sym_debug_cache_by_id(const unsigned char *id, size_t idlen, char **path_out, bool *id_file)
{
	char hex[2 * SYM_BUILD_ID_MAX + 1], path[PATH_MAX];
	int fd, cfd;

	*id_file = false;
	cfd = sym_debug_cache_lookup(id, idlen, path_out);
	if (cfd >= 0 || !cache_dir() || idlen < 2 || idlen > SYM_BUILD_ID_MAX)
		return cfd;
	sym_hex(id, idlen, hex);
	snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	/* O_NONBLOCK: a FIFO under that name is not waited on (nor ELF) */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	*id_file = true;
	cfd = sym_debug_cache_add(fd, id, idlen, path_out);
	close(fd);
	return cfd;
}

void sym_debug_cache_stats(uint64_t *hits, uint64_t *written)
{
	*hits = dc.hits;
	*written = dc.written;
}

/*
 * The debug file debuginfod's client downloaded for build-id id, from its
 * cache: $DEBUGINFOD_CACHE_PATH, else ~/.debuginfod_client_cache where it
 * exists, else $XDG_CACHE_HOME/debuginfod_client or
 * ~/.cache/debuginfod_client (libdebuginfod's own order); the file is
 * ID/debuginfo there. psup asks no server while it records (a download
 * would hold the program at a stop), so `debuginfod-find debuginfo FILE`
 * before the run is how a server's files are used. Returns an fd of a
 * regular ELF file with that build-id (*path_out its name, to free), or -1.
 */
int sym_debuginfod_cached(const unsigned char *id, size_t idlen, char **path_out)
{
	char hex[2 * SYM_BUILD_ID_MAX + 1], dir[PATH_MAX], path[2 * PATH_MAX];
	const char *env = getenv("DEBUGINFOD_CACHE_PATH"), *home = getenv("HOME");
	struct stat st;
	bool id_matches, compressed;
	int fd;

	if (idlen < 2 || idlen > SYM_BUILD_ID_MAX)
		return -1;
	if (!home || home[0] != '/')
		home = "";
	if (env && *env) {
		snprintf(dir, sizeof(dir), "%s", env);
	} else {
		snprintf(dir, sizeof(dir), "%s/.debuginfod_client_cache", home);
		if (stat(dir, &st) < 0) {
			env = getenv("XDG_CACHE_HOME");
			if (env && *env)
				snprintf(dir, sizeof(dir), "%s/debuginfod_client", env);
			else
				snprintf(dir, sizeof(dir), "%s/.cache/debuginfod_client", home);
		}
	}
	sym_hex(id, idlen, hex);
	snprintf(path, sizeof(path), "%s/%s/debuginfo", dir, hex);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !elf_facts(fd, id, idlen, &id_matches, &compressed) ||
	    !id_matches || !(*path_out = strdup(path))) {
		close(fd);
		return -1;
	}
	return fd;
}
