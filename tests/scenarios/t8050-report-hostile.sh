#!/usr/bin/env bash
# Hostile input to psup report (issue 22):
#  - names from the program (functions, files, threads, progress points)
#    holding ESC/BEL, a C1 CSI (U+009B), | and ` and <script>: every view in
#    every format prints no control character, markdown escapes | and `
#    inside names, html has no raw tag from them (tables: entities; the flame
#    graph's JSON in <script>: \u003c), JSON parses;
#  - /dev/zero as a record file is refused at once, not read until memory
#    runs out.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

T="$TARGETS/hostile-names"
run_psup 120 run -q -o p.cbor -- "$T" 300
expect_rc 0
run_psup 120 run -q -o c.cbor --experiment-ms 20 --causal -- "$T" 2000
expect_rc 0
run_psup 300 run -q -o w.cbor --witch dead --witch-period 100000 -- "$T" 300
expect_rc 0

# the recording did get the names (else this checks nothing)
"$PSUP" report --format json --view all p.cbor | jq -e '[.functions[].function | select(startswith("evil_\u001b"))] | length == 1' >/dev/null ||
	fail "the profile does not name the hostile function"
"$PSUP" report --format json --view locks p.cbor | grep -q 'evil_\\u001b' ||
	fail "the locks view does not show the hostile function"
"$PSUP" report --format json c.cbor | grep -q 'point_\\u001b' || fail "no hostile progress point"

# no control character but newline (and the tabs of coz's format); C1 is
# c2 80..c2 9f in UTF-8
controls() { # file -> fails when it holds one
	LC_ALL=C grep -qP '[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' "$1"
}
for f in p c w; do
	for fmt in text markdown json; do
		timeout 60 "$PSUP" report --view all --format $fmt $f.cbor >$f.$fmt ||
			fail "report --format $fmt $f.cbor failed"
		controls $f.$fmt && fail "$f.cbor, $fmt: a control character from a name: $(LC_ALL=C grep -naP '[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' $f.$fmt | head -3 | cat -v)"
	done
	jq -e . $f.json >/dev/null || fail "$f.cbor: the JSON does not parse"
	# markdown: a name's | is escaped (a table cell cannot end), its `
	# cannot close the code span
	n=$(LC_ALL=C grep -o '31m|pipe' $f.markdown | wc -l)
	[ "$n" -eq 0 ] || fail "$f.cbor, markdown: an unescaped | in a name: $(grep -m1 '31m|pipe' $f.markdown | cat -v)"
	LC_ALL=C grep -q 'pipe`tick\|?|`<' $f.markdown && fail "$f.cbor, markdown: an unescaped \` in a name"
	LC_ALL=C grep -q '<script>' $f.markdown && ! LC_ALL=C grep '<script>' $f.markdown | grep -q '`[^`]*<script>' &&
		fail "$f.cbor, markdown: <script> outside a code span"
done
# the terminal views print the names, escaped
grep -q 'evil_?\]0;pwned?_esc' p.text || fail "the text report lost the hostile name"
for v in functions locks top-down bottom-up threads; do
	"$PSUP" report --view $v --format markdown p.cbor >v.md || fail "--view $v failed"
	controls v.md && fail "--view $v, markdown: a control character"
	LC_ALL=C grep -q '31m|pipe\|pipe`' v.md && fail "--view $v, markdown: an unescaped | or \`"
done
timeout 60 "$PSUP" report --format html c.cbor >c.html || fail "report --format html failed"
controls c.html && fail "html: a control character"
# the page's own scripts only: the flame graph's code in <head>, its data
# (application/json) and the call that draws it; no </script> from a name
html_raw_tags() { # file
	LC_ALL=C grep -qP '<script>(?!$|psupFlame\("flame-graph"\);</script>$)|<b>' "$1" && return 0
	[ "$(grep -o '<script' "$1" | wc -l)" = "$(grep -o '</script>' "$1" | wc -l)" ] || return 0
	return 1
}
html_raw_tags c.html && fail "html: a raw tag from a name"
grep -q 'point_?\]0;pwned?_?|`&lt;script&gt;' c.html || fail "html: the point's name is not escaped as entities"
# the whole page of the profile: tables and the flame graph's JSON
timeout 60 "$PSUP" report --format html --view all p.cbor >p.html || fail "report --format html p.cbor failed"
controls p.html && fail "html p.cbor: a control character"
html_raw_tags p.html && fail "html p.cbor: a raw tag from a name"
grep -q 'c1_?31m|pipe`tick&lt;script&gt;alert(1)&lt;/script&gt;' p.html ||
	fail "html p.cbor: the function's name is not escaped as entities in the tables"
sed -n 's/^<script type="application\/json" id="flame-graph-data">\(.*\)<\/script>$/\1/p' p.html >flame.json
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if any("<script>alert(1)</script>" in n for n in d["names"]) else 1)' flame.json ||
	fail "html p.cbor: the flame graph's JSON does not parse or lost the hostile name"
LC_ALL=C grep -q '\\u003cscript\\u003ealert(1)\\u003c/script\\u003e' flame.json ||
	fail "html p.cbor: '<' in the flame graph's JSON is not escaped"
timeout 60 "$PSUP" report --format coz c.cbor >c.coz || fail "report --format coz failed"
LC_ALL=C grep -qP '[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' <(tr -d '\t' <c.coz) && fail "coz: a control character"

# /dev/zero: one look at its first item, not a read until memory runs out
# (a bound on memory for the old behaviour's sake, unless the sanitizers,
# which reserve terabytes of address space, refuse to start under one)
limit=4000000
(ulimit -v $limit && "$PSUP" --version) >/dev/null 2>&1 || limit=unlimited
( ulimit -v $limit; timeout 20 "$PSUP" report /dev/zero >z.out 2>z.err; echo $? >z.rc )
[ "$(cat z.rc)" = 1 ] || fail "report /dev/zero: exit status $(cat z.rc), expected 1"
[ "$(wc -l <z.err)" = 1 ] && grep -q '^psup: /dev/zero: .*not a map' z.err ||
	fail "report /dev/zero: $(cat z.err)"
check_nothing_left
