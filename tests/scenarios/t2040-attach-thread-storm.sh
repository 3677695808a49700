#!/usr/bin/env bash
# Scenarios 5 and 11: attach to a process creating and ending threads in a
# tight loop: every thread is found (rescan until stable, clone events), a
# thread exiting while being interrupted does not hang the detach.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

# The storm lasts until the test is done with it (stop file), however long
# three attaches take on a loaded machine.
start_bg "$TARGETS/threads" --churn-until "$WORK/stop"
for i in 1 2 3; do
	kill -0 $BG 2>/dev/null || fail "the target ended before attach $i"
	run_psup 60 attach -q -f -d 0.5 -o storm.cbor $BG
	[ $RC -eq 0 ] || { cat "$WORK/err" >&2; fail "attach $i exited $RC"; }
	[ "$(tracer_of $BG)" = 0 ] || [ -z "$(tracer_of $BG)" ] || fail "still traced after detach $i"
	report_json storm.cbor >s.json
	jq_check s.json '(.threads | length) > 2' "threads created after the attach were not sampled"
done
touch "$WORK/stop"
wait $BG
rc=$?
[ $rc -eq 0 ] || fail "target failed with $rc"
