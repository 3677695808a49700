#!/usr/bin/env bash
# Sampled witch against --witch-exact (every instruction single-stepped, every
# access judged against a byte shadow): the fraction of the program's own
# accesses (pairs in its source file; libc's start-up is not part of the
# program's pattern and exact mode sees all of it) within 5 points, on
# programs whose fractions do not depend on their size. Exact runs are small
# (tens of thousands of instructions); sampled runs long enough to sample.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/witch-lib.sh"
cd "$WORK"

compare() { # name kind exact-args sampled-args
	local name=$1 kind=$2 ex sa tag=$1-$2
	run_psup 280 run -q -o "$tag-x.cbor" --witch "$kind" --witch-exact -- "$TARGETS/$name" $3
	expect_rc 0
	witch_json "$tag-x.cbor" "$tag-x.json"
	jq_check "$tag-x.json" '.witch.config.exact == true' "$name: exact run not marked exact"
	run_psup 280 run -q -o "$tag-s.cbor" --witch "$kind" --witch-period 250000 -- "$TARGETS/$name" $4
	expect_rc 0
	witch_json "$tag-s.cbor" "$tag-s.json"
	ex=$(wlocal_frac "$tag-x.json" "$kind" "$name.c")
	sa=$(wlocal_frac "$tag-s.json" "$kind" "$name.c")
	note "$name $kind: exact $ex%, sampled $sa% ($(jq .witch[\"$kind\"].counters.samples "$tag-s.json") samples)"
	in_range "$ex" 0 100.01 || fail "$name: exact judged nothing of the program's ($ex)"
	in_range "$sa" 0 100.01 || fail "$name: sampled judged nothing of the program's ($sa)"
	near "$ex" "$sa" 5 || fail "$name $kind: sampled $sa% vs exact $ex%: more than 5 points apart"
}

# Sampling is by time (README): the comparisons use programs whose wasted
# and useful accesses take the same time each, where time-weighted and
# counted fractions agree (witch-even runs one function for both), or are
# all of one kind (Listing 3, Figure 2, the search).
# Not the search (witch-search): its loads per search are ~1000 in find()
# and one of count[] after a division in main, which takes ~10% of the
# time: time-weighted, the silent loads are ~90% there (t6010), counted ~98%.
compare witch-even dead "dead 300 20" "dead 50000 6000"
compare witch-even silent "silent 300 20" "silent 50000 6000"
compare witch-even load "load 300 20" "load 50000 5000"
compare witch-ratio321 dead "100 50" "20000 10000"
compare witch-listing3 dead "100 10" "100000 1000"
check_nothing_left
