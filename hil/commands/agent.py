"""`hil agent`: the onboard agent, serving trials to a harness on another machine."""

from __future__ import annotations

import argparse
import math
import signal
import sys
import textwrap
from pathlib import Path

from hil import exit_codes
from onboard.agent.protocol import (
    AUTH_TIMEOUT_S,
    DEFAULT_PORT,
    GO_TIMEOUT_S,
    IDLE_TIMEOUT_S,
    MAX_CONNECTIONS,
    REQUEST_MAX_BYTES,
    TOKEN_ENV,
    AgentAddress,
    Limits,
    token_from_env,
)

TOKEN_HOLDER = (
    "what a token holder can do: run, one trial at a time, a planner this agent serves (the packaged reference "
    "planners, and what --planner-package and --planner name: their code runs here, as this user) with a compute "
    "profile it serves (packaged, or in --compute-dir), against the flight controller the job names (a MAVLink "
    "connection string: a UDP port, a TCP address, a serial device this user can open), and fly it as the planner "
    "commands, holding the one trial slot while it runs (and up to --go-timeout before it starts). A job naming any other module or file is refused before it is imported or read, with the same "
    "answer whether it exists or not.")
STRANGER = (
    "what a stranger can do: open connections, which the agent drops after --auth-timeout without the token, or "
    f"after {REQUEST_MAX_BYTES // 1024} KiB without a newline; beyond --max-connections, or half of them from one "
    "address, it closes them at once, so strangers on one machine leave a harness on another room. Strangers on "
    "several machines, or on the harness's own, can hold every place for as long as they keep connecting, while the "
    "harness retries (as for a rebooting board): listen only where the lab's harnesses are (--listen), and keep "
    "the token secret.")
SAFETY = (
    "safety: the agent flies nothing by itself. It commands offboard setpoints only during a trial's navigation "
    "phase, after the harness armed the vehicle and took it to the start, and it holds the vehicle when the harness "
    "goes away.")
MAX_CONNECTIONS_LIMIT = 1024  # each connection is a socket and a task: beyond this, a typo
SECONDS_LIMIT = 86400.0  # a day: beyond this, a typo


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "agent", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="serve trials on the companion computer: the planner runs here, the harness drives it",
        description="Run on the companion computer (a Jetson, say). A campaign whose `onboards:` names this "
                    "agent's address sends it each trial's planner and task; the agent connects to the flight "
                    "controller over MAVLink, runs the planner loop when the harness has flown the vehicle to the "
                    "start, and sends back every stage's timing on this board's clock, which the harness aligns "
                    "with its own and merges into the trial record. One trial runs at a time. Only a harness "
                    f"presenting the agent's token is served: set {TOKEN_ENV} on both sides (or --token-file here).",
        epilog="examples:\n"
               f"  {TOKEN_ENV}=s3cret hil agent                       # on 127.0.0.1:{DEFAULT_PORT}\n"
               f"  hil agent --listen 192.168.1.20:{DEFAULT_PORT} --token-file ~/.hil-token   # reachable from the lab\n"
               "  hil agent --planner-package mylab.planners --compute-dir ~/boards   # the lab's planners, profiles\n"
               "  then, on the desktop, a campaign with\n"
               f"      targets: [sim]\n      onboards: [local, 192.168.1.20:{DEFAULT_PORT}]\n"
               "  compares the planner on the desktop with the same planner on the board.\n\n"
               + "\n\n".join(textwrap.fill(text, 100) for text in (TOKEN_HOLDER, STRANGER, SAFETY)))
    parser.add_argument("--listen", type=_address, default=AgentAddress("127.0.0.1", DEFAULT_PORT),
                        metavar="HOST:PORT", help=f"where to listen (default: 127.0.0.1:{DEFAULT_PORT}, this machine "
                                                  "only; name an address to be reachable; port 0: any free port)")
    parser.add_argument("--token-file", type=Path, metavar="FILE",
                        help=f"the shared token, the file's first line (default: ${TOKEN_ENV})")
    parser.add_argument("--clock-offset-ms", type=_finite, default=0.0, metavar="MS",
                        help="add MS to every time this agent reports: stands in for a board with a clock of its "
                             "own when agent and harness share a machine (to check the alignment)")
    served = parser.add_argument_group("what a job may name (checked before anything is imported or read)")
    served.add_argument("--planner-package", action="append", default=[], type=_package, metavar="PKG",
                        help="serve the planner classes of this Python package and its subpackages (repeatable; "
                             "the packaged reference planners, onboard.planners, are always served). Its code runs "
                             "on this board when a job names it: name only your own")
    served.add_argument("--planner", action="append", default=[], type=_class, metavar="MODULE:CLASS",
                        help="serve this one planner class (repeatable)")
    served.add_argument("--compute-dir", type=Path, metavar="DIR",
                        help="also serve the compute profiles DIR/*.yaml, each by the name inside it (every one is "
                             "checked at start; the packaged profiles are always served)")
    limits = parser.add_argument_group("what a connection gets (a lab network has strangers on it)")
    limits.add_argument("--max-connections", type=_count, default=MAX_CONNECTIONS, metavar="N",
                        help=f"connections served at once, strangers included (default: {MAX_CONNECTIONS}), at most half "
                             "of them from any one address before its hello; more are answered busy and closed, and "
                             "the harness retries. Raise it for more campaign workers on this board than that")
    limits.add_argument("--auth-timeout", type=_seconds, default=AUTH_TIMEOUT_S, metavar="S",
                        help=f"seconds a new connection has to present the token (default: {AUTH_TIMEOUT_S:g}); a "
                             "harness does at once, so this is what a silent stranger costs. Raise it over a slow link")
    limits.add_argument("--idle-timeout", type=_seconds, default=IDLE_TIMEOUT_S, metavar="S",
                        help=f"seconds a harness may neither send nor read outside a trial's run before it is "
                             f"dropped (default: {IDLE_TIMEOUT_S:g})")
    limits.add_argument("--go-timeout", type=_seconds, default=GO_TIMEOUT_S, metavar="S",
                        help=f"seconds from ready (the board is on the flight controller) to go (the vehicle is at the "
                             f"start), during which the trial slot is held (default: {GO_TIMEOUT_S:g}). Raise it for "
                             "a vehicle slow to arm and climb, at 1x on hardware")
    parser.set_defaults(func=run)


def _address(text: str) -> AgentAddress:
    try:
        return AgentAddress.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _package(text: str) -> str:
    from onboard.agent.server import is_module_name

    if not is_module_name(text):
        raise argparse.ArgumentTypeError(f"expected a Python package name such as mylab.planners, got {text!r}")
    return text


def _class(text: str) -> str:
    from onboard.agent.server import is_class_name

    if not is_class_name(text):
        raise argparse.ArgumentTypeError(f"expected a planner class as module:Class, such as "
                                         f"mylab.planners.rrt:RrtPlanner, got {text!r}")
    return text


def _count(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_CONNECTIONS_LIMIT:
        raise argparse.ArgumentTypeError(f"expected a whole number 1-{MAX_CONNECTIONS_LIMIT}, got {text!r}")
    return int(text)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= SECONDS_LIMIT:
        raise argparse.ArgumentTypeError(f"expected seconds, a number > 0 and <= {SECONDS_LIMIT:g}, got {text!r}")
    return value


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or abs(value) > 1e12:
        raise argparse.ArgumentTypeError(f"expected milliseconds, a finite number, got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    import asyncio

    from onboard.agent.server import served

    token = _token(args)
    if token is None:
        return exit_codes.USAGE
    try:
        serves = served(args.planner_package, args.planner, args.compute_dir)
    except ValueError as exc:  # a ConfigError too: a compute profile that does not load
        print(f"hil agent: {exc}", file=sys.stderr)
        return exit_codes.USAGE
    try:
        return asyncio.run(_serve(args, token, serves))
    except OSError as exc:  # the address is taken or not this machine's
        print(f"hil agent: cannot listen on {args.listen}: {exc.strerror or exc}", file=sys.stderr)
        return exit_codes.USAGE


def _token(args: argparse.Namespace) -> str | None:
    if args.token_file is None:
        token = token_from_env()
        if token is None:
            print(f"hil agent: no token: set {TOKEN_ENV} or give --token-file (harnesses must present it)",
                  file=sys.stderr)
        return token
    from config.errors import ConfigError
    from config.loading import read_text

    try:  # a regular file only: a FIFO or a device given here would block the agent's start for good
        lines = read_text(args.token_file, "token file (the token on its first line)", 4096).splitlines()
    except ConfigError as exc:
        print(f"hil agent: --token-file {exc}", file=sys.stderr)
        return None
    token = lines[0].strip() if lines else ""
    if not token:
        print(f"hil agent: --token-file {args.token_file}: expected the token on its first line, got an empty line",
              file=sys.stderr)
        return None
    return token


async def _serve(args: argparse.Namespace, token: str, serves) -> int:
    import asyncio

    from onboard.agent.clock import BoardClock
    from onboard.agent.server import Agent

    limits = Limits(args.max_connections, args.auth_timeout, args.idle_timeout, args.go_timeout)
    agent = Agent(token, BoardClock(round(args.clock_offset_ms * 1e6)), limits, serves)
    server = await agent.start(args.listen.host, args.listen.port)
    port = server.sockets[0].getsockname()[1]
    print(f"agent listening on {AgentAddress(args.listen.host, port)}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()
    print(f"agent stopped after {agent.trials} trial(s)", flush=True)
    return exit_codes.OK
