"""Flight metrics on analytic trajectories, and the group metrics on hand-computed examples."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from missions.geometry import Cylinders, Scene
from reports.metrics import (Trajectory, flight_metrics, group_metrics, progress, safety_figures, timing_summary,
                             trajectory_coverage)


def circle(radius: float, speed: float, seconds: float, rate: float = 200.0) -> Trajectory:
    t = np.arange(0.0, seconds, 1.0 / rate)
    w = speed / radius
    pos = np.c_[radius * np.cos(w * t), radius * np.sin(w * t), np.full_like(t, -2.0)]
    vel = np.c_[-speed * np.sin(w * t), speed * np.cos(w * t), np.zeros_like(t)]
    return Trajectory(t, pos, vel)


def line(speed: float, seconds: float, rate: float = 50.0) -> Trajectory:
    t = np.arange(0.0, seconds, 1.0 / rate)
    pos = np.c_[speed * t, np.zeros_like(t), np.full_like(t, -2.0)]
    return Trajectory(t, pos, np.tile([speed, 0.0, 0.0], (len(t), 1)))


def test_circle_at_constant_speed_has_curvature_one_over_r_and_acceleration_v2_over_r():
    r, v = 5.0, 3.0
    trajectory = circle(r, v, seconds=20.0)
    acc, _ = trajectory.derivatives()
    inner = slice(5, -5)  # one-sided differences at the ends
    assert np.linalg.norm(acc[inner], axis=1) == pytest.approx(v * v / r, rel=1e-3)
    metrics = flight_metrics(trajectory)
    assert metrics.avg_speed == pytest.approx(v, rel=1e-6)
    assert metrics.avg_curvature == pytest.approx(1.0 / r, rel=2e-3)
    # FlightBench's average acceleration is (1/L) int |a|^2 dt = (v^2/r)^2 T / (v T) = v^3 / r^2.
    assert metrics.avg_acceleration == pytest.approx(v**3 / r**2, rel=5e-3)


def test_straight_line_has_zero_curvature_acceleration_and_jerk():
    metrics = flight_metrics(line(speed=4.0, seconds=10.0))
    assert metrics.avg_speed == pytest.approx(4.0)
    assert metrics.path_length_m == pytest.approx(4.0 * (10.0 - 0.02))
    assert metrics.avg_curvature == pytest.approx(0.0, abs=1e-12)
    assert metrics.avg_acceleration == pytest.approx(0.0, abs=1e-12)
    assert metrics.avg_jerk == pytest.approx(0.0, abs=1e-12)


def test_progress_stops_at_the_collision():
    trajectory = line(speed=2.0, seconds=10.0)  # 0 -> 20 m north
    reference = np.array([[0.0, 0.0, -2.0], [40.0, 0.0, -2.0]])
    assert progress(trajectory, reference, collision_time_s=5.0) == pytest.approx(10.0 / 40.0, abs=1e-3)
    assert progress(trajectory, reference, collision_time_s=None) == pytest.approx(19.96 / 40.0, abs=1e-3)


def test_trajectory_coverage_counts_reference_points_within_delta():
    reference = np.array([[0.0, 0.0, 0.0], [10.0, 0.0, 0.0]])
    flown = np.array([[0.0, 1.5, 0.0], [10.0, 1.5, 0.0]])  # parallel, 1.5 m aside
    coverage = trajectory_coverage(flown, reference)
    assert coverage == {"tcr_1": 0.0, "tcr_2": 1.0, "tcr_5": 1.0}
    half = trajectory_coverage(np.array([[0.0, 0.0, 0.0], [5.0, 0.0, 0.0]]), reference, tolerances=(0.5,))
    assert half["tcr_0.5"] == pytest.approx(0.55, abs=0.03)  # points up to 5.5 m are within 0.5 m


def test_safety_figures_clearance_and_geofence_time():
    scene = Scene("s", 0, np.array([0.0, -5.0, -3.0]), np.array([20.0, 5.0, 0.0]), np.zeros(3), np.zeros(3),
                  cylinders=Cylinders(np.array([[10.0, 1.0, 0.0]]), np.array([[10.0, 1.0, -3.0]]), np.array([0.5])))
    t = np.arange(0.0, 10.0, 0.5)
    pos = np.c_[t * 2.0, np.zeros_like(t), np.where(t >= 8.0, -3.5, -2.0)]  # climbs above the ceiling at 8 s
    figures = safety_figures(Trajectory(t, pos, np.zeros_like(pos)), scene, vehicle_radius=0.2)
    assert figures.min_clearance_m == pytest.approx(1.0 - 0.5 - 0.2)
    assert figures.altitude_violation_s == pytest.approx(1.5)  # samples at 8.0, 8.5, 9.0 count to the next
    assert figures.geofence_violation_s == 0.0
    assert figures.margin_fence_m == pytest.approx(-0.5)  # 0.5 m above the ceiling, its closest to any limit


def test_uav_on_and_huge_bench_group_metrics_by_hand():
    trials = pd.DataFrame({
        "success": [True, True, False, False],
        "collided": [False, True, True, False],
        "oracle_success": [True, True, True, False],
        "final_distance_m": [1.0, 1.5, 10.0, 20.0],
        "shortest_length_m": [10.0, 10.0, 10.0, 10.0],
        "path_length_m": [12.5, 10.0, 4.0, 30.0],
        "tcr_1": [1.0, 0.5, 0.2, 0.0], "tcr_2": [1.0, 0.6, 0.3, 0.1], "tcr_5": [1.0, 1.0, 0.5, 0.2],
    })
    m = group_metrics(trials)
    assert m["SR"] == 0.5 and m["OSR"] == 0.75 and m["CR"] == 0.5
    assert m["DTS"] == pytest.approx(32.5 / 4)
    assert m["SPL"] == pytest.approx((10 / 12.5 + 10 / 10) / 4)  # 0.45
    assert m["CSPL"] == pytest.approx((10 / 12.5) / 4)  # the second success collided
    assert m["TCR@1"] == pytest.approx(0.425)


def test_timing_summary_means_per_cycle():
    timing = pd.DataFrame({"cycle": [0, 0, 0, 1, 1, 1], "stage": ["map", "plan", "control"] * 2,
                           "dur_ns": [2e6, 1e6, 0.1e6, 4e6, 3e6, 0.1e6]})
    summary = timing_summary(timing)
    assert summary["t_map_ms"] == pytest.approx(3.0)
    assert summary["t_plan_ms"] == pytest.approx(2.0)
    assert summary["t_ctrl_ms"] == pytest.approx(0.1)
    assert summary["t_tot_ms"] == pytest.approx(5.1)
    assert all(math.isnan(v) for v in timing_summary(None).values())


def test_thinning_keeps_the_points_its_definition_keeps_even_at_exactly_the_spacing():
    """_thin decides most points on plain floats; on a lattice of the spacing's step many points lie exactly one
    spacing (or a rounding error of it) from the last kept one, where it must decide as the numpy norm does."""
    from reports.metrics import _thin

    def by_definition(points: np.ndarray, spacing: float) -> np.ndarray:
        kept = [points[0]]
        for p in points[1:]:
            if np.linalg.norm(p - kept[-1]) >= spacing:
                kept.append(p)
        if not np.array_equal(kept[-1], points[-1]):
            kept.append(points[-1])
        return np.asarray(kept)

    rng = np.random.default_rng(7)
    for spacing, scale in ((0.25, 4), (0.1, 10), (0.3, 10)):
        points = np.round(np.cumsum(rng.normal(0.0, spacing / 2, size=(3000, 3)), axis=0) * scale) / scale
        assert np.array_equal(_thin(points, spacing), by_definition(points, spacing))
