"""The one clock of a harness process, and vehicle time.

Every row and event is stamped with `now_ns()` (CLOCK_MONOTONIC, nanoseconds), and, once the vehicle has
told its clock, with the vehicle's own (`t_vehicle_s`: the autopilot's time stamps, simulated time in
lockstep). Durations the harness judges or reports (budgets, metrics) are vehicle time, measured on that
column: a simulator on a loaded machine, or one paused, keeps below its speed factor, and a harness interval
times the factor would then be longer than the flight. Only a record without the column (a target without a usable stamp, a record from before it)
falls back to the harness clock times the speed factor (`NOMINAL_CLOCK`), and says so.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

now_ns = time.monotonic_ns
STAMP = "t_vehicle_s"  # the telemetry column and event field of the vehicle's own clock (s)
# What a record's durations were measured on (a summary's `clock`; a report marks the second).
VEHICLE_CLOCK = "vehicle"
NOMINAL_CLOCK = "harness x speed factor"


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


def seconds_since(start_ns: int, start_vehicle_s: float, now_ns: int, now_vehicle_s: float,
                  speed_factor: float) -> float:
    """Vehicle seconds from one snapshot (its t_ns and t_vehicle_s) to another: on the vehicle's stamps where the
    first carries one (`stamp_clock`), else on the harness clock times the speed factor."""
    if math.isfinite(start_vehicle_s):
        return now_vehicle_s - start_vehicle_s
    return vehicle_seconds(now_ns - start_ns, speed_factor)


def vehicle_time(telemetry: pd.DataFrame, speed_factor: float) -> pd.DataFrame:
    """Telemetry with t_ns on the vehicle's clock (`telemetry_clock` says which one it could be).

    On the vehicle's stamps where the table has them: its rows without one (before the vehicle first told its
    clock), and those whose stamp did not advance (a position handed over before the next stamp came), are
    left out, so that every interval is one the vehicle measured. Otherwise (NOMINAL_CLOCK) t_ns rescaled by
    the speed factor from its first row. Metrics (duration, mean speed) are about the flight, not about how
    fast it was simulated.
    """
    if telemetry_clock(telemetry, speed_factor) == VEHICLE_CLOCK and STAMP in telemetry:
        stamps = telemetry[STAMP].to_numpy(float)
        keep = _advancing(stamps, np.isfinite(stamps))
        out = telemetry[keep].copy()
        out["t_ns"] = np.round(stamps[keep] * 1e9).astype("int64")
        return out
    scale = clock_scale(speed_factor)
    if scale == 1.0 or telemetry.empty:
        return telemetry
    out = telemetry.copy()
    t0 = int(out["t_ns"].iloc[0])
    out["t_ns"] = t0 + ((out["t_ns"] - t0) * scale).astype("int64")
    return out


def _advancing(values: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """`keep` without the rows whose value does not exceed every kept value before it."""
    keep = keep.copy()
    keep[1:] &= values[1:] > np.fmax.accumulate(np.where(keep, values, -np.inf))[:-1]
    return keep


class VehicleAxis:
    """Moments on a record's clock (`t_ns` of any of its tables, events) as vehicle seconds since the first
    telemetry row: read off the telemetry's own pairs of harness and vehicle stamps where it has them (a
    simulator that fell behind its speed factor is drawn as it flew), else the record's clock times the
    speed factor. Outside the telemetry's span the nearest pair is extended at the speed factor."""

    def __init__(self, telemetry: pd.DataFrame, speed_factor: float):
        self.scale = clock_scale(speed_factor)
        self.t0_ns = float(telemetry["t_ns"].iloc[0]) if len(telemetry) else 0.0
        self._harness = self._vehicle = np.empty(0)
        if telemetry_clock(telemetry, speed_factor) == VEHICLE_CLOCK and STAMP in telemetry:
            harness = telemetry["t_ns"].to_numpy(float)
            stamps = telemetry[STAMP].to_numpy(float)
            keep = _advancing(harness, _advancing(stamps, np.isfinite(stamps) & np.isfinite(harness)))
            if keep.sum() >= 2:
                # Zero is the first row's time: rows before the vehicle told its clock are placed at the speed factor.
                offset = (harness[keep][0] - self.t0_ns) / 1e9 * self.scale
                self._harness, self._vehicle = harness[keep], stamps[keep] - stamps[keep][0] + offset

    def seconds(self, t_ns) -> np.ndarray:
        t = np.asarray(t_ns, dtype=float)
        if len(self._harness) < 2:
            return (t - self.t0_ns) / 1e9 * self.scale
        inside = np.interp(t, self._harness, self._vehicle)
        before = self._vehicle[0] + (t - self._harness[0]) / 1e9 * self.scale
        after = self._vehicle[-1] + (t - self._harness[-1]) / 1e9 * self.scale
        return np.where(t < self._harness[0], before, np.where(t > self._harness[-1], after, inside))


def telemetry_clock(telemetry: pd.DataFrame, speed_factor: float) -> str:
    """Which clock `vehicle_time` measures this telemetry on: the vehicle's own where at least two of its rows
    carry the vehicle's stamp, or where the harness stamped it in simulated time (lockstep: an infinite speed
    factor); else the harness clock times the speed factor."""
    if STAMP in telemetry and np.isfinite(telemetry[STAMP].to_numpy(float)).sum() >= 2:
        return VEHICLE_CLOCK
    return VEHICLE_CLOCK if not math.isfinite(speed_factor) else NOMINAL_CLOCK


def stamp_clock(t_vehicle_s: float) -> str:
    """The clock an interval starting at a snapshot stamped `t_vehicle_s` is measured on."""
    return VEHICLE_CLOCK if math.isfinite(t_vehicle_s) else NOMINAL_CLOCK
