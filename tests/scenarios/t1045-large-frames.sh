#!/usr/bin/env bash
# A function whose stack frame (64 KiB) is larger than the sampler's stack
# snapshot (8 KiB), called from main: its samples still unwind to main and
# _start (the words above the snapshot are read from the live stack), and
# the stacks that cannot be finished count as unwind failures, never as
# stacks rooted at the big frame.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

run_psup 120 run -q -o big.cbor -- "$TARGETS/bigframe" 1.5
expect_rc 0
report_json big.cbor >big.json
work=$(func_total_pct big.json big_frame_work)
main=$(func_total_pct big.json main)
note "big_frame_work $work%, main $main% (total)"
in_range "$work" 80 100 || fail "big_frame_work has $work% of the samples, expected most"
in_range "$main" 80 100 || {
	jq -c '.summary' big.json >&2
	fail "main has $main% in total: stacks stop at the 64 KiB frame"
}
# Every sample either reaches the root or counts as cut short.
jq_check big.json '[.functions[] | select(.function == "_start") | .total_percent] | add >= 80' \
	"the samples do not reach _start"
check_nothing_left
