/*
 * An ELF file opened by path, for `psup annotate`: its build-id, the function
 * symbol around an address, its bytes, the source frames of each address
 * (through the shared image cache, so the same answers as when recording),
 * and Zydis's text of one instruction.
 */
#include "symbols/symbols.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <Zydis/Zydis.h>

#include "symbols/symbols-internal.h"

struct sym_file {
	struct sym_image *img;
	struct sym_map map;
};

int sym_file_open(const char *path, struct sym_file **out)
{
	struct sym_file *f;
	struct stat st;
	int err;

	if (stat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOEXEC;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->map.path = strdup(path);
	if (!f->map.path) {
		free(f);
		return -ENOMEM;
	}
	f->map.inode = st.st_ino;
	f->map.dev_major = major(st.st_dev);
	f->map.dev_minor = minor(st.st_dev);
	err = sym_image_get_file(0, &f->map, &f->img);
	if (!err && !f->img->elf)
		err = -ENOEXEC;
	if (err) {
		if (f->img)
			sym_image_put(f->img);
		free(f->map.path);
		free(f);
		return err;
	}
	*out = f;
	return 0;
}

void sym_file_free(struct sym_file *f)
{
	if (!f)
		return;
	sym_image_put(f->img);
	free(f->map.path);
	free(f);
}

const char *sym_file_build_id(const struct sym_file *f)
{
	return f->img->build_id;
}

int sym_file_resolve(struct sym_file *f, uint64_t vaddr, struct sym_loc *out)
{
	memset(out, 0, sizeof(*out));
	out->image = f->img->path;
	out->build_id = f->img->build_id;
	out->offset = vaddr;
	return sym_image_resolve(f->img, vaddr, out);
}

int sym_file_function_at(struct sym_file *f, uint64_t vaddr, uint64_t *start, uint64_t *size)
{
	struct sym_loc loc;
	GElf_Sym sym;
	GElf_Off off = 0;
	int err;

	err = sym_file_resolve(f, vaddr, &loc); /* opens the Dwfl */
	if (err)
		return err;
	if (!f->img->mod ||
	    !dwfl_module_addrinfo(f->img->mod, vaddr + f->img->mod_bias, &off, &sym, NULL, NULL,
				  NULL))
		return -ENOENT;
	if (off > vaddr || sym.st_size == 0)
		return -ENOENT;
	*start = vaddr - off;
	*size = sym.st_size;
	return 0;
}

bool sym_file_read(const struct sym_file *f, uint64_t vaddr, void *buf, size_t len)
{
	return sym_image_read(f->img, vaddr, buf, len);
}

unsigned sym_disasm(const uint8_t *code, size_t len, uint64_t addr, char *text, size_t textlen)
{
	ZydisDisassembledInstruction in;

	if (!len || !ZYAN_SUCCESS(ZydisDisassembleIntel(ZYDIS_MACHINE_MODE_LONG_64, addr, code, len,
							&in))) {
		snprintf(text, textlen, "(bad)");
		return 0;
	}
	snprintf(text, textlen, "%s", in.text);
	return in.info.length;
}
