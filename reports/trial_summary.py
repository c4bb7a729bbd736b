"""Headline numbers of one trial, from its telemetry table and the mission's reference path (what `hil fly`
prints once the flight is over, from the record: `summarize_record`).

Positions are local NED metres (alt = -down); the reference path is the (K, 3) NED polyline from
`WaypointMission.reference_path()`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from records.clock import VEHICLE_CLOCK, telemetry_clock, vehicle_time
from records.record import MANIFEST_NAME, read_manifest, read_table
from records.summary import MissionSummary, Summary

# Below this the vehicle is on (or just leaving) the ground, where it sits wherever it landed or was
# placed; counting those samples would charge a position offset on the pad as tracking error.
AIRBORNE_ALTITUDE_M = 0.5

_POSITION = ["north", "east", "down"]
_VELOCITY = ["vn", "ve", "vd"]


@dataclass(frozen=True)
class TrialSummary:
    """Summary metrics of one flown trial (SI units)."""

    duration_s: float
    path_length_m: float
    max_tracking_error_m: float  # only samples above AIRBORNE_ALTITUDE_M; NaN if never airborne
    mean_speed_m_s: float  # time average of |v|, as FlightBench defines average speed
    max_speed_m_s: float
    final_distance_to_goal_m: float  # goal = the reference path's last point
    clock: str = VEHICLE_CLOCK  # what the duration and speeds were measured on (records.clock)

    def as_dict(self) -> dict[str, float | str]:
        """The metrics as plain floats (and the clock's name), e.g. for a trial manifest."""
        return dataclasses.asdict(self)


def summarize_trial(telemetry: pd.DataFrame, reference_path: np.ndarray) -> TrialSummary:
    """Compute a `TrialSummary` from telemetry with columns t_ns, north, east, down, vn, ve, vd."""
    missing = {"t_ns", *_POSITION, *_VELOCITY} - set(telemetry.columns)
    if missing:
        raise ValueError(f"telemetry lacks columns {sorted(missing)}")
    # A recorded table may hold rows from before the first position arrived (nulls there).
    flown = telemetry.dropna(subset=["t_ns", *_POSITION, *_VELOCITY]).sort_values("t_ns")
    if flown.empty:
        raise ValueError("telemetry has no complete rows")
    reference = np.asarray(reference_path, dtype=float)

    seconds = (flown["t_ns"].to_numpy(np.int64) - int(flown["t_ns"].iloc[0])) / 1e9
    positions = flown[_POSITION].to_numpy(float)
    speeds = np.linalg.norm(flown[_VELOCITY].to_numpy(float), axis=1)

    duration = float(seconds[-1])
    if duration > 0:
        mean_speed = float(np.sum(0.5 * (speeds[1:] + speeds[:-1]) * np.diff(seconds)) / duration)
    else:
        mean_speed = float(speeds.mean())

    airborne = positions[-positions[:, 2] > AIRBORNE_ALTITUDE_M]
    max_tracking_error = float(distance_to_polyline(airborne, reference).max()) if len(airborne) else math.nan

    return TrialSummary(
        duration_s=duration,
        path_length_m=float(np.linalg.norm(np.diff(positions, axis=0), axis=1).sum()),
        max_tracking_error_m=max_tracking_error,
        mean_speed_m_s=mean_speed,
        max_speed_m_s=float(speeds.max()),
        final_distance_to_goal_m=float(np.linalg.norm(positions[-1] - reference[-1])),
    )


def summarize_record(record: Path, reference_path: np.ndarray) -> TrialSummary | None:
    """`summarize_trial` of a finished route flight's record, its telemetry in vehicle time (`vehicle_time`: on
    the vehicle's stamps, else at the speed measured over the flight, which `clock` then says); None for a record
    of no flight (one that ended before it flew, or recorded no telemetry)."""
    summary = Summary.from_manifest(read_manifest(record), record / MANIFEST_NAME)
    if not isinstance(summary, MissionSummary):
        return None
    try:
        telemetry = read_table(record, "telemetry")
    except FileNotFoundError:
        return None
    if not len(telemetry):
        return None
    flown = summarize_trial(vehicle_time(telemetry, summary.speed_factor), reference_path)
    return dataclasses.replace(flown, clock=telemetry_clock(telemetry, summary.speed_factor))


def distance_to_polyline(points: np.ndarray, polyline: np.ndarray) -> np.ndarray:
    """Distance from each of N points (N, 3) to the nearest point of a (K, 3) polyline, shape (N,).

    Vectorized over all point-segment pairs, so it holds an N x (K-1) x 3 array: fine for a trial's
    telemetry against a mission path.
    """
    points = np.asarray(points, dtype=float).reshape(-1, 3)
    polyline = np.asarray(polyline, dtype=float).reshape(-1, 3)
    # A one-point "polyline" becomes a single zero-length segment.
    starts = polyline[:-1] if len(polyline) > 1 else polyline
    segments = (polyline[1:] if len(polyline) > 1 else polyline) - starts
    lengths_sq = np.einsum("mk,mk->m", segments, segments)
    offsets = points[:, None, :] - starts[None, :, :]
    # Where along each segment the perpendicular foot lies, clamped to the segment's ends.
    along = np.einsum("nmk,mk->nm", offsets, segments) / np.where(lengths_sq > 0, lengths_sq, 1.0)
    along = np.clip(along, 0.0, 1.0)
    gaps = offsets - along[..., None] * segments[None, :, :]
    return np.linalg.norm(gaps, axis=2).min(axis=1)


def format_summary(outcome: str, summary: TrialSummary) -> str:
    """A short human-readable block: outcome, duration, path length, max tracking error."""
    if math.isnan(summary.max_tracking_error_m):
        tracking = f"n/a (never above {AIRBORNE_ALTITUDE_M:g} m)"
    else:
        tracking = f"{summary.max_tracking_error_m:.2f} m (while above {AIRBORNE_ALTITUDE_M:g} m)"
    rows = [
        ("outcome", outcome),
        ("duration", f"{summary.duration_s:.1f} s" + ("" if summary.clock == VEHICLE_CLOCK else
                                                       f" (on the {summary.clock}: the vehicle gave no time stamps)")),
        ("path length", f"{summary.path_length_m:.1f} m"),
        ("max tracking error", tracking),
    ]
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"{label:<{width}}  {value}" for label, value in rows)
