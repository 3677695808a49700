#!/usr/bin/env bash
# psup run --no-stops (issue 20; the default when only sampling per CPU):
# the threads and processes the program creates are never stopped; the
# kernel's records tell them (fork and exit records, and per CPU a sample of
# each clone's creator with its stack), as perf record learns them. Nothing
# is lost:
# - 200 threads: each has its states, its name and its samples, the join is
#   charged to the thread's exit, the thread is under its creation context,
#   and psup makes a handful of ptrace calls (about five per thread with
#   stops);
# - 50 fork/execs then an exec: the exec'ed program's samples are named,
#   and the root, let go of after its exec, stops at none of its children's
#   ends (its SIGCHLD);
# - execs by a second thread (the caller takes the process's id): every
#   thread has a process and a name, each exec told, in a child process and
#   in the first process;
# - a program that traces its own children (strace -f) does so as natively:
#   psup traces none of them;
# - the modes that stop threads refuse it.
. "$(dirname "$0")/lib.sh"
command -v strace >/dev/null || skip "no strace (scripts/bootstrap.sh installs it)"
cd "$WORK"

strace_psup st ptrace run -v --no-stops -o m.cbor -- "$TARGETS/manythreads" 200
expect_rc 0
report_json --view all m.cbor >m.json
jq -e '.runs[0].thread_events == "inherited"' m.json >/dev/null ||
	skip "no events inherited here (sampled per thread: needs root, CAP_PERFMON or perf_event_paranoid <= 0)"
# The records of a CPU ring can be lost where psup falls behind (a loaded
# machine, a sanitizer build: nothing holds the program back while psup is
# busy). Then a thread whose fork record was lost begins at its first event,
# or at the /proc scan that follows the loss; its states miss what was lost.
lost=$(jq '.runs[0].lost_cpu_rings // 0' m.json)
told=$(grep -o "[0-9]* thread(s) and process(es) told by the kernel's records, none stopped ([0-9]* of them" "$WORK/err")
[ -n "$told" ] || { cat "$WORK/err" >&2; fail "no count of threads told by the records with -v"; }
note "$told begun at a sample ($lost records lost in the CPU rings)"
[ "${told%% *}" -eq 200 ] || fail "$told: not the 200 threads"
if [ "$lost" -eq 0 ]; then
	echo "$told" | grep -q "(0 of them" || fail "$told begun at a sample, and no record was lost"
	min_states=201 min_blocked=190
else
	min_states=150 min_blocked=100
fi
count_below "$(grep -c '^ptrace(' st)" 40 "ptrace calls for 201 threads" "threads were stopped"
jq_check m.json '.summary.threads == 201' "not every thread was seen"
jq_check m.json '[.threads[] | select(.name == "manythreads")] | length == 201' "a thread lacks its name"
jq_check m.json "[.threads[] | select(.times.running > 0)] | length >= $min_states" \
	"threads lack their states (switch records)"
jq_check m.json "[.threads[] | select(.times.blocked > 0)] | length >= $min_blocked" "threads' blocked time is missing"
jq_check m.json '([.threads[].samples] | add) == .runs[0].samples' "threads do not add up to the samples"
jq_check m.json '[.top_down | .. | objects | select(.function? == "main") | .. | objects
	| select(.thread_root? == true) | .. | objects | select(.function? == "many_thread")] | length >= 1' \
	"the threads are not under their creation context (main)"
# (The join's blame needs the joined thread's creator sample and the
# wakeup at its exit: records that a loss may take.)
[ "$lost" -gt 0 ] || jq_check m.json '[.locks[].holders[] | select(.thread_exit)] | length >= 1' \
	"no join is charged to a thread's exit"

run_psup 60 run -v --no-stops -o e.cbor -- sh -c "for i in \$(seq 50); do /bin/true; done; exec '$TARGETS/diffwork' 60 30"
expect_rc 0
# The root is let go of after its exec: no stop at each child's SIGCHLD.
grep -q "let go of after its exec" "$WORK/err" || { cat "$WORK/err" >&2; fail "the root was not let go of"; }
n=$(grep -o "[0-9]* wait statuses" "$WORK/err" | cut -d' ' -f1)
count_below "${n:-999}" 10 "wait statuses for 51 processes" "the root stopped at its children's ends"
report_json e.cbor >e.json
pct=$(func_total_pct e.json work_a)
in_range "$pct" 30 100 || fail "work_a, run by an exec told by the records, has ${pct}% of the samples"
jq_check e.json '.summary.processes == 52' "not every process was seen (52: sh, 50 /bin/true, diffwork's exec)"
jq_check e.json '[.threads[] | select(.name == "diffwork" and .times.running > 0)] | length == 1' \
	"the exec'ed program has no states"

# (execer exits 3 when its pid changed across an exec, 2 when one failed.)
run_psup 120 run -v --no-stops -o x.cbor -- sh -c "\"$TARGETS/execer\" 20; exit \$?"
expect_rc 0
grep -q "21 told by records without a stop" "$WORK/err" ||
	{ grep "told by records" "$WORK/err" >&2; fail "not every exec of execer (21) was told by the records"; }
report_json x.cbor >x.json
jq_check x.json '[.threads[] | select(.pid == 0 or .name == null)] | length == 0' "threads without a process or a name"

# The same as the first process itself, let go of after its exec, with and
# without its children followed (its threads then share its own events).
for opt in "" --no-follow-forks; do
	run_psup 120 run -v --no-stops $opt -f -o xr.cbor -- "$TARGETS/execer" 5
	expect_rc 0
	grep -q "5 told by records without a stop" "$WORK/err" ||
		{ grep "told by records" "$WORK/err" >&2; fail "execer as the root ${opt}: not 5 execs told by the records"; }
	report_json xr.cbor >xr.json
	jq_check xr.json '[.threads[] | select(.pid == 0 or .name == null)] | length == 0' \
		"execer as the root ${opt}: threads without a process or a name"
done

if strace -qq -e trace=none true 2>/dev/null; then
	run_psup 60 run -q --no-stops -o s.cbor -- strace -f -qq -e trace=exit_group sh -c 'exit 3'
	[ "$RC" -eq 3 ] || { cat "$WORK/err" >&2; fail "strace -f under --no-stops: exit status $RC, 3 natively"; }
	grep -q "exit_group(3)" "$WORK/err" || { cat "$WORK/err" >&2; fail "strace -f did not trace its child"; }
fi

run_psup 30 run --no-stops --causal -o c.cbor -- /bin/true
expect_rc 2
grep -q -- "--no-stops is for sampling only" "$WORK/err" || fail "--no-stops with --causal: $(cat "$WORK/err")"
check_nothing_left
