#!/usr/bin/env bash
# Scenario 8: attach to a busy loop, detach by Ctrl-C (SIGINT): the target
# runs on at full speed, untraced, not stopped; psup leaves no fd in it.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

start_bg "$TARGETS/busy"
"$PSUP" attach -o a.cbor $BG >a.out 2>a.err &
apid=$!
wait_for "[ \"\$(tracer_of $BG)\" = $apid ]" 10 || fail "psup did not attach"
# attached until the target ran 0.5 s of CPU time (not 1 s of wall time, of
# which a loaded machine may give it little)
wait_cpu $BG 500 || fail "the target did not run 0.5 s of CPU in 60 s"
interrupt_attach $apid 10
[ $RC -eq 0 ] || { cat a.err >&2; fail "psup attach exited $RC after SIGINT"; }
st=$(proc_state $BG)
[ "$st" = R ] || [ "$st" = S ] || fail "target in state '$st' after detach"
[ "$(tracer_of $BG)" = 0 ] || fail "target still traced"
ls -l /proc/$BG/fd | grep -q perf_event && fail "a perf fd was left in the target"
# Still runs: its CPU time grows.
t1=$(awk '{print $14}' /proc/$BG/stat)
sleep 0.5
t2=$(awk '{print $14}' /proc/$BG/stat)
[ "$t2" -gt "$t1" ] || fail "target does not run after detach"
report_json a.cbor >a.json
# a 1 ms period: 0.5 s of the target's CPU time gives about 500 samples
# (fewer by the time between the trace and the sampling timers)
jq_check a.json '.summary.samples > 50' "too few samples in 0.5 s of the target's CPU time attached"
s=$(func_total_pct a.json busy_loop)
in_range "$s" 80 100 || fail "busy_loop has $s%"
jq_check a.json '.runs[0].mode == "attach"' "run mode not recorded as attach"
# the command is the target's own, from its /proc cmdline (not "pid N")
jq_check a.json ".runs[0].argv == [\"$TARGETS/busy\"]" "the attached process's command line is not recorded"
"$PSUP" report --view summary a.cbor | grep -q "command  *$TARGETS/busy\$" ||
	fail "the summary does not name the attached command"
