"""`hil onboard`: the planner runtime as a companion-computer process on a MAVLink connection."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

from hil.commands.args import positive_float

DEFAULT_PLANNER = "onboard.planners.avoid:OccupancyPlanner"


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "onboard", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="run a planner as a companion-computer process against a MAVLink flight controller",
        description="Connect to a flight controller over MAVLink (as a companion computer would), take off, run "
                    "the planner in a closed loop with a virtual depth camera in the mission's scene, time every "
                    "stage, judge the flight (goal, collision, time budget), land, and write a trial record. "
                    "The exit code is 0 only when the vehicle reached the goal.",
        epilog="examples:\n"
               "  hil sim &    # the built-in vehicle, then:\n"
               "  hil onboard --connect udpin://127.0.0.1:14540 --mission forest:3 --arm\n"
               "  hil onboard --connect udpin://127.0.0.1:14540 --mission forest:3 --arm "
               "--compute-profile jetson_orin_nx\n"
               "  hil onboard --connect udpin://127.0.0.1:14540 --planner onboard.planners.straight:StraightLine "
               "--mission forest:0 --arm\n"
               "\nsafety: the connection may be a real aircraft: nothing arms without --arm.")
    parser.add_argument("--connect", required=True, metavar="CONNECTION",
                        help="MAVSDK connection string of the flight controller, e.g. udpin://127.0.0.1:14540")
    parser.add_argument("--planner", default=DEFAULT_PLANNER, metavar="MODULE:CLASS",
                        help="planner class, constructed without arguments (default: %(default)s)")
    parser.add_argument("--mission", required=True, metavar="SCENE[:SEED]",
                        help="scene to fly from its start to its goal, e.g. forest:3 (see missions.scenes)")
    parser.add_argument("--compute-profile", metavar="NAME",
                        help="emulate a slower onboard computer, e.g. jetson_orin_nx (profiles/compute/); "
                             "default: none (the planner's time is felt only as it happens)")
    parser.add_argument("--rate", type=positive_float, default=10.0, help="planner loop rate, Hz (default: 10)")
    parser.add_argument("--speed-cap", type=positive_float, default=4.0, help="m/s (default: 4, FLYINGTRUST)")
    parser.add_argument("--speed-factor", type=positive_float, default=1.0,
                        help="the target's simulation speed factor (1 for hardware) (default: 1)")
    parser.add_argument("--profile", default="default", help="vehicle profile, for the collision radius (default: default)")
    parser.add_argument("--record-dir", type=Path, help="trial record directory (default: runs/<time>-onboard-<scene>)")
    parser.add_argument("--connect-timeout", type=positive_float, default=15.0, help="seconds (default: 15)")
    parser.add_argument("--arm", action="store_true", help="allow arming (the target may be a real aircraft!)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from missions.scenes import SceneError
    from onboard.planner import PlannerLoadError, load_planner
    from onboard.profile_table import format_table
    from onboard.task import scene_from_spec, task_for_scene
    from profiles.compute import ComputeProfileError, load_compute_profile
    from profiles.vehicle import ProfileError, load_vehicle_profile

    if not args.arm:
        print(f"hil onboard: refusing to arm {args.connect} without --arm: it may be a real aircraft.", file=sys.stderr)
        return 2
    try:
        planner = load_planner(args.planner)
        scene = scene_from_spec(args.mission)
        profile = load_compute_profile(args.compute_profile) if args.compute_profile else None
        radius = load_vehicle_profile(args.profile).radius
    except (PlannerLoadError, SceneError, ComputeProfileError, ProfileError) as exc:
        print(f"hil onboard: {exc}", file=sys.stderr)
        return 2
    task = task_for_scene(scene, speed_cap=args.speed_cap)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    record_dir = args.record_dir or Path("runs") / f"{stamp}-onboard-{scene.name}-{scene.seed}"
    print(f"flying {task.name} with {args.planner} via {args.connect}...", flush=True)
    outcome = asyncio.run(_fly(args, planner, scene, task, profile, radius, record_dir))
    print(f"outcome  {outcome.outcome}: {outcome.reason}")
    print(f"time     {outcome.flight_time_s:.1f} s, min clearance {outcome.min_clearance_m:.2f} m")
    print(format_table([record_dir.name], [outcome.runtime.timing]))
    print(f"record   {record_dir}")
    return 0 if outcome.outcome == "success" else 1


async def _fly(args, planner, scene, task, profile, radius: float, record_dir: Path):
    from bridges.mavsdk_vehicle import connect
    from records.record import TrialRecorder
    from onboard.trial import fly_task

    config = {"planner": args.planner, "mission": args.mission, "task": task, "compute_profile":
              profile.as_dict() if profile else None, "rate_hz": args.rate, "vehicle_profile": args.profile,
              "speed_factor": args.speed_factor}
    with TrialRecorder(record_dir, config=config, target=args.connect, seed=scene.seed) as recorder:
        vehicle = await connect(args.connect, args.connect_timeout, args.speed_factor)
        try:
            outcome = await fly_task(vehicle, planner, task, scene=scene, radius=radius, rate_hz=args.rate,
                                     compute_profile=profile, recorder=recorder)
        finally:
            await vehicle.close()
        recorder.finish(outcome.outcome, outcome.summary())
    return outcome
