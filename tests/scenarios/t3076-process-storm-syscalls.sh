#!/usr/bin/env bash
# Run mode, sampled per CPU, processes stopped at their creation (--stops;
# t3081 has the runs that stop none): what psup does for each process of a
# fork/exec storm (issue 20), counted with strace, and nothing lost by it.
# - Its maps are never read: its mmap records tell them, in time order with
#   its samples (read once per process at its leader's exit stop before,
#   and twice before that: the switch-out into its exec stop, at the new
#   program's entry, where it has run nothing, is no wait to name, and
#   naming it read the maps of the new program for it alone).
# - It stops at no exit: a stop and a resume less per process (six wait
#   statuses per process became five: its fork, its first stop, its exec,
#   its death and its parent's SIGCHLD).
# - It opens no events: it inherits the root's in its fork() (two
#   perf_event_opens per CPU pair, each an IPI, four ioctls and two closes
#   per process before), as their ENABLE ioctls went before them (an IPI
#   each).
# - It is not given options at its first stop: the kernel copied its
#   creator's (a descendant's leader), which are the ones psup would set.
# - Its creator is not asked for its registers at the exec: it is another
#   process's thread, running by then (two failed GETREGS per process).
# - A block of the old program drained at the exec stop is named from the
#   old maps alone: its code and /proc's syscall file are the new
#   program's by then (reads of its code failed with EFAULT each time).
# - The images it maps, loaded for an earlier process of the same program,
#   are taken from the image cache at its exit stop without a stat of their
#   paths (three per process before).
# - Its exec is named from its records: the path from its first mmap
#   record, the name from its comm record (a readlink of /proc/PID/exe and
#   an open and read of /proc/PID/comm per process before), and the
#   program's setuid check is made once per file (a stat of /proc/PID/exe
#   per process).
# - Its blocks drained at its death are named without reading /proc's
#   syscall file or its code: both are gone (an open failing with ENOENT
#   and a read with ESRCH, about 2.5 each per process).
# - It stops at no exec either (single-threaded, as it is): its comm and
#   mmap records tell the exec (below; t3078). Four wait statuses each.
# Every process still has its states (switch records) and its exec record.
. "$(dirname "$0")/lib.sh"
command -v strace >/dev/null || skip "no strace (scripts/bootstrap.sh installs it)"
cd "$WORK"
N=100
strace_psup st openat,ioctl,ptrace,newfstatat,stat,process_vm_readv,perf_event_open,readlink \
	run -q --stops -o s.cbor -- sh -c "for i in \$(seq $N); do /bin/true; done"
expect_rc 0
report_json s.cbor >s.json
jq -e '.runs[0].thread_events == "inherited"' s.json >/dev/null ||
	skip "no events inherited here (sampled per thread: needs root, CAP_PERFMON or perf_event_paranoid <= 0)"

count_below "$(grep -cE '^openat\(.*"/proc/[0-9]+/maps"' st)" $((N / 5)) "maps files read for $N processes" \
	"at each exit stop (or at the exec stop too)"
count_below "$(grep -c 'PERF_EVENT_IOC_ENABLE' st)" $((N / 5)) "ENABLE ioctls for $N processes" \
	"each process's events enabled by ioctl"
count_below "$(grep -c '^perf_event_open(' st)" $((N / 5)) "perf_event_opens for $N processes" \
	"each process's events opened at its fork stop"
count_below "$(grep -cE '^ptrace\(PTRACE_GETREGS, .*ESRCH' st)" $((N / 5)) "GETREGS of running threads for $N processes" \
	"the registers of a running creator asked for"
count_below "$(grep -cE '^process_vm_readv\(.*EFAULT' st)" $((N / 5)) "reads of code gone for $N processes" \
	"the old program's code read after its exec"
# They vary with the images loaded again (their debug files searched): 57
# here; 143 when each exec's setuid check was a stat of /proc/PID/exe, 430
# when each mapped path was stat'ed at each exit stop.
count_below "$(grep -cE '^(newfstatat\(AT_FDCWD|stat\()' st)" $N "stats of paths for $N processes" \
	"the mapped images' paths stat'ed each time, or /proc/PID/exe at each exec"
count_below "$(grep -cE '^readlink\("/proc/[0-9]+/exe"' st)" $((N / 5)) "readlinks of /proc/PID/exe for $N processes" \
	"the exec's path read from /proc, not its mmap records"
count_below "$(grep -cE '^openat\(.*"/proc/[0-9]+/comm"' st)" $((N / 5)) "comm files read for $N processes" \
	"the exec's name read from /proc, not its comm record"
count_below "$(grep -cE '^openat\(.*/syscall".*ENOENT' st)" $((N / 5)) "syscall files of reaped threads for $N processes" \
	"blocks drained at a death probed through /proc"
count_below "$(grep -cE '^process_vm_readv\(.*ESRCH' st)" $((N / 5)) "reads of reaped processes for $N processes" \
	"blocks drained at a death probed through the process's memory"

jq_check s.json "[.threads[] | select(.name == \"true\")] | length == $N" "not every process was seen"
jq_check s.json "[.threads[] | select(.name == \"true\" and .times.running > 0)] | length >= $((N * 9 / 10))" \
	"processes lack their states (switch records)"

# The same loop in a child of the first process, as a build's commands run
# below make: only the first process's children get options of their own
# (no EXITKILL); their children have them from their creator's fork.
strace_psup sto ptrace run -q --stops -o o.cbor -- sh -c "sh -c 'for i in \$(seq $N); do /bin/true; done'; :"
expect_rc 0
count_below "$(grep -c 'PTRACE_SETOPTIONS' sto)" $((N / 5)) "PTRACE_SETOPTIONS for $N grandchildren" \
	"each process given the options its creator's fork gave it"

# Its exec has no stop (nothing of that needs it stopped in a plain
# profile): its records tell it, -v counts them. Its old program's records
# are handed on up to the exec, the new one's after: each process still
# has its states and its samples named.
run_psup 120 run -v --stops -o v.cbor -- sh -c "for i in \$(seq $N); do /bin/true; done"
expect_rc 0
n=$(grep -o "[0-9]* told by records without a stop" "$WORK/err" | cut -d' ' -f1)
[ -n "$n" ] || { cat "$WORK/err" >&2; fail "no count of execs told by records with -v"; }
[ "$n" -ge $((N * 9 / 10)) ] || fail "$n of $N execs told by their records"
n=$(grep -o "[0-9]* wait statuses" "$WORK/err" | cut -d' ' -f1)
[ -n "$n" ] || { cat "$WORK/err" >&2; fail "no count of wait statuses with -v"; }
count_below "$n" $((N * 9 / 2)) "wait statuses for $N processes" "each process stopped at its exit or its exec (five or six per process)"
n=$(grep -o "[0-9]* mappings from mmap records" "$WORK/err" | cut -d' ' -f1)
[ "${n:-0}" -ge $((N * 3)) ] || fail "${n:-no} mappings from mmap records for $N processes (each maps true, ld.so, the vdso and libc)"
report_json v.cbor >v.json
jq_check v.json "[.threads[] | select(.name == \"true\" and .times.running > 0)] | length >= $((N * 9 / 10))" \
	"processes resumed at their exec lack their states"
check_nothing_left
