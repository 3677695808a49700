#!/usr/bin/env python3
"""Overhead of `psup run` (and `psup attach`) next to `perf record` at the same
sampling period.

For each program, the compared commands run interleaved (native, psup, perf,
native, psup, perf, ...) so CPU-speed drift hits them alike; each tool's ratio
over the native run of the same round is computed, and the table shows the
median of those ratios with their spread (min-max) over the rounds.

Process churn rows: a shell loop of 1,000 /bin/true (fork/exec storm), and
ninja -j2 of three of psup's own libraries (23 compile and archive steps) in a
copy of its sources (git archive of HEAD, configured once with meson; cleaned
before each run, untimed).

usage: tests/bench/overhead.py [--build build] [--rounds 5] [--iterations N] [--only ROW] [--tool TOOL]
                              [--psup OTHER/psup]
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def timed(cmd, env=None, prepare=None):
    """Wall seconds, and CPU seconds of the command and everything it waited
    for (the profiler and its target): on a machine shared with other work
    the CPU time says more than the wall time."""
    if prepare:
        prepare()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    dt = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed ({r.returncode}): {r.stderr.decode()[-500:]}")
    return dt, (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)


def build_row(tmp):
    """A copy of psup's sources at HEAD, configured: the ninja command of the
    build row, and what cleans its outputs before each run."""
    src = os.path.join(tmp, "src")
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.abspath(__file__)))
    if top.returncode != 0:
        sys.exit("bench: the build row needs psup's git checkout (git archive HEAD)")
    os.makedirs(src)
    archive = subprocess.run(["git", "-C", top.stdout.strip(), "archive", "HEAD"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", src], input=archive.stdout, check=True)
    bdir = os.path.join(src, "b")
    subprocess.run(["meson", "setup", bdir], cwd=src, stdout=subprocess.DEVNULL, check=True)
    cmd = ["ninja", "-C", bdir, "-j2", "symbols/libpsup-symbols.a", "supervisor/libpsup-supervisor.a",
           "common/libpsup-common.a"]

    def clean():
        subprocess.run(["ninja", "-C", bdir, "-t", "clean"], stdout=subprocess.DEVNULL, check=True)
    return cmd, clean


def attach_helper(argv):
    """overhead.py --attach PSUP-ARGS... -- PROGRAM...: starts PROGRAM, attaches
    `psup attach PSUP-ARGS... PID` to it at once, and waits for both: timed as
    a whole, as the run columns are (the program's first milliseconds run
    unattached)."""
    cut = argv.index("--")
    psup_args, prog = argv[:cut], argv[cut + 1:]
    p = subprocess.Popen(prog, stdout=subprocess.DEVNULL)
    a = subprocess.Popen(psup_args + [str(p.pid)], stdout=subprocess.DEVNULL)
    rc = p.wait()
    arc = a.wait()
    sys.exit(rc or arc)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--attach":
        attach_helper(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=3_000_000_000)
    ap.add_argument("--period", type=int, default=1_000_000, help="ns (task-clock)")
    ap.add_argument("--only", action="append", help="run the rows whose name contains this (repeatable)")
    ap.add_argument("--tool", action="append", help="only the columns whose name is this (repeatable)")
    ap.add_argument("--psup", action="append", default=[], metavar="BINARY",
                    help="another psup build as a column of its own, `psup run` as the psup column (A/B)")
    ap.add_argument("--cpu", action="store_true",
                    help="also the ratio of CPU time (the tool's and its target's over the native run's)")
    args = ap.parse_args()

    psup = os.path.join(args.build, "psup")
    work = os.path.join(args.build, "tests", "bench", "work")
    spawn = os.path.join(args.build, "tests", "bench", "spawn")
    for f in (psup, work, spawn):
        if not os.access(f, os.X_OK):
            sys.exit(f"bench: {f} is missing; build first (ninja -C {args.build})")
    perf = shutil.which("perf")
    tmp = tempfile.mkdtemp(prefix="psup-bench-")
    out = os.path.join(tmp, "psup.cbor")
    pdata = os.path.join(tmp, "perf.data")

    def attached(*opts):
        return lambda prog: [sys.executable, os.path.abspath(__file__), "--attach", psup, "attach", "-q", "-f",
                             "-o", out, "-c", str(args.period), *opts, "--"] + prog

    tools = {
        "psup": lambda prog: [psup, "run", "-q", "-f", "-o", out, "-c", str(args.period), "--"] + prog,
        "psup --no-call-graph": lambda prog: [psup, "run", "-q", "-f", "-o", out, "-c", str(args.period),
                                              "--no-call-graph", "--"] + prog,
        # psup samples per CPU where permitted (root): the per-thread way
        # it falls back to otherwise.
        "psup --sample-per-thread": lambda prog: [psup, "run", "-q", "-f", "-o", out, "-c", str(args.period),
                                                  "--sample-per-thread", "--"] + prog,
        # Each new thread and process stopped at its creation (ptrace), as
        # causal and witch runs have them: the records tell them otherwise.
        "psup --stops": lambda prog: [psup, "run", "-q", "-f", "-o", out, "-c", str(args.period),
                                      "--stops", "--"] + prog,
        # Attached to the program as soon as it started (attach_helper()):
        # it follows no child process (the storm and build rows measure
        # their shell and ninja alone).
        "psup attach": attached(),
        "psup attach --stops": attached("--stops"),
    }
    for other in args.psup:
        tools[f"psup ({other})"] = (lambda b: lambda prog: [b, "run", "-q", "-f", "-o", out, "-c", str(args.period),
                                                            "--"] + prog)(other)
    if perf:
        tools["perf record"] = lambda prog: [perf, "record", "-q", "-e", "task-clock", "-c", str(args.period),
                                             "-o", pdata, "--"] + prog
        # perf's default (per-CPU inherited events) costs much more than
        # per-thread events on these VMs: show both.
        tools["perf record --per-thread"] = lambda prog: [perf, "record", "-q", "--per-thread", "-e", "task-clock",
                                                          "-c", str(args.period), "-o", pdata, "--"] + prog
        tools["perf record --call-graph dwarf"] = lambda prog: [
            perf, "record", "-q", "-e", "task-clock", "-c", str(args.period), "--call-graph", "dwarf",
            "-o", pdata, "--"] + prog

    if args.tool:
        tools = {n: f for n, f in tools.items() if n in args.tool or n.startswith("psup (")}
        if not tools:
            sys.exit(f"bench: no tool named {args.tool}")

    threads = os.path.join(args.build, "tests", "targets", "threads")
    programs = {
        "1 thread": [work, "1", str(args.iterations)],
        "2 threads": [work, "2", str(args.iterations // 2)],
        # ~300k context switches: the cost of per-thread events on each switch.
        "futex ping-pong, 4 threads": [threads, "--futex", "4", "20000"],
        # ~0.3 ms tasks on fresh threads: the cost per thread creation and exit.
        "thread churn, 2x5000 threads": [spawn, "5000"],
        # fork, exec and exit of a tiny program, 1,000 times.
        "fork/exec storm, 1000 /bin/true": ["sh", "-c", "for i in $(seq 1000); do /bin/true; done"],
        # A real build: compilers, assembler, archiver, two at a time.
        "ninja -j2, 23 steps of psup's sources": None,
    }
    if args.only:
        programs = {p: v for p, v in programs.items() if any(o in p for o in args.only)}
        if not programs:
            sys.exit(f"bench: no row matches {args.only}")
    prepare = {}
    for pname, prog in list(programs.items()):
        if prog is None:
            programs[pname], prepare[pname] = build_row(tmp)
    print(f"# psup overhead over native, task-clock period {args.period} ns, "
          f"{args.rounds} interleaved rounds, median (min-max) of per-round ratios"
          + ("; cpu: the same of CPU time (tool and target)" if args.cpu else ""))
    names = list(tools)
    print("| program | native s | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for pname, prog in programs.items():
        ratios = {n: [] for n in names}
        cpus = {n: [] for n in names}
        natives = []
        prep = prepare.get(pname)
        for _ in range(args.rounds):
            nat, nat_cpu = timed(prog, prepare=prep)
            natives.append(nat)
            for n in names:
                wall, cpu = timed(tools[n](prog), prepare=prep)
                ratios[n].append(wall / nat)
                cpus[n].append(cpu / nat_cpu if nat_cpu > 0 else float("nan"))
        cells = []
        for n in names:
            r = ratios[n]
            cell = f"{statistics.median(r):.3f} ({min(r):.3f}-{max(r):.3f})"
            if args.cpu:
                c = cpus[n]
                cell += f"; cpu {statistics.median(c):.3f} ({min(c):.3f}-{max(c):.3f})"
            cells.append(cell)
        print(f"| {pname} | {statistics.median(natives):.2f} | " + " | ".join(cells) + " |")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
