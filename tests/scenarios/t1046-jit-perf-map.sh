#!/usr/bin/env bash
# Code a JIT generated, named in its perf map file (/tmp/perf-PID.map), is
# reported under that name, not as [unknown], although the program removes
# the file when it exits.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

run_psup 60 run -q -o jit.cbor -- "$TARGETS/jit" 1
expect_rc 0
report_json jit.cbor >jit.json
hot=$(func_total_pct jit.json "jit_hot_loop [compiled]")
note "jit_hot_loop $hot%"
in_range "$hot" 70 100 || {
	jq -c '[.functions[:5][] | {function, image, self_percent}]' jit.json >&2
	fail "the JIT's hot code has $hot% of the samples under its perf map name, expected most"
}
jq_check jit.json '[.functions[] | select(.function == "jit_hot_loop [compiled]") | .image | test("perf-[0-9]+\\.map$")] | all' \
	"the JIT frame's image is not its perf map file"
# Its caller is found too (no unwind info for JIT code: a frameless leaf).
main=$(func_total_pct jit.json main)
in_range "$main" 70 100 || fail "main has $main% in total: stacks stop at the JIT frame"
check_nothing_left
