#!/usr/bin/env bash
# Scenario 16: execve from a non-leader thread, 100 times: thread ids are
# remapped, per-thread state is reset, the program ends normally.
. "$(dirname "$0")/lib.sh"
cd "$WORK"
run_psup 120 run -q -o x.cbor -- "$TARGETS/execer" 100
expect_rc 0
report_json x.cbor >x.json
jq_check x.json '.summary.samples >= 0' "record unreadable"
check_nothing_left
