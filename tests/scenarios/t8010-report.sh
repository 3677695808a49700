#!/usr/bin/env bash
# The report: formats, merging runs, truncated and corrupt files.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

run_psup 60 run -q -o a.cbor -- "$TARGETS/ratio" direct 0.5
expect_rc 0
run_psup 60 run -q -o b.cbor -- "$TARGETS/ratio" direct 0.5
expect_rc 0

report_json a.cbor >a.json
python3 -m json.tool a.json >/dev/null || fail "JSON report does not parse"
report_json b.cbor >b.json
report_json a.cbor b.cbor >ab.json
jq_check ab.json '.summary.runs == 2' "two files are not two runs"
na=$(jq .summary.samples a.json)
nb=$(jq .summary.samples b.json)
jq_check ab.json ".summary.samples == ($na + $nb)" "merged samples are not the sum"

run_psup 30 report a.cbor
expect_rc 0
for w in work_three work_one; do grep -q "$w" "$WORK/out" || fail "text report lacks $w"; done
run_psup 30 report --format markdown a.cbor
expect_rc 0
grep -q '^|' "$WORK/out" || fail "markdown report has no table"

# Truncated: what was read is reported, with a warning. The cut must fall
# inside a record: one on a record boundary leaves a valid shorter file (no
# warning, only "incomplete: no end record"), and where 2/3 of the size falls
# depends on the run (2 recordings in 61 cut on a boundary). Every record is
# a map whose first key is "type" (bytes "dtype"): cut 2 bytes into the last
# such key before 2/3 of the file.
size=$(stat -c %s a.cbor)
cut=$(LC_ALL=C grep -obUa dtype a.cbor |
	awk -F: -v h=$((size * 2 / 3)) 'BEGIN { c = -1 } $1 <= h { c = $1 } END { print c < 0 ? 0 : c + 2 }')
[ "$cut" -gt 0 ] || fail "no record starts before 2/3 of a.cbor"
head -c "$cut" a.cbor >t.cbor
run_psup 30 report t.cbor
expect_rc 0
grep -qi truncated "$WORK/err" || fail "no warning for a truncated file"

# Garbage: one line, non-zero.
head -c 4096 /dev/urandom >g.cbor
run_psup 30 report g.cbor
[ $RC -ne 0 ] || fail "garbage accepted"
[ "$(wc -l <"$WORK/err")" -eq 1 ] || fail "garbage: not one error line"
: >empty.cbor
run_psup 30 report empty.cbor
[ $RC -ne 0 ] || fail "empty file accepted"
run_psup 30 report missing.cbor
[ $RC -ne 0 ] || fail "missing file accepted"
