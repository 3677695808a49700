#!/usr/bin/env bash
# Lock contention. Hammer threads prepare outside a mutex, then hold it;
# a client needs the same mutex for each operation (the progress point).
# Making the hammerers' preparation line faster makes them take the lock
# more often and the client slower (really cutting it by 50% costs ~16% of
# the client's throughput, 100% costs half: CAUSAL_CUT, see the target):
# its curve falls and the report flags contention, as Coz did for
# fluidanimate's barrier (Coz 4.2.2). The critical section's own line rises:
# a shorter hold lets the client through sooner.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/causal-lib.sh"
cd "$WORK"

hammer=$(causal_ref causal-contention.c causal_lock_hammer)
cs=$(causal_ref causal-contention.c causal_lock_cs)
done_line=$(causal_ref causal-contention.c causal_lock_done)

run_psup 120 run -q -o h.cbor --experiment-ms 50 -p "$done_line" --line "$hammer" -- "$TARGETS/causal-contention" 10 2
expect_rc 0
causal_report h.cbor h.json
causal_slope_in h.json "$hammer" -5 -0.05 "hammer line (contention)"
jq_check h.json '[.causal.lines[] | select(.line == "'"$hammer"'") | .contention] == [true]' \
	"the hammer line's falling curve is not flagged as contention"

run_psup 120 run -q -o c.cbor --experiment-ms 50 -p "$done_line" --line "$cs" -- "$TARGETS/causal-contention" 10 2
expect_rc 0
causal_report c.cbor c.json
causal_slope_in c.json "$cs" 0.05 3 "critical section"
causal_order "c.json h.json" "$cs" "$hammer" 0.2 "critical section above hammer line"
jq_check c.json '[.causal.lines[] | select(.line == "'"$cs"'") | .contention] == [false]' \
	"the critical section's rising curve is flagged as contention"
check_nothing_left
