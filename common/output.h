#ifndef PSUP_COMMON_OUTPUT_H
#define PSUP_COMMON_OUTPUT_H

#include <stdbool.h>
#include <sys/types.h>

/* A file psup writes: a record (run, attach) or a report (report -o). */
struct psup_output {
	int fd;
	bool created; /* this open made the file: psup_output_discard() removes it */
	dev_t dev;
	ino_t ino;
};

enum psup_output_flags {
	PSUP_OUTPUT_FORCE = 1 << 0, /* replace an existing file */
};

/*
 * Opens path for writing, by the rules of README "Output files":
 * - a name that does not exist is created (O_EXCL, no link followed);
 * - an existing regular file, a dangling link, or a link owned by another
 *   user than root and the caller: -EEXIST, or with PSUP_OUTPUT_FORCE the
 *   name is removed and a new file created in its place (the old file's
 *   other hard links and a link's target are left alone);
 * - a link owned by root or the caller (/dev/stdout) is followed: to a
 *   regular file, -EEXIST or with PSUP_OUTPUT_FORCE truncated; to a stream
 *   as below;
 * - a character device or a FIFO is written as it is (no force needed,
 *   never truncated or removed); a FIFO with no reader: -ENXIO, at once;
 * - a directory: -EISDIR; anything else (a block device, a socket): -ENOTSUP.
 * The fd is the caller's to close.
 */
int psup_output_open(const char *path, unsigned flags, struct psup_output *out);

/* Removes path only if it is still the regular file o created (a failed run
 * leaves nothing behind, and never removes what was there before). Does not
 * close o->fd. */
void psup_output_discard(const struct psup_output *o, const char *path);

/* Why psup_output_open() refused path, for "cannot write PATH: ...". */
const char *psup_output_strerror(int err);

#endif
