"""Trial summary metrics on flights whose answers follow from geometry."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from missions.waypoint import parse_mission
from reports.trial_summary import AIRBORNE_ALTITUDE_M, distance_to_polyline, format_summary, summarize_trial

SPEED = 2.0  # m/s along the path
RATE_HZ = 50


def fly_along(path: np.ndarray, speed: float = SPEED, offset=(0.0, 0.0, 0.0)) -> pd.DataFrame:
    """Telemetry for constant-speed flight along a polyline, sampled at RATE_HZ, shifted by offset."""
    steps = np.diff(path, axis=0)
    lengths = np.linalg.norm(steps, axis=1)
    cumulative = np.concatenate([[0.0], np.cumsum(lengths)])
    distance = np.linspace(0.0, cumulative[-1], int(cumulative[-1] / speed * RATE_HZ) + 1)
    positions = np.column_stack([np.interp(distance, cumulative, path[:, k]) for k in range(3)])
    segment = np.clip(np.searchsorted(cumulative, distance, side="right") - 1, 0, len(steps) - 1)
    velocities = steps[segment] / lengths[segment, None] * speed
    t_ns = (distance / speed * 1e9).astype(np.int64) + 123_456_789  # the monotonic clock's origin is arbitrary
    positions = positions + np.asarray(offset)
    return pd.DataFrame(
        {
            "t_ns": t_ns,
            "north": positions[:, 0],
            "east": positions[:, 1],
            "down": positions[:, 2],
            "vn": velocities[:, 0],
            "ve": velocities[:, 1],
            "vd": velocities[:, 2],
        }
    )


SQUARE = parse_mission(
    {
        "name": "square",
        "mode": "mission",
        "takeoff_altitude": 5,
        "speed": SPEED,
        "acceptance_radius": 1,
        "time_budget": 90,
        "waypoints": [{"north": n, "east": e, "alt": 5} for n, e in [(10, 0), (10, 10), (0, 10), (0, 0)]],
    }
)


def polyline_length(path: np.ndarray) -> float:
    return float(np.linalg.norm(np.diff(path, axis=0), axis=1).sum())


def test_flight_along_the_reference_tracks_it_exactly() -> None:
    reference = SQUARE.reference_path()
    summary = summarize_trial(fly_along(reference), reference)
    length = polyline_length(reference)
    assert summary.max_tracking_error_m == pytest.approx(0.0, abs=1e-9)
    assert summary.path_length_m == pytest.approx(length, rel=1e-9)
    assert summary.duration_s == pytest.approx(length / SPEED, abs=1e-6)
    assert summary.mean_speed_m_s == pytest.approx(SPEED, rel=1e-6)
    assert summary.max_speed_m_s == pytest.approx(SPEED, rel=1e-9)
    assert summary.final_distance_to_goal_m == pytest.approx(0.0, abs=1e-9)


def test_straight_leg_path_length_is_its_geometry() -> None:
    leg = np.array([[0.0, 0.0, -3.0], [30.0, 40.0, -3.0]])
    summary = summarize_trial(fly_along(leg), leg)
    assert summary.path_length_m == pytest.approx(np.linalg.norm(leg[1] - leg[0]))
    assert summary.max_tracking_error_m == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("offset", [(0.0, 1.0, 0.0), (0.6, 0.0, -0.8), (0.0, -0.6, 0.8)])
def test_flight_offset_by_one_metre_has_one_metre_error(offset) -> None:
    # The level square only (no climb or descent), so every sample is airborne and 1 m off.
    reference = SQUARE.reference_path()
    level = reference[1:-1]
    summary = summarize_trial(fly_along(level, offset=offset), reference)
    assert np.linalg.norm(offset) == pytest.approx(1.0)
    assert summary.max_tracking_error_m == pytest.approx(1.0, abs=1e-9)
    assert summary.final_distance_to_goal_m == pytest.approx(np.linalg.norm(np.array(offset) + level[-1] - reference[-1]))


def test_ground_samples_do_not_count_as_tracking_error() -> None:
    reference = SQUARE.reference_path()
    flight = fly_along(reference)
    # Parked 5 m east of home before takeoff, below the airborne threshold.
    parked = flight.iloc[:1].assign(t_ns=flight["t_ns"].iloc[0] - 1_000_000_000, east=5.0, down=-AIRBORNE_ALTITUDE_M / 2)
    summary = summarize_trial(pd.concat([parked, flight]), reference)
    assert summary.max_tracking_error_m == pytest.approx(0.0, abs=1e-9)
    assert summary.path_length_m > polyline_length(reference)  # the taxi to home still counts as travel


def test_never_airborne_has_no_tracking_error() -> None:
    ground = np.array([[0.0, 0.0, 0.0], [3.0, 4.0, 0.0]])
    summary = summarize_trial(fly_along(ground), SQUARE.reference_path())
    assert math.isnan(summary.max_tracking_error_m)
    assert summary.path_length_m == pytest.approx(5.0)


def test_as_dict_and_format_summary_show_the_numbers() -> None:
    reference = SQUARE.reference_path()
    summary = summarize_trial(fly_along(reference[1:-1], offset=(0, 1, 0)), reference)
    assert summary.as_dict()["max_tracking_error_m"] == summary.max_tracking_error_m
    text = format_summary("success", summary)
    assert "success" in text
    assert f"{summary.duration_s:.1f} s" in text
    assert f"{summary.path_length_m:.1f} m" in text
    assert f"{summary.max_tracking_error_m:.2f} m" in text
    assert len(text.splitlines()) == 4


def test_distance_beyond_a_segment_end_is_to_the_end_point() -> None:
    leg = np.array([[0.0, 0.0, -5.0], [10.0, 0.0, -5.0]])
    beyond = leg[1] + np.array([3.0, 4.0, 0.0])
    before = leg[0] + np.array([-6.0, 0.0, 8.0])
    beside = (leg[0] + leg[1]) / 2 + np.array([0.0, 2.0, 0.0])
    distances = distance_to_polyline(np.array([beyond, before, beside]), leg)
    assert distances == pytest.approx([5.0, 10.0, 2.0])
    assert distance_to_polyline(beyond, leg[1:]) == pytest.approx([5.0])  # a one-point path


def test_missing_columns_are_named() -> None:
    flight = fly_along(SQUARE.reference_path()).drop(columns=["vd"])
    with pytest.raises(ValueError, match="vd"):
        summarize_trial(flight, SQUARE.reference_path())
