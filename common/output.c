#include "common/output.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Issue 22: a failed run unlinked whatever -o named (a device node,
 * /dev/null, a link after truncating its target), and --force opened with
 * O_TRUNC through links, so a link planted in a world-writable directory
 * made root overwrite the file it named. Here a name is only ever replaced
 * (unlink, then O_CREAT|O_EXCL|O_NOFOLLOW), a link is followed only when
 * root or the caller made it, and only what this open created is removed.
 * Test: t0020-output-files.
 */

static int create_new(const char *path, struct psup_output *out)
{
	struct stat st;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0666);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int err = -errno;

		unlink(path);
		close(fd);
		return err;
	}
	*out = (struct psup_output){ .fd = fd, .created = true, .dev = st.st_dev, .ino = st.st_ino };
	return 0;
}

/* A character device or a FIFO, st as stat() saw it: opened without
 * blocking (a FIFO with no reader fails with ENXIO instead of waiting for
 * one), then made blocking, as a record's writes expect. */
static int open_stream(const char *path, const struct stat *st, bool follow,
		       struct psup_output *out)
{
	struct stat now;
	int fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
	int fl;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &now) < 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino ||
	    (fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		close(fd); /* it changed under us */
		return -EAGAIN;
	}
	*out = (struct psup_output){ .fd = fd, .dev = now.st_dev, .ino = now.st_ino };
	return 0;
}

int psup_output_open(const char *path, unsigned flags, struct psup_output *out)
{
	bool force = flags & PSUP_OUTPUT_FORCE;
	struct stat lst, st;
	int fd;

	out->fd = -1;
	out->created = false;
	if (lstat(path, &lst) < 0)
		return errno == ENOENT ? create_new(path, out) : -errno;
	st = lst;
	if (S_ISLNK(lst.st_mode)) {
		bool trusted = lst.st_uid == 0 || lst.st_uid == geteuid();

		if (!trusted || stat(path, &st) < 0)
			goto replace; /* another user's link, or dangling */
		if (S_ISREG(st.st_mode)) {
			if (!force)
				return -EEXIST;
			/* Truncated only once the open file is the one stat
			 * saw: the link may be swapped in between. */
			struct stat fst;

			fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
			if (fd < 0)
				return -errno;
			if (fstat(fd, &fst) < 0 || fst.st_dev != st.st_dev || fst.st_ino != st.st_ino) {
				close(fd);
				return -EAGAIN;
			}
			if (ftruncate(fd, 0) < 0) {
				int err = -errno;

				close(fd);
				return err;
			}
			*out = (struct psup_output){ .fd = fd, .dev = st.st_dev, .ino = st.st_ino };
			return 0;
		}
	}
	if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
		return open_stream(path, &st, S_ISLNK(lst.st_mode), out);
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return -ENOTSUP;
replace:
	if (!force)
		return -EEXIST;
	if (unlink(path) < 0)
		return -errno;
	return create_new(path, out);
}

void psup_output_discard(const struct psup_output *o, const char *path)
{
	struct stat st;

	if (o->created && lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == o->dev &&
	    st.st_ino == o->ino)
		unlink(path);
}

const char *psup_output_strerror(int err)
{
	switch (err) {
	case -EEXIST:
		return "it already exists; name another file, or use --force to replace it";
	case -ENXIO:
		return "FIFO has no reader; start the reader first";
	case -ENOTSUP:
		return "not a regular file, a character device or a FIFO";
	case -EAGAIN:
		return "it changed while psup opened it";
	default:
		return strerror(-err);
	}
}
