#!/usr/bin/env bash
# Installs like a real tool (issue 21): `meson install` into a staging
# directory puts psup, include/psup.h, a man page per command and the bash
# completion in their usual places; each page renders without warnings; the
# completion completes commands and options; `psup --version` gives the
# version and the features.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

BUILD=$(dirname "$PSUP")
[ -f "$BUILD/build.ninja" ] || skip "$BUILD is not a meson build directory"
command -v meson >/dev/null || skip "no meson"
DEST=$WORK/dest
meson install -C "$BUILD" --no-rebuild --quiet --destdir "$DEST" >install.log 2>&1 ||
	{ cat install.log >&2; fail "meson install --destdir failed"; }
version=$(meson introspect --projectinfo "$BUILD" | jq -r .version)
[ -n "$version" ] || fail "no project version from meson introspect"

find_one() { # path pattern under DEST
	local f
	f=$(find "$DEST" -path "$1" | head -1)
	[ -n "$f" ] || { find "$DEST" >&2; fail "nothing installed at */${1#*/}"; }
	echo "$f"
}
bin=$(find_one '*/bin/psup')
[ -x "$bin" ] || fail "$bin is not executable"
header=$(find_one '*/include/psup.h')
cmp -s "$header" "$SRCDIR/include/psup.h" || fail "the installed psup.h is not include/psup.h"
completion=$(find_one '*/share/bash-completion/completions/psup')

# a man page per command, each rendering without a warning
for page in psup psup-run psup-attach psup-report psup-annotate psup-diff; do
	f=$(find_one "*/share/man/man1/$page.1")
	[ -s "$f" ] || fail "$page.1 is empty"
	head -c 2000 "$f" | grep -q '^\.TH "\?'"$page"'"\? "\?1' || fail "$page.1 has no .TH $page 1"
	if command -v man >/dev/null; then
		MANWIDTH=80 man --warnings -l "$f" >"$page.txt" 2>"$page.warn" ||
			{ cat "$page.warn" >&2; fail "man -l $page.1 failed"; }
	elif command -v groff >/dev/null; then
		groff -man -Tutf8 -ww "$f" >"$page.txt" 2>"$page.warn" || fail "groff failed on $page.1"
	else
		cp "$f" "$page.txt"
		: >"$page.warn"
	fi
	[ ! -s "$page.warn" ] || { cat "$page.warn" >&2; fail "$page.1 renders with warnings"; }
	grep -q 'NAME' "$page.txt" || fail "$page.1 renders without a NAME section"
done
grep -q -- '--output' psup-run.txt || fail "psup-run(1) does not describe --output"
grep -q -- 'hottest' psup-annotate.txt || fail "psup-annotate(1) does not describe the marks"

# psup --version: the version, then the features
"$bin" --version >version.txt || fail "psup --version failed"
[ "$(head -1 version.txt)" = "psup $version" ] || fail "psup --version says '$(head -1 version.txt)', not 'psup $version'"
for feature in events disassembly debuginfod demangling 'per-CPU sampling'; do
	grep -q "^$feature: " version.txt || { cat version.txt >&2; fail "psup --version does not say '$feature: '"; }
done

# the completion: sourced in a plain bash, it completes commands, options
# and option values (run on the installed psup)
complete_words() { # words... -> the completions of the last word
	PATH="$(dirname "$bin"):$PATH" bash --norc --noprofile -c '
		source "$1" || exit 3
		complete -p psup >/dev/null || exit 4
		shift
		COMP_WORDS=("$@")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		_psup
		printf "%s\n" "${COMPREPLY[@]}"' bash "$completion" "$@"
}
out=$(complete_words psup r) || fail "the completion script does not source or register (rc $?)"
[ "$(echo "$out" | sort | tr '\n' ' ')" = "report run " ] || fail "'psup r' completes to '$out', not run and report"
out=$(complete_words psup an)
[ "$out" = annotate ] || fail "'psup an' completes to '$out'"
out=$(complete_words psup report --form)
[ "$out" = --format ] || fail "'psup report --form' completes to '$out'"
out=$(complete_words psup run --no-call)
[ "$out" = --no-call-graph ] || fail "'psup run --no-call' completes to '$out'"
out=$(complete_words psup report --format j)
[ "$out" = json ] || fail "'psup report --format j' completes to '$out'"
exit 0
