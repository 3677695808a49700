#!/usr/bin/env bash
# End-to-end mode (--runs N, no progress point): the program runs N times,
# one experiment per run, the whole run's time being the measure; psup exits
# with the last run's status. --line and --speedup fix the experiments' line
# and speedup. Then scopes: by default experiments only pick
# lines of the main executable's sources (never libc's); --scope GLOB
# narrows them to matching source paths.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/causal-lib.sh"
cd "$WORK"

run_psup 120 run -q -o e.cbor --runs 6 -- "$TARGETS/causal-short" 100 5
expect_rc 5
[ "$(grep -c '^items 200$' "$WORK/out")" -eq 6 ] || fail "--runs 6: the program did not run 6 times: $(cat "$WORK/out")"
causal_report e.cbor e.json
jq_check e.json '.causal.info.experiments == 6' "--runs 6: $(jq .causal.info.experiments e.json) experiments, expected one per run"
# The first run has no samples yet to pick a line from: at least the 5
# others experiment on a line of the program.
jq_check e.json '[(.causal.lines + .causal.insufficient)[].experiments] | add >= 5 and add <= 6' \
	"--runs 6: the lines' experiments add up to $(jq '[(.causal.lines + .causal.insufficient)[].experiments] | add' e.json), expected 5 or 6"
jq_check e.json '[.causal.progress_points[] | select(.name == "end-to-end")] | length == 1' \
	"--runs: no end-to-end progress point"

serial=$(causal_ref causal-amdahl.c causal_amdahl_serial)
run_psup 120 run -q -o f.cbor --experiment-ms 50 --line "$serial" --speedup 50 -p causal_amdahl_round_done -- "$TARGETS/causal-amdahl" 4
expect_rc 0
causal_report f.cbor f.json
jq_check f.json '[(.causal.lines + .causal.insufficient)[]] | length == 1 and .[0].line == "'"$serial"'" and .[0].experiments >= 5' \
	"--line $serial --speedup 50: experiments on other lines, or fewer than 5: $(jq -c '[(.causal.lines + .causal.insufficient)[] | {line, experiments}]' f.json)"
jq_check f.json '[.causal.lines[].curve[].speedup] | all(. == 0 or . == 50)' \
	"--speedup 50: the curve has other speedups: $(jq -c '[.causal.lines[].curve[].speedup]' f.json)"

run_psup 120 run -q -o d.cbor --experiment-ms 50 -p causal_amdahl_round_done -- "$TARGETS/causal-amdahl" 4
expect_rc 0
causal_report d.cbor d.json
jq_check d.json '[(.causal.lines + .causal.insufficient)[]] | length > 0' "no experiments at all"
jq_check d.json '[(.causal.lines + .causal.insufficient)[].path] | all(test("tests/targets/causal-[a-z0-9-]+\\.[ch]$"))' \
	"default scope: experiments on lines outside the program's own sources: $(jq -c '[(.causal.lines + .causal.insufficient)[].path] | unique' d.json)"

run_psup 120 run -q -o s.cbor --experiment-ms 50 --scope '*/causal-amdahl.c' -p causal_amdahl_round_done -- "$TARGETS/causal-amdahl" 4
expect_rc 0
causal_report s.cbor s.json
jq_check s.json '[(.causal.lines + .causal.insufficient)[]] | length > 0' "--scope: no experiments at all"
jq_check s.json '[(.causal.lines + .causal.insufficient)[].path] | all(endswith("/causal-amdahl.c"))' \
	"--scope: experiments on lines outside the scope: $(jq -c '[(.causal.lines + .causal.insufficient)[].path] | unique' s.json)"
check_nothing_left
