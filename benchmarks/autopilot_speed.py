"""Speed of the built-in autopilot in lockstep, this tree against a baseline revision (issue 35's reshaping).

Flies the built-in `Autopilot` directly (no MAVLink, no asyncio): a mission of take-off, four waypoints
and a return that lands, then a take-off, a hover and a LAND, all in simulated time with `run()`. The
same flight runs on the checked-out tree and on `--baseline` (a git revision exported with `git archive`
into a temporary folder), each in a fresh process, alternately, `--runs` times; prints the median
simulated seconds per wall second and per CPU second of each, the median and the best run, and their
ratios (this tree / baseline: above 1 is faster). On a loaded machine read the best CPU figure: the wall
clock also counts the time other processes had the core, and the best run is the least disturbed.

    python benchmarks/autopilot_speed.py [--baseline REV] [--runs 5]
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Only the public API both revisions share: the flight must be the same one on either tree.
FLIGHT = r"""
import json, sys, time
from pymavlink.dialects.v20 import common as mavlink
from profiles.library import load_vehicle_profile
from px4.modes import FlightMode
from px4.params import ParamStore
from px4.sim.autopilot import Autopilot
from px4.sim.mission_items import MissionItem

ap = Autopilot(load_vehicle_profile("default"), ParamStore())
start, cpu = time.perf_counter(), time.process_time()
ap.run(0.5)
local = mavlink.MAV_FRAME_LOCAL_NED
legs = [(mavlink.MAV_CMD_NAV_TAKEOFF, 0.0, 0.0)] + [(mavlink.MAV_CMD_NAV_WAYPOINT, n, e)
        for n, e in ((20.0, 0.0), (20.0, 20.0), (0.0, 20.0), (5.0, 5.0))]
items = [MissionItem(seq=i, frame=local, command=c, x=int(n * 1e4), y=int(e * 1e4), z=-8.0)
         for i, (c, n, e) in enumerate(legs)]
items.append(MissionItem(seq=len(items), frame=mavlink.MAV_FRAME_MISSION, command=mavlink.MAV_CMD_NAV_RETURN_TO_LAUNCH))
ap.set_mission(items)
ap.run(0.1)
assert ap.arm().accepted and ap.start_mission().accepted
while ap.armed and ap.time_s < 200.0:
    ap.run(1.0)
assert not ap.armed, "the mission did not end in a landing"
ap.run(1.0)
assert ap.arm().accepted and ap.takeoff(float("nan")).accepted
ap.run(15.0)
assert ap.land().accepted
while ap.armed and ap.time_s < 400.0:
    ap.run(1.0)
assert not ap.armed, "the LAND did not end disarmed"
print(json.dumps({"sim_s": ap.time_s, "wall_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu}))
"""


def _export(rev: str, into: Path) -> None:
    """The revision's tree (what the flight imports) into `into`."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev], capture_output=True)
    if archive.returncode != 0:
        raise SystemExit(f"autopilot_speed: --baseline {rev!r} is not a revision of this repository: "
                         f"{archive.stderr.decode().strip()}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")


def _fly(tree: Path) -> tuple[float, float]:
    """Simulated seconds per wall second and per CPU second of one flight on `tree`."""
    proc = subprocess.run([sys.executable, "-c", FLIGHT], cwd=tree, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"autopilot_speed: the flight failed on {tree}:\n{proc.stderr[-2000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return result["sim_s"] / result["wall_s"], result["sim_s"] / result["cpu_s"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="HEAD", help="git revision to compare with (default: HEAD)")
    parser.add_argument("--runs", type=int, default=5, help="flights per tree (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        print(f"autopilot_speed: --runs must be at least 1, got {args.runs}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="autopilot-baseline-") as tmp:
        baseline_tree = Path(tmp)
        _export(args.baseline, baseline_tree)
        _fly(ROOT)  # the first flight compiles the inner loop for this tree's cache; not counted
        _fly(baseline_tree)
        here, base = [], []
        for _ in range(args.runs):  # alternately, so that a change in the machine's load hits both alike
            here.append(_fly(ROOT))
            base.append(_fly(baseline_tree))
    for i, unit in enumerate(("wall s", "CPU s")):
        for name, pick in (("median", statistics.median), ("best", max)):
            h, b = pick(r[i] for r in here), pick(r[i] for r in base)
            print(f"sim s / {unit}, {name} of {args.runs}: baseline {args.baseline} {b:7.1f}, this tree {h:7.1f}, "
                  f"ratio this tree / baseline {h / b:.3f} (above 1: faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
