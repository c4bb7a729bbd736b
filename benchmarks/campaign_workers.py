"""What a second campaign worker buys: the same campaign on one worker, then on two.

Runs a campaign file (the demo campaign by default: 60 lockstep trials) into a fresh directory with
`--workers 1` and with `--workers 2`, interleaved over `--rounds`, and prints the median wall time of
each and the speed-up. On a 2-core machine the second worker has the second core. Each run builds its
own scene cache, as a new campaign does. Goal (issue 17): >= 1.7x on a quiet machine.

    python benchmarks/campaign_workers.py [--campaign hil/campaigns/demo.yaml] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.quick import parse_args  # noqa: E402
from hil.campaign import load_campaign  # noqa: E402
from hil.executors import LocalPool  # noqa: E402
from hil.runner import run_campaign  # noqa: E402
from reports.results import CampaignResults  # noqa: E402

GOAL_SPEEDUP = 1.7


def timed_run(campaign, workers: int) -> float:
    """Wall seconds of the whole campaign on `workers` local workers, into a new directory."""
    with tempfile.TemporaryDirectory(prefix="campaign-workers-") as out:
        started = time.perf_counter()
        summary = run_campaign(campaign, Path(out), LocalPool(workers), results=CampaignResults(Path(out)),
                               progress=False)
        wall = time.perf_counter() - started
    if summary.ran != len(campaign.trials()):
        raise SystemExit(f"{workers} worker(s) ran {summary.ran} of {len(campaign.trials())} trials")
    return wall


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--campaign", type=Path, default=Path(__file__).resolve().parents[1] / "hil/campaigns/demo.yaml")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds of one and two workers")
    args = parse_args(parser, {"rounds": 1}, argv)
    campaign = load_campaign(args.campaign)
    print(f"{args.campaign.name}: {len(campaign.trials())} trials, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f} at the start")
    walls: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(args.rounds):
        for workers in walls:
            walls[workers].append(timed_run(campaign, workers))
    one, two = (statistics.median(walls[w]) for w in (1, 2))
    print(f"  1 worker   {one:6.1f} s  (runs {', '.join(f'{w:.1f}' for w in walls[1])})")
    print(f"  2 workers  {two:6.1f} s  (runs {', '.join(f'{w:.1f}' for w in walls[2])})")
    print(f"  speed-up   {one / two:.2f}x (goal, issue 17: >= {GOAL_SPEEDUP:g}x on a quiet machine; "
          f"load average {os.getloadavg()[0]:.2f} at the end)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
