"""What a campaign worker costs before its first trial, spawned or forked by the forkserver (issue 34).

Each case runs in a fresh Python process that imports the harness as `hil run` does, then:
  - workers: starts N pool workers (`hil.executors._worker_main`) handed no trial, which set up and exit,
    through `hil.executors.worker_context()` (the forkserver, on Linux) or multiprocessing's spawn;
  - campaign: runs a short lockstep campaign on a `LocalPool`, under either start method.
A case's CPU is user + system of every process it started (this script is their subreaper, so the forkserver
and the resource tracker, which outlive the case's process by a moment, are counted once they have exited).
Workers cost what a case with N of them takes beyond one with none; the forkserver pays the harness's imports
once, so the cost of its first worker and of each further one are given apart. Rounds interleave the cases;
figures are medians. Linux only (PR_SET_CHILD_SUBREAPER).

    .venv/bin/python benchmarks/worker_start.py [--workers 8] [--trials 4] [--pool 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import ctypes
import multiprocessing
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.quick import parse_args  # noqa: E402

PR_SET_CHILD_SUBREAPER = 36
METHODS = ("spawn", "forkserver")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measured(argv: list[str]) -> tuple[float, float]:
    """CPU seconds of the command and everything it started, and its wall seconds."""
    before, started = children_cpu(), time.perf_counter()
    subprocess.run([sys.executable, __file__, *argv], check=True, cwd=ROOT)
    wall = time.perf_counter() - started
    while True:  # what it left, reparented here: the forkserver and the resource tracker exit on their own
        try:
            os.wait()
        except ChildProcessError:
            break
    return children_cpu() - before, wall


def worker_context(method: str) -> multiprocessing.context.BaseContext:
    from hil import executors

    return executors.worker_context() if method == "forkserver" else multiprocessing.get_context("spawn")


def start_workers(method: str, count: int) -> None:
    """`count` pool workers, each handed no trial: what one costs before its first."""
    from hil.executors import _worker_main

    if not count:
        return
    context = worker_context(method)
    results = context.Queue()
    processes, queues = [], []  # each queue is kept until its worker has read it, as the pool does
    with tempfile.TemporaryDirectory(prefix="worker-start-") as campaign_dir:
        for slot in range(count):
            queues.append(context.Queue())
            queues[-1].put(None)
            process = context.Process(target=_worker_main, daemon=True,
                                      args=(slot, Path(campaign_dir), dict(os.environ), queues[-1], results))
            process.start()
            processes.append(process)
        for process in processes:
            process.join()
            if process.exitcode != 0:
                raise SystemExit(f"a {method} worker exited with {process.exitcode}")


def run_campaign_with(method: str, trials: int, workers: int) -> None:
    """A lockstep campaign of `trials` trials (forest, straight planner) on `workers` workers."""
    import yaml

    from hil import executors
    from hil.campaign import load_campaign
    from hil.runner import run_campaign
    from reports.results import CampaignResults

    if method == "spawn":
        executors.worker_context = lambda: multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="worker-start-") as scratch:
        path, out = Path(scratch) / "c.yaml", Path(scratch) / "run"
        path.write_text(yaml.safe_dump({"name": "worker-start", "seed": 3, "repeats": trials,
                                        "missions": [{"scene": "forest", "configs": [0]}], "profiles": ["default"],
                                        "targets": ["lockstep"], "planners": ["straight"]}))
        campaign = load_campaign(path)
        summary = run_campaign(campaign, out, executors.LocalPool(workers), results=CampaignResults(out),
                               progress=False)
    if summary.ran != trials:
        raise SystemExit(f"{method}: {summary.ran} of {trials} trials ran")


def case(argv: list[str]) -> None:
    """One case, in this process: `workers METHOD N` or `campaign METHOD TRIALS WORKERS`."""
    import hil.executors  # noqa: F401  what `hil run` imports before it starts a worker

    kind, method, *numbers = argv
    if kind == "workers":
        start_workers(method, int(numbers[0]))
    else:
        run_campaign_with(method, int(numbers[0]), int(numbers[1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=8, help="workers started in the workers case")
    parser.add_argument("--trials", type=int, default=4, help="trials of the campaign case")
    parser.add_argument("--pool", type=int, default=2, help="workers of the campaign case")
    parser.add_argument("--rounds", type=int, default=3)
    args = parse_args(parser, {"workers": 4, "rounds": 1}, argv)
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1) != 0:
        raise SystemExit("PR_SET_CHILD_SUBREAPER failed: this benchmark needs Linux")
    cases = [("workers", "spawn", "0")]
    cases += [("workers", method, str(count)) for method in METHODS for count in (1, args.workers)]
    cases += [("campaign", method, str(args.trials), str(args.pool)) for method in METHODS]
    cpu: dict[tuple[str, ...], list[float]] = {c: [] for c in cases}
    wall: dict[tuple[str, ...], list[float]] = {c: [] for c in cases}
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start")
    for _ in range(args.rounds):
        for c in cases:
            seconds, elapsed = measured(["--case", *c])
            cpu[c].append(seconds)
            wall[c].append(elapsed)
    cpu_of = {c: statistics.median(v) for c, v in cpu.items()}
    none = cpu_of[("workers", "spawn", "0")]
    n = args.workers
    print(f"workers handed no trial, CPU-s of every process (median of {args.rounds}):")
    print(f"  no worker            {none:6.2f}   (the driver's interpreter and imports)")
    further = {}
    for method in METHODS:
        one, many = cpu_of[("workers", method, "1")], cpu_of[("workers", method, str(n))]
        further[method] = (many - one) / (n - 1)
        print(f"  {method:<10} 1 worker {one:6.2f}   {n} workers {many:6.2f}   first worker {one - none:5.2f}, "
              f"each further one {further[method]:5.2f}")
    spawned = cpu_of[("workers", "spawn", str(n))] - none
    forked = cpu_of[("workers", "forkserver", str(n))] - none
    print(f"  a further worker: forkserver/spawn {further['forkserver'] / further['spawn']:.2f}x; "
          f"{n} workers: {forked:.2f} against {spawned:.2f} CPU-s, {forked / spawned:.2f}x")
    print(f"campaign: {args.trials} lockstep trials on {args.pool} workers, CPU-s of every process and wall s:")
    for method in METHODS:
        c = ("campaign", method, str(args.trials), str(args.pool))
        print(f"  {method:<10} {cpu_of[c]:6.2f} CPU-s  {statistics.median(wall[c]):6.2f} s  "
              f"(runs {', '.join(f'{v:.2f}' for v in cpu[c])})")
    spawn_c, fork_c = (cpu_of[("campaign", m, str(args.trials), str(args.pool))] for m in METHODS)
    print(f"  forkserver/spawn {fork_c / spawn_c:.2f}x of the CPU; load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--case"]:
        case(sys.argv[2:])
        sys.exit(0)
    sys.exit(main())
