"""The harness's CPU time beside a connected vehicle that stands on the ground: what reading its telemetry costs.

A `MavsdkVehicle` (bridges.mavsdk_vehicle) connected to the built-in vehicle at `--speed` (and to PX4 SITL v1.16 at
4x when PX4_DIR is set) sits idle for `--seconds` wall seconds a leg, and this process's CPU time (every thread:
MAVSDK's own and the event loop) over that wall time is its cost. Two legs, interleaved `--rounds` times in one
run so that the machine's load falls on both:

- vehicle: the Vehicle as it reads its telemetry (`_FastStreams`: LOCAL_POSITION_NED alone crosses into Python as
  it comes; the newest attitude and position are read from MAVSDK when a snapshot is made);
- + asyncio streams: the same, with MAVSDK's asyncio streams of LOCAL_POSITION_NED, ODOMETRY, ATTITUDE and
  GLOBAL_POSITION_INT consumed beside it, each message through its queue and generator to a no-op, the way
  the Vehicle read them before. Their difference is what that way costs.

Printed per target: each leg's CPU share of one core (median of the rounds) and the callbacks MAVSDK dropped in
it (its "Dropping subscription callbacks" log: a subscriber that did not keep up, summed over the rounds), the
asyncio streams' extra over the vehicle's whole share, the messages a wall second those four streams carry, and
the vehicle process's own CPU share beside them (a peer measured in the same rounds, from /proc). The machine's
load average is printed with them: run it beside two `python3 -c 'while True: pass'` to see a loaded machine.

    python benchmarks/telemetry_cpu.py [--seconds 5] [--rounds 3] [--speed 8]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere in the repo

from benchmarks.quick import parse_args  # noqa: E402
from bridges.mavsdk_vehicle import MavsdkVehicle, route_mavsdk_logs  # noqa: E402
from targets import TargetOptions, open_target  # noqa: E402

PX4_SPEED = 4.0
SETTLE_S = 2.0  # wall seconds after connecting: the vehicle's streams reach their rates


class DropCounter(logging.Handler):
    """The newest running total of MAVSDK's "Dropping subscription callbacks (N so far)" lines."""

    def __init__(self) -> None:
        super().__init__()
        self.total = 0

    def emit(self, record: logging.LogRecord) -> None:
        found = re.search(r"Dropping subscription callbacks \((\d+) so far\)", record.getMessage())
        if found:
            self.total = max(self.total, int(found[1]))


def process_cpu_s(pid: int) -> float:
    """User and system CPU seconds of process `pid` (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def asyncio_streams(vehicle: MavsdkVehicle, counted: list[int]) -> None:
    """MAVSDK's asyncio streams of the four fast messages, each consumed to a no-op."""
    telemetry, direct = vehicle.telemetry_plugin, vehicle.mavlink

    async def drain(stream) -> None:
        async for _ in stream:
            counted[0] += 1

    await asyncio.gather(drain(direct.subscribe_message("LOCAL_POSITION_NED")), drain(telemetry.subscribe_odometry()),
                         drain(telemetry.subscribe_attitude_euler()), drain(telemetry.subscribe_position()))


async def leg(vehicle: MavsdkVehicle, pid: int | None, seconds: float, streams: bool,
              drops: DropCounter) -> tuple[float, float, float, int]:
    """(this process's CPU share, the vehicle process's, the asyncio streams' messages a wall second, the callbacks
    MAVSDK dropped) over one leg."""
    counted = [0]
    task = asyncio.create_task(asyncio_streams(vehicle, counted)) if streams else None
    await asyncio.sleep(0.5 if streams else 0.0)  # the subscriptions are in place
    counted[0], dropped = 0, drops.total
    cpu, peer, wall = time.process_time(), process_cpu_s(pid) if pid else 0.0, time.monotonic()
    await asyncio.sleep(seconds)
    wall = time.monotonic() - wall
    share = (time.process_time() - cpu) / wall
    peer_share = (process_cpu_s(pid) - peer) / wall if pid else float("nan")
    rate, dropped = counted[0] / wall, drops.total - dropped
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return share, peer_share, rate, dropped


async def measure(target: str, speed: float, seconds: float, rounds: int) -> None:
    options = TargetOptions(speed=speed)
    drops = DropCounter()
    logging.getLogger("mavsdk").addHandler(drops)
    async with open_target(target, options) as opened:
        await asyncio.sleep(SETTLE_S)
        results: dict[bool, list[tuple[float, float, float, int]]] = {False: [], True: []}
        for _ in range(rounds):
            for streams in (False, True):
                results[streams].append(await leg(opened.vehicle, opened.pid, seconds, streams, drops))
    logging.getLogger("mavsdk").removeHandler(drops)
    own = statistics.median(r[0] for r in results[False])
    with_streams = statistics.median(r[0] for r in results[True])
    peer = statistics.median(r[1] for r in results[False])
    rate = statistics.median(r[2] for r in results[True])
    dropped = {streams: sum(r[3] for r in legs) for streams, legs in results.items()}
    print(f"{target} at {speed:g}x, idle on the ground ({rounds} rounds of {seconds:g} s, load {os.getloadavg()[0]:.1f}):")
    print(f"  vehicle                {own * 100:5.1f} % of a core, {dropped[False]} callbacks dropped")
    print(f"  + asyncio streams      {with_streams * 100:5.1f} % of a core, {dropped[True]} callbacks dropped: the asyncio way of the four fast streams "
          f"({rate:.0f} messages a wall second) adds {(with_streams - own) * 100:.1f} points, "
          f"{(with_streams - own) / own:.2f}x the vehicle's whole share")
    print(f"  the vehicle's process  {peer * 100:5.1f} % of a core (the peer: the harness's share is "
          f"{own / peer:.2f}x it)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="wall seconds a leg (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of both legs (default: %(default)s)")
    parser.add_argument("--speed", type=float, default=8.0, help="the built-in vehicle's speed factor (default: %(default)s)")
    args = parse_args(parser, {"seconds": 3.0, "rounds": 2}, argv)
    route_mavsdk_logs()
    asyncio.run(measure("sim", args.speed, args.seconds, args.rounds))
    if os.environ.get("PX4_DIR"):
        asyncio.run(measure("px4-sitl", PX4_SPEED, args.seconds, args.rounds))
    else:
        print("PX4 SITL left out: set PX4_DIR to a PX4 build")
    return 0


if __name__ == "__main__":
    sys.exit(main())
