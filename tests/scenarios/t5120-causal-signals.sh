#!/usr/bin/env bash
# A program with its own SIGPROF timer and SIGSEGV handler (which an
# in-process profiler like Coz takes for itself) runs unchanged under causal
# profiling: it checks its own handlers saw every tick and fault (exit 0),
# and experiments happen.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/causal-lib.sh"
cd "$WORK"

work=$(causal_ref causal-signals.c causal_sig_work)
run_psup 120 run -q -o g.cbor --experiment-ms 50 -p causal_sig_item_done -- "$TARGETS/causal-signals" 6
[ "$RC" -eq 0 ] || { cat "$WORK/out" "$WORK/err" >&2; fail "the program's own signal handlers misbehaved under psup (exit $RC)"; }
note "$(cat "$WORK/out")"
causal_report g.cbor g.json
jq_check g.json '.causal.info.experiments >= 10 and .causal.progress_points[0].visits > 100' \
	"no experiments or no progress in a program with its own SIGPROF/SIGSEGV handlers"
n=$(causal_exps g.json "$work")
[ "$n" -ge 1 ] || { causal_show g.json; fail "no experiment on the main work line"; }
check_nothing_left
