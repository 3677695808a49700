#!/usr/bin/env bash
# `kill -INT` of psup alone in run mode, the program in psup's process group
# (the terminal's Ctrl-C would have reached both; this reached psup only):
# the recording stops at once and is kept, psup detaches and passes the
# SIGINT on to the program as Ctrl-C would, and mirrors the program's end.
# t4030 keeps the other cases (SIGTERM, a program in its own session).
. "$(dirname "$0")/lib.sh"
cd "$WORK"

gone() { local st; st=$(proc_state "$1"); [ -z "$st" ] || [ "$st" = Z ]; }

# A program that dies of SIGINT, as it would of Ctrl-C. (A background
# command of a non-interactive shell ignores SIGINT: give it the default.)
"$PSUP" run -q -o i.cbor -- env --default-signal=INT "$TARGETS/spin" 60 &
ppid=$!
wait_for "pgrep -x -P $ppid spin >/dev/null" 10 || fail "target did not start"
wait_cpu "$(pgrep -x -P $ppid spin)" 200 20 || fail "spin did not run 0.2 s of CPU in 20 s"
kill -INT $ppid
wait_for "gone $ppid" 20 || { kill -TERM $ppid; fail "SIGINT to psup alone did nothing"; }
wait $ppid
rc=$?
[ $rc -eq $((128 + 2)) ] || fail "psup exited $rc, expected 130 (the program's death by SIGINT)"
report_json i.cbor >i.json
jq_check i.json '.summary.samples > 0' "no samples recorded"

# A program that ignores SIGINT (as it inherited here) runs on: psup has
# detached, and the record is complete while the program still runs. Its
# threads blocked in calls the kernel does not restart after the detach
# (tests/targets/noeintr.c) see no EINTR: it exits 0.
"$PSUP" run -q -o n.cbor -- "$TARGETS/noeintr" 6 &
ppid=$!
wait_for "pgrep -x -P $ppid noeintr >/dev/null" 10 || fail "noeintr did not start"
child=$(pgrep -x -P $ppid noeintr)
# Its spinning thread starts once every caller made its call: wait for its
# CPU time, not for the clock (a loaded machine starts the callers slowly).
wait_cpu "$child" 300 20 || fail "noeintr did not run 0.3 s of CPU in 20 s"
kill -INT $ppid
wait_for "[ \"\$(tracer_of $child)\" = 0 ]" 20 || fail "psup did not detach on SIGINT"
gone "$child" && note "noeintr ended before the check (a loaded machine)"
report_json n.cbor >n.json
jq_check n.json '.summary.samples > 0' "no samples in the record written at the detach"
wait $ppid
rc=$?
[ $rc -eq 0 ] || fail "psup exited $rc, expected the program's 0 (an EINTR after the detach?)"
check_nothing_left
