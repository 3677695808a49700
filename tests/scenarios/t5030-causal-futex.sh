#!/usr/bin/env bash
# The same pipeline over a hand-rolled lock and condition waits on raw
# syscall(SYS_futex) (Rust's std, Go, hand-rolled locks: nothing for an
# LD_PRELOAD profiler to intercept). psup sees the futex calls themselves,
# so the answer must not change: the consumer's line matters, the
# producer's does not. Each line is fixed with --line so both get enough
# experiments; then the static build (no dynamic loader at all).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/causal-lib.sh"
cd "$WORK"

consume=$(causal_ref causal-pipeline.c causal_pipe_consume)
produce=$(causal_ref causal-pipeline.c causal_pipe_produce)
done_line=$(causal_ref causal-pipeline.c causal_pipe_done)

run_psup 120 run -q -o c.cbor --experiment-ms 50 -p "$done_line" --line "$consume" -- "$TARGETS/causal-pipeline" 6 futex
expect_rc 0
causal_report c.cbor c.json
jq_check c.json '[.causal.lines[], .causal.insufficient[]] | all(.line == "'"$consume"'")' \
	"--line $consume: experiments ran on other lines"
causal_slope_in c.json "$consume" 0.05 2 "raw futex, slower stage"

run_psup 120 run -q -o p.cbor --experiment-ms 50 -p "$done_line" --line "$produce" -- "$TARGETS/causal-pipeline" 6 futex
expect_rc 0
causal_report p.cbor p.json
causal_slope_in p.json "$produce" -0.6 0.3 "raw futex, faster stage"
causal_order "c.json p.json" "$consume" "$produce" 0.05 "raw futex: slower stage above faster stage"

run_psup 120 run -q -o s.cbor --experiment-ms 50 -p "$done_line" --line "$consume" -- "$TARGETS/causal-pipeline-static" 6 futex
expect_rc 0
causal_report s.cbor s.json
causal_slope_in s.json "$consume" 0.05 2 "static binary, raw futex, slower stage"
check_nothing_left
