#!/usr/bin/env bash
# Thread states: a spinning thread is running (or waiting for a CPU on a busy
# machine); threads blocked in nanosleep, read, a raw futex and epoll_wait
# are told apart as sleep, io, futex and io. In run mode, and in attach mode
# where threads already asleep are classified from /proc.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

# share THREAD_JSON_FILTER STATE: how many threads spend > 80% of their
# lifetime in STATE.
count_mostly() { # json, state key
	jq --arg k "$2" '[.threads[] | select(.times != null) | .times as $t
		| ($t.running + $t.runnable + $t.blocked) as $life
		| select($life > 0 and ($t[$k] / $life) > 0.8)] | length' "$1"
}

check_sleeper() { # json, what
	jq_check "$1" '.runs[0].thread_times == true' "$2: no thread states recorded"
	[ "$(count_mostly "$1" blocked_sleep)" -ge 1 ] || fail "$2: no thread mostly asleep"
	[ "$(count_mostly "$1" blocked_futex)" -ge 1 ] || fail "$2: no thread mostly in a futex wait"
	[ "$(count_mostly "$1" blocked_io)" -ge 2 ] || fail "$2: not two threads mostly in I/O waits"
}

run_psup 60 run -q -o s.cbor -- "$TARGETS/sleeper" 2
expect_rc 0
report_json s.cbor >s.json
check_sleeper s.json run

# The sleeper's threads stay blocked until the file "stop" appears: the
# test, not a timer that a loaded machine may outrun, ends them after the
# detach.
start_bg "$TARGETS/sleeper" --until "$WORK/stop"
sleep 0.3
run_psup 60 attach -q -d 1 -o a.cbor $BG
expect_rc 0
report_json a.cbor >a.json
check_sleeper a.json attach
touch "$WORK/stop"
wait $BG || fail "sleeper failed after the detach"

run_psup 60 run -q -o c.cbor -- "$TARGETS/spin" 0.5
expect_rc 0
report_json c.cbor >c.json
# (the child before its exec is a thread of its own, a millisecond or less:
# only the program's threads with samples to speak of count)
jq_check c.json '[.threads[] | select(.samples >= 10) | .times | (.running + .runnable) / (.running + .runnable + .blocked)] | min > 0.9' \
	"a spinning thread is not shown running"
run_psup 60 run -q -o b.cbor -- "$TARGETS/threads" --futex 4 3000
expect_rc 0
report_json b.cbor >b.json
jq_check b.json '[.threads[] | .times.blocked_futex] | add > 0' "token passing shows no futex waits"
check_nothing_left
