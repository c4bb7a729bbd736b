"""A trial's figures computed from its record (`reports.figures`) against read back from its campaign's kept ones:
why `hil run` keeps each trial's figures as it finishes. Goal: the rows of a 2,520-trial results table from kept
figures within 5 s, a sixth of the report's 30 s (benchmarks/report_2520.py).

Flies a lockstep campaign (the demo's scenes, profiles and planners, one repeat; --quick: forest only) or takes
a campaign directory already run (--run), then times per trial, on one process as `hil report` would: the
figures computed from the record (each scene generated once, as in any one process) and the results row read
with the kept figures; both extrapolated to 2,520 trials. CPU time, which a loaded machine inflates less than
wall time.

    python benchmarks/record_figures.py [--quick] [--run DIR] [--workers 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.quick import parse_args  # noqa: E402
from hil.campaign import parse_campaign  # noqa: E402
from hil.executors import LocalPool  # noqa: E402
from hil.runner import run_campaign  # noqa: E402
from records.campaign_dir import trial_records  # noqa: E402
from reports.figures import trial_figures  # noqa: E402
from reports.results import CampaignResults, results_row  # noqa: E402

TRIALS = 2520
GOAL_S = 5.0


def fly_campaign(out: Path, scenes: list[str], workers: int) -> None:
    """A lockstep campaign of the demo's kind, flown into `out`."""
    missions = [{"scene": scene, "configs": [0], "rule": "flyingtrust"} for scene in scenes]
    campaign = parse_campaign({"name": "record-figures", "seed": 7, "missions": missions, "targets": ["lockstep"],
                               "profiles": ["1.00kg-SunnySky", "0.55kg-Quadrotor-1", "default"],
                               "planners": ["straight", "avoid"]}, "benchmarks/record_figures.py")
    run_campaign(campaign, out, LocalPool(workers), results=CampaignResults(out), progress=sys.stderr.isatty())


def per_trial_cpu_s(records: list[Path], work) -> float:
    started = time.process_time()
    for record in records:
        work(record)
    return (time.process_time() - started) / len(records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, help="a campaign directory already run (default: fly one)")
    parser.add_argument("--scenes", default="forest,narrow-gap,maze")
    parser.add_argument("--workers", type=int, default=2)
    args = parse_args(parser, {"scenes": "forest"})
    if args.run is not None:
        measure(args.run)
        return
    with tempfile.TemporaryDirectory(prefix="record-figures-") as scratch:
        fly_campaign(Path(scratch), args.scenes.split(","), args.workers)
        measure(Path(scratch))


def measure(campaign_dir: Path) -> None:
    records = trial_records(campaign_dir)
    trial_figures(records[0])  # imports, numba's compiled code and the first scene: once per process
    computed = per_trial_cpu_s(records, trial_figures)
    kept = per_trial_cpu_s(records, results_row)
    print(f"trials              {len(records)} ({campaign_dir})")
    print(f"computed per trial  {computed * 1e3:.1f} ms of CPU ({TRIALS:,} trials: {TRIALS * computed:.0f} s)")
    print(f"kept per trial      {kept * 1e3:.2f} ms of CPU for the whole row ({TRIALS:,} trials: {TRIALS * kept:.1f} s; "
          f"goal <= {GOAL_S:g} s) {'ok' if TRIALS * kept <= GOAL_S else 'ABOVE GOAL'}")


if __name__ == "__main__":
    main()
