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
import math
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere in the repo

from bridges.mavsdk_vehicle import connect  # noqa: E402
from bridges.vehicle import MissionWaypoint  # noqa: E402
from px4.external_physics import SimulatorOptions, px4_on_harness_physics  # noqa: E402
from px4.external_physics.simulator import TRUTH_TABLE  # noqa: E402
from px4.sitl import SitlOptions  # noqa: E402
from px4.ulog import read_topic  # noqa: E402

SPEED = 4.0
SQUARE = [MissionWaypoint(20, 0, -5, acceptance_radius=1.0), MissionWaypoint(20, 20, -5, acceptance_radius=1.0),
          MissionWaypoint(0, 20, -5, acceptance_radius=1.0), MissionWaypoint(0, 0, -5, acceptance_radius=1.0)]
BLOCK_S = 2.0  # error samples within this much vehicle time are treated as one, for the confidence interval


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


def _quat_to_euler(q: np.ndarray) -> np.ndarray:
    w, x, y, z = q.T
    roll = np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    pitch = np.arcsin(np.clip(2 * (w * y - z * x), -1, 1))
    yaw = np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return np.column_stack([roll, pitch, yaw])


def _at(truth: pd.DataFrame, t_us: np.ndarray, columns: list[str], angles: bool = False) -> np.ndarray:
    """Truth interpolated to PX4's sample times (angles unwrapped first, so +-180 deg is no jump)."""
    values = [np.unwrap(truth[c].to_numpy()) if angles else truth[c] for c in columns]
    return np.column_stack([np.interp(t_us, truth["time_us"], v) for v in values])


def summary(name: str, unit: str, errors: np.ndarray, t_us: np.ndarray) -> str:
    blocks = pd.Series(errors).groupby((t_us - t_us[0]) // int(BLOCK_S * 1e6)).mean().to_numpy()
    half = 1.96 * blocks.std(ddof=1) / math.sqrt(len(blocks)) if len(blocks) > 1 else math.nan
    return (f"{name:<26} mean {errors.mean():7.3f} +- {half:.3f}  rms {math.sqrt((errors ** 2).mean()):7.3f}  "
            f"p95 {np.percentile(errors, 95):7.3f}  max {errors.max():7.3f} {unit}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="default")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp)
        truth = asyncio.run(fly_mission(args.profile, args.seed, record))
        ulog = sorted((record / "ulog").glob("*.ulg"))[-1]
        lpos = read_topic(ulog, "vehicle_local_position")
        att = read_topic(ulog, "vehicle_attitude")
    airborne = truth[~truth["on_ground"]]
    t0, t1 = airborne["time_us"].min() + 1_000_000, airborne["time_us"].max() - 1_000_000  # leave out touch-downs
    lpos = lpos[(lpos["timestamp"] >= t0) & (lpos["timestamp"] <= t1)]
    att = att[(att["timestamp"] >= t0) & (att["timestamp"] <= t1)]
    t_pos = lpos["timestamp"].to_numpy()
    pos_err = lpos[["x", "y", "z"]].to_numpy() - _at(truth, t_pos, ["north", "east", "down"])
    vel_err = lpos[["vx", "vy", "vz"]].to_numpy() - _at(truth, t_pos, ["vn", "ve", "vd"])
    t_att = att["timestamp"].to_numpy()
    q_est = att[[f"q[{i}]" for i in range(4)]].to_numpy()
    euler_err = _quat_to_euler(q_est) - _at(truth, t_att, ["roll", "pitch", "yaw"], angles=True)
    euler_err = np.degrees((euler_err + np.pi) % (2 * np.pi) - np.pi)
    print(f"PX4 EKF2 vs the harness's truth: profile {args.profile}, seed {args.seed}, "
          f"{(t1 - t0) / 1e6:.1f} s airborne, {len(t_pos)} position and {len(t_att)} attitude samples "
          f"(mean +- 95 % CI over {BLOCK_S:g} s blocks)")
    print(summary("horizontal position", "m", np.hypot(pos_err[:, 0], pos_err[:, 1]), t_pos))
    print(summary("vertical position", "m", np.abs(pos_err[:, 2]), t_pos))
    print(summary("horizontal velocity", "m/s", np.hypot(vel_err[:, 0], vel_err[:, 1]), t_pos))
    print(summary("vertical velocity", "m/s", np.abs(vel_err[:, 2]), t_pos))
    print(summary("roll", "deg", np.abs(euler_err[:, 0]), t_att))
    print(summary("pitch", "deg", np.abs(euler_err[:, 1]), t_att))
    print(summary("yaw", "deg", np.abs(euler_err[:, 2]), t_att))
    print("goal: printed (no threshold); the sensor models' noise and the magnetic field set what EKF2 can reach")
    return 0


if __name__ == "__main__":
    sys.exit(main())
