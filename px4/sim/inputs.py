"""Which MAVLink input values the built-in vehicle acts on: the checks PX4 makes before it flies a
number a client sent (PX4_ISFINITE, coordinate ranges), so NaN, inf, 1e30 or 2^31-1 never become a
target. NaN keeps its MAVLink meaning ("unchanged" / "use the default")."""

from __future__ import annotations

import math

# Altitudes beyond this (m, AMSL or relative) are not a place a multicopter can be sent.
MAX_ABS_ALTITUDE_M = 100_000.0


def usable(value: float, limit: float = math.inf) -> bool:
    """A finite number within +-limit."""
    return math.isfinite(value) and abs(value) <= limit


def latitude_longitude(lat: float, lon: float) -> tuple[float, float]:
    """(lat, lon) in degrees, or (NaN, NaN) when either is not a place on Earth: keep the position."""
    if usable(lat, 90.0) and usable(lon, 180.0):
        return lat, lon
    return math.nan, math.nan


def altitude(alt: float) -> float:
    """An altitude in m, or NaN (keep the altitude / use the default) when it is no altitude at all."""
    return alt if usable(alt, MAX_ABS_ALTITUDE_M) else math.nan


def all_finite(*values: float) -> bool:
    """Every value is a finite number (a setpoint with a NaN or inf part is not flown)."""
    return all(math.isfinite(v) for v in values)
