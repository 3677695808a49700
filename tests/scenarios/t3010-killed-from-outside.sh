#!/usr/bin/env bash
# Scenario 13: SIGKILL from outside while threads sit in psup's stops and
# run: the exit is reported (psup dies of SIGKILL too), the record is readable.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

"$PSUP" run -q -o k.cbor -- "$TARGETS/threads" 4 30 &
ppid=$!
# By its name: psup's other child, the one that starts its keeper
# (sampler/event.c), lives a moment, and the target is psup's child before
# its exec too.
wait_for "pgrep -x -P $ppid threads >/dev/null" 10 || fail "target did not start"
tpid=$(pgrep -x -P $ppid threads)
# killed once its threads ran 0.5 s of CPU time (about 500 samples), not
# after 1 s of wall time that a loaded machine may give them little of
wait_cpu $tpid 500 || fail "the target did not run 0.5 s of CPU in 60 s"
kill -KILL $tpid
wait_for "! kill -0 $ppid 2>/dev/null" 15 || fail "psup did not end after its target was killed"
wait $ppid
rc=$?
[ $rc -eq 137 ] || fail "psup exited $rc, expected 137 (mirroring SIGKILL)"
report_json k.cbor >k.json
jq_check k.json '.summary.samples > 100' "samples before the kill were lost"
jq_check k.json '.runs[0].complete == true' "the record has no end record"
check_nothing_left
