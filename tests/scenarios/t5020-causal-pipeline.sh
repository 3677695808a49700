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

run_psup 120 run -q -o p.cbor --experiment-ms 50 -p "$done_line" -- "$TARGETS/causal-pipeline" 20 pthread
expect_rc 0
grep -q '^items [1-9]' "$WORK/out" || fail "the pipeline did not finish its items: $(cat "$WORK/out")"
causal_report p.cbor p.json
jq_check p.json '.causal.info.syscall_crediting == true' "run mode without seccomp delay crediting"
# Truth: ~1 up to 50% then flat for the consumer, 0 for the producer.
# Bounds for a loaded 2-core machine: the order and the signs. (Under heavy
# oversubscription every prediction shrinks towards 0: task-clock samples
# come only while a thread runs, not while it waits for a CPU, so fewer
# delays are inserted per second of the line's wall time; Coz too.)
causal_slope_in p.json "$consume" 0.05 2 "slower stage"
causal_slope_in p.json "$produce" -0.6 0.3 "faster stage"
causal_order p.json "$consume" "$produce" 0.05 "slower stage above faster stage"
check_nothing_left
