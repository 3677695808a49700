#!/usr/bin/env bash
# --format json (issue 17): indented on a terminal or with --pretty, one
# compact line in pipes and files (what scripts and jq read), the same data
# either way.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

command -v script >/dev/null || skip "no script(1) (util-linux) to give psup a terminal"
run_psup 60 run -q -o a.cbor -- "$TARGETS/spin" 0.2
expect_rc 0

# a pipe: compact
timeout 60 "$PSUP" report --format json a.cbor >pipe.json || fail "report to a pipe failed"
[ "$(wc -l <pipe.json)" -eq 1 ] || fail "JSON to a pipe is not one line"
# a file: compact
timeout 60 "$PSUP" report --format json -o file.json a.cbor || fail "report -o failed"
[ "$(wc -l <file.json)" -eq 1 ] || fail "JSON to a file is not one line"
# a terminal: indented
timeout 60 script -qec "'$PSUP' report --format json a.cbor" /dev/null | tr -d '\r' >tty.json ||
	fail "report on a terminal failed"
[ "$(wc -l <tty.json)" -gt 20 ] || fail "JSON on a terminal is not indented: $(head -c 200 tty.json)"
grep -q '^  "summary": {$' tty.json || fail "no indented \"summary\" member on a terminal"
# --pretty: indented anywhere
timeout 60 "$PSUP" report --format json --pretty a.cbor >pretty.json || fail "--pretty failed"
[ "$(wc -l <pretty.json)" -gt 20 ] || fail "--pretty is not indented"
timeout 60 "$PSUP" report --format json --pretty -o pfile.json a.cbor || fail "--pretty -o failed"
cmp -s pretty.json pfile.json || fail "--pretty to a file differs from --pretty to a pipe"
for f in file tty pretty; do
	jq -S . "$f.json" >"$f.s" || fail "$f.json does not parse"
done
jq -S . pipe.json >pipe.s || fail "pipe.json does not parse"
for f in file tty pretty; do
	cmp -s pipe.s "$f.s" || fail "$f.json holds other data than the compact report"
done
# A deep stack (300 nested calls) still gives JSON that jq reads, trees
# included: Debian 12's jq refuses nesting past about 180 levels.
"$TARGETS/gen-contexts" deep.cbor 300 chain || fail "gen-contexts failed"
timeout 60 "$PSUP" report --format json --view all deep.cbor >deep.json || fail "report of a deep stack failed"
jq -e '.summary.samples > 0' deep.json >/dev/null || fail "jq cannot read the JSON report of a deep stack"
exit 0
