/*
 * The symbols tests' image of a file: through the image cache, as a
 * mapping of this process would give it. Header only.
 */
#ifndef PSUP_TESTS_IMAGE_FIXTURE_H
#define PSUP_TESTS_IMAGE_FIXTURE_H

#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "symbols/symbols-internal.h"

/* path's image, its DWARF and symbol table opened (an address resolved);
 * NULL when path is absent. Release with sym_image_put(). */
static inline struct sym_image *fx_image_of(const char *path)
{
	struct sym_map m = { .path = (char *)path };
	struct sym_image *img = NULL;
	struct sym_loc tmp;
	struct stat st;

	if (stat(path, &st) < 0)
		return NULL;
	m.inode = st.st_ino;
	m.dev_major = major(st.st_dev);
	m.dev_minor = minor(st.st_dev);
	if (sym_image_get_file(getpid(), &m, &img) < 0)
		return NULL;
	memset(&tmp, 0, sizeof(tmp));
	sym_image_resolve(img, 0, &tmp);
	return img;
}

#endif
