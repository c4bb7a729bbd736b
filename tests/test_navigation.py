"""One flight, one verdict: a campaign trial, `hil onboard` (a separate process on a MAVLink link) and
the pytest plugin's `hil_navigation` fly the same loop under the same judge (`hil.navigation`).

The flight is chosen where judges used to disagree: the vehicle flies through the goal and stops
beyond it. It is within FLYINGTRUST's 2 m goal radius for about a second while passing, never for
the rule's 2 s hold, so the flight is a timeout under FLYINGTRUST's rule wherever it is started
(`hil onboard` used to call it a success on first touching the radius), and a success under
FlightBench's rule (1.5 m, no hold).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
from pathlib import Path

import numpy as np
import pytest

import records.record
from hil.campaign import load_campaign
from hil.trial import run_trial_async, run_trial_spec
from onboard.planner import Command, Observation
from onboard.task import NavTask
from records.record import read_manifest, read_table
from records.summary import NavigationSummary

from .conftest import SPEED

ROOT = Path(__file__).resolve().parents[1]
# Its start -> goal line, and on 6 m beyond the goal, keeps more than 2 m from every tree.
SCENE, CONFIG = "flightbench-forest-low", 7
PLANNER = "tests.test_navigation:FlyPast"


class FlyPast:
    """Flies straight through the goal to a point OVERSHOOT_M beyond it, and stays there."""

    OVERSHOOT_M = 6.0

    def reset(self, task: NavTask) -> None:
        self.task = task

    def step(self, observation: Observation) -> Command:
        start, goal = np.asarray(self.task.start, dtype=float), np.asarray(self.task.goal, dtype=float)
        line = goal - start
        beyond = goal + line / np.linalg.norm(line) * self.OVERSHOOT_M
        return Command("position", tuple(beyond), yaw=float(np.arctan2(line[1], line[0])))


def campaign_trial(tmp_path: Path, rule: str):
    """The fly-past as the one trial of a campaign on the lockstep vehicle: (spec, record, cache)."""
    campaign = tmp_path / f"{rule}.yaml"
    campaign.write_text(f"name: one-verdict\nseed: 1\nmissions:\n  - {{scene: {SCENE}, configs: [{CONFIG}], "
                        f"rule: {rule}}}\ntargets: [lockstep]\nplanners: ['{PLANNER}']\n")
    [spec] = load_campaign(campaign).trials()
    return spec, tmp_path / f"campaign-{rule}", tmp_path / "cache"


def campaign_verdict(tmp_path: Path, rule: str) -> NavigationSummary:
    return run_trial_spec(*campaign_trial(tmp_path, rule))


def test_a_lockstep_campaign_trial_writes_its_tables_once_at_the_end(tmp_path, monkeypatch):
    """A lockstep trial's record is thrown away whole if the trial is killed, so it flushes no parts on the way
    (hil.trial.flush_interval_s), however long its wall time: here the recorder's clock runs an hour a reading."""
    hours = itertools.count(step=3600 * 10**9)
    monkeypatch.setattr(records.record, "now_ns", lambda: next(hours))
    parts = []
    write_part = records.record.TrialRecorder._write_part
    monkeypatch.setattr(records.record.TrialRecorder, "_write_part",
                        lambda recorder, table, rows: parts.append(table) or write_part(recorder, table, rows))
    spec, record, cache = campaign_trial(tmp_path, "flightbench")
    summary = run_trial_spec(spec, record, cache)
    assert summary.outcome == "success", summary.reason
    assert parts == []
    assert len(read_table(record, "telemetry")) == read_manifest(record)["tables"]["telemetry"] > 1000


@pytest.mark.parametrize("rule, outcome", [("flyingtrust", "timeout"), ("flightbench", "success")])
def test_a_campaign_trial_judges_the_fly_past_by_its_rule(tmp_path, rule, outcome):
    summary = campaign_verdict(tmp_path, rule)
    assert summary.outcome == outcome, summary.reason
    if outcome == "timeout":
        # It did pass through the goal: FlightBench's judge took that as a success on the same flight.
        assert "goal not reached and held" in summary.reason
        assert summary.end_time_s > 90.0


async def test_hil_onboard_gives_the_campaigns_verdict(sim, tmp_path):
    expected = (await run_trial_async(*campaign_trial(tmp_path, "flyingtrust"))).outcome
    record = tmp_path / "onboard"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "hil", "onboard", "--connect", sim.url, "--mission", f"{SCENE}:{CONFIG}",
        "--planner", PLANNER, "--rule", "flyingtrust", "--arm", "--speed-factor", str(SPEED),
        "--record-dir", str(record), cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(), 150)
    text = out.decode()
    assert proc.returncode == 1, text + (sim.failure() or "")  # 0 only for a success
    assert read_manifest(record)["outcome"] == expected == "timeout", text
    assert f"outcome  {expected}" in text


NAVIGATION_TEST = f'''
import pytest

@pytest.mark.hil
async def test_fly_past(hil_navigation):
    flight = await hil_navigation("{SCENE}:{CONFIG}", planner="{PLANNER}", rule="flyingtrust")
    assert flight.verdict.outcome == "{{expected}}", flight.verdict
'''


def test_the_pytest_plugin_gives_the_campaigns_verdict(pytester, tmp_path, monkeypatch):
    expected = campaign_verdict(tmp_path, "flyingtrust").outcome
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the inner session imports the planner from this module
    pytester.makepyfile(test_fly_past=NAVIGATION_TEST.format(expected=expected))
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    result = pytester.runpytest_subprocess("--hil-target", "lockstep", "--hil-record-dir",
                                           str(pytester.path / "records"))
    result.assert_outcomes(passed=1)


def zone_mission(tmp_path: Path) -> Path:
    """The fly-past's task as a point_to_point mission file whose airspace has a no-fly cylinder on the line."""
    from missions.scenes import scene_for

    scene = scene_for(SCENE, CONFIG)
    middle = (scene.start + scene.goal) / 2
    path = tmp_path / "zone.yaml"
    path.write_text(f"name: zone\ntype: point_to_point\nscene: {{generator: {SCENE}, seed: {CONFIG}}}\n"
                    f"airspace:\n  no_fly: [{{north: {middle[0]:.2f}, east: {middle[1]:.2f}, radius: 1.0}}]\n")
    return path


async def test_hil_onboard_flies_a_mission_file_judged_on_its_airspace(sim, tmp_path):
    record = tmp_path / "onboard"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "hil", "onboard", "--connect", sim.url, "--mission", str(zone_mission(tmp_path)),
        "--planner", PLANNER, "--arm", "--speed-factor", str(SPEED), "--record-dir", str(record), cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(), 150)
    text = out.decode()
    manifest = read_manifest(record)
    assert proc.returncode == 1, text + (sim.failure() or "")
    assert manifest["outcome"] == "breach" and "airspace.no_fly[0]" in manifest["summary"]["reason"], text


def test_the_pytest_plugin_flies_a_mission_file_judged_on_its_airspace(pytester, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makepyfile(test_zone=f'''
import pytest

@pytest.mark.hil
async def test_zone(hil_navigation):
    flight = await hil_navigation("{zone_mission(tmp_path)}", planner="{PLANNER}")
    assert flight.verdict.outcome == "breach" and "airspace.no_fly[0]" in flight.verdict.reason, flight.verdict
''')
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    result = pytester.runpytest_subprocess("--hil-target", "lockstep", "--hil-record-dir",
                                           str(pytester.path / "records"))
    result.assert_outcomes(passed=1)
