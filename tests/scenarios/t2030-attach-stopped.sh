#!/usr/bin/env bash
# Scenario 6: attach to a stopped (T) process, then detach: it is still
# stopped; SIGCONT resumes it.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

start_bg "$TARGETS/stopper" 4
kill -STOP $BG
wait_for "[ \"\$(proc_state $BG)\" = T ]" 10 || fail "target did not stop"
run_psup 30 attach -q -d 0.5 -o s.cbor $BG
expect_rc 0
sleep 0.2
[ "$(proc_state $BG)" = T ] || fail "target not stopped after detach (state $(proc_state $BG))"
kill -CONT $BG
wait $BG
rc=$?
[ $rc -eq 0 ] || fail "stopper exited $rc after SIGCONT"
