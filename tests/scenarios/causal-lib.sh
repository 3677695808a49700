# Sourced by the causal scenarios (t5xxx-causal-*.sh) after lib.sh: the
# causal object of `psup report --format json` (schema: docs/format.md,
# section "causal"), looked up by target marker.

# causal_ref SOURCE MARKER: "causal-x.c:LINE", the spec of a marked line of
# tests/targets/SOURCE (a FILE:LINE spec matches source paths by suffix).
causal_ref() {
	local l
	l=$(marker_line "$SRCDIR/tests/targets/$1" "$2")
	[ -n "$l" ] || fail "no marker $2 in tests/targets/$1"
	echo "$1:$l"
}

# causal_report CBOR JSON: the JSON report, which must have a causal object.
causal_report() {
	report_json "$1" >"$2"
	jq -e '.causal | type == "object"' "$2" >/dev/null ||
		{ head -c 2000 "$2" >&2; fail "$1: the report has no causal object"; }
}

# causal_get JSON REF FIELD: FIELD of the drawn line REF ("file.c:N"), or
# "none" when the line has no curve.
causal_get() {
	jq -r --arg l "$2" "[.causal.lines[] | select(.line == \$l) | .$3] | if length == 0 then \"none\" else .[0] end" "$1"
}

# causal_exps JSON REF: experiments on REF, drawn or not.
causal_exps() {
	jq -r --arg l "$2" '[(.causal.lines + .causal.insufficient)[] | select(.line == $l) | .experiments] | add // 0' "$1"
}

# The known answers hold on an otherwise idle machine: beside a busy loop
# the targets' threads share the CPUs and the true effects change (Figure
# 1's thread b, cut by 50%, then really speeds the program up by a third), so
# a failure's log says how much of the machine's CPU time other work used
# since the test began (machine_others), and known-answers.sh measures again
# a test that failed beside other work.
. "$(dirname "${BASH_SOURCE[0]}")/machine-lib.sh"
machine_mark

# causal_show JSON: a summary for a failure's log.
causal_show() {
	echo "other work used $(machine_others)% of the machine's CPU time during this test (steal $(machine_steal)%); the known answers assume none" >&2
	jq -c '.causal.info, .causal.progress_points,
		(.causal.lines[] | {line, point, experiments, slope, contention,
			curve: [.curve[] | [.speedup, (.program_speedup * 10 | round / 10), .experiments]]}),
		(.causal.insufficient[] | {line, experiments, missing})' "$1" >&2
}

# causal_need_line JSON REF: REF must have a curve; prints its slope.
causal_need_line() {
	local s
	s=$(causal_get "$1" "$2" slope)
	if [ "$s" = none ] || [ "$s" = null ]; then
		causal_show "$1"
		fail "$2 has no curve ($(causal_exps "$1" "$2") experiments)"
	fi
	echo "$s"
}

# causal_slope_in JSON REF LOW HIGH WHAT: the slope of REF's curve (program
# speedup % per line speedup %) lies in [LOW, HIGH].
causal_slope_in() {
	local s
	s=$(causal_need_line "$1" "$2") || exit 1
	note "$5: $2 slope $s"
	in_range "$s" "$3" "$4" || { causal_show "$1"; fail "$5: $2 has slope $s, expected $3..$4"; }
}

# causal_wmean JSON REF MIN_SPEEDUP: the predicted program speedup averaged
# over the experiments at line speedups >= MIN_SPEEDUP (each curve point
# weighted by its experiments): robust where the maximum of noisy points
# is not.
causal_wmean() {
	jq -r --arg l "$2" --argjson m "$3" '[.causal.lines[] | select(.line == $l) | .curve[] | select(.speedup >= $m)] |
		if length == 0 or (map(.experiments) | add) == 0 then "none"
		else (map(.program_speedup * .experiments) | add) / (map(.experiments) | add) end' "$1"
}

# causal_order JSON HIGH LOW MARGIN WHAT: slope(HIGH) >= slope(LOW) + MARGIN
# (both lines drawn, from the same or different reports: JSON may be
# "A.json B.json" for HIGH from A and LOW from B).
causal_order() {
	local ja jb hi lo
	read -r ja jb <<<"$1"
	jb=${jb:-$ja}
	hi=$(causal_need_line "$ja" "$2") || exit 1
	lo=$(causal_need_line "$jb" "$3") || exit 1
	note "$5: $2 slope $hi, $3 slope $lo"
	in_range "$(awk -v a="$hi" -v b="$lo" 'BEGIN { print a - b }')" "$4" 1000 ||
		{ causal_show "$ja"; fail "$5: $2 (slope $hi) does not rank above $3 (slope $lo) by $4"; }
}
