#!/usr/bin/env bash
# A thread other than a leader is let go of at its exit without a
# PTRACE_EVENT_EXIT stop (supervisor/loop.c, first_stop_options(): issue
# 20, one stop and one resume fewer per thread); the leader keeps its own,
# unless the run's events are inherited per CPU, where the mmap records tell
# its maps (sup_session_no_exit_stops()): then no thread stops at its exit,
# and a new thread is given no options at its first stop. Every thread still has its samples and states, per CPU and per thread,
# and a join is still charged to the joined thread's exit (t1095 checks
# the same on its own target). The causal mode reads psup.h counters at a
# thread's end: at its exit system call, which its seccomp filter stops,
# and at the exit stop without the filter (--no-intercept), which keeps
# every exit stop. Counted from -vvv's wait trace. Threads are stopped
# at their creation here (--stops): t3081 has the runs that stop none.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

# exit_stops: the threads psup saw at a PTRACE_EVENT_EXIT stop.
exit_stops() {
	grep -o "wait: [0-9]* exit-event" "$WORK/err" | awk '{print $2}' | sort -u
}

for opt in --stops --sample-per-thread; do
	run_psup 120 run -vvv $opt -o t.cbor -f -- "$TARGETS/threads" 3 0.3
	expect_rc 0
	grep -q "wait: [0-9]* exited" "$WORK/err" || fail "$opt: no wait trace with -vvv"
	stops=$(exit_stops | wc -l)
	report_json --view all t.cbor >t.json
	if [ "$opt" = --stops ] && jq -e '.runs[0].per_cpu' t.json >/dev/null; then
		[ "$stops" -eq 0 ] || fail "per CPU: $stops threads stopped at their exit, expected none"
	else
		[ "$stops" -eq 1 ] || fail "$opt: $stops threads stopped at their exit, expected the leader only"
		pid=$(jq '.threads[] | select(.pid == .tid) | .pid' t.json | head -1)
		[ "$(exit_stops)" = "$pid" ] || fail "$opt: the exit stop was not the leader's ($pid)"
	fi
	jq_check t.json '.summary.threads == 4' "$opt: not every thread was seen"
	jq_check t.json '[.threads[] | select(.samples > 150 and .times.running > 0)] | length == 3' \
		"$opt: a thread lacks its samples or its states"
done

# Per CPU, a new thread has the options its creator had, none of them
# an exit stop: none are set at its first stop (one ptrace call before its
# resume).
if command -v strace >/dev/null && jq -e '.runs[0].per_cpu' t.json >/dev/null; then
	strace_psup st ptrace run -q --stops -o s.cbor -f -- "$TARGETS/threads" 3 0.1
	expect_rc 0
	count_below "$(grep -c 'PTRACE_SETOPTIONS' st)" 2 "PTRACE_SETOPTIONS for 3 threads" \
		"each new thread given options at its first stop"
fi

# The causal mode: the leader's exit stop only with its filter (t5100
# checks the counts at exit); every exit stop without it.
run_psup 120 run -vvv --experiment-ms 10 -p thread_spin -o c.cbor -f -- "$TARGETS/threads" 3 0.1
expect_rc 0
stops=$(exit_stops | wc -l)
[ "$stops" -eq 1 ] || fail "causal: $stops threads stopped at their exit, expected the leader only"
run_psup 120 run -vvv --no-intercept --experiment-ms 10 -p thread_spin -o c.cbor -f -- "$TARGETS/threads" 3 0.1
expect_rc 0
stops=$(exit_stops | wc -l)
[ "$stops" -eq 4 ] || fail "causal --no-intercept: $stops threads stopped at their exit, expected all 4"
check_nothing_left
