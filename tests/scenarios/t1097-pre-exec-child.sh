#!/usr/bin/env bash
# What psup's child does between the fork and the exec of the program (in
# psup's own code, named psup) is not the program's profile: a
# single-threaded program has exactly one thread row, its own, with no
# thread named psup or [unknown], no sample in psup's binary, and states
# only from its exec on. The child runs long enough to be sampled when
# execvp() walks a PATH of 3000 missing directories first.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

check_one_thread() { # json, program name, what
	jq_check "$1" '.runs[0].threads == 1 and .summary.threads == 1' "$3: not one thread counted"
	jq_check "$1" "[.threads[].name] == [\"$2\"]" "$3: thread rows other than $2's own"
	jq_check "$1" "[.images[].image, .functions[].image | strings | select(endswith(\"/psup\"))] | length == 0" \
		"$3: samples in psup's own binary"
	jq_check "$1" '.threads[0].tid == .threads[0].pid and .runs[0].pid == .threads[0].pid' \
		"$3: the thread is not the program's"
}

long_path=$(printf "/.psup-missing/%d:" $(seq 3000))$TARGETS:$PATH
for i in 1 2 3; do
	PATH=$long_path run_psup 60 run -q -o s$i.cbor -- spin 0.05
	expect_rc 0
	report_json s$i.cbor >s$i.json
	check_one_thread s$i.json spin "spin, run $i"
done

# a program that exits at once: its whole life is after the exec
run_psup 60 run -q -o t.cbor -- /bin/true
expect_rc 0
report_json t.cbor >t.json
jq_check t.json '[.threads[] | select(.name == "psup" or .name == "[unknown]")] | length == 0' \
	"true: psup's child before the exec has a thread row"

# ls: one thread, ls's own
run_psup 60 run -q -o l.cbor -- ls -R "$SRCDIR/tests"
expect_rc 0
report_json l.cbor >l.json
check_one_thread l.json ls "ls"

# the children a program forks and execs are its own: still recorded
run_psup 60 run -q -o e.cbor -- sh -c "$TARGETS/spin 0.1; $TARGETS/spin 0.1"
expect_rc 0
report_json e.cbor >e.json
jq_check e.json '[.threads[] | select(.name == "spin")] | length == 2' "sh's two spin children are not both recorded"
check_nothing_left
