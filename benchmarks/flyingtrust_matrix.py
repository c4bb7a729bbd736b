"""The full FLYINGTRUST matrix in lockstep: 36 profiles x 7 scenarios x 10 configurations = 2,520 trials.

Runs the obstacle-avoiding planner with its depth sensor at 30 Hz (`--planner avoid --rate-hz 30`;
`--planner straight --rate-hz 10` is the straight-flight baseline, or any module:Class) on the local
process pool and prints wall time, trials per second, the time the whole matrix takes at that rate, and
the workers' memory over the campaign (resident set size sampled every 2 s: first and last fifth
compared, so growth with trial count shows). Goal (issue 34): the 2,520 trials of the avoid planner in
<= 5 minutes on 2 cores, which is GOAL_CPU_S a trial. Beside the CPU seconds a trial took (the workers' and
this process's), a peer measured in the same run: lockstep_rtf.py's autopilot flight (60 s of flight in
lockstep, no planner, no record), so a figure taken on a busy machine can be read against it, and the load.

    python benchmarks/flyingtrust_matrix.py [--workers 2] [--out DIR] [--scenes forest,maze] [--configs 10]
    python benchmarks/flyingtrust_matrix.py --configs 1      # a tenth (252 trials), the whole extrapolated
    python benchmarks/flyingtrust_matrix.py --quick          # 6 profiles x 7 scenes x 1 configuration
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.lockstep_rtf import fly_autopilot  # noqa: E402
from benchmarks.quick import parse_args  # noqa: E402
from hil.campaign import Campaign, parse_campaign  # noqa: E402
from hil.executors import LocalPool  # noqa: E402
from hil.runner import run_campaign  # noqa: E402
from missions.scenes import FLYINGTRUST  # noqa: E402
from profiles.library import load_vehicle_profile  # noqa: E402
from reports.results import CampaignResults  # noqa: E402

GOAL_MINUTES = 5.0
GOAL_WORKERS = 2
WHOLE_MATRIX = 2520
GOAL_CPU_S = GOAL_MINUTES * 60 * GOAL_WORKERS / WHOLE_MATRIX


def cpu_seconds() -> float:
    """CPU seconds of this process and of its children that have ended (the pool's workers, once joined)."""
    return sum(usage.ru_utime + usage.ru_stime for usage in (resource.getrusage(resource.RUSAGE_SELF),
                                                            resource.getrusage(resource.RUSAGE_CHILDREN)))


def autopilot_peer() -> float:
    """Wall seconds of lockstep_rtf.py's autopilot flight (60 simulated seconds), best of three."""
    profile = load_vehicle_profile("default")
    fly_autopilot(profile)
    return min(fly_autopilot(profile)[0] for _ in range(3))


def sample_memory(stop: threading.Event, samples: list[float]) -> None:
    """Total RSS (MB) of this process and its workers, every 2 s."""
    me = psutil.Process()
    while not stop.wait(2.0):
        processes = [me, *me.children(recursive=True)]
        total = 0
        for process in processes:
            try:
                total += process.memory_info().rss
            except psutil.NoSuchProcess:
                pass
        samples.append(total / 1e6)


def matrix(scenes: list[str], configs: int, planner: str, rate_hz: float, profiles: int | None = None) -> Campaign:
    """The matrix's campaign: the FLYINGTRUST profiles (all, or `profiles` of them spread evenly over the
    library's range) on `configs` configurations of each scene."""
    def campaign(names: list | None) -> Campaign:
        return parse_campaign({
            "name": "flyingtrust-matrix", "seed": 0, "repeats": 1,
            "missions": [{"scene": name, "configs": list(range(configs)), "rule": "flyingtrust"} for name in scenes],
            "profiles": names or [{"library": "flyingtrust"}], "targets": ["lockstep"], "planners": [planner],
            "rate_hz": rate_hz,
        }, "benchmarks/flyingtrust_matrix.py")
    whole = campaign(None)
    if profiles is None or profiles >= len(whole.profiles):
        return whole
    names = whole.profiles
    return campaign([names[round(i * (len(names) - 1) / max(profiles - 1, 1))] for i in range(profiles)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, help="campaign directory (default: a temporary one)")
    parser.add_argument("--scenes", default=",".join(spec.name for spec in FLYINGTRUST))
    parser.add_argument("--configs", type=int, default=10)
    parser.add_argument("--profiles", type=int, help="this many of the 36 profiles, spread over the range (default: all)")
    parser.add_argument("--planner", default="avoid")
    parser.add_argument("--rate-hz", type=float, default=30.0, help="planner loop and depth sensor rate")
    args = parse_args(parser, {'configs': 1, 'profiles': 6})

    campaign = matrix(args.scenes.split(","), args.configs, args.planner, args.rate_hz, args.profiles)
    whole = len(matrix([spec.name for spec in FLYINGTRUST], 10, args.planner, args.rate_hz).trials())
    out = args.out or Path(tempfile.mkdtemp(prefix="flyingtrust-matrix-"))
    samples: list[float] = []
    stop = threading.Event()
    sampler = threading.Thread(target=sample_memory, args=(stop, samples), daemon=True)
    sampler.start()
    peer_before = autopilot_peer()
    load_before = os.getloadavg()[0]
    cpu_before = cpu_seconds()
    started = time.perf_counter()
    summary = run_campaign(campaign, out, LocalPool(args.workers), results=CampaignResults(out),
                           progress=sys.stderr.isatty())
    wall = time.perf_counter() - started
    cpu = cpu_seconds() - cpu_before
    stop.set()
    peer = min(peer_before, autopilot_peer())
    fifth = max(1, len(samples) // 5)
    print(f"trials          {summary.ran} run, {summary.skipped} already done ({dict(summary.outcomes)})")
    print(f"wall time       {wall:.1f} s on {args.workers} workers ({summary.ran / wall:.2f} trials/s)")
    print(f"whole matrix    {whole * wall / max(summary.ran, 1) / 60:.1f} min for its {whole:,} trials at this rate "
          f"(extrapolated from these {summary.ran}); goal: <= {GOAL_MINUTES:g} min for the avoid planner at 30 Hz "
          f"on {GOAL_WORKERS} workers")
    per_trial = cpu / max(summary.ran, 1)
    print(f"CPU per trial   {per_trial:.2f} s (workers and this process); goal: <= {GOAL_CPU_S:.3f} s "
          f"({GOAL_MINUTES:g} min x {GOAL_WORKERS} cores / {WHOLE_MATRIX:,} trials): "
          f"{'met' if per_trial <= GOAL_CPU_S else 'NOT met'}")
    print(f"peer            the autopilot alone flies 60 s in {peer * 1e3:.0f} ms in this run: a trial costs "
          f"{per_trial / peer:.1f} such flights (goal {GOAL_CPU_S / peer:.1f}); load average {load_before:.1f} "
          f"before, {os.getloadavg()[0]:.1f} after")
    # Navigation phase only (take-off excluded), so the factor is a lower bound.
    flown = pd.read_parquet(out / "results.parquet")["end_time_s"].sum()
    print(f"real-time factor {flown / (wall * args.workers):.1f}x per core ({flown:.0f} s of navigation flown)")
    if samples:
        early, late = sum(samples[:fifth]) / fifth, sum(samples[-fifth:]) / fifth
        print(f"memory (RSS)    first fifth {early:.0f} MB, last fifth {late:.0f} MB, peak {max(samples):.0f} MB")
    print(f"campaign dir    {out}")


if __name__ == "__main__":
    main()
