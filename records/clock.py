"""The one clock of a harness process, and vehicle time.

Every row and event is stamped with `now_ns()` (CLOCK_MONOTONIC, nanoseconds). A simulator at a
speed factor S lives S times faster than that clock; a lockstep vehicle stamps its telemetry in
simulated time already, and reports an infinite speed factor. Durations the user sees (budgets,
metrics) are vehicle time, converted here and nowhere else.
"""

from __future__ import annotations

import math
import time

import pandas as pd

now_ns = time.monotonic_ns


def clock_scale(speed_factor: float) -> float:
    """Vehicle seconds per second of a record's clock: the speed factor, or 1 where records are already
    in vehicle time (lockstep, infinite speed factor)."""
    return speed_factor if math.isfinite(speed_factor) else 1.0


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
