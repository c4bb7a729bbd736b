"""Memory of a campaign worker against trial count: does a long campaign leak?

Runs `--trials` lockstep trials of one scene configuration (the straight baseline, all 36
FLYINGTRUST profiles in turn) in this one process, as a campaign worker runs them, and prints the
resident set size every `--every` trials. A flat column means no growth with trial count; the full
matrix benchmark's memory line mixes this with the scenes getting heavier (Perlin voxels come last).

    python benchmarks/trial_memory.py [--trials 400] [--every 50] [--scene forest]
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.quick import parse_args  # noqa: E402
from hil.campaign import parse_campaign  # noqa: E402
from hil.trial import run_trial_spec  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--every", type=int, default=50)
    parser.add_argument("--scene", default="forest")
    args = parse_args(parser, {'trials': 100, 'every': 25})
    campaign = parse_campaign({"name": "memory", "repeats": args.trials // 36 + 1,
                               "missions": [{"scene": args.scene, "configs": [0]}],
                               "profiles": [{"library": "flyingtrust"}]})
    specs = campaign.trials()[: args.trials]
    me = psutil.Process()
    with tempfile.TemporaryDirectory(prefix="trial-memory-") as scratch:
        started = time.perf_counter()
        for index, spec in enumerate(specs, start=1):
            run_trial_spec(spec, Path(scratch) / spec.trial_id, Path(scratch) / "scenes")
            if index % args.every == 0:
                gc.collect()
                print(f"after {index:4d} trials  RSS {me.memory_info().rss / 1e6:6.1f} MB  "
                      f"({(time.perf_counter() - started) / index:.3f} s/trial)", flush=True)


if __name__ == "__main__":
    main()
