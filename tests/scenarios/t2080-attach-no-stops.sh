#!/usr/bin/env bash
# psup attach without stops (issue 20; the default when only sampling per
# CPU): the threads found running are seized and get events of their own,
# the threads they create inherit them and are told by the kernel's records,
# never stopped:
# - a process making threads in a loop: thousands of threads told, a
#   handful of wait statuses, the threads' samples and states recorded, and
#   the process runs on after the detach; --stops stops them as before;
# - the kernel refusing to let a thread's events be inherited: the threads
#   it creates are told all the same, with events of their own;
# - a thread made after the attach execs (it takes the process's id, and the
#   leader psup traced vanishes without a death): psup follows the new
#   program through the records (its states from one set of events), ends
#   with the process, and records no exit status (it knows none); the
#   process's own status is untouched.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

start_bg "$TARGETS/threads" --churn-until "$WORK/stop"
run_psup 60 attach -v -d 1 -o c.cbor $BG
expect_rc 0
report_json c.cbor >c.json
jq -e '.runs[0].per_cpu' c.json >/dev/null ||
	{ touch stop; wait $BG; skip "no per-CPU events here (needs root, CAP_PERFMON or perf_event_paranoid <= 0)"; }
jq_check c.json '.runs[0].new_threads == "records"' "new threads not told by the records"
jq_check c.json '.runs[0].thread_events == "inherited"' "thread events not inherited"
told=$(grep -o "[0-9]* thread(s) and process(es) told by the kernel's records" "$WORK/err")
[ -n "$told" ] || { cat "$WORK/err" >&2; fail "no count of the threads told by the records with -v"; }
note "$told in 1 s"
[ "${told%% *}" -ge 20 ] || fail "$told: fewer than 20 in a second of thread churn"
statuses=$(grep -o "for [0-9]* wait statuses" "$WORK/err" | grep -o "[0-9]*")
count_below "$statuses" 20 "wait statuses for ${told%% *} threads" "new threads were stopped"
jq_check c.json '[.threads[] | select(.samples > 0)] | length >= 10' "the threads told have no samples"
jq_check c.json '[.threads[] | select(.times.running > 0)] | length >= 10' "the threads told have no states"
kill -0 $BG 2>/dev/null || fail "the target did not run on after the detach"
[ "$(tracer_of $BG)" = 0 ] || fail "still traced after the detach"

# With --stops, as before: each new thread stopped at its creation.
run_psup 60 attach -v --stops -d 0.5 -o s.cbor $BG
expect_rc 0
report_json s.cbor >s.json
jq_check s.json '.runs[0].new_threads == "stopped"' "--stops: new threads not stopped"
jq_check s.json '(.threads | length) > 2' "--stops: threads created after the attach were not sampled"

# The kernel refusing inheritance (made to: the first set opened): the
# threads the process creates are still told, and open their own.
PSUP_TEST_REFUSE_INHERIT=1 run_psup 60 attach -v -d 0.5 -o r.cbor $BG
expect_rc 0
report_json r.cbor >r.json
jq_check r.json '.runs[0].new_threads == "records"' "refused: new threads not told by the records"
jq_check r.json '[.threads[] | select(.samples > 0)] | length >= 5' "refused: the threads told have no samples"
touch stop
wait $BG
rc=$?
[ $rc -eq 0 ] || fail "target failed with $rc"

# An exec by a thread made after the attach: the new program sleeps, which
# its states must say (one set of events: the exec's survivor keeps its own).
cat >sl.c <<'C'
#include <unistd.h>
int main(void)
{
	while (access("go", F_OK) != 0)
		;
	for (int i = 0; i < 200; i++)
		usleep(5000);
	return 5;
}
C
cat >xt.c <<'C'
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static void *execer(void *arg)
{
	(void)arg;
	execl("./sl", "sl", (char *)0);
	return NULL;
}
int main(void)
{
	pthread_t t;
	volatile unsigned long x = 0;
	printf("ready\n");
	fflush(stdout);
	while (access("attached", F_OK) != 0)
		x++;
	pthread_create(&t, NULL, execer, NULL);
	for (;;)
		x++;
}
C
gcc -O1 -o sl sl.c || fail "cannot compile"
gcc -O1 -pthread -o xt xt.c || fail "cannot compile"
start_bg ./xt
timeout --kill-after=5 60 "$PSUP" attach -v -o x.cbor $BG >"$WORK/out" 2>"$WORK/err" &
apid=$!
wait_for "t=\$(tracer_of $BG); [ -n \"\$t\" ] && [ \"\$t\" != 0 ]" 30 || fail "psup did not attach: $(cat "$WORK/err")"
touch attached
wait_for "[ \"\$(cat /proc/$BG/comm 2>/dev/null)\" = sl ]" 30 || fail "the thread did not exec"
touch go
wait $BG
rc=$?
[ $rc -eq 5 ] || fail "target exited $rc, expected 5"
wait $apid
RC=$?
expect_rc 0
grep -q "exec'ed from a thread psup does not trace" "$WORK/err" ||
	{ cat "$WORK/err" >&2; fail "psup did not see the leader go at the exec"; }
report_json x.cbor >x.json
jq_check x.json '[.threads[] | select(.pid == '"$BG"' and .name == "sl" and .samples > 0)] | length >= 1' \
	"the new program (sl) has no samples"
jq_check x.json '[.threads[] | select(.name == "sl" and .times.blocked_sleep > 500000000 and
	.times.blocked_other < 300000000)] | length == 1' \
	"the new program's sleep is not a sleep: $(jq -c '[.threads[] | {name, times}]' x.json)"
jq_check x.json '.runs[0].exit_status == null' "an exit status psup cannot know was recorded"
check_nothing_left
