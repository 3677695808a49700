/*
 * psup.h: source-level progress points for psup's causal profiler.
 *
 * Header only: no library, no link flag, no initialization. Each macro is a
 * relaxed atomic increment of a static counter that lives in the ELF section
 * "psup_points" of the binary or shared library it is compiled into. psup
 * finds the section from the file's section headers (stripped binaries keep
 * them) and reads the counters from the running program's memory; without
 * psup they are just counters nobody reads (one `lock add` per visit).
 *
 *   #include "psup.h"
 *   while (next_request(&r)) {
 *           PSUP_BEGIN("request");           // a latency point's start
 *           handle(&r);
 *           PSUP_END("request");             // ... and its end
 *           PSUP_PROGRESS;                   // throughput, named "file.c:LINE"
 *           PSUP_PROGRESS_NAMED("requests"); // throughput, named
 *   }
 *
 * then `psup run --causal -- ./app`. Names are string literals; the same
 * name in several places (or in several copies of an inline function or a
 * template) is one point whose visits add up.
 *
 * C (C99 and later) and C++ (C++11 and later), GCC and Clang, any -O
 * level, executables (PIE or not, static or not) and shared libraries.
 *
 * The record layout is psup's ABI, version 1, read from the file and from
 * memory by psup (experiments/progress.c):
 *   u64 magic ("PSUPPNT1" little endian), u64 count, u32 kind (1 throughput,
 *   2 begin, 3 end: Coz's numbering), u32 size (bytes of header + name,
 *   including the NUL), the name, padding to 8 bytes.
 */
#ifndef PSUP_H
#define PSUP_H

#define PSUP_POINT_MAGIC 0x31544e5050555350ULL /* "PSUPPNT1" in memory */
#define PSUP_POINT_THROUGHPUT 1u
#define PSUP_POINT_BEGIN 2u
#define PSUP_POINT_END 3u

struct psup_point_header {
	unsigned long long magic;
	unsigned long long count;
	unsigned int kind;
	unsigned int size;
};

#define PSUP__STR2(x) #x
#define PSUP__STR(x) PSUP__STR2(x)

/* Keep the counters even under --gc-sections (SHF_GNU_RETAIN, GCC 11+,
 * Clang 13+); `used` alone keeps them from the compiler only. */
#if defined(__has_attribute)
#if __has_attribute(retain)
#define PSUP__RETAIN , retain
#endif
#endif
#ifndef PSUP__RETAIN
#define PSUP__RETAIN
#endif

#define PSUP__POINT(kind_, name_)                                                          \
	do {                                                                               \
		static struct {                                                            \
			struct psup_point_header h;                                        \
			char name[sizeof(name_)];                                          \
		} psup__point                                                              \
			__attribute__((section("psup_points"), used, aligned(8) PSUP__RETAIN)) \
			= { { PSUP_POINT_MAGIC, 0, (kind_),                                \
				  (unsigned int)(sizeof(struct psup_point_header) +        \
						 sizeof(name_)) },                         \
				name_ };                                                   \
		__atomic_fetch_add(&psup__point.h.count, 1ULL, __ATOMIC_RELAXED);          \
	} while (0)

/* One unit of work done here (throughput), named after the file and line. */
#define PSUP_PROGRESS PSUP__POINT(PSUP_POINT_THROUGHPUT, __FILE__ ":" PSUP__STR(__LINE__))
/* The same with a name (a string literal). */
#define PSUP_PROGRESS_NAMED(name) PSUP__POINT(PSUP_POINT_THROUGHPUT, name)
/* A transaction called name (a string literal) begins / ends here: psup
 * computes its latency with Little's law from the two counts. */
#define PSUP_BEGIN(name) PSUP__POINT(PSUP_POINT_BEGIN, name)
#define PSUP_END(name) PSUP__POINT(PSUP_POINT_END, name)

#endif
