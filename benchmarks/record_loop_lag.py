"""How long the trial recorder stalls the event loop of a real-time (MAVSDK) trial.

A trial's recording as hil.recording and the flight code make it, for `--seconds` of wall time each leg: a
telemetry row at 100 Hz into a record with the real-time flush interval (a part about once a second), an event
at 10 Hz (each fsynced), and 32 bytes into a side file at 100 Hz (hil.recording.record_tlog's way, `flush_if_due`).
Beside it a probe sleeps 10 ms over and over and keeps how much longer each sleep took: while the loop waits on
the disk, MAVSDK's telemetry, heartbeats and the harness's vehicle-clock deadlines wait too. Real files on the
real file system of `--dir`, real fsyncs; run it beside load (two `python3 -c 'while True: pass'`) to see
the tail a loaded machine gives.

Three legs, interleaved `--rounds` times, in one run:
- quiet: the probe alone (what the machine's load alone does to a 10 ms sleep);
- fsync on the loop: the same event lines written and fsynced on the loop's thread, as the recorder did before
  its writes moved to a thread of their own (only the events: a lower bound of that recorder's stall);
- recorder: the whole recording through records.record.TrialRecorder.
Prints each leg's oversleep p50 / p99 / max and the recorder's p99 and max over the quiet leg's, and the
time a tick's recording calls held the loop (the stall the recorder itself causes, less noisy than the
probe on a machine whose load alone oversleeps a 10 ms sleep by 100 ms and more).

    python benchmarks/record_loop_lag.py [--seconds 20] [--rounds 2] [--dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere in the repo

from benchmarks.quick import parse_args  # noqa: E402
from records.record import FLUSH_INTERVAL_S, TrialRecorder, read_events, read_table  # noqa: E402

PROBE_S = 0.010
TELEMETRY_HZ = 100
EVENT_EVERY = 10  # telemetry rows per event: 10 Hz


async def probe(lags_ms: list[float]) -> None:
    while True:
        start = time.perf_counter()
        await asyncio.sleep(PROBE_S)
        lags_ms.append((time.perf_counter() - start - PROBE_S) * 1e3)


@contextlib.asynccontextmanager
async def probing(lags_ms: list[float]) -> AsyncIterator[None]:
    """The probe's oversleeps (ms) into `lags_ms` while the block runs: the flight, not the record's finish,
    which comes once the vehicle is down and waits for the disk by design."""
    task = asyncio.create_task(probe(lags_ms))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def quiet(seconds: float, lags_ms: list[float], held_ms: list[float]) -> None:
    async with probing(lags_ms):
        await asyncio.sleep(seconds)


async def paced(seconds: float, tick, held_ms: list[float]) -> int:
    """`tick(i)` at TELEMETRY_HZ on the wall clock for `seconds`, each tick's wall time (ms) into `held_ms`;
    how many ticks."""
    start, i = time.perf_counter(), 0
    while (now := time.perf_counter() - start) < seconds:
        tick(i)
        held_ms.append((time.perf_counter() - start - now) * 1e3)
        i += 1
        await asyncio.sleep(max(0.0, i / TELEMETRY_HZ - now))
    return i


def fsync_on_loop(directory: Path):
    async def leg(seconds: float, lags_ms: list[float], held_ms: list[float]) -> None:
        with open(directory / "events.jsonl", "a", encoding="utf-8") as events:
            def tick(i: int) -> None:
                if i % EVENT_EVERY == 0:
                    events.write(f'{{"t_ns": {time.monotonic_ns()}, "kind": "tick", "i": {i}}}\n')
                    events.flush()
                    os.fsync(events.fileno())
            async with probing(lags_ms):
                await paced(seconds, tick, held_ms)
    return leg


def recorder_leg(record_dir: Path, counts: list[int]):
    async def leg(seconds: float, lags_ms: list[float], held_ms: list[float]) -> None:
        with TrialRecorder(record_dir, config={}, target="bench", flush_interval_s=FLUSH_INTERVAL_S) as recorder:
            side = recorder.side_file("telemetry.tlog")

            def tick(i: int) -> None:
                recorder.append("telemetry", {"i": i, "north": float(i), "down": -5.0})
                side.write(i.to_bytes(32, "little"))
                recorder.flush_if_due()
                if i % EVENT_EVERY == 0:
                    recorder.event("tick", i=i)
            async with probing(lags_ms):
                counts.append(await paced(seconds, tick, held_ms))
            recorder.finish("success")
    return leg


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="wall seconds per leg and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--dir", type=Path, default=None, help="where the records go (default: a temporary dir)")
    args = parse_args(parser, {"seconds": 5.0, "rounds": 1}, argv)
    lags: dict[str, list[float]] = {"quiet": [], "fsync on the loop": [], "recorder": []}
    held: dict[str, list[float]] = {name: [] for name in lags}
    counts: list[int] = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for n in range(args.rounds):
            legs = {"quiet": quiet, "fsync on the loop": fsync_on_loop(Path(tmp) / f"inline-{n}"),
                    "recorder": recorder_leg(Path(tmp) / f"record-{n}", counts)}
            (Path(tmp) / f"inline-{n}").mkdir()
            for name, leg in legs.items():
                asyncio.run(leg(args.seconds, lags[name], held[name]))
            record = Path(tmp) / f"record-{n}"
            # The record is whole: every row and event the leg recorded is on disk after finish.
            rows = read_table(record, "telemetry")["i"].tolist()
            events = [e["i"] for e in read_events(record) if e["kind"] == "tick"]
            if rows != list(range(counts[n])) or events != list(range(0, counts[n], EVENT_EVERY)):
                raise SystemExit(f"{record}: rows or events missing after finish")
    load = os.getloadavg()[0]
    print(f"event-loop oversleep of a {PROBE_S * 1e3:.0f} ms sleep, {args.rounds} x {args.seconds:g} s per leg, "
          f"load average {load:.1f}, records in {args.dir or tempfile.gettempdir()}")
    figures = {}
    for name, values in lags.items():
        p50, p99, worst = np.percentile(values, 50), np.percentile(values, 99), max(values)
        figures[name] = (p99, worst)
        print(f"  {name:<18} p50 {p50:6.2f} ms  p99 {p99:7.2f} ms  max {worst:7.2f} ms  ({len(values)} sleeps)")
    print("the loop held by a tick's recording calls (100 Hz: row, side file, flush when due, event at 10 Hz):")
    for name in ("fsync on the loop", "recorder"):
        values = held[name]
        print(f"  {name:<18} p99 {np.percentile(values, 99):7.2f} ms  max {max(values):7.2f} ms  "
              f"total {sum(values) / 1e3:6.2f} s of {args.rounds * args.seconds:g} s  ({len(values)} ticks)")
    (quiet_p99, quiet_max), (rec_p99, rec_max) = figures["quiet"], figures["recorder"]
    (inline_p99, inline_max) = figures["fsync on the loop"]
    print(f"recorder over quiet: p99 x{rec_p99 / max(quiet_p99, 1e-3):.2f}, max x{rec_max / max(quiet_max, 1e-3):.2f}; "
          f"fsync on the loop over quiet: p99 x{inline_p99 / max(quiet_p99, 1e-3):.2f}, "
          f"max x{inline_max / max(quiet_max, 1e-3):.2f}")


if __name__ == "__main__":
    main()
