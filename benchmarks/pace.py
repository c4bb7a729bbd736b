"""Does the built-in vehicle keep its pace where PX4 SITL keeps its own? Kept speed and command latency,
with and without CPU burners (issue 31).

For each speed factor, with no burners and then with `--burners` processes spinning (`while True: pass`,
started and ended here, in this script's session as burners started from the harness's shell are), starts the built-in vehicle (`hil sim`, as the `sim` target does) and PX4 SITL
(SIH, as the `px4-sitl` target does: PX4_DIR or --px4-dir), one after the other, and on each one's API
link, as a plain client: arms, takes off (the autopilot's own take-off) and waits for HOLD, then over
`--window` wall seconds of hovering measures

- kept: the autopilot's own clock (ATTITUDE.time_boot_ms) over the wall clock, divided by the speed
  factor (1.00: it kept the pace it was given);
- ACK p50 / p99: wall time from sending MAV_CMD_REQUEST_MESSAGE (AUTOPILOT_VERSION) to its COMMAND_ACK,
  one request in flight at a time, ACK_HZ a second; `lost`: no ACK within ACK_TIMEOUT_S;
- behind: the "falling behind" status texts the client got during the window.

Goal: the built-in vehicle keeps at least PX4's fraction at every factor and load (within KEPT_SLACK,
the stamp and scheduling jitter of a window). The machine may be shared: the load average is printed.

PX4 SITL asks for real-time priorities for its threads (SCHED_FIFO: SIH and its work queues at 99, its
MAVLink threads at 50), and gets them where it may, as root: they then run before every ordinary process,
burners included. The built-in vehicle is an ordinary process. The last line says how many threads of
each were real-time. To compare the two as a user without that privilege runs them (PX4 then runs every
thread in SCHED_OTHER, as the built-in vehicle does), take CAP_SYS_NICE away:

    PX4_DIR=../shared/px4/v1.16.1 python benchmarks/pace.py [--speeds 1,2,4] [--burners 2] [--window 10]
    setpriv --bounding-set -sys_nice --inh-caps -sys_nice python benchmarks/pace.py
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import AsyncIterator, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere in the repo

from pymavlink.dialects.v20 import common as mavlink  # noqa: E402

from benchmarks.quick import parse_args  # noqa: E402
from bridges.mavlink_frames import FrameSplitter  # noqa: E402
from px4.modes import FlightMode, decode_custom_mode  # noqa: E402
from px4.process import die_with_parent  # noqa: E402
from px4.sitl import Px4Build, Px4NotFound, SitlOptions, px4_sitl  # noqa: E402
from targets.builtin import SimProcessOptions, builtin_vehicle  # noqa: E402

ACK_HZ = 5.0
ACK_TIMEOUT_S = 2.0
KEPT_SLACK = 0.01
# Only these are decoded; the rest of the streams (about 2000 messages a wall second from PX4 at 4x) are only
# split into frames, so that the client's own parsing competes as little as it can with the vehicle's CPU.
WANTED = {mavlink.MAVLINK_MSG_ID_HEARTBEAT, mavlink.MAVLINK_MSG_ID_SYS_STATUS, mavlink.MAVLINK_MSG_ID_ATTITUDE,
          mavlink.MAVLINK_MSG_ID_COMMAND_ACK, mavlink.MAVLINK_MSG_ID_STATUSTEXT}
# Generous: PX4 under burners at 1x takes several wall seconds to be armable, and the climb takes more.
READY_TIMEOUT_S = 120.0
BURNER = "while True: pass"
# PX4 disarms 10 vehicle seconds after arming without a take-off: 2.5 wall seconds at 4x, less than a loaded
# machine may take between the arm's ACK and the take-off's. A negative value turns that off (both vehicles).
PARAMS = {"COM_DISARM_PRFLT": -1.0}


class BenchError(RuntimeError):
    """The autopilot did not get to the hover the measurement needs."""


@dataclass
class Pace:
    """One target at one speed factor and load."""

    kept: float = math.nan
    acks_ms: list[float] = field(default_factory=list)
    lost: int = 0
    behind: int = 0
    realtime: tuple[int, int] = (0, 0)  # threads in a real-time scheduling class, of all its threads
    error: str = ""

    def quantile(self, q: int) -> float:
        if len(self.acks_ms) < 2:
            return self.acks_ms[0] if self.acks_ms else math.nan
        return statistics.quantiles(self.acks_ms, n=100, method="inclusive")[q - 1]


class Client:
    """A ground station's side of the API link (the autopilot sends to `port`), decoding only WANTED."""

    def __init__(self, port: int):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.sock.bind(("127.0.0.1", port))
        self.mav = mavlink.MAVLink(None, srcSystem=245, srcComponent=190)
        self.splitter = FrameSplitter(check_crc=False)
        self.peer: tuple[str, int] | None = None
        self.target = (1, 1)
        self.beat_sent = 0.0

    def close(self) -> None:
        self.sock.close()

    def send(self, msg) -> None:
        if self.peer is not None:
            self.sock.sendto(msg.pack(self.mav), self.peer)
            self.mav.seq = (self.mav.seq + 1) % 256

    def command(self, command: int, *params: float) -> None:
        p = list(params) + [0.0] * (7 - len(params))
        self.send(mavlink.MAVLink_command_long_message(*self.target, command, 0, *p))

    def poll(self, timeout: float) -> list[tuple[float, object]]:
        """(arrival, message) of the WANTED messages in the next datagram, waiting up to `timeout` for one."""
        if time.monotonic() - self.beat_sent > 1.0:  # a ground station's heartbeat, as QGC sends it
            self.send(mavlink.MAVLink_heartbeat_message(mavlink.MAV_TYPE_GCS, mavlink.MAV_AUTOPILOT_INVALID, 0, 0, 0, 3))
            self.beat_sent = time.monotonic()
        self.sock.settimeout(max(timeout, 1e-4))
        try:
            data, addr = self.sock.recvfrom(65536)
        except (TimeoutError, socket.timeout):
            return []
        now = time.monotonic()
        self.peer = addr
        out = []
        for frame in self.splitter.feed(data) + self.splitter.flush():
            if frame.msgid in WANTED:
                with contextlib.suppress(mavlink.MAVError):
                    msg = self.mav.decode(bytearray(frame.data))
                    if frame.msgid == mavlink.MAVLINK_MSG_ID_HEARTBEAT:
                        self.target = (frame.sysid, frame.compid)
                    out.append((now, msg))
        return out

    def wait(self, what: str, timeout: float, condition) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(condition(msg) for _, msg in self.poll(0.05)):
                return
        raise BenchError(f"{what} not within {timeout:g} s")


def armable(msg) -> bool:
    return msg.get_type() == "SYS_STATUS" and bool(msg.onboard_control_sensors_health & mavlink.MAV_SYS_STATUS_PREARM_CHECK)


def hovering(msg) -> bool:
    return (msg.get_type() == "HEARTBEAT" and bool(msg.base_mode & mavlink.MAV_MODE_FLAG_SAFETY_ARMED)
            and decode_custom_mode(msg.custom_mode) == FlightMode.HOLD)


def acked(msg, command: int) -> bool:
    return msg.get_type() == "COMMAND_ACK" and msg.command == command and msg.result == mavlink.MAV_RESULT_ACCEPTED


def take_off(client: Client) -> None:
    """Armed, taken off (the autopilot's own take-off to MIS_TAKEOFF_ALT) and hovering in HOLD."""
    client.wait("a HEARTBEAT", READY_TIMEOUT_S, lambda m: m.get_type() == "HEARTBEAT")
    client.wait("armable (SYS_STATUS pre-arm check)", READY_TIMEOUT_S, armable)
    nan = math.nan
    for command, params in ((mavlink.MAV_CMD_COMPONENT_ARM_DISARM, (1,)),
                            (mavlink.MAV_CMD_NAV_TAKEOFF, (0, 0, 0, nan, nan, nan, nan))):
        for _ in range(10):
            client.command(command, *params)
            with contextlib.suppress(BenchError):
                client.wait(f"COMMAND_ACK {command}", 2.0, lambda m, c=command: acked(m, c))
                break
        else:
            raise BenchError(f"command {command} never accepted")
    client.wait("HOLD after the take-off", READY_TIMEOUT_S, hovering)


def measure(port: int, speed: float, window_s: float) -> Pace:
    """Take off, then measure the pace kept and the command round trips over `window_s` wall seconds."""
    client = Client(port)
    try:
        take_off(client)
        pace = Pace()
        first = last = None  # (arrival, time_boot_ms)
        start = time.monotonic()
        end = start + window_s
        next_request, pending = start, None
        while (now := time.monotonic()) < end:
            if pending is None and now >= next_request:
                client.command(mavlink.MAV_CMD_REQUEST_MESSAGE, mavlink.MAVLINK_MSG_ID_AUTOPILOT_VERSION)
                pending, next_request = now, now + 1.0 / ACK_HZ
            elif pending is not None and now - pending > ACK_TIMEOUT_S:
                pace.lost += 1
                pending = None
            for arrival, msg in client.poll(min(0.05, end - now)):
                kind = msg.get_type()
                if kind == "ATTITUDE":
                    last = (arrival, msg.time_boot_ms)
                    first = first or last
                elif kind == "COMMAND_ACK" and msg.command == mavlink.MAV_CMD_REQUEST_MESSAGE and pending is not None:
                    pace.acks_ms.append((arrival - pending) * 1000.0)
                    pending = None
                elif kind == "STATUSTEXT" and "falling behind" in msg.text.lower():
                    pace.behind += 1
        if first is None or last[0] <= first[0]:
            raise BenchError("no ATTITUDE stream during the window")
        pace.kept = (last[1] - first[1]) / 1000.0 / (last[0] - first[0]) / speed
        return pace
    finally:
        client.close()


@contextlib.contextmanager
def burners(count: int) -> Iterator[None]:
    """`count` processes that each keep a core busy, for the block."""
    procs = [subprocess.Popen([sys.executable, "-c", BURNER], preexec_fn=die_with_parent) for _ in range(count)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


@contextlib.asynccontextmanager
async def started(target: str, speed: float, px4_dir: str | None) -> AsyncIterator[tuple[int, int]]:
    """The target running at `speed`; yields the UDP port its API link sends to and its process id."""
    if target == "builtin":
        async with builtin_vehicle(SimProcessOptions(speed=speed, params=PARAMS)) as sim:
            yield int(sim.url.rsplit(":", 1)[1]), sim.proc.pid
    else:
        async with px4_sitl(SitlOptions(speed=speed, px4_dir=px4_dir, params=PARAMS)) as sitl:
            yield sitl.ports.offboard_remote, sitl.proc.pid


def realtime_threads(pid: int) -> tuple[int, int]:
    """(threads of process `pid` in SCHED_FIFO or SCHED_RR, all its threads). PX4 SITL puts most of its
    threads there when it may (as root: CAP_SYS_NICE), and they then run before any other process's."""
    classes = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            classes.append(os.sched_getscheduler(int(tid)))
    return sum(c in (os.SCHED_FIFO, os.SCHED_RR) for c in classes), len(classes)


async def run(target: str, speed: float, window_s: float, px4_dir: str | None) -> Pace:
    try:
        async with started(target, speed, px4_dir) as (port, pid):
            pace = await asyncio.to_thread(measure, port, speed, window_s)
            pace.realtime = realtime_threads(pid)
            return pace
    except Exception as exc:  # noqa: BLE001 - a run that cannot fly is a result of the table, not a crash
        return Pace(error=f"{type(exc).__name__}: {exc}")


def row(pace: Pace) -> str:
    if pace.error:
        return f"{'failed':>6} {'':>7} {'':>7} {'':>4} {'':>6}"
    return (f"{pace.kept:6.2f} {pace.quantile(50):5.0f}ms {pace.quantile(99):5.0f}ms {pace.lost:4d} "
            f"{pace.behind:6d}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speeds", default="1,2,4", help="comma-separated speed factors (default: %(default)s)")
    parser.add_argument("--burners", type=int, default=2, help="CPU burners in the loaded runs (default: %(default)s)")
    parser.add_argument("--window", type=float, default=10.0, help="wall seconds measured (default: %(default)s)")
    parser.add_argument("--px4-dir", default=None, help="the PX4 SITL build (default: PX4_DIR)")
    args = parse_args(parser, {"speeds": "4", "window": 5.0}, argv)
    speeds = [float(s) for s in args.speeds.split(",")]
    targets = ["builtin"]
    try:
        px4_name = f"PX4 {Px4Build.locate(args.px4_dir).binary.resolve().parent.parent.name}"
        targets.append("px4")
    except Px4NotFound:
        px4_name = "PX4 (no build: set PX4_DIR)"
    print(f"pace on {os.cpu_count()} cores: armed and hovering in HOLD after the autopilot's take-off; "
          f"{args.window:g} wall s each; ACK of REQUEST_MESSAGE(AUTOPILOT_VERSION) at {ACK_HZ:g} Hz; "
          f"load average {os.getloadavg()[0]:.1f} at start")
    cols = f"{'kept':>6} {'ACK p50':>7} {'ACK p99':>7} {'lost':>4} {'behind':>6}"
    print(f"{'':13} | {'built-in vehicle':<35} | {px4_name:<35}")
    print(f"{'speed burners':13} | {cols} | {cols} | load")
    worse, realtime = [], {}
    for count in (0, args.burners):
        for speed in speeds:
            with burners(count):
                results = {t: asyncio.run(run(t, speed, args.window, args.px4_dir)) for t in targets}
            realtime.update({t: pace.realtime for t, pace in results.items() if not pace.error})
            px4 = results.get("px4", Pace(error="no PX4 build"))
            print(f"{speed:4g}x {count:7d} | {row(results['builtin'])} | {row(px4)} | {os.getloadavg()[0]:.1f}")
            for target, pace in results.items():
                if pace.error:
                    print(f"    {target}: {pace.error}")
            if not px4.error and not results["builtin"].kept >= px4.kept - KEPT_SLACK:
                worse.append(f"{speed:g}x with {count} burners")
    print("real-time threads (SCHED_FIFO/RR), of all: " + "; ".join(
        f"{'built-in vehicle' if t == 'builtin' else px4_name} {rt} of {n}" for t, (rt, n) in realtime.items()))
    if "px4" in targets:
        print(f"goal: the built-in vehicle keeps at least PX4's fraction at every factor and load: "
              f"{'met' if not worse else 'NOT met (' + '; '.join(worse) + ')'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
