"""PX4's EKF2 against the truth of the harness's physics, over one mission.

PX4 SITL (airframe 10016 none_iris) flies on the harness's physics in lockstep: take-off to 5 m, a
20 m square at 5 m, landing. The simulator records its ground truth keyed by `time_us`, the clock
PX4 runs on, so PX4's own log (vehicle_local_position, vehicle_attitude from the ULog) lines up
with the truth sample for sample, with no clock fitting. Printed: PX4's estimation error of
position, velocity and attitude while airborne (mean, RMS, 95th percentile, max, and a 95 %
confidence interval of the mean from block means, since successive errors are correlated), the
figure neither SIH nor a field flight can give.

    PX4_DIR=../shared/px4/v1.16.1 python benchmarks/harness_physics_estimation.py [--profile NAME] [--seed N]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere in the repo

from benchmarks.quick import parse_args  # noqa: E402
from bridges.mavsdk_vehicle import connect  # noqa: E402
from bridges.vehicle import MissionWaypoint  # noqa: E402
from px4.external_physics import SimulatorOptions, px4_on_harness_physics  # noqa: E402
from px4.external_physics.simulator import TRUTH_TABLE  # noqa: E402
from px4.sitl import SitlOptions  # noqa: E402
from px4.ulog import read_topic  # noqa: E402
from reports.estimation import BLOCK_S, QUANTITIES, estimation_errors, summarize  # noqa: E402

SPEED = 4.0
SQUARE = [MissionWaypoint(20, 0, -5, acceptance_radius=1.0), MissionWaypoint(20, 20, -5, acceptance_radius=1.0),
          MissionWaypoint(0, 20, -5, acceptance_radius=1.0), MissionWaypoint(0, 0, -5, acceptance_radius=1.0)]


async def fly_mission(profile: str, seed: int, record: Path) -> pd.DataFrame:
    """Fly the mission; returns the truth table (PX4's log is left in ``record/ulog``)."""
    truth: list[dict] = []
    options = SimulatorOptions(profile=profile, speed=SPEED, seed=seed, record_rate_hz=50.0)
    async with px4_on_harness_physics(options, SitlOptions(airframe="none_iris"), keep_in=record,
                                      sink=lambda table, row: truth.append(row) if table == TRUTH_TABLE else None) as run:
        vehicle = await connect(run.url, 20.0, run.speed_factor)
        try:
            await vehicle.wait_armable(60.0)
            await vehicle.arm()
            await vehicle.takeoff(5.0)
            await vehicle.upload_mission(SQUARE)
            await vehicle.start_mission()
            async with vehicle.deadline(120.0):
                async for progress in vehicle.mission_progress():
                    if progress.finished:
                        break
            await vehicle.land()
            await vehicle.wait_until(lambda s: not s.armed, 60.0, "landing and auto-disarm")
        finally:
            await vehicle.close()
    return pd.DataFrame(truth)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="default")
    parser.add_argument("--seed", type=int, default=0)
    args = parse_args(parser, {})
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp)
        truth = asyncio.run(fly_mission(args.profile, args.seed, record))
        ulog = sorted((record / "ulog").glob("*.ulg"))[-1]
        lpos = read_topic(ulog, "vehicle_local_position")
        att = read_topic(ulog, "vehicle_attitude")
    errors = estimation_errors(truth, lpos, att)
    t_pos, t_att = errors["est_pos_h_m"][0], errors["est_roll_deg"][0]
    print(f"PX4 EKF2 vs the harness's truth: profile {args.profile}, seed {args.seed}, "
          f"{(t_pos[-1] - t_pos[0]) / 1e6:.1f} s airborne, {len(t_pos)} position and {len(t_att)} attitude samples "
          f"(mean with the 95 % CI over {BLOCK_S:g} s blocks)")
    for name, label in QUANTITIES.items():
        t_us, values = errors[name]
        s = summarize(t_us, values)
        print(f"{label:<26} mean {s.mean:7.3f} [{s.low:.3f}, {s.high:.3f}]  rms {s.rms:7.3f}  p95 {s.p95:7.3f}  "
              f"max {s.max:7.3f}")
    print("goal: printed (no threshold); the sensor models' noise and the magnetic field set what EKF2 can reach")
    return 0


if __name__ == "__main__":
    sys.exit(main())
