#!/usr/bin/env bash
# psup's supervisor loop waits only for work: about one epoll_wait per wait
# status, timer expiration or ring past its watermark, never a spin on an fd
# that stays ready. A thread's perf ring hangs up (EPOLLHUP, level-triggered)
# from the thread's exit until psup reaps it: a zombie leader whose threads
# run on kept it so for its whole life (16 million waits in 8 s of
# leader_exit 0.5), and each short process of a shell loop for a moment.
# Counted by psup itself (-v): no wall-clock time, so a loaded machine
# cannot change the verdict (the young run's ticks, at the end, are counted
# over a 1.6 s sleep).
. "$(dirname "$0")/lib.sh"
cd "$WORK"

# check_loop WHAT: the loop's statistic from $WORK/err within a generous
# bound: 4 waits per status or timer expiration, plus 200.
check_loop() {
	local line w st tm
	line=$(grep -o 'supervisor loop: [0-9]* waits for [0-9]* wait statuses and [0-9]* timer expirations' "$WORK/err")
	[ -n "$line" ] || { cat "$WORK/err" >&2; fail "$1: no supervisor loop statistic with -v"; }
	read -r w st tm <<<"$(echo "$line" | awk '{ print $3, $6, $10 }')"
	note "$1: $w waits for $st statuses and $tm timer expirations"
	[ "$st" -gt 0 ] || fail "$1: no wait status counted ($line)"
	[ "$w" -le $((4 * (st + tm) + 200)) ] || fail "$1: psup spun: $w waits for $st statuses and $tm timer expirations"
}

# The leader calls pthread_exit; its two threads spin 0.3 CPU-seconds each.
run_psup 60 run -v -o l.cbor -- "$TARGETS/leader_exit" 0.3
expect_rc 7
check_loop "zombie leader"
report_json l.cbor >l.json
jq_check l.json '.summary.samples > 100' "threads after the leader's exit were not sampled"

# A shell loop of short processes: each one's ring hangs up as it exits.
run_psup 120 run -v -o s.cbor -- sh -c 'i=0; while [ $i -lt 200 ]; do /bin/true; i=$((i+1)); done'
expect_rc 0
check_loop "shell loop"
report_json s.cbor >s.json
jq_check s.json '.summary.processes >= 201' "shell loop: the short processes were not all followed"
# In the run's first second the tick is 10 ms (builtin/record.c,
# REC_YOUNG_TICK_NS), so a short program's first samples are unwound and
# named while it runs, not all after its exit; then 100 ms again. 1.6 s
# make about 106 ticks: at least 40 (16 with the tick of 100 ms
# throughout), at most 135 (160 with 10 ms throughout). A loaded machine
# only merges ticks.
run_psup 60 run -v -o y.cbor -- sleep 1.6
expect_rc 0
check_loop "young run"
tm=$(grep -o 'wait statuses and [0-9]* timer expirations' "$WORK/err" | awk '{ print $4 }')
[ "$tm" -ge 40 ] || fail "young run: $tm timer expirations in 1.6 s (a tick of 10 ms in the first second makes about 100)"
[ "$tm" -le 135 ] || fail "young run: $tm timer expirations in 1.6 s (the tick did not go back to 100 ms after the first second)"
check_nothing_left
