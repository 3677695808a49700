#!/usr/bin/env bash
# The C sources follow .clang-format (checked by the test command as the unit
# test 'clang-format'). Test programs, benches and the demo are left out: tests
# and docs name their lines (causal-pipeline.c:114, demo.c:54).
# usage: scripts/check-format.sh [--fix]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format is not installed (apt-get install clang-format)" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.c' '*.h' 2>/dev/null | grep -v -e '^tests/targets/' -e '^tests/bench/' -e '^examples/' ||
	find builtin common experiments include report sampler supervisor symbols tests/unit psup.c -name '*.[ch]')
if [ "${1:-}" = --fix ]; then
	clang-format -i "${files[@]}"
	exit 0
fi
if ! clang-format --dry-run -Werror "${files[@]}" 2>/tmp/check-format.$$; then
	grep -E '^[^ ].*: (error|warning):' /tmp/check-format.$$ | sed 's/: error: code should be clang-formatted.*//' | sort -u | head -20
	rm -f /tmp/check-format.$$
	echo "check-format: the files above differ from .clang-format; scripts/check-format.sh --fix rewrites them" >&2
	exit 1
fi
rm -f /tmp/check-format.$$
