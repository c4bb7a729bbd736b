"""`hil agent`: the onboard agent, serving trials to a harness on another machine."""

from __future__ import annotations

import argparse
import asyncio
import math
import signal
import sys
from pathlib import Path

from hil import exit_codes
from onboard.agent.protocol import DEFAULT_PORT, TOKEN_ENV, AgentAddress, token_from_env


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
               "  then, on the desktop, a campaign with\n"
               f"      targets: [sim]\n      onboards: [local, 192.168.1.20:{DEFAULT_PORT}]\n"
               "  compares the planner on the desktop with the same planner on the board.\n"
               "\nsafety: the agent flies nothing by itself. It commands offboard setpoints only during a trial's "
               "navigation phase, after the harness armed the vehicle and took it to the start, and it holds the "
               "vehicle when the harness goes away.")
    parser.add_argument("--listen", type=_address, default=AgentAddress("127.0.0.1", DEFAULT_PORT),
                        metavar="HOST:PORT", help=f"where to listen (default: 127.0.0.1:{DEFAULT_PORT}, this machine "
                                                  "only; name an address to be reachable; port 0: any free port)")
    parser.add_argument("--token-file", type=Path, metavar="FILE",
                        help=f"the shared token, the file's first line (default: ${TOKEN_ENV})")
    parser.add_argument("--clock-offset-ms", type=_finite, default=0.0, metavar="MS",
                        help="add MS to every time this agent reports: stands in for a board with a clock of its "
                             "own when agent and harness share a machine (to check the alignment)")
    parser.set_defaults(func=run)


def _address(text: str) -> AgentAddress:
    try:
        return AgentAddress.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or abs(value) > 1e12:
        raise argparse.ArgumentTypeError(f"expected milliseconds, a finite number, got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    token = _token(args)
    if token is None:
        return exit_codes.USAGE
    try:
        return asyncio.run(_serve(args, token))
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
    try:
        with open(args.token_file, "rb") as file:
            lines = file.read(4096).decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"hil agent: --token-file {args.token_file}: expected a readable UTF-8 file whose first line is the "
              f"token ({exc.__class__.__name__})", file=sys.stderr)
        return None
    token = lines[0].strip() if lines else ""
    if not token:
        print(f"hil agent: --token-file {args.token_file}: expected the token on its first line, got an empty line",
              file=sys.stderr)
        return None
    return token


async def _serve(args: argparse.Namespace, token: str) -> int:
    from onboard.agent.clock import BoardClock
    from onboard.agent.server import Agent

    agent = Agent(token, BoardClock(round(args.clock_offset_ms * 1e6)))
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
