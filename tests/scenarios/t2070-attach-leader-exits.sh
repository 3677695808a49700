#!/usr/bin/env bash
# The leader calls pthread_exit while psup is attached: the detach does not
# wait for a stop the zombie cannot make; and when the process exits while
# attached, its real exit status is recorded. Attaching to a thread id
# attaches to its process.
. "$(dirname "$0")/lib.sh"
cd "$WORK"
cat >lx.c <<'C'
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static double seconds;
static void *spin(void *arg)
{
	struct timespec a, b;
	volatile unsigned long x = 0;
	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 1000000; i++)
			x += i;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
	exit(7);
}
int main(int argc, char **argv)
{
	pthread_t t;
	seconds = atof(argv[1]);
	pthread_create(&t, NULL, spin, NULL);
	printf("%d ready\n", (int)getpid());
	fflush(stdout);
	usleep(atoi(argv[2]) * 1000);
	pthread_exit(NULL);
}
C
gcc -O1 -pthread -o lx lx.c || fail "cannot compile"

# Leader exits 0.5 s after the attach; detach after 1.5 s.
start_bg ./lx 6 200
run_psup 60 attach -q -d 1.5 -o a.cbor $BG
expect_rc 0
grep -q "did not stop" "$WORK/err" && fail "detach waited for the zombie leader: $(cat "$WORK/err")"
wait $BG
rc=$?
[ $rc -eq 7 ] || fail "target exited $rc after the detach, expected 7"

# The process exits (status 7) while attached, its leader long a zombie.
start_bg ./lx 1 0
wait_for "[ \"\$(proc_state $BG)\" = Z ]" 10 || fail "leader did not become a zombie"
run_psup 60 attach -q -o e.cbor $BG
expect_rc 0
report_json e.cbor >e.json
jq_check e.json '.runs[0].exit_status == 7' "exit status not recorded as 7"

# A thread id: psup attaches to the whole process.
start_bg ./lx 4 3000
tid=$(ls /proc/$BG/task | grep -v "^$BG\$" | head -1)
[ -n "$tid" ] || fail "no second thread"
run_psup 60 attach -q -d 0.5 -o t.cbor $tid
expect_rc 0
report_json t.cbor >t.json
jq_check t.json "[.threads[] | select(.pid == $BG)] | length >= 2" "threads not recorded under process $BG"
kill $BG
