/*
 * How long psup takes to make an image's symbol table, the first cost of
 * symbolizing a big binary's samples (symbols/symtab.c): the image opened as
 * a mapping of this process would give it, then sym_symtab_new() timed on
 * its module, twice.
 *
 *   build/tests/bench/symtab-build FILE...
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/util.h"
#include "symbols/symbols-internal.h"

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE...\n", argv[0]);
		return 2;
	}
	for (int a = 1; a < argc; a++) {
		struct sym_map m = { .path = argv[a] };
		struct sym_image *img = NULL;
		struct sym_symtab *t1 = NULL, *t2 = NULL;
		struct sym_loc loc;
		struct stat st;

		if (stat(argv[a], &st) < 0) {
			perror(argv[a]);
			return 1;
		}
		m.inode = st.st_ino;
		m.dev_major = major(st.st_dev);
		m.dev_minor = minor(st.st_dev);
		if (sym_image_get_file(getpid(), &m, &img) < 0) {
			fprintf(stderr, "%s: cannot open\n", argv[a]);
			return 1;
		}
		memset(&loc, 0, sizeof(loc));
		uint64_t t0 = psup_now_ns();
		sym_image_resolve(img, 0, &loc); /* opens the module, makes its table */
		uint64_t t1n = psup_now_ns();
		if (!img->mod || sym_symtab_new(img->mod, &t1) < 0) {
			fprintf(stderr, "%s: no module\n", argv[a]);
			return 1;
		}
		uint64_t t2n = psup_now_ns();
		sym_symtab_new(img->mod, &t2);
		uint64_t t3n = psup_now_ns();
		printf("%s: first resolve %.2f ms; symbol table %.2f ms, again %.2f ms (%zu symbols)\n", argv[a],
		       (t1n - t0) / 1e6, (t2n - t1n) / 1e6, (t3n - t2n) / 1e6, sym_symtab_count(t1));
		sym_symtab_free(t1);
		sym_symtab_free(t2);
		sym_image_put(img);
	}
	return 0;
}
