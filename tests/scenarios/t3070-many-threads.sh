#!/usr/bin/env bash
# Scenario 30: 1,000 threads calling cheap syscalls: no starvation, bounded
# run time (the timeout), every thread accounted for.
. "$(dirname "$0")/lib.sh"
cd "$WORK"
run_psup 240 run -q -o m.cbor -- "$TARGETS/manythreads" 1000
expect_rc 0
report_json m.cbor >m.json
jq_check m.json '.summary.threads >= 1000' "not every thread was seen"
check_nothing_left
