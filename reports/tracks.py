"""Flown tracks cut out of trial records, and how far apart two tracks are (dynamic time warping).

A results-table row says where its record is (run_dir, trial_id), where the navigation phase lies
in the telemetry table (nav_start_ns, nav_end_ns) and where the vehicle's home is in the scene
(home_north/east/down); `navigation_track` turns that into positions in the scene frame.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from records.campaign_dir import TRIALS_DIR
from records.record import UnreadableRecord, read_table

DTW_POINTS = 150  # tracks are resampled to at most this many points before DTW (cost is quadratic)


def navigation_track(row: pd.Series) -> np.ndarray | None:
    """The (N, 3) scene-frame positions flown during the navigation phase, or None if unavailable."""
    record = Path(row["run_dir"]) / TRIALS_DIR / row["trial_id"]
    try:
        telemetry = read_table(record, "telemetry")
    except (OSError, UnreadableRecord):  # an unreadable one is listed by the report's trial pages
        return None
    start, end = row.get("nav_start_ns"), row.get("nav_end_ns")
    if pd.notna(start):
        telemetry = telemetry[telemetry["t_ns"] >= start]
    if pd.notna(end):
        telemetry = telemetry[telemetry["t_ns"] <= end]
    positions = telemetry.dropna(subset=["north", "east", "down"])[["north", "east", "down"]].to_numpy(float)
    if len(positions) == 0:
        return None
    home = np.array([row.get("home_north", 0.0), row.get("home_east", 0.0), row.get("home_down", 0.0)], dtype=float)
    return positions + np.nan_to_num(home)


def resample(track: np.ndarray, points: int = DTW_POINTS) -> np.ndarray:
    """At most `points` samples, evenly spaced in sample index (tracks are sampled at a fixed rate)."""
    if len(track) <= points:
        return track
    return track[np.linspace(0, len(track) - 1, points).round().astype(int)]


def dtw_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Mean point distance (m) along the optimal dynamic-time-warping alignment of two tracks.

    The classic recurrence D[i, j] = d(a_i, b_j) + min(D[i-1, j], D[i, j-1], D[i-1, j-1]); the total
    cost is divided by the number of aligned pairs, so the figure reads as a typical deviation in
    metres rather than growing with track length.
    """
    a, b = resample(np.asarray(a, float)), resample(np.asarray(b, float))
    cost = np.linalg.norm(a[:, None, :] - b[None, :, :], axis=2).tolist()
    inf = float("inf")
    # Row by row in plain Python floats: the recurrence is sequential along a row, and scalar numpy
    # operations would be ten times slower. Each cell keeps (total cost, aligned pairs).
    previous = [(0.0, 0)] + [(inf, 0)] * len(b)
    for row in cost:
        current = [(inf, 0)]
        for j, d in enumerate(row, start=1):
            best = min(previous[j], current[j - 1], previous[j - 1])
            current.append((best[0] + d, best[1] + 1))
        previous = current
    total, pairs = previous[-1]
    return total / pairs
