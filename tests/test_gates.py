"""Gates for CI (`hil run --fail-on`, a campaign's `gates:`, `hil report --fail-on`): what fails, what passes, and a
malformed gate, on a real campaign whose one trial collides (the straight planner into forest 0, in lockstep)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from config.gates import parse_gate
from reports.gates import judge
from tests.test_cli import hil, hil_each

CAMPAIGN = """\
name: gated
seed: 7
missions:
  - {scene: forest, configs: [0], rule: flyingtrust}
targets: [lockstep]
planners: [straight]
"""


@pytest.fixture(scope="module")
def flown(tmp_path_factory):
    """The campaign, run once with a gate of its own that passes and one from the command line that fails."""
    folder = tmp_path_factory.mktemp("gated")
    (folder / "gated.yaml").write_text(CAMPAIGN + "gates: ['max:duration_s>1000']\n")
    result = hil("run", str(folder / "gated.yaml"), "--out", str(folder / "run"), "--workers", "1", "--no-progress",
                 "--fail-on", "collision", timeout=180)
    return folder, result


def test_a_failed_gate_exits_1_naming_it_and_the_passing_ones_pass(flown):
    _, result = flown
    assert result.returncode == 1, result.stdout + result.stderr
    assert "gate FAILED: collision: 1 of 1 trials collided" in result.stdout
    assert "gate passed: max:duration_s>1000: max of duration_s" in result.stdout  # the campaign file's gate


def test_gates_judge_an_existing_campaign_and_its_groups(flown):
    folder, _ = flown
    run = str(folder / "run")
    passing, grouped, resumed = hil_each(
        ["report", run, "--out", str(folder / "r1"), "--fail-on", "max:duration_s>1000"],
        ["report", run, "--out", str(folder / "r2"), "--fail-on", "success<0.5@planner", "--json"],
        ["run", run, "--no-progress"])
    assert passing.returncode == 0 and "gate passed: max:duration_s>1000" in passing.stdout, passing.stderr
    result = json.loads(grouped.stdout)
    assert grouped.returncode == result["exit_code"] == 1
    [verdict] = result["gates"]
    assert verdict["gate"] == "success<0.5@planner" and verdict["group"] == "planner=straight"
    assert not verdict["passed"] and verdict["value"] == 0.0 and verdict["threshold"] == 0.5
    # Resumed, nothing left to fly: the campaign file's own gate is judged again, and passes.
    assert resumed.returncode == 0 and "gate passed: max:duration_s>1000" in resumed.stdout, resumed.stderr


def test_a_malformed_gate_exits_2_naming_it_before_anything_flies(tmp_path):
    (tmp_path / "bad.yaml").write_text(CAMPAIGN + "gates: ['success<2']\n")
    (tmp_path / "good.yaml").write_text(CAMPAIGN)
    in_file, on_line, no_column = hil_each(
        ["run", str(tmp_path / "bad.yaml"), "--out", str(tmp_path / "a")],
        ["run", str(tmp_path / "good.yaml"), "--out", str(tmp_path / "b"), "--fail-on", "colision"],
        ["report", str(tmp_path / "missing"), "--fail-on", "p99:t_tot_ms>"])
    assert in_file.returncode == 2
    assert "gates[0]: gate 'success<2': expected a success rate from 0 to 1" in in_file.stderr
    assert on_line.returncode == 2 and "gate 'colision': expected collision, success<RATE" in on_line.stderr
    assert no_column.returncode == 2 and "gate 'p99:t_tot_ms>'" in no_column.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists(), "nothing was flown"


def test_a_success_gate_judges_the_lower_bound_not_the_rate():
    four_of_four = pd.DataFrame({"outcome": ["success"] * 4, "success": [True] * 4, "planner": ["a"] * 4})
    [verdict] = judge([parse_gate("success < 0.8")], four_of_four)
    assert not verdict.passed and math.isclose(verdict.value, 0.51, abs_tol=0.01)  # Wilson: [0.51, 1.00]
    [verdict] = judge([parse_gate("success<0.5")], four_of_four)
    assert verdict.passed and verdict.line().startswith("gate passed: success<0.5: success rate 1.00")


def test_a_gate_on_a_column_the_results_lack_names_the_nearest():
    results = pd.DataFrame({"outcome": ["success"], "success": [True], "t_tot_ms": [3.0], "scene": ["forest"]})
    with pytest.raises(ValueError, match="no column 't_tto_ms' \\(did you mean 't_tot_ms'\\?\\)"):
        judge([parse_gate("mean:t_tto_ms>1")], results)
    with pytest.raises(ValueError, match="expected a column of numbers"):
        judge([parse_gate("mean:scene>1")], results)
    [verdict] = judge([parse_gate("collision")], results.iloc[:0])
    assert not verdict.passed and verdict.detail == "no finished trials to judge"
