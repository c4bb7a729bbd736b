"""Success rate of a planner over a scene's ten configurations, in lockstep (goal: >= 70 % in Forest).

Each configuration is flown once on the built-in vehicle in simulated time with the virtual depth
camera, judged as a campaign trial is (`hil.navigation.fly_scene`; rule FLYINGTRUST's by default: goal
within 2 m, held 2 s, inside 1.5 min, no collision), with the planner's own computation time felt by
the loop (compute profile, default desktop).

    python benchmarks/forest_success.py [--scene forest] [--planner onboard.planners.avoid:OccupancyPlanner]
                                        [--profile default] [--compute-profile desktop] [--speed-cap 4]
                                        [--rule flyingtrust] [--record-dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.quick import parse_args  # noqa: E402
from bridges.lockstep_vehicle import LockstepVehicle  # noqa: E402
from hil.campaign import planner_choice  # noqa: E402
from hil.navigation import Navigation, NavigationResult, fly_scene  # noqa: E402
from hil.rules import RULES  # noqa: E402
from hil.session import TrialSession  # noqa: E402
from missions.scenes import CONFIGURATIONS, generate  # noqa: E402
from onboard.planner import load_planner  # noqa: E402
from profiles.compute import load_compute_profile  # noqa: E402
from px4.sim.realtime import SimOptions, build_vehicle  # noqa: E402

GOAL = 0.7
TELEMETRY_HZ = 100  # lockstep sleep resolution 10 ms, so compute holds are felt


async def fly(args, seed: int, record_dir: Path) -> NavigationResult:
    """One configuration, flown and judged as a campaign trial is (`hil.navigation.fly_scene`)."""
    scene = generate(args.scene, seed)
    choice = planner_choice(args.planner)
    navigation = Navigation(load_planner(choice.spec), args.planner, sensor=choice.sensor,
                            compute=load_compute_profile(args.compute_profile))
    rule = dataclasses.replace(RULES[args.rule], speed_cap=args.speed_cap)
    autopilot, _ = build_vehicle(SimOptions(profile=args.profile))
    with TrialSession(record_dir, config=vars(args), target="lockstep", seed=seed) as session:
        async with LockstepVehicle(autopilot, telemetry_hz=TELEMETRY_HZ) as vehicle:
            flight = await fly_scene(vehicle, navigation, scene, rule, autopilot.profile.radius, session.recorder,
                                     land=False)
        session.finish(flight.verdict.outcome, flight.ending())
    return flight


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", default="forest")
    parser.add_argument("--planner", default="avoid", help="avoid, straight or MODULE:CLASS")
    parser.add_argument("--profile", default="default", help="vehicle profile")
    parser.add_argument("--compute-profile", default="desktop")
    parser.add_argument("--speed-cap", type=float, default=4.0)
    parser.add_argument("--rule", choices=sorted(RULES), default="flyingtrust")
    parser.add_argument("--record-dir", type=Path, help="keep the trial records here (default: a temporary directory)")
    args = parse_args(parser, {})
    successes = 0
    with tempfile.TemporaryDirectory() as scratch:
        records = args.record_dir or Path(scratch)
        for seed in range(CONFIGURATIONS):
            start = time.perf_counter()
            flight = asyncio.run(fly(args, seed, records / f"{args.scene}-{seed}"))
            verdict = flight.verdict
            successes += verdict.outcome == "success"
            timing = flight.runtime.timing.get("total") if flight.runtime else None
            print(f"{args.scene}:{seed}  {verdict.outcome:<10} {verdict.t_s:5.1f} s  min clearance "
                  f"{flight.monitor.min_clearance_m:5.2f} m  T_tot {timing.mean_ms if timing else float('nan'):6.2f} ms  "
                  f"({time.perf_counter() - start:.1f} s wall)  {verdict.reason}", flush=True)
    rate = successes / CONFIGURATIONS
    print(f"success {successes}/{CONFIGURATIONS} = {rate:.0%} (goal >= {GOAL:.0%}) {'ok' if rate >= GOAL else 'BELOW GOAL'}")
    return 0 if rate >= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
