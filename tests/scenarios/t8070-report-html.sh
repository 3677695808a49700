#!/usr/bin/env bash
# psup report --format html in a real browser (issue 21): headless Chromium
# loads the page of a threads recording, runs its script (the flame graph is
# drawn from the inline JSON tree) and the DOM has the flame graph's frames,
# the totals and the top function's share of the JSON report, and a search
# (page.html?search=TEXT) that highlights the function and says its share;
# the page fetches nothing; a screenshot is not blank; a page of 100,000
# calling contexts is drawn in under 5 s of the page's own clock
# (performance.now(), which the script writes into the DOM when done).
. "$(dirname "$0")/lib.sh"
cd "$WORK"

command -v chromium >/dev/null || skip "no chromium (scripts/bootstrap.sh installs Debian's chromium)"


run_psup 60 run -q -o t.cbor -- "$TARGETS/threads" 3 0.3
expect_rc 0
report_json t.cbor >t.json
run_psup 60 report --format html -o t.html t.cbor
expect_rc 0

# self-contained: no element loads anything, no CSS url() or @import
LC_ALL=C grep -Eqi '<(script|link|img|iframe|object|embed|source)[^>]+(src|href)=' t.html &&
	fail "html loads an external resource: $(grep -Eoi '<(script|link|img)[^>]+(src|href)=[^>]*' t.html | head -1)"
LC_ALL=C grep -Eqi 'url\(|@import' t.html && fail "html: CSS fetches something"

chromium_dom "file://$WORK/t.html" t.dom
grep -q 'data-ready="1"' t.dom || fail "the flame graph script did not finish"
frames=$(grep -o '<g class="fr[ "]' t.dom | wc -l)
[ "$frames" -ge 5 ] || fail "the flame graph has $frames frames, expected at least 5"
samples=$(jq .summary.samples t.json)
grep -q "<b id=\"total-samples\">$samples</b>" t.dom ||
	fail "page's total samples $(grep -o 'id="total-samples">[0-9]*' t.dom) != JSON's $samples"
grep -q ">all ($samples samples)</text>" t.dom || fail "the flame graph's root is not all $samples samples"
top=$(jq -r '.functions[0].function' t.json)
[ "$top" = thread_spin ] || fail "the top function is $top, expected thread_spin"
pct=$(jq -r '.functions[0].self_percent' t.json | xargs printf '%.1f%%')
# the first row of the functions table: self, self%, ..., function
row=$(sed -n '/<section id="functions">/,/<\/section>/p' t.dom | grep -m1 '<tr><td')
echo "$row" | grep -q "<td class=\"r\">$pct</td>" || fail "functions table: top self% is not $pct: $row"
echo "$row" | grep -q ">$top</td>" || fail "functions table: top function is not $top: $row"
for s in summary threads; do
	grep -q "<section id=\"$s\">" t.dom || fail "no $s section"
done

# search: the function's frames highlighted, their share of the samples said
chromium_dom "file://$WORK/t.html?search=thread_spin" s.dom
hl=$(grep -o '<g class="fr hl"' s.dom | wc -l)
[ "$hl" -ge 1 ] || fail "search for thread_spin highlights no frame"
want=$(jq -r '.functions[] | select(.function == "thread_spin") | .total_percent' t.json | xargs printf '%.2f%%')
grep -q "matched: $want of samples" s.dom ||
	fail "search share $(grep -o 'matched: [0-9.]*%' s.dom) != JSON's total_percent $want"
chromium_dom "file://$WORK/t.html?search=no_such_function_here" n.dom
[ "$(grep -o '<g class="fr hl"' n.dom | wc -l)" -eq 0 ] || fail "a search without matches highlights frames"

# what a person sees is not blank: many colours in the screenshot
timeout 120 chromium --headless=new --no-sandbox --disable-gpu --no-first-run \
	--user-data-dir="$WORK/chromium" --window-size=1280,1000 --virtual-time-budget=20000 \
	--screenshot="$WORK/t.png" "file://$WORK/t.html" >/dev/null 2>chromium.err ||
	fail "chromium screenshot failed: $(tail -3 chromium.err)"
python3 - "$WORK/t.png" <<'PY' || fail "the screenshot is blank"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", data[pos + 8:pos + 18])
    if kind == b"IDAT":
        idat += data[pos + 8:pos + 8 + n]
    pos += 12 + n
raw = zlib.decompress(idat)
# distinct byte values past the filter bytes: a blank page has one or two
sys.exit(0 if len(set(raw)) > 40 else 1)
PY

# 100,000 calling contexts: drawn, and fast
"$TARGETS/gen-contexts" big.cbor 100000 || fail "gen-contexts failed"
run_psup 120 report --format html -o big.html big.cbor
expect_rc 0
chromium_dom "file://$WORK/big.html" big.dom
grep -q 'data-nodes="100001"' big.dom || fail "the big page's tree has $(grep -o 'data-nodes="[0-9]*"' big.dom), not 100001 nodes"
grep -q 'data-ready="1"' big.dom || fail "the big page's flame graph did not finish"
ms=$(grep -o 'data-page-ms="[0-9.]*"' big.dom | grep -o '[0-9.]*')
note "100,000 contexts: drawn ${ms} ms after the page started loading"
awk -v m="$ms" 'BEGIN { exit !(m < 5000) }' || fail "the 100,000-context page took $ms ms (over 5 s)"
[ "$(grep -o '<g class="fr[ "]' big.dom | wc -l)" -ge 100 ] || fail "the big flame graph has few frames"
check_nothing_left
