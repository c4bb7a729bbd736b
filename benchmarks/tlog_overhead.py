"""What the trial record's telemetry.tlog costs, on both kinds of target.

Lockstep, where it costs the most: nothing but the flight, so no planner or scene dilutes it.

Flies lockstep_rtf.py's flight (take off to 5 m, a waypoint 30 m away, 60 simulated seconds) through the
lockstep Vehicle as the lockstep target makes it (100 Hz snapshots), on one core, twice per run:
- table: every snapshot into a trial record's telemetry table (hil.recording's loop without the log);
- table + tlog: the same, and every MAVLink frame into telemetry.tlog (hil.recording.record_tlog).
Prints the medians of the CPU time per simulated second and the log's share of a recorded flight.
The goal (issue 34): the log adds at most 5 % to a lockstep campaign trial, with every message type in it;
a trial with a planner and a scene costs several times this flight per simulated second, so the log's cost
is also put beside a FLYINGTRUST matrix trial's (benchmarks/flyingtrust_matrix.py's first: forest, the avoid
planner at 30 Hz, its record with the log) measured in the same run.

Over MAVSDK (the built-in vehicle as a process at 1x, as the sim target runs it, and PX4 SITL the same way):
the harness process's CPU per wall second while a Vehicle streams telemetry into a record, with and
without the tap MAVSDK forwards the frames to (MavsdkVehicle.mavlink_frames), interleaved.

    python benchmarks/tlog_overhead.py [--runs N] [--mavsdk-seconds S]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere in the repo
sys.path.insert(0, str(Path(__file__).resolve().parent))

from lockstep_rtf import SIM_SECONDS, fly_the_flight  # noqa: E402

from benchmarks.flyingtrust_matrix import matrix  # noqa: E402
from benchmarks.quick import parse_args  # noqa: E402
from bridges import mavsdk_vehicle  # noqa: E402
from bridges.lockstep_vehicle import TLOG_MAX_HZ, LockstepVehicle  # noqa: E402
from hil.recording import record_telemetry, record_tlog  # noqa: E402
from hil.trial import run_trial_spec  # noqa: E402
from profiles.library import load_vehicle_profile  # noqa: E402
from px4.sim.autopilot import Autopilot  # noqa: E402
from records.clock import STAMP  # noqa: E402
from records.record import TrialRecorder, read_events, read_table  # noqa: E402
from targets.builtin import SimProcessOptions, builtin_vehicle  # noqa: E402
from targets.lockstep import TELEMETRY_HZ  # noqa: E402

GOAL_PCT = 5.0


def fly(record_dir: Path, tlog: bool) -> tuple[float, int]:
    """One recorded flight; returns CPU seconds and the frames in its log (0 without)."""

    async def flight() -> float:
        ap = Autopilot(load_vehicle_profile("default"))
        with TrialRecorder(record_dir, config={}, target="lockstep") as recorder:
            async with LockstepVehicle(ap, telemetry_hz=TELEMETRY_HZ) as vehicle:
                start = time.process_time()

                async def table() -> None:
                    async for state in vehicle.telemetry():
                        recorder.append("telemetry", state.as_row())
                tasks = [asyncio.create_task(table())]
                if tlog:
                    tasks.append(asyncio.create_task(record_tlog(vehicle, recorder)))
                await fly_the_flight(vehicle, ap)
                for task in tasks:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
                cpu = time.process_time() - start
            recorder.finish("done")
        return cpu

    cpu = asyncio.run(flight())
    closed = [e for e in read_events(record_dir) if e["kind"] == "tlog_closed"]
    return cpu, closed[0]["frames"] if closed else 0


def matrix_trial(out: Path) -> float:
    """CPU seconds per simulated second of the matrix's first trial, flown as a campaign worker flies it."""
    spec = matrix(["forest"], 1, "avoid", 30.0, 1).trials()[0]
    start = time.process_time()
    run_trial_spec(spec, out / "trial", out / "cache")
    cpu = time.process_time() - start
    return cpu / read_table(out / "trial", "telemetry")[STAMP].max()


def listen(seconds: float, tlog: bool) -> tuple[float, int]:
    """The harness's CPU seconds over `seconds` of a built-in vehicle process's telemetry recorded through
    MAVSDK, with or without the telemetry log; and the frames logged."""

    async def run() -> tuple[float, int]:
        with tempfile.TemporaryDirectory() as tmp:
            async with builtin_vehicle(SimProcessOptions()) as sim:
                vehicle = await mavsdk_vehicle.connect(sim.url)
                try:
                    with TrialRecorder(Path(tmp) / "trial", config={}, target="sim") as recorder:
                        tasks = [asyncio.create_task(record_telemetry(vehicle, recorder) if tlog else
                                                     _table_only(vehicle, recorder))]
                        await asyncio.sleep(2.0)  # streams set up, first batch written
                        start = time.process_time()
                        await asyncio.sleep(seconds)
                        cpu = time.process_time() - start
                        for task in tasks:
                            task.cancel()
                            with contextlib.suppress(asyncio.CancelledError):
                                await task
                        recorder.finish("done")
                    closed = [e for e in read_events(Path(tmp) / "trial") if e["kind"] == "tlog_closed"]
                    return cpu, closed[0]["frames"] if closed else 0
                finally:
                    await vehicle.close()

    return asyncio.run(run())


async def _table_only(vehicle, recorder: TrialRecorder) -> None:
    async for state in vehicle.telemetry():
        recorder.append("telemetry", state.as_row())


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mavsdk-seconds", type=float, default=10.0, help="wall seconds per MAVSDK run")
    args = parse_args(parser, {'runs': 2, 'mavsdk_seconds': 4.0}, argv)
    print(f"{SIM_SECONDS:.0f} s simulated per run, {TELEMETRY_HZ:g} Hz snapshots, log streams thinned to "
          f"{TLOG_MAX_HZ:g} Hz, one core, median of {args.runs} runs (after one warm-up each)")
    with tempfile.TemporaryDirectory() as tmp:
        cpu: dict[bool, list[float]] = {False: [], True: []}
        frames = 0
        for run in range(args.runs + 1):
            for tlog in (False, True):  # interleaved, so a change in the machine's load hits both alike
                seconds, count = fly(Path(tmp) / f"{run}-{tlog}", tlog)
                if run:
                    cpu[tlog].append(seconds)
                    frames = max(frames, count)
    table, both = statistics.median(cpu[False]), statistics.median(cpu[True])
    share = 100.0 * (both - table) / table
    print(f"  table          {table / SIM_SECONDS * 1e3:6.2f} ms CPU per simulated second "
          f"(real-time factor {SIM_SECONDS / table:5.1f} x)")
    print(f"  table + tlog   {both / SIM_SECONDS * 1e3:6.2f} ms CPU per simulated second "
          f"(real-time factor {SIM_SECONDS / both:5.1f} x), {frames / SIM_SECONDS:.0f} frames a second")
    log_s = (both - table) / SIM_SECONDS
    print(f"  the log: +{log_s * 1e3:.2f} ms per simulated second, +{share:.1f} % of this flight")
    with tempfile.TemporaryDirectory() as tmp:
        matrix_trial(Path(tmp) / "warm-up")  # imports, compiled loops and the scene's facts, once
        trial = statistics.median(matrix_trial(Path(tmp) / str(run)) for run in range(args.runs))
    print(f"  a matrix trial {trial * 1e3:6.2f} ms CPU per simulated second, its log included: the log is "
          f"{100 * log_s / trial:.1f} % of it (goal (issue 34): <= {GOAL_PCT:g} %)")
    print(f"Over MAVSDK: the built-in vehicle at 1x, {args.mavsdk_seconds:g} s a run, median of {args.runs} runs")
    over: dict[bool, list[float]] = {False: [], True: []}
    frames = 0
    for _ in range(args.runs):
        for tlog in (False, True):
            seconds, count = listen(args.mavsdk_seconds, tlog)
            over[tlog].append(seconds / args.mavsdk_seconds)
            frames = max(frames, count)
    table, both = statistics.median(over[False]), statistics.median(over[True])
    print(f"  table          {table * 1e3:6.2f} ms CPU per second")
    print(f"  table + tlog   {both * 1e3:6.2f} ms CPU per second, {frames / args.mavsdk_seconds:.0f} frames a second")
    print(f"  the log: +{(both - table) * 1e3:.2f} ms CPU per second of flight ({100 * (both - table):.2f} % of a core)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
