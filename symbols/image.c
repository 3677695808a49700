#include "symbols/symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#ifdef PSUP_HAVE_LIBIBERTY
#include <libiberty/demangle.h>
#endif

#include "common/log.h"
#include "symbols/symbols-internal.h"

/* ---- interned strings ---- */

struct sym_strpool_ent {
	struct sym_strpool_ent *next;
	uint64_t hash;
	char s[];
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

void sym_strpool_init(struct sym_strpool *p)
{
	p->buckets = NULL;
	p->nbuckets = 0;
	p->len = 0;
}

void sym_strpool_release(struct sym_strpool *p)
{
	for (size_t i = 0; i < p->nbuckets; i++) {
		struct sym_strpool_ent *e = p->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			free(e);
		}
	}
	free(p->buckets);
	sym_strpool_init(p);
}

static int strpool_grow(struct sym_strpool *p)
{
	size_t nb = p->nbuckets ? p->nbuckets * 2 : 64;
	struct sym_strpool_ent **b = calloc(nb, sizeof(*b));

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < p->nbuckets; i++) {
		struct sym_strpool_ent *e = p->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (nb - 1)];
			b[e->hash & (nb - 1)] = e;
		}
	}
	free(p->buckets);
	p->buckets = b;
	p->nbuckets = nb;
	return 0;
}

const char *sym_strpool_intern(struct sym_strpool *p, const char *s)
{
	uint64_t h = str_hash(s);
	struct sym_strpool_ent *e;
	size_t len;

	if (p->len >= p->nbuckets && strpool_grow(p))
		return NULL;
	for (e = p->buckets[h & (p->nbuckets - 1)]; e; e = e->next)
		if (e->hash == h && !strcmp(e->s, s))
			return e->s;
	len = strlen(s);
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return NULL;
	e->hash = h;
	memcpy(e->s, s, len + 1);
	e->next = p->buckets[h & (p->nbuckets - 1)];
	p->buckets[h & (p->nbuckets - 1)] = e;
	p->len++;
	return e->s;
}

/* ---- demangling ---- */

char *sym_demangle(const char *name)
{
	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
#ifdef PSUP_HAVE_LIBIBERTY
	/* libiberty tries Rust first only when asked for Rust alone, and
	 * then refuses C++; so ask twice. Legacy Rust names (_ZN...17h<hash>E)
	 * come out without the hash this way. */
	char *r = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_RUST);

	if (!r)
		r = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_GNU_V3);
	return r;
#else
	return NULL;
#endif
}

/* ---- the image cache ---- */

/*
 * Idle images (no space holds them) kept for the next process that maps
 * them: a build's compilers, assemblers and shells come back hundreds of
 * times, and each reload paid the ELF parse, the DWARF index and every
 * address's lookup again (70% of psup's CPU on a ninja build, issue 20).
 * Bounded by count and by their files' size (their DWARF's memory grows with
 * it), least recently released freed first.
 */
#define SYM_IDLE_MAX 32
#define SYM_IDLE_MAX_BYTES (1024ULL << 20)
/* Addresses remembered per image before its table starts over. */
#define SYM_RESOLVED_MAX 65536

struct sym_resolved {
	const char *symbols, *near;
	bool set_near; /* the lookup assigned near (else left as the caller had it) */
	unsigned nframes;
	struct sym_frame frames[];
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sym_image *cache_head;
static struct sym_image *idle_head, *idle_tail; /* most recently released first */
static uint64_t idle_bytes;
static struct sym_cache_stats cache_stats;

static void resolved_clear(struct sym_image *img)
{
	for (size_t i = 0; i < img->resolved.cap; i++)
		if (img->resolved.keys[i])
			free((void *)(uintptr_t)img->resolved.vals[i]);
	psup_u64map_clear(&img->resolved);
}

static void image_destroy(struct sym_image *img)
{
	resolved_clear(img);
	psup_u64map_release(&img->resolved);
	sym_symtab_free(img->symtab);
	if (img->dwfl)
		dwfl_end(img->dwfl);
	if (img->elf)
		elf_end(img->elf);
	if (img->fd >= 0)
		close(img->fd);
	sym_strpool_release(&img->names);
	free(img->cu_ranges);
	sym_cu_index_free(img->cu_scopes);
	sym_unit_cache_free(img->unit_cache);
	free(img->loads);
	free(img->build_id);
	free(img->path);
	free(img);
}

/* Under cache_lock. */
static void idle_unlink(struct sym_image *img)
{
	if (img->idle_prev)
		img->idle_prev->idle_next = img->idle_next;
	else
		idle_head = img->idle_next;
	if (img->idle_next)
		img->idle_next->idle_prev = img->idle_prev;
	else
		idle_tail = img->idle_prev;
	img->idle_prev = img->idle_next = NULL;
	idle_bytes -= img->size;
	cache_stats.idle--;
}

/* Under cache_lock: img leaves the cache (it is freed by the caller). */
static void cache_unlink(struct sym_image *img)
{
	for (struct sym_image **pp = &cache_head; *pp; pp = &(*pp)->next) {
		if (*pp == img) {
			*pp = img->next;
			break;
		}
	}
}

/* Under cache_lock: one more ref on a cached image; an idle one leaves the
 * idle list. */
static void cache_take(struct sym_image *img)
{
	if (!img->refs++) {
		idle_unlink(img);
		cache_stats.revived++;
	}
	cache_stats.reuses++;
}

/* Under cache_lock: unlinks the least recently released idle images past
 * the bound and returns them chained by next, for the caller to free. */
static struct sym_image *idle_evict(unsigned max, uint64_t max_bytes)
{
	struct sym_image *out = NULL;

	while (idle_tail && (cache_stats.idle > max || idle_bytes > max_bytes)) {
		struct sym_image *img = idle_tail;

		idle_unlink(img);
		cache_unlink(img);
		cache_stats.evictions++;
		img->next = out;
		out = img;
	}
	return out;
}

static void destroy_chain(struct sym_image *img)
{
	while (img) {
		struct sym_image *next = img->next;

		image_destroy(img);
		img = next;
	}
}

void sym_image_ref(struct sym_image *img)
{
	pthread_mutex_lock(&cache_lock);
	if (!img->refs) { /* idle: cached, not held */
		idle_unlink(img);
		cache_stats.revived++;
	}
	img->refs++;
	pthread_mutex_unlock(&cache_lock);
}

void sym_image_put(struct sym_image *img)
{
	struct sym_image *gone;

	if (!img)
		return;
	pthread_mutex_lock(&cache_lock);
	if (--img->refs) {
		pthread_mutex_unlock(&cache_lock);
		return;
	}
	img->idle_prev = NULL;
	img->idle_next = idle_head;
	if (idle_head)
		idle_head->idle_prev = img;
	else
		idle_tail = img;
	idle_head = img;
	idle_bytes += img->size;
	cache_stats.idle++;
	gone = idle_evict(SYM_IDLE_MAX, SYM_IDLE_MAX_BYTES);
	pthread_mutex_unlock(&cache_lock);
	destroy_chain(gone);
}

void sym_cache_trim(void)
{
	struct sym_image *gone;

	pthread_mutex_lock(&cache_lock);
	gone = idle_evict(0, 0);
	pthread_mutex_unlock(&cache_lock);
	destroy_chain(gone);
}

void sym_cache_stats(struct sym_cache_stats *out)
{
	pthread_mutex_lock(&cache_lock);
	*out = cache_stats;
	pthread_mutex_unlock(&cache_lock);
	sym_debug_cache_stats(&out->debug_hits, &out->debug_written);
	sym_symtab_cache_stats(&out->symtab_hits, &out->symtab_written);
	sym_unit_cache_stats(&out->unit_hits, &out->unit_written);
}

/* Reads an unsigned value of a DW_EH_PE_* encoding's size (the low nibble),
 * for the fixed fields of .eh_frame_hdr. Returns the size or 0 if unknown. */
static unsigned eh_enc_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return 8;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		return 4;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		return 2;
	default:
		return 0;
	}
}

/* .eh_frame_hdr: version, eh_frame_ptr_enc, fde_count_enc, table_enc,
 * eh_frame_ptr, fde_count, then the sorted (initial location, FDE) table.
 * libunwind's remote table search wants datarel|sdata4 entries, which is
 * what every linker writes. */
static void image_parse_eh_hdr(struct sym_image *img, uint64_t vaddr)
{
	uint8_t h[4], last[8];
	unsigned psize, csize;
	uint64_t count = 0;

	if (!sym_image_read(img, vaddr, h, sizeof(h)) || h[0] != 1)
		return;
	if (h[1] == DW_EH_PE_omit || h[2] == DW_EH_PE_omit ||
	    h[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
		return;
	psize = eh_enc_size(h[1]);
	csize = eh_enc_size(h[2]);
	if (!psize || !csize || (h[2] & 0x70) != 0)
		return;
	if (!sym_image_read(img, vaddr + 4 + psize, &count, csize)) /* little endian */
		return;
	if (count == 0 || count > img->size / 8)
		return;
	/* The table must be in the file; a corrupt count is refused here
	 * rather than trusted by the unwinder. */
	if (!sym_image_read(img, vaddr + 4 + psize + csize + (count - 1) * 8, last, 8))
		return;
	img->have_eh_hdr = true;
	img->eh_hdr_vaddr = vaddr;
	img->eh_table_vaddr = vaddr + 4 + psize + csize;
	img->eh_fde_count = count;
}

/* Opens img->fd as ELF and reads what the space and the unwinder need. */
static int image_init_elf(struct sym_image *img)
{
	GElf_Ehdr ehdr;
	size_t nph, size = 0;
	const void *build_id;
	ssize_t blen;
	uint64_t eh_hdr = 0;
	bool have_eh_hdr = false;

	elf_version(EV_CURRENT);
	img->elf = elf_begin(img->fd, ELF_C_READ_MMAP, NULL);
	if (!img->elf || elf_kind(img->elf) != ELF_K_ELF || !gelf_getehdr(img->elf, &ehdr))
		return -ENOEXEC;
	img->e_type = ehdr.e_type;
	img->data = (const uint8_t *)elf_rawfile(img->elf, &size);
	img->size = size;
	if (!img->data || elf_getphdrnum(img->elf, &nph))
		return -ENOEXEC;
	img->loads = calloc(nph ? nph : 1, sizeof(*img->loads));
	if (!img->loads)
		return -ENOMEM;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(img->elf, (int)i, &ph))
			continue;
		if (ph.p_type == PT_LOAD) {
			struct sym_load *l = &img->loads[img->nloads++];

			l->vaddr = ph.p_vaddr;
			l->memsz = ph.p_memsz;
			l->offset = ph.p_offset;
			l->filesz = ph.p_filesz;
			l->flags = ph.p_flags;
		} else if (ph.p_type == PT_GNU_EH_FRAME) {
			eh_hdr = ph.p_vaddr;
			have_eh_hdr = true;
		}
	}
	if (have_eh_hdr)
		image_parse_eh_hdr(img, eh_hdr);
	blen = dwelf_elf_gnu_build_id(img->elf, &build_id);
	if (blen > 0) {
		img->build_id = malloc((size_t)blen * 2 + 1);
		if (!img->build_id)
			return -ENOMEM;
		sym_hex(build_id, (size_t)blen, img->build_id);
	}
	return 0;
}

void sym_hex(const uint8_t *bytes, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[bytes[i] >> 4];
		out[2 * i + 1] = digits[bytes[i] & 15];
	}
	out[2 * n] = '\0';
}

static struct sym_image *image_alloc(const char *path, int fd)
{
	struct sym_image *img = calloc(1, sizeof(*img));

	if (!img)
		return NULL;
	img->fd = fd;
	img->refs = 1;
	sym_strpool_init(&img->names);
	psup_u64map_init(&img->resolved);
	img->path = strdup(path);
	if (!img->path) {
		free(img);
		return NULL;
	}
	return img;
}

/*
 * The file behind a mapping. maps gives the (dev, inode) actually mapped;
 * the path may since have been deleted or replaced by a new file (an
 * upgrade), whose symbols would be wrong. /proc/PID/map_files/<range> opens
 * the mapped file itself (needs CAP_SYS_ADMIN or, since 4.3, ptrace access
 * to pid). On overlayfs stat() reports the overlay's device, not the one
 * maps shows, so a path whose identity cannot be confirmed is still used
 * when map_files is not readable and the file was not deleted.
 *
 * The path is the program's to change: it may name a FIFO (whose open()
 * waits for a writer: psup's loop, and the program in its next ptrace stop,
 * waited for ever, issue 22 item 7), a device or a socket by now. Only a
 * regular file is read: never opened when stat() says otherwise, opened
 * O_NONBLOCK against a swap in between, and checked again after the open.
 * Test: t1094-mapped-file-replaced.
 */
static int open_regular(const char *path, struct stat *st)
{
	int fd;

	if (stat(path, st) < 0)
		return -errno;
	if (!S_ISREG(st->st_mode))
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

static int open_mapping(pid_t pid, const struct sym_map *m)
{
	char mf[96];
	int fd = -1, fd2, err = -ENOENT;
	struct stat st;

	if (!m->deleted) {
		fd = open_regular(m->path, &st);
		if (fd < 0) {
			err = fd;
			if (fd == -EINVAL)
				pr_debug("%s: not a regular file now", m->path);
		} else if (st.st_ino == m->inode &&
			   st.st_dev == makedev(m->dev_major, m->dev_minor)) {
			return fd;
		}
	}
	snprintf(mf, sizeof(mf), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid,
		 m->start, m->end);
	fd2 = open_regular(mf, &st);
	if (fd2 >= 0) {
		if (fd >= 0)
			close(fd);
		return fd2;
	}
	if (fd >= 0) {
		pr_debug("%s: cannot confirm it is the mapped file (%s: %s)", m->path, mf,
			 strerror(-fd2));
		return fd;
	}
	return m->deleted ? fd2 : err;
}

/* The file's identity beyond (device, inode): a file rewritten in place
 * (cp onto an existing program keeps its inode) changes them. */
static void file_stamp(int fd, int64_t *mtime_ns, int64_t *size)
{
	struct stat st;

	*mtime_ns = *size = -1;
	if (fstat(fd, &st))
		return;
	*mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	*size = (int64_t)st.st_size;
}

/* Under cache_lock. An idle image whose file changed since it was loaded
 * is unlinked and returned in *stale, for the caller to free. */
static struct sym_image *cache_find_file(const char *path, uint64_t dev, uint64_t inode,
					 struct sym_image **stale)
{
	for (struct sym_image *img = cache_head; img; img = img->next) {
		if (img->is_vdso || img->dev != dev || img->inode != inode || strcmp(img->path, path))
			continue;
		if (!img->refs) {
			int64_t mtime_ns, size;

			file_stamp(img->fd, &mtime_ns, &size);
			if (mtime_ns != img->mtime_ns || size != img->fsize) {
				idle_unlink(img);
				cache_unlink(img);
				cache_stats.evictions++;
				img->next = NULL;
				*stale = img;
				return NULL;
			}
		}
		cache_take(img);
		return img;
	}
	return NULL;
}

int sym_image_get_cached(const struct sym_map *m, struct sym_image **out)
{
	uint64_t dev = makedev(m->dev_major, m->dev_minor);
	struct sym_image *img, *stale = NULL;

	pthread_mutex_lock(&cache_lock);
	img = cache_find_file(m->path, dev, m->inode, &stale);
	pthread_mutex_unlock(&cache_lock);
	destroy_chain(stale);
	if (!img)
		return -ENOENT;
	*out = img;
	return 0;
}

int sym_image_get_file(pid_t pid, const struct sym_map *m, struct sym_image **out)
{
	uint64_t dev = makedev(m->dev_major, m->dev_minor);
	struct sym_image *img, *other, *stale = NULL;
	int fd, err;

	if (sym_image_get_cached(m, out) == 0)
		return 0;
	fd = open_mapping(pid, m);
	if (fd < 0)
		return fd;
	img = image_alloc(m->path, fd);
	if (!img) {
		close(fd);
		return -ENOMEM;
	}
	img->dev = dev;
	img->inode = m->inode;
	file_stamp(fd, &img->mtime_ns, &img->fsize);
	err = image_init_elf(img);
	if (err) {
		image_destroy(img);
		return err;
	}
	pthread_mutex_lock(&cache_lock);
	other = cache_find_file(m->path, dev, m->inode, &stale); /* lost a race */
	if (!other) {
		img->next = cache_head;
		cache_head = img;
		cache_stats.loads++;
	}
	pthread_mutex_unlock(&cache_lock);
	destroy_chain(stale);
	if (other) {
		image_destroy(img);
		img = other;
	}
	*out = img;
	return 0;
}

static int read_target(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	char path[64];
	ssize_t r;
	int fd;

	r = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (r == (ssize_t)len)
		return 0;
	/* process_vm_readv refuses pages the target cannot read itself; /proc
	 * PID/mem does not (the vdso is readable anyway, but be robust). */
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = pread(fd, buf, len, (off_t)addr);
	close(fd);
	if (r < 0)
		return -errno;
	return r == (ssize_t)len ? 0 : -EIO;
}

/* The vdso is the same for every process of a kernel, so the cache is keyed
 * by its bytes. Its copy goes into a memfd so that libelf and libdwfl open it
 * like any file. */
int sym_image_get_vdso(pid_t pid, uint64_t start, uint64_t end, struct sym_image **out)
{
	size_t len = (size_t)(end - start);
	struct sym_image *img = NULL;
	uint8_t *buf;
	int fd = -1, err;

	if (end <= start || len > (64u << 20))
		return -EINVAL;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	err = read_target(pid, start, buf, len);
	if (err)
		goto out;
	pthread_mutex_lock(&cache_lock);
	for (img = cache_head; img; img = img->next) {
		if (img->is_vdso && img->size == len && !memcmp(img->data, buf, len)) {
			cache_take(img);
			break;
		}
	}
	pthread_mutex_unlock(&cache_lock);
	if (img)
		goto out;
	fd = memfd_create("psup-vdso", MFD_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	if (write(fd, buf, len) != (ssize_t)len) {
		err = -EIO;
		close(fd);
		goto out;
	}
	img = image_alloc("[vdso]", fd);
	if (!img) {
		close(fd);
		err = -ENOMEM;
		goto out;
	}
	img->is_vdso = true;
	err = image_init_elf(img);
	if (err) {
		image_destroy(img);
		img = NULL;
		goto out;
	}
	pthread_mutex_lock(&cache_lock);
	img->next = cache_head;
	cache_head = img;
	cache_stats.loads++;
	pthread_mutex_unlock(&cache_lock);
out:
	free(buf);
	if (!err)
		*out = img;
	return err;
}

/* ---- addresses ---- */

int sym_image_bias(const struct sym_image *img, uint64_t start, uint64_t end,
		   uint64_t offset, bool exec, uint64_t *bias)
{
	uint64_t len = end - start;

	/* Segments need not be page aligned in the file: the page-aligned
	 * mapping of a writable segment may start inside the text segment's
	 * file range. Prefer the segment whose permissions match. */
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; i < img->nloads; i++) {
			const struct sym_load *l = &img->loads[i];

			if (pass == 0 && exec != !!(l->flags & PF_X))
				continue;
			if (l->filesz == 0 || l->offset >= offset + len ||
			    l->offset + l->filesz <= offset)
				continue;
			/* process(file off) = start + off - offset;
			 * vaddr(file off) = l->vaddr + off - l->offset */
			*bias = start - offset + l->offset - l->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

const struct sym_load *sym_image_load_at(const struct sym_image *img, uint64_t vaddr)
{
	for (unsigned i = 0; i < img->nloads; i++) {
		const struct sym_load *l = &img->loads[i];

		if (vaddr >= l->vaddr && vaddr - l->vaddr < l->memsz)
			return l;
	}
	return NULL;
}

bool sym_image_read(const struct sym_image *img, uint64_t vaddr, void *buf, size_t len)
{
	const struct sym_load *l = sym_image_load_at(img, vaddr);
	uint64_t off;

	if (!l || vaddr - l->vaddr + len > l->filesz)
		return false;
	off = l->offset + (vaddr - l->vaddr);
	if (off > img->size || img->size - off < len)
		return false;
	memcpy(buf, img->data + off, len);
	return true;
}

/* ---- DWARF and symbol tables ---- */

static char *debuginfo_path; /* NULL: libdwfl's default ":.debug:/usr/lib/debug" */
static const Dwfl_Callbacks dwfl_callbacks;

/* What the names libdwfl may open for a debug file are: any there, any
 * that is not a regular file. */
struct debug_names {
	bool any, irregular;
};

static void debug_name_stat(struct debug_names *dn, const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return;
	dn->any = true;
	dn->irregular |= !S_ISREG(st.st_mode);
}

/* The names find_debuginfo_in_path() (libdwfl) tries for file_name with the
 * default debuginfo_path: name (the .gnu_debuglink, else the file's name
 * with ".debug") in the file's directory and in its .debug/, and under
 * /usr/lib/debug followed by each tail of the directory; without a
 * debuglink, the file's own name in the last two too. */
static void debug_names_of(struct debug_names *dn, const char *file_name, const char *debuglink)
{
	const char *slash = strrchr(file_name, '/');
	const char *base = slash ? slash + 1 : file_name;
	int dirlen = slash ? (int)(slash - file_name) : 0;
	char made[PATH_MAX], path[3 * PATH_MAX];
	const char *names[2] = { debuglink, debuglink ? NULL : base };

	if (!debuglink) {
		snprintf(made, sizeof(made), "%s.debug", base);
		names[0] = made;
	}
	for (int i = 0; i < 2 && names[i]; i++) {
		const char *name = names[i];

		if (name[0] == '/') {
			debug_name_stat(dn, name);
			continue;
		}
		if (i == 0) { /* in its own directory (the bare name is the file) */
			snprintf(path, sizeof(path), "%.*s/%s", dirlen, file_name, name);
			debug_name_stat(dn, path);
		}
		snprintf(path, sizeof(path), "%.*s/.debug/%s", dirlen, file_name, name);
		debug_name_stat(dn, path);
		for (int at = 0; at <= dirlen; at++) {
			if (at < dirlen && file_name[at] != '/')
				continue;
			snprintf(path, sizeof(path), "/usr/lib/debug%.*s/%s", dirlen - at, file_name + at, name);
			debug_name_stat(dn, path);
		}
	}
}

/* Whether libdwfl's search of the debug file should be skipped for
 * file_name, said here (see find_debuginfo). */
static bool skip_debug_search(const char *file_name, const char *debuglink, bool *local_only)
{
	struct debug_names dn = { 0 };
	const char *urls = getenv("DEBUGINFOD_URLS");
	char *real;

	*local_only = false;
	if (!file_name)
		return false;
	debug_names_of(&dn, file_name, debuglink);
	real = realpath(file_name, NULL);
	if (real && strcmp(real, file_name))
		debug_names_of(&dn, real, debuglink);
	free(real);
	if (dn.irregular) {
		pr_debug("%s: a debug file candidate is not a regular file; not searched", file_name);
		return true;
	}
	*local_only = !dn.any && (!urls || !*urls);
	return false;
}

/*
 * libdwfl's search for the separate debug file opens the .gnu_debuglink name
 * next to the file, in its .debug/ and under /usr/lib/debug (the default
 * debuginfo_path), with a plain open(): the program's directory may hold a
 * FIFO under that name (issue 22 item 7, as for the file itself in
 * open_mapping()). Where one of those names is not a regular file, no debug
 * file is searched for (the symbol table still serves). Test:
 * t1094-mapped-file-replaced.
 *
 * Where none of those names exists and no debuginfod server is set (psup
 * unsets DEBUGINFOD_URLS while it records), only the search by build-id
 * is made: after a path search that finds nothing, libdwfl asks debuginfod,
 * and loading libdebuginfod (libcurl, GnuTLS and their libraries) to learn
 * that no server is set cost 3-4 ms once per run, plus a client per image
 * (java -version: 4 ms of psup's ~30, median of 15 interleaved pairs).
 */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			  char **debuginfo_file_name)
{
	/* The module's own debug file (asked again when the symbol table is
	 * read, if not found), or its dwz file (.gnu_debugaltlink), which is
	 * not cached: libdwfl asks for that one with its name as the debuglink
	 * and no CRC. */
	bool own = !debuglink_file || debuglink_crc, local_only;
	const unsigned char *id = NULL;
	GElf_Addr id_vaddr;
	int idlen = 0, fd, cfd;
	bool id_file = false;
	char *cached = NULL;

	if (own)
		idlen = dwfl_module_build_id(mod, &id, &id_vaddr);
	/* A compressed debug file is opened from its inflated copy
	 * (debugcache.c): libdw would inflate it on every run. The
	 * distribution's file by build-id is inflated before libdwfl opens it
	 * (its search by build-id keeps the file it opened). Found there,
	 * libdwfl searches no path: the names are not looked at. */
	if (idlen > 0 && (cfd = sym_debug_cache_by_id(id, (size_t)idlen, &cached, &id_file)) >= 0) {
		*debuginfo_file_name = cached;
		return cfd;
	}
	if (skip_debug_search(file_name, debuglink_file, &local_only))
		return -1;
	if (own && local_only)
		fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
						  debuglink_crc, debuginfo_file_name);
	else
		fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
						  debuglink_crc, debuginfo_file_name);
	/* Else what debuginfod-find fetched before the run. */
	if (fd < 0 && idlen > 0)
		fd = sym_debuginfod_cached(id, (size_t)idlen, debuginfo_file_name);
	/* Found by .gnu_debuglink (or in debuginfod's cache): libdwfl opens
	 * what we return. */
	if (fd >= 0 && idlen > 0 && !id_file &&
	    (cfd = sym_debug_cache_add(fd, id, (size_t)idlen, &cached)) >= 0) {
		close(fd);
		free(*debuginfo_file_name);
		*debuginfo_file_name = cached;
		fd = cfd;
	}
	return fd;
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

static bool is_function_symbol(const GElf_Sym *sym)
{
	return (GELF_ST_TYPE(sym->st_info) == STT_FUNC ||
		GELF_ST_TYPE(sym->st_info) == STT_GNU_IFUNC) &&
	       sym->st_shndx != SHN_UNDEF;
}

/* What the image offers (sym_loc.symbols). A full symbol table has local
 * function symbols (every gcc-linked program has crtstuff's), an export
 * table (.dynsym, what strip leaves) has none. Asking for the DWARF here
 * is what makes libdw look for a separate debug file: by build-id, by
 * .gnu_debuglink, and through debuginfod when DEBUGINFOD_URLS is set. */
static const char *image_symbols_kind(struct sym_image *img)
{
	Dwarf_Addr dwbias;
	bool exported = false;
	int n;

	if (dwfl_module_getdwarf(img->mod, &dwbias))
		return "dwarf";
	n = dwfl_module_getsymtab(img->mod);
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;

		if (!dwfl_module_getsym_info(img->mod, i, &sym, &addr, NULL, NULL, NULL) ||
		    !is_function_symbol(&sym))
			continue;
		if (GELF_ST_BIND(sym.st_info) == STB_LOCAL)
			return "symtab";
		exported = true;
	}
	return exported ? "dynsym" : "none";
}

/* One Dwfl per image, so that loading one image's DWARF never loads
 * another's. The module sits at its ELF addresses (base 0 added to p_vaddr);
 * mod_bias covers whatever libdwfl decides anyway. The separate debug file
 * is searched by build-id (/usr/lib/debug/.build-id/xx/rest.debug) and by
 * .gnu_debuglink next to the file, in .debug/ and under /usr/lib/debug,
 * checked against the build-id or the link's CRC. */
static void image_load_dwfl(struct sym_image *img)
{
	GElf_Addr bias = 0;
	const char *base;
	int fd;

	img->dwfl_tried = true;
	img->dwfl = dwfl_begin(&dwfl_callbacks);
	if (!img->dwfl)
		return;
	fd = fcntl(img->fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		goto fail;
	base = strrchr(img->path, '/');
	base = base ? base + 1 : img->path;
	dwfl_report_begin(img->dwfl);
	img->mod = dwfl_report_elf(img->dwfl, base, img->path, fd, 0, true);
	dwfl_report_end(img->dwfl, NULL, NULL);
	if (!img->mod) {
		close(fd); /* consumed only on success */
		pr_debug("%s: %s", img->path, dwfl_errmsg(-1));
		goto fail;
	}
	if (!dwfl_module_getelf(img->mod, &bias))
		goto fail;
	img->mod_bias = bias;
	img->symbols = image_symbols_kind(img);
	return;
fail:
	dwfl_end(img->dwfl);
	img->dwfl = NULL;
	img->mod = NULL;
}

/* The name of a subprogram or inlined subroutine DIE: the demangled
 * linkage name (qualified, with parameters) when there is one, else
 * DW_AT_name, both through abstract_origin/specification. */
const char *sym_die_function_name(struct sym_image *img, Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name;

	name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	if (name) {
		char *dm = sym_demangle(name);

		if (dm) {
			const char *pooled = sym_strpool_intern(&img->names, dm);

			free(dm);
			if (pooled)
				return pooled;
		}
	}
	return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
}

static const char *symbol_name(struct sym_image *img, const char *name)
{
	char *dm = sym_demangle(name);
	const char *pooled;

	if (!dm)
		return name;
	pooled = sym_strpool_intern(&img->names, dm);
	free(dm);
	return pooled ? pooled : name;
}

unsigned sym_scope_frames(const struct sym_scope_fn *fn, unsigned nfunc, const char *file, unsigned line,
			  struct sym_loc *out)
{
	unsigned n = 0;

	for (unsigned k = 0; k < nfunc; k++) {
		/* Deep inlining: keep the innermost frames and the real function. */
		if (n < SYM_MAX_FRAMES - 1 || k == nfunc - 1)
			out->frames[n++] = (struct sym_frame){ .function = fn[k].function, .file = file, .line = line };
		if (!fn[k].inlined)
			break;
		file = fn[k].call_file;
		line = fn[k].call_line;
	}
	return n;
}

/* eu-addr2line -i: the function scopes around addr (cuscope.c), with
 * each inlined subroutine's DW_AT_call_file/call_line. */
static unsigned resolve_dwarf(struct sym_image *img, Dwarf_Die *cudie, Dwarf_Addr addr, struct sym_loc *out)
{
	Dwarf_Die scopes[SYM_MAX_SCOPES];
	struct sym_scope_fn fn[SYM_MAX_SCOPES];
	Dwarf_Files *files = NULL;
	Dwarf_Line *line;
	const char *file = NULL;
	int nfunc, lineno = 0;

	nfunc = sym_cu_scopes(&img->cu_scopes, cudie, addr, scopes, SYM_MAX_SCOPES);
	if (nfunc <= 0)
		return 0;
	line = dwarf_getsrc_die(cudie, addr);
	if (line) {
		file = dwarf_linesrc(line, NULL, NULL);
		dwarf_lineno(line, &lineno);
	}
	if (dwarf_getsrcfiles(cudie, &files, NULL))
		files = NULL;
	for (int k = 0; k < nfunc; k++) {
		Dwarf_Die *die = &scopes[k];
		Dwarf_Attribute attr;
		Dwarf_Word v;

		fn[k] = (struct sym_scope_fn){ .function = sym_die_function_name(img, die),
					       .inlined = dwarf_tag(die) == DW_TAG_inlined_subroutine };
		if (!fn[k].inlined)
			continue;
		if (files && !dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &v))
			fn[k].call_file = dwarf_filesrc(files, v, NULL, NULL);
		if (!dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &v) && (int)v > 0)
			fn[k].call_line = (unsigned)(int)v;
	}
	return sym_scope_frames(fn, (unsigned)nfunc, file, lineno > 0 ? (unsigned)lineno : 0, out);
}

/* dwfl_module_addrinfo()'s name for modaddr, from the sorted table; the
 * table is read on first use. */
static const char *addr_symbol(struct sym_image *img, Dwarf_Addr modaddr)
{
	GElf_Sym sym;
	GElf_Off off;

	if (!img->symtab_tried) {
		img->symtab_tried = true;
		if (sym_symtab_new_cached(img->mod, img->build_id, &img->symtab, NULL) < 0)
			pr_debug("%s: no memory for the symbol table; asking libdw", img->path);
	}
	if (!img->symtab)
		return dwfl_module_addrinfo(img->mod, modaddr, &off, &sym, NULL, NULL, NULL);
	return sym_symtab_lookup(img->symtab, modaddr);
}

const char *sym_image_symbol_at(struct sym_image *img, uint64_t vaddr)
{
	return img->mod ? addr_symbol(img, vaddr + img->mod_bias) : NULL;
}

/* The executable section around vaddr: [*lo, *hi). */
static bool code_section_of(struct sym_image *img, uint64_t vaddr, uint64_t *lo, uint64_t *hi)
{
	Elf_Scn *scn = NULL;

	if (!img->elf)
		return false;
	while ((scn = elf_nextscn(img->elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) ||
		    !(sh.sh_flags & SHF_EXECINSTR) || sh.sh_type == SHT_NOBITS)
			continue;
		if (vaddr >= sh.sh_addr && vaddr - sh.sh_addr < sh.sh_size) {
			*lo = sh.sh_addr;
			*hi = sh.sh_addr + sh.sh_size;
			return true;
		}
	}
	return false;
}

/* sym_loc.near: the function that ends last before vaddr in vaddr's
 * section, when vaddr is in no function. A stripped program keeps only its
 * exported functions, so this names a region ("after memcpy"), never the
 * function the code belongs to: the report says "after". */
static const char *near_symbol(struct sym_image *img, uint64_t vaddr)
{
	uint64_t lo, hi, start, end;
	const char *name;

	if (!code_section_of(img, vaddr, &lo, &hi))
		return NULL;
	name = sym_symtab_function_below(img->symtab, vaddr + img->mod_bias, &start, &end);
	if (!name || start < img->mod_bias)
		return NULL;
	start -= img->mod_bias;
	end -= img->mod_bias;
	/* in another section, or vaddr inside it (then it is not "near") */
	if (start < lo || (end > vaddr && end != start))
		return NULL;
	return symbol_name(img, name);
}

static int cu_range_cmp(const void *a, const void *b)
{
	const struct sym_cu_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Every unit's address ranges (DW_AT_low_pc/high_pc or DW_AT_ranges), for
 * DWARF without .debug_aranges, which libdw needs to place an address in a
 * unit: Go's linker writes none. */
static void cu_ranges_build(struct sym_image *img, Dwarf *dw)
{
	Dwarf_Off off = 0, next;
	size_t hsize, cap = 0;

	img->cu_ranges_tried = true;
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Addr base, start, end;
		ptrdiff_t it = 0;
		Dwarf_Die die;

		if (!dwarf_offdie(dw, off + hsize, &die)) {
			off = next;
			continue;
		}
		while ((it = dwarf_ranges(&die, it, &base, &start, &end)) > 0) {
			if (end <= start)
				continue;
			if (img->ncu_ranges == cap) {
				size_t ncap = cap ? cap * 2 : 64;
				struct sym_cu_range *n = realloc(img->cu_ranges, ncap * sizeof(*n));

				if (!n)
					return;
				img->cu_ranges = n;
				cap = ncap;
			}
			img->cu_ranges[img->ncu_ranges++] =
				(struct sym_cu_range){ start, end, off + hsize };
		}
		off = next;
	}
	if (img->ncu_ranges > 1) /* none: a damaged or empty .debug_info */
		qsort(img->cu_ranges, img->ncu_ranges, sizeof(*img->cu_ranges), cu_range_cmp);
}

size_t sym_image_cu_ranges(struct sym_image *img, Dwarf *dw, const struct sym_cu_range **out)
{
	if (!img->cu_ranges_tried)
		cu_ranges_build(img, dw);
	*out = img->cu_ranges;
	return img->ncu_ranges;
}

bool sym_cu_range_find(const struct sym_cu_range *r, size_t n, uint64_t addr, uint64_t *die)
{
	size_t lo = 0, hi = n;

	while (lo < hi) { /* the last range starting at or before addr */
		size_t mid = lo + (hi - lo) / 2;

		if (r[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= r[lo - 1].end)
		return false;
	*die = r[lo - 1].die;
	return true;
}

/* The unit containing addr (a DWARF address) from cu_ranges, in *die. */
static Dwarf_Die *cu_ranges_find(struct sym_image *img, Dwarf_Addr addr, Dwarf_Die *die,
				 Dwarf_Addr *dwbias)
{
	Dwarf *dw = dwfl_module_getdwarf(img->mod, dwbias);
	uint64_t off;

	if (!dw)
		return NULL;
	if (!img->cu_ranges_tried)
		cu_ranges_build(img, dw);
	if (!sym_cu_range_find(img->cu_ranges, img->ncu_ranges, addr - *dwbias, &off))
		return NULL;
	return dwarf_offdie(dw, off, die);
}

static int image_resolve(struct sym_image *img, uint64_t vaddr, struct sym_loc *out)
{
	struct sym_unit_line row;
	Dwarf_Die cu_buf;
	Dwarf_Addr modaddr, dwbias = 0;
	Dwarf_Die *cudie;
	const char *name;

	out->nframes = 0;
	if (!img->dwfl_tried)
		image_load_dwfl(img);
	if (!img->mod)
		return 0;
	out->symbols = img->symbols;
	modaddr = vaddr + img->mod_bias;
	if (sym_unit_resolve(img, modaddr, out, &row) > 0) {
		cudie = NULL;
	} else {
		row.in_unit = false;
		cudie = dwfl_module_addrdie(img->mod, modaddr, &dwbias);
		if (!cudie)
			cudie = cu_ranges_find(img, modaddr, &cu_buf, &dwbias);
		if (cudie)
			out->nframes = resolve_dwarf(img, cudie, modaddr - dwbias, out);
	}
	if (out->nframes)
		return 0;
	/* No DWARF function here: the symbol table (.symtab of the file or of
	 * its debug file, else .dynsym, else .gnu_debugdata). */
	name = addr_symbol(img, modaddr);
	if (!name || !*name) {
		out->near = near_symbol(img, vaddr);
		return 0;
	}
	out->frames[0].function = symbol_name(img, name);
	out->frames[0].file = NULL;
	out->frames[0].line = 0;
	if (cudie) {
		Dwarf_Line *line = dwarf_getsrc_die(cudie, modaddr - dwbias);
		int lineno = 0;

		if (line) {
			out->frames[0].file = dwarf_linesrc(line, NULL, NULL);
			dwarf_lineno(line, &lineno);
			out->frames[0].line = lineno > 0 ? (unsigned)lineno : 0;
		}
	} else if (row.in_unit) {
		out->frames[0].file = row.file;
		out->frames[0].line = row.line;
	}
	out->nframes = 1;
	return 0;
}

/* The answer of image_resolve() for vaddr, remembered in the image: a
 * lookup in libdw (a CU search, then a linear scan of the symbol table
 * when there is no DWARF) is paid once per address for the whole run, not
 * once per process. The strings live as long as the image. */
int sym_image_resolve(struct sym_image *img, uint64_t vaddr, struct sym_loc *out)
{
	uint64_t key = vaddr + 1, *v;
	struct sym_resolved *r;
	int err;

	cache_stats.resolves++;
	v = key ? psup_u64map_find(&img->resolved, key) : NULL;
	if (v) {
		r = (struct sym_resolved *)(uintptr_t)*v;
		cache_stats.resolve_hits++;
		out->symbols = r->symbols;
		if (r->set_near)
			out->near = r->near;
		out->nframes = r->nframes;
		memcpy(out->frames, r->frames, r->nframes * sizeof(r->frames[0]));
		return 0;
	}
	err = image_resolve(img, vaddr, out);
	if (err || !img->mod || !key)
		return err;
	r = malloc(sizeof(*r) + out->nframes * sizeof(r->frames[0]));
	if (!r)
		return 0;
	r->symbols = out->symbols;
	/* image_resolve() names a near symbol exactly when it found none */
	r->set_near = !out->nframes;
	r->near = r->set_near ? out->near : NULL;
	r->nframes = out->nframes;
	memcpy(r->frames, out->frames, out->nframes * sizeof(r->frames[0]));
	if (img->resolved.len >= SYM_RESOLVED_MAX)
		resolved_clear(img);
	v = psup_u64map_upsert(&img->resolved, key, NULL);
	if (!v) {
		free(r);
		return 0;
	}
	*v = (uintptr_t)r;
	return 0;
}
