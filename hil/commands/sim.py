"""`hil sim`: run the built-in vehicle standalone so any MAVLink client can connect."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hil.commands.args import (
    bounded_float,
    bounded_int,
    param_assignment,
    positive_float,
    vector,
)
from profiles.perturbation import (
    MAX_GUST_M_S,
    MAX_HEADING_DEG,
    MAX_POSITION_M,
    MAX_WIND_M_S,
    Perturbation,
)
from px4.sim import BUILTIN_AUTOPILOT


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "sim", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="run the built-in vehicle standalone (any MAVLink client can connect)",
        description=f"Run the {BUILTIN_AUTOPILOT} in real time (times --speed). It speaks MAVLink 2 "
                    "as that release's SITL does: by default it sends to 127.0.0.1:14540 (+instance), where MAVSDK "
                    "listens with udpin://127.0.0.1:14540. Stop with Ctrl-C.",
        epilog="examples:\n"
               "  hil sim --profile default --speed 2\n"
               "  hil sim --link udpout://127.0.0.1:14540 --link udpout://127.0.0.1:14550   # offboard + QGC ports\n"
               "  hil sim --link serial:///dev/pts/5:921600                                  # over a serial port\n"
               "  hil sim --param MPC_XY_CRUISE=8 --param COM_OF_LOSS_T=0.5\n"
               "  hil sim --wind 1.5,-0.5,0 --gusts 0.5 --spawn 0.2,0.1 --heading 4 --noise-seed 7   # a campaign "
               "repeat's perturbation")
    parser.add_argument("--link", action="append", metavar="URL",
                     help="where to speak MAVLink: udpout://HOST:PORT (send there), udpin://HOST:PORT (listen), "
                          "serial:///dev/DEV:BAUD or a pyserial URL; repeat for several ports "
                          "(default: udpout://127.0.0.1:14540+instance)")
    parser.add_argument("--gcs-link", action="append", default=[], metavar="URL",
                        help="a ground station's port, with the streams PX4 SITL sends on its own (18570+instance: "
                             "MAVLink's normal mode) instead of its API port's; repeat for several")
    # System ids are 1-255 and the ports 14540+N must stay ports: instances 0-254, as MAV_SYS_ID allows.
    parser.add_argument("--instance", type=bounded_int(0, 254), default=0,
                        help="PX4-style instance number 0-254: adds to the default port and system id")
    parser.add_argument("--profile", default="default", help="vehicle profile name or YAML file (default: %(default)s)")
    parser.add_argument("--speed", type=positive_float, default=1.0, help="simulation speed factor, like PX4_SIM_SPEED_FACTOR (default: 1)")
    parser.add_argument("--max-stream-hz", type=positive_float, default=None, metavar="HZ",
                        help="no telemetry stream faster than HZ messages a wall second (default: 400, so every "
                             "PX4 rate holds up to --speed 4; above that the fastest streams slow in vehicle time "
                             "instead of the whole vehicle falling behind)")
    parser.add_argument("--param", type=param_assignment, action="append", default=[], metavar="NAME=VALUE",
                     help="set a vehicle parameter at start (PX4 names)")
    parser.add_argument("--root", type=Path, metavar="DIR",
                        help="the vehicle's own folder, as PX4 SITL's working directory: its ULogs go to "
                             "DIR/log/DATE/TIME.ulg, and MAVLink FTP serves it (default: a temporary folder)")
    # A campaign's repeats differ by these (profiles.perturbation); the sim target passes a trial's draw.
    parser.add_argument("--noise-seed", type=bounded_int(0, 2**31 - 1), default=0, metavar="N",
                        help="seed of the sensor noise and the gusts (default: 0)")
    parser.add_argument("--wind", type=vector(3, MAX_WIND_M_S), default=(0.0, 0.0, 0.0), metavar="N,E,D",
                        help="steady wind, the air's velocity north, east, down in m/s (default: none)")
    parser.add_argument("--gusts", type=bounded_float(0.0, MAX_GUST_M_S), default=0.0, metavar="M_S",
                        help="gusts on top of the wind, standard deviation per axis in m/s (default: none)")
    parser.add_argument("--spawn", type=vector(2, MAX_POSITION_M), default=(0.0, 0.0), metavar="N,E",
                        help="where the vehicle starts, metres north and east of the origin (default: 0,0)")
    parser.add_argument("--heading", type=bounded_float(-MAX_HEADING_DEG, MAX_HEADING_DEG), default=0.0,
                        metavar="DEG", help="the vehicle's heading at start, degrees from north (default: 0)")

    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from px4.sim.realtime import ONBOARD_PORT, SimOptions
    from targets.sim_server import READY_LINE, serve

    links = args.link or [f"udpout://127.0.0.1:{ONBOARD_PORT + args.instance}"]
    options = SimOptions(profile=args.profile, links=links, gcs_links=args.gcs_link, speed=args.speed,
                         params=dict(args.param),
                         sysid=1 + args.instance, root=args.root)
    if args.max_stream_hz is not None:
        options.max_stream_hz = args.max_stream_hz

    def ready(opened) -> None:
        for link in opened:
            url = link.transport.url
            hint = url.replace("udpout://", "udpin://") if url.startswith("udpout://") else url
            print(f"{READY_LINE}{url}: connect with {hint}", flush=True)

    try:
        asyncio.run(serve(options, on_ready=ready, perturbation=perturbation_of(args)))
    except (ValueError, OSError) as exc:
        print(f"hil sim: {exc}", file=sys.stderr)
        return 2
    return 0


def perturbation_of(args: argparse.Namespace) -> Perturbation:
    """What --noise-seed, --wind, --gusts, --spawn and --heading ask of the vehicle (targets.builtin.sim_command
    writes them for a campaign's trial)."""
    return Perturbation(noise_seed=args.noise_seed, wind_ned=args.wind, gust_m_s=args.gusts, position_ne=args.spawn,
                        heading_deg=args.heading)
