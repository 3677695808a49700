#ifndef PSUP_COMMON_LOG_H
#define PSUP_COMMON_LOG_H

/*
 * One log sink for every part: stderr, prefixed "psup: ". stdout belongs to
 * reports. The default level shows info (a command's closing summary); -v
 * adds debug, -vv traces every wait status; -q keeps errors only.
 */

enum psup_log_level {
	PSUP_LOG_ERR = 0,
	PSUP_LOG_WARN = 1,
	PSUP_LOG_INFO = 2,
	PSUP_LOG_DEBUG = 3,
	PSUP_LOG_TRACE = 4,
};

extern int psup_log_level;

void psup_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define pr_err(...) psup_log(PSUP_LOG_ERR, __VA_ARGS__)
#define pr_warn(...) psup_log(PSUP_LOG_WARN, __VA_ARGS__)
#define pr_info(...) psup_log(PSUP_LOG_INFO, __VA_ARGS__)
#define pr_debug(...) \
	do { \
		if (psup_log_level >= PSUP_LOG_DEBUG) \
			psup_log(PSUP_LOG_DEBUG, __VA_ARGS__); \
	} while (0)
#define pr_trace(...) \
	do { \
		if (psup_log_level >= PSUP_LOG_TRACE) \
			psup_log(PSUP_LOG_TRACE, __VA_ARGS__); \
	} while (0)

/*
 * The progress line: one line on stderr, rewritten in place, only when stderr
 * is a terminal and the level is at least INFO (-q hides it). Cleared by
 * psup_progress_end() and before any other log line.
 */
void psup_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void psup_progress_end(void);

#endif
