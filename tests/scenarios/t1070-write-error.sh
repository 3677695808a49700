#!/usr/bin/env bash
# psup's own failure never harms the target: when the record cannot be
# written (a full disk: /dev/full), psup says so once, detaches, lets the
# program finish, and still exits with its status.
. "$(dirname "$0")/lib.sh"
cd "$WORK"
run_psup 60 run -f -o /dev/full -- "$TARGETS/spin" 0.5 5
expect_rc 5
grep -q "cannot write /dev/full" "$WORK/err" || fail "no write error reported: $(cat "$WORK/err")"
[ "$(grep -c 'cannot write' "$WORK/err")" -eq 1 ] || fail "the write error was reported more than once"
check_nothing_left
