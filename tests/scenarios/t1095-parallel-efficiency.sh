#!/usr/bin/env bash
# Parallel efficiency (Tallent & Mellor-Crummey): known answers.
#  - serial phase then two parallel threads on 2 CPUs: idleness is 25% of
#    the effort (+-3 points), all of it in the serial phase;
#  - a waiter blocked on a mutex: the wait is blamed on the holder's
#    critical section, where it unlocks;
#  - the holder thread appears under its creation context (start_holder);
#  - a join is charged to the exit of the thread joined;
#  - the views' totals add up to the samples recorded.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs"
taskset -pc 0,1 $$ >/dev/null 2>&1 || true

run_psup 120 run -q -o p.cbor -- "$TARGETS/parallel" phases 100
expect_rc 0
report_json --view all p.cbor >p.json
jq_check p.json '.efficiency.cpus == 2' "the header does not say 2 CPUs"
idle=$(jq '.efficiency.idleness_percent' p.json)
in_range "$idle" 22 28 || fail "idleness $idle% of the effort, expected 25 +- 3"
jq_check p.json '[.efficiency.regions[] | select(.function == "serial_phase") | .idleness_percent] | .[0] > 45' \
	"the serial phase does not carry the idleness"
jq_check p.json '[.efficiency.regions[] | select(.function == "parallel_worker") | .idleness_percent] | .[0] < 5' \
	"the parallel phase shows idleness"
jq_check p.json '[.efficiency.regions[] | select(.function == "serial_phase") | .reading] | .[0] == "refine"' \
	"the serial phase is not read as 'refine'"
# totals: effort = work + idleness + overhead; the tree's roots add up to the samples
jq_check p.json '(.efficiency.effort - (.efficiency.work + .efficiency.idleness + .efficiency.overhead)) | fabs < 0.01' \
	"effort is not work + idleness + overhead"
jq_check p.json '([.top_down[].inclusive] | add) == .runs[0].samples' "top-down roots do not add up to the samples"
jq_check p.json '([.threads[].samples] | add) == .runs[0].samples' "threads do not add up to the samples"
jq_check p.json '(([.top_down[].idleness] | add) - .efficiency.idleness) | fabs < 0.01' \
	"top-down idleness does not add up to the total"
# main joins the workers: the wait on a worker's tid word is charged to its
# exit (the kernel's wakeup comes after the worker's events are gone)
jq_check p.json '[.locks[].holders[] | select(.thread_exit and .released_in != null)] | length >= 1' \
	"no join is charged to a thread's exit"
jq_check p.json '[.bottom_up[] | select(.exclusive_idleness > 0)] | length >= 1' \
	"the bottom-up view carries no idleness"

# wakeups carry the waker's stack one time in 16: enough rounds for a few
run_psup 120 run -q -o l.cbor -- "$TARGETS/parallel" lock 300
expect_rc 0
report_json --view all l.cbor >l.json
release=$(marker_line "$SRCDIR/tests/targets/parallel.c" release)
jq_check l.json '.locks | length >= 1' "no lock in the locks view"
jq_check l.json '.locks[0].waits >= 250' "fewer than 250 waits on the contended mutex"
jq_check l.json ".locks[0].holders[0] | .released_in.function == \"holder_critical\" and .released_in.line == $release and .wait_percent > 80" \
	"the wait is not blamed on holder_critical at line $release"
# creation context: holder runs under start_holder, as a thread root
jq_check l.json '[.top_down | .. | objects | select(.function? == "start_holder") | .. | objects
	| select(.thread_root? == true) | .. | objects | select(.function? == "holder")] | length >= 1' \
	"the holder thread is not under its creation context start_holder"
"$PSUP" report --view locks l.cbor | grep -q "released in holder_critical" ||
	fail "the text locks view does not name holder_critical"
"$PSUP" report --view efficiency p.cbor | grep -q "refine the granularity" ||
	fail "the text efficiency view gives no reading"
# --no-lock-blame: the waits are still there, without holders
run_psup 120 run -q --no-lock-blame -o n.cbor -- "$TARGETS/parallel" lock 50
expect_rc 0
report_json --view locks n.cbor >n.json
note "--no-lock-blame: $(jq -c '[.locks[] | .waits]' n.json) waits (50 lock rounds)"
jq_check n.json '.locks[0].waits >= 45' "--no-lock-blame lost the waits"
jq_check n.json '[.locks[].holders[] | select(.released_in != null and (.thread_exit | not))] | length == 0' \
	"--no-lock-blame still blames holders"
# overhead patterns are the user's to set
report_json --view efficiency --overhead 'burn' p.cbor >o.json
jq_check o.json '.efficiency.overhead_percent > 50' "--overhead burn does not make burn overhead"
"$PSUP" report --overhead '' p.cbor >/dev/null 2>&1 && fail "--overhead '' accepted"

# attach: the same blame, for threads psup found already running
# psup records until the record so far blames a wait on the holder (a
# wakeup with the waker's stack, one in 16), however few rounds a loaded
# machine runs in a given time; the target's 5000 rounds outlast that.
start_bg "$TARGETS/parallel" lock 5000
"$PSUP" attach -q -o a.cbor $BG >"$WORK/out" 2>"$WORK/err" &
apid=$!
wait_for "[ \"\$(tracer_of $BG)\" = $apid ]" 10 || fail "psup did not attach"
blamed_so_far() {
	"$PSUP" report --format json --view locks a.cbor 2>/dev/null |
		jq -e '.locks[0].holders[0].released_in.function == "holder_critical"' >/dev/null 2>&1
}
for ((i = 0; i < 240; i++)); do
	blamed_so_far && break
	kill -0 $BG 2>/dev/null || break
	sleep 0.5
done
interrupt_attach $apid 30
expect_rc 0
report_json --view locks,efficiency a.cbor >a.json
jq_check a.json ".locks[0].holders[0].released_in.function == \"holder_critical\"" \
	"attach: the wait is not blamed on holder_critical"
jq_check a.json '.efficiency.measured == true' "attach: no idleness recorded"
stop_bg $BG
check_nothing_left
