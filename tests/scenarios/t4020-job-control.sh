#!/usr/bin/env bash
# Scenario 21: job control. SIGTSTP stops the target as without psup (no
# samples while stopped), SIGCONT resumes it.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

"$PSUP" run -q -o j.cbor -- "$TARGETS/stopper" 4 >/dev/null &
ppid=$!
wait_for "pgrep -P $ppid >/dev/null" 10 || fail "target did not start"
tpid=$(pgrep -P $ppid)
sleep 0.3
kill -TSTP $tpid
# Stopped under a tracer shows as t (tracing stop) or T.
wait_for "case \$(proc_state $tpid) in t|T) true ;; *) false ;; esac" 10 || fail "SIGTSTP did not stop the target"
c1=$(awk '{print $14}' /proc/$tpid/stat)
sleep 0.5
c2=$(awk '{print $14}' /proc/$tpid/stat)
[ "$c1" = "$c2" ] || fail "the stopped target kept running ($c1 -> $c2 ticks)"
kill -CONT $tpid
wait $ppid
rc=$?
[ $rc -eq 0 ] || fail "psup run exited $rc after SIGCONT"
check_nothing_left
