/*
 * Kernel constants newer than some build machines' headers (the values are
 * the kernel's ABI and never change).
 */
#ifndef PSUP_COMMON_KCOMPAT_H
#define PSUP_COMMON_KCOMPAT_H

#include <linux/futex.h>
#include <sys/syscall.h>

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449 /* Linux 5.16 */
#endif
#ifndef FUTEX_LOCK_PI2
#define FUTEX_LOCK_PI2 13 /* Linux 5.14 */
#endif

#endif
