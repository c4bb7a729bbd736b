"""Success rate of a planner over a scene's ten configurations, in lockstep (goal: >= 70 % in Forest).

Each configuration is flown once on the built-in vehicle in simulated time with the virtual depth
camera, judged as FLYINGTRUST judges (goal within 2 m inside 1.5 min, no collision), with the
planner's own computation time felt by the loop (compute profile, default desktop).

    python benchmarks/forest_success.py [--scene forest] [--planner onboard.planners.avoid:OccupancyPlanner]
                                        [--profile default] [--compute-profile desktop] [--speed-cap 4]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bridges.lockstep_vehicle import LockstepVehicle  # noqa: E402
from missions.scenes import CONFIGURATIONS, generate  # noqa: E402
from onboard.planner import load_planner  # noqa: E402
from onboard.task import task_for_scene  # noqa: E402
from onboard.trial import fly_task  # noqa: E402
from profiles.compute import load_compute_profile  # noqa: E402
from px4.sim.realtime import SimOptions, build_vehicle  # noqa: E402

GOAL = 0.7
TELEMETRY_HZ = 100  # lockstep sleep resolution 10 ms, so compute holds are felt


async def fly(args, seed: int):
    scene = generate(args.scene, seed)
    autopilot, _ = build_vehicle(SimOptions(profile=args.profile))
    async with LockstepVehicle(autopilot, telemetry_hz=TELEMETRY_HZ) as vehicle:
        return await fly_task(vehicle, load_planner(args.planner), task_for_scene(scene, speed_cap=args.speed_cap),
                              scene=scene, radius=autopilot.profile.radius,
                              compute_profile=load_compute_profile(args.compute_profile), land=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", default="forest")
    parser.add_argument("--planner", default="onboard.planners.avoid:OccupancyPlanner")
    parser.add_argument("--profile", default="default", help="vehicle profile")
    parser.add_argument("--compute-profile", default="desktop")
    parser.add_argument("--speed-cap", type=float, default=4.0)
    args = parser.parse_args()
    successes = 0
    for seed in range(CONFIGURATIONS):
        start = time.perf_counter()
        outcome = asyncio.run(fly(args, seed))
        successes += outcome.outcome == "success"
        timing = outcome.runtime.timing.get("total")
        print(f"{args.scene}:{seed}  {outcome.outcome:<10} {outcome.flight_time_s:5.1f} s  min clearance "
              f"{outcome.min_clearance_m:5.2f} m  T_tot {timing.mean_ms if timing else float('nan'):6.2f} ms  "
              f"({time.perf_counter() - start:.1f} s wall)  {outcome.reason}", flush=True)
    rate = successes / CONFIGURATIONS
    print(f"success {successes}/{CONFIGURATIONS} = {rate:.0%} (goal >= {GOAL:.0%}) {'ok' if rate >= GOAL else 'BELOW GOAL'}")
    return 0 if rate >= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
