"""Soak: several built-in vehicles with MAVSDK clients, for minutes at a high speed factor.

Each vehicle takes off and holds while its client reads telemetry; at speed 10 for 10 minutes the
vehicles pass 4294.97 s of vehicle time, where every 32-bit millisecond field of MAVLink wraps.
Prints, per vehicle: vehicle seconds reached, whether it is alive and still flying, and its resident
memory at the first and the last minute (goal: no crash, RSS growth < 5 %).

    python benchmarks/soak.py [--vehicles 6] [--minutes 10] [--speed 10]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.quick import parse_args  # noqa: E402
from bridges.mavsdk_vehicle import connect  # noqa: E402
from targets.builtin import SimProcessOptions, builtin_vehicle  # noqa: E402


async def soak_one(index: int, minutes: float, speed: float) -> dict:
    async with builtin_vehicle(SimProcessOptions(speed=speed)) as sim:
        process = psutil.Process(sim.proc.pid)
        vehicle = await connect(sim.url, timeout=20.0, speed_factor=speed)
        try:
            await vehicle.wait_armable(60.0)
            await vehicle.arm()
            await vehicle.takeoff(5.0)
            start = time.monotonic()
            rss_first = None
            while time.monotonic() - start < minutes * 60 and sim.failure() is None:
                await asyncio.sleep(5.0)
                if rss_first is None and time.monotonic() - start >= 60:
                    rss_first = process.memory_info().rss
            alive = sim.failure() is None
            rss_last = process.memory_info().rss if alive else 0
            vehicle_s = vehicle._clock.vehicle_s or 0.0
            flying = alive and vehicle.state.in_air and abs(vehicle.state.altitude - 5.0) < 1.5
        finally:
            with contextlib.suppress(Exception):
                await vehicle.close()
        return {"vehicle": index, "alive": alive, "flying": flying, "vehicle_s": vehicle_s,
                "rss_first": rss_first or rss_last, "rss_last": rss_last, "failure": sim.failure()}


async def run(vehicles: int, minutes: float, speed: float) -> None:
    results = await asyncio.gather(*(soak_one(i, minutes, speed) for i in range(vehicles)))
    print(f"soak: {vehicles} vehicles x {minutes:g} min at speed {speed:g}")
    for r in results:
        growth = 100 * (r["rss_last"] / r["rss_first"] - 1) if r["rss_first"] else float("nan")
        print(f"  vehicle {r['vehicle']}: {r['vehicle_s']:.0f} vehicle s, alive {r['alive']}, still holding "
              f"{r['flying']}, RSS {r['rss_first'] / 1e6:.1f} -> {r['rss_last'] / 1e6:.1f} MB ({growth:+.1f} %)"
              + (f" -- {r['failure']}" if r["failure"] else ""))
    print("goal: every vehicle alive and holding past 4295 s of vehicle time, RSS growth < 5 %")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vehicles", type=int, default=6)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--speed", type=float, default=10.0)
    args = parse_args(parser, {'vehicles': 3, 'minutes': 1.0})
    asyncio.run(run(args.vehicles, args.minutes, args.speed))


if __name__ == "__main__":
    main()
