#!/usr/bin/env bash
# A Go program (Debian's golang-go, built here from tests/targets/gowork.go
# with the standard library only, nothing fetched): its compressed DWARF
# without .debug_aranges gives source lines; no futex wait of its runtime is
# blamed on a thread's exit (no pthread_join in a static binary without
# libc); sysmon sleeps rather than waits on "other"; and a causal run with
# a progress point and --line experiments on its hot line.
. "$(dirname "$0")/lib.sh"
cd "$WORK"

command -v go >/dev/null || skip "no go compiler (scripts/bootstrap.sh installs golang-go)"
mkdir -p gobuild
cp "$SRCDIR/tests/targets/gowork.go" gobuild/main.go
(cd gobuild && HOME="$WORK/gobuild" GOCACHE="$WORK/gobuild/cache" GOPATH="$WORK/gobuild/gopath" \
	GOTOOLCHAIN=local GOPROXY=off GOFLAGS= GO111MODULE=off CGO_ENABLED=0 \
	timeout 300 go build -o gowork main.go) >go.log 2>&1 || { cat go.log >&2; fail "go build failed"; }
hot=$(marker_line gobuild/main.go gohot)
prog=$(marker_line gobuild/main.go goprogress)

run_psup 120 run -q -o go.cbor -- gobuild/gowork 1.5
expect_rc 0
report_json go.cbor >go.json
# The loop's two lines (its for and its body) share its samples.
jq_check go.json "[.lines[] | select(((.file // \"\") | endswith(\"main.go\")) and (.line == $hot or .line == $hot - 1)) | .total_percent] | add > 60" \
	"the hot loop main.go:$((hot - 1))-$hot has no lines (Go's DWARF not read)"
jq_check go.json "[.lines[] | select(((.file // \"\") | endswith(\"main.go\")) and .line == $hot) | .total_percent] | add > 10" \
	"the hot line main.go:$hot has no samples"
jq_check go.json '[.locks[]?.holders[] | select(.thread_exit)] | length == 0' \
	"a wait in the Go runtime is blamed on a thread's exit (pthread_join)"
# No thread spends most of its life blocked on "other" (sysmon sleeps in
# runtime.usleep: nanosleep).
jq_check go.json '[.threads[] | select(.times != null and .times.blocked_other * 2 > (.times.running + .times.runnable + .times.blocked))] | length == 0' \
	"a Go thread is mostly blocked on 'other'"

run_psup 240 run -q -o causal.cbor -p "main.go:$prog" --line "main.go:$hot" -- gobuild/gowork 3
expect_rc 0
report_json causal.cbor >causal.json
exps=$(jq "[(.causal.lines[], .causal.insufficient[]?) | select(.line | test(\"main.go:$hot\$\")) | .experiments] | add // 0" causal.json)
visits=$(jq "[.causal.progress_points[] | .visits] | add // 0" causal.json)
note "main.go:$hot: $exps experiments; main.go:$prog: $visits visits"
[ "$visits" -gt 0 ] || fail "the progress point main.go:$prog was never visited"
[ "$exps" -gt 0 ] || {
	"$PSUP" report --view causal causal.cbor >&2
	fail "no experiment on the hot line main.go:$hot"
}
check_nothing_left
