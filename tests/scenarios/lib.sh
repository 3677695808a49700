# Sourced by every scenario: tests/scenarios/tNNNN-name.sh.
# Environment (set by meson): PSUP (the binary), TARGETS (dir of target
# programs), SRCDIR (source root). Exit 0 pass, 1 fail, 77 skip.
set -u

: "${PSUP:?PSUP must point at the psup binary}"
: "${TARGETS:?TARGETS must point at the built test targets}"
: "${SRCDIR:?SRCDIR must point at the source root}"

SCENARIO=$(basename "$0" .sh)
WORK=$(mktemp -d "/tmp/psup-$SCENARIO.XXXXXX")
BG_PIDS=()
# Every process this scenario starts inherits the tag, so leftovers are
# found even when reparented, and scenarios running in parallel are not
# mistaken for ours.
export PSUP_SCENARIO_TAG="$WORK"

# chromium_dom URL OUT: the DOM of URL after its scripts ran in headless
# Chromium (virtual time: no wall-clock waits), into OUT. Skips the
# scenario where Chromium is not installed.
chromium_dom() {
	command -v chromium >/dev/null || skip "no chromium (scripts/bootstrap.sh installs Debian's chromium)"
	timeout 120 chromium --headless=new --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$WORK/chromium" --window-size=1280,1000 \
		--virtual-time-budget=20000 --dump-dom "$1" >"$2" 2>"$WORK/chromium.err" ||
		fail "chromium could not load $1: $(tail -3 "$WORK/chromium.err")"
}

# A copy of a program (psup, a target) that another user can run: the build
# may sit below a folder only root may enter (/root, where CI may clone).
# Prints the copy's path.
for_nobody() {
	local dir="$WORK/for-nobody"
	mkdir -p "$dir"
	chmod 755 "$WORK" "$dir"
	cp "$1" "$dir/" && chmod 755 "$dir/$(basename "$1")" && echo "$dir/$(basename "$1")"
}

# Pids of processes carrying this scenario's tag. Builtins only: a process
# started here to look would carry the tag itself (forks of this shell do
# not: /proc/PID/environ is the environment at exec).
tagged_pids() {
	local e p v
	for e in /proc/[0-9]*/environ; do
		p=${e#/proc/}
		p=${p%/environ}
		while IFS= read -r -d '' v; do
			if [ "$v" = "PSUP_SCENARIO_TAG=$WORK" ]; then
				echo "$p"
				break
			fi
		done 2>/dev/null <"$e"
	done
}

# Whether pid is still a child of this shell: a background target that
# ended and was reaped may have left its pid to an unrelated process.
# (A zombie leader whose threads run on still names its parent.)
is_our_child() { # pid
	local st
	read -r st 2>/dev/null <"/proc/$1/stat" || return 1
	st=${st##*) } # after the command name: state ppid ...
	st=${st#* }
	[ "${st%% *}" = "$$" ]
}

# stop_bg PID: ends a background target the scenario no longer needs,
# whether or not it is still running; never fails (a target that ended by
# itself under load is not what the scenario checks).
stop_bg() { # pid
	is_our_child "$1" && kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 0
}

cleanup() {
	local p
	for p in "${BG_PIDS[@]}"; do
		is_our_child "$p" && kill -KILL "$p" 2>/dev/null
	done
	rm -rf "$WORK"
}
trap cleanup EXIT

# Process tree and each process's status, for a scenario that failed or hung.
dump_state() {
	echo "---- process tree (this session) ----" >&2
	ps --forest -o pid,ppid,stat,wchan:24,args -s "$(ps -o sid= -p $$ | tr -d ' ')" 2>/dev/null |
		cut -c1-160 | tail -40 >&2
	local p
	for p in $(tagged_pids); do
		echo "---- /proc/$p/status ----" >&2
		grep -E '^(Name|State|Tgid|PPid|TracerPid|Threads|SigBlk|SigIgn|SigCgt)' "/proc/$p/status" >&2 2>/dev/null
	done
}

# Waits up to SECS for process PID to end (gone or a zombie). If it does not,
# says where it and each process below it are, kernel stacks included (read
# while they still hang, not after a kill), and returns 1.
wait_exit() { # pid secs
	local p t n=$(($2 * 10))
	while [ $n -gt 0 ]; do
		case "$(proc_state "$1")" in "" | Z) return 0 ;; esac
		sleep 0.1
		n=$((n - 1))
	done
	for p in $1 $(descendants "$1"); do
		echo "---- $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-120) ----" >&2
		grep -E '^(State|TracerPid|Threads|SigPnd|ShdPnd|SigBlk)' "/proc/$p/status" >&2 2>/dev/null
		for t in /proc/$p/task/*; do
			echo "  task ${t##*/}: wchan $(cat "$t/wchan" 2>/dev/null), syscall $(cut -d' ' -f1-3 "$t/syscall" 2>/dev/null)" >&2
			sed 's/^/    /' "$t/stack" >&2 2>/dev/null
		done
		# Its own stacks too, where nothing traces it already.
		if [ "$(tracer_of "$p")" = 0 ] && command -v gdb >/dev/null; then
			timeout 20 gdb -nx -batch -p "$p" -ex 'thread apply all bt' 2>&1 |
				grep -E '^(#|Thread)' | head -40 >&2
		fi
	done
	return 1
}

descendants() { # pid -> every process below it
	local c
	for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		echo "$c"
		descendants "$c"
	done
}

fail() {
	echo "FAIL [$SCENARIO]: $*" >&2
	dump_state
	# Once more after the dump: a log shown by its head and tail keeps it.
	echo "FAIL [$SCENARIO]: $*" >&2
	exit 1
}

skip() {
	echo "SKIP [$SCENARIO]: $*"
	exit 77
}

note() { echo "[$SCENARIO] $*"; }

# run_psup SECONDS ARGS...: psup with a timeout; sets RC, OUT, ERR files.
# A timeout is a failure of its own, with the process tree dumped.
run_psup() {
	local secs=$1
	shift
	timeout --kill-after=5 "$secs" "$PSUP" "$@" >"$WORK/out" 2>"$WORK/err"
	RC=$?
	if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 -a ! -e "$WORK/expect-137" ]; then
		cat "$WORK/err" >&2
		fail "psup $* timed out after ${secs}s (rc $RC)"
	fi
	return 0
}

# strace_psup FILE CALLS PSUP-ARGS...: psup under strace, the calls CALLS
# (strace's -e trace=) written to FILE, its output in $WORK/out and err, RC
# its status. strace follows psup alone (no -f): the target is psup's
# tracee. A sanitizer build's leak check cannot run under a tracer.
strace_psup() {
	local file=$1 calls=$2
	shift 2
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" timeout --kill-after=5 240 \
		strace -o "$file" -e trace="$calls" "$PSUP" "$@" >"$WORK/out" 2>"$WORK/err"
	RC=$?
}

# count_below COUNT LIMIT WHAT WHY: notes "COUNT WHAT", fails with WHY unless
# COUNT < LIMIT.
count_below() {
	note "$1 $3"
	[ "$1" -lt "$2" ] || fail "$1 $3: $4"
}

expect_rc() { # expected
	[ "$RC" -eq "$1" ] || { cat "$WORK/err" >&2; fail "exit status $RC, expected $1"; }
}

# report_json FILE...: the JSON report on stdout.
report_json() {
	timeout 60 "$PSUP" report --format json "$@" || fail "psup report --format json $* failed"
}

# jq_check JSONFILE FILTER MESSAGE: fails unless FILTER yields true.
jq_check() {
	local r
	r=$(jq -e "$2" "$1" 2>&1) || { jq . "$1" | head -80 >&2; fail "$3 (jq: $2 gave ${r:-false})"; }
}

# Share (percent of all samples, total) of a function: samples with it on
# the call path. Unlike self, it keeps the time the kernel spent on the
# thread's behalf while it ran there (interrupts, scheduling under load),
# which is shown as a [kernel] frame above the function.
func_total_pct() { # json, function name
	jq -r --arg f "$2" '[.functions[] | select(.function == $f) | .total_percent] | max // 0' "$1"
}

# in_range VALUE LOW HIGH
in_range() {
	awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'
}

# The line number of the unique marker comment /* MARK:name */ in a source file.
marker_line() { # file, name
	grep -n "MARK:$2\b" "$1" | head -1 | cut -d: -f1
}

# wait_for COND_CMD SECONDS: polls a command until it succeeds.
wait_for() {
	local cmd=$1 secs=${2:-10} i
	for ((i = 0; i < secs * 20; i++)); do
		eval "$cmd" && return 0
		sleep 0.05
	done
	return 1
}

# interrupt_attach PID SECONDS: the psup attach started in the background as
# PID gets SIGINT and must detach within SECONDS; RC is its exit status.
interrupt_attach() {
	kill -INT "$1"
	wait_for "! kill -0 $1 2>/dev/null" "$2" || fail "psup did not detach on SIGINT"
	wait "$1"
	RC=$?
}

# cpu_ms PID: CPU time the process's live threads have run, in ms
# (schedstat: ns on a CPU). For waits on work done, not on wall time.
cpu_ms() {
	local f ns sum=0
	for f in /proc/$1/task/*/schedstat; do
		read -r ns _ 2>/dev/null <"$f" && sum=$((sum + ns / 1000000))
	done
	echo $sum
}

# wait_cpu PID MS [SECONDS]: waits until the process has run MS more ms of
# CPU time than now (a loaded machine takes longer, the work is the same).
wait_cpu() {
	local c0
	c0=$(cpu_ms "$1")
	wait_for "[ \$((\$(cpu_ms $1) - $c0)) -ge $2 ]" "${3:-60}"
}

proc_state() { # pid -> one letter, or empty when gone
	awk '/^State:/ { print $2 }' "/proc/$1/status" 2>/dev/null
}

tracer_of() { # pid -> TracerPid
	awk '/^TracerPid:/ { print $2 }' "/proc/$1/status" 2>/dev/null
}

# psup's keeper of its tracepoint event (sampler/event.c): descriptors 0 (the
# event) and 1 (a pipe) only. It lingers a second after psup by design
# (t1103 checks that it goes).
is_keeper() { # pid
	[ "$(readlink /proc/$1/fd/0 2>/dev/null)" = "anon_inode:[perf_event]" ] &&
		[ "$(ls /proc/$1/fd 2>/dev/null | tr '\n' ' ')" = "0 1 " ]
}

# Nothing psup started may be left behind: no process of this scenario in a
# ptrace stop, none still traced, none running on (the keeper aside): what is
# still there after 10 s is left behind.
left_behind() { # -> a description of the first process left behind, if any
	local p st
	for p in $(tagged_pids); do
		is_keeper "$p" && continue
		st=$(proc_state "$p")
		case " ${BG_PIDS[*]} " in *" $p "*) ;; *)
			if [ -n "$st" ] && [ "$st" != Z ]; then
				echo "process $p ($(cat /proc/$p/comm 2>/dev/null)) left behind in state $st"
				return
			fi
			;;
		esac
		if [ "$(tracer_of "$p")" != 0 ] && [ -n "$(tracer_of "$p")" ]; then
			echo "process $p still traced by $(tracer_of "$p")"
			return
		fi
	done
}

check_nothing_left() {
	local what i
	for ((i = 0; i < 100; i++)); do
		what=$(left_behind)
		[ -z "$what" ] && return 0
		sleep 0.1
	done
	fail "$what"
}

# start_bg CMD...: starts a background target whose stdout goes to
# $WORK/bg.out; sets BG (its pid) after it printed "ready".
start_bg() {
	# The redirection happens in the child, later: a "ready" left in the
	# file by the previous program must not count for this one.
	rm -f "$WORK/bg.out" "$WORK/bg.err"
	"$@" >"$WORK/bg.out" 2>"$WORK/bg.err" &
	BG=$!
	BG_PIDS+=("$BG")
	wait_for "grep -q ready '$WORK/bg.out'" 10 || fail "target $* did not get ready"
}
