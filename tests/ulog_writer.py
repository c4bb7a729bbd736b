"""Test fixtures for ULog reading: a flight profile and the fields of a local-position topic.

The writer itself is px4/ulog_writer.py (the built-in vehicle logs its flights with it).
"""

from __future__ import annotations

from px4.ulog_writer import write_ulog

__all__ = ["LOCAL_POSITION_FIELDS", "flight_profile", "write_ulog"]

LOCAL_POSITION_FIELDS = [("uint64_t", "timestamp"), ("float", "x"), ("float", "y"), ("float", "z"),
                         ("float", "vz")]


def flight_profile(t_s: float) -> float:
    """Down (m) of a test flight: 2 s on the ground, climb at 1.5 m/s to 5 m, hover, descend."""
    if t_s < 2.0:
        return 0.0
    if t_s < 2.0 + 5.0 / 1.5:
        return -1.5 * (t_s - 2.0)
    if t_s < 12.0:
        return -5.0
    return min(0.0, -5.0 + 0.7 * (t_s - 12.0))
