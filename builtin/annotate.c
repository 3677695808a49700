/*
 * psup annotate: one function's instructions and source lines with their
 * samples, like `perf annotate --stdio`. The sampled addresses come from the
 * record files (report/annotate.c), the instructions from the image on disk
 * (symbols/disasm.c), checked against the recorded build-id.
 */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtin/builtin.h"
#include "common/log.h"
#include "report/annotate.h"
#include "report/escape.h"
#include "symbols/symbols.h"

static const char annotate_usage[] =
	"usage: psup annotate [options] FUNCTION [FILE...]\n"
	"\n"
	"Prints FUNCTION's instructions (disassembled from its program or library,\n"
	"which must still be the file that was recorded) and source lines, with\n"
	"the samples of each from the record files (default: psup.cbor). The\n"
	"hottest line is marked '*', the hottest instruction '>'; code inlined into\n"
	"FUNCTION is listed under its own source line, indented.\n"
	"\n"
	"  -h, --help          show this help\n"
	"\n"
	"Exit status: 0 on success, 1 when a file cannot be read or FUNCTION has no\n"
	"samples in it, 2 on bad usage.\n";

/* Up to 64 KiB of code per function: more is not a function to read. */
#define MAX_CODE (64u << 10)

/* Text from the record (untrusted) in a message: escaped into a heap string
 * the caller frees (NULL on ENOMEM). */
static char *escaped(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	rep_text_put(f, s, strlen(s));
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void not_found(const struct rep_annotate *a, const char *function, char **files,
		      int nfiles)
{
	const char *names[6];
	size_t n = rep_annotate_close_names(a, names, 6);
	char *fn = escaped(function), *list = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&list, &len);

	if (f) {
		for (size_t i = 0; i < n; i++) {
			fputs(i ? ", " : "", f);
			rep_text_put(f, names[i], strlen(names[i]));
		}
		fclose(f);
	}
	if (n)
		pr_err("no samples in function '%s' in %s%s; close names: %s", fn ? fn : "?",
		       files[0], nfiles > 1 ? " and the others" : "", list ? list : "?");
	else
		pr_err("no samples in function '%s' in %s%s, and no function of a close name; "
		       "'psup report' lists the sampled functions",
		       fn ? fn : "?", files[0], nfiles > 1 ? " and the others" : "");
	free(fn);
	free(list);
}

static void copy_frames(struct rep_annotate_insn *in, const struct sym_loc *l)
{
	in->nframes = l->nframes < REP_ANNOTATE_MAX_FRAMES ? l->nframes : REP_ANNOTATE_MAX_FRAMES;
	for (unsigned i = 0; i < in->nframes; i++)
		in->frames[i] = (struct rep_annotate_frame){ l->frames[i].function,
							     l->frames[i].file, l->frames[i].line };
}

/*
 * The instructions of the function around the image's hottest address,
 * from the file: *out (texts in *texts) for the caller to free. Returns
 * 0, or -errno when the file cannot be used (the caller then lists the
 * sampled addresses alone), having said why.
 */
static int disassemble(struct sym_file *f, const struct rep_annotate_addr *a, size_t n,
		       struct rep_annotate_insn **out, size_t *nout, char **texts)
{
	const struct rep_annotate_addr *hot = &a[0];
	uint64_t start, size, at = 0;
	struct rep_annotate_insn *ins = NULL;
	uint8_t *code = NULL;
	char *text = NULL;
	size_t k = 0;
	int err;

	for (size_t i = 1; i < n; i++)
		if (a[i].samples > hot->samples)
			hot = &a[i];
	err = sym_file_function_at(f, hot->offset, &start, &size);
	if (err)
		return err;
	if (size > MAX_CODE)
		size = MAX_CODE;
	code = malloc(size);
	ins = calloc(size, sizeof(*ins));
	text = malloc(size * 96);
	if (!code || !ins || !text) {
		err = -ENOMEM;
		goto fail;
	}
	if (!sym_file_read(f, start, code, size)) {
		err = -ERANGE;
		goto fail;
	}
	while (at < size) {
		struct sym_loc l;
		unsigned len;

		ins[k].addr = start + at;
		ins[k].text = text + k * 96;
		len = sym_disasm(code + at, size - at, start + at, text + k * 96, 96);
		if (!sym_file_resolve(f, start + at, &l))
			copy_frames(&ins[k], &l);
		k++;
		at += len ? len : 1;
	}
	free(code);
	*out = ins;
	*nout = k;
	*texts = text;
	return 0;
fail:
	free(code);
	free(ins);
	free(text);
	return err;
}

/* One image's part of the function: [a, a + n) share image and build-id. */
static int annotate_image(const char *function, const struct rep_annotate_addr *a, size_t n)
{
	struct rep_annotate_insn *ins = NULL;
	struct sym_file *f = NULL;
	char *texts = NULL, *img = escaped(a[0].image);
	size_t nins = 0;
	int err;

	err = sym_file_open(a[0].image, &f);
	if (err) {
		pr_warn("%s: cannot open it (%s): it was recorded, but is gone or unreadable now; "
			"listing the sampled addresses without instructions",
			img ? img : "?", strerror(-err));
	} else if (a[0].build_id && (!sym_file_build_id(f) ||
				     strcmp(a[0].build_id, sym_file_build_id(f)))) {
		char *recorded = escaped(a[0].build_id); /* the record's: any text */

		pr_warn("%s: build-id %s is not the recorded one (%s): the file was rebuilt or "
			"replaced since; listing the sampled addresses without instructions",
			img ? img : "?", sym_file_build_id(f) ? sym_file_build_id(f) : "(none)",
			recorded ? recorded : "?");
		free(recorded);
		err = -ESTALE;
	} else {
		err = disassemble(f, a, n, &ins, &nins, &texts);
		if (err)
			pr_warn("%s: cannot read the code of %s from it (%s); listing the sampled "
				"addresses without instructions",
				img ? img : "?", function, strerror(-err));
	}
	if (err) {
		nins = n;
		ins = calloc(n, sizeof(*ins));
		if (!ins) {
			err = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			ins[i].addr = a[i].offset;
			ins[i].nframes = a[i].nframes;
			memcpy(ins[i].frames, a[i].frames, sizeof(ins[i].frames));
		}
	}
	err = rep_annotate_print(function, a, n, ins, nins, stdout);
out:
	free(ins);
	free(texts);
	free(img);
	sym_file_free(f);
	return err;
}

int cmd_annotate(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static char *default_files[] = { "psup.cbor" };
	struct rep_annotate *a = NULL;
	const struct rep_annotate_addr *addrs;
	char err[512], **files;
	size_t n;
	int c, longindex = -1, nfiles, rc = 0;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:h", longopts, &longindex)) != -1) {
		switch (c) {
		case 'h':
			fputs(annotate_usage, stdout);
			return 0;
		default:
			return builtin_option_error("annotate", "annotate", c, longindex, longopts, argv);
		}
	}
	if (optind >= argc) {
		pr_err("annotate needs a function name: psup annotate FUNCTION [FILE...]");
		return 2;
	}
	if (rep_annotate_new(argv[optind], &a)) {
		pr_err("out of memory");
		return 1;
	}
	files = optind + 1 < argc ? argv + optind + 1 : default_files;
	nfiles = optind + 1 < argc ? argc - optind - 1 : 1;
	for (int i = 0; i < nfiles; i++) {
		if (rep_annotate_load(a, files[i], err, sizeof(err))) {
			pr_err("%s", err);
			rc = 1;
			goto out;
		}
	}
	addrs = rep_annotate_addrs(a, &n);
	if (!n) {
		not_found(a, argv[optind], files, nfiles);
		rc = 1;
		goto out;
	}
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && !strcmp(addrs[j].image, addrs[i].image) &&
				(addrs[j].build_id == addrs[i].build_id ||
				 (addrs[j].build_id && addrs[i].build_id &&
				  !strcmp(addrs[j].build_id, addrs[i].build_id)));
		     j++)
			;
		if (i)
			fputc('\n', stdout);
		if (annotate_image(argv[optind], addrs + i, j - i)) {
			pr_err("cannot write the listing: %s", strerror(errno));
			rc = 1;
			goto out;
		}
	}
out:
	rep_annotate_free(a);
	return rc;
}
