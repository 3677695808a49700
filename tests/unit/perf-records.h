#ifndef PSUP_TESTS_PERF_RECORDS_H
#define PSUP_TESTS_PERF_RECORDS_H

/* Building synthetic perf ring records for the sampler's tests, and parsing
 * them from a heap block of exactly their length (so ASan sees any read past
 * the end). */

#include <linux/perf_event.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/sampler.h"

struct buf {
	uint8_t b[16384];
	size_t n;
};

static inline void put64(struct buf *b, uint64_t v)
{
	memcpy(b->b + b->n, &v, 8);
	b->n += 8;
}

static inline void put32(struct buf *b, uint32_t v)
{
	memcpy(b->b + b->n, &v, 4);
	b->n += 4;
}

/* Starts a new record in b. */
static inline void put_hdr(struct buf *b, uint32_t type, uint16_t misc)
{
	struct perf_event_header h = { .type = type, .misc = misc, .size = 0 };

	memcpy(b->b, &h, sizeof(h));
	b->n = sizeof(h);
}

/* Writes the record's final size into its header. */
static inline void fix_size(struct buf *b)
{
	uint16_t sz = (uint16_t)b->n;

	memcpy(b->b + 6, &sz, 2);
}

static inline int parse_exact(const struct smp_event *ev, const struct buf *b, size_t len,
			      const struct smp_sink *sink)
{
	uint8_t *p = malloc(len ? len : 1);
	int ret;

	memcpy(p, b->b, len);
	ret = smp_parse_record(ev, p, len, sink);
	free(p);
	return ret;
}

#endif
