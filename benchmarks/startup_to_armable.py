"""Time from starting the built-in vehicle to MAVSDK seeing it armable (goal: <= 1 s).

Each run starts `hil sim` as a fresh process (as `hil fly --target sim` does) and measures, from
the moment the process is spawned: the first HEARTBEAT MAVSDK sees (discovery), and MAVSDK's
health saying armable with a home position (what `Vehicle.wait_armable` waits for). PX4 v1.14
SITL takes 1.8 s to its first heartbeat and 9.7-10.2 s to armable (px4/reference/).

    python benchmarks/startup_to_armable.py [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.quick import parse_args  # noqa: E402
from bridges.mavsdk_vehicle import connect  # noqa: E402
from targets.builtin import SimProcessOptions, builtin_vehicle  # noqa: E402


async def one_run() -> tuple[float, float]:
    start = time.monotonic()
    async with builtin_vehicle(SimProcessOptions()) as sim:
        vehicle = await connect(sim.url, timeout=10.0)
        discovered = time.monotonic() - start
        try:
            await vehicle.wait_armable(timeout=10.0)
            armable = time.monotonic() - start
        finally:
            await vehicle.close()
    return discovered, armable


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parse_args(parser, {'runs': 2})
    results = [asyncio.run(one_run()) for _ in range(args.runs)]
    disc = [r[0] for r in results]
    arm = [r[1] for r in results]
    print(f"start -> armable, built-in vehicle process + MAVSDK 4, {args.runs} runs")
    print(f"  first heartbeat  median {statistics.median(disc):.3f} s  (min {min(disc):.3f}, max {max(disc):.3f})")
    print(f"  armable          median {statistics.median(arm):.3f} s  (min {min(arm):.3f}, max {max(arm):.3f})")
    print(f"  goal <= 1 s: {'met' if statistics.median(arm) <= 1.0 else 'NOT met'} (PX4 v1.14 SITL: ~10 s)")


if __name__ == "__main__":
    main()
