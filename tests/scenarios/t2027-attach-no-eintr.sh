#!/usr/bin/env bash
# Scenario 7 for every call of signal(7)'s lists: a thread per call (the
# socket calls on sockets with SO_RCVTIMEO/SO_SNDTIMEO, read and write on
# them, the multiplexers, the sleeps, the signal waits, System V IPC,
# io_getevents; tests/targets/noeintr.c), each blocked in it again and
# again. Attaching and detaching three times must never make one of them
# fail with EINTR (the program counts any EINTR its own handler did not
# cause, and names the call).
. "$(dirname "$0")/lib.sh"
cd "$WORK"
start_bg "$TARGETS/noeintr"
for i in 1 2 3; do
	run_psup 30 attach -q -f -d 0.5 -o r.cbor $BG
	expect_rc 0
done
kill -USR2 $BG
wait $BG
rc=$?
[ $rc -eq 0 ] || { cat "$WORK/bg.err" >&2; fail "calls failed with EINTR after psup's detach (exit $rc)"; }
check_nothing_left
