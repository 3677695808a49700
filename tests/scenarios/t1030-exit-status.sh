#!/usr/bin/env bash
# Rule 14: psup run mirrors the target's exit status, and its fatal signal.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

for st in 0 1 7 255; do
	run_psup 30 run -q -f -- "$TARGETS/spin" 0.05 $st
	expect_rc $st
done

run_psup 30 run -q -f -- "$TARGETS/segv"
expect_rc $((128 + 11))
report_json psup.cbor >r.json
jq_check r.json '.summary.samples >= 0' "record of a crashed target unreadable"

run_psup 30 run -q -f -- "$TARGETS/segv" abort
expect_rc $((128 + 6))
[ -e core ] && fail "psup left a core file of its own"
check_nothing_left
