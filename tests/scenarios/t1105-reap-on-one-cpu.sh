#!/usr/bin/env bash
# Reaping a process never spins at psup's real-time priority. The wait that
# reaps a leader flushes its /proc entries, and looped, yielding only to
# real-time tasks, while the process's last other thread (still in its
# exit, preempted by psup on the same CPU) held them: `manythreads 50` with
# psup and the program on one CPU took 1.0 s, 0.98 s of it psup's system
# time, until the kernel's real-time throttling let that thread run
# (supervisor/loop.c, reaps_leader()). psup's own CPU time, counted by
# itself (-v), is a few ms here; the spin made it about a second. Without
# the real-time priority (no CAP_SYS_NICE) there is nothing to check.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

command -v taskset >/dev/null || skip "no taskset"
for i in 1 2 3; do
	timeout --kill-after=5 60 taskset -c 0 "$PSUP" run -v -o m$i.cbor -- "$TARGETS/manythreads" 50 \
		>"$WORK/out" 2>"$WORK/err"
	RC=$?
	expect_rc 0
	cpu=$(grep -o 'psup itself used [0-9.]* s of CPU' "$WORK/err" | awk '{ print $4 }')
	[ -n "$cpu" ] || { cat "$WORK/err" >&2; fail "run $i: no CPU time of psup with -v"; }
	note "run $i: psup used $cpu s of CPU"
	awk -v c="$cpu" 'BEGIN { exit !(c < 0.5) }' ||
		fail "run $i: psup used $cpu s of CPU for 50 threads on one CPU (a spin while reaping?)"
done
check_nothing_left
