#!/usr/bin/env bash
# A producer/consumer pipeline over a pthread mutex and condvars, the
# consumer twice as slow as the producer: only the consumer's line matters.
# Speeding it gains 1:1 up to 50% (then the producer limits), speeding the
# producer gains nothing. Experiments pick their lines at random from the
# samples (the normal mode); the progress point is the consumer's count.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/causal-lib.sh"
cd "$WORK"

consume=$(causal_ref causal-pipeline.c causal_pipe_consume)
produce=$(causal_ref causal-pipeline.c causal_pipe_produce)
done_line=$(causal_ref causal-pipeline.c causal_pipe_done)

run_psup 120 run -q -o p.cbor --experiment-ms 50 -p "$done_line" -- "$TARGETS/causal-pipeline" 10 pthread
expect_rc 0
grep -q '^items [1-9]' "$WORK/out" || fail "the pipeline did not finish its items: $(cat "$WORK/out")"
causal_report p.cbor p.json
jq_check p.json '.causal.info.syscall_crediting == true' "run mode without seccomp delay crediting"
causal_slope_in p.json "$consume" 0.3 1.5 "slower stage"
s_cons=$(causal_get p.json "$consume" slope)
causal_slope_in p.json "$produce" -0.5 0.2 "faster stage"
s_prod=$(causal_get p.json "$produce" slope)
in_range "$(awk -v a="$s_cons" -v b="$s_prod" 'BEGIN { print a - b }')" 0.25 10 ||
	{ causal_show p.json; fail "the slower stage ($s_cons) does not clearly beat the faster one ($s_prod)"; }
check_nothing_left
