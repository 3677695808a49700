/* The /proc/PID/maps parser, fed synthetic text, and a space over this very
 * process. */
#include "symbols/symbols.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <sys/wait.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/util.h"
#include "symbols/symbols-internal.h"
#include "tests/unit/tap.h"

static const char good[] =
	"55d0c0a00000-55d0c0a02000 r--p 00000000 fe:00 1234                       /usr/bin/cat\n"
	"55d0c0a02000-55d0c0a07000 r-xp 00002000 fe:00 1234                       /usr/bin/cat\n"
	"55d0c1f3e000-55d0c1f5f000 rw-p 00000000 00:00 0                          [heap]\n"
	"7f1e2c000000-7f1e2c021000 rw-p 00000000 00:00 0 \n"
	"7f1e2d000000-7f1e2d001000 r-xs 00001000 103:05 98765432109               /tmp/a dir/lib with spaces.so\n"
	"7f1e2e000000-7f1e2e001000 r-xp 00000000 08:01 42                         /tmp/gone.so (deleted)\n"
	"7ffd5a3b1000-7ffd5a3d2000 rw-p 00000000 00:00 0                          [stack]\n"
	"7ffd5a3f8000-7ffd5a3fa000 r-xp 00000000 00:00 0                          [vdso]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]";

static void test_good(void)
{
	struct sym_map *m = NULL;
	size_t n = 0, bad = 99;
	int err = sym_maps_parse(good, &m, &n, &bad);

	CHECK_EQ_INT(err, 0);
	CHECK_EQ_INT(n, 9);
	CHECK_EQ_INT(bad, 0);
	if (err || n != 9)
		return;
	CHECK(m[0].start == 0x55d0c0a00000ULL && m[0].end == 0x55d0c0a02000ULL);
	CHECK_EQ_INT(m[0].prot, PROT_READ);
	CHECK(!strcmp(m[0].path, "/usr/bin/cat"));
	CHECK_EQ_INT(m[1].prot, PROT_READ | PROT_EXEC);
	CHECK_EQ_INT(m[1].offset, 0x2000);
	CHECK_EQ_INT(m[1].dev_major, 0xfe);
	CHECK_EQ_INT(m[1].dev_minor, 0);
	CHECK_EQ_INT(m[1].inode, 1234);
	CHECK(!m[1].deleted);
	CHECK(!strcmp(m[2].path, "[heap]"));
	CHECK_EQ_INT(m[2].prot, PROT_READ | PROT_WRITE);
	CHECK(!strcmp(m[3].path, "")); /* anonymous, one trailing space */
	CHECK_EQ_INT(m[4].dev_major, 0x103);
	CHECK_EQ_INT(m[4].dev_minor, 5);
	CHECK(m[4].inode == 98765432109ULL);
	CHECK(!strcmp(m[4].path, "/tmp/a dir/lib with spaces.so"));
	CHECK(!strcmp(m[5].path, "/tmp/gone.so"));
	CHECK(m[5].deleted);
	CHECK(!strcmp(m[7].path, "[vdso]"));
	CHECK(m[8].start == 0xffffffffff600000ULL && m[8].end == 0xffffffffff601000ULL);
	CHECK_EQ_INT(m[8].prot, PROT_EXEC);
	CHECK(!strcmp(m[8].path, "[vsyscall]"));
	sym_maps_free(m, n);
}

/* Each bad text has its bad line number. */
static void test_bad(void)
{
	static const struct {
		const char *text;
		size_t line;
	} cases[] = {
		{ "garbage\n", 1 },
		{ "00400000-00401000 r-xp 00000000 08:01 1 /a\nnope\n", 2 },
		{ "00400000 r-xp 00000000 08:01 1 /a\n", 1 },                     /* no end */
		{ "00401000-00400000 r-xp 00000000 08:01 1 /a\n", 1 },            /* end < start */
		{ "00400000-00401000 rzxp 00000000 08:01 1 /a\n", 1 },            /* perms */
		{ "00400000-00401000 r-x 00000000 08:01 1 /a\n", 1 },             /* 3 perms */
		{ "00400000-00401000 r-xp 0000000g 08:01 1 /a\n", 1 },            /* offset */
		{ "00400000-00401000 r-xp 00000000 0801 1 /a\n", 1 },             /* dev */
		{ "00400000-00401000 r-xp 00000000 08:01 x /a\n", 1 },            /* inode */
		{ "00400000-00401000 r-xp 00000000 08:01 12/a\n", 1 },            /* no space */
		{ "00400000-00401000 r-xp 00000000 08:01\n", 1 },                 /* truncated */
		{ "00400000-00401000 r-xp 00000000 08:01 1 /a\n\n", 2 },          /* empty line */
		{ "1ffffffffffffffff-2ffffffffffffffff r-xp 0 08:01 1 /a\n", 1 }, /* > 64 bits */
		{ "00400000-00401000 r-xp 00000000 08:01 99999999999999999999999 /a\n", 1 },
	};

	for (size_t i = 0; i < PSUP_ARRAY_SIZE(cases); i++) {
		struct sym_map *m = (struct sym_map *)1;
		size_t n = 7, bad = 0;
		int err = sym_maps_parse(cases[i].text, &m, &n, &bad);

		CHECK_EQ_INT(err, -EINVAL);
		CHECK_EQ_INT(bad, cases[i].line);
		CHECK(m == NULL && n == 0);
		if (err != -EINVAL || bad != cases[i].line)
			fprintf(stderr, "case %zu: %s", i, cases[i].text);
	}
}

static void test_empty_and_self(void)
{
	struct sym_map *m = NULL;
	size_t n = 1, bad = 0;
	char *text = NULL;
	bool found_vdso = false, found_exe = false;
	char exe[4096];
	ssize_t len;

	CHECK_EQ_INT(sym_maps_parse("", &m, &n, &bad), 0);
	CHECK_EQ_INT(n, 0);
	sym_maps_free(m, n);

	CHECK_EQ_INT(psup_read_file("/proc/self/maps", &text, NULL), 0);
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK(len > 0);
	exe[len > 0 ? len : 0] = '\0';
	CHECK_EQ_INT(sym_maps_parse(text, &m, &n, &bad), 0);
	CHECK(n > 5);
	for (size_t i = 0; i < n; i++) {
		found_vdso |= !strcmp(m[i].path, "[vdso]");
		found_exe |= !strcmp(m[i].path, exe) && (m[i].prot & PROT_EXEC);
	}
	CHECK(found_vdso);
	CHECK(found_exe);
	sym_maps_free(m, n);
	free(text);
}

/* Maps file path, made to hold len bytes, with PROT_EXEC; NULL where this
 * file system refuses executable mappings (noexec). */
static void *map_exec_file(const char *path, size_t len)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	void *p = MAP_FAILED;

	if (fd >= 0 && ftruncate(fd, (off_t)len) == 0)
		p = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (fd >= 0)
		close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/* The kernel's answers to PROCMAP_QUERY are the executable lines of the
 * maps text ([vsyscall] aside), field for field, with a path holding a newline (escaped as
 * the text has it) and a deleted file among them. */
static void test_query_matches_text(void)
{
	char dir[] = "/tmp/psup-query-XXXXXX", nl[128], gone[128];
	struct sym_map *q = NULL, *t = NULL;
	size_t nq = 0, nt = 0, bad = 0, j = 0;
	void *a, *b;
	char *text = NULL;
	int err;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(nl, sizeof(nl), "%s/new\nline.so", dir);
	snprintf(gone, sizeof(gone), "%s/gone.so", dir);
	a = map_exec_file(nl, 8192);
	b = map_exec_file(gone, 4096);
	unlink(gone);
	err = sym_maps_query_exec(getpid(), &q, &nq);
	if (err == -ENOTTY || err == -EINVAL) {
		printf("# PROCMAP_QUERY: not on this kernel (%s); the text is read instead\n", strerror(-err));
	} else {
		CHECK_EQ_INT(err, 0);
		CHECK_EQ_INT(psup_read_file("/proc/self/maps", &text, NULL), 0);
		CHECK_EQ_INT(sym_maps_parse(text ? text : "", &t, &nt, &bad), 0);
		for (size_t i = 0; i < nt; i++) {
			/* The vsyscall page is the kernel's, in no process's
			 * list of mappings (and emulated: no code runs there) */
			if (!(t[i].prot & PROT_EXEC) || !strcmp(t[i].path, "[vsyscall]"))
				continue;
			CHECK(j < nq);
			if (j >= nq)
				break;
			CHECK(t[i].start == q[j].start && t[i].end == q[j].end && t[i].offset == q[j].offset);
			CHECK(t[i].inode == q[j].inode && t[i].dev_major == q[j].dev_major &&
			      t[i].dev_minor == q[j].dev_minor);
			CHECK_EQ_INT(t[i].prot, q[j].prot);
			CHECK_EQ_INT(t[i].deleted, q[j].deleted);
			CHECK(!strcmp(t[i].path, q[j].path));
			if (strcmp(t[i].path, q[j].path))
				fprintf(stderr, "text '%s', query '%s'\n", t[i].path, q[j].path);
			j++;
		}
		CHECK_EQ_INT(j, nq);
		if (a && b) {
			bool seen_nl = false, seen_gone = false;

			for (size_t i = 0; i < nq; i++) {
				seen_nl |= q[i].start == (uintptr_t)a && strstr(q[i].path, "/new\\012line.so");
				seen_gone |= q[i].start == (uintptr_t)b && q[i].deleted && strstr(q[i].path, "/gone.so");
			}
			CHECK(seen_nl);
			CHECK(seen_gone);
		} else {
			printf("# %s refuses executable mappings: the test's own files not compared\n", dir);
		}
	}
	sym_maps_free(q, nq);
	sym_maps_free(t, nt);
	free(text);
	/* Refused: at once, without a query. */
	sym_maps_query_refuse();
	CHECK_EQ_INT(sym_maps_query_exec(getpid(), &q, &nq), -ENOTTY);
	CHECK_EQ_INT(nq, 0);
	if (a)
		munmap(a, 8192);
	if (b)
		munmap(b, 4096);
	unlink(nl);
	rmdir(dir);
}

static __attribute__((noinline)) int self_marker(int x)
{
	return x * 7 + 1;
}

/* A space over this process: its own function resolves, an address in no
 * mapping resolves to nothing, fork copies, exec forgets then refreshes. */
static void test_space_self(void)
{
	struct sym_space *sp = NULL, *child = NULL;
	struct sym_loc loc;
	uint64_t pc = (uint64_t)(uintptr_t)&self_marker;

	CHECK_EQ_INT(sym_space_new(getpid(), &sp), 0);
	if (!sp)
		return;
	CHECK_EQ_INT(sym_space_pid(sp), getpid());
	CHECK_EQ_INT(sym_space_resolve(sp, pc, false, &loc), 0);
	CHECK(loc.nframes >= 1);
	CHECK(loc.nframes >= 1 && loc.frames[0].function &&
	      !strcmp(loc.frames[0].function, "self_marker"));
	CHECK(strstr(loc.image, "test-symbols") != NULL);

	CHECK_EQ_INT(sym_space_resolve(sp, 16, false, &loc), 0);
	CHECK_EQ_INT(loc.nframes, 0);
	CHECK(!strcmp(loc.image, "[unknown]"));

	CHECK_EQ_INT(sym_space_fork(sp, getpid(), &child), 0);
	if (child) {
		CHECK_EQ_INT(sym_space_resolve(child, pc, false, &loc), 0);
		CHECK(loc.nframes >= 1 && loc.frames[0].function &&
		      !strcmp(loc.frames[0].function, "self_marker"));
	}
	sym_space_free(child);

	sym_space_exec(sp);
	CHECK_EQ_INT(sym_space_resolve(sp, pc, false, &loc), 0);
	CHECK(loc.nframes >= 1 && loc.frames[0].function &&
	      !strcmp(loc.frames[0].function, "self_marker"));
	CHECK_EQ_INT(sym_space_refresh(sp), 0);
	sym_space_free(sp);
	sym_space_free(NULL);

	CHECK_EQ_INT(sym_space_new(-1, &sp), -ESRCH);
	CHECK_EQ_INT(self_marker(1), 8);
}

/* The maps of a process that is gone, from what mmap records told: this
 * program's own text resolves through the mapping told, a mapping told
 * over others cuts them (a part outside it stays), the same one told again
 * changes nothing, and an exec forgets them all. */
static void test_space_map_add(void)
{
	struct sym_space *sp = NULL, *self = NULL;
	struct sym_mapping *own;
	uint64_t pc = (uint64_t)(uintptr_t)&self_marker;
	struct sym_loc loc;
	const char *path;
	pid_t child = fork();

	if (child == 0) {
		pause();
		_exit(0);
	}
	CHECK(child > 0);
	if (child <= 0)
		return;
	CHECK_EQ_INT(sym_space_new(child, &sp), 0);
	CHECK_EQ_INT(sym_space_new(getpid(), &self), 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	own = self ? sym_space_find(self, pc, false) : NULL;
	CHECK(own != NULL);
	if (!sp || !own)
		goto out;
	sym_space_exec(sp);
	CHECK(sym_space_mapping_path(sp, pc) == NULL); /* forgotten; /proc is gone */

	struct sym_map m = {
		.start = own->start,
		.end = own->end,
		.offset = own->offset,
		.inode = own->inode,
		.dev_major = (unsigned)(own->dev >> 32),
		.dev_minor = (unsigned)own->dev,
		.prot = PROT_READ | PROT_EXEC,
		.path = (char *)own->path,
	};
	CHECK_EQ_INT(sym_space_map_add(sp, &m), 0);
	memset(&loc, 0, sizeof(loc));
	CHECK_EQ_INT(sym_space_resolve(sp, pc, false, &loc), 0);
	CHECK(loc.nframes >= 1 && loc.frames[0].function &&
	      !strcmp(loc.frames[0].function, "self_marker"));
	CHECK_EQ_INT(sym_space_map_add(sp, &m), 0); /* told again: kept */
	CHECK_EQ_INT(sym_space_resolve(sp, pc, false, &loc), 0);
	CHECK(loc.nframes >= 1 && loc.frames[0].function &&
	      !strcmp(loc.frames[0].function, "self_marker"));
	/* The same file's code elsewhere, as another process maps it: the
	 * same key at the same file offset, another a byte further. */
	struct sym_map moved = m;
	uint64_t key = sym_space_code_key(self, pc), moved_pc = 0x50000000 + (pc - own->start);

	moved.start = 0x50000000;
	moved.end = 0x50000000 + (own->end - own->start);
	CHECK_EQ_INT(sym_space_map_add(sp, &moved), 0);
	CHECK(key != 0);
	CHECK(sym_space_code_key(sp, pc) == key);
	CHECK(sym_space_code_key(sp, moved_pc) == key);
	CHECK(sym_space_code_key(sp, moved_pc + 1) != key);
	moved.start = 0x60000000; /* by another path (a chroot's) */
	moved.end = 0x60000000 + (own->end - own->start);
	moved.path = "/jail/bin/self";
	CHECK_EQ_INT(sym_space_map_add(sp, &moved), 0);
	CHECK(sym_space_code_key(sp, 0x60000000 + (pc - own->start)) == key);
	moved.start = 0x50000000;
	moved.end = 0x50000000 + (own->end - own->start);
	moved.path = (char *)own->path;
	moved.offset += 4096; /* another part of the file there */
	CHECK_EQ_INT(sym_space_map_add(sp, &moved), 0);
	CHECK(sym_space_code_key(sp, moved_pc) != key);
	CHECK(sym_space_code_key(sp, 0x40000000) == 0); /* no mapping */

	/* Overlaps, below this program's mappings. */
	struct sym_map a = { .start = 0x10000, .end = 0x20000, .prot = PROT_EXEC, .path = "/a" };
	struct sym_map b = { .start = 0x14000, .end = 0x15000, .prot = PROT_EXEC, .path = "/b" };
	struct sym_map c = { .start = 0x11000, .end = 0x19000, .prot = PROT_EXEC, .path = "/c (deleted)" };
	struct sym_map d = { .start = 0x8000, .end = 0x30000, .prot = PROT_EXEC, .path = "[vdso]" };
	struct sym_map bad = { .start = 0x40000, .end = 0x40000, .prot = PROT_EXEC, .path = "/e" };

	CHECK_EQ_INT(sym_space_map_add(sp, &a), 0);
	CHECK_EQ_INT(sym_space_map_add(sp, &b), 0);
	path = sym_space_mapping_path(sp, 0x12000);
	CHECK(path && !strcmp(path, "/a"));
	path = sym_space_mapping_path(sp, 0x14800);
	CHECK(path && !strcmp(path, "/b"));
	path = sym_space_mapping_path(sp, 0x16000);
	CHECK(path && !strcmp(path, "/a"));
	CHECK_EQ_INT(sym_space_map_add(sp, &c), 0);
	path = sym_space_mapping_path(sp, 0x10800);
	CHECK(path && !strcmp(path, "/a"));
	path = sym_space_mapping_path(sp, 0x14800);
	CHECK(path && !strcmp(path, "/c"));          /* " (deleted)" taken off */
	CHECK(sym_space_code_key(sp, 0x14800) == 0); /* deleted */
	CHECK(sym_space_code_key(sp, 0x10800) == 0); /* no inode */
	path = sym_space_mapping_path(sp, 0x19800);
	CHECK(path && !strcmp(path, "/a"));
	CHECK(sym_space_mapping_path(sp, 0x20000) == NULL);
	CHECK_EQ_INT(sym_space_map_add(sp, &bad), -EINVAL);
	CHECK_EQ_INT(sym_space_map_add(sp, &d), 0); /* over all three */
	path = sym_space_mapping_path(sp, 0x10800);
	CHECK(path && !strcmp(path, "[vdso]"));
	path = sym_space_mapping_path(sp, 0x19800);
	CHECK(path && !strcmp(path, "[vdso]"));
	CHECK_EQ_INT(sym_space_resolve(sp, pc, false, &loc), 0); /* untouched above */
	CHECK(loc.nframes >= 1 && loc.frames[0].function &&
	      !strcmp(loc.frames[0].function, "self_marker"));
	/* A JIT's code, page by page from the top down and then up: one
	 * mapping, as /proc shows it; inside it, a page told again changes
	 * nothing. */
	sym_space_exec(sp);
	unsigned refused = 0;
	for (uint64_t pg = 0; pg < 20000; pg++) {
		uint64_t at = pg < 10000 ? 0x7f0000000000 - pg * 4096 : 0x7f0000001000 + (pg - 10000) * 4096;
		struct sym_map j = { .start = at, .end = at + 4096, .prot = PROT_READ | PROT_EXEC, .path = "//anon" };

		refused += sym_space_map_add(sp, &j) != 0;
	}
	CHECK_EQ_INT(refused, 0);
	struct sym_map again = { .start = 0x7f0000000000, .end = 0x7f0000001000, .prot = PROT_READ | PROT_EXEC, .path = "//anon" };
	CHECK_EQ_INT(sym_space_map_add(sp, &again), 0);
	path = sym_space_mapping_path(sp, 0x7f0000000000 - 9999 * 4096);
	CHECK(path && !strcmp(path, ""));
	path = sym_space_mapping_path(sp, 0x7f0000001000 + 9999 * 4096 + 4095);
	CHECK(path && !strcmp(path, ""));
	CHECK_EQ_INT(sp->nmaps, 1);
	CHECK(sym_space_code_key(sp, 0x7f0000000000) == 0); /* anonymous */
	sym_space_exec(sp);
	CHECK(sym_space_mapping_path(sp, 0x10800) == NULL);
out:
	sym_space_free(sp);
	sym_space_free(self);
}

/* JIT code named by the process's perf map file, read again as it grows
 * (a later line for the same code wins) and kept once the file is gone. */
static void test_perfmap(void)
{
	struct sym_space *sp = NULL;
	struct sym_loc loc;
	char path[64];
	uint8_t *code;
	uint64_t a, b;
	FILE *f;

	code = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(code != MAP_FAILED);
	if (code == MAP_FAILED)
		return;
	a = (uint64_t)(uintptr_t)code;
	b = a + 4096;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		goto out;
	fprintf(f, "not a line\n%" PRIx64 " 100 LFoo;::bar (interpreted)\n", a);
	fflush(f);
	CHECK_EQ_INT(sym_space_new(getpid(), &sp), 0);
	if (!sp)
		goto out;
	CHECK_EQ_INT(sym_space_resolve(sp, a + 0x10, false, &loc), 0);
	CHECK(loc.nframes == 1 && !strcmp(loc.frames[0].function, "LFoo;::bar (interpreted)"));
	CHECK(!strcmp(loc.image, path));
	CHECK_EQ_INT(sym_space_resolve(sp, a + 0x100, false, &loc), 0); /* past its end */
	CHECK_EQ_INT(loc.nframes, 0);
	CHECK_EQ_INT(sym_space_resolve(sp, b, false, &loc), 0);
	CHECK_EQ_INT(loc.nframes, 0);
	/* the JIT compiles more (and recompiles a): the file grows */
	fprintf(f, "0x%" PRIx64 " 0x40 jit_b\n%" PRIx64 " 100 LFoo;::bar (compiled)\n", b, a);
	fclose(f);
	usleep(20 * 1000); /* past the stat rate limit */
	CHECK_EQ_INT(sym_space_resolve(sp, b + 0x3f, false, &loc), 0);
	CHECK(loc.nframes == 1 && !strcmp(loc.frames[0].function, "jit_b"));
	unlink(path);
	CHECK_EQ_INT(sym_space_resolve(sp, a + 0x10, false, &loc), 0);
	CHECK(loc.nframes == 1 && !strcmp(loc.frames[0].function, "LFoo;::bar (compiled)"));
	sym_space_free(sp);
	sp = NULL;

	/* Another user's file in /tmp names nothing of a process that is not
	 * theirs (run as root, this test can make one). */
	if (geteuid() == 0) {
		f = fopen(path, "w");
		CHECK(f != NULL);
		if (!f)
			goto out;
		fprintf(f, "%" PRIx64 " 100 planted\n", a);
		fclose(f);
		CHECK_EQ_INT(chown(path, 65534, 65534), 0);
		CHECK_EQ_INT(sym_space_new(getpid(), &sp), 0);
		if (!sp)
			goto out;
		CHECK_EQ_INT(sym_space_resolve(sp, a + 0x10, false, &loc), 0);
		CHECK_EQ_INT(loc.nframes, 0);
	}
out:
	unlink(path);
	sym_space_free(sp);
	munmap(code, 8192);
}

static bool str_is(char *got, const char *want)
{
	bool ok = got && !strcmp(got, want);

	if (!ok)
		fprintf(stderr, "demangled %s, expected %s\n", got ? got : "NULL", want);
	free(got);
	return ok;
}

static void test_demangle(void)
{
	char *probe = sym_demangle("_ZN3foo3barEv");

	if (!probe) {
		/* symbols/meson.build found no libiberty: names stay mangled. */
		printf("demangling not built in (no libiberty-dev): checks skipped\n");
		return;
	}
	free(probe);
	CHECK(str_is(sym_demangle("_ZN3foo3barEv"), "foo::bar()"));
	CHECK(str_is(sym_demangle("_ZNSt6vectorIiSaIiEE9push_backERKi"),
		     "std::vector<int, std::allocator<int> >::push_back(int const&)"));
	CHECK(str_is(sym_demangle("_ZN4core3ptr13drop_in_place17h1234567890abcdefE"),
		     "core::ptr::drop_in_place"));
	CHECK(str_is(sym_demangle("_RNvCs15kBYyAo9fc_7mycrate7example"), "mycrate::example"));
	CHECK(sym_demangle("main") == NULL);
	CHECK(sym_demangle("_Znotmangled") == NULL);
	CHECK(sym_demangle(NULL) == NULL);
}

/* Where a process maps a file (the unlock address of causal profiling): in
 * this process, libc's load base as the dynamic loader knows it. */
static void test_file_base(void)
{
	void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *f = h ? dlsym(h, "pthread_mutex_unlock") : NULL;
	uint64_t base = 0, off = 0;
	struct stat st;
	Dl_info di;
	dev_t dev;
	ino_t ino;

	CHECK(f && dladdr(f, &di) && di.dli_fname && stat(di.dli_fname, &st) == 0);
	CHECK(sym_maps_file_base(getpid(), st.st_dev, st.st_ino, &base) == 0);
	CHECK_EQ_INT(base, (uint64_t)(uintptr_t)di.dli_fbase);
	CHECK(sym_own_symbol("libc.so.6", "pthread_mutex_unlock", &off, &dev, &ino) == 0);
	CHECK(dev == st.st_dev && ino == st.st_ino);
	CHECK_EQ_INT(base + off, (uint64_t)(uintptr_t)f);
	/* a file not mapped, a symbol not there, a process not there */
	CHECK(sym_maps_file_base(getpid(), st.st_dev, (ino_t)1, &base) == -ENOENT);
	CHECK(sym_own_symbol("libc.so.6", "no_such_symbol_psup", &off, &dev, &ino) == -ENOENT);
	CHECK(sym_maps_file_base(-1, st.st_dev, st.st_ino, &base) < 0);
	if (h)
		dlclose(h);
}

/* Two spaces mapping the same image share it: loaded once, its addresses
 * resolved once; released by both, it stays idle for the next space (a
 * fork and exec of the same program), until trimmed. */
static void test_image_shared(void)
{
	struct sym_space *a = NULL, *b = NULL, *c = NULL;
	struct sym_cache_stats s0, s1, s2, s3;
	struct sym_loc la, lb, lc;
	uint64_t pc = (uint64_t)(uintptr_t)&self_marker;

	sym_cache_trim();
	sym_cache_stats(&s0);
	CHECK_EQ_INT(s0.idle, 0);
	CHECK_EQ_INT(sym_space_new(getpid(), &a), 0);
	CHECK_EQ_INT(sym_space_new(getpid(), &b), 0);
	if (!a || !b)
		goto out;
	CHECK_EQ_INT(sym_space_resolve(a, pc, false, &la), 0);
	sym_cache_stats(&s1);
	CHECK_EQ_INT(s1.loads, s0.loads + 1); /* this program's image, once */
	CHECK_EQ_INT(sym_space_resolve(b, pc, false, &lb), 0);
	sym_cache_stats(&s2);
	CHECK_EQ_INT(s2.loads, s1.loads); /* b shares a's image */
	CHECK_EQ_INT(s2.reuses, s1.reuses + 1);
	CHECK_EQ_INT(s2.resolve_hits, s1.resolve_hits + 1); /* and its answer */
	CHECK(la.nframes >= 1 && lb.nframes == la.nframes && la.image == lb.image &&
	      la.frames[0].function == lb.frames[0].function && la.offset == lb.offset &&
	      la.frames[0].line == lb.frames[0].line);
	sym_space_free(a);
	sym_space_free(b);
	a = b = NULL;
	sym_cache_stats(&s3);
	CHECK(s3.idle >= 1);
	/* a new space (another process of the same program) revives it */
	CHECK_EQ_INT(sym_space_new(getpid(), &c), 0);
	if (c) {
		CHECK_EQ_INT(sym_space_resolve(c, pc, false, &lc), 0);
		sym_cache_stats(&s2);
		CHECK_EQ_INT(s2.loads, s3.loads);
		CHECK(s2.revived >= s3.revived + 1);
		CHECK(lc.nframes >= 1 && lc.frames[0].function &&
		      !strcmp(lc.frames[0].function, "self_marker"));
	}
out:
	sym_space_free(a);
	sym_space_free(b);
	sym_space_free(c);
	sym_cache_trim();
	sym_cache_stats(&s3);
	CHECK_EQ_INT(s3.idle, 0);
}

/*
 * A process that ends with samples still in the rings: its space is read at
 * its exit stop (sym_space_snapshot()), and after it is gone an address of
 * a file it mapped and that was deleted still resolves (the image was
 * opened through map_files while it lived).
 */
static void test_snapshot_gone(void)
{
	char tmpl[] = "/tmp/psup-snapshot-XXXXXX", exe[4096];
	struct sym_space *sp = NULL, *self = NULL;
	struct sym_mapping *own;
	uint64_t pc = (uint64_t)(uintptr_t)&self_marker, start = 0;
	int fd = mkstemp(tmpl), src, pipefd[2] = { -1, -1 };
	struct sym_loc loc;
	ssize_t len, k;
	pid_t child = -1;
	char buf[65536];

	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	src = len > 0 ? (exe[len] = '\0', open(exe, O_RDONLY)) : -1;
	CHECK(fd >= 0 && src >= 0 && pipe(pipefd) == 0);
	if (fd < 0 || src < 0 || pipefd[0] < 0)
		goto out;
	while ((k = read(src, buf, sizeof(buf))) > 0)
		CHECK(write(fd, buf, (size_t)k) == k);
	child = fork();
	if (child == 0) {
		struct stat st;
		void *p = fstat(fd, &st) ? MAP_FAILED
					 : mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC,
						MAP_PRIVATE, fd, 0);
		uint64_t a = p == MAP_FAILED ? 0 : (uint64_t)(uintptr_t)p;

		if (write(pipefd[1], &a, sizeof(a)) != sizeof(a))
			_exit(1);
		pause();
		_exit(0);
	}
	CHECK(child > 0 && read(pipefd[0], &start, sizeof(start)) == sizeof(start) && start);
	unlink(tmpl);
	CHECK_EQ_INT(sym_space_new(getpid(), &self), 0);
	own = self ? sym_space_find(self, pc, false) : NULL;
	CHECK(own && sym_space_mapping_image(self, own));
	if (child <= 0 || !start || !own || !own->image)
		goto out;
	CHECK_EQ_INT(sym_space_new(child, &sp), 0);
	CHECK_EQ_INT(sp ? sym_space_snapshot(sp) : -1, 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	child = -1;
	/* The copy is mapped from offset 0, so its start is the ELF address 0
	 * of this program's image. */
	memset(&loc, 0, sizeof(loc));
	CHECK_EQ_INT(sp ? sym_space_resolve(sp, start + (pc - own->bias), false, &loc) : -1, 0);
	CHECK(loc.nframes >= 1 && loc.frames[0].function &&
	      !strcmp(loc.frames[0].function, "self_marker"));
out:
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	unlink(tmpl);
	if (fd >= 0)
		close(fd);
	if (src >= 0)
		close(src);
	if (pipefd[0] >= 0) {
		close(pipefd[0]);
		close(pipefd[1]);
	}
	sym_space_free(sp);
	sym_space_free(self);
}

int main(void)
{
	test_file_base();
	test_demangle();
	test_good();
	test_bad();
	test_empty_and_self();
	test_space_self();
	test_space_map_add();
	test_image_shared();
	test_snapshot_gone();
	test_perfmap();
	/* it turns the queries off for this process: the spaces again,
	 * over the maps' text */
	test_query_matches_text();
	test_space_self();
	test_snapshot_gone();
	return tap_done();
}
