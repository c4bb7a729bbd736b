"""Verdicts on the truth where the target has one (issue 31): the judge follows a target's truth over the estimate
its telemetry reports, each record says which it judged on and keeps the margins on both, and a mission trial's
margins are measured against the scene and airspace its judge watched."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bridges.truth import CARRY_FORWARD_S, AlignedTruth, SihTruth, StateIsTruth
from bridges.vehicle import VehicleState
from hil.campaign import load_campaign
from hil.monitor import TrialMonitor
from hil.rules import RULES
from hil.trial import run_trial_spec
from missions.geometry import Cylinders, Scene
from records.record import read_manifest, read_table
from records.truth import TRUTH_TABLE
from reports.figures import trial_figures

# A trunk of radius 0.5 m at (15, 3) in the scene; the vehicle's sphere is 0.3 m.
SCENE = Scene("test", 0, np.array([0.0, -10.0, -4.0]), np.array([40.0, 10.0, 0.0]),
              start=np.array([2.0, 0.0, -2.0]), goal=np.array([30.0, 0.0, -2.0]),
              cylinders=Cylinders(np.array([[15.0, 3.0, 0.0]]), np.array([[15.0, 3.0, -4.0]]), np.array([0.5])))
HOME = np.array([2.0, 0.0, 0.0])
RADIUS = 0.3


def state(t_s: float, north: float, east: float = 0.0, *, armed: bool = True) -> VehicleState:
    """A snapshot of the estimate at scene point (north, east), 2 m up (local frame: scene minus home)."""
    return VehicleState(int(t_s * 1e9), north - HOME[0], east, -2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                        0.0, 0.0, 0.0, armed, armed, "OFFBOARD", "IN_AIR", 100.0)


class Simulator:
    """Where a simulator holds its vehicle in a frame of its own: 100 m north, 50 m east and 1 m down of the
    estimate's, plus what the estimate gets wrong (`error`, NED m)."""

    FRAME = np.array([100.0, 50.0, 1.0])

    def __init__(self) -> None:
        self.true = np.zeros(3)

    def fly(self, estimate: VehicleState, error: tuple[float, float, float]) -> VehicleState:
        self.true = np.array([estimate.north, estimate.east, estimate.down]) + self.FRAME + np.array(error)
        return estimate


def fly_by(truth: AlignedTruth | None, sim: Simulator, error: tuple[float, float, float]) -> TrialMonitor:
    """The estimate passes the trunk at east 1.8 (0.4 m beyond its surface and the sphere); the truth is the
    estimate plus `error`. The simulator's frame is learnt on the ground, disarmed."""
    if truth is not None:
        truth.observe(sim.fly(state(0.0, 2.0, armed=False), (0.0, 0.0, 0.0)))
    judge = TrialMonitor(SCENE, RULES["flyingtrust"], RADIUS, HOME, truth=truth)
    judge.start(sim.fly(state(0.0, 2.0), (0.0, 0.0, 0.0)))
    for t, north in enumerate(np.arange(3.0, 25.0, 0.25)):
        if judge.update(sim.fly(state(1.0 + 0.1 * t, north, 1.8), error)) is not None:
            break
    return judge


def test_the_judge_follows_the_truth_where_the_estimate_misses_the_tree():
    sim = Simulator()
    judge = fly_by(AlignedTruth("test physics", lambda: tuple(sim.true)), sim, (0.0, 1.0, 0.0))
    assert judge.verdict is not None and judge.verdict.outcome == "collision", judge.verdict
    assert judge.judged_on == "truth" and judge.on_estimate == 0
    assert ", 2.8, -2.0) m NED" in judge.verdict.reason  # where the truth was (the estimate: east 1.8)
    # The same flight judged on its estimate alone (hardware): nothing touched.
    estimate = fly_by(None, Simulator(), (0.0, 1.0, 0.0))
    assert estimate.verdict is None and estimate.judged_on == "estimate"
    assert abs(estimate.min_clearance_m - 0.4) < 1e-9  # 3 - 1.8, less the trunk and the sphere


def test_the_judge_follows_the_truth_where_the_estimate_hits_the_tree():
    sim = Simulator()
    # The estimate flies into the trunk's side (east 2.7) while the truth is 1.5 m west of it.
    truth = AlignedTruth("test physics", lambda: tuple(sim.true))
    truth.observe(sim.fly(state(0.0, 2.0, armed=False), (0.0, 0.0, 0.0)))
    judge = TrialMonitor(SCENE, RULES["flyingtrust"], RADIUS, HOME, truth=truth)
    judge.start(sim.fly(state(0.0, 2.0), (0.0, 0.0, 0.0)))
    for t, north in enumerate(np.arange(3.0, 25.0, 0.25)):
        assert judge.update(sim.fly(state(1.0 + 0.1 * t, north, 2.7), (0.0, -1.5, 0.0))) is None
    assert judge.min_clearance_m > 0.9  # on the truth: 3 - 1.2 - 0.5 - 0.3


def test_an_armed_vehicle_keeps_the_frame_learnt_on_the_ground():
    sim = Simulator()
    truth = AlignedTruth("test physics", lambda: tuple(sim.true))
    assert truth.position(state(0.0, 2.0, armed=False)) is None  # nothing learnt yet: judged on the estimate
    truth.observe(sim.fly(state(0.0, 2.0, armed=False), (0.0, 0.0, 0.0)))
    truth.observe(sim.fly(state(1.0, 9.0), (0.0, 4.0, 0.0)))  # armed: the error stays in the difference
    assert truth.position(state(1.0, 9.0)) == (7.0, 4.0, -2.0)


def test_a_snapshot_before_the_truth_is_known_is_judged_on_the_estimate_and_counted():
    judge = TrialMonitor(SCENE, RULES["flyingtrust"], RADIUS, HOME, truth=AlignedTruth("test physics", lambda: None))
    judge.start(state(0.0, 2.0))
    assert judge.update(state(1.0, 15.0, 2.3)).outcome == "collision"  # the estimate touches the trunk
    assert judge.on_estimate == 1 and judge.judged_on == "truth"


async def test_sih_truth_is_carried_forward_a_moment_and_unknown_once_stale():
    now = [10.0]
    truth = SihTruth(lambda: now[0])

    async def one_message():
        yield {"lat": 473977420, "lon": 85455940, "alt": 488000, "vx": 500, "vy": 0, "vz": 0}  # north at 5 m/s

    await truth.follow(one_message())
    n0 = truth._now()[0]
    now[0] += 0.1
    assert truth._now()[0] - n0 == pytest.approx(0.5)  # carried on its velocity
    now[0] += CARRY_FORWARD_S
    assert truth._now() is None  # held still it would stand where it was while the vehicle flies on


def test_the_built_in_vehicles_state_is_its_truth():
    s = state(0.0, 7.0, 1.0)
    assert StateIsTruth().position(s) == (s.north, s.east, s.down)


MISSION = """\
name: trunk-pass
type: multi_waypoint
mode: mission
scene: {{file: {scene}}}
start: {{north: 0, east: 0, alt: 2}}
speed_cap: 3.0
success_radius: 1.0
time_budget: 60
land: true
airspace:
  altitude: {{min: 0, max: 3.5}}
  geofence: [[-5, -5], [20, -5], [20, 5], [-5, 5]]
waypoints:
  - {{north: 12, east: 0, alt: 2}}
"""


def test_a_lockstep_campaign_records_the_truth_and_both_margins(tmp_path):
    """A planner's trial and a mission's on the built-in vehicle: judged on its state (its truth, which the
    estimate equals), the truth table beside the telemetry, the margins the same on both sides, and the
    mission's margins real numbers from the scene and the airspace its judge watched."""
    from missions.export import save_scene

    scene_file = tmp_path / "trunk.npz"
    save_scene(scene_file, Scene("trunk", 0, np.array([-5.0, -5.0, -3.5]), np.array([20.0, 5.0, 0.0]),
                                 start=np.array([0.0, 0.0, -2.0]), goal=np.array([12.0, 0.0, -2.0]),
                                 cylinders=Cylinders(np.array([[6.0, 2.0, 0.0]]), np.array([[6.0, 2.0, -3.5]]),
                                                     np.array([0.5]))))
    mission = tmp_path / "trunk-pass.yaml"
    mission.write_text(MISSION.format(scene=scene_file))
    campaign = tmp_path / "truth.yaml"
    campaign.write_text("name: truth\nseed: 1\nmissions:\n  - {scene: flightbench-forest-low, configs: [7], "
                        f"rule: flightbench}}\n  - {{mission: {mission}}}\ntargets: [lockstep]\nplanners: [straight]\n")
    for spec in load_campaign(campaign).trials():
        record = tmp_path / "trials" / spec.trial_id
        summary = run_trial_spec(spec, record, tmp_path / "cache")
        assert summary.judged_on == "truth", spec
        truth, telemetry = read_table(record, TRUTH_TABLE), read_table(record, "telemetry")
        assert len(truth) == len(telemetry) > 100
        assert np.allclose(truth[["north", "east", "down"]], telemetry[["north", "east", "down"]])
        figures = trial_figures(record)
        for side in ("truth", "estimate"):
            assert math.isfinite(figures[f"min_clearance_{side}_m"])
            assert math.isfinite(figures[f"margin_fence_{side}_m"])
        assert figures["min_clearance_truth_m"] == figures["min_clearance_estimate_m"] == figures["margin_clearance_m"]
        assert figures["margin_fence_truth_m"] == figures["margin_fence_estimate_m"] == figures["margin_fence_m"]
        assert read_manifest(record)["summary"]["judged_on"] == "truth"
        if spec.mission:
            # The route passes the trunk 2 m off (1.2 m beyond its surface and the sphere) and the geofence 5 m
            # off its sides; the climb comes closest to the 3.5 m ceiling.
            assert 0.8 < figures["margin_clearance_m"] < 1.3, figures
            assert 0.5 < figures["margin_fence_m"] < 2.0, figures


def test_a_mission_record_from_before_has_no_margins(tmp_path):
    """A mission summary without its scene and airspace (written before they were kept) reads, margins NaN."""
    from records.summary import MissionSummary, Route

    summary = MissionSummary(outcome="success", speed_factor=1.0,
                             route=Route(((0.0, 0.0, -2.0), (5.0, 0.0, -2.0)), (("leg", ((0.0, 0.0, -2.0),
                                                                                    (5.0, 0.0, -2.0))),), 1.0,
                                         (0.0, 0.0, 0.0)))
    assert summary.airspace is None and summary.judged_on == "estimate"
    assert "airspace" not in summary.to_manifest() and Path  # nothing written for what was not kept


def test_the_report_shows_the_trials_whose_truth_and_estimate_disagree():
    from reports.render import Paragraph, Table, _truth_section, truth_disagreements

    results = pd.DataFrame([
        # Hit in truth, missed by the estimate: a collision the estimate would not have seen.
        {"trial_id": "px4-hit", "target": "px4-sitl", "outcome": "collision", "judged_on": "truth",
         "min_clearance_truth_m": -0.96, "min_clearance_estimate_m": 2.12, "margin_fence_truth_m": 5.2,
         "margin_fence_estimate_m": 4.5},
        # Both sides agree (SIH, millimetres apart).
        {"trial_id": "sih", "target": "px4-sitl", "outcome": "success", "judged_on": "truth",
         "min_clearance_truth_m": 1.482, "min_clearance_estimate_m": 1.485, "margin_fence_truth_m": 4.96,
         "margin_fence_estimate_m": 4.69},
        # Hardware: the estimate alone, no truth to disagree with.
        {"trial_id": "field", "target": "udpin://:14540", "outcome": "success", "judged_on": "estimate",
         "min_clearance_truth_m": math.nan, "min_clearance_estimate_m": 0.8, "margin_fence_truth_m": math.nan,
         "margin_fence_estimate_m": 3.0},
    ])
    disagree = truth_disagreements(results)
    assert list(disagree["trial_id"]) == ["px4-hit"]
    assert disagree.iloc[0]["the other side says"] == "no collision (min clearance +2.12 m)"
    blocks = _truth_section(results)
    text = " ".join(b.text for b in blocks if isinstance(b, Paragraph))
    assert "2 of 3 trials were judged on their target's truth" in text
    assert "3.08 m at most (1 of 2 by more than 0.1 m)" in text
    assert any(isinstance(b, Table) for b in blocks)


def test_across_a_link_profile_the_lockstep_truth_is_the_vehicle_now_not_the_snapshot_that_arrived(tmp_path):
    """In lockstep behind a link profile a snapshot is what arrived, 25-50 ms late: the judge's truth is the
    physics' state at that moment, ahead of it along the flight."""
    campaign = tmp_path / "linked.yaml"
    campaign.write_text("name: linked\nseed: 1\nmissions:\n  - {scene: flightbench-forest-low, configs: [7], "
                        "rule: flightbench}\ntargets: [lockstep]\nplanners: [straight]\nlinks: [flightbench_25_50ms]\n")
    [spec] = load_campaign(campaign).trials()
    record = tmp_path / "trials" / spec.trial_id
    assert run_trial_spec(spec, record, tmp_path / "cache").judged_on == "truth"
    rows = read_table(record, "telemetry").merge(read_table(record, TRUTH_TABLE), on="t_ns", suffixes=("", "_true"))
    moving = rows[np.hypot(rows["vn"], rows["ve"]) > 1.0]
    ahead = (moving["north_true"] - moving["north"]) * np.sign(moving["vn"])
    assert len(moving) > 50 and 0.02 < float(ahead.median()) < 0.5, ahead.describe()
