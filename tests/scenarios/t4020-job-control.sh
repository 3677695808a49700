#!/usr/bin/env bash
# Scenario 21: job control. SIGTSTP stops the target as it would without
# psup (no CPU used while stopped), SIGCONT resumes it; also as a terminal's
# Ctrl-Z and fg do it, to the whole process group, psup included.
. "$(dirname "$0")/lib.sh"
cd "$WORK"
# The job runs in its own process group whose parent (this shell) is in the
# same session but outside the group, as a shell's job is: the kernel
# discards SIGTSTP sent to an orphaned group. Run it as "in_new_pgrp ... &":
# the exec keeps $! the pid of psup itself.
in_new_pgrp() { exec perl -e 'setpgrp(0, 0) or die "setpgrp: $!"; exec { $ARGV[0] } @ARGV or die "exec: $!"' "$@"; }

stopped() { case $(proc_state $1) in t|T) true ;; *) false ;; esac; }
ticks() { awk '{print $14 + $15}' /proc/$1/stat; }

check_stop_cont() { # target pid, who gets the signals (a pid or -pgid)
	local tpid=$1 dest=$2 c1 c2
	kill -TSTP -- $dest
	wait_for "stopped $tpid" 10 || fail "SIGTSTP to $dest did not stop the target"
	c1=$(ticks $tpid)
	sleep 0.5
	c2=$(ticks $tpid)
	[ "$c1" = "$c2" ] || fail "the stopped target kept running ($c1 -> $c2 ticks)"
	kill -CONT -- $dest
	wait_for "! stopped $tpid" 10 || fail "SIGCONT to $dest did not resume the target"
}

for mode in ${MODES:-target group}; do
	# The target runs until the test is done with it (stop file).
	in_new_pgrp "$PSUP" run -q -f -o j.cbor -- "$TARGETS/stopper" --until "$WORK/stop-$mode" >/dev/null &
	ppid=$!
	wait_for "pgrep -x -P $ppid stopper >/dev/null" 10 || fail "target did not start"
	tpid=$(pgrep -x -P $ppid stopper)
	sleep 0.3
	if [ $mode = target ]; then
		check_stop_cont $tpid $tpid
	else
		check_stop_cont $tpid -$ppid
	fi
	touch "$WORK/stop-$mode"
	wait $ppid
	rc=$?
	[ $rc -eq 0 ] || fail "psup run exited $rc after SIGCONT ($mode)"
done
check_nothing_left
