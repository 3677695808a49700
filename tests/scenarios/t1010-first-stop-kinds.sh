#!/usr/bin/env bash
# Scenario 1: the child's first stop is seen as a signal stop (usual) or as a
# group stop (the seize comes late: PSUP_TEST_SEIZE_DELAY_MS forces it). Both
# must run the program normally and sample it.
. "$(dirname "$0")/lib.sh"

for delay in "" 200; do
	PSUP_TEST_SEIZE_DELAY_MS=$delay run_psup 60 run -q -o "$WORK/r$delay.cbor" -- "$TARGETS/spin" 0.3 3
	expect_rc 3
	report_json "$WORK/r$delay.cbor" >"$WORK/r.json"
	jq_check "$WORK/r.json" '.summary.samples > 100' "too few samples (delay '$delay')"
	s=$(func_total_pct "$WORK/r.json" spin_loop)
	in_range "$s" 80 100 || fail "spin_loop has $s% of samples (delay '$delay')"
done
check_nothing_left
