"""Setpoint-to-vehicle latency over MAVSDK 4 on loopback: p50 / p99 / max (goal: p99 <= 5 ms).

The built-in vehicle runs in its own process and timestamps every SET_POSITION_TARGET_LOCAL_NED
the moment its MAVLink server parses it; the client stamps just before `offboard.set_position_ned`
(the public API a planner calls). Both use CLOCK_MONOTONIC, which is one clock for all processes
on a machine, so the difference is the one-way latency through MAVSDK, its executor hand-off, the
UDP stack and the vehicle's parser. Each setpoint carries a unique north value to pair them up.

    python benchmarks/setpoint_latency.py [--count 2000] [--rate 100]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mavsdk.plugins.offboard import PositionNedYaw  # noqa: E402

from benchmarks.quick import parse_args  # noqa: E402
from bridges.mavsdk_vehicle import connect  # noqa: E402
from px4.process import free_udp_port  # noqa: E402


def vehicle_process(port: int, conn) -> None:
    """The built-in vehicle, recording when each position setpoint arrives (north value -> ns)."""
    from px4.sim.realtime import SimOptions, build_vehicle, run_realtime
    from targets.sim_server import attach_links

    arrivals: dict[float, int] = {}

    async def main() -> None:
        autopilot, server = build_vehicle(SimOptions())

        def on_message(link, msg, t_ns):
            if msg.get_type() == "SET_POSITION_TARGET_LOCAL_NED":
                arrivals.setdefault(round(msg.x, 4), t_ns)
        server.on_message = on_message
        await attach_links(server, [f"udpout://127.0.0.1:{port}"])
        stop = asyncio.Event()
        runner = asyncio.create_task(run_realtime(autopilot, server, 1.0, stop))
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)  # wait for "done"
        stop.set()
        await runner
    asyncio.run(main())
    conn.send(arrivals)


async def measure(port: int, count: int, rate_hz: float) -> list[float]:
    vehicle = await connect(f"udpin://127.0.0.1:{port}", timeout=10.0)
    sent: dict[float, int] = {}
    try:
        await vehicle.wait_armable(timeout=10.0)
        period = 1.0 / rate_hz
        for i in range(count):
            north = round(1.0 + i * 1e-3, 4)
            sent[north] = time.monotonic_ns()
            await vehicle.offboard.set_position_ned(PositionNedYaw(north, 0.0, -2.0, 0.0))
            await asyncio.sleep(period)
        await asyncio.sleep(0.5)
    finally:
        await vehicle.close()
    return sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000, help="setpoints to send (default 2000)")
    parser.add_argument("--rate", type=float, default=100.0, help="send rate in Hz (default 100)")
    args = parse_args(parser, {'count': 500})

    port = free_udp_port()
    parent, child = mp.Pipe()
    proc = mp.get_context("spawn").Process(target=vehicle_process, args=(port, child))
    proc.start()
    try:
        sent = asyncio.run(measure(port, args.count, args.rate))
        parent.send("done")
        arrivals = parent.recv()
    finally:
        proc.join(timeout=10)
    # MAVSDK repeats the last setpoint at 20 Hz; only first arrivals of each value are paired.
    lat_ms = sorted((arrivals[k] - t) / 1e6 for k, t in sent.items() if k in arrivals)
    lost = len(sent) - len(lat_ms)
    q = statistics.quantiles(lat_ms, n=100)
    print(f"setpoint latency over MAVSDK {args.count} setpoints at {args.rate:g} Hz, loopback UDP, vehicle in its own process")
    print(f"  p50 {q[49]:.3f} ms   p90 {q[89]:.3f} ms   p99 {q[98]:.3f} ms   max {lat_ms[-1]:.3f} ms   "
          f"mean {statistics.fmean(lat_ms):.3f} ms   unpaired {lost}")
    print(f"  goal p99 <= 5 ms: {'met' if q[98] <= 5.0 else 'NOT met'}")


if __name__ == "__main__":
    main()
