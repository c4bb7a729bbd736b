"""The full FLYINGTRUST matrix in lockstep: 36 profiles x 7 scenarios x 10 configurations = 2,520 trials.

Runs the obstacle-avoiding planner with its depth sensor at 30 Hz (`--planner avoid --rate-hz 30`;
`--planner straight --rate-hz 10` is the straight-flight baseline, or any module:Class) on the local
process pool and prints wall time, trials per second, the time the whole matrix takes at that rate, and
the workers' memory over the campaign (resident set size sampled every 2 s: first and last fifth
compared, so growth with trial count shows). Goal (issue 17): the 2,520 trials of the avoid planner in
<= 15 minutes on 2 cores.

    python benchmarks/flyingtrust_matrix.py [--workers 2] [--out DIR] [--scenes forest,maze] [--configs 10]
    python benchmarks/flyingtrust_matrix.py --configs 1      # a tenth (252 trials), the whole extrapolated
    python benchmarks/flyingtrust_matrix.py --quick          # 6 profiles x 7 scenes x 1 configuration
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.quick import parse_args  # noqa: E402
from hil.campaign import Campaign, parse_campaign  # noqa: E402
from hil.executors import LocalPool  # noqa: E402
from hil.runner import run_campaign  # noqa: E402
from missions.scenes import FLYINGTRUST  # noqa: E402
from reports.results import CampaignResults  # noqa: E402

GOAL_MINUTES = 15.0


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
    started = time.perf_counter()
    summary = run_campaign(campaign, out, LocalPool(args.workers), results=CampaignResults(out),
                           progress=sys.stderr.isatty())
    wall = time.perf_counter() - started
    stop.set()
    fifth = max(1, len(samples) // 5)
    print(f"trials          {summary.ran} run, {summary.skipped} already done ({dict(summary.outcomes)})")
    print(f"wall time       {wall:.1f} s on {args.workers} workers ({summary.ran / wall:.2f} trials/s)")
    print(f"whole matrix    {whole * wall / max(summary.ran, 1) / 60:.1f} min for its {whole:,} trials at this rate "
          f"(extrapolated from these {summary.ran}); goal: <= {GOAL_MINUTES:g} min for the avoid planner at 30 Hz "
          f"on 2 workers")
    # Navigation phase only (take-off excluded), so the factor is a lower bound.
    flown = pd.read_parquet(out / "results.parquet")["end_time_s"].sum()
    print(f"real-time factor {flown / (wall * args.workers):.1f}x per core ({flown:.0f} s of navigation flown)")
    if samples:
        early, late = sum(samples[:fifth]) / fifth, sum(samples[-fifth:]) / fifth
        print(f"memory (RSS)    first fifth {early:.0f} MB, last fifth {late:.0f} MB, peak {max(samples):.0f} MB")
    print(f"campaign dir    {out}")


if __name__ == "__main__":
    main()
