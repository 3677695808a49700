#!/usr/bin/env bash
# Lock contention. A hammer thread prepares outside a lock, then holds it;
# a client needs the same lock for each operation (the progress point).
# Making the hammerer's preparation line faster makes it take the lock more
# often and the client wait longer: really cutting it by 50% costs ~27% of
# the client's throughput, 100% ~33% (CAUSAL_CUT, see the target). Its
# curve falls and the report flags contention, as Coz did for fluidanimate's
# barrier (Coz 4.2.2). The critical section's own line rises (+26% at 50%):
# a shorter hold lets the client through sooner.
#
# The lock hands over in arrival order and the phases last milliseconds
# with random lengths (FIFO 1, units of 3M iterations, ~5 ms, the
# hammerer's twice the client's): the contention is the client waiting out the hold in
# progress, which pausing threads at a 1 ms sample period can reproduce.
# pthread's mutex lets an unlocking thread barge back in within
# microseconds, which decides who waits at a scale no sampling profiler
# sees (tests/bench/causal/README.md, docs/causal.md).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/causal-lib.sh"
cd "$WORK"

hammer=$(causal_ref causal-contention.c causal_lock_hammer)
cs=$(causal_ref causal-contention.c causal_lock_cs)
done_line=$(causal_ref causal-contention.c causal_lock_done)

args=(20 1 3000000 1 2)
run_psup 120 run -q -o h.cbor --experiment-ms 100 -p "$done_line" --line "$hammer" -- "$TARGETS/causal-contention" "${args[@]}"
expect_rc 0
causal_report h.cbor h.json
causal_slope_in h.json "$hammer" -5 -0.05 "hammer line (contention)"
jq_check h.json '[.causal.lines[] | select(.line == "'"$hammer"'") | .contention] == [true]' \
	"the hammer line's falling curve is not flagged as contention"

run_psup 120 run -q -o c.cbor --experiment-ms 100 -p "$done_line" --line "$cs" -- "$TARGETS/causal-contention" "${args[@]}"
expect_rc 0
causal_report c.cbor c.json
causal_slope_in c.json "$cs" 0.05 3 "critical section"
causal_order "c.json h.json" "$cs" "$hammer" 0.2 "critical section above hammer line"
jq_check c.json '[.causal.lines[] | select(.line == "'"$cs"'") | .contention] == [false]' \
	"the critical section's rising curve is flagged as contention"
check_nothing_left
