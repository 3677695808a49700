# Witch helpers for the t6xxx scenarios (sourced after lib.sh).

# Time-weighted samples see the stops' own cost: after each stop the
# program runs slower for a while (its caches went to whatever ran during
# the stop), longer the longer the stop. A sanitizer build of psup makes
# every stop several times longer, which moved Listing 2's dead fraction
# to 31-46% there (49-51% with the plain build, docs/witch.md). witch_sanitized
# is true for such a build; accuracy bounds are the plain build's, and
# under a sanitizer widen to check only that both sides are found.
witch_sanitized() {
	ldd "$PSUP" 2>/dev/null | grep -q 'libasan\|libubsan'
}

# wmark FILE NAME: the line of the code comment /* MARK:NAME */ (the
# targets' header comments name their markers too).
wmark() {
	grep -n "/\* MARK:$2 \*/" "$1" | head -1 | cut -d: -f1
}

# witch_json CBOR JSON: the witch view as JSON.
witch_json() {
	timeout 60 "$PSUP" report --format json --view witch "$1" >"$2" || fail "psup report --view witch $1 failed"
}

# wfrac JSON KIND: the fraction of KIND in percent.
wfrac() {
	jq -r --arg k "$2" '(.witch[$k].fraction // 0) * 100' "$1"
}

# wpair_pct JSON KIND SRC WLINE TLINE: percent of KIND's waste on the pair
# whose watch and trap end at SRC:WLINE and SRC:TLINE (leaf frames).
wpair_pct() {
	jq -r --arg k "$2" --arg f "$3" --argjson w "$4" --argjson t "$5" '
		[.witch[$k].pairs[] | select((.watch[-1].file // "" | endswith($f)) and .watch[-1].line == $w
			and (.trap[-1].file // "" | endswith($f)) and .trap[-1].line == $t) | .share]
		| add // 0 | . * 100' "$1"
}

# wtime_share CBOR SRC ALINE BLINE [FIELD]: ALINE's share in percent of the
# samples at SRC:ALINE and SRC:BLINE (self samples of the run's own profile;
# FIELD total: with what the lines call): the time-weighted fraction to
# expect where ALINE's accesses are all of one verdict and BLINE's of the
# other, whatever each costs on this CPU.
wtime_share() {
	report_json --view lines "$1" |
		jq -r --arg f "$2" --argjson a "$3" --argjson b "$4" --arg k "${5:-self}" '
			[.lines[] | select(.file // "" | endswith($f))] as $l
			| ([$l[] | select(.line == $a) | .[$k]] | add // 0) as $x
			| ([$l[] | select(.line == $b) | .[$k]] | add // 0) as $y
			| if $x + $y > 0 then 100 * $x / ($x + $y) else -1 end'
}

# near_share WHAT FRACTION SHARE POINTS [SANITIZED_POINTS]: FRACTION (in
# percent) within POINTS of SHARE, the run's own time share (wtime_share;
# -1, no samples there, fails), within SANITIZED_POINTS under a sanitizer
# build of psup.
near_share() {
	local tol=$4
	witch_sanitized && tol=${5:-$4}
	in_range "$3" 0 100.01 || fail "$1: no time share in its own profile ($3)"
	near "$2" "$3" "$tol" || fail "$1 $2% vs time share $3%: more than $tol points apart"
}

# wlocal_frac JSON KIND SRC: KIND's fraction over the pairs whose watch and
# trap both end in SRC (the program's own code, not libc's or ld.so's).
wlocal_frac() {
	jq -r --arg k "$2" --arg f "$3" '
		[.witch[$k].pairs[] | select((.watch[-1].file // "" | endswith($f)) and (.trap[-1].file // "" | endswith($f)))]
		| (map(.bytes) | add // 0) as $w | (map(.use_bytes) | add // 0) as $u
		| if $w + $u > 0 then 100 * $w / ($w + $u) else -1 end' "$1"
}

# near A B POINTS: |A - B| <= POINTS
near() {
	awk -v a="$1" -v b="$2" -v d="$3" 'BEGIN { x = a - b; if (x < 0) x = -x; exit !(x <= d) }'
}
