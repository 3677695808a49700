#!/usr/bin/env bash
# The record's reader leaves (-o /dev/stdout | head, a FIFO whose reader
# exits): psup must not die of SIGPIPE. As for any other write error it
# says so once, stops recording, and lets the program run on: run waits
# for it and exits with its status, attach detaches, leaves it running and
# exits 1.
. "$(dirname "$0")/lib.sh"
cd "$WORK"
mkfifo rec.fifo || skip "cannot make a FIFO"

# This shell holds a reader on the FIFO while psup opens it and the program
# starts, then closes it: psup's next write to the FIFO fails (EPIPE, or
# SIGPIPE where it is not ignored). Only this shell holds it (3>&-).
for how in run attach; do
	rm -f stop out err
	[ $how = attach ] && start_bg "$TARGETS/stopper" --until "$WORK/stop"
	exec 3<>rec.fifo # a reader (and a writer: opening does not block)
	if [ $how = run ]; then
		"$PSUP" run -q -f -o rec.fifo -- "$TARGETS/stopper" --until "$WORK/stop" >out 2>err 3>&- &
		ppid=$!
		wait_for "grep -q ready out" 30 || fail "run: the program did not start"
	else
		"$PSUP" attach -q -f -o rec.fifo $BG >out 2>err 3>&- &
		ppid=$!
		wait_for "[ \"\$(tracer_of $BG)\" = $ppid ]" 30 || fail "attach: psup did not attach"
	fi
	exec 3<&- # the reader leaves
	if [ $how = run ]; then
		wait_for "grep -q 'cannot write' err" 60 || fail "run: no write error reported: $(cat err)"
		kill -0 $ppid 2>/dev/null || fail "run: psup did not wait for the program"
		touch "$WORK/stop"
	fi
	wait $ppid
	rc=$?
	[ $rc -ne $((128 + 13)) ] || fail "$how: psup was killed by SIGPIPE"
	# run: the program's status; attach: 1, the record is incomplete (as
	# for any write error)
	want=0
	[ $how = attach ] && want=1
	[ $rc -eq $want ] || { cat err >&2; fail "$how: psup exited $rc, expected $want"; }
	grep -q "cannot write rec.fifo: Broken pipe" err || fail "$how: no broken pipe reported: $(cat err)"
	[ "$(grep -c 'cannot write' err)" -eq 1 ] || fail "$how: the write error was reported more than once: $(cat err)"
	if [ $how = run ]; then
		grep -q '^bursts [1-9]' out || fail "run: the program did not run to its end: $(cat out)"
	else
		kill -0 $BG 2>/dev/null || fail "attach: the program did not survive"
		[ "$(tracer_of $BG)" = 0 ] || fail "attach: the program is still traced"
		touch "$WORK/stop"
		wait $BG
		rc=$?
		[ $rc -eq 0 ] || fail "attach: the program exited $rc after psup detached"
		grep -q '^bursts [1-9]' "$WORK/bg.out" || fail "attach: the program did not run to its end"
	fi
done
check_nothing_left
