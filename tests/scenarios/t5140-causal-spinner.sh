#!/usr/bin/env bash
# A thread spins beside the work, both busy, as many busy threads as the
# machine has CPUs (2 here): psup's own work takes CPU from one of them.
# The spin line has nothing to do with progress: its truth is 0 at every
# speedup, so it must not be flagged as contention; the worker's line a
# (7 of each round's 10 units) gains 70% at 100%. Every pause psup makes
# for the spin line costs the paused worker more than the delay asked
# (psup runs on its CPU at the resume, and its own work preempts it):
# counted as the program's, that read as a falling curve (slope -0.4 on 2
# cores); it is taken off what the worker owes (docs/causal.md, "The
# observer").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/causal-lib.sh"
cd "$WORK"

spin=$(causal_ref causal-spinner.c causal_spinner_spin)
a=$(causal_ref causal-spinner.c causal_spinner_a)

run_psup 120 run -q -o s.cbor --experiment-ms 50 -p causal_spinner_round_done -- "$TARGETS/causal-spinner" 20
expect_rc 0
causal_report s.cbor s.json
jq_check s.json '.causal.progress_points[0].visits > 1000' "the progress point counted too few rounds"
causal_slope_in s.json "$spin" -0.25 0.25 "spin line (truth 0)"
jq_check s.json '[.causal.lines[] | select(.line == "'"$spin"'") | .contention] | all | not' \
	"the spin line, whose truth is flat, is flagged as contention"
causal_order s.json "$a" "$spin" 0.25 "the worker's line above the spin line"
m=$(causal_wmean s.json "$a" 50)
note "line a: mean predicted program speedup at >= 50% line speedup: $m% (truth 35-70%)"
in_range "$m" 15 1000 || { causal_show s.json; fail "line a predicts $m% at >= 50%, truth 35-70%"; }
check_nothing_left
