/* What the commands share of option parsing: naming an option in a message,
 * the message, and opening -o FILE. */
#include "builtin/builtin.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

/* Whether longopts has the option name[0..n) with value val. */
static bool has_long(const struct option *longopts, const char *name, size_t n, int val)
{
	for (; longopts->name; longopts++)
		if (longopts->val == val && strlen(longopts->name) == n &&
		    strncmp(longopts->name, name, n) == 0)
			return true;
	return false;
}

/*
 * getopt leaves optind past an option's value, so argv[optind - 1] is the
 * value ("-d 5" was reported as "unknown option '5'"); and without a leading
 * ':' in the optstring a missing value reads as an unknown option. The option
 * is named from what getopt_long matched instead. Test: t0020-cli-messages.
 */
const char *builtin_option_name(int c, int longindex, const struct option *longopts,
				char **argv, char *buf, size_t len)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";
	bool is_long = arg && strncmp(arg, "--", 2) == 0;
	size_t n = is_long ? strcspn(arg, "=") : 0;

	if (c != '?' && c != ':' && longindex >= 0)
		snprintf(buf, len, "--%s", longopts[longindex].name);
	else if (c != '?' && c != ':' && c < 256)
		snprintf(buf, len, "-%c", c);
	else if (is_long && (c == ':' || !optopt || optopt >= 256))
		snprintf(buf, len, "%.*s", (int)n, arg); /* a long option */
	else if (is_long && arg[n] == '=' && has_long(longopts, arg + 2, n - 2, optopt))
		snprintf(buf, len, "%s", arg); /* --quiet=3: a value it does not take */
	else if (optopt > 0 && optopt < 256)
		snprintf(buf, len, "-%c", optopt);
	else
		snprintf(buf, len, "%s", arg ? arg : "?");
	return buf;
}

int builtin_option_error(const char *prefix, const char *cmd, int c, int longindex,
			 const struct option *longopts, char **argv)
{
	char name[64];
	const char *opt = builtin_option_name(c, longindex, longopts, argv, name, sizeof(name));

	if (c == ':')
		pr_err("%s%soption '%s' needs a value; see 'psup %s --help'", prefix ? prefix : "",
		       prefix ? ": " : "", opt, cmd);
	else
		pr_err("%s%sunknown option '%s'; see 'psup %s --help'", prefix ? prefix : "",
		       prefix ? ": " : "", opt, cmd);
	return 2;
}

FILE *builtin_output_open(const char *cmd, const char *path, bool force, struct psup_output *of)
{
	int rc = psup_output_open(path, force ? PSUP_OUTPUT_FORCE : 0, of);
	FILE *f;

	if (rc == -EEXIST) {
		pr_err("%s: %s already exists; name another file, or use --force to replace it", cmd,
		       path);
		return NULL;
	}
	if (rc) {
		pr_err("%s: cannot write %s: %s", cmd, path, psup_output_strerror(rc));
		return NULL;
	}
	f = fdopen(of->fd, "w");
	if (!f) {
		pr_err("%s: %s: %s", cmd, path, strerror(errno));
		psup_output_discard(of, path);
		close(of->fd);
		of->fd = -1;
	}
	return f;
}
