# Witch helpers for the t6xxx scenarios (sourced after lib.sh).

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
