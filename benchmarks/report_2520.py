"""Report generation for 2,520 trials (the full FLYINGTRUST matrix): goal <= 30 s (issue 7).

By default the results table is synthetic (36 profiles x 7 scenarios x 10 configurations, two
planners, success drawn from a capability-dependent rate, no trial records, so no track plots);
`--run DIR` times the report of a real campaign directory instead.

    python benchmarks/report_2520.py [--run runs/flyingtrust-matrix]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.quick import parse_args  # noqa: E402
from missions.scenes import FLYINGTRUST  # noqa: E402
from profiles.library import library_profiles  # noqa: E402
from reports.render import write_report  # noqa: E402
from reports.results import load_results  # noqa: E402


def synthetic_results(seed: int = 0) -> pd.DataFrame:
    """2,520 rows per planner with every column the report reads."""
    rng = np.random.default_rng(seed)
    rows = []
    for planner, skill in (("straight", 0.1), ("avoid", 0.6)):
        for profile in library_profiles():
            for spec in FLYINGTRUST:
                for config in range(10):
                    p = min(0.95, skill * profile.twr_max / 3.0)
                    success = bool(rng.random() < p)
                    collided = not success and rng.random() < 0.8
                    rows.append({
                        "trial_id": f"{spec.name}__c{config}__{profile.name}__{planner}", "scene": spec.name,
                        "config": config, "rule": "flyingtrust", "profile": profile.name, "target": "lockstep",
                        "link": "none", "fault": "none", "planner": planner, "repeat": 0, "seed": config,
                        "outcome": "success" if success else ("collision" if collided else "timeout"),
                        "success": success, "collided": collided, "oracle_success": success or rng.random() < 0.1,
                        "platform_kind": profile.category, "twr_max": profile.twr_max,
                        "alpha_xy_max": profile.alpha_xy_max, "alpha_z_max": profile.alpha_z_max,
                        "final_distance_m": 0.5 if success else rng.uniform(2, 50), "path_length_m": rng.uniform(20, 70),
                        "shortest_length_m": 50.0, "progress": 1.0 if success else rng.random(),
                        "avg_speed": rng.uniform(1, 4), "avg_curvature": rng.uniform(0, 0.3),
                        "avg_acceleration": rng.uniform(0, 5), "avg_jerk": rng.uniform(0, 100),
                        "tcr_1": rng.random(), "tcr_2": rng.random(), "tcr_5": rng.random(),
                        "min_clearance_m": rng.uniform(-0.2, 1.0), "geofence_violation_s": 0.0,
                        "altitude_violation_s": 0.0, "duration_s": rng.uniform(5, 90),
                        "t_map_ms": rng.uniform(1, 5), "t_plan_ms": rng.uniform(1, 5), "t_ctrl_ms": 0.01,
                        "t_tot_ms": rng.uniform(2, 10), "rate_hz": 30.0, "run": "synthetic", "run_dir": "/nonexistent"})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, help="a campaign directory to report on (default: synthetic results)")
    args = parse_args(parser, {})
    results = load_results(args.run) if args.run else synthetic_results()
    out = Path(tempfile.mkdtemp(prefix="report-2520-"))
    started = time.perf_counter()
    markdown, page = write_report(results, out, "2,520-trial benchmark")
    wall = time.perf_counter() - started
    print(f"trials       {len(results)}")
    print(f"report time  {wall:.1f} s (goal <= 30 s)")
    print(f"report       {page} ({page.stat().st_size / 1e6:.1f} MB), {markdown}")


if __name__ == "__main__":
    main()
