#include "symbols/symbols.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/mman.h>

#include "common/log.h"
#include "common/util.h"
#include "symbols/symbols-internal.h"

/*
 * A miss re-reads /proc/PID/maps (dlopen), but a burst of samples in JIT'd or
 * anonymous code must not re-read it thousands of times: after a miss-driven
 * refresh, the next one waits miss_interval_ns, which doubles (up to 1 s)
 * each time a refresh does not find the address and drops back to 10 ms when
 * one does. The very first miss always refreshes.
 */
#define MISS_INTERVAL_MIN_NS (10ULL * 1000 * 1000)
#define MISS_INTERVAL_MAX_NS (1000ULL * 1000 * 1000)

/* Mappings a space keeps from mmap records before it leaves anonymous ones
 * to /proc (sym_space_map_add()). */
#define SPACE_TOLD_MAX 16384

static void space_hold(struct sym_space *sp, struct sym_image *img)
{
	for (size_t i = 0; i < sp->nheld; i++) {
		if (sp->held[i] == img) {
			sym_image_put(img); /* already holding one */
			return;
		}
	}
	if (sp->nheld == sp->capheld) {
		size_t ncap = sp->capheld ? sp->capheld * 2 : 16;
		struct sym_image **nh = realloc(sp->held, ncap * sizeof(*nh));

		if (!nh) {
			/* Keep the ref rather than lose track of it: leak one
			 * image rather than free one still in use. */
			return;
		}
		sp->held = nh;
		sp->capheld = ncap;
	}
	sp->held[sp->nheld++] = img;
}

ssize_t sym_space_floor(const struct sym_space *sp, uint64_t addr)
{
	size_t lo = 0, hi = sp->nmaps;

	/* first mapping with start > addr, minus one */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sp->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (ssize_t)lo - 1;
}

static bool same_mapping(const struct sym_mapping *a, const struct sym_mapping *b)
{
	/* paths are interned in the same pool: pointers compare */
	return a->start == b->start && a->end == b->end && a->offset == b->offset &&
	       a->dev == b->dev && a->inode == b->inode && a->path == b->path &&
	       a->deleted == b->deleted && a->prot == b->prot;
}

/* Reads the maps and keeps the executable mappings, carrying the images of
 * mappings that did not change. */
static int space_load(struct sym_space *sp)
{
	struct sym_map *maps = NULL;
	struct sym_mapping *nm = NULL;
	size_t n = 0, nkeep = 0, bad = 0, j = 0;
	char path[64], *text = NULL;
	bool changed;
	int err;

	/* The executable mappings asked of the kernel one by one; their
	 * text read and parsed where it does not answer (a kernel before
	 * 6.11; a leader without memory of its own, whose threads' the text's
	 * reader finds), or finds none. */
	err = sym_maps_query_exec(sp->pid, &maps, &n);
	if (!err && n) {
		sp->mem_pid = sp->pid;
	} else {
		/* (an error or none: no list to free) */
		err = err == -ENOENT ? err : sym_maps_read(sp->pid, &text, path, sizeof(path), &sp->mem_pid);
		if (err) {
			sp->maps_err = err;
			return err == -ENOENT ? -ESRCH : err;
		}
		err = sym_maps_parse(text, &maps, &n, &bad);
		free(text);
		if (err) {
			pr_debug("%s: line %zu does not parse", path, bad);
			return err;
		}
	}
	sp->maps_err = 0;
	nm = calloc(n ? n : 1, sizeof(*nm));
	if (!nm) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct sym_mapping *m = &nm[nkeep];

		if (!(maps[i].prot & PROT_EXEC) || maps[i].end <= maps[i].start)
			continue;
		/* The kernel lists mappings in address order; refuse overlaps
		 * so the binary search stays right whatever the input. */
		if (nkeep && maps[i].start < nm[nkeep - 1].end)
			continue;
		m->start = maps[i].start;
		m->end = maps[i].end;
		m->offset = maps[i].offset;
		m->dev = ((uint64_t)maps[i].dev_major << 32) | maps[i].dev_minor;
		m->inode = maps[i].inode;
		m->prot = maps[i].prot;
		m->deleted = maps[i].deleted;
		m->path = sym_strpool_intern(&sp->strings, maps[i].path);
		if (!m->path) {
			err = -ENOMEM;
			goto out;
		}
		nkeep++;
	}
	changed = nkeep != sp->nmaps;
	for (size_t i = 0; i < nkeep; i++) {
		while (j < sp->nmaps && sp->maps[j].start < nm[i].start)
			j++;
		if (j < sp->nmaps && same_mapping(&sp->maps[j], &nm[i])) {
			nm[i].tried = sp->maps[j].tried;
			nm[i].image = sp->maps[j].image;
			nm[i].bias = sp->maps[j].bias;
		} else {
			changed = true;
		}
	}
	free(sp->maps);
	sp->maps = nm;
	sp->nmaps = nkeep;
	nm = NULL;
	if (changed)
		sp->generation++;
out:
	free(nm);
	sym_maps_free(maps, n);
	return err;
}

int sym_space_new(pid_t pid, struct sym_space **out)
{
	struct sym_space *sp = calloc(1, sizeof(*sp));
	int err;

	if (!sp)
		return -ENOMEM;
	sp->pid = sp->mem_pid = pid;
	sp->miss_interval_ns = MISS_INTERVAL_MIN_NS;
	sym_strpool_init(&sp->strings);
	err = space_load(sp);
	if (err) {
		sym_space_free(sp);
		return err;
	}
	*out = sp;
	return 0;
}

void sym_space_free(struct sym_space *sp)
{
	if (!sp)
		return;
	sym_unwind_release(sp);
	sym_perfmap_release(&sp->perfmap);
	free(sp->maps);
	for (size_t i = 0; i < sp->nheld; i++)
		sym_image_put(sp->held[i]);
	free(sp->held);
	sym_strpool_release(&sp->strings);
	free(sp);
}

pid_t sym_space_pid(const struct sym_space *sp)
{
	return sp->pid;
}

int sym_space_maps_error(const struct sym_space *sp)
{
	return sp->maps_err;
}

int sym_space_refresh(struct sym_space *sp)
{
	return space_load(sp);
}

static struct sym_image *mapping_image(struct sym_space *sp, struct sym_mapping *m, bool cached_only);

int sym_space_snapshot(struct sym_space *sp)
{
	int err = space_load(sp);

	if (err)
		return err;
	sp->stale = false;
	/* A file deleted or replaced since it was mapped is read through
	 * map_files, which goes with the process: its image is opened now.
	 * The others open later by path, when a sample needs them (chromium
	 * maps 109 files). */
	for (size_t i = 0; i < sp->nmaps; i++) {
		struct sym_mapping *m = &sp->maps[i];
		struct stat st;

		if (m->tried || m->path[0] != '/')
			continue;
		/* An image loaded for the same file (path, device, inode),
		 * by an earlier process of the same program, is what is
		 * mapped: no stat of the path (three per process of a
		 * fork/exec storm). Test: t3076-process-storm-syscalls. */
		if (mapping_image(sp, m, true))
			continue;
		if (m->deleted || stat(m->path, &st) < 0 || st.st_ino != m->inode ||
		    (((uint64_t)major(st.st_dev) << 32) | minor(st.st_dev)) != m->dev)
			sym_space_mapping_image(sp, m);
	}
	return 0;
}

/* Joins sp->maps[i + 1] into sp->maps[i] when both are anonymous, the
 * second starting where the first ends, with the same protection. Whether
 * it did. */
static bool anon_join_next(struct sym_space *sp, size_t i)
{
	struct sym_mapping *a = &sp->maps[i], *b = a + 1;

	if (i + 1 >= sp->nmaps || a->path[0] || b->path[0] || a->end != b->start || a->prot != b->prot ||
	    a->image || b->image)
		return false;
	a->end = b->end;
	memmove(b, b + 1, (sp->nmaps - i - 2) * sizeof(*b));
	sp->nmaps--;
	return true;
}

int sym_space_map_add(struct sym_space *sp, const struct sym_map *in)
{
	struct sym_map km = *in;
	struct sym_mapping nm = { 0 }, *maps;
	size_t i, k, cut = 0, keep;
	bool anon = !strcmp(in->path, "//anon");

	if (in->end <= in->start)
		return -EINVAL;
	km.deleted = false;
	/* Anonymous memory (JIT code) is "//anon" there, nameless in
	 * /proc/PID/maps, where the perf map's lookup finds it; its offset
	 * there is the address's, 0 in maps. A file's path as maps shows it
	 * (a newline escaped), so that both name one image. */
	if (anon)
		km.offset = 0;
	if (sym_kernel_path(in->path, anon ? 0 : strlen(in->path), &km) < 0)
		return -ENOMEM;
	nm.start = in->start;
	nm.end = in->end;
	nm.offset = km.offset;
	nm.dev = ((uint64_t)in->dev_major << 32) | in->dev_minor;
	nm.inode = in->inode;
	nm.prot = in->prot;
	nm.deleted = km.deleted;
	nm.path = sym_strpool_intern(&sp->strings, km.path);
	free(km.path);
	if (!nm.path)
		return -ENOMEM;
	/* The same mapping told again (an mprotect back to PROT_EXEC): kept
	 * with its image; anonymous code inside anonymous code as well. */
	i = (size_t)(sym_space_floor(sp, nm.start) + 1);
	if (i > 0 && (same_mapping(&sp->maps[i - 1], &nm) ||
		      (!nm.path[0] && !sp->maps[i - 1].path[0] && sp->maps[i - 1].end >= nm.end &&
		       sp->maps[i - 1].prot == nm.prot)))
		return 0;
	/* A bound on what records may make of it: past it, anonymous code is
	 * left to /proc (a miss reads the maps while the process lives). */
	if (!nm.path[0] && sp->nmaps >= SPACE_TOLD_MAX)
		return -E2BIG;
	/* What the new one overlaps goes; a part outside its range stays (the
	 * kernel split the old mapping: its head or tail is still mapped).
	 * Room for one more first: the new one, or an old one's tail. */
	maps = realloc(sp->maps, (sp->nmaps + 1) * sizeof(*maps));
	if (!maps)
		return -ENOMEM;
	sp->maps = maps;
	if (i > 0 && sp->maps[i - 1].end > nm.start) {
		struct sym_mapping *o = &sp->maps[i - 1];

		if (o->end > nm.end) {
			/* The new one is inside o: o's tail after it stays. */
			struct sym_mapping tail = *o;

			tail.offset += nm.end - o->start;
			tail.start = nm.end;
			tail.tried = false;
			tail.image = NULL;
			o->end = nm.start;
			memmove(&sp->maps[i + 1], &sp->maps[i], (sp->nmaps - i) * sizeof(*maps));
			sp->maps[i] = tail;
			sp->nmaps++;
			sp->generation++;
			maps = realloc(sp->maps, (sp->nmaps + 1) * sizeof(*maps));
			if (!maps)
				return -ENOMEM;
			sp->maps = maps;
		} else {
			o->end = nm.start;
		}
		if (sp->maps[i - 1].end <= sp->maps[i - 1].start) {
			memmove(&sp->maps[i - 1], &sp->maps[i], (sp->nmaps - i) * sizeof(*maps));
			sp->nmaps--;
			i--;
		}
	}
	for (k = i; k < sp->nmaps && sp->maps[k].start < nm.end; k++) {
		if (sp->maps[k].end > nm.end)
			break; /* its tail stays */
		cut++;
	}
	if (k < sp->nmaps && sp->maps[k].start < nm.end) {
		struct sym_mapping *o = &sp->maps[k];

		o->offset += nm.end - o->start;
		o->start = nm.end;
		o->tried = false;
		o->image = NULL;
	}
	keep = sp->nmaps - cut + 1;
	if (!cut)
		memmove(&sp->maps[i + 1], &sp->maps[i], (sp->nmaps - i) * sizeof(*maps));
	else
		memmove(&sp->maps[i + 1], &sp->maps[i + cut], (sp->nmaps - i - cut) * sizeof(*maps));
	sp->maps[i] = nm;
	sp->nmaps = keep;
	sp->generation++;
	if (nm.deleted)
		mapping_image(sp, &sp->maps[i], false);
	/* Anonymous code next to anonymous code of the same protection is one
	 * mapping, as the kernel merges them in /proc/PID/maps: a JIT that
	 * maps its code page by page (each an mmap record) keeps one entry,
	 * not one per page to move at each insertion. */
	if (!nm.path[0]) {
		if (i > 0 && anon_join_next(sp, i - 1))
			i--;
		anon_join_next(sp, i);
	}
	return 0;
}

void sym_space_exec(struct sym_space *sp)
{
	/* Images stay held: strings handed out before the exec stay valid. */
	free(sp->maps);
	sp->maps = NULL;
	sp->nmaps = 0;
	sp->stale = true;
	sp->generation++;
	/* The new program writes its own map, from the start. */
	sym_perfmap_release(&sp->perfmap);
}

int sym_space_fork(const struct sym_space *parent, pid_t child, struct sym_space **out)
{
	struct sym_space *sp = calloc(1, sizeof(*sp));
	int err = -ENOMEM;

	if (!sp)
		return -ENOMEM;
	sp->pid = sp->mem_pid = child;
	sp->miss_interval_ns = MISS_INTERVAL_MIN_NS;
	sp->stale = parent->stale;
	sym_strpool_init(&sp->strings);
	sp->maps = calloc(parent->nmaps ? parent->nmaps : 1, sizeof(*sp->maps));
	if (!sp->maps)
		goto fail;
	for (size_t i = 0; i < parent->nmaps; i++) {
		struct sym_mapping *m = &sp->maps[i];

		*m = parent->maps[i];
		m->path = sym_strpool_intern(&sp->strings, parent->maps[i].path);
		if (!m->path)
			goto fail;
		sp->nmaps = i + 1;
		if (m->image) {
			sym_image_ref(m->image);
			space_hold(sp, m->image);
		}
	}
	*out = sp;
	return 0;
fail:
	sym_space_free(sp);
	return err;
}

struct sym_mapping *sym_space_find(struct sym_space *sp, uint64_t addr, bool refresh)
{
	ssize_t i = sym_space_floor(sp, addr);
	uint64_t now;

	if (i >= 0 && addr < sp->maps[i].end)
		return &sp->maps[i];
	if (!refresh)
		return NULL;
	now = psup_now_ns();
	if (!sp->stale && sp->miss_refresh_ns &&
	    now - sp->miss_refresh_ns < sp->miss_interval_ns)
		return NULL;
	sp->stale = false;
	sp->miss_refresh_ns = now ? now : 1;
	if (space_load(sp))
		return NULL;
	i = sym_space_floor(sp, addr);
	if (i >= 0 && addr < sp->maps[i].end) {
		sp->miss_interval_ns = MISS_INTERVAL_MIN_NS;
		return &sp->maps[i];
	}
	if (sp->miss_interval_ns < MISS_INTERVAL_MAX_NS)
		sp->miss_interval_ns *= 2;
	return NULL;
}

/* m, as the image functions take a mapping. */
static struct sym_map map_of(const struct sym_mapping *m)
{
	return (struct sym_map){
		.start = m->start,
		.end = m->end,
		.offset = m->offset,
		.inode = m->inode,
		.dev_major = (unsigned)(m->dev >> 32),
		.dev_minor = (unsigned)m->dev,
		.prot = m->prot,
		.path = (char *)m->path,
		.deleted = m->deleted,
	};
}

/* m's image; cached_only: only one the image cache holds already (NULL
 * otherwise, m left to be tried later). */
static struct sym_image *mapping_image(struct sym_space *sp, struct sym_mapping *m, bool cached_only)
{
	struct sym_map map = map_of(m);
	struct sym_image *img = NULL;
	int err;

	if (m->tried)
		return m->image;
	if (cached_only && (m->path[0] != '/' || sym_image_get_cached(&map, &img) < 0))
		return NULL;
	m->tried = true;
	if (img)
		err = 0;
	else if (!strcmp(m->path, "[vdso]"))
		err = sym_image_get_vdso(sp->mem_pid, m->start, m->end, &img);
	else if (m->path[0] == '/')
		err = sym_image_get_file(sp->mem_pid, &map, &img);
	else
		return NULL; /* anonymous, JIT, [vsyscall] */
	if (err) {
		pr_debug("%s: no image: %s", m->path, strerror(-err));
		return NULL;
	}
	if (sym_image_bias(img, m->start, m->end, m->offset, m->prot & PROT_EXEC, &m->bias)) {
		pr_debug("%s: no PT_LOAD covers offset 0x%llx", m->path,
			 (unsigned long long)m->offset);
		sym_image_put(img);
		return NULL;
	}
	space_hold(sp, img);
	m->image = img;
	return img;
}

struct sym_image *sym_space_mapping_image(struct sym_space *sp, struct sym_mapping *m)
{
	return mapping_image(sp, m, false);
}

const char *sym_space_mapping_path(struct sym_space *sp, uint64_t addr)
{
	const struct sym_mapping *m = sym_space_find(sp, addr, true);

	return m ? m->path : NULL;
}

uint64_t sym_space_code_key(struct sym_space *sp, uint64_t addr)
{
	const struct sym_mapping *m = sym_space_find(sp, addr, false);
	uint64_t h;

	/* A device and inode name one file whatever path a process sees it
	 * by (a chroot): no string hashed per block. */
	if (!m || !m->inode || m->deleted)
		return 0;
	h = psup_hash64(psup_hash_seed() ^ m->dev);
	h = psup_hash64(h ^ m->inode);
	h = psup_hash64(h ^ (m->offset + (addr - m->start)));
	return h ? h : 1;
}

int sym_space_resolve(struct sym_space *sp, uint64_t pc, bool return_address,
		      struct sym_loc *out)
{
	struct sym_mapping *m;
	struct sym_image *img;
	uint64_t vaddr;

	memset(out, 0, sizeof(*out));
	out->image = "[unknown]";
	out->offset = pc;
	m = sym_space_find(sp, pc, true);
	if (!m || (!m->path[0] || !strncmp(m->path, "[anon", 5))) {
		/* Anonymous code: a JIT's, named by its perf map file. */
		const char *path, *name = sym_perfmap_lookup(sp, pc, &path);

		if (name) {
			out->image = path;
			out->nframes = 1;
			out->frames[0].function = name;
			return 0;
		}
	}
	if (!m) {
		/* Issue 22: say why, in the record itself. */
		if (sp->maps_err == -EACCES || sp->maps_err == -EPERM)
			out->image = "[not dumpable]";
		return 0;
	}
	img = sym_space_mapping_image(sp, m);
	if (!img) {
		if (m->path[0]) {
			out->image = m->path;
			if (m->path[0] == '/')
				out->offset = pc - m->start + m->offset;
		}
		return 0;
	}
	out->image = img->path;
	out->build_id = img->build_id;
	vaddr = pc - m->bias;
	out->offset = vaddr;
	return sym_image_resolve(img, return_address ? vaddr - 1 : vaddr, out);
}
