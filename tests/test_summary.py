"""The typed trial summary (records.summary): what each kind of trial writes reads back the same, through JSON
as a recorder writes it, and a manifest that is not what a writer writes is one UnreadableRecord naming the
file, the field and what was expected."""

from __future__ import annotations

import json
import math

import pytest

from records.record import TrialRecorder, UnreadableRecord, read_manifest
from records.summary import (
    FiguresSummary,
    LinkSummary,
    MissionSummary,
    NavigationSummary,
    Outcome,
    Platform,
    PytestSummary,
    Route,
    SceneFacts,
    Stop,
    Summary,
)

PLATFORM = Platform("virtual", 0.55, 3.6, 1383.7, 69.2, 0.22)
NAVIGATION = NavigationSummary(
    outcome=Outcome.COLLISION, reason="obstacle within 0.1 m", end_time_s=12.5, speed_factor=math.inf,
    scene="forest", scene_config=3, planner="avoid", goal_radius_m=2.0, nav_start_ns=10_940_000_000,
    nav_end_ns=23_440_000_000, home=(2.0, 0.0, 0.0), platform=PLATFORM,
    facts=SceneFacts(0.59, 0.21, 0.71, 56.99, 56.0))
ROUTE = Route(reference=((0.0, 0.0, -5.0), (10.0, 0.0, -5.0), (10.0, 10.0, -5.0)),
              stages=(("out", ((0.0, 0.0, -5.0), (10.0, 0.0, -5.0))), ("across", ((10.0, 0.0, -5.0), (10.0, 10.0, -5.0)))),
              success_radius_m=1.0, home=(0.0, 0.0, 0.0))
SUMMARIES = [
    NAVIGATION,
    NavigationSummary(**{**NAVIGATION.__dict__, "outcome": Outcome.ERROR, "end_time_s": math.nan, "nav_start_ns": None,
                         "nav_end_ns": None, "speed_factor": 1.0}),
    MissionSummary(outcome="aborted", reason="stopped (SIGTERM) during mission", speed_factor=3.7, route=ROUTE,
                   stop=Stop("mission", "SIGTERM", "landed")),
    MissionSummary(outcome="success", speed_factor=math.inf, route=ROUTE, platform=PLATFORM),
    Summary(outcome="error", reason="no heartbeat within 15 s"),
    PytestSummary(outcome="failed", metrics={"max_tracking_error_m": 3.4, "duration_s": math.nan},
                  failed=("max_tracking_error_m",)),
    LinkSummary(outcome="stopped", counts={"to_onboard.passed": 1200, "from_vehicle.frames": 1250}),
    FiguresSummary(outcome="success", figures={"fidelity.takeoff_t90": 3.1, "fidelity_source": "estimate"}),
]


def _finished(tmp_path, summary: Summary):
    """`summary` written into a record the way a trial session finishes one."""
    record = tmp_path / "record"
    with TrialRecorder(record, config={}, target="lockstep") as recorder:
        recorder.finish(str(summary.outcome), summary.to_manifest())
    return record


@pytest.mark.parametrize("summary", SUMMARIES, ids=lambda s: f"{type(s).__name__}-{s.outcome}")
def test_every_kind_reads_back_as_written(tmp_path, summary):
    record = _finished(tmp_path, summary)
    read = Summary.from_manifest(read_manifest(record), record / "manifest.json")
    assert type(read) is type(summary)
    assert json.dumps(read.to_manifest()) == json.dumps(summary.to_manifest())  # NaN is not equal to itself
    assert json.dumps(read.columns()) == json.dumps(summary.columns())


def test_a_navigation_summary_keeps_the_results_tables_column_names():
    assert list(NAVIGATION.columns()) == [
        "outcome", "reason", "success", "collided", "end_time_s", "judged_on", "time_budget_s", "clock", "nav_start_ns",
        "nav_end_ns", "home_north", "home_east", "home_down", "platform_kind", "mass_kg", "twr_max", "alpha_xy_max", "alpha_z_max",
        "vehicle_radius_m", "difficulty_to", "difficulty_vo", "difficulty_aol", "guide_length_m", "shortest_length_m"]
    assert NAVIGATION.columns()["collided"] is True and NAVIGATION.columns()["outcome"] == "collision"


def test_a_summary_without_a_kind_reads_as_its_values():
    """A record from before summaries were typed (its figures in its summary), or one a writer finished with a
    mapping: its scalar values are its columns, as results tables always took them."""
    old = {"outcome": "success", "reason": "", "path_length_m": 58.5, "onboard": {"cycles": 178}, "tcr_2": 0.57}
    read = Summary.from_manifest({"outcome": "success", "summary": old}, "m.json")
    assert isinstance(read, FiguresSummary)
    assert read.columns() == {"outcome": "success", "reason": "", "path_length_m": 58.5, "tcr_2": 0.57}


def _hostile(summary: dict) -> str:
    with pytest.raises(UnreadableRecord) as error:
        Summary.from_manifest({"outcome": "x", "summary": summary}, "/runs/t/manifest.json")
    return str(error.value)


def test_a_hostile_summary_is_one_error_naming_the_file_the_field_and_what_was_expected():
    written = NAVIGATION.to_manifest()
    assert _hostile({**written, "mass_kg": "heavy"}) == \
        "/runs/t/manifest.json: summary.mass_kg: expected a number (finite), got str 'heavy'"
    assert _hostile({**written, "goal_radius_m": math.nan}).startswith(
        "/runs/t/manifest.json: summary.goal_radius_m: expected a positive number (finite), got float nan")
    assert _hostile({**written, "speed_factor": -4.0}).startswith("/runs/t/manifest.json: summary.speed_factor:")
    assert _hostile({**written, "nav_start_ns": 1.5}).endswith("summary.nav_start_ns: expected an integer (ns) "
                                                               "or null, got float 1.5")
    assert _hostile({**written, "scene_config": True}).endswith("summary.scene_config: expected an integer, "
                                                                "got bool True")
    missing = dict(written)
    del missing["home_east"]
    assert _hostile(missing).endswith("summary.home_east: expected a number, got nothing")
    assert "summary.kind: expected one of trial, navigation, mission" in _hostile({**written, "kind": "rocket"})
    route = MissionSummary(outcome="success", speed_factor=1.0, route=ROUTE).to_manifest()
    route["route"]["stages"][1]["path"][0] = [10.0, "east", -5.0]
    assert _hostile(route).endswith("summary.route.stages[1].path[0][1]: expected a number (finite), got str 'east'")
    assert _hostile({**written, "reason": None}).endswith("summary.reason: expected text, got NoneType None")
    with pytest.raises(UnreadableRecord, match=r"manifest.json: summary: expected an object, got list"):
        Summary.from_manifest({"outcome": "x", "summary": [1, 2]}, "/runs/t/manifest.json")


def test_reading_a_kind_of_summary_refuses_another_kind():
    with pytest.raises(UnreadableRecord, match="summary.kind: expected navigation"):
        NavigationSummary.from_manifest({"summary": MissionSummary(outcome="success", speed_factor=1.0,
                                                                   route=ROUTE).to_manifest()}, "m.json")
