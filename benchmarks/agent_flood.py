"""Strangers flooding the onboard agent while a harness asks to be served.

Starts `hil agent` on loopback with its default limits and times the harness's own client
(`hil.agent_client.AgentSession.connect`: connect, present the token, a burst of clock pings) with no
one else around. Then N strangers, all on one other machine (127.0.0.2: loopback answers to all of
127/8), each send a line that never ends, connecting again whenever the agent cuts one off, for D
seconds; a quarter of the way in, the harness asks again. Prints, each beside its goal:

* the agent's resident memory over its idle level, at its peak during the flood (VmRSS of
  /proc/PID/status every 10 ms; goal < 20 MB; the agent used to read 64 MiB of a stranger's line and
  hold it: 8 strangers took it from 211 to 699 MB);
* how long the harness waited under the flood (goal < 3 s, served while the flood goes on), and that
  over its wait without;
* what the strangers did: connections, megabytes sent, and the agent's CPU seconds spent on them.

    python benchmarks/agent_flood.py [--strangers 32] [--seconds 10] [--stranger-address 127.0.0.2]

(`--stranger-address 127.0.0.1`: the strangers on the harness's own machine, where nothing tells them
apart before their hello: the harness then waits for a place like any of them.)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.onboard_agent import start_agent  # noqa: E402
from benchmarks.quick import parse_args  # noqa: E402
from hil.agent_client import AgentSession, RemoteOnboard  # noqa: E402
from onboard.agent.protocol import MAX_CONNECTIONS, AgentAddress  # noqa: E402

RSS_GOAL_MB = 20.0
SERVED_GOAL_S = 3.0
CHUNK = b"x" * (1024 * 1024)  # a stranger's line, a megabyte at a time, never a newline
STRANGER_ADDRESS = "127.0.0.2"  # not the harness's


@dataclass(frozen=True)
class Flood:
    """What one flood did to the agent, and how the harness fared."""

    idle_mb: float  # the agent's resident memory before the flood
    peak_mb: float  # and at its highest during it
    quiet_s: float  # the harness served, no flood
    served_s: float  # the harness served, under the flood
    served_during_flood: bool
    connections: int  # the strangers'
    megabytes: float  # sent by the strangers (into the kernel's buffers; the agent read at most a few KiB each)
    cpu_s: float  # the agent's, during the flood


def rss_mb(pid: int) -> float:
    """Resident memory of a process, from /proc/PID/status (VmRSS, kB)."""
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def peak_rss_mb(pid: int, until: float) -> float:
    peak = 0.0
    while time.monotonic() < until:
        peak = max(peak, rss_mb(pid))
        time.sleep(0.01)
    return peak


def stranger(port: int, until: float, address: str) -> tuple[int, int]:
    """From `address`, send a line that never ends until `until`, connecting again each time the agent cuts
    it off; (connections, bytes sent)."""
    connections = sent = 0
    while time.monotonic() < until:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=10,
                                                                    source_address=(address, 0)) as connection:
            connections += 1
            while time.monotonic() < until:
                connection.sendall(CHUNK)
                sent += len(CHUNK)
    return connections, sent


async def served_in(port: int, token: str) -> float:
    """Seconds the harness's client takes to be served: connect (again while busy), hello, clock pings."""
    session = AgentSession(RemoteOnboard(AgentAddress("127.0.0.1", port), "udpin://127.0.0.1:1", token), None)
    started = time.monotonic()
    try:
        await session.connect()
    finally:
        await session.close()
    return time.monotonic() - started


async def measure(pid: int, port: int, token: str, strangers: int, seconds: float,
                  address: str = STRANGER_ADDRESS) -> Flood:
    """Flood the agent (process `pid`, on `port`) with `strangers` from `address` for `seconds`; a harness
    (from 127.0.0.1) asks a quarter of the way in."""
    quiet = await served_in(port, token)
    idle = rss_mb(pid)
    agent = psutil.Process(pid)
    cpu = sum(agent.cpu_times()[:2])
    until = time.monotonic() + seconds
    with ThreadPoolExecutor(strangers + 1) as pool:
        floods = [pool.submit(stranger, port, until, address) for _ in range(strangers)]
        peak = pool.submit(peak_rss_mb, pid, until)
        await asyncio.sleep(seconds / 4)
        served = await served_in(port, token)
        during = time.monotonic() < until
        counts = [flood.result() for flood in floods]
    return Flood(idle, max(idle, peak.result()), quiet, served, during, sum(c for c, _ in counts),
                 sum(b for _, b in counts) / 1e6, sum(agent.cpu_times()[:2]) - cpu)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--strangers", type=int, default=32, help="connections flooding at once (the agent keeps "
                                                                   f"{MAX_CONNECTIONS})")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long the flood lasts")
    parser.add_argument("--stranger-address", default=STRANGER_ADDRESS, metavar="127.X.Y.Z",
                        help="the strangers' machine (127.0.0.1: the harness's own)")
    args = parse_args(parser, {"strangers": 16, "seconds": 4.0}, argv)
    token = secrets.token_hex(16)
    agent, port = start_agent(token)
    try:
        flood = asyncio.run(measure(agent.pid, port, token, args.strangers, args.seconds, args.stranger_address))
        alive = agent.poll() is None
    finally:
        agent.terminate()
        agent.wait(10)
    growth = flood.peak_mb - flood.idle_mb
    print(f"{args.strangers} strangers on {args.stranger_address} for {args.seconds:g} s against an agent keeping "
          f"{MAX_CONNECTIONS} connections (half of them per address before the hello), the harness on 127.0.0.1; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    print(f"strangers: {flood.connections} connections, {flood.megabytes:,.0f} MB written (into the kernel's socket "
          f"buffers: the agent reads a few KiB of each); agent CPU {flood.cpu_s:.1f} s "
          f"({100 * flood.cpu_s / args.seconds:.0f} % of one core); agent alive after: {alive}")
    print(f"agent RSS: {flood.idle_mb:.1f} MB idle, {flood.peak_mb:.1f} MB at the flood's peak: {growth:+.1f} MB "
          f"(goal < {RSS_GOAL_MB:g} MB; {growth / args.strangers * 1024:.0f} KiB per stranger)")
    print(f"harness served in {flood.served_s:.2f} s under the flood"
          f"{'' if flood.served_during_flood else ' (after it ended)'} (goal < {SERVED_GOAL_S:g} s, during it), "
          f"{flood.quiet_s:.2f} s without: {flood.served_s / flood.quiet_s:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
