"""The `hil` command: one verb per job (README.md, "A short tour"); each verb is a module of hil.commands."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import json
import logging
import math
import sys

from hil import exit_codes, version
from records.atomic import refusal
from records.claim import DirectoryTaken

# Verbs, in the order `hil --help` lists them.
COMMAND_MODULES = (
    "hil.commands.sim",
    "hil.commands.fly",
    "hil.commands.mission",
    "hil.commands.run",
    "hil.commands.report",
    "hil.commands.scene",
    "hil.commands.link",
    "hil.commands.profiles",
    "hil.commands.onboard",
    "hil.commands.agent",
    "hil.commands.timing",
    "hil.commands.completion",
)

TOUR = """\
examples:
  hil sim                                   run the built-in vehicle; connect MAVSDK/QGC to udpin://127.0.0.1:14540
  hil fly missions/examples/demo_square.yaml                 fly a mission on the built-in vehicle, write a trial record
  hil fly MISSION.yaml --target serial:///dev/ttyACM0:921600 --arm --dry-run   a real aircraft: checks, no arming
  hil run hil/campaigns/demo.yaml --out runs/demo            a campaign (resumable), then:
  hil report runs/demo                                       its report (HTML + Markdown)
  hil scene show forest --seed 3                             look at a benchmark scene
  hil agent --listen 192.168.1.20:7780                       on the companion computer: campaigns fly planners there
  pytest tests/hil --hil-target lockstep                     the example HIL test suite (pytest plugin)

every verb has --help with its own examples; safety: a target other than sim/px4-sitl is a real
aircraft, and nothing arms without --arm.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hil", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Hardware-in-the-loop harness for quadrotor navigation: fly missions on the built-in "
                    "PX4-compatible vehicle, PX4 SITL or a real PX4, and record every trial.",
        epilog=TOUR + "\n" + exit_codes.HELP)
    parser.add_argument("--version", action="version", version=f"hil (quad-hil) {version()}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more log output (-v: info, -vv: debug, MAVSDK's own log included)")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_parser(verbs)
    _verbose_anywhere(verbs)
    return parser


def _verbose_anywhere(verbs: argparse._SubParsersAction) -> None:
    """-v also after the verb (`hil fly -v ...`, `hil profiles list -v`), counted with any before it."""
    for sub in {id(p): p for p in verbs.choices.values()}.values():  # an alias shares its verb's parser
        sub.add_argument("-v", "--verbose", action="count", dest="verbose_after", default=argparse.SUPPRESS,
                         help="more log output (-v: info, -vv: debug)")
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):
                _verbose_anywhere(action)


def _unknown_verb(argv: list[str], parser: argparse.ArgumentParser) -> str | None:
    """A did-you-mean for a mistyped verb (argparse only lists the choices)."""
    words = [a for a in argv if not a.startswith("-")]
    verbs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    if not words or words[0] in verbs:
        return None
    close = difflib.get_close_matches(words[0], verbs, n=1)
    return (f"hil: no verb {words[0]!r}" + (f"; did you mean {close[0]!r}?" if close else "")
            + f" (verbs: {', '.join(verbs)}; hil --help teaches them)")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    unknown = _unknown_verb(argv, parser)
    if unknown:
        print(unknown, file=sys.stderr)
        return exit_codes.USAGE
    args = parser.parse_args(argv)
    args.verbose += getattr(args, "verbose_after", 0)
    logging.basicConfig(level={0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        if not getattr(args, "json", False):
            return args.func(args)
        # For scripts: stdout holds one JSON object (what the verb put in args.result, and its exit
        # code); everything a person would read goes to stderr.
        with contextlib.redirect_stdout(sys.stderr):
            code = args.func(args)
        print(json.dumps(_json_safe({**getattr(args, "result", {}), "exit_code": code}), default=str))
        return code
    except KeyboardInterrupt:  # Ctrl-C before a verb's own handling (connecting, starting PX4...)
        print(f"hil {args.verb}: interrupted", file=sys.stderr)
        return exit_codes.INTERRUPTED
    except DirectoryTaken as exc:  # a record directory that is another writer's, or holds a record already
        print(f"hil {args.verb}: {exc}", file=sys.stderr)
        return exit_codes.USAGE
    except OSError as exc:  # a full disk, a read-only one: the machine, not the flight or the command line
        refused = refusal(exc)
        if refused is None:
            raise
        print(f"hil {args.verb}: {refused}", file=sys.stderr)
        return exit_codes.ERROR


def _json_safe(value):
    """NaN and infinities as null: strict JSON parsers (jq, JavaScript) refuse them."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value
