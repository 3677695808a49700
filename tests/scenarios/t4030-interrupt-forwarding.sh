#!/usr/bin/env bash
# psup run forwards SIGTERM to the program, and SIGINT when the program sits
# in a process group of its own (the terminal's Ctrl-C would not reach it);
# the program's own end (here: death by that signal) is mirrored.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

"$PSUP" run -q -o t.cbor -- "$TARGETS/spin" 30 &
ppid=$!
wait_for "pgrep -x -P $ppid spin >/dev/null" 10 || fail "target did not start"
kill -TERM $ppid
wait $ppid
rc=$?
[ $rc -eq $((128 + 15)) ] || fail "SIGTERM: psup exited $rc, expected 143"

# A background command of a non-interactive shell ignores SIGINT: give the
# program back the default disposition, as a terminal's job would have.
"$PSUP" run -q -o i.cbor -- setsid env --default-signal=INT "$TARGETS/spin" 30 &
ppid=$!
wait_for "pgrep -x -P $ppid spin >/dev/null" 10 || fail "setsid target did not start"
kill -INT $ppid
wait $ppid
rc=$?
[ $rc -eq $((128 + 2)) ] || fail "SIGINT to a target in its own session: psup exited $rc, expected 130"
report_json i.cbor >i.json
jq_check i.json '.summary.samples > 0' "no samples recorded"
check_nothing_left
