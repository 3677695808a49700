#!/usr/bin/env bash
# Causal profiling of a running process (attach): no seccomp filter can be
# installed there, so no syscall-level delay crediting; experiments still
# run, the report says how the result is affected (info.note), and the
# program is left running, untraced, to finish normally.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/causal-lib.sh"
cd "$WORK"

consume=$(causal_ref causal-pipeline.c causal_pipe_consume)
done_line=$(causal_ref causal-pipeline.c causal_pipe_done)

# The pipeline runs until the test is done with it (stop file), and psup
# records until the program did the work the checks need (its CPU time,
# experiments in the record so far), however loaded the machine.
CAUSAL_PIPE_UNTIL="$WORK/stop" "$TARGETS/causal-pipeline" 1 pthread >"$WORK/bg.out" 2>"$WORK/bg.err" &
BG=$!
BG_PIDS+=("$BG")
wait_for "[ \$(ls /proc/$BG/task | wc -l) -ge 3 ]" 10 || fail "the pipeline did not start its threads"
"$PSUP" attach -q -o a.cbor --experiment-ms 50 -p "$done_line" "$BG" >"$WORK/out" 2>"$WORK/err" &
apid=$!
wait_for "[ \"\$(tracer_of $BG)\" = $apid ]" 10 || fail "psup did not attach"
wait_cpu $BG 2000 120 || fail "the pipeline did not run 2 s of CPU time while attached"
experiments_so_far() { "$PSUP" report --format json a.cbor 2>/dev/null | jq '.causal.info.experiments // 0' 2>/dev/null || echo 0; }
for ((i = 0; i < 240; i++)); do
	[ "$(experiments_so_far)" -ge 8 ] && break
	sleep 0.5
done
interrupt_attach $apid 30
expect_rc 0
kill -0 "$BG" 2>/dev/null || fail "the program did not survive attach and detach"
[ "$(tracer_of "$BG")" = 0 ] || fail "the program is still traced after detach"
causal_report a.cbor a.json
jq_check a.json '.causal.info.mode == "attach" and .causal.info.syscall_crediting == false' \
	"attach: info says mode $(jq -c .causal.info.mode a.json), crediting $(jq -c .causal.info.syscall_crediting a.json)"
jq_check a.json '.causal.info.note | type == "string" and length > 20' "attach: no note on how the missing delay crediting affects the result"
note "attach note: $(jq -r .causal.info.note a.json)"
jq_check a.json '.causal.info.experiments >= 5 and .causal.progress_points[0].visits > 100' "attach: no experiments or no progress counted"
n=$(causal_exps a.json "$consume")
[ "$n" -ge 1 ] || { causal_show a.json; fail "attach: no experiment on the consumer's line"; }
touch "$WORK/stop"
wait "$BG"
rc=$?
[ "$rc" -eq 0 ] || fail "the program exited $rc after psup detached"
grep -q '^items [1-9]' "$WORK/bg.out" || fail "the program's output is wrong after detach: $(cat "$WORK/bg.out")"
check_nothing_left
