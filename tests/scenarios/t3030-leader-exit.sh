#!/usr/bin/env bash
# Scenario 15: the leader calls pthread_exit, other threads run on: no early
# reap, the exit status comes from the last thread; attach works too.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

run_psup 60 run -q -o l.cbor -- "$TARGETS/leader_exit" 0.5
expect_rc 7
report_json l.cbor >l.json
jq_check l.json '.summary.samples > 300' "threads after the leader's exit were not sampled"

"$TARGETS/leader_exit" 3 &
BG=$!
BG_PIDS+=("$BG")
wait_for "[ \"\$(proc_state $BG)\" = Z ]" 10 || fail "leader did not become a zombie"
run_psup 30 attach -q -d 0.5 -o a.cbor $BG
expect_rc 0
report_json a.cbor >a.json
jq_check a.json '(.threads | length) >= 1 and .summary.samples > 100' "attach with a zombie leader sampled nothing"
wait $BG
rc=$?
[ $rc -eq 7 ] || fail "target exited $rc after the detach, expected 7"
