"""PX4's estimate against the physics' truth (`reports.estimation`), on data whose errors are known."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from reports.estimation import estimation_errors, summarize


def flight(seconds: float = 40.0, rate_hz: float = 50.0):
    """A truth table of a vehicle circling at 5 m, yawing through +-180 deg, on the ground at both ends."""
    t = np.arange(0.0, seconds, 1.0 / rate_hz)
    t_us = (t * 1e6).astype(np.int64)
    yaw = (0.5 * t + np.pi) % (2 * np.pi) - np.pi
    truth = pd.DataFrame({"time_us": t_us, "north": 10 * np.cos(0.2 * t), "east": 10 * np.sin(0.2 * t),
                          "down": -5.0 * np.ones_like(t), "vn": -2 * np.sin(0.2 * t), "ve": 2 * np.cos(0.2 * t),
                          "vd": np.zeros_like(t), "roll": 0.05 * np.ones_like(t), "pitch": np.zeros_like(t),
                          "yaw": yaw, "on_ground": (t < 3.0) | (t > seconds - 3.0)})
    return truth, t_us, yaw


def quaternion(roll, pitch, yaw):
    cr, sr, cp, sp, cy, sy = (np.cos(roll / 2), np.sin(roll / 2), np.cos(pitch / 2), np.sin(pitch / 2),
                              np.cos(yaw / 2), np.sin(yaw / 2))
    return np.column_stack([cr * cp * cy + sr * sp * sy, sr * cp * cy - cr * sp * sy,
                            cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy])


def test_known_offsets_come_back_as_the_errors_and_yaw_wraps_without_a_jump():
    truth, t_us, yaw = flight()
    lpos = pd.DataFrame({"timestamp": t_us, "x": truth["north"] + 0.3, "y": truth["east"] + 0.4,
                         "z": truth["down"] - 0.2, "vx": truth["vn"], "vy": truth["ve"] + 0.1, "vz": truth["vd"]})
    q = quaternion(0.05 + math.radians(1.0), 0.0, yaw + math.radians(2.0))
    att = pd.DataFrame({"timestamp": t_us, **{f"q[{i}]": q[:, i] for i in range(4)}})
    errors = estimation_errors(truth, lpos, att)
    expected = {"est_pos_h_m": 0.5, "est_pos_v_m": 0.2, "est_vel_h_mps": 0.1, "est_vel_v_mps": 0.0,
                "est_roll_deg": 1.0, "est_pitch_deg": 0.0, "est_yaw_deg": 2.0}
    for name, value in expected.items():
        t, e = errors[name]
        assert e.mean() == pytest.approx(value, abs=0.02), name
        assert e.max() < value + 0.05, name  # the yaw wrap at +-180 deg is no 360 deg error
        # Only airborne samples, a second in from take-off and touch-down.
        assert t.min() >= 4_000_000 and t.max() <= 36_000_000


def test_the_interval_comes_from_block_means_and_covers_a_drift():
    rng = np.random.default_rng(3)
    t_us = np.arange(0, 60_000_000, 20_000)
    # A slow random walk, as an estimator's drift: samples correlated over seconds.
    errors = np.abs(0.3 + np.cumsum(rng.normal(0, 0.002, len(t_us))))
    summary = summarize(t_us, errors)
    assert summary.low < summary.mean < summary.high and summary.samples == len(t_us)
    naive_half = 1.96 * errors.std() / math.sqrt(len(errors))
    assert summary.high - summary.mean > 3 * naive_half  # correlated samples are not 3000 independent ones
    one_block = summarize(t_us[:50], errors[:50])
    assert math.isnan(one_block.low) and one_block.p95 <= one_block.max
