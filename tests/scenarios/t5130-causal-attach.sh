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

"$TARGETS/causal-pipeline" 16 pthread >"$WORK/bg.out" 2>"$WORK/bg.err" &
BG=$!
BG_PIDS+=("$BG")
wait_for "[ \$(ls /proc/$BG/task | wc -l) -ge 3 ]" 10 || fail "the pipeline did not start its threads"
run_psup 60 attach -q -o a.cbor --duration 6 --experiment-ms 50 -p "$done_line" "$BG"
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
wait "$BG"
rc=$?
[ "$rc" -eq 0 ] || fail "the program exited $rc after psup detached"
grep -q '^items [1-9]' "$WORK/bg.out" || fail "the program's output is wrong after detach: $(cat "$WORK/bg.out")"
check_nothing_left
