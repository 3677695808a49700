#!/usr/bin/env bash
# A descendant psup cannot detach in time (a parent blocked in vfork does not
# stop for PTRACE_INTERRUPT) must be left running when psup exits, not
# killed by EXITKILL. The root exits at once; its child vforks a grandchild
# that sleeps, then writes a marker once the vfork returns.
. "$(dirname "$0")/lib.sh"
cd "$WORK"
cat >vfk.c <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	if (fork() == 0) {
		pid_t g = vfork();
		if (g == 0) {
			sleep(3);
			_exit(0);
		}
		FILE *f = fopen(argv[1], "w");
		if (f) {
			fputs("ok\n", f);
			fclose(f);
		}
		_exit(0);
	}
	usleep(300000); /* let the child reach its vfork */
	return 5;
}
C
gcc -O1 -o vfk vfk.c || fail "cannot compile"
run_psup 60 run -q -o v.cbor -- ./vfk "$WORK/marker"
expect_rc 5
wait_for "grep -q ok '$WORK/marker' 2>/dev/null" 15 || fail "the vfork parent was killed: no marker"
