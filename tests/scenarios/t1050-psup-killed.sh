#!/usr/bin/env bash
# Scenario 3 (and 13 from psup's side): psup SIGKILLed mid-run while the
# target's threads block in futexes: the target dies with it (EXITKILL), no
# thread is left stopped or sees a failing syscall, and the record written
# so far is still readable.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

"$PSUP" run -q -o killed.cbor -- "$TARGETS/threads" --futex 4 100000000 &
ppid=$!
wait_for "pgrep -f 'threads --futex' -P $ppid >/dev/null" 10 || fail "target did not start"
tpid=$(pgrep -f 'threads --futex' -P $ppid)
sleep 2.5 # past the first periodic flush
kill -KILL $ppid
wait $ppid 2>/dev/null
wait_for "[ -z \"\$(proc_state $tpid)\" ]" 10 || fail "target $tpid survived psup's death (state $(proc_state $tpid))"
report_json killed.cbor >r.json 2>err
jq_check r.json '.summary.samples > 0' "nothing readable in the record of a killed psup"
check_nothing_left
