"""The one clock of a harness process, and vehicle time.

Every row and event is stamped with `now_ns()` (CLOCK_MONOTONIC, nanoseconds). A simulator at a
speed factor S lives S times faster than that clock; a lockstep vehicle stamps its telemetry in
simulated time already, and reports an infinite speed factor. Durations the user sees (budgets,
metrics) are vehicle time, converted here and nowhere else: with the speed the vehicle's own clock
measured over the flight (`speed_between`) where the caller marked it, else the nominal factor.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import pandas as pd

now_ns = time.monotonic_ns


def clock_scale(speed_factor: float) -> float:
    """Vehicle seconds per second of a record's clock: the speed factor, or 1 where records are already
    in vehicle time (lockstep, infinite speed factor)."""
    return speed_factor if math.isfinite(speed_factor) else 1.0


@dataclass(frozen=True)
class ClockMark:
    """One moment on both clocks: the record's (now_ns) and the vehicle's own (its latest stamp, s)."""

    wall_ns: int
    vehicle_s: float


def mark(vehicle_clock_s: float) -> ClockMark:
    """Now, on both clocks, given the vehicle's clock reading (`Vehicle.clock_s`)."""
    return ClockMark(now_ns(), vehicle_clock_s)


def speed_between(start: ClockMark, end: ClockMark, nominal: float) -> float:
    """Vehicle seconds per record second over an interval, read off the vehicle's own clock.

    A simulator on a loaded machine runs below the speed factor it was asked for, and a duration
    converted with the nominal factor would then be longer than the flight. Falls back to `nominal`
    where the vehicle's clock gave no usable reading, and keeps an infinite nominal (records already in
    vehicle time).
    """
    if not math.isfinite(nominal):
        return nominal
    wall_s = (end.wall_ns - start.wall_ns) / 1e9
    flown_s = end.vehicle_s - start.vehicle_s
    if not (math.isfinite(flown_s) and flown_s > 0 and wall_s > 0):
        return nominal
    return flown_s / wall_s


def vehicle_seconds(elapsed_ns: int | float, speed_factor: float) -> float:
    """An interval on a record's clock, in vehicle seconds."""
    return elapsed_ns / 1e9 * clock_scale(speed_factor)


def vehicle_time(telemetry: pd.DataFrame, speed_factor: float) -> pd.DataFrame:
    """Telemetry with t_ns rescaled from the harness clock to vehicle time, from its first row.

    Metrics (duration, mean speed) are about the flight, not about how fast it was simulated.
    """
    scale = clock_scale(speed_factor)
    if scale == 1.0 or telemetry.empty:
        return telemetry
    out = telemetry.copy()
    t0 = int(out["t_ns"].iloc[0])
    out["t_ns"] = t0 + ((out["t_ns"] - t0) * scale).astype("int64")
    return out
