#!/usr/bin/env bash
# A thread renamed after its creation (pthread_setname_np) shows its new
# name in the threads view, with the first one beside it; so does the main
# thread, renamed twice. Per thread and per CPU (where permitted) alike.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

check_names() { # json, what
	jq_check "$1" '[.threads[] | select(.name == "renamed-late")] | length == 1' \
		"$2: the worker's new name is not shown"
	jq_check "$1" '[.threads[] | select(.name == "renamed-late") | .first_name] == ["first-main"]' \
		"$2: the worker's first name (its creator's) is not beside the new one"
	jq_check "$1" '[.threads[] | select(.name == "main-renamed")] | length == 1' \
		"$2: the main thread's second rename is not shown"
}

run_psup 120 run -q -o thr.cbor --sample-per-thread -- "$TARGETS/rename" 1.2
expect_rc 0
report_json thr.cbor >thr.json
check_names thr.json "per thread"
"$PSUP" report --view threads thr.cbor | grep -q "renamed-late (was first-main)" ||
	fail "the text view does not say the worker was renamed"

run_psup 120 run -q -o cpu.cbor -- "$TARGETS/rename" 1.2
expect_rc 0
report_json cpu.cbor >cpu.json
check_names cpu.json "default sampling"
# Renamed by its creator right after pthread_create: the rename's record
# (on the creator's CPU) and the thread's fork record (on another CPU's
# ring, perhaps) are taken in time order, the fork first.
for i in 1 2 3; do
	run_psup 60 run -q -o early$i.cbor -- "$TARGETS/rawsleep" 0.3
	expect_rc 0
	report_json early$i.cbor >early$i.json
	jq_check early$i.json '[.threads[] | select(.tid != .pid) | .name] == ["rawsleeper"]' \
		"run $i: a thread renamed right after its creation keeps its creator's name"
done
check_nothing_left
