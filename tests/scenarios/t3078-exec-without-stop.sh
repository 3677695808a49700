#!/usr/bin/env bash
# Run mode, sampled per CPU, threads and processes stopped at their creation
# (--stops; t3081 has the runs that stop none): a process the program starts
# execs without an exec stop while it has one thread (one stop and one resume less per
# process of a fork/exec storm, issue 20). Its exec's comm record and the
# new program's mappings tell psup of it, in their order with its samples:
# - the new program's samples are named with its own code, its thread
#   carries its name and its states;
# - two execs in a row, each without a stop, end in the last program;
# - a process with a second thread stops at its execs again: an exec by a
#   thread other than the leader changes thread ids (execer: 20 such execs,
#   each seen at its stop; only the first, before any thread, is told),
#   while a process such a process forks has none again (threadforker).
. "$(dirname "$0")/lib.sh"
cd "$WORK"

told() {
	local n
	n=$(grep -o "[0-9]* told by records without a stop" "$WORK/err" | cut -d' ' -f1)
	[ -n "$n" ] || { cat "$WORK/err" >&2; fail "no count of execs told by records with -v"; }
	echo "$n"
}

# ratio_named JSON MODE WHAT: ratio's samples (in MODE's two functions,
# work_* for direct, lib_* for lib) named with its code, and its thread
# named ratio with its states.
ratio_named() {
	local f=work
	[ "$2" = lib ] && f=lib
	jq_check "$1" "([.functions[] | select(.function == \"${f}_three\" or .function == \"${f}_one\") | .self] | add // 0) >= 10" \
		"$3: the exec'ed program's samples are not named with its code"
	jq_check "$1" '[.threads[] | select(.name == "ratio" and .times.running > 0)] | length == 1' \
		"$3: the exec'ed program's thread lacks its name or its states"
}

# ratio spends 50 ms of CPU in work_three and work_one (direct; lib_three
# and lib_one with lib), then exits.
# (`; exit $?`: the shell forks the program, whose status it passes on.)
run_psup 60 run -v --stops -o one.cbor -- sh -c "\"$TARGETS/ratio\" direct 0.05; exit \$?"
expect_rc 0
report_json one.cbor >one.json
jq -e '.runs[0].thread_events == "inherited"' one.json >/dev/null ||
	skip "no events inherited here (sampled per thread: needs root, CAP_PERFMON or perf_event_paranoid <= 0)"
[ "$(told)" -ge 1 ] || fail "the exec of ratio was not told by its records"
jq_check one.json '.summary.samples >= 10' "too few samples to judge"
ratio_named one.json direct "one exec"

run_psup 60 run -v --stops -o two.cbor -- sh -c "(exec sh -c 'exec \"$TARGETS/ratio\" lib 0.05'); exit \$?"
expect_rc 0
[ "$(told)" -ge 2 ] || fail "two execs in a row: $(told) told by their records"
report_json two.cbor >two.json
ratio_named two.json lib "two execs in a row"

# The children of a process with two threads (its leader has exec stops
# back, copied into each child by its fork) are given none: 10 forked, each
# exec told, and the first process's (threadforker's own) exec too.
run_psup 60 run -v --stops -o tf.cbor -- sh -c "\"$TARGETS/threadforker\" 10; exit \$?"
expect_rc 0
[ "$(told)" -eq 11 ] || fail "children of a threaded process: $(told) execs told by their records, 11 expected"
report_json tf.cbor >tf.json
jq_check tf.json '[.threads[] | select(.pid == 0 or .name == null)] | length == 0' "threads without a process or a name"

# (execer exits 3 when its pid changed across an exec, 2 when one failed.)
run_psup 120 run -v --stops -o x.cbor -- sh -c "\"$TARGETS/execer\" 20; exit \$?"
expect_rc 0
[ "$(told)" -eq 1 ] || fail "execs from a second thread: $(told) told by records, 1 expected (the first, single-threaded)"
# Each of the 20 seen at its stop, by a thread other than the leader.
n=$(grep -cE 'process [0-9]+ exec \(by thread [0-9]+\)' "$WORK/err")
m=$(grep -oE 'process [0-9]+ exec \(by thread [0-9]+' "$WORK/err" | awk '$2 != $6' | wc -l)
[ "$m" -eq 20 ] || { cat "$WORK/err" >&2; fail "$m of 20 execs from a second thread seen at their stops ($n exec stops in all)"; }
report_json x.cbor >x.json
jq_check x.json '[.threads[] | select(.pid == 0 or .name == null)] | length == 0' "threads without a process or a name"
check_nothing_left
