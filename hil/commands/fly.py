"""`hil fly`: fly one mission on a target and write a trial record."""

from __future__ import annotations

import argparse
import asyncio
import functools
import sys
from pathlib import Path

from hil.commands.args import param_assignment, percent, positive_float
from hil.exit_codes import for_outcome


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "fly", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="fly one mission on a target and write a trial record",
        description="Fly a mission on a target, record telemetry and events into a trial record directory, and "
                    "print a summary. A mission is a YAML mission file (missions/examples/: waypoints, or a "
                    "benchmark mission with a scene, airspace and stages), a QGroundControl .plan, or a "
                    "'QGC WPL 110' waypoint file. Its airspace and its scene's obstacles are enforced: leaving "
                    "the one or touching the other ends the flight as a failure naming the zone. The exit code "
                    "is 0 only when the mission succeeded.",
        epilog="examples:\n"
               "  hil fly missions/examples/demo_square.yaml\n"
               "  hil fly missions/examples/offboard_square.yaml --speed 4 --record-dir runs/offboard\n"
               "  hil fly missions/examples/demo_square.yaml --target lockstep      # simulated time, ~150x\n"
               "  hil fly missions/examples/benchmark/field_survey.yaml --target lockstep   # stages, airspace\n"
               "  hil fly missions/examples/qgc/field_square.plan --target lockstep  # planned in QGroundControl\n"
               "  hil fly demo_square --target px4-sitl --speed 4   # a packaged mission by name; needs PX4_DIR\n"
               "  hil fly MISSION.yaml --target udpin://127.0.0.1:14540 --arm   # an autopilot already running\n"
               "\nsafety: a target other than 'sim' is treated as a real aircraft: nothing arms without --arm.")
    parser.add_argument("mission", type=Path,
                        help="mission file (.yaml, QGroundControl .plan, QGC WPL .waypoints) or a packaged "
                             "mission's name (demo_square)")
    parser.add_argument("--target", default="sim",
                     help="'sim' (start the built-in vehicle as a MAVLink process), 'lockstep' (the built-in "
                          "vehicle in-process in simulated time, as fast as the CPU allows), 'px4-sitl[:N]' (start "
                          "PX4 SITL, instance N) or a connection string of a running autopilot, e.g. "
                          "udpin://127.0.0.1:14540 or serial:///dev/ttyACM0:921600 (default: sim)")
    parser.add_argument("--profile", default="default",
                     help="vehicle profile for the built-in vehicle or PX4 SITL (default: %(default)s)")
    parser.add_argument("--speed", type=positive_float, default=1.0,
                     help="simulation speed factor, built-in vehicle or PX4 SITL (default: 1)")
    parser.add_argument("--px4-dir", help="PX4 build for --target px4-sitl (default: $PX4_DIR, else px4 on PATH)")
    parser.add_argument("--physics", choices=("default", "harness"), default="default",
                        help="px4-sitl: 'default' flies PX4's own SIH; 'harness' makes the harness's physics PX4's "
                             "simulator (profile sensors and physical faults act on PX4's sensors). A connection "
                             "string with 'harness': a board in HITL mode on the bench (default: %(default)s)")
    parser.add_argument("--link", metavar="PROFILE",
                        help="link profile (name or file) between the harness and the target: latency, jitter, loss")
    parser.add_argument("--param", type=param_assignment, action="append", default=[], metavar="NAME=VALUE",
                     help="set a PX4 parameter: at boot on sim and px4-sitl; on a flight controller for the flight "
                          "only (journaled, restored afterwards, even after a crash); repeatable")
    parser.add_argument("--params", type=Path, metavar="FILE",
                        help="parameters from a QGroundControl .params file, set like --param (which wins)")
    parser.add_argument("--px4-airframe", metavar="ID|MODEL",
                        help="PX4 SITL airframe by autostart id or model name (default: sihsim_quadx, SIH quad-X; "
                             "none_iris with --physics harness)")
    parser.add_argument("--record-dir", type=Path, help="trial record directory (default: runs/<time>-<mission name>)")
    parser.add_argument("--connect-timeout", type=positive_float, default=15.0, help="seconds to wait for the autopilot (default: 15)")
    safety = parser.add_argument_group("safety (the harness's own limits, on top of the flight controller's)")
    safety.add_argument("--dry-run", action="store_true",
                        help="connect, check, upload: everything but arming")
    safety.add_argument("--geofence-radius", type=positive_float, metavar="M",
                        help="horizontal fence around home (default: the mission's extent + 10 m)")
    safety.add_argument("--max-altitude", type=positive_float, metavar="M",
                        help="altitude ceiling above home (default: the mission's highest point + 10 m)")
    safety.add_argument("--breach-action", choices=("land", "rtl"), default="land",
                        help="what the harness commands when the vehicle leaves its fence (default: land)")
    safety.add_argument("--min-battery", type=percent, default=50.0, metavar="PCT",
                        help="battery needed to start (default: 50)")
    parser.add_argument("--arm", action="store_true",
                     help="allow arming a target that is not the built-in vehicle (a real aircraft may fly!)")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout (the outcome, the figures, where things were written, the exit code); the human-readable lines go to stderr")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from config.errors import ConfigError
    from hil.field import abort_key, interactive, show_status
    from hil.fly import FlightOptions, default_record_dir, mission_config, run_trial
    from hil.safety import SafetyLimits
    from missions.load import load
    from profiles.library import load_vehicle_profile
    from profiles.link import load_link_profile
    from px4.params_file import read_params_file
    from px4.sih import sitl_params
    from px4.sitl import Px4Build, Px4NotFound, SitlError
    from reports.estimation import format_estimation
    from reports.trial_summary import format_summary
    from targets import PX4_SITL, TargetOptions, TargetSpec

    try:
        mission = load(args.mission)
        plan = mission.to_waypoint_mission()
        radius = load_vehicle_profile(args.profile).radius
        target = TargetSpec.parse(args.target)
        params = {**(read_params_file(args.params) if args.params else {}), **dict(args.param)}
        if target.kind == PX4_SITL:
            Px4Build.locate(args.px4_dir)  # no PX4: say how to get one before anything starts
            if args.physics == "default":
                sitl_params(load_vehicle_profile(args.profile))  # refuses a profile SIH cannot fly, saying why
        if args.link:
            load_link_profile(args.link)
        # A flight controller that is already running keeps its parameters: the flight sets, journals and
        # restores them; simulators take them at boot.
        options = TargetOptions(profile=args.profile, speed=args.speed if target.simulated else 1.0,
                                params=params if target.simulated else {}, link=args.link, physics=args.physics,
                                px4_dir=args.px4_dir, px4_airframe=args.px4_airframe,
                                connect_timeout_s=args.connect_timeout, allow_arming=args.arm,
                                # A mission's comms-loss windows cut the simulated link; a real radio is not cut.
                                outages=tuple((w.start_s, w.start_s + w.duration_s) for w in mission.comms_loss)
                                if target.simulated else ())
    except (ConfigError, ValueError, Px4NotFound) as exc:
        print(f"hil fly: {exc}", file=sys.stderr)
        return 2
    if not target.simulated and not args.arm:
        print(f"hil fly: refusing to arm {target.name} without --arm: a target other than 'sim' may be a real "
              "aircraft. Add --arm once the area is clear.", file=sys.stderr)
        return 2
    limits = SafetyLimits.around(plan, breach_action=args.breach_action, radius_m=args.geofence_radius,
                                 max_altitude_m=args.max_altitude)
    flight = FlightOptions(limits, hardware=not target.simulated, dry_run=args.dry_run,
                           min_battery_pct=args.min_battery, params=params if not target.simulated else {},
                           vehicle_radius=radius, inject_faults=target.simulated)
    record_dir = args.record_dir or default_record_dir(mission)
    config = mission_config(mission, target=target.name, profile=args.profile, speed=options.speed, params=params,
                            physics=args.physics, link=args.link,
                            px4_airframe=args.px4_airframe if target.kind == PX4_SITL else None)
    show = functools.partial(show_status, mission=plan) if interactive() else None

    async def go():
        flight_ = run_trial(target, options, mission, record_dir, config=config, options=flight, say=print, show=show)
        if not interactive():
            return await flight_
        # The abort key cancels the flight; hil.fly turns that into "land now", as for Ctrl-C.
        with abort_key(asyncio.current_task().cancel):
            return await flight_

    print(f"flying {mission.name} ({len(plan.waypoints)} waypoints, {mission.mode}) on {target.name}...", flush=True)
    try:
        result = asyncio.run(go())
    except (Px4NotFound, SitlError, ConfigError) as exc:  # ConfigError: an untrustworthy parameter journal
        print(f"hil fly: {exc}", file=sys.stderr)
        return 2
    args.result = {"verb": "fly", "mission": mission.name, "target": target.name, "outcome": result.outcome,
                   "reason": result.reason, "record": str(result.record_dir),
                   "summary": result.summary.as_dict() if result.summary is not None else None,
                   "estimation": result.estimation}
    if result.summary is not None:
        print(format_summary(result.outcome, result.summary))
    else:
        print(f"outcome  {result.outcome}")
    if result.estimation:
        print(format_estimation(result.estimation))
    if result.reason:
        print(f"reason   {result.reason}")
    print(f"record   {result.record_dir}")
    return for_outcome(result.outcome)
