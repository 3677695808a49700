#!/usr/bin/env bash
# A saturated lock (issue 19's "critical sections under-predicted"): two
# threads each work 1 unit outside a pthread mutex and 2 inside it, so the
# lock is the program and a critical section x% shorter makes the program
# about x% faster (really cut: 23-25% at 25%, 47-49% at 50%, 76% at 100%).
# With default-length experiments psup used to read about half of that
# (slope 0.39-0.51): a thread's debt carried into its wait for the mutex was
# paid after the wait, inside the critical section it then took, and the
# experiment's settling (the last debts paid, at native speed) counted as
# part of the measured time (docs/causal.md, "Experiments").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/causal-lib.sh"
cd "$WORK"

cs=$(causal_ref causal-saturated.c causal_sat_cs)

run_psup 120 run -q -o s.cbor -p causal_sat_op_done --line "$cs" -- "$TARGETS/causal-saturated" 20
expect_rc 0
causal_report s.cbor s.json
jq_check s.json '.causal.progress_points[0].visits > 1000' "the progress point counted too few operations"
causal_slope_in s.json "$cs" 0.6 1.5 "critical section (truth about 0.8)"
m=$(causal_wmean s.json "$cs" 50)
note "critical section: mean predicted program speedup at >= 50% line speedup: $m% (truth 48-76%)"
in_range "$m" 38 1000 || { causal_show s.json; fail "the critical section predicts $m% at >= 50%, truth 48-76%"; }
check_nothing_left
