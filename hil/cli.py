"""The `hil` command: one verb per job (DESIGN.md, "The command line"); each verb is a module of hil.commands."""

from __future__ import annotations

import argparse
import importlib
import logging

# Verbs, in the order `hil --help` lists them.
COMMAND_MODULES = (
    "hil.commands.sim",
    "hil.commands.fly",
    "hil.commands.run",
    "hil.commands.report",
    "hil.commands.scene",
    "hil.commands.link",
    "hil.commands.profiles",
    "hil.commands.onboard",
    "hil.commands.profile",
)

TOUR = """\
examples:
  hil sim                                   run the built-in vehicle; connect MAVSDK/QGC to udpin://127.0.0.1:14540
  hil fly missions/examples/demo_square.yaml                 fly a mission on the built-in vehicle, write a trial record
  hil fly MISSION.yaml --target udpin://0.0.0.0:14540 --arm  fly on an autopilot that is already running
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hil", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Hardware-in-the-loop harness for quadrotor navigation: fly missions on the built-in "
                    "PX4-compatible vehicle, PX4 SITL or a real PX4, and record every trial.",
        epilog=TOUR)
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more log output (-v: info, -vv: debug, MAVSDK's own log included)")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_parser(verbs)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level={0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return args.func(args)
