/* Witch's decisions and attribution (experiments/witch.c), fed synthetic
 * samples and traps: reservoir replacement gives every sample the same
 * chance to be watched (section 4.1), proportional attribution with mu and
 * eta (section 4.2), DeadCraft / SilentCraft / LoadCraft verdicts, float
 * precision, and the records the report reads back (fractions, pairs). */
#include "experiments/experiments.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builtin/record.h"
#include "report/report.h"
#include "tests/unit/tap.h"

static struct exp_witch *make(unsigned kinds, unsigned slots, uint64_t seed, struct rep_writer *w)
{
	struct exp_witch_config c = { .kinds = kinds, .slots = slots, .fp_precision = 0.01, .weight = 1, .seed = seed };
	struct exp_witch *x = NULL;
	struct exp_sink out;

	rec_sink_init(&out, w);
	CHECK_EQ_INT(exp_witch_new(&out, &c, &x), 0);
	return x;
}

static struct exp_witch_access store4(uint64_t addr)
{
	return (struct exp_witch_access){ .addr = addr, .size = 4, .len = 4, .flags = EXP_WITCH_WRITE };
}

/* Arms what the plan says with a zero value. */
static void arm(struct exp_witch *x, pid_t tid, const struct exp_witch_plan *p)
{
	static const uint8_t zero[8];

	for (unsigned i = 0; i < p->narm; i++)
		exp_witch_armed(x, tid, p->arm[i].slot, 0, zero);
}

/* Section 4.1: after K samples with no trap, each of them is watched with
 * probability N/K, whatever its position. */
static void test_reservoir(unsigned nslots, unsigned k)
{
	enum { TRIALS = 20000 };
	unsigned hits[64] = { 0 };

	for (unsigned trial = 0; trial < TRIALS; trial++) {
		struct exp_witch *x = make(1u << EXP_WITCH_DEAD, nslots, 0x1234567ULL + trial * 7919, NULL);
		struct exp_witch_plan p;

		for (unsigned s = 0; s < k; s++) {
			struct exp_witch_access a = store4(0x1000 + 64 * s);
			exp_witch_sample(x, 1, 10 + s, &a, 1, NULL, &p);
			arm(x, 1, &p);
		}
		for (unsigned slot = 0; slot < nslots; slot++) {
			uint64_t addr;
			unsigned len;
			if (exp_witch_slot_range(x, 1, slot, &addr, &len) == 0)
				hits[(addr - 0x1000) / 64]++;
		}
		exp_witch_free(x);
	}
	double expect = (double)TRIALS * nslots / k;
	for (unsigned s = 0; s < k; s++) {
		/* 5 standard deviations of a binomial: never flaky, still
		 * tight enough to catch "replace the oldest" or a coin flip
		 * (which give 0 or a geometric tail to early samples). */
		double sd = sqrt(expect * (1.0 - (double)nslots / k));
		if (fabs(hits[s] - expect) > 5 * sd + 1)
			fprintf(stderr, "reservoir N=%u K=%u: sample %u watched %u times, expected %.0f\n",
				nslots, k, s, hits[s], expect);
		CHECK(fabs(hits[s] - expect) <= 5 * sd + 1);
	}
}

/* A trap frees the register: the very next sample is watched. */
static void test_trap_frees(void)
{
	struct exp_witch *x = make(1u << EXP_WITCH_DEAD, 1, 99, NULL);
	struct exp_witch_plan p;
	struct exp_witch_verdict v;
	static const uint8_t val[8];

	for (int s = 0; s < 50; s++) {
		struct exp_witch_access a = store4(0x2000 + 8 * (uint64_t)s);
		exp_witch_sample(x, 1, 5, &a, 1, NULL, &p);
		arm(x, 1, &p);
	}
	CHECK(exp_witch_slot_is_armed(x, 1, 0));
	CHECK_EQ_INT(exp_witch_trap(x, 1, 0, EXP_WITCH_WRITE, val, 6, &v), 0);
	CHECK(v.disarm && v.waste);
	CHECK(!exp_witch_slot_is_armed(x, 1, 0));
	struct exp_witch_access a = store4(0x9000);
	exp_witch_sample(x, 1, 5, &a, 1, NULL, &p);
	CHECK_EQ_INT(p.narm, 1);
	exp_witch_free(x);
}

/* Section 4.2: a watch stands for the samples of its context since the
 * last trap there; a context with ten samples and one watch gets ten
 * samples' worth of bytes (times the access size). */
static void test_proportional(void)
{
	struct exp_witch *x = make(1u << EXP_WITCH_DEAD, 1, 7, NULL);
	struct exp_witch_plan p;
	struct exp_witch_verdict v;
	static const uint8_t val[8];
	double waste, use;

	/* Context 1: 10 samples, the first watched (the register stays
	 * taken: later ones are not chosen or replace it -- either way one
	 * watch from context 1 is armed). */
	for (int s = 0; s < 10; s++) {
		struct exp_witch_access a = store4(0x3000 + 4 * (uint64_t)s);
		exp_witch_sample(x, 1, 1, &a, 1, NULL, &p);
		arm(x, 1, &p);
	}
	CHECK_EQ_INT(exp_witch_trap(x, 1, 0, EXP_WITCH_WRITE, val, 2, &v), 0);
	CHECK(v.waste);
	CHECK(fabs(v.bytes - 40.0) < 1e-9);
	/* Context 3: 2 samples, a load traps: use. */
	for (int s = 0; s < 2; s++) {
		struct exp_witch_access a = store4(0x4000 + 4 * (uint64_t)s);
		exp_witch_sample(x, 1, 3, &a, 1, NULL, &p);
		arm(x, 1, &p);
	}
	CHECK_EQ_INT(exp_witch_trap(x, 1, 0, EXP_WITCH_READ, val, 4, &v), 0);
	CHECK(!v.waste);
	CHECK(fabs(v.bytes - 8.0) < 1e-9);
	exp_witch_totals(x, EXP_WITCH_DEAD, &waste, &use);
	CHECK(fabs(waste - 40.0) < 1e-9 && fabs(use - 8.0) < 1e-9);
	/* A second trap from context 1 with no new sample there stands for
	 * nothing more (eta caught up with mu). */
	struct exp_witch_access a = store4(0x5000);
	exp_witch_sample(x, 1, 1, &a, 1, NULL, &p);
	arm(x, 1, &p);
	CHECK_EQ_INT(exp_witch_trap(x, 1, 0, EXP_WITCH_WRITE, val, 2, &v), 0);
	CHECK(fabs(v.bytes - 4.0) < 1e-9);
	/* A read-modify-write reads first: the store was used. */
	exp_witch_sample(x, 1, 1, &a, 1, NULL, &p);
	arm(x, 1, &p);
	CHECK_EQ_INT(exp_witch_trap(x, 1, 0, EXP_WITCH_READ | EXP_WITCH_WRITE, val, 2, &v), 0);
	CHECK(!v.waste);
	/* A trap of unknown kind judges nothing but frees the register. */
	exp_witch_sample(x, 1, 1, &a, 1, NULL, &p);
	arm(x, 1, &p);
	CHECK_EQ_INT(exp_witch_trap(x, 1, 0, 0, val, 2, &v), 0);
	CHECK(v.disarm && v.bytes == 0);
	exp_witch_free(x);
}

/* Two watches armed from one context share its samples. */
static void test_shared_context(void)
{
	struct exp_witch *x = make(1u << EXP_WITCH_DEAD, 2, 3, NULL);
	struct exp_witch_plan p;
	struct exp_witch_verdict v1, v2;
	static const uint8_t val[8];

	for (int s = 0; s < 2; s++) {
		struct exp_witch_access a = store4(0x6000 + 4 * (uint64_t)s);
		exp_witch_sample(x, 1, 9, &a, 1, NULL, &p);
		CHECK_EQ_INT(p.narm, 1);
		arm(x, 1, &p);
	}
	CHECK_EQ_INT(exp_witch_trap(x, 1, 0, EXP_WITCH_WRITE, val, 2, &v1), 0);
	CHECK_EQ_INT(exp_witch_trap(x, 1, 1, EXP_WITCH_WRITE, val, 2, &v2), 0);
	CHECK(fabs(v1.bytes - 4.0) < 1e-9);
	CHECK(fabs(v2.bytes - 4.0) < 1e-9);
	exp_witch_free(x);
}

static void arm_value(struct exp_witch *x, const struct exp_witch_plan *p, const void *v)
{
	for (unsigned i = 0; i < p->narm; i++)
		exp_witch_armed(x, 1, p->arm[i].slot, 0, v);
}

/* SilentCraft: the value decides; floats within the precision. */
static void test_silent(void)
{
	struct exp_witch *x = make(1u << EXP_WITCH_SILENT, 1, 5, NULL);
	struct exp_witch_plan p;
	struct exp_witch_verdict v;
	double d0 = 1.0, d1 = 1.005, d2 = 1.02;
	uint32_t i0 = 7, i1 = 8;
	struct exp_witch_access ad = { .addr = 0x7000, .size = 8, .len = 8, .flags = EXP_WITCH_WRITE | EXP_WITCH_FP64 };
	struct exp_witch_access ai = store4(0x7100);

	exp_witch_sample(x, 1, 1, &ad, 1, NULL, &p);
	CHECK(p.narm == 1 && !p.arm[0].readwrite);
	arm_value(x, &p, &d0);
	exp_witch_trap(x, 1, 0, EXP_WITCH_WRITE, (const uint8_t *)&d1, 2, &v);
	CHECK(v.waste); /* within 1% */
	exp_witch_sample(x, 1, 1, &ad, 1, NULL, &p);
	arm_value(x, &p, &d0);
	exp_witch_trap(x, 1, 0, EXP_WITCH_WRITE, (const uint8_t *)&d2, 2, &v);
	CHECK(!v.waste); /* 2% apart */
	exp_witch_sample(x, 1, 1, &ai, 1, NULL, &p);
	arm_value(x, &p, &i0);
	exp_witch_trap(x, 1, 0, EXP_WITCH_WRITE, (const uint8_t *)&i0, 2, &v);
	CHECK(v.waste);
	exp_witch_sample(x, 1, 1, &ai, 1, NULL, &p);
	arm_value(x, &p, &i0);
	exp_witch_trap(x, 1, 0, EXP_WITCH_WRITE, (const uint8_t *)&i1, 2, &v);
	CHECK(!v.waste);
	exp_witch_free(x);
}

/* LoadCraft: a store trap is dropped and the watch stays; the next load
 * of the same value is silent. Loads do not feed dead/silent and stores do
 * not feed load. */
static void test_load(void)
{
	struct exp_witch *x = make((1u << EXP_WITCH_LOAD) | (1u << EXP_WITCH_DEAD), 2, 5, NULL);
	struct exp_witch_plan p;
	struct exp_witch_verdict v;
	uint32_t val = 42, other = 43;
	struct exp_witch_access ld = { .addr = 0x8000, .size = 4, .len = 4, .flags = EXP_WITCH_READ };

	CHECK_EQ_INT(exp_witch_slots(x, EXP_WITCH_LOAD), 1);
	CHECK_EQ_INT(exp_witch_slots(x, EXP_WITCH_DEAD), 1);
	exp_witch_sample(x, 1, 1, &ld, 1, NULL, &p);
	CHECK_EQ_INT(p.narm, 1);
	CHECK(p.arm[0].kind == EXP_WITCH_LOAD && p.arm[0].readwrite);
	unsigned slot = p.arm[0].slot;
	arm_value(x, &p, &val);
	exp_witch_trap(x, 1, slot, EXP_WITCH_WRITE, (const uint8_t *)&other, 2, &v);
	CHECK(v.dropped && !v.disarm);
	CHECK(exp_witch_slot_is_armed(x, 1, slot));
	exp_witch_trap(x, 1, slot, EXP_WITCH_READ, (const uint8_t *)&val, 2, &v);
	CHECK(v.waste && v.disarm);
	exp_witch_free(x);
}

static const struct rep_header header = {
	.mode = "run",
	.pid = 100,
	.event = "task-clock",
	.period = 1000000,
	.clock_event = true,
};

/* Records: pairs and counters written by flushes add up in the report,
 * whose JSON carries the fraction, the bytes and the pairs' shares. */
static void test_records(void)
{
	char path[] = "/tmp/psup-test-witch-XXXXXX";
	int fd = mkstemp(path);
	struct rep_writer *w;
	struct exp_witch_plan p;
	struct exp_witch_verdict v;
	static const uint8_t val[8];
	static const struct rep_frame fa = { "fill_a", "w.c", 10 }, fb = { "fill_b", "w.c", 20 };

	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ_INT(rep_writer_open(path, REP_WRITER_FORCE, &w), 0);
	CHECK_EQ_INT(rep_write_header(w, &header), 0);
	struct rep_witch_config c = { .kinds = "dead", .event = "task-clock", .period = 4000000, .clock = true, .fp_precision_ppm = 10000, .slots = 4, .weight = 1 };
	CHECK_EQ_INT(rep_write_witch_config(w, &c), 0);
	struct rep_loc la = { .id = 1, .pid = 100, .addr = 0x10, .image = "w", .offset = 0x10, .nframes = 1, .frames = &fa };
	struct rep_loc lb = { .id = 2, .pid = 100, .addr = 0x20, .image = "w", .offset = 0x20, .nframes = 1, .frames = &fb };
	CHECK_EQ_INT(rep_write_loc(w, &la), 0);
	CHECK_EQ_INT(rep_write_loc(w, &lb), 0);
	CHECK_EQ_INT(rep_write_node(w, 1, 0, 1), 0);
	CHECK_EQ_INT(rep_write_node(w, 2, 0, 2), 0);

	struct exp_witch *x = make(1u << EXP_WITCH_DEAD, 1, 11, w);
	/* 3 samples in node 1, killed from node 2 (waste 12); then 1 sample in
	 * node 2 used from node 1 (use 4); flushed twice. */
	for (int s = 0; s < 3; s++) {
		struct exp_witch_access a = store4(0x100);
		exp_witch_sample(x, 1, 1, &a, 1, NULL, &p);
		arm(x, 1, &p);
	}
	exp_witch_trap(x, 1, 0, EXP_WITCH_WRITE, val, 2, &v);
	CHECK_EQ_INT(exp_witch_flush(x), 0);
	struct exp_witch_access a = store4(0x200);
	exp_witch_sample(x, 1, 2, &a, 1, NULL, &p);
	arm(x, 1, &p);
	exp_witch_trap(x, 1, 0, EXP_WITCH_READ, val, 1, &v);
	exp_witch_skip(x, EXP_WITCH_SKIP_SYSCALL);
	CHECK_EQ_INT(exp_witch_flush(x), 0);
	CHECK_EQ_INT(exp_witch_flush(x), 0); /* nothing new: no records */
	exp_witch_free(x);
	CHECK_EQ_INT(rep_writer_close(w), 0);

	struct rep_profile *prof;
	char err[256], *buf = NULL;
	size_t len = 0;
	struct rep_options o = { .format = REP_FORMAT_JSON, .views = REP_VIEW_WITCH };
	CHECK_EQ_INT(rep_profile_new(&prof), 0);
	CHECK_EQ_INT(rep_profile_load(prof, path, err, sizeof(err)), 0);
	FILE *f = open_memstream(&buf, &len);
	CHECK_EQ_INT(rep_print(prof, &o, f), 0);
	fclose(f);
	CHECK(buf && strstr(buf, "\"dead\":{\"fraction\":0.750000,\"wasted_bytes\":12,\"total_bytes\":16"));
	CHECK(buf && strstr(buf, "{\"bytes\":12,\"use_bytes\":0,\"share\":1.000000,\"watch\":[{\"function\":\"fill_a\",\"file\":\"w.c\",\"line\":10}],\"trap\":[{\"function\":\"fill_b\""));
	CHECK(buf && strstr(buf, "\"in_syscall\":1"));
	CHECK(buf && strstr(buf, "\"counters\":{\"samples\":4,"));
	if (buf && !strstr(buf, "\"wasted_bytes\":12"))
		fprintf(stderr, "%s\n", buf);
	free(buf);
	/* Text: the fraction and the pair's full path. */
	buf = NULL;
	o.format = REP_FORMAT_TEXT;
	f = open_memstream(&buf, &len);
	CHECK_EQ_INT(rep_print(prof, &o, f), 0);
	fclose(f);
	CHECK(buf && strstr(buf, "dead stores: 75.0% wasted"));
	CHECK(buf && strstr(buf, "watch: fill_a (w.c:10)"));
	free(buf);
	/* The default views include witch when the file has witch records. */
	buf = NULL;
	o = (struct rep_options){ .format = REP_FORMAT_JSON };
	f = open_memstream(&buf, &len);
	CHECK_EQ_INT(rep_print(prof, &o, f), 0);
	fclose(f);
	CHECK(buf && strstr(buf, "\"witch\":{"));
	free(buf);
	rep_profile_free(prof);
	unlink(path);
}

static void test_config_errors(void)
{
	struct exp_witch_config c = { .kinds = 7, .slots = 2, .fp_precision = 0.01, .weight = 1 };
	struct exp_witch *x = NULL;

	CHECK_EQ_INT(exp_witch_new(NULL, &c, &x), -EINVAL); /* 3 analyses, 2 registers */
	c = (struct exp_witch_config){ .kinds = 0, .slots = 4, .weight = 1 };
	CHECK_EQ_INT(exp_witch_new(NULL, &c, &x), -EINVAL);
	c = (struct exp_witch_config){ .kinds = 1, .slots = 5, .weight = 1 };
	CHECK_EQ_INT(exp_witch_new(NULL, &c, &x), -EINVAL);
}

/* Weighted samples (--witch-weight instructions): a context's samples
 * count by their weights, per analysis. */
static void test_weights(void)
{
	struct exp_witch *x = make(1u << EXP_WITCH_DEAD | 1u << EXP_WITCH_LOAD, 2, 11, NULL);
	struct exp_witch_plan p;
	struct exp_witch_verdict v;
	static const uint8_t val[8];
	/* dead weighs 4 (a store every 16 instructions), load 0.5 */
	const double w[EXP_WITCH_KINDS] = { [EXP_WITCH_DEAD] = 4.0, [EXP_WITCH_SILENT] = 1.0, [EXP_WITCH_LOAD] = 0.5 };
	struct exp_witch_access a[2] = {
		{ .addr = 0x5000, .size = 4, .len = 4, .flags = EXP_WITCH_READ },
		{ .addr = 0x5100, .size = 4, .len = 4, .flags = EXP_WITCH_WRITE },
	};

	for (int s = 0; s < 3; s++) {
		exp_witch_sample(x, 1, 1, a, 2, w, &p);
		arm(x, 1, &p);
	}
	for (unsigned i = 0; i < EXP_WITCH_MAX_SLOTS; i++) {
		if (!exp_witch_slot_is_armed(x, 1, i))
			continue;
		CHECK_EQ_INT(exp_witch_trap(x, 1, i, EXP_WITCH_READ, val, 2, &v), 0);
		/* three samples of 4 bytes: 3 * 4 * 4 dead-store bytes used,
		 * 3 * 0.5 * 4 load bytes silent */
		CHECK(fabs(v.bytes - (v.kind == EXP_WITCH_DEAD ? 48.0 : 6.0)) < 1e-9);
	}
	double waste, use;
	exp_witch_totals(x, EXP_WITCH_DEAD, &waste, &use);
	CHECK(fabs(use - 48.0) < 1e-9 && waste == 0.0);
	exp_witch_totals(x, EXP_WITCH_LOAD, &waste, &use);
	CHECK(fabs(waste - 6.0) < 1e-9 && use == 0.0);
	exp_witch_free(x);
}

int main(void)
{
	test_reservoir(1, 5);
	test_reservoir(4, 12);
	test_reservoir(2, 2);
	test_trap_frees();
	test_proportional();
	test_weights();
	test_shared_context();
	test_silent();
	test_load();
	test_records();
	test_config_errors();
	return tap_done();
}
