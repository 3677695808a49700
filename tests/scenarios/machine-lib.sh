# Sourced by causal-lib.sh and known-answers.sh: how much of the machine's
# CPU time went to work other than this shell's children since a mark.

# machine_cpu: "BUSY TOTAL MINE STEAL", clock ticks since boot: the machine's
# busy time (steal included: the VM's host is shared), all of its time, what
# this shell's finished children used, and the steal alone.
machine_cpu() {
	local stat
	read -r _ u n s i w q sq st _ </proc/stat
	stat=$(</proc/$$/stat)
	stat=${stat##*) }
	set -- $stat
	echo "$((u + n + s + q + sq + st)) $((u + n + s + i + w + q + sq + st)) $((${14} + ${15})) $st"
}

# machine_mark: start counting here.
machine_mark() {
	read -r machine_busy0 machine_total0 machine_mine0 machine_steal0 <<<"$(machine_cpu)"
}

# machine_others: the share (%) of the machine's CPU time since the mark
# that went to other work, at least the steal: the children's exact times
# can exceed the machine's tick-sampled busy time (a CI run of t5030 read
# 2% other work beside 6% steal).
machine_others() {
	local busy total mine others steal
	read -r busy total mine steal <<<"$(machine_cpu)"
	total=$((total - machine_total0))
	[ "$total" -gt 0 ] || total=1
	others=$(( (busy - machine_busy0 - mine + machine_mine0) * 100 / total ))
	steal=$(( (steal - machine_steal0) * 100 / total ))
	echo "$((others > steal ? others : steal))"
}

# machine_steal: the share (%) of the machine's time since the mark that its
# host took (steal), part of machine_others.
machine_steal() {
	local total steal
	read -r _ total _ steal <<<"$(machine_cpu)"
	total=$((total - machine_total0))
	[ "$total" -gt 0 ] || total=1
	echo "$(((steal - machine_steal0) * 100 / total))"
}
