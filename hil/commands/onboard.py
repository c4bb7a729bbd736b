"""`hil onboard`: the planner runtime as a companion-computer process on a MAVLink connection."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

from hil import exit_codes
from hil.commands.args import positive_float
from hil.rules import RULES


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "onboard", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="run a planner as a companion-computer process against a MAVLink flight controller",
        description="Connect to a flight controller over MAVLink (as a companion computer would), take off, run "
                    "the planner in a closed loop with a virtual depth camera in the mission's scene, time every "
                    "stage, judge the flight as a campaign trial is judged (--rule: goal radius held, collision, failsafe, time "
                    "budget), land, and write a trial record. "
                    "The exit code is 0 only when the vehicle reached the goal.",
        epilog="examples:\n"
               "  hil sim &    # the built-in vehicle, then:\n"
               "  hil onboard --connect udpin://127.0.0.1:14540 --mission forest:3 --arm\n"
               "  hil onboard --connect udpin://127.0.0.1:14540 --mission forest:3 --arm "
               "--compute-profile jetson_orin_nx\n"
               "  hil onboard --connect udpin://127.0.0.1:14540 --planner straight "
               "--mission forest:0 --arm\n"
               "  hil onboard --connect udpin://127.0.0.1:14540 "
               "--mission missions/examples/benchmark/forest_point_to_point.yaml --arm\n"
               "\nsafety: the connection may be a real aircraft: nothing arms without --arm.")
    parser.add_argument("--connect", required=True, metavar="CONNECTION",
                        help="MAVSDK connection string of the flight controller, e.g. udpin://127.0.0.1:14540")
    parser.add_argument("--planner", default="avoid", metavar="MODULE:CLASS",
                        help="planner class, constructed without arguments, or a built-in one: avoid (with the "
                             "virtual depth camera) or straight (blind) (default: %(default)s)")
    parser.add_argument("--mission", required=True, metavar="SCENE[:SEED]|FILE",
                        help="scene to fly from its start to its goal, e.g. forest:3 (see missions.scenes), or a "
                             "point_to_point mission file in a scene (its start, goal, airspace and rule: "
                             "success radius, settle time, budget and speed cap replace --rule's)")
    parser.add_argument("--compute-profile", metavar="NAME",
                        help="emulate a slower onboard computer, e.g. jetson_orin_nx (profiles/compute/); "
                             "default: none (the planner's time is felt only as it happens)")
    parser.add_argument("--rate", type=positive_float, default=10.0, help="planner loop rate, Hz (default: 10)")
    parser.add_argument("--rule", choices=sorted(RULES), default="flyingtrust",
                        help="success rule: goal radius, hold time, time budget and speed cap, as campaigns judge "
                             "(default: %(default)s: 2 m held 2 s within 90 s at 4 m/s)")
    parser.add_argument("--speed-cap", type=positive_float,
                        help="m/s horizontal speed limit set on the vehicle (MPC_XY_VEL_MAX, journaled and restored); "
                             "default: the rule's")
    parser.add_argument("--speed-factor", type=positive_float, default=1.0,
                        help="the target's simulation speed factor (1 for hardware) (default: 1)")
    parser.add_argument("--profile", default="default", help="vehicle profile, for the collision radius (default: default)")
    parser.add_argument("--record-dir", type=Path, help="trial record directory (default: runs/<time>-onboard-<scene>)")
    parser.add_argument("--connect-timeout", type=positive_float, default=15.0, help="seconds (default: 15)")
    parser.add_argument("--arm", action="store_true", help="allow arming (the target may be a real aircraft!)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from bridges.vehicle import VehicleError
    from config.errors import ConfigError
    from hil.campaign import planner_choice
    from hil.navigation import Navigation, navigation_target
    from hil.rules import SuccessRule
    from hil.safety import UnexpectedVehicleState
    from missions.scenes import SceneError
    from onboard.planner import load_planner
    from onboard.profile_table import format_table
    from profiles.compute import load_compute_profile
    from profiles.library import load_vehicle_profile

    if not args.arm:
        print(f"hil onboard: refusing to arm {args.connect} without --arm: it may be a real aircraft.", file=sys.stderr)
        return 2
    try:
        scene, mission = navigation_target(args.mission)
        choice = planner_choice(args.planner)
        navigation = Navigation(load_planner(choice.spec), args.planner, sensor=choice.sensor, rate_hz=args.rate,
                                compute=load_compute_profile(args.compute_profile) if args.compute_profile else None)
        radius = load_vehicle_profile(args.profile).radius
    except (ConfigError, SceneError) as exc:
        print(f"hil onboard: {exc}", file=sys.stderr)
        return 2
    rule = RULES[args.rule] if mission is None else SuccessRule.of_mission(mission)
    if args.speed_cap is not None:
        rule = dataclasses.replace(rule, speed_cap=args.speed_cap)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    record_dir = args.record_dir or Path("runs") / f"{stamp}-onboard-{scene.name}-{scene.seed}"
    print(f"flying {scene.name}:{scene.seed} with {args.planner} via {args.connect}...", flush=True)
    try:
        flight = asyncio.run(_fly(args, navigation, scene, mission, rule, radius, record_dir))
    except UnexpectedVehicleState as exc:  # someone else is flying it: nothing was commanded
        print(f"hil onboard: {exc}", file=sys.stderr)
        return exit_codes.REFUSED
    except VehicleError as exc:  # no connection
        print(f"hil onboard: {exc}", file=sys.stderr)
        return exit_codes.ERROR
    verdict = flight.verdict
    print(f"outcome  {verdict.outcome}{': ' + verdict.reason if verdict.reason else ''}")
    print(f"time     {verdict.t_s:.1f} s from the start point, {flight.monitor.goal_distance_m:.2f} m from the goal, "
          f"min clearance {flight.monitor.min_clearance_m:.2f} m")
    if flight.runtime is not None:
        print(format_table([record_dir.name], [flight.runtime.timing]))
    print(f"record   {record_dir}")
    return exit_codes.for_outcome(verdict.outcome)


async def _fly(args, navigation, scene, mission, rule, radius: float, record_dir: Path):
    from hil.navigation import fly_scene
    from hil.session import TrialSession
    from targets import TargetOptions
    from targets.connection import connected

    config = {"planner": args.planner, "mission": args.mission, "rule": dataclasses.asdict(rule),
              "compute_profile": navigation.compute.as_dict() if navigation.compute else None,
              "rate_hz": args.rate, "vehicle_profile": args.profile, "speed_factor": args.speed_factor}
    options = TargetOptions(profile=args.profile, speed=args.speed_factor, connect_timeout_s=args.connect_timeout)
    # A flight controller someone else runs, perhaps a SITL at a speed factor: connected here at that speed
    # (targets.hardware would take it for real time), then the session's like any target.
    with TrialSession(record_dir, config=config, target=args.connect, seed=scene.seed) as session:
        async with connected(args.connect, options) as (vehicle, _), \
                session.attach(vehicle, args.connect, record=False):
            # The flight controller may be a real one that outlives this run: what it changes is journaled.
            flight = await fly_scene(vehicle, navigation, scene, rule, radius, session.recorder, land=True,
                                     hardware=True, mission=mission)
        session.finish(flight.verdict.outcome, flight.ending())
    return flight
