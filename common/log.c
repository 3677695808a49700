#include "common/log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

int psup_log_level = PSUP_LOG_INFO;

static bool progress_shown;

static void progress_clear(void)
{
	if (progress_shown) {
		fputs("\r\033[K", stderr);
		progress_shown = false;
	}
}

void psup_log(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > psup_log_level)
		return;
	progress_clear();
	fputs(level == PSUP_LOG_WARN ? "psup: warning: " : "psup: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void psup_progress(const char *fmt, ...)
{
	static int tty = -1;
	va_list ap;

	if (tty < 0)
		tty = isatty(STDERR_FILENO);
	if (!tty || psup_log_level < PSUP_LOG_INFO)
		return;
	fputs("\r\033[K", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
	progress_shown = true;
}

void psup_progress_end(void)
{
	progress_clear();
	fflush(stderr);
}
