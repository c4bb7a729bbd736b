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


class UsageError(Exception):
    """A command line that cannot run (exit 2): `message` is the one line that says why, `usage` what argparse
    prints before it ("" for the did-you-means, which say all that is needed)."""

    def __init__(self, message: str, usage: str = "") -> None:
        super().__init__(message)
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    """argparse, raising its errors instead of printing them and exiting, so that --json can carry them too."""

    def error(self, message: str):
        raise UsageError(f"{self.prog}: error: {message}", self.format_usage())


class _VersionAction(argparse._VersionAction):
    """argparse's --version, reading the installed version only when asked for: the package metadata costs
    every other command line tens of milliseconds."""

    def __call__(self, parser, namespace, values, option_string=None):
        self.version = f"hil (quad-hil) {version()}"
        super().__call__(parser, namespace, values, option_string)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="hil", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Hardware-in-the-loop harness for quadrotor navigation: fly missions on the built-in "
                    "PX4-compatible vehicle, PX4 SITL or a real PX4, and record every trial.",
        epilog=TOUR + "\n" + exit_codes.HELP)
    parser.add_argument("--version", action=_VersionAction)
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


def _unknown_option(extra: list[str], parser: argparse.ArgumentParser) -> str:
    """What is wrong with the words a verb did not take, with a did-you-mean for a mistyped option (argparse
    would name the words under the top-level usage)."""
    word = next((w for w in extra if w.startswith("-")), None)
    if word is None:
        return f"{parser.prog}: unexpected argument {extra[0]!r} ({parser.prog} --help says what it takes)"
    name = word.split("=", 1)[0]
    close = difflib.get_close_matches(name, [o for a in parser._actions for o in a.option_strings], n=1)
    return f"{parser.prog}: unknown option {name}" + (
        f"; did you mean {close[0]}?" if close else f" ({parser.prog} --help lists the options)")


def _chosen_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the verb the command line chose, or of its action (`hil mission check`)."""
    while True:
        verbs = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        if verbs is None:
            return parser
        parser = verbs.choices[getattr(args, verbs.dest)]


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    unknown = _unknown_verb(argv, parser)
    if unknown:
        raise UsageError(unknown)
    args, extra = parser.parse_known_args(argv)
    if extra:
        raise UsageError(_unknown_option(extra, _chosen_parser(parser, args)))
    return args


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = _parse(parser, argv)
    except UsageError as exc:
        print(exc.usage + str(exc), file=sys.stderr)
        if "--json" in argv:  # what was asked for, although the line did not parse
            print(json.dumps({"exit_code": exit_codes.USAGE, "error": str(exc)}))
        return exit_codes.USAGE
    args.verbose += getattr(args, "verbose_after", 0)
    logging.basicConfig(level={0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not getattr(args, "json", False):
        return _run_verb(args)
    # For scripts: stdout holds one JSON object (what the verb put in args.result, its exit code, and the
    # reason it gave when it failed); everything a person would read goes to stderr.
    # A verb's module is named after it, and its errors name it so, whichever alias was typed (`hil profile`).
    said = _ErrorsSaid(sys.stderr, f"hil {args.func.__module__.rsplit('.', 1)[-1]}: ")
    with contextlib.redirect_stdout(sys.stderr), contextlib.redirect_stderr(said):
        code = _run_verb(args)
    result = {**getattr(args, "result", {}), "exit_code": code}
    if code != exit_codes.OK and said.errors:
        result["error"] = "\n".join(said.errors)
    print(json.dumps(_json_safe(result), default=str))
    return code


class _ErrorsSaid:
    """stderr, keeping the errors a verb reports on it. Every verb says an error in one print of
    `hil VERB: ...` (a warning as `hil VERB: warning: ...`), which reaches here as one write."""

    def __init__(self, stream, prefix: str) -> None:
        self.stream, self.prefix, self.errors = stream, prefix, []

    def write(self, text: str) -> int:
        if text.startswith(self.prefix) and not text.startswith(self.prefix + "warning:"):
            self.errors.append(text)
        return self.stream.write(text)

    def __getattr__(self, name: str):  # flush, fileno, isatty...: the stream's own
        return getattr(self.stream, name)


def _run_verb(args: argparse.Namespace) -> int:
    try:
        return args.func(args)
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
