#!/usr/bin/env bash
# Scenario 2: exec failures in the child give a clear message and exit
# 127 (not found) or 126 (not executable), like a shell; no record is left.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

run_psup 30 run -- ./no-such-program
expect_rc 127
grep -q "no-such-program" "$WORK/err" || fail "message does not name the program"
grep -qi "no such file" "$WORK/err" || fail "message does not say why"

printf 'plain text\n' >not-exec
chmod -x not-exec
run_psup 30 run -- ./not-exec
expect_rc 126
grep -qi "permission denied" "$WORK/err" || fail "EACCES not explained"

mkdir adir
run_psup 30 run -- ./adir
expect_rc 126

[ -e psup.cbor ] && fail "a failed exec left psup.cbor behind"
check_nothing_left
