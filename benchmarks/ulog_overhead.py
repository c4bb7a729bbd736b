"""What the built-in vehicle's own ULog costs: CPU per simulated second with and without it, and its size.

Flies lockstep_rtf.py's flight (take off to 5 m, a waypoint 30 m away, 60 simulated seconds) through the
lockstep Vehicle as the lockstep target makes it, once without a flight log and once writing the ULog a
trial record keeps (flight_log_root), interleaved so a change in the machine's load hits both alike.
Prints the medians of the CPU time per simulated second, the log's share, and the ULog's size per
simulated minute. CPU is the process's (time.process_time), so other processes on the machine do not count.

    python benchmarks/ulog_overhead.py [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere in the repo
sys.path.insert(0, str(Path(__file__).resolve().parent))

from lockstep_rtf import SIM_SECONDS, fly_the_flight  # noqa: E402

from benchmarks.quick import parse_args  # noqa: E402
from bridges.lockstep_vehicle import LockstepVehicle  # noqa: E402
from profiles.library import load_vehicle_profile  # noqa: E402
from px4.sim.autopilot import Autopilot  # noqa: E402
from targets.lockstep import TELEMETRY_HZ  # noqa: E402


def fly(log_root: Path | None) -> float:
    """CPU seconds of one flight, writing its ULog under log_root (None: no log)."""

    async def flight() -> float:
        ap = Autopilot(load_vehicle_profile("default"))
        async with LockstepVehicle(ap, telemetry_hz=TELEMETRY_HZ, flight_log_root=log_root) as vehicle:
            start = time.process_time()
            await fly_the_flight(vehicle, ap)
            return time.process_time() - start

    return asyncio.run(flight())


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parse_args(parser, {"runs": 2}, argv)
    print(f"{SIM_SECONDS:.0f} s simulated per run, {TELEMETRY_HZ:g} Hz snapshots, median of {args.runs} runs "
          "(after one warm-up each)")
    cpu: dict[bool, list[float]] = {False: [], True: []}
    size = 0
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs + 1):
            for logged in (False, True):
                root = Path(tmp) / f"{run}" if logged else None
                seconds = fly(root)
                if run:
                    cpu[logged].append(seconds)
                if root is not None:
                    size = max(size, sum(p.stat().st_size for p in root.glob("log/*/*.ulg")))
    bare, logged = statistics.median(cpu[False]), statistics.median(cpu[True])
    print(f"  no ULog    {bare / SIM_SECONDS * 1e3:6.2f} ms CPU per simulated second")
    print(f"  with ULog  {logged / SIM_SECONDS * 1e3:6.2f} ms CPU per simulated second "
          f"(x{logged / bare:.3f}: the log adds {100.0 * (logged - bare) / bare:.1f} %)")
    print(f"  ULog size  {size / 1024:.0f} KiB for {SIM_SECONDS:.0f} s: {size / SIM_SECONDS * 60 / 1024:.0f} KiB "
          "per simulated minute")
    return 0


if __name__ == "__main__":
    sys.exit(main())
