#!/usr/bin/env bash
# The leader calls pthread_exit while psup is attached: the detach does not
# wait for a stop the zombie cannot make; and when the process exits while
# attached, its real exit status is recorded. Attaching to a thread id
# attaches to its process.
# The target's thread spins until the file "stop" appears, then exits 7: the
# test says when the process ends, so a loaded machine cannot end it early
# (before the attach, or before the kill of a timed version).
. "$(dirname "$0")/lib.sh"
cd "$WORK"
cat >lx.c <<'C'
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static void *spin(void *arg)
{
	volatile unsigned long x = 0;
	(void)arg;
	do {
		for (int i = 0; i < 1000000; i++)
			x += i;
	} while (access("stop", F_OK) != 0);
	exit(7);
}
int main(int argc, char **argv)
{
	pthread_t t;
	(void)argc;
	pthread_create(&t, NULL, spin, NULL);
	printf("%d ready\n", (int)getpid());
	fflush(stdout);
	usleep(atoi(argv[1]) * 1000);
	pthread_exit(NULL);
}
C
gcc -O1 -pthread -o lx lx.c || fail "cannot compile"

# the target's thread other than the leader
spinner() {
	ls "/proc/$1/task" | grep -v "^$1\$" | head -1
}
# stop_target PID: makes the target exit 7 and checks that it did.
stop_target() {
	touch stop
	wait "$1"
	local rc=$?
	rm -f stop
	[ $rc -eq 7 ] || fail "target exited $rc, expected 7 (its own exit after the detach)"
}

# Leader exits 0.2 s after the attach started; detach after 1.5 s.
start_bg ./lx 200
run_psup 60 attach -q -d 1.5 -o a.cbor $BG
expect_rc 0
grep -q "did not stop" "$WORK/err" && fail "detach waited for the zombie leader: $(cat "$WORK/err")"
stop_target $BG

# The process exits (status 7) while attached, its leader long a zombie.
start_bg ./lx 0
wait_for "[ \"\$(proc_state $BG)\" = Z ]" 10 || fail "leader did not become a zombie"
tid=$(spinner $BG)
[ -n "$tid" ] || fail "no second thread"
timeout --kill-after=5 60 "$PSUP" attach -q -o e.cbor $BG >"$WORK/out" 2>"$WORK/err" &
apid=$!
BG_PIDS+=("$apid")
# (apid is timeout's pid: psup is its child)
wait_for "t=\$(tracer_of $tid); [ -n \"\$t\" ] && [ \"\$t\" != 0 ]" 30 || fail "psup did not attach to thread $tid: $(cat "$WORK/err")"
stop_target $BG
wait $apid
RC=$?
expect_rc 0
report_json e.cbor >e.json
jq_check e.json '.runs[0].exit_status == 7' "exit status not recorded as 7"

# A thread id: psup attaches to the whole process. The leader lives on
# (a minute) while attached.
start_bg ./lx 60000
tid=$(spinner $BG)
[ -n "$tid" ] || fail "no second thread"
run_psup 60 attach -q -d 0.5 -o t.cbor $tid
expect_rc 0
report_json t.cbor >t.json
jq_check t.json "[.threads[] | select(.pid == $BG)] | length >= 2" "threads not recorded under process $BG"
stop_target $BG
check_nothing_left
