#!/usr/bin/env bash
# The hazards of causal run mode's seccomp filter (supervisor/pause.c,
# supervisor/seccomp.c), each answered by the program itself:
#  - the program's own seccomp filter keeps its meaning: a RET_TRACE of its
#    own still fails with ENOSYS (no tracer of its own), RET_ERRNO still
#    gives its errno, and locks work under both filters (scenario 25);
#  - a child outliving its parent keeps working: a filter without a tracer
#    would fail its futex calls with ENOSYS, so psup supervises it to its end;
#  - psup SIGKILLed while threads sit in intercepted futex calls: the
#    program dies with it, none is left stopped (scenario 3);
#  - pauses and interception change no output: the hand-off program run
#    with experiments at a fixed speedup on its hottest line exits 0;
#  - the unlock traps reach threads created by pthread_create, which start
#    with every signal blocked (a trap is opened once psup's signal is not).
. "$(dirname "$0")/lib.sh"
cd "$WORK"

T="$TARGETS/causal-sup"

run_psup 60 run -q -o own.cbor --runs 1 -- "$T" ownfilter
expect_rc 0
grep -q "ownfilter ok" "$WORK/out" || fail "the program's own filter changed meaning under psup: $(cat "$WORK/err")"

run_psup 60 run -q -o orphan.cbor --runs 1 -- "$T" orphan "$WORK/orphan.txt"
expect_rc 0
# psup returned after the orphan ended: its result is there.
[ "$(cat "$WORK/orphan.txt" 2>/dev/null)" = "ok 2000" ] ||
	fail "a child outliving its parent broke under the filter: '$(cat "$WORK/orphan.txt" 2>/dev/null)'"

# handoff NAME [OPTION...]: 20000 hand-offs under experiments at a fixed
# speedup on their hottest line, with OPTION; the program checks its own
# output. INTERCEPTED: the calls psup intercepted (-v).
line=$(grep -n 'turn = !me;' "$SRCDIR/tests/targets/causal-sup.c" | cut -d: -f1)
handoff() {
	local name=$1
	shift
	run_psup 120 run -v -o "$name.cbor" --experiment-ms 20 -p "causal-sup.c:$line" --speedup 50 "$@" \
		-- "$T" handoff 20000
	expect_rc 0
	grep -q "handoff ok" "$WORK/out" || fail "hand-offs under experiments${*:+ with $*} failed: $(tail -3 "$WORK/err")"
	INTERCEPTED=$(grep -o '[0-9]* intercepted calls' "$WORK/err" | awk '{print $1}')
}

# Experiments with delays on: pauses at sync calls, crediting at their exits.
handoff pp
with=$INTERCEPTED
report_json pp.cbor >pp.json
jq_check pp.json '.causal.info.experiments >= 1' "no experiment in a run of 20000 hand-offs"

# Without wake stops (--no-wake-stops): the same output, and only the waits
# stop, about half the calls (each hand-off is a FUTEX_WAKE and a FUTEX_WAIT).
handoff pp2 --no-wake-stops
without=$INTERCEPTED
note "intercepted calls: $with with wake stops, $without without"
if grep -q "needs wakeup records" "$WORK/err"; then
	note "no wakeup records here: the wakes stopped"
elif ! { [ -n "$with" ] && [ -n "$without" ] && [ "$without" -gt 0 ] && [ $((without * 4)) -lt $((with * 3)) ]; }; then
	fail "--no-wake-stops intercepted $without calls against $with with the wake stops, expected about half"
fi

# Without futex stops (--no-futex-stops): the same output, and none of the
# 20000 hand-offs' futex calls stops (a handful of other calls do: the
# threads' exits); the waits are credited from block records.
handoff pp3 --no-futex-stops
nofutex=$INTERCEPTED
note "intercepted calls: $nofutex without futex stops"
if grep -q "needs wakeup records" "$WORK/err"; then
	note "no wakeup records here: the futex calls stopped"
elif ! { [ -n "$with" ] && [ -n "$nofutex" ] && [ "$nofutex" -lt 100 ] && [ "$with" -ge 20000 ]; }; then
	fail "--no-futex-stops intercepted $nofutex calls against $with with the futex stops, expected under 100"
fi
report_json pp3.cbor >pp3.json
jq_check pp3.json '.causal.info.experiments >= 1' "no experiment without futex stops"
jq_check pp3.json '.causal.info.note | test("no-futex-stops")' "the record does not say --no-futex-stops was used"

# Unlock traps: with the hammer line sped up, the client (main) and the
# other hammerer owe, and pay at their pthread_mutex_unlock traps. A
# thread's trap is opened at its first futex call (the mask read at that
# stop), or with --no-futex-stops at the first tick where it owes (read
# from /proc): both ways reach them.
hammer=$(grep -n 'MARK:causal_lock_hammer' "$SRCDIR/tests/targets/causal-contention.c" | cut -d: -f1)
op=$(grep -n 'MARK:causal_lock_done' "$SRCDIR/tests/targets/causal-contention.c" | cut -d: -f1)
for how in futex-stops no-futex-stops; do
	opt=()
	[ "$how" = no-futex-stops ] && opt=(--no-futex-stops)
	run_psup 120 run -vv -o "traps-$how.cbor" --experiment-ms 20 -p "causal-contention.c:$op" "${opt[@]}" \
		--line "causal-contention.c:$hammer" --speedup 50 -- "$TARGETS/causal-contention" 3 2
	expect_rc 0
	payers=$(grep -o 'pause: [0-9]* pays [0-9]* us at its unlock trap' "$WORK/err" | awk '{print $2}' | sort -u | wc -l)
	note "$how: threads that paid at unlock traps: $payers"
	[ "$payers" -ge 2 ] || fail "$how: only $payers thread(s) paid at an unlock trap, expected the client and a hammerer: $(grep 'unlock traps' "$WORK/err")"
done
# Threads that make no futex call get no trap: Figure 1 with both threads
# made per round opens one, for the thread that joins them.
run_psup 120 run -v -o fig1.cbor --causal --experiment-ms 20 -p causal_fig1_round_done -- "$TARGETS/causal-figure1" 2 spawn
expect_rc 0
opened=$(grep -o 'unlock traps ([0-9]* at the C library.s own unlocks, [0-9]* opened)' "$WORK/err" | grep -o '[0-9]* opened' | cut -d' ' -f1)
note "figure 1, threads per round: $opened trap(s) opened"
[ -n "$opened" ] && [ "$opened" -le 2 ] || fail "figure 1's threads, which make no futex call, got unlock traps: $(grep 'unlock traps' "$WORK/err")"

"$PSUP" run -q -o killed.cbor --runs 1 -- "$T" wait >"$WORK/wait.out" 2>&1 &
ppid=$!
wait_for "pgrep -f 'causal-sup wait' -P $ppid >/dev/null" 10 || fail "target did not start"
tpid=$(pgrep -f 'causal-sup wait' -P $ppid)
sleep 1
kill -KILL $ppid
wait $ppid 2>/dev/null
wait_for "[ -z \"\$(proc_state $tpid)\" ] || [ \"\$(proc_state $tpid)\" = Z ]" 10 ||
	fail "target $tpid survived psup's death (state $(proc_state $tpid))"
check_nothing_left
