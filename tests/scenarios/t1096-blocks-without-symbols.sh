#!/usr/bin/env bash
# What a thread blocks on comes from its system calls, not from libc's
# symbols: static, stripped programs (no symbol at all) show their futex
# waits, thread states and lock blame as the same programs with symbols do.
# A raw syscall(SYS_futex) wait is on its first argument's address (glibc's
# syscall(2) moves the arguments before the syscall instruction), not on
# its op.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

# share of each thread's lifetime in state key, over threads with one
count_mostly() { # json, state key
	jq --arg k "$2" '[.threads[] | select(.times != null) | .times as $t
		| ($t.running + $t.runnable + $t.blocked) as $life
		| select($life > 0 and ($t[$k] / $life) > 0.8)] | length' "$1"
}

# a mutex handed over 300 times: as t1095, without a symbol
run_psup 120 run -q -o l.cbor -- "$TARGETS/parallel-static-stripped" lock 300
expect_rc 0
report_json --view all l.cbor >l.json
jq_check l.json '.runs[0].thread_times == true' "no thread states recorded"
jq_check l.json '.locks | length >= 1' "no lock in the locks view"
jq_check l.json '.locks[0].waits >= 250' "fewer than 250 futex waits on the contended mutex"
jq_check l.json '.locks[0].holders | length >= 1' "the waits are blamed on nobody"
jq_check l.json '[.threads[].times.blocked_futex] | add > 0' "futex 0% in the thread states"
# the waiter (main) blocks on the mutex most of its life, never on "other"
jq_check l.json '[.threads[] | select(.tid == .pid) | .times | .blocked_futex > 2 * .blocked_other] | all' \
	"the waiter's blocked time is not mostly futex"
"$PSUP" report --view locks l.cbor | grep -q "no futex waits recorded" &&
	fail "the text locks view says no futex waits were recorded"

# nanosleep, read, raw futex and epoll_wait threads (as t1090)
run_psup 60 run -q -o s.cbor -- "$TARGETS/sleeper-static-stripped" 2
expect_rc 0
report_json s.cbor >s.json
[ "$(count_mostly s.json blocked_sleep)" -ge 1 ] || fail "no thread mostly asleep"
[ "$(count_mostly s.json blocked_futex)" -ge 1 ] || fail "no thread mostly in a futex wait"
[ "$(count_mostly s.json blocked_io)" -ge 2 ] || fail "not two threads mostly in I/O waits"

# raw syscall(SYS_futex) locks: each lock is a futex word of the program
# (seq_not_full, seq_not_empty, flock), none the op (FUTEX_WAIT_PRIVATE, 0x80)
run_psup 60 run -q -o f.cbor -- "$TARGETS/causal-pipeline" 1 futex
expect_rc 0
report_json --view locks f.cbor >f.json
jq_check f.json '.locks | length >= 2' "fewer than two locks in a raw-futex pipeline"
jq_check f.json '[.locks[].address | select(length < 8)] | length == 0' \
	"a raw futex wait is charged to its op, not its address"
# A sleep at the program's own syscall instruction (as Go's runtime makes
# them: a function named for nothing), 50 us between 20 ms waits elsewhere:
# /proc nearly always finds the thread in the wait, so the code before the
# site tells the sleep. The thread is told by the records, not stopped:
# its code is read through its process.
run_psup 60 run -q -o r.cbor -- "$TARGETS/rawsleep" 1.5
expect_rc 0
report_json r.cbor >r.json
jq_check r.json '[.threads[] | select(.tid != .pid) | .times | .blocked_sleep > 2 * .blocked_other] == [true]' \
	"a sleep at the program's own syscall instruction is not a sleep"
check_nothing_left
