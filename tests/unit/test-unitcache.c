/*
 * symbols/unitcache.c against the live path: sym_image_resolve()'s answers
 * (frames, files, lines, the symbol table's fallback) for addresses all
 * over libc (libc6-dbg) must be the same from libdw, from the units'
 * digests as they are made, and from the digests read back from their
 * files; then again after every file was cut short or had its tree
 * scrambled (each is found damaged, ignored and made again). Addresses: the
 * first, middle and last byte and one past the end of every unit's ranges
 * (every third unit), random ones in them, and the bounds of every run of
 * .debug_aranges (gaps between units, before the first, after the last).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "symbols/symbols-internal.h"
#include "tests/unit/image-fixture.h"
#include "tests/unit/tap.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

struct addrs {
	uint64_t *v;
	size_t n, cap;
};

static void add(struct addrs *a, uint64_t v)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 1024;
		a->v = realloc(a->v, a->cap * sizeof(*a->v));
		if (!a->v)
			abort();
	}
	a->v[a->n++] = v;
}

/* The addresses (image vaddrs) to ask, from img's DWARF. */
static void collect(struct sym_image *img, struct addrs *a)
{
	Dwarf_Addr bias;
	Dwarf *dw = dwfl_module_getdwarf(img->mod, &bias);
	Dwarf_Off off = 0, next;
	Dwarf_Aranges *ar;
	size_t hsize, nar;
	uint64_t x = 0x9e3779b97f4a7c15ULL, shift = bias - img->mod_bias;
	unsigned unit = 0;

	if (!dw)
		return;
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		Dwarf_Addr base, start, end;
		ptrdiff_t it = 0;

		if (unit++ % 3 == 0 && dwarf_offdie(dw, off + hsize, &cu))
			while ((it = dwarf_ranges(&cu, it, &base, &start, &end)) > 0 && end > start) {
				add(a, start + shift);
				add(a, start + (end - start) / 2 + shift);
				add(a, end - 1 + shift);
				add(a, end + shift);
				for (int i = 0; i < 6; i++)
					add(a, start + psup_rand_next(&x) % (end - start) + shift);
			}
		off = next;
	}
	if (dwarf_getaranges(dw, &ar, &nar) == 0)
		for (size_t i = 0; i < nar; i++) {
			Dwarf_Addr start;
			Dwarf_Word len;
			Dwarf_Off die;

			if (dwarf_getarangeinfo(dwarf_onearange(ar, i), &start, &len, &die) == 0) {
				if (start)
					add(a, start - 1 + shift);
				add(a, start + len - 1 + shift);
				add(a, start + len + shift);
				add(a, start + len + 1 + shift);
			}
		}
}

static char *answer(struct sym_image *img, uint64_t v)
{
	struct sym_loc loc;
	char *s = NULL, *t;

	memset(&loc, 0, sizeof(loc));
	sym_image_resolve(img, v, &loc);
	const char *near = loc.near ? loc.near : "-";

	if (asprintf(&s, "%u near=%s", loc.nframes, loc.nframes ? "" : near) < 0)
		abort();
	for (unsigned i = 0; i < loc.nframes; i++) {
		const struct sym_frame *f = &loc.frames[i];

		if (asprintf(&t, "%s | %s @ %s:%u", s, f->function ? f->function : "-", f->file ? f->file : "-",
			     f->line) < 0)
			abort();
		free(s);
		s = t;
	}
	return s;
}

/* Each answer of a fresh image against want[]; the differing count. */
static unsigned compare(const struct addrs *a, char **want, const char *what)
{
	struct sym_image *img;
	unsigned bad = 0;

	sym_cache_trim(); /* every image made again */
	img = fx_image_of(LIBC);
	if (!img)
		return 1;
	for (size_t i = 0; i < a->n; i++) {
		char *got = answer(img, a->v[i]);

		if (strcmp(got, want[i])) {
			if (bad++ < 5)
				printf("# %s: %#llx: %s, libdw: %s\n", what, (unsigned long long)a->v[i], got,
				       want[i]);
		}
		free(got);
	}
	sym_image_put(img);
	return bad;
}

/* Each cache file of the units: cut short, its first entries' nesting
 * broken, or its header's flags changed, in turn. */
static unsigned damage(const char *dir)
{
	char sub[4096], file[8192];
	struct dirent *de, *fe;
	DIR *top = opendir(dir), *d;
	unsigned n = 0;

	while (top && (de = readdir(top))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		if (!(d = opendir(sub)))
			continue;
		while ((fe = readdir(d))) {
			struct stat st;
			int fd;

			/* A placement table altered in place would give wrong
			 * units (as an altered symbol table gives wrong names):
			 * only cut short. */
			bool map = strstr(fe->d_name, ".units-") != NULL;

			if (!strstr(fe->d_name, ".unit"))
				continue;
			snprintf(file, sizeof(file), "%s/%s", sub, fe->d_name);
			if (stat(file, &st) < 0 || (fd = open(file, O_RDWR)) < 0)
				continue;
			unsigned kind = n++ % 4;

			if (kind == 1 || map || st.st_size < 200) {
				CHECK(ftruncate(fd, st.st_size / 2) == 0);
			} else if (kind == 0) {
				/* after the header: the first entry's parent and next */
				uint32_t junk[2] = { 7, 0 };
				CHECK(pwrite(fd, junk, sizeof(junk), 48) == (ssize_t)sizeof(junk));
			} else {
				/* the header's flags: "no line program" (its rows
				 * then dropped), or a flag no writer sets */
				uint32_t flags = kind == 2 ? 1 : 0x80000000u;
				CHECK(pwrite(fd, &flags, sizeof(flags), 12) == (ssize_t)sizeof(flags));
			}
			close(fd);
		}
		closedir(d);
	}
	if (top)
		closedir(top);
	return n;
}

int main(void)
{
	char dir[] = "/tmp/psup-test-unitcache-XXXXXX";
	struct sym_cache_stats cs;
	struct sym_image *img;
	struct addrs a = { 0 };
	char **want;
	uint64_t written;

	if (!mkdtemp(dir)) {
		CHECK(!"temporary directory");
		return tap_done();
	}
	setenv("PSUP_DEBUG_CACHE", dir, 1);
	/* libdw's answers: no image is cached below this. */
	sym_unit_cache_min_info = UINT64_MAX;
	img = fx_image_of(LIBC);
	if (!img || !img->mod || !dwfl_module_getdwarf(img->mod, &(Dwarf_Addr){ 0 })) {
		printf("# libc or its debug info (libc6-dbg) missing: skipped\n");
		CHECK(1);
		return tap_done();
	}
	collect(img, &a);
	want = calloc(a.n, sizeof(*want));
	if (!want)
		abort();
	for (size_t i = 0; i < a.n; i++)
		want[i] = answer(img, a.v[i]);
	sym_image_put(img);
	sym_cache_stats(&cs);
	CHECK(cs.unit_written == 0);
	printf("# libc: %zu addresses\n", a.n);
	CHECK(a.n > 10000);

	sym_unit_cache_min_info = 0;
	CHECK_EQ_INT(compare(&a, want, "digests made"), 0);
	sym_cache_stats(&cs);
	written = cs.unit_written;
	printf("# %llu files written\n", (unsigned long long)written);
	CHECK(written > 100);
	CHECK_EQ_INT(compare(&a, want, "digests read"), 0);
	sym_cache_stats(&cs);
	printf("# %llu files read\n", (unsigned long long)cs.unit_hits);
	CHECK(cs.unit_written == written);  /* none made again */
	CHECK(cs.unit_hits + 1 >= written); /* the placement table was written twice (the units' ranges added) */

	printf("# %u files damaged\n", damage(dir));
	CHECK_EQ_INT(compare(&a, want, "damaged files"), 0);
	sym_cache_stats(&cs);
	CHECK(cs.unit_written >= 2 * written - 1); /* each made again */
	CHECK_EQ_INT(compare(&a, want, "files made again"), 0);

	for (size_t i = 0; i < a.n; i++)
		free(want[i]);
	free(want);
	free(a.v);
	if (!getenv("PSUP_KEEP_TEST_FILES")) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		CHECK(system(cmd) == 0);
	}
	return tap_done();
}
