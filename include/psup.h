/*
 * psup.h: source-level progress points for psup's causal profiler.
 *
 * Header only: no library, no link flag, no initialization. Each macro is an
 * atomic increment of a counter that lives in the ELF section "psup_points"
 * of the binary or shared library it is compiled into. psup finds the
 * section from the file's section headers (stripped binaries keep them)
 * and reads the counters from the running program's memory; without psup
 * they are counters nobody reads (one `lock incq` per visit, a few ns).
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

/*
 * Each use emits its record into the section with inline assembly and
 * increments the record's count with one `lock incq`. Not a static
 * variable with a section attribute: GCC drops that attribute for the
 * statics of C++ inline functions and templates (COMDAT objects), and the
 * counters would be lost. A copy of the code made by the compiler (inlining,
 * cloning, a template instantiated twice) gets its own record with the
 * same name; psup adds them up. x86-64 (psup's only target); -masm=att
 * (the default) and -masm=intel both work. The name is pasted into the
 * assembly: a plain string literal, without '%', '"' or '\\'.
 */
#define PSUP__KIND_THROUGHPUT 1
#define PSUP__KIND_BEGIN 2
#define PSUP__KIND_END 3

#define PSUP__POINT(kind_, name_) \
	__asm__ __volatile__(".pushsection psup_points,\"aw\",@progbits\n\t" \
			     ".balign 8\n" \
			     "771:\n\t" \
			     ".quad 0x31544e5050555350\n\t" \
			     ".quad 0\n\t" \
			     ".long " PSUP__STR(kind_) "\n\t" \
						       ".long 772f - 771b\n\t" \
						       ".asciz \"" name_ "\"\n" \
						       "772:\n\t" \
						       ".balign 8\n\t" \
						       ".popsection\n\t" \
						       "lock {incq 771b+8(%%rip)|inc qword ptr [rip + 771b + 8]}" \
			     : \
			     : \
			     : "cc")

/* One unit of work done here (throughput), named after the file and line. */
#define PSUP_PROGRESS PSUP__POINT(PSUP__KIND_THROUGHPUT, __FILE__ ":" PSUP__STR(__LINE__))
/* The same with a name (a string literal). */
#define PSUP_PROGRESS_NAMED(name) PSUP__POINT(PSUP__KIND_THROUGHPUT, name)
/* A transaction called name (a string literal) begins / ends here: psup
 * computes its latency with Little's law from the two counts. */
#define PSUP_BEGIN(name) PSUP__POINT(PSUP__KIND_BEGIN, name)
#define PSUP_END(name) PSUP__POINT(PSUP__KIND_END, name)

#endif
