#!/usr/bin/env bash
# Serial and parallel phases (Amdahl). Per round the main thread works 2
# units alone, then two workers work 1 unit each side by side: the CPU
# profile splits the samples evenly between the two lines, but the serial
# line holds 2/3 of the wall time and the parallel line 1/3 (speeding the
# parallel line in one thread only would gain nothing: the other thread
# still runs it; Coz 3.4.3's rule makes the line's samples in both threads
# count once). Really cutting each line by 50% gains ~26% and ~11% here
# (CAUSAL_CUT, see the target), slopes ~0.5 and ~0.2.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/causal-lib.sh"
cd "$WORK"

serial=$(causal_ref causal-amdahl.c causal_amdahl_serial)
parallel=$(causal_ref causal-amdahl.c causal_amdahl_parallel)
round=$(causal_ref causal-amdahl.c causal_amdahl_round)

run_psup 120 run -q -o a.cbor --experiment-ms 50 -p causal_amdahl_round_done -- "$TARGETS/causal-amdahl" 12
expect_rc 0
causal_report a.cbor a.json
jq_check a.json '.causal.progress_points[0].visits > 100' "the FUNCTION progress point counted no rounds"
# On an idle machine ~0.5 and ~0.2; on a loaded one the parallel phase
# runs less in parallel and both move towards 0.5: assert the order.
causal_slope_in a.json "$serial" 0.05 1.5 "serial phase"
causal_slope_in a.json "$parallel" -0.3 0.7 "parallel phase"
causal_order a.json "$serial" "$parallel" 0.05 "serial above parallel"
jq_check a.json '[.causal.lines[].line] | index("'"$serial"'") < index("'"$parallel"'")' \
	"lines are not ranked by slope: the serial line comes after the parallel one"
check_nothing_left
