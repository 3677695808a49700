#!/usr/bin/env python3
"""Start-up of big programs under `psup run` next to their native runs.

For each program the commands run interleaved in every round (native, then
each psup binary given, the first one turning each round), so CPU-speed
drift and the run just before hit them alike. Each
cell is the median over the rounds of the round's wall-time ratio to the
native run, with its min-max spread; psup's own CPU time, the samples kept
and those lost come from `psup run -v` (medians). Programs that are not
installed are skipped.

With --cold every run, native or not, comes after a pause of 2.5 s: what
a user's first run sees. The kernel turns its scheduler hooks for perf
events off a second after the last per-task event on the machine closes
(psup's keeper holds one a second past psup's end), and the next first
one waits for an RCU grace period (docs/performance.md, "Big binaries").
Without it the runs come one after the other and mostly find them on.

With --back-to-back N it measures instead what a script that runs psup
again and again sees: per round and psup binary, `psup run -q -- /bin/true`
N times in a row after a pause of 2.5 s (no keeper of another run left, see
sampler/event.c); each cell is the median over the rounds of the block's
median milliseconds a run (min-max of the rounds' medians).

usage: tests/bench/startup.py [--rounds 10] [--psup build/psup] [--psup OTHER] [--only NAME] [--cold]
       tests/bench/startup.py --back-to-back 20 [--rounds 3] [--psup ...]
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PROGRAMS = [
    ("node", ["node", "-e", "let s=0; for (let i=0;i<3e7;i++) s+=i; console.log(s)"]),
    ("java -version", ["java", "-version"]),
    ("chromium --version", ["/usr/lib/chromium/chromium", "--version"]),
    ("/bin/true", ["/bin/true"]),
]

# No psup (its keeper) nor any per-task perf event left, and the kernel's
# hooks off again: sampler/event.c's KEEPER_LINGER_S, then a second.
COLD_PAUSE_S = 2.5


def run(cmd):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - t0, r.stderr.decode(errors="replace")


def parse_v(err):
    """psup's CPU seconds, samples kept, samples lost (rings included)."""
    cpu = re.search(r"psup itself used ([0-9.]+) s of CPU", err)
    kept = re.search(r"psup: ([0-9]+) samples \(([0-9]+) lost\)", err)
    ring = re.search(r"([0-9]+) samples were lost in the CPU rings", err)
    lost = (int(kept.group(2)) if kept else 0) + (int(ring.group(1)) if ring else 0)
    return (float(cpu.group(1)) if cpu else float("nan"), int(kept.group(1)) if kept else 0, lost)


def spread(xs, fmt):
    return f"{fmt % statistics.median(xs)} ({fmt % min(xs)}-{fmt % max(xs)})"


def back_to_back(psups, rounds, n, out):
    """Median ms a run of psup run -- /bin/true, n in a row, per round."""
    per = {p: [] for p in psups}
    for _ in range(rounds):
        for p in psups:
            time.sleep(COLD_PAUSE_S)
            runs = [run([p, "run", "-q", "-f", "-o", out, "--", "/bin/true"])[0] * 1000 for _ in range(n)]
            per[p].append(statistics.median(runs))
    print(f"| psup run -- /bin/true, {n} back to back | " + " | ".join(spread(per[p], "%.1f") + " ms" for p in psups) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--psup", action="append", help="a psup binary (repeatable; default build/psup)")
    ap.add_argument("--only", action="append", help="the rows whose name contains this (repeatable)")
    ap.add_argument("--back-to-back", type=int, metavar="N", help="runs of psup in a row per round instead")
    ap.add_argument("--cold", action="store_true", help=f"a pause of {COLD_PAUSE_S} s before every run")
    args = ap.parse_args()
    psups = args.psup or ["build/psup"]
    for p in psups:
        if not os.access(p, os.X_OK):
            sys.exit(f"startup: {p} is missing; build first")
    out = os.path.join(tempfile.mkdtemp(prefix="psup-startup-"), "x.cbor")
    if args.back_to_back:
        print("| program | " + " | ".join(psups) + " |")
        print("|---|" + "---|" * len(psups))
        back_to_back(psups, args.rounds, args.back_to_back, out)
        return

    print("| program | native s | " + " | ".join(f"{p}: wall / native | psup CPU s | samples | lost" for p in psups) + " |")
    print("|---|---|" + "---|---|---|---|" * len(psups))
    for name, prog in PROGRAMS:
        if args.only and not any(o in name for o in args.only):
            continue
        if not shutil.which(prog[0]):
            print(f"| {name} | not installed | |")
            continue
        native, ratios, stats = [], {p: [] for p in psups}, {p: [] for p in psups}
        run(prog)  # warm the page cache
        for p in psups:
            run([p, "run", "-q", "-f", "-o", out, "--"] + prog)
        pause = COLD_PAUSE_S if args.cold else 0
        for i in range(args.rounds):
            time.sleep(pause)
            n, _err = run(prog)
            native.append(n)
            # The builds' order turns each round: in a fixed order the
            # second build always ran right after another psup run (whose
            # keeper may still hold the tracepoints, sampler/event.c), and
            # two builds read 1.22 and 1.32 on chromium that read level
            # with the order swapped each round.
            for p in psups[i % len(psups):] + psups[:i % len(psups)]:
                time.sleep(pause)
                t, err = run([p, "run", "-v", "-f", "-o", out, "--"] + prog)
                ratios[p].append(t / n)
                stats[p].append(parse_v(err))
        cells = []
        for p in psups:
            cpu = [s[0] for s in stats[p]]
            kept = [s[1] for s in stats[p]]
            lost = [s[2] for s in stats[p]]
            cells.append(f"{spread(ratios[p], '%.2f')} | {spread(cpu, '%.3f')} | "
                         f"{statistics.median(kept):.0f} | {statistics.median(lost):.0f} ({min(lost)}-{max(lost)})")
        print(f"| {name} | {spread(native, '%.3f')} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
