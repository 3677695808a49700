#!/usr/bin/env bash
# The debug cache (symbols/debugcache.c): a program whose DWARF is in a
# compressed separate debug file (as Debian's -dbgsym files) gets its lines
# through an inflated copy kept by build-id in PSUP_DEBUG_CACHE: written by
# the first run, read by the next, the same lines each time; not used when
# off, nor when the directory is not the user's alone.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

command -v objcopy >/dev/null || skip "no objcopy (binutils)"
cp "$TARGETS/diffwork" full
objcopy --only-keep-debug --compress-debug-sections=zlib full prog.debug
objcopy --strip-all --add-gnu-debuglink=prog.debug full prog
readelf -SW prog.debug | grep debug_info | grep -q ' C ' || fail "objcopy did not compress prog.debug"
bid=$(readelf -n prog | sed -n 's/.*Build ID: *//p')
[ -n "$bid" ] || skip "the target has no build-id"
copy="$WORK/cache/${bid:0:2}/${bid:2}.debug"

# line_of JSON FUNCTION: the file:line of the function's hottest line
line_of() {
	jq -r --arg f "$2" '[.lines[] | select(.function == $f)] | max_by(.self) | "\(.file):\(.line)"' "$1"
}

record() { # name, then PSUP_DEBUG_CACHE's value
	PSUP_DEBUG_CACHE="$2" run_psup 60 run -v -o "$1.cbor" -- ./prog 60 30
	expect_rc 0
	cp "$WORK/err" "$1.err"
	report_json "$1.cbor" >"$1.json"
}

record first "$WORK/cache"
[ -f "$copy" ] || fail "no inflated copy at $copy: $(grep debug first.err)"
[ "$(stat -c %s "$copy")" -gt "$(stat -c %s prog.debug)" ] || fail "the copy is not larger than the compressed file"
readelf -SW "$copy" | grep debug_info | grep -q ' C ' && fail "the copy is still compressed"
grep -Eq '[1-9][0-9]* written to it' first.err || fail "psup -v does not say it wrote a copy: $(grep debug first.err)"
want=$(line_of first.json work_a)
case "$want" in *diffwork.c:[0-9]*) ;; *) fail "work_a has no source line through the copy: $want" ;; esac

ino=$(stat -c %i "$copy")
record second "$WORK/cache"
# (other images' copies may be written in either run: which images get
# samples, and so are named, varies)
grep -Eq '[1-9][0-9]* debug files from the debug cache' second.err ||
	fail "the second run did not read the copy: $(grep debug second.err)"
[ "$(stat -c %i "$copy")" = "$ino" ] || fail "the copy was written again"
[ "$(line_of second.json work_a)" = "$want" ] || fail "work_a's line changed through the copy: $(line_of second.json work_a), was $want"

# Off: nothing read or written, the same line from the compressed file.
record off off
grep -q '0 debug files from the debug cache, 0 written' off.err || fail "PSUP_DEBUG_CACHE=off used the cache: $(grep debug off.err)"
[ "$(line_of off.json work_a)" = "$want" ] || fail "work_a's line without the cache: $(line_of off.json work_a), expected $want"

# A directory others may write in is not trusted.
mkdir -m 777 open
chmod 777 open
record open "$WORK/open"
grep -q '0 debug files from the debug cache, 0 written' open.err || fail "a world-writable cache directory was used: $(grep debug open.err)"
[ -z "$(ls -A open)" ] || fail "psup wrote into a world-writable directory: $(ls -A open)"
[ "$(line_of open.json work_a)" = "$want" ] || fail "work_a's line with an untrusted cache: $(line_of open.json work_a)"
check_nothing_left
