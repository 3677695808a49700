#!/usr/bin/env bash
# What psup tells about progress points while the program runs: a FILE:LINE
# on a line without code moves to the next line with code and says which; a
# breakpoint point visited thousands of times a second is flagged once with
# its rate, its cost and the alternatives; a spec found nowhere is named.
# (Exact counts: t5100-causal-count and the unit test test-progress.)
. "$(dirname "$0")/lib.sh"
cd "$WORK"

src="$SRCDIR/tests/targets/causal-count.c"
# The first line of the file is a comment: no code there.
head -1 "$src" | grep -q '^/\*' || fail "causal-count.c no longer starts with a comment"

# ~20 us of work per visit, 60000 visits: well over 2% of a CPU in debug
# exceptions at any speed, and longer than the 1 s rate window.
run_psup 300 run -o n.cbor --experiment-ms 20 -p causal-count.c:1 -- "$TARGETS/causal-count" 60000 1
expect_rc 0
grep -qx 'visits 60000' "$WORK/out" || fail "the target did not run to its end: $(cat "$WORK/out")"
grep -q -- '-p causal-count.c:1: no code at line 1; using line [0-9]' "$WORK/err" ||
	{ cat "$WORK/err" >&2; fail "no note that line 1 has no code"; }
grep -q -- '-p causal-count.c:1: [0-9]* visits/s, each a debug exception' "$WORK/err" ||
	{ cat "$WORK/err" >&2; fail "no visit-rate warning for a point visited thousands of times a second"; }
grep -q -- '--sampled-progress causal-count.c:1, or a PSUP_PROGRESS' "$WORK/err" ||
	fail "the visit-rate warning does not name the alternatives"
[ "$(grep -c 'visits/s' "$WORK/err")" = 1 ] || fail "the visit-rate warning was repeated"

# -q keeps warnings away, errors only.
run_psup 120 run -q -o q.cbor --experiment-ms 20 -p causal-count.c:1 -- "$TARGETS/causal-count" 3000 1
expect_rc 0
grep -q 'no code at line' "$WORK/err" && fail "-q printed a note"

run_psup 120 run -o x.cbor --experiment-ms 20 -p no_such_function_xyz -- "$TARGETS/causal-count" 1000 1
grep -q -- '-p no_such_function_xyz: not found in pid' "$WORK/err" ||
	{ cat "$WORK/err" >&2; fail "no note that the function was not found"; }
check_nothing_left
