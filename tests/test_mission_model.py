"""One mission model everywhere: every shipped mission flies through `hil fly` and `hil run`, judged on its
airspace and scene, with its stages, process metrics, lat/lon points and comms-loss windows."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from missions.geo import GeoOrigin
from missions.load import load
from records.record import read_events, read_manifest, read_table
from reports.figures import trial_figures

from .px4_builds import needs_px4
from .test_tlog import check_px4_tlog

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "missions" / "examples"
# Every shipped mission file: the waypoint missions, the benchmark missions and QGroundControl plans.
SHIPPED = sorted(p for p in EXAMPLES.rglob("*") if p.suffix in (".yaml", ".plan"))
# Flown by the autopilot straight along their routes (no planner), these cross trees of their scenes.
COLLIDES = {"forest_orbit", "forest_point_to_point", "mw_waypoints"}


def hil(*args: str, timeout: float = 300.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hil", *args], check=False, cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def stage_events(record: Path) -> list[tuple[str, str, bool | None]]:
    return [(e["kind"], e["stage"], e.get("completed")) for e in read_events(record)
            if e["kind"] in ("stage_started", "stage_ended")]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_mission_flies_in_lockstep_through_hil_fly(path, tmp_path):
    record = tmp_path / "trial"
    result = hil("fly", str(path), "--target", "lockstep", "--record-dir", str(record))
    manifest = read_manifest(record)
    mission = load(path)
    expected = "collision" if path.stem in COLLIDES else "success"
    assert manifest["outcome"] == expected, result.stdout + result.stderr
    assert result.returncode == (0 if expected == "success" else 1)
    events = stage_events(record)
    started = [stage for kind, stage, _ in events if kind == "stage_started"]
    # Stages are recorded in the mission's order, each once; a successful flight completes every one.
    assert started == list(mission.stages[:len(started)]) and started
    if expected == "success":
        assert started == list(mission.stages)
        assert all(done for kind, _, done in events if kind == "stage_ended")
    else:
        assert events[-1][0] == "stage_ended" and events[-1][2] is False
        assert "obstacle within" in manifest["summary"]["reason"]
    figures = trial_figures(record)
    assert figures["success"] == (expected == "success") and figures["collided"] == (expected == "collision")
    for stage in set(started):
        assert 0.0 <= figures[f"tcr_2_{stage}"] <= 1.0


def write_mission(tmp_path: Path, mapping: dict) -> Path:
    path = tmp_path / f"{mapping['name']}.yaml"
    path.write_text(yaml.safe_dump(mapping, sort_keys=False))
    return path


# Two waypoints either side of a no-fly cylinder: the points are legal, the leg between them is not.
THROUGH_ZONE = {
    "name": "through-zone", "type": "multi_waypoint", "start": {"north": 0, "east": 0, "alt": 3},
    "speed_cap": 3.0, "success_radius": 1.0, "time_budget": 60, "land": True,
    "waypoints": [{"north": 0, "east": 0, "alt": 3}, {"north": 20, "east": 0, "alt": 3}],
    "airspace": {"altitude": {"min": 0, "max": 10},
                 "no_fly": [{"north": 30, "east": 0, "radius": 2}, {"north": 10, "east": 0, "radius": 3}]},
}


@pytest.mark.parametrize("target", ["lockstep", "sim", pytest.param("px4-sitl", marks=needs_px4)])
def test_a_route_through_a_no_fly_zone_fails_naming_the_zone(tmp_path, target):
    path = write_mission(tmp_path, THROUGH_ZONE)
    record = tmp_path / "trial"
    result = hil("fly", str(path), "--target", target, "--speed", "4", "--record-dir", str(record))
    manifest = read_manifest(record)
    assert result.returncode == 1, result.stdout + result.stderr
    assert manifest["outcome"] == "breach"
    assert "airspace.no_fly[1]" in manifest["summary"]["reason"]
    telemetry = read_table(record, "telemetry")
    # Judged where it happened: the vehicle got to the zone's edge (7 m north), not past its centre
    # (PX4 v1.16.1: 7.06 m).
    breach = next(e for e in read_events(record) if e["kind"] == "breach")
    assert 6.0 < breach["north"] < 10.0
    assert not telemetry["armed"].iloc[-1]  # and it landed


def test_the_altitude_band_is_enforced_in_flight_but_not_on_the_way_up(tmp_path):
    mission = {**THROUGH_ZONE, "name": "ceiling",
               "airspace": {"altitude": {"min": 2, "max": 4}},
               "waypoints": [{"north": 5, "east": 0, "alt": 3}, {"north": 10, "east": 0, "alt": 3.9}]}
    path = write_mission(tmp_path, mission)
    ok = hil("fly", str(path), "--target", "lockstep", "--record-dir", str(tmp_path / "ok"))
    assert ok.returncode == 0, ok.stdout + ok.stderr  # took off from 0 m and landed through the floor: fine


def test_lat_lon_waypoints_fly_to_their_local_positions(tmp_path):
    home = GeoOrigin(47.397742, 8.545594, 488.0)
    local = [(15.0, 5.0), (15.0, -10.0), (0.0, -10.0)]
    waypoints = []
    for north, east in local:
        lat, lon, _ = home.to_global(north, east, 0.0)
        waypoints.append({"lat": lat, "lon": lon, "alt": 4})
    path = write_mission(tmp_path, {
        "name": "geo", "type": "multi_waypoint", "home": {"lat": home.lat_deg, "lon": home.lon_deg, "alt": home.alt_m},
        "start": {"north": 0, "east": 0, "alt": 4}, "speed_cap": 4.0, "success_radius": 1.0, "time_budget": 90,
        "waypoints": waypoints, "land": True})
    mission = load(path)
    assert np.allclose([(p.north, p.east) for p in mission.route[:3]], local, atol=0.01)
    record = tmp_path / "trial"
    assert hil("fly", str(path), "--target", "lockstep", "--record-dir", str(record)).returncode == 0
    flown = read_table(record, "telemetry")[["north", "east", "down"]].to_numpy()
    for north, east in local:
        assert np.linalg.norm(flown - [north, east, -4.0], axis=1).min() <= mission.success_radius


def test_a_lat_lon_point_needs_a_home(tmp_path):
    path = write_mission(tmp_path, {"name": "nohome", "type": "multi_waypoint", "start": {"north": 0, "east": 0,
                                    "alt": 3}, "waypoints": [{"lat": 47.3, "lon": 8.5, "alt": 3}]})
    result = hil("fly", str(path), "--target", "lockstep")
    assert result.returncode == 2
    assert f"{path}: waypoints[0]: expected north/east, or a `home: {{lat, lon, alt}}` block" in result.stderr


def test_a_comms_loss_window_cuts_the_simulated_link(tmp_path):
    mission = {**THROUGH_ZONE, "name": "comms", "airspace": {"altitude": {"min": 0, "max": 10}},
               "comms": {"loss_windows": [{"start_s": 12, "duration_s": 1.5}]}}
    path = write_mission(tmp_path, mission)
    record = tmp_path / "trial"
    hil("fly", str(path), "--target", "lockstep", "--record-dir", str(record))
    link = read_table(record, "link")
    dropped = link[link["reason"] == "outage"]
    assert len(dropped) > 10
    # Only inside the window (link time, s from its start) and both ways.
    t = dropped["arrival_ns"] / 1e9  # lockstep: simulated time since the link started
    assert t.min() >= 11.9 and t.max() <= 13.6
    assert set(dropped["direction"]) == {"to_vehicle", "to_onboard"}


def test_a_campaign_runs_mission_files_and_suites(tmp_path):
    zone = write_mission(tmp_path, THROUGH_ZONE)
    campaign = tmp_path / "c.yaml"
    campaign.write_text(yaml.safe_dump({
        "name": "missions", "seed": 1, "repeats": 1,
        "missions": [{"mission": zone.name}, {"suite": "templates"}, {"scene": "forest", "configs": [0]}],
        "profiles": ["default"], "targets": ["lockstep"], "links": ["none"], "faults": ["none"],
        "planners": ["straight"], "computes": ["none"]}))
    out = tmp_path / "out"
    result = hil("run", str(campaign), "--out", str(out), timeout=600)
    assert result.returncode in (0, 1), result.stderr
    import pandas as pd
    results = pd.read_parquet(out / "results.parquet")
    missions = results[results["planner"] == "autopilot"]
    assert len(missions) == 1 + 8 and len(results) == 10  # templates: p2p on 3 seeds + 5 missions
    zone_row = missions[missions["scene"] == "through-zone"].iloc[0]
    assert zone_row["outcome"] == "breach" and "airspace.no_fly[1]" in zone_row["reason"]
    survey = missions[missions["scene"] == "field_survey"].iloc[0]
    assert survey["outcome"] == "success" and survey["tcr_2_coverage"] > 0.9
    report = hil("report", str(out), timeout=300)
    assert report.returncode == 0, report.stderr
    text = (out / "report.md").read_text()
    assert "| autopilot | field_survey | 1 |" in text


def test_a_broken_mission_file_in_a_campaign_is_named(tmp_path):
    bad = write_mission(tmp_path, {**THROUGH_ZONE, "name": "bad", "speed_cap": "fast"})
    campaign = tmp_path / "c.yaml"
    campaign.write_text(yaml.safe_dump({
        "name": "x", "seed": 1, "repeats": 1, "missions": [{"mission": bad.name}], "profiles": ["default"],
        "targets": ["lockstep"], "links": ["none"], "faults": ["none"], "planners": ["straight"],
        "computes": ["none"]}))
    result = hil("run", str(campaign), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "missions[0].mission" in result.stderr and "speed_cap" in result.stderr and "expected" in result.stderr


def test_a_missions_fault_schedule_is_applied_in_flight(tmp_path):
    mission = {**THROUGH_ZONE, "name": "windy", "airspace": {"altitude": {"min": 0, "max": 10}},
               "faults": [{"start_s": 3, "type": "steady", "target": "wind", "wind": [0.0, 4.0, 0.0]}]}
    record = tmp_path / "trial"
    hil("fly", str(write_mission(tmp_path, mission)), "--target", "lockstep", "--record-dir", str(record))
    injected = [e for e in read_events(record) if e["kind"] == "fault_injected"]
    assert len(injected) == 1 and injected[0]["accepted"] and 3.0 <= injected[0]["t_s"] < 4.0
    # A fault without a duration lasts to the end of the flight: a 4 m/s wind from the west keeps
    # pushing the vehicle east of its straight north leg (it was cleared at once, before).
    telemetry = read_table(record, "telemetry")
    assert telemetry["east"].max() > 0.3


def test_a_flown_mission_is_kept_as_a_plan_placed_at_the_vehicles_home(tmp_path):
    record = tmp_path / "trial"
    source = EXAMPLES / "benchmark" / "tower_inspection.yaml"
    assert hil("fly", str(source), "--target", "lockstep", "--record-dir", str(record)).returncode == 0
    kept = load(record / "mission.plan")
    flown = load(source)
    # The plan's home is where the vehicle took off (below the start), so its route is the same one.
    offset = flown.home_in_mission
    assert np.allclose(kept.reference_path() + offset, flown.reference_path(), atol=0.01)
    assert kept.airspace.no_fly and np.isclose(kept.airspace.no_fly[0].north + offset[0], flown.airspace.no_fly[0].north)


def test_hil_mission_checks_and_exports(tmp_path):
    check = hil("mission", "check", *map(str, SHIPPED))
    assert check.returncode == 0, check.stderr
    assert check.stdout.count("  stages    ") == len(SHIPPED)
    out = tmp_path / "survey.plan"
    export = hil("mission", "export", str(EXAMPLES / "benchmark" / "field_survey.yaml"), "--out", str(out),
                 "--home", "47.3977,8.5456,488")
    assert export.returncode == 0, export.stderr
    assert np.allclose(load(out).reference_path(), load(EXAMPLES / "benchmark" / "field_survey.yaml").reference_path(),
                       atol=0.01)
    bad = tmp_path / "bad.plan"
    bad.write_text('{"fileType": "Plan", "version": 1, "mission": {"items": "none"}}')
    refused = hil("mission", "check", str(bad))
    assert refused.returncode == 2 and str(bad) in refused.stderr and "Traceback" not in refused.stderr
    assert hil("mission", "export", "demo_square", "--out", str(out), "--home", "95,0,0").returncode == 2


def test_the_benchmark_suites_expand_into_campaign_trials_and_fly(tmp_path):
    from hil.campaign import parse_campaign
    from missions.suite import load_suite

    def campaign(*entries):
        return parse_campaign({"name": "suites", "seed": 1, "missions": list(entries), "targets": ["lockstep"],
                               "planners": ["straight"]}, str(tmp_path / "c.yaml"))

    flyingtrust = campaign({"suite": "flyingtrust"}).trials()
    assert len(flyingtrust) == len(load_suite("flyingtrust")) == 70
    assert {t.rule for t in flyingtrust} == {"flyingtrust"}
    flightbench = campaign({"suite": "flightbench"}).trials()
    assert len(flightbench) == 8 and {t.rule for t in flightbench} == {"flightbench"}
    # The FlightBench suite flies whole (straight through its scenes), judged by FlightBench's rule.
    path = tmp_path / "fb.yaml"
    path.write_text(yaml.safe_dump({"name": "fb", "seed": 1, "missions": [{"suite": "flightbench"}],
                                    "targets": ["lockstep"], "planners": ["straight"]}))
    result = hil("run", str(path), "--out", str(tmp_path / "out"), timeout=600)
    import pandas as pd
    results = pd.read_parquet(tmp_path / "out" / "results.parquet")
    assert len(results) == 8 and set(results["rule"]) == {"flightbench"}, result.stderr
    assert set(results["outcome"]) <= {"success", "collision", "timeout"}


def test_a_termination_that_does_not_stop_flies_on_and_still_fails(tmp_path):
    mission = {**THROUGH_ZONE, "name": "fly-on", "termination": {"stop_on_geofence": False}}
    record = tmp_path / "trial"
    result = hil("fly", str(write_mission(tmp_path, mission)), "--target", "lockstep", "--record-dir", str(record))
    manifest = read_manifest(record)
    assert result.returncode == 1 and manifest["outcome"] == "breach"
    assert "airspace.no_fly[1]" in manifest["summary"]["reason"]
    # It went on through the zone to the last waypoint and completed every stage.
    assert read_table(record, "telemetry")["north"].max() > 19.0
    assert trial_figures(record)["stages_completed"] == 1.0
    [breach] = [e for e in read_events(record) if e["kind"] == "breach"]
    assert breach["stopped"] is False


def test_dropping_below_the_altitude_floor_in_flight_is_a_breach(tmp_path):
    # A motor losing most of its thrust mid-route brings the vehicle down through the band's floor.
    mission = {**THROUGH_ZONE, "name": "floor", "airspace": {"altitude": {"min": 2.5, "max": 10}},
               "start": {"north": 0, "east": 0, "alt": 4},
               "waypoints": [{"north": 5, "east": 0, "alt": 4}, {"north": 10, "east": 0, "alt": 4}],
               "faults": [{"start_s": 14, "type": "degraded", "target": "motor1", "severity": 0.9}]}
    record = tmp_path / "trial"
    hil("fly", str(write_mission(tmp_path, mission)), "--target", "lockstep", "--record-dir", str(record))
    manifest = read_manifest(record)
    assert manifest["outcome"] == "breach", manifest["summary"]["reason"]
    assert "altitude within the band 2.5-10 m" in manifest["summary"]["reason"]


# PX4 v1.16.1 over the harness physics, from a clean-clone CI record (hil fly demo_square --target px4-sitl
# --physics harness --speed 4): its local position's down (m) at the last samples on the ground and the
# first ones it reported TAKING_OFF (in air), a millimetre either side of the ground.
PX4_TAKEOFF_DOWN_M = [(-0.001038, False), (-0.000458, False), (-0.000031, True), (0.000336, True), (0.000885, True),
                      (0.000122, True), (-0.000549, True), (-0.001007, True), (-0.000031, True), (0.000854, True)]


def test_a_band_from_the_ground_is_not_left_by_px4s_takeoff_and_its_floor_holds_once_climbed(tmp_path):
    from bridges.vehicle import VehicleState
    from hil.monitor import RouteJudge
    from missions.schema import load_benchmark_mission
    from records.record import TrialRecorder

    mission = load_benchmark_mission(EXAMPLES / "demo_square.yaml")
    assert (mission.airspace.alt_min, mission.airspace.alt_max) == (0.0, 120.0)

    def state(t: int, down: float, in_air: bool = True, mode: str = "MISSION") -> VehicleState:
        return VehicleState(t * 10**7, 0.0, 0.0, down, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, math.nan, math.nan, math.nan,
                            True, in_air, mode, "IN_AIR" if in_air else "ON_GROUND", 100.0)

    with TrialRecorder(tmp_path / "rec", config={}, target="test") as recorder:
        def climbed() -> RouteJudge:
            judge = RouteJudge(mission, 0.2, recorder)
            takeoff = [judge.judge(state(t, down, in_air)) for t, (down, in_air) in enumerate(PX4_TAKEOFF_DOWN_M)]
            assert takeoff == [None] * len(PX4_TAKEOFF_DOWN_M)
            assert judge.judge(state(20, -5.0)) is None
            return judge

        # Climbed into the band, the floor holds: in the air below home (a fall into a pit) is a breach...
        assert climbed().judge(state(30, 0.3)).outcome == "breach"
        # ...but not while landing, the vehicle on its way down through the floor.
        assert climbed().judge(state(31, 0.3, mode="LAND")) is None


@needs_px4
def test_a_qgroundcontrol_plan_flies_on_px4_stage_by_stage(tmp_path):
    record = tmp_path / "trial"
    plan = EXAMPLES / "qgc" / "field_square.plan"
    result = hil("fly", str(plan), "--target", "px4-sitl", "--speed", "4", "--record-dir", str(record))
    manifest = read_manifest(record)
    assert result.returncode == 0 and manifest["outcome"] == "success", result.stdout + result.stderr
    mission = load(plan)
    started = [stage for kind, stage, _ in stage_events(record) if kind == "stage_started"]
    figures = trial_figures(record)
    assert started == list(mission.stages) and figures["stages_completed"] == 1.0
    assert figures["tcr_2"] > 0.9
    # PX4's own home places the kept plan: the route comes back where the file put it.
    assert np.allclose(load(record / "mission.plan").reference_path(), mission.reference_path(), atol=0.05)
    check_px4_tlog(record)  # and its telemetry log is PX4's, whole


def test_every_shipped_mission_flies_through_hil_run_with_hil_flys_verdict(tmp_path):
    campaign = tmp_path / "shipped.yaml"
    campaign.write_text(yaml.safe_dump({"name": "shipped", "seed": 1, "targets": ["lockstep"],
                                        "missions": [{"mission": str(p)} for p in SHIPPED]}))
    hil("run", str(campaign), "--out", str(tmp_path / "out"), timeout=600)
    import pandas as pd
    results = pd.read_parquet(tmp_path / "out" / "results.parquet").set_index("scene")
    assert sorted(results.index) == sorted(p.stem for p in SHIPPED)
    for stem, row in results.iterrows():
        assert row["outcome"] == ("collision" if stem in COLLIDES else "success"), (stem, row["reason"])
        assert row["planner"] == "autopilot"
        assert (row["stages_completed"] == 1.0) == row["success"], stem
