"""`hil fly` and `hil run` / `hil report` as a user runs them, on the built-in vehicle and on PX4 SITL."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from records.record import read_events, read_manifest
from reports.figures import trial_figures

from ..px4_builds import MAIN_BUILD, needs_px4

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "missions" / "examples" / "demo_square.yaml"
TARGETS = [pytest.param("sim", id="builtin"), pytest.param("px4-sitl", id="px4", marks=needs_px4)]


def hil(*args: str, timeout: float = 300.0) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "PX4_DIR": MAIN_BUILD or ""}
    return subprocess.run([sys.executable, "-m", "hil", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.mark.parametrize("target", TARGETS)
def test_hil_fly_flies_the_demo_mission(target, tmp_path):
    record = tmp_path / "trial"
    params = tmp_path / "vehicle.params"  # as QGroundControl saves them
    params.write_text("# Vehicle-Id Component-Id Name Value Type\n1\t1\tMPC_XY_CRUISE\t6.0\t9\n")
    result = hil("fly", str(DEMO), "--target", target, "--speed", "4", "--params", str(params),
                 "--record-dir", str(record))
    assert result.returncode == 0, result.stdout + result.stderr
    manifest = read_manifest(record)
    assert manifest["outcome"] == "success" and manifest["target"].startswith(target)
    # Vehicle time: the 10 m square with its takeoff and landing, whatever the speed factor.
    assert 20.0 < trial_figures(record)["duration_s"] < 90.0
    kinds = [e["kind"] for e in read_events(record)]
    assert kinds.count("mission_item_reached") >= 4 and kinds[-1] == "trial_finished"
    if target == "px4-sitl":
        console = (record / "px4-console.log").read_text()
        assert "Startup script returned successfully" in console
        assert "MPC_XY_CRUISE: curr: 5.0000 -> new: 6.0000" in console, "PX4 booted with the file's parameter"
        assert list((record / "ulog").glob("*.ulg")), "PX4's own flight log is kept in the record"


@needs_px4
def test_a_campaign_on_both_autopilots_and_its_comparison(tmp_path):
    campaign = tmp_path / "both.yaml"
    campaign.write_text(yaml.safe_dump({
        "name": "both", "seed": 5, "repeats": 1, "missions": [{"scene": "forest", "configs": [0]}],
        "profiles": ["default"], "targets": ["sim", "px4-sitl"], "planners": ["straight"], "speed": 4.0}))
    out = tmp_path / "run"
    result = hil("run", str(campaign), "--out", str(out), "--workers", "1", "--no-progress", timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    table = pd.read_parquet(out / "results.parquet")
    assert sorted(table["target"]) == ["px4-sitl", "sim"]
    # Both judged by the one monitor (PX4's position wanders by half a metre, so a straight line
    # through the trees may or may not graze one there).
    assert set(table["outcome"]) <= {"collision", "success"}, table[["target", "outcome", "reason"]].to_string()
    px4_trial = out / "trials" / table.loc[table["target"] == "px4-sitl", "trial_id"].iloc[0]
    assert list((px4_trial / "ulog").glob("*.ulg"))
    report = hil("report", str(out))
    assert report.returncode == 0, report.stderr
    text = (out / "report.md").read_text()
    assert "px4-sitl" in text and "sim" in text
