#!/usr/bin/env bash
# psup diff --format html in a real browser (issue 21): two runs per side of
# a program whose work_a does three times the work on the NEW side. Headless
# Chromium loads the page, whose script draws the differential flame graph:
# work_a's frame is coloured as grown (red: the fill flame.js gives a frame
# whose share grew, rgb(245,c,c) with c < 245), work_b's is not; the
# functions table, escaped HTML, says work_a is "slower" as the JSON diff
# does; the page fetches nothing; one run per side says it cannot judge.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

command -v chromium >/dev/null || skip "no chromium (scripts/bootstrap.sh installs Debian's chromium)"


T="$TARGETS/diffwork"
for i in 1 2; do
	run_psup 60 run -q -c 250000 -o base$i.cbor -- "$T" 150 150
	expect_rc 0
	run_psup 60 run -q -c 250000 -o new$i.cbor -- "$T" 450 150
	expect_rc 0
done

run_psup 60 diff --format html -o d.html base1.cbor base2.cbor -- new1.cbor new2.cbor
expect_rc 0
[ ! -s out ] || fail "diff -o d.html wrote to stdout: $(head -c 200 out)"
LC_ALL=C grep -Eqi '<(script|link|img|iframe|object|embed|source)[^>]+(src|href)=' d.html &&
	fail "html loads an external resource"
LC_ALL=C grep -Eqi 'url\(|@import' d.html && fail "html: CSS fetches something"
grep -q 'id="flame-graph-base"' d.html || fail "the flame graph has no base tree (not differential)"

chromium_dom "file://$WORK/d.html" d.dom
grep -q 'data-ready="1"' d.dom || fail "the flame graph script did not finish"
frames=$(grep -o '<g class="fr[ "]' d.dom | wc -l)
[ "$frames" -ge 3 ] || fail "the flame graph has $frames frames, expected at least 3"
# one frame per line: <g ...><rect ... fill="rgb(r,g,b)"></rect><text ...>name</text></g>
sed 's/<g class="fr/\n&/g' d.dom | grep '^<g class="fr' >frames.txt
fill_of() { # function: the fills of its frames, one per line
	grep ">$1</text>" frames.txt | grep -o 'fill="rgb([0-9,]*)"' | grep -o '[0-9,]*'
}
fa=$(fill_of work_a)
[ -n "$fa" ] || fail "no frame labelled work_a: $(head -c 600 frames.txt)"
echo "$fa" | awk -F, '{ if (!($1 > $2 + 30 && $2 == $3)) bad = 1 } END { exit bad }' ||
	fail "work_a (three times the work) is not coloured as grown (red): $fa"
fb=$(fill_of work_b)
[ -n "$fb" ] || fail "no frame labelled work_b"
echo "$fb" | awk -F, '{ if ($1 > $2 + 30) bad = 1 } END { exit bad }' ||
	fail "work_b (the same work, a smaller share) is coloured as grown: $fb"

# the functions table: work_a's row says slower, as the JSON diff does
run_psup 60 diff --format json base1.cbor base2.cbor -- new1.cbor new2.cbor
expect_rc 0
cp out d.json
jq_check d.json '[.functions[] | select(.function == "work_a")][0].verdict == "slower"' \
	"the JSON diff does not say work_a is slower"
row=$(sed -n '/<section id="functions">/,/<\/section>/p' d.dom | grep '<td class="c">work_a</td>')
echo "$row" | grep -q '<td class="verdict slower">slower</td>' ||
	fail "functions table: work_a's verdict is not slower: $row"
# The page rounds to 0.1 the double the JSON prints rounded too: 208.55 in
# the JSON can be +208.5% on the page. Equal within the rounding.
pct=$(jq -r '[.functions[] | select(.function == "work_a")][0].change_percent' d.json)
shown=$(echo "$row" | grep -o '<td class="r">[+-][0-9.]*%</td>' | grep -o '[+-][0-9.]*')
[ -n "$shown" ] && awk -v a="$pct" -v b="$shown" 'BEGIN { d = a - b; exit !(d <= 0.051 && d >= -0.051) }' ||
	fail "functions table: work_a's change is not $pct%: $row"
sed -n '/<section id="lines">/,/<\/section>/p' d.dom | grep -q 'work_a</td>' ||
	fail "the lines table has no line of work_a"
grep -q '<b id="base-runs">2</b>' d.dom && grep -q '<b id="new-runs">2</b>' d.dom ||
	fail "the summary does not say two runs per side"
grep -q 'data-can-judge="1"' d.dom || fail "the summary does not say it judged significance"

# what a person sees is not blank
timeout 120 chromium --headless=new --no-sandbox --disable-gpu --no-first-run \
	--user-data-dir="$WORK/chromium" --window-size=1280,1000 --virtual-time-budget=20000 \
	--screenshot="$WORK/d.png" "file://$WORK/d.html" >/dev/null 2>chromium.err ||
	fail "chromium screenshot failed: $(tail -3 chromium.err)"
[ -s d.png ] || fail "no screenshot"

# one run per side: drawn, and no verdict
run_psup 60 diff --format html -o one.html base1.cbor -- new1.cbor
expect_rc 0
chromium_dom "file://$WORK/one.html" one.dom
grep -q 'data-ready="1"' one.dom || fail "one run per side: the flame graph did not finish"
grep -q 'data-can-judge="0"' one.dom && grep -q 'cannot judge with one run' one.dom ||
	fail "one run per side does not say it cannot judge"
sed -n '/<section id="functions">/,/<\/section>/p' one.dom | grep '<td class="c">work_a</td>' |
	grep -q '<td class="verdict">?</td>' || fail "one run per side: work_a was given a verdict"
check_nothing_left
