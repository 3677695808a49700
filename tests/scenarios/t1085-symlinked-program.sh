#!/usr/bin/env bash
# A program started through a symbolic link (redis-server is a link to
# redis-check-rdb) is shown by the name it was started as, with the file
# it resolves to beside it.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

ln -s "$TARGETS/spin" ./server-name
run_psup 60 run -q -o link.cbor -- ./server-name 0.3
expect_rc 0
report_json link.cbor >link.json
jq_check link.json '[.images[] | select(.image | endswith("/spin")) | .started_as] == ["server-name"]' \
	"the images view does not say the program was started as server-name"
run_psup 30 report --view images,functions link.cbor
expect_rc 0
grep -q "spin (started as server-name)" "$WORK/out" || fail "the text images view lacks 'started as server-name'"
grep -E "spin_loop +server-name" "$WORK/out" >/dev/null ||
	fail "the functions view names the image by the file, not the name the program was started as"
check_nothing_left
