"""`hil fly`: fly one waypoint mission on a target and write a trial record."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from hil.commands.args import param_assignment, positive_float


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "fly", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="fly one waypoint mission on a target and write a trial record",
        description="Fly a waypoint mission (YAML: takeoff_altitude, speed, acceptance_radius, time_budget, "
                    "waypoints...) on a target, record telemetry and events into a trial record directory, and "
                    "print a summary. The exit code is 0 only when the mission succeeded.",
        epilog="examples:\n"
               "  hil fly missions/examples/demo_square.yaml\n"
               "  hil fly missions/examples/offboard_square.yaml --speed 4 --record-dir runs/offboard\n"
               "  hil fly MISSION.yaml --target udpin://127.0.0.1:14540 --arm   # an autopilot already running\n"
               "\nsafety: a target other than 'sim' is treated as a real aircraft: nothing arms without --arm.")
    parser.add_argument("mission", type=Path, help="mission YAML file")
    parser.add_argument("--target", default="sim",
                     help="'sim' (start the built-in vehicle), 'px4-sitl[:N]' (start PX4 SITL SIH, instance N) or "
                          "a connection string of a running autopilot, e.g. udpin://127.0.0.1:14540 or "
                          "serial:///dev/ttyACM0:921600 (default: sim)")
    parser.add_argument("--profile", default="default",
                     help="vehicle profile for the built-in vehicle or PX4 SITL (default: %(default)s)")
    parser.add_argument("--speed", type=positive_float, default=1.0,
                     help="simulation speed factor, built-in vehicle or PX4 SITL (default: 1)")
    parser.add_argument("--px4-dir", help="PX4 build for --target px4-sitl (default: $PX4_DIR, else px4 on PATH)")
    parser.add_argument("--clock", choices=("realtime", "lockstep"), default="realtime",
                        help="built-in vehicle only: 'realtime' runs it as a MAVLink process at --speed (as PX4 SITL "
                             "is driven); 'lockstep' steps it in-process in simulated time, as fast as the CPU allows "
                             "(no sockets; for large campaigns) (default: realtime)")
    parser.add_argument("--param", type=param_assignment, action="append", default=[], metavar="NAME=VALUE",
                     help="set a PX4 parameter: at boot on sim and px4-sitl; on a flight controller for the flight "
                          "only (journaled, restored afterwards, even after a crash); repeatable")
    parser.add_argument("--params", type=Path, metavar="FILE",
                        help="parameters from a QGroundControl .params file, set like --param (which wins)")
    parser.add_argument("--px4-airframe", default="sihsim_quadx", metavar="ID|MODEL",
                        help="PX4 SITL airframe by autostart id or model name (default: %(default)s, SIH quad-X)")
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
    safety.add_argument("--min-battery", type=float, default=50.0, metavar="PCT",
                        help="battery needed to start (default: 50)")
    parser.add_argument("--arm", action="store_true",
                     help="allow arming a target that is not the built-in vehicle (a real aircraft may fly!)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from bridges.lockstep_vehicle import LockstepVehicle
    from bridges.mavsdk_vehicle import connect
    from config.errors import ConfigError
    from hil.field import abort_key, interactive, show_status
    from hil.fly import FlightOptions, default_record_dir, mission_config, run_trial
    from hil.safety import SafetyLimits
    from hil.targets import PX4_SITL, SimProcessOptions, TargetSpec, builtin_vehicle
    from missions.waypoint import load_mission
    from profiles.vehicle import load_vehicle_profile
    from px4.params_file import read_params_file
    from px4.sih import sitl_params
    from px4.sim.realtime import SimOptions, build_vehicle
    from px4.sitl import Px4NotFound, SitlError
    from reports.trial_summary import format_summary

    try:
        mission = load_mission(args.mission)
        target = TargetSpec.parse(args.target)
        params = {**(read_params_file(args.params) if args.params else {}), **dict(args.param)}
        if target.name == PX4_SITL:
            sitl_params(load_vehicle_profile(args.profile))  # refuses a profile PX4's SIH cannot fly, saying why
    except (ConfigError, ValueError) as exc:
        print(f"hil fly: {exc}", file=sys.stderr)
        return 2
    if not target.simulated and not args.arm:
        print(f"hil fly: refusing to arm {target.name} without --arm: a target other than 'sim' may be a real "
              "aircraft. Add --arm once the area is clear.", file=sys.stderr)
        return 2
    limits = SafetyLimits.around(mission, breach_action=args.breach_action, radius_m=args.geofence_radius,
                                 max_altitude_m=args.max_altitude)
    flight = FlightOptions(limits, hardware=not target.simulated, dry_run=args.dry_run,
                           min_battery_pct=args.min_battery, params=params if not target.simulated else {})
    record_dir = args.record_dir or default_record_dir(mission)
    config = mission_config(mission, target=target.name, profile=args.profile, speed=args.speed, clock=args.clock,
                            params=params, px4_airframe=args.px4_airframe if target.name == PX4_SITL else None)

    async def go():
        if target.name == PX4_SITL:
            return await _fly_on_px4_sitl(args, target, params, mission, record_dir, config, flight, show)
        if target.simulated and args.clock == "lockstep":
            autopilot, _ = build_vehicle(SimOptions(profile=args.profile, params=params))

            async def open_lockstep():
                return await LockstepVehicle(autopilot).__aenter__()
            return await run_trial(open_lockstep, mission, record_dir, target_name="sim-lockstep", config=config,
                                   options=flight, say=print, show=show)
        if target.simulated:
            options = SimProcessOptions(profile=args.profile, speed=args.speed, params=params)
            async with builtin_vehicle(options) as sim:
                return await run_trial(lambda: connect(sim.url, args.connect_timeout, args.speed), mission, record_dir,
                                       target_name="sim", config=config, options=flight, vehicle_failure=sim.failure,
                                       say=print, show=show)
        return await run_trial(lambda: connect(target.name, args.connect_timeout), mission, record_dir,
                               target_name=target.name, config=config, options=flight, say=print, show=show)

    show = show_status if interactive() else None

    async def go_with_abort_key():
        if not interactive():
            return await go()
        # The abort key cancels the flight; hil.fly turns that into "land now", as for Ctrl-C.
        with abort_key(asyncio.current_task().cancel):
            return await go()

    print(f"flying {mission.name} ({len(mission.waypoints)} waypoints, {mission.mode}) on {target.name}...", flush=True)
    try:
        result = asyncio.run(go_with_abort_key())
    except (Px4NotFound, SitlError) as exc:
        print(f"hil fly: {exc}", file=sys.stderr)
        return 2
    if result.summary is not None:
        print(format_summary(result.outcome, result.summary))
    else:
        print(f"outcome  {result.outcome}")
    if result.reason:
        print(f"reason   {result.reason}")
    print(f"record   {result.record_dir}")
    return 0 if result.outcome in ("success", "dry_run") else 1


async def _fly_on_px4_sitl(args, target, params: dict, mission, record_dir: Path, config: dict, flight, show):
    """Start PX4 SITL with the profile's and the user's parameters, fly, keep its console and ULog in the record."""
    from bridges.mavsdk_vehicle import connect
    from hil.fly import run_trial
    from records.record import read_table
    from profiles.vehicle import load_vehicle_profile
    from px4.sih import sitl_params
    from px4.sitl import SitlOptions, px4_sitl
    from px4.ulog import keep_in_record

    options = SitlOptions(instance=target.instance, speed=args.speed, px4_dir=args.px4_dir, airframe=args.px4_airframe,
                          params={**sitl_params(load_vehicle_profile(args.profile)), **params})
    ulog_dir = record_dir / "ulog"
    async with px4_sitl(options, keep_in=record_dir) as sitl:
        result = await run_trial(lambda: connect(sitl.url, args.connect_timeout, args.speed), mission, record_dir,
                                 target_name=f"{target.name}:{sitl.instance}", config=config, options=flight,
                                 vehicle_failure=sitl.failure, say=print, show=show)
    for log in sorted(ulog_dir.glob("*.ulg")):
        try:
            keep_in_record(log, read_table(record_dir, "telemetry"), scale=1.0 / args.speed)
        except (KeyError, ValueError) as exc:
            print(f"hil fly: {log.name} kept but not aligned with the harness clock: {exc}", file=sys.stderr)
    return result
