#!/usr/bin/env bash
# Scenario 4: psup SIGKILLed during an attach: the target keeps running, not
# left stopped, not traced.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

start_bg "$TARGETS/busy"
"$PSUP" attach -q -o k.cbor $BG 2>/dev/null &
apid=$!
wait_for "[ \"\$(tracer_of $BG)\" = $apid ]" 10 || fail "psup did not attach"
sleep 0.5
kill -KILL $apid
wait $apid 2>/dev/null
wait_for "[ \"\$(tracer_of $BG)\" = 0 ]" 5 || fail "target still traced after psup died"
st=$(proc_state $BG)
[ "$st" = R ] || [ "$st" = S ] || fail "target in state $st after psup died"
report_json k.cbor >k.json
jq_check k.json '.summary.samples >= 0' "record of a killed attach unreadable"
