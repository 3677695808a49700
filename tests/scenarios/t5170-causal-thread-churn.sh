#!/usr/bin/env bash
# What a thread created each round costs in causal mode (issue 19): the
# Figure 1 program with both threads created and joined every round, under
# experiments at 0% on loop a, so that every thread owes in counts and the
# unlock traps follow those counts: a new thread's trap is opened once it
# has lived TRAP_FIRST_NS (20 ms), not at the next tick, so the threads of
# a round of a few milliseconds get none.
# Counts, not time: the bounds hold on a loaded machine (a round there takes
# longer, so there are fewer of them, and a thread that lives past 20 ms
# gets its trap as before).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/causal-lib.sh"
cd "$WORK"

a=$(causal_ref causal-figure1.c causal_fig1_a)
round=$(causal_ref causal-figure1.c causal_fig1_round)

run_psup 120 run -v -o churn.cbor --experiment-ms 50 -p "$round" --line "$a" --speedup 0 -- "$TARGETS/causal-figure1" 3 spawn
expect_rc 0
rounds=$(awk '$1 == "rounds" { print $2 }' "$WORK/out")
[ -n "$rounds" ] && [ "$rounds" -ge 20 ] || fail "the program ran only '$rounds' rounds"
stats=$(grep 'unlock traps' "$WORK/err")
[ -n "$stats" ] || { cat "$WORK/err" >&2; fail "no causal statistics line (-v)"; }
traps=$(sed -n 's/.* \([0-9]*\) unlock traps.*/\1/p' <<<"$stats")
opened=$(sed -n 's/.*unlock traps (\([0-9]*\) opened).*/\1/p' <<<"$stats")
note "rounds $rounds, $traps unlock traps, $opened traps opened"
[ -n "$traps" ] && [ -n "$opened" ] || fail "unreadable statistics: $stats"
# The experiments ran, and the creator's trap was armed (it fired).
report_json churn.cbor >churn.json
jq_check churn.json '.causal.info.experiments >= 5' "fewer than 5 experiments in a 3 s run"
[ "$traps" -ge 1 ] || fail "no unlock trap fired: the creator's trap was never armed ($stats)"
# Two threads per round; before, nearly each had its trap opened at the next
# tick. Now only those that live 20 ms (none, unless the machine is loaded).
[ $((opened * 4)) -le $((rounds * 2)) ] || fail "$opened traps opened for $((rounds * 2)) short threads"
check_nothing_left
