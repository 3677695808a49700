#!/usr/bin/env bash
# Threads are sampled from their first instruction; each has its own row.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

# Sampled per CPU where the kernel permits it (root here), per thread with
# --sample-per-thread (and where it does not): the same rows either way.
for mode in per-cpu per-thread; do
	opt=
	[ $mode = per-thread ] && opt=--sample-per-thread
	run_psup 120 run -v $opt -o t.cbor -f -- "$TARGETS/threads" 3 0.5
	expect_rc 0
	if [ $mode = per-thread ]; then
		grep -q "sampling per CPU" "$WORK/err" && fail "--sample-per-thread sampled per CPU"
	elif [ "$(id -u)" = 0 ]; then
		grep -q "sampling per CPU" "$WORK/err" || fail "root did not sample per CPU: $(grep -i 'sampling' "$WORK/err")"
	fi
	report_json t.cbor >t.json
	if [ $mode = per-thread ]; then
		jq_check t.json '.runs[0].per_cpu == false' "--sample-per-thread: the record says per CPU"
	elif [ "$(id -u)" = 0 ]; then
		jq_check t.json '.runs[0].per_cpu == true' "sampled per CPU: the record does not say so"
	fi
	jq_check t.json '[.threads[] | select(.samples > 200)] | length >= 3' "$mode: fewer than 3 threads with samples"
	s=$(func_total_pct t.json thread_spin)
	in_range "$s" 85 100 || fail "$mode: thread_spin has $s% of the samples"
done

run_psup 120 run -q -o f.cbor -- "$TARGETS/threads" --futex 4 20000
expect_rc 0
check_nothing_left
