#!/usr/bin/env bash
# A program spending 3:1 of its CPU in two functions reports 75% +-5 and
# 25% +-5 (total: with the kernel time spent on the thread meanwhile): directly, through a shared library, through inlined helpers, and
# through a library loaded with dlopen after start (by name and line).
. "$(dirname "$0")/lib.sh"
cd "$WORK"

check_ratio() { # json, three, one, what
	local a b
	a=$(func_total_pct "$1" "$2")
	b=$(func_total_pct "$1" "$3")
	note "$4: $2 $a%, $3 $b%"
	if ! in_range "$a" 70 80 || ! in_range "$b" 20 30; then
		jq -c '.summary, .images[:6], [.functions[:8][] | {function, image, self_percent}]' "$1" >&2
	fi
	in_range "$a" 70 80 || fail "$4: $2 has $a% of samples, expected 75 +-5"
	in_range "$b" 20 30 || fail "$4: $3 has $b% of samples, expected 25 +-5"
}

run_psup 120 run -q -o direct.cbor -- "$TARGETS/ratio" direct 1.5
expect_rc 0
report_json direct.cbor >direct.json
check_ratio direct.json work_three work_one direct

run_psup 120 run -q -o lib.cbor -- "$TARGETS/ratio" lib 1.5
expect_rc 0
report_json lib.cbor >lib.json
check_ratio lib.json lib_three lib_one "shared library"
# Time in the library is also known by the program's caller (total).
# Shares of the program's user-space samples: a loaded machine adds kernel
# samples (interrupts) that say nothing about attribution.
jq_check lib.json '([.functions[] | select(.function == "work_three") | .total] | add) / ([.images[] | select(.image != "[kernel]") | .samples] | add) > 0.65' \
	"work_three's total does not include lib_three"
jq_check lib.json '([.images[] | select(.image | test("libratio")) | .samples] | add) / ([.images[] | select(.image != "[kernel]") | .samples] | add) > 0.9' \
	"the samples are not attributed to libratio.so"

run_psup 120 run -q -o inline.cbor -- "$TARGETS/ratio" inline 1.5
expect_rc 0
report_json inline.cbor >inline.json
check_ratio inline.json inl_three inl_one "inlined helpers"
# The inlined helper's line is its own; its caller appears in total.
jq_check inline.json '([.functions[] | select(.function == "work_three") | .total] | add) / ([.images[] | select(.image != "[kernel]") | .samples] | add) > 0.65' \
	"inlined helper's caller is missing from its call path"

lib=$(ls "$TARGETS"/libdlwork.so 2>/dev/null) || fail "libdlwork.so not built"
run_psup 120 run -q -o dl.cbor -- "$TARGETS/dlratio" "$lib" 1.5
expect_rc 0
report_json dl.cbor >dl.json
check_ratio dl.json dl_three dl_one dlopen
line=$(marker_line "$SRCDIR/tests/targets/libdlwork.c" dl_three)
[ -n "$line" ] || fail "no MARK:dl_three in libdlwork.c"
jq_check dl.json "[.lines[] | select(.function == \"dl_three\" and (.file | endswith(\"libdlwork.c\")) and .line == $line) | .total_percent] | add > 50" \
	"dl_three's marked line $line is not where its samples are"
check_nothing_left
