"""The `hil` command: one verb per job (DESIGN.md, "The command line")."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

TOUR = """\
examples:
  hil sim                                   run the built-in vehicle; connect MAVSDK/QGC to udpin://127.0.0.1:14540
  hil fly missions/examples/demo_square.yaml                 fly a mission on the built-in vehicle, write a trial record
  hil fly MISSION.yaml --target udpin://0.0.0.0:14540 --arm  fly on an autopilot that is already running
"""


def _param(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    try:
        if not sep:
            raise ValueError
        return name.strip().upper(), float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE with a number, e.g. MPC_XY_CRUISE=8, got {text!r}") from None


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hil", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Hardware-in-the-loop harness for quadrotor navigation: fly missions on the built-in "
                    "PX4-compatible vehicle, PX4 SITL or a real PX4, and record every trial.",
        epilog=TOUR)
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more log output (-v: info, -vv: debug, MAVSDK's own log included)")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    sim = verbs.add_parser(
        "sim", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="run the built-in vehicle standalone (any MAVLink client can connect)",
        description="Run the built-in PX4-compatible vehicle in real time (times --speed). It speaks MAVLink 2 "
                    "like PX4 v1.14 SITL: by default it sends to 127.0.0.1:14540 (+instance), where MAVSDK "
                    "listens with udpin://127.0.0.1:14540. Stop with Ctrl-C.",
        epilog="examples:\n"
               "  hil sim --profile default --speed 2\n"
               "  hil sim --link udpout://127.0.0.1:14540 --link udpout://127.0.0.1:14550   # offboard + QGC ports\n"
               "  hil sim --link serial:///dev/pts/5:921600                                  # over a serial port\n"
               "  hil sim --param MPC_XY_CRUISE=8 --param COM_OF_LOSS_T=0.5")
    sim.add_argument("--link", action="append", metavar="URL",
                     help="where to speak MAVLink: udpout://HOST:PORT (send there), udpin://HOST:PORT (listen), "
                          "serial:///dev/DEV:BAUD or a pyserial URL; repeat for several ports "
                          "(default: udpout://127.0.0.1:14540+instance)")
    sim.add_argument("--instance", type=int, default=0, help="PX4-style instance number: adds to the default port and system id")
    sim.add_argument("--profile", default="default", help="vehicle profile name or YAML file (default: %(default)s)")
    sim.add_argument("--speed", type=_positive, default=1.0, help="simulation speed factor, like PX4_SIM_SPEED_FACTOR (default: 1)")
    sim.add_argument("--param", type=_param, action="append", default=[], metavar="NAME=VALUE",
                     help="set a vehicle parameter at start (PX4 names)")

    fly = verbs.add_parser(
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
    fly.add_argument("mission", type=Path, help="mission YAML file")
    fly.add_argument("--target", default="sim",
                     help="'sim' (start the built-in vehicle) or a connection string of a running autopilot, "
                          "e.g. udpin://127.0.0.1:14540 or serial:///dev/ttyACM0:921600 (default: sim)")
    fly.add_argument("--profile", default="default", help="vehicle profile for the built-in vehicle (default: %(default)s)")
    fly.add_argument("--speed", type=_positive, default=1.0, help="built-in vehicle speed factor (default: 1)")
    fly.add_argument("--param", type=_param, action="append", default=[], metavar="NAME=VALUE",
                     help="set a built-in vehicle parameter at start")
    fly.add_argument("--record-dir", type=Path, help="trial record directory (default: runs/<time>-<mission name>)")
    fly.add_argument("--connect-timeout", type=_positive, default=15.0, help="seconds to wait for the autopilot (default: 15)")
    fly.add_argument("--arm", action="store_true",
                     help="allow arming a target that is not the built-in vehicle (a real aircraft may fly!)")
    return parser


def _cmd_sim(args: argparse.Namespace) -> int:
    from px4.sim.realtime import ONBOARD_PORT, SimOptions, serve

    links = args.link or [f"udpout://127.0.0.1:{ONBOARD_PORT + args.instance}"]
    options = SimOptions(profile=args.profile, links=links, speed=args.speed, params=dict(args.param),
                         sysid=1 + args.instance)

    def ready(opened) -> None:
        for link in opened:
            url = link.transport.url
            hint = url.replace("udpout://", "udpin://") if url.startswith("udpout://") else url
            print(f"built-in vehicle on {url}: connect with {hint}", flush=True)

    try:
        asyncio.run(serve(options, on_ready=ready))
    except (ValueError, OSError) as exc:
        print(f"hil sim: {exc}", file=sys.stderr)
        return 2
    return 0


def _cmd_fly(args: argparse.Namespace) -> int:
    from hil.fly import default_record_dir, mission_config, run_trial
    from hil.targets import SimProcessOptions, TargetSpec, builtin_vehicle
    from missions.waypoint import MissionError, load_mission
    from reports.trial_summary import format_summary

    try:
        mission = load_mission(args.mission)
        target = TargetSpec.parse(args.target)
    except (MissionError, ValueError) as exc:
        print(f"hil fly: {exc}", file=sys.stderr)
        return 2
    if not target.simulated and not args.arm:
        print(f"hil fly: refusing to arm {target.name} without --arm: a target other than 'sim' may be a real "
              "aircraft. Add --arm once the area is clear.", file=sys.stderr)
        return 2
    record_dir = args.record_dir or default_record_dir(mission)
    config = mission_config(mission, target=target.name, profile=args.profile, speed=args.speed,
                            params=dict(args.param))

    async def go():
        if target.simulated:
            options = SimProcessOptions(profile=args.profile, speed=args.speed, params=dict(args.param))
            async with builtin_vehicle(options) as sim:
                return await run_trial(sim.url, mission, record_dir, target_name="sim", config=config,
                                       speed_factor=args.speed, connect_timeout=args.connect_timeout,
                                       vehicle_failure=sim.failure)
        return await run_trial(target.name, mission, record_dir, target_name=target.name, config=config,
                               connect_timeout=args.connect_timeout)

    print(f"flying {mission.name} ({len(mission.waypoints)} waypoints, {mission.mode}) on {target.name}...", flush=True)
    result = asyncio.run(go())
    if result.summary is not None:
        print(format_summary(result.outcome, result.summary))
    else:
        print(f"outcome  {result.outcome}")
    if result.reason:
        print(f"reason   {result.reason}")
    print(f"record   {result.record_dir}")
    return 0 if result.outcome == "success" else 1


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level={0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return {"sim": _cmd_sim, "fly": _cmd_fly}[args.verb](args)
