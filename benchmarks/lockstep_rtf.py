"""Real-time factor of the built-in vehicle in lockstep: physics plus the flight controller.

Flies takeoff to a 5 m hover, then a waypoint 30 m away, for 60 simulated seconds, on one core,
and prints the median over three runs of the real-time factor (simulated seconds per wall-clock
second) and of the cost of one physics step including control.

    python benchmarks/lockstep_rtf.py [--profile NAME_OR_PATH] [--runs N]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere in the repo

from profiles.vehicle import VehicleProfile, load_vehicle_profile  # noqa: E402
from px4.params import ParamStore  # noqa: E402
from px4.sim.control import MulticopterController, TrajectorySetpoint  # noqa: E402
from px4.sim.dynamics import MAX_DT, QuadrotorDynamics  # noqa: E402

SIM_SECONDS = 60.0
HOVER_ALT = 5.0
TAKEOFF_SECONDS = 10.0
WAYPOINT = (18.0, 24.0, -HOVER_ALT)  # 30 m from the take-off point, NED


def build_vehicle(profile: VehicleProfile, params: ParamStore | None = None,
                  dt: float = MAX_DT) -> tuple[QuadrotorDynamics, MulticopterController, ParamStore]:
    """Physics and controller for a profile, on the ground at the origin, sharing one parameter store."""
    phys = profile.physical()
    store = params if params is not None else ParamStore(overrides=phys.to_sih_params())
    dyn = QuadrotorDynamics(phys, dt)
    ctrl = MulticopterController(phys, store)
    return dyn, ctrl, store


def fly_hover_to_waypoint(profile: VehicleProfile) -> tuple[float, int, float]:
    """One run; returns wall-clock seconds, physics steps, and the final distance to the waypoint."""
    dyn, ctrl, _ = build_vehicle(profile)
    takeoff = TrajectorySetpoint(position=(0.0, 0.0, -HOVER_ALT), yaw=0.0)
    goto = TrajectorySetpoint(position=WAYPOINT, yaw=math.atan2(WAYPOINT[1], WAYPOINT[0]))
    takeoff_steps = round(TAKEOFF_SECONDS / dyn.dt)
    total_steps = round(SIM_SECONDS / dyn.dt)
    step, update = dyn.step, ctrl.update
    start = time.perf_counter()
    for _ in range(takeoff_steps):
        step(update(dyn, takeoff))
    for _ in range(total_steps - takeoff_steps):
        step(update(dyn, goto))
    wall = time.perf_counter() - start
    return wall, total_steps, math.dist(dyn.pos, WAYPOINT)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="default", help="vehicle profile name or YAML path")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    profile = load_vehicle_profile(args.profile)

    results = [fly_hover_to_waypoint(profile) for _ in range(args.runs)]
    walls = [wall for wall, _, _ in results]
    steps = results[0][1]
    wall = statistics.median(walls)
    print(f"profile {profile.name}: {SIM_SECONDS:.0f} s simulated, {steps} physics steps of {MAX_DT * 1e3:g} ms")
    print(f"real-time factor   {SIM_SECONDS / wall:7.1f} x   (median of {args.runs}; "
          f"runs {', '.join(f'{SIM_SECONDS / w:.0f}' for w in walls)})")
    print(f"per physics step   {wall / steps * 1e6:7.2f} us  (physics + position/attitude/rate control)")
    print(f"final distance to waypoint {results[0][2]:.3f} m")
    return 0


if __name__ == "__main__":
    sys.exit(main())
