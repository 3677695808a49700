#!/usr/bin/env bash
# A program that ends (~50 ms natively) in the middle of a 2 s experiment:
# psup must not hold its exit for the experiment, must mirror its exit
# status, and must leave a complete record (the report reads it, the
# progress point's visits are all there), also when it ends while its
# threads are being paused. The 20 s limit is a hang guard, not a timing
# assertion.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/causal-lib.sh"
cd "$WORK"

run_psup 20 run -q -o s.cbor --experiment-ms 2000 -p causal_short_item_done -- "$TARGETS/causal-short" 60 7
expect_rc 7
grep -qx 'items 120' "$WORK/out" || fail "the program did not do its 120 items: $(cat "$WORK/out")"
causal_report s.cbor s.json
jq_check s.json '.causal.info.mode == "run"' "no causal run info in the record of a short run"
jq_check s.json '.causal.progress_points | length == 1 and .[0].visits == 120' \
	"the progress point did not count the 120 visits of a short run"

# Several experiments per run: still no hold at exit.
run_psup 20 run -q -o t.cbor --experiment-ms 10 -p causal_short_item_done -- "$TARGETS/causal-short" 300 0
expect_rc 0
causal_report t.cbor t.json

# Ending while its threads are being paused: every sample in the work line
# owes the other thread a full period (--speedup 100), so the program exits
# with pauses under way. Its status is still its own, and nothing is left.
work=$(causal_ref causal-short.c causal_short_work)
run_psup 20 run -q -o u.cbor --experiment-ms 2000 --line "$work" --speedup 100 -p causal_short_item_done -- "$TARGETS/causal-short" 150 9
expect_rc 9
grep -qx 'items 300' "$WORK/out" || fail "paused to its end: the program did not do its 300 items: $(cat "$WORK/out")"
causal_report u.cbor u.json

if [ -x "$TARGETS/causal-short-psuph" ]; then
	run_psup 20 run -q -o p.cbor --experiment-ms 2000 --causal -- "$TARGETS/causal-short-psuph" 60 3
	expect_rc 3
	causal_report p.cbor p.json
	jq_check p.json '[.causal.progress_points[] | select(.kind == "throughput")] | length == 1 and .[0].visits == 120' \
		"the PSUP_PROGRESS point of a short run did not count 120 visits"
fi
check_nothing_left
