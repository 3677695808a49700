#!/usr/bin/env bash
# The report says how threads got their side-band events (switch records,
# blocks, wakeups), and why not the cheap way: inherited from per-CPU events
# (run mode and attach, root or CAP_PERFMON), or opened per thread with its
# cause: --sample-per-thread, no permission (issue 20).
. "$(dirname "$0")/lib.sh"
cd "$WORK"

# check REC WHAT EVENTS WHY_PATTERN: the JSON run and the text summary.
check() {
	report_json "$1" >"$1.json"
	jq_check "$1.json" ".runs[0].thread_events == \"$3\"" "$2: thread events are not $3"
	if [ -n "$4" ]; then
		jq_check "$1.json" ".runs[0].thread_events_why | test(\"$4\")" "$2: no reason matching '$4'"
	else
		jq_check "$1.json" '.runs[0].thread_events_why == null' "$2: a reason for inherited events"
	fi
	timeout 60 "$PSUP" report "$1" >"$1.txt" || fail "psup report $1 failed"
	grep -q "^  thread events  *$([ "$3" = inherited ] && echo inherited || echo 'opened per thread')" "$1.txt" ||
		{ cat "$1.txt" >&2; fail "$2: the summary does not say how threads got their events"; }
}

run_psup 60 run -q -o p.cbor -- "$TARGETS/threads" 2 0.1
expect_rc 0
report_json p.cbor >probe.json
if jq -e '.runs[0].per_cpu' probe.json >/dev/null; then
	check p.cbor "run, per CPU" inherited ""
	# The kernel refusing inheritance (made to, at the root's open, the
	# one every process of the run inherits from): the run goes on per
	# thread, the report says so and why, and the threads after the
	# refusal keep their samples.
	PSUP_TEST_REFUSE_INHERIT=1 run_psup 60 run -q -o r.cbor -- sh -c "/bin/true; '$TARGETS/threads' 2 0.3"
	expect_rc 0
	report_json r.cbor >r.cbor.json
	jq_check r.cbor.json '.runs[0].thread_events == "inherited_then_per_thread"' "refused: thread events say nothing of it"
	jq_check r.cbor.json '.runs[0].thread_events_why | test("Too many open files")' "refused: no reason"
	jq_check r.cbor.json '.runs[0].thread_events_own_after >= 4' "refused: fewer sets than the threads after it"
	pct=$(func_total_pct r.cbor.json thread_spin)
	in_range "$pct" 50 100 || fail "refused: thread_spin has ${pct}% of the samples, expected >= 50%"
	timeout 60 "$PSUP" report r.cbor | grep -q "^  thread events  *inherited from per-CPU events until the kernel refused" ||
		fail "refused: the summary does not say the kernel refused"
fi
# Runs one after the other (causal --runs N): each run's first process
# opens the run's inherited events, which its threads have (each leader
# waits for its two threads, in futex), and psup's own child before the
# exec is no thread of the program.
if jq -e '.runs[0].per_cpu' probe.json >/dev/null; then
	run_psup 60 run -q -o k.cbor --runs 2 -- "$TARGETS/threads" 2 0.1
	expect_rc 0
	report_json k.cbor >k.json
	jq_check k.json '[.threads[] | select(.name == "threads" and .times.blocked_futex > 50000000)] | length == 2' \
		"--runs 2: not every run's leader has its wait for its threads: $(jq -c '[.threads[] | {tid, name, times}]' k.json)"
	jq_check k.json '[.threads[] | select(.name == "psup")] | length == 0' "--runs 2: psup's own child reported as a thread"
fi
# Children not followed: the first process's events are inherited by its
# threads only (inherit_thread), which have their states.
if jq -e '.runs[0].per_cpu' probe.json >/dev/null; then
	run_psup 60 run -q -o nf.cbor --no-follow-forks -- "$TARGETS/threads" 2 0.1
	expect_rc 0
	check nf.cbor "--no-follow-forks" inherited ""
	jq_check nf.cbor.json '[.threads[] | select(.name == "threads" and .times.blocked_futex > 50000000)] | length == 1' \
		"--no-follow-forks: the leader has no wait for its threads: $(jq -c '[.threads[] | {tid, times}]' nf.cbor.json)"
	jq_check nf.cbor.json '[.threads[] | select(.name == "threads" and .times.running > 50000000)] | length >= 2' \
		"--no-follow-forks: the threads have no running time"
fi
run_psup 60 run -q --sample-per-thread -o t.cbor -- "$TARGETS/threads" 2 0.1
expect_rc 0
check t.cbor "--sample-per-thread" per_thread "sample-per-thread"

"$TARGETS/spin" 30 1 >/dev/null 2>&1 &
pid=$!
run_psup 60 attach -q --duration 0.3 -o a.cbor "$pid"
expect_rc 0
run_psup 60 attach -q --stops --duration 0.3 -o as.cbor "$pid"
expect_rc 0
stop_bg "$pid"
if jq -e '.runs[0].per_cpu' probe.json >/dev/null; then
	check a.cbor "attach" inherited ""
	check as.cbor "attach --stops" inherited ""
else
	check a.cbor "attach" per_thread "."
	check as.cbor "attach --stops" per_thread "."
fi

# An ordinary user with perf_event_paranoid above 0: no per-CPU events.
[ "$(id -u)" -eq 0 ] || { check_nothing_left; exit 0; }
[ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 0 ] || { check_nothing_left; exit 0; }
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
as_nobody true || skip "setpriv cannot switch to nobody"
chmod 755 "$WORK"
mkdir -m 777 rec
as_nobody timeout 60 "$(for_nobody "$PSUP")" run -q -o rec/n.cbor -- "$(for_nobody "$TARGETS/threads")" 2 0.1 \
	>/dev/null 2>"$WORK/err" || skip "psup cannot profile as nobody here: $(cat "$WORK/err")"
check rec/n.cbor "nobody" per_thread "no permission"
check_nothing_left
