"""Simulation versus hardware: aligned trials, paired gaps with CIs, DTW, and the report section."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reports.compare import holm, metric_gaps
from reports.render import Heading, Paragraph, build_report
from reports.tracks import dtw_distance


def two_targets(shift: float) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for target, offset in (("lockstep", 0.0), ("udpin://0.0.0.0:14540", shift)):
        for config in range(10):
            for repeat in range(3):
                rows.append({"trial_id": f"{target}-{config}-{repeat}", "scene": "forest", "config": config,
                             "rule": "flyingtrust", "profile": "default", "link": "none", "fault": "none",
                             "planner": "straight", "repeat": repeat, "target": target, "run": target,
                             "run_dir": "/nonexistent", "outcome": "collision", "success": False, "collided": True,
                             "oracle_success": False, "avg_speed": 3.0 + offset + rng.normal(0, 0.05),
                             "progress": 0.4 + rng.normal(0, 0.01), "final_distance_m": 30.0,
                             "shortest_length_m": 50.0, "path_length_m": 20.0, "platform_kind": "custom",
                             "twr_max": 2.0, "alpha_xy_max": 100.0, "alpha_z_max": 8.0,
                             "tcr_1": 0.3, "tcr_2": 0.4, "tcr_5": 0.5})
    return pd.DataFrame(rows)


def test_a_real_gap_is_flagged_and_noise_is_not():
    gaps = metric_gaps(two_targets(shift=-0.5), "lockstep", "udpin://0.0.0.0:14540").set_index("metric")
    assert gaps.loc["avg_speed", "significant"]
    assert gaps.loc["avg_speed", "difference"] < -0.4 and gaps.loc["avg_speed", "pairs"] == 30
    assert not gaps.loc["progress", "significant"]


def test_dtw_of_a_shifted_and_a_time_warped_track():
    t = np.linspace(0, 1, 300)
    a = np.c_[10 * t, np.zeros_like(t), np.zeros_like(t)]
    slow_start = np.c_[10 * t**2, np.zeros_like(t), np.zeros_like(t)]  # same path, different timing
    assert dtw_distance(a, slow_start) < 0.1
    assert abs(dtw_distance(a, a + [0.0, 2.0, 0.0]) - 2.0) < 1e-9


def test_the_report_compares_targets_when_there_are_several():
    blocks = build_report(two_targets(shift=-0.5))
    headings = [b.text for b in blocks if isinstance(b, Heading)]
    assert "Simulation versus hardware" in headings
    flagged = [b.text for b in blocks if isinstance(b, Paragraph) and b.text.startswith("Significant gaps")]
    assert flagged and "avg_speed" in flagged[0]


def test_few_pairs_are_never_significant_and_p_values_are_holm_adjusted():
    few = two_targets(shift=-0.5)
    few = few[(few["config"] < 2) & (few["repeat"] < 2)]  # 4 pairs: no paired test can reach 5 %
    gaps = metric_gaps(few, "lockstep", "udpin://0.0.0.0:14540").set_index("metric")
    assert gaps.loc["avg_speed", "pairs"] == 4 and not gaps["significant"].any()
    assert holm(np.array([0.01, 0.04, 0.03])).tolist() == pytest.approx([0.03, 0.06, 0.06])


def test_two_simulators_are_not_called_hardware():
    results = two_targets(shift=-0.5).replace({"udpin://0.0.0.0:14540": "px4-sitl"})
    headings = [b.text for b in build_report(results) if isinstance(b, Heading)]
    assert "Simulation versus simulation" in headings and "Simulation versus hardware" not in headings
