#!/usr/bin/env bash
# Run mode, sampled per CPU, threads stopped at their creation (--stops; t3081
# has the runs that stop none): a new thread inherits its creator's side-band
# events (switch records, block samples) in clone(), and the CPUs' events have
# every wakeup, so psup opens nothing for it: 200 threads cost a handful of
# perf_event_open calls (four per thread before), and every thread still has
# its states (its switch records arrived) and a creation record. Nor does
# psup read /proc for each: the creator's clone stop asks tgkill whether the
# child is a thread, and the creator's open comm file for its name (the
# creator waited ~25 us more for the two /proc files of each new thread).
# Nor does it write the record per thread (three writes each before: the
# records go out in batches) or read the creator's memory twice (its
# clone_args are in the stack snapshot taken for the creation context).
. "$(dirname "$0")/lib.sh"
command -v strace >/dev/null || skip "no strace (scripts/bootstrap.sh installs it)"
cd "$WORK"
strace_psup st perf_event_open,openat,write,process_vm_readv run -q --stops -o m.cbor -- "$TARGETS/manythreads" 200
expect_rc 0
report_json m.cbor >m.json
jq -e '.runs[0].per_cpu' m.json >/dev/null || skip "sampled per thread here (needs root, CAP_PERFMON or perf_event_paranoid <= 0)"
count_below "$(grep -c '^perf_event_open(' st)" 100 "perf_event_open calls for 201 threads" \
	"new threads did not inherit their events"
count_below "$(grep -cE '^openat\(.*"/proc/[0-9]+/(status|comm)"' st)" 50 "/proc status or comm files opened for 201 threads" \
	"once or twice per new thread"
count_below "$(grep -c '^write(' st)" 100 "writes for 201 threads" "the records were not batched"
count_below "$(grep -c '^process_vm_readv(' st)" 300 "reads of the target's memory for 201 threads" \
	"twice per clone stop"
jq_check m.json '.summary.threads == 201' "not every thread was seen"
jq_check m.json '[.threads[] | select(.times.running > 0)] | length == 201' \
	"a thread lacks its states (switch records)"
# Each waits at the gate until all exist (the last may find it open).
jq_check m.json '[.threads[] | select(.times.blocked > 0)] | length >= 190' \
	"threads' blocked time is missing"

# An exec keeps its process's events (the kernel keeps them on the task):
# psup opens a set per CPU at each fork only, not again at the exec (it did
# both before: twice the opens). The program exec'ed is sampled through the
# set kept: its samples and switch records arrive.
strace_psup st2 perf_event_open run -q --stops -o e.cbor -- sh -c "for i in \$(seq 50); do /bin/true; done; exec '$TARGETS/diffwork' 60 30"
expect_rc 0
report_json e.cbor >e.json
ncpu=$(jq '.runs[0].cpus // 0' e.json)
[ "$ncpu" -gt 0 ] || ncpu=$(getconf _NPROCESSORS_ONLN)
count_below "$(grep -c '^perf_event_open(' st2)" $((ncpu * 52 * 3 / 2 + 30)) \
	"perf_event_open calls for 52 processes (50 fork+exec), $ncpu CPUs" "an exec reopened its process's events"
pct=$(func_total_pct e.json work_a)
in_range "$pct" 30 100 || fail "work_a, run by exec through the events kept, has ${pct}% of the samples"
jq_check e.json '[.threads[] | select(.name == "diffwork" and .times.running > 0)] | length == 1' \
	"the exec'ed program has no switch records"
check_nothing_left
