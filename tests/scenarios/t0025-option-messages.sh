#!/usr/bin/env bash
# Option errors name the option the user wrote and what is wrong with it, in
# one line (issue 22): a missing value is not an "unknown option", and the
# value of an option is never taken for the option.
. "$(dirname "$0")/lib.sh"

cd "$WORK"
says() { # expected rc, expected text, args...
	local rc=$1 text=$2
	shift 2
	run_psup 10 "$@"
	expect_rc "$rc"
	[ "$(wc -l <"$WORK/err")" -eq 1 ] || { cat "$WORK/err" >&2; fail "'psup $*' did not print exactly one line"; }
	grep -q '^psup: ' "$WORK/err" || fail "'psup $*' error is not prefixed 'psup: '"
	grep -qF -- "$text" "$WORK/err" || fail "'psup $*' says '$(cat "$WORK/err")', expected '$text'"
}

says 2 "option '-o' needs a value" run -o
says 2 "option '--output' needs a value" run --output
says 2 "option '-d' needs a value" attach -d
says 2 "option '--duration' needs a value" attach --duration
says 2 "option '-d' is for psup attach" run -d 5 true
says 2 "option '--duration' is for psup attach" run --duration -5 true
says 2 "option '--no-follow-forks' is for psup run" attach --no-follow-forks 1
says 2 "unknown option '-x'" run -qx true
says 2 "unknown option '--bogus'" run --bogus=3 true
says 2 "option '-o' needs a value" report -o
says 2 "option '--view' needs a value" report --view
says 2 "unknown option '-z'" report -z
says 2 "expected one PID" attach 12 13
says 2 "invalid --speedup-step '30': expected 5, 10, 20, 25, 50 or 100" run --speedup-step 30 true
[ -e psup.cbor ] && fail "a usage error left psup.cbor behind"
exit 0
