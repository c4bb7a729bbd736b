"""Marginal verdicts: how close each trial came to its verdict's limits, and which cases flipped."""

from __future__ import annotations

import math

import pandas as pd

from reports.render import Heading, Margins, Table, build_report, trial_margins
from tests.test_cli import hil_each

BUDGETS = {"flyingtrust": 90.0}


def trial(trial_id: str, outcome: str, *, clearance: float, repeat: int = 0, target: str = "lockstep",
          profile: str = "default", end_time_s: float = 30.0) -> dict:
    return {"trial_id": trial_id, "scene": "forest", "config": 0, "rule": "flyingtrust", "profile": profile,
            "link": "none", "fault": "none", "planner": "avoid", "repeat": repeat, "target": target, "run": "r",
            "run_dir": "/nonexistent", "outcome": outcome, "success": outcome == "success",
            "collided": outcome == "collision", "oracle_success": outcome == "success", "end_time_s": end_time_s,
            "margin_clearance_m": clearance, "margin_fence_m": 4.0, "min_clearance_m": clearance,
            "final_distance_m": 1.0, "shortest_length_m": 50.0, "path_length_m": 55.0, "platform_kind": "custom",
            "twr_max": 2.0, "alpha_xy_max": 100.0, "alpha_z_max": 8.0, "avg_speed": 2.0, "progress": 1.0,
            "tcr_1": 0.3, "tcr_2": 0.4, "tcr_5": 0.5}


def test_margins_count_only_limits_the_verdict_did_not_end_at():
    results = pd.DataFrame([trial("close", "success", clearance=0.05),
                            trial("late", "success", clearance=2.0, end_time_s=87.0),
                            trial("contact", "collision", clearance=-0.01),
                            trial("out_of_time", "timeout", clearance=2.0, end_time_s=90.01)]).set_index("trial_id")
    margins = trial_margins(results, Margins(0.25, 5.0, BUDGETS))
    assert margins.loc["close", "marginal"] == "clearance +0.05 m"
    assert margins.loc["late", "marginal"] == "time +3.00 s"
    # A collision stops at contact, and a timeout used its whole budget: neither is close by construction.
    assert margins.loc["contact", "marginal"] == "" and margins.loc["out_of_time", "marginal"] == ""
    assert math.isnan(margins.loc["out_of_time", "margin_time_s"])
    assert margins.loc["close", "margin_time_s"] == 60.0


def test_the_report_lists_a_trial_on_a_margin_and_the_case_that_flipped():
    results = pd.DataFrame([trial("on-the-margin", "success", clearance=0.08),
                            trial("its-repeat", "collision", clearance=-0.02, repeat=1),
                            trial("far-from-it", "success", clearance=1.5, profile="1.00kg-SunnySky"),
                            trial("far-again", "success", clearance=1.4, profile="1.00kg-SunnySky", repeat=1)])
    blocks = build_report(results, margins=Margins(0.25, 5.0, BUDGETS))
    start = next(i for i, b in enumerate(blocks) if isinstance(b, Heading) and b.text == "Marginal verdicts")
    listed, cases = [b.frame for b in blocks[start + 1:start + 5] if isinstance(b, Table)][:2]
    assert list(listed["trial_id"]) == ["on-the-margin"] and list(listed["outcome"]) == ["success"]
    assert list(listed["within the margin"]) == ["clearance +0.08 m"]
    # The default profile's case passed once and collided once: a flip across its repeats, on one target.
    assert list(cases["profile"]) == ["default"]
    assert cases.iloc[0]["flipped across repeats"] == "1 of 1 targets"


def test_hostile_margins_are_refused_with_exit_2():
    cases = (["--margin-m", "nan"], ["--margin-m", "-0.1"], ["--margin-s", "inf"], ["--margin-s", "five"])
    for args, result in zip(cases, hil_each(*(["report", "/nonexistent", *args] for args in cases), timeout=60)):
        assert result.returncode == 2 and "expected a finite number >= 0" in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr
    help_text = hil_each(["report", "--help"], timeout=60)[0].stdout
    assert "--margin-m" in help_text and "within M metres" in help_text
