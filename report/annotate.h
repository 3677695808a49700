#ifndef PSUP_REPORT_ANNOTATE_H
#define PSUP_REPORT_ANNOTATE_H

/*
 * psup annotate: one function's samples per instruction address, read from
 * record files (the merged model keeps lines, not addresses), and the
 * listing of its instructions and source lines with those counts, hottest
 * marked, like `perf annotate --stdio`. The instructions come from the
 * caller (builtin/annotate.c disassembles the image with symbols/).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct rep_annotate;

/* Frames of one address, innermost (inlined callee) first, as in a loc. */
struct rep_annotate_frame {
	const char *function, *file; /* NULL when unknown */
	unsigned line;               /* 0 when unknown */
};

#define REP_ANNOTATE_MAX_FRAMES 16

/* One sampled address of the function: in image (build_id may be NULL). */
struct rep_annotate_addr {
	/* image: never NULL ("[unknown]" when the record names none) */
	const char *image, *build_id;
	uint64_t offset; /* ELF virtual address in the image (loc "offset") */
	uint64_t samples;
	unsigned nframes;
	struct rep_annotate_frame frames[REP_ANNOTATE_MAX_FRAMES];
};

/* Collects the samples of function (the outermost frame of their leaf
 * location, so code inlined into it counts) from the files loaded next.
 * Free with rep_annotate_free(). 0 or -ENOMEM. */
int rep_annotate_new(const char *function, struct rep_annotate **out);
void rep_annotate_free(struct rep_annotate *a);
/* Loads a record file as rep_profile_load() does (same messages in err). */
int rep_annotate_load(struct rep_annotate *a, const char *path, char *err, size_t errlen);
/* The sampled addresses, sorted by image, build-id, then offset. */
const struct rep_annotate_addr *rep_annotate_addrs(struct rep_annotate *a, size_t *n);
/* Up to max function names of the loaded files closest to the function's
 * (by edit distance, a case-insensitive substring first), nearest first;
 * pointers valid while a lives. Returns how many. */
size_t rep_annotate_close_names(const struct rep_annotate *a, const char **names, size_t max);

/* One instruction of the listing. text NULL: unknown (the image could not
 * be read); frames as sym_loc gives them, nframes 0 when unknown. */
struct rep_annotate_insn {
	uint64_t addr;
	const char *text;
	unsigned nframes;
	struct rep_annotate_frame frames[REP_ANNOTATE_MAX_FRAMES];
};

/*
 * Prints the listing of one image's part of the function: insns in address
 * order (every instruction of the function, or just the sampled addresses);
 * the samples of a[0..n) (that image's) are matched to them by address.
 * Each run of instructions of one innermost source line is headed by that
 * line with its samples (over the whole function), indented per inline
 * level and naming the inlined function; the hottest line is marked '*',
 * the hottest instruction '>'. Source text is read from the files the
 * frames name when they are readable. Returns 0 or -EIO.
 */
int rep_annotate_print(const char *function, const struct rep_annotate_addr *a, size_t n,
		       const struct rep_annotate_insn *insns, size_t ninsns, FILE *out);

#endif
