#!/usr/bin/env bash
# A program that never ran two threads at once gets no advice on
# parallelism (issue 17), while a parallel one does, with effort, idleness
# and overhead explained; the thread states explain "other".
. "$(dirname "$0")/lib.sh"
cd "$WORK"

run_psup 60 run -q -o s.cbor -- "$TARGETS/spin" 0.3
expect_rc 0
run_psup 30 report s.cbor
expect_rc 0
cp "$WORK/out" s.txt
! grep -q 'Parallel efficiency' s.txt || fail "a single-threaded program gets a parallel efficiency view"
! grep -q 'granularity' s.txt || fail "a single-threaded program gets advice on granularity"
if grep -q '^Thread states' s.txt; then
	grep -q 'other: blocked in the kernel on something' s.txt || fail "the thread states do not explain 'other'"
fi
run_psup 30 report --view efficiency s.cbor
expect_rc 0
grep -q 'no two threads of the program worked at the same time' "$WORK/out" ||
	fail "--view efficiency does not say why it has nothing to say: $(cat "$WORK/out")"
! grep -q 'granularity\|whole program' "$WORK/out" || fail "--view efficiency reads a serial program"
report_json --view efficiency s.cbor >s.json
jq_check s.json '.efficiency.parallel == false and .efficiency.reading == null and (.efficiency.regions | length) == 0' \
	"JSON reads parallelism into a serial program"

# two threads spinning at once: the view, explained
run_psup 60 run -q -o p.cbor -- "$TARGETS/threads" 2 0.2
expect_rc 0
run_psup 30 report p.cbor
expect_rc 0
grep -q '^Parallel efficiency' "$WORK/out" || fail "a parallel program lost its efficiency view"
for term in effort idleness overhead; do
	grep -q "^  $term: " "$WORK/out" || fail "the efficiency view does not explain $term"
done
report_json --view efficiency p.cbor >p.json
jq_check p.json '.efficiency.parallel == true and .efficiency.reading != null' "a parallel program reads as serial"
exit 0
