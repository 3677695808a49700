#!/usr/bin/env bash
# Witch leaves the program's signals alone: its own SIGTRAPs (raise and int3,
# counted by its handler) each arrive once beside psup's watchpoint traps and
# single-steps; no realtime signal (psup samples with one) reaches it; and
# while it blocks every signal, nothing of psup's is left pending (the
# program checks with sigpending). Then bad options get one-line errors.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

for k in dead silent dead,load; do
	run_psup 120 run -q -o s.cbor -f --witch $k --witch-period 300000 -- "$TARGETS/witch-sigs" 3
	[ "$RC" -eq 0 ] || { cat "$WORK/err" "$WORK/out" >&2; fail "witch-sigs failed under --witch $k (rc $RC)"; }
	grep -q "^ok" "$WORK/out" || fail "witch-sigs did not finish its checks"
	timeout 60 "$PSUP" report --format json --view witch s.cbor >s.json || fail "report failed"
	jq_check s.json '.witch.skipped.signals > 50' "--witch $k: too few sampling signals"
	jq_check s.json '[.witch | to_entries[] | select(.value | type == "object" and has("counters")) | .value.counters.traps] | add > 10' \
		"--witch $k: too few watchpoint traps"
	note "--witch $k: $(jq -c '.witch.skipped | {signals, samples, signal_blocked}' s.json)"
done

# Usage errors: one line each, exit 2.
for args in "--witch bogus" "--witch ''" "--witch dead --witch-period 5" "--witch-exact" \
	"--witch dead --witch-fp-precision 2"; do
	eval run_psup 20 run -q -o x.cbor -f $args -- true
	expect_rc 2
	[ "$(wc -l <"$WORK/err")" -eq 1 ] || { cat "$WORK/err" >&2; fail "'$args': expected a one-line error"; }
done
check_nothing_left
