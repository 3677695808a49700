#!/usr/bin/env bash
# Stripped programs (issue 17): code without symbols is one row per group in
# Functions and Lines ("[img] (no symbols)", "[img] after F"), never one row
# per address ("[img+0x...]"); a Lines table of nothing but "-" becomes one
# line saying why; and the report names the images without debug info and
# says once how to get it.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

# No symbol table at all (static, -s): every address of the program is one
# group, and no sampled code has a line.
run_psup 60 run -q -o s.cbor -- "$TARGETS/stripped-static" 0.4
expect_rc 0
run_psup 30 report --top 0 s.cbor
expect_rc 0
cp "$WORK/out" s.txt
! grep -q '+0x' s.txt || fail "a row per address: $(grep -m3 '+0x' s.txt)"
grep -q '\[stripped-static\] (no symbols)' s.txt || fail "no '[stripped-static] (no symbols)' row"
# A static program without lines: no sampled code has one (psup's own
# child before the exec, in a libc with lines, is not sampled: t1097).
grep -q 'no sampled code has source line information' s.txt ||
	fail "the Lines view of a program without lines is not one line saying why"
! grep -q 'libc-start.c\|  line  ' s.txt || fail "a Lines table although no code has lines"
grep -q '^Debug info' s.txt || fail "no Debug info section"
grep -q '^  stripped-static (on the path of' s.txt || fail "Debug info does not name stripped-static"
grep -q 'no symbols at all' s.txt || fail "Debug info does not say the image has no symbols"
[ "$(grep -c DEBUGINFOD_URLS s.txt)" -eq 1 ] || fail "the advice is not given exactly once"
grep -q -- '-dbgsym' s.txt || fail "the advice does not name -dbgsym packages"
report_json s.cbor >s.json
jq_check s.json '[.functions[] | select(.function == "[stripped-static] (no symbols)") | .self_percent] | .[0] > 50' \
	"the group does not hold most samples"
jq_check s.json '[.functions[] | select(.function | test("\\+0x"))] | length == 0' "JSON has a row per address"
jq_check s.json '[.images[] | select(.image | endswith("/stripped-static")) | .symbols] | .[0] == "none"' \
	"the image's symbols are not \"none\""

# Only the exported functions keep names (-rdynamic -s): hidden_loop, a
# static function right after stripped_exported, is "after" it, and is not
# called stripped_exported.
run_psup 60 run -q -o e.cbor -- "$TARGETS/stripped-exports" 0.4
expect_rc 0
report_json e.cbor >e.json
jq_check e.json '[.functions[] | select(.function == "[stripped-exports] after stripped_exported") | .self_percent] | .[0] > 50' \
	"the code after stripped_exported is not grouped as '[stripped-exports] after stripped_exported'"
jq_check e.json '[.functions[] | select(.function == "stripped_exported") | .self] | (.[0] // 0) < 10' \
	"hidden_loop's samples were given to stripped_exported"
jq_check e.json '[.functions[] | select(.function | test("\\+0x"))] | length == 0' "JSON has a row per address"
jq_check e.json '[.images[] | select(.image | endswith("/stripped-exports")) | .symbols] | .[0] == "dynsym"' \
	"the image's symbols are not \"dynsym\""
run_psup 30 report e.cbor
expect_rc 0
grep -q 'only its exported functions have names' "$WORK/out" || fail "Debug info does not explain the exports"
exit 0
