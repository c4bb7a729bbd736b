"""One campaign on the built-in vehicle, PX4 SIH, PX4 on the harness's physics (and the HITL bench when it is
there), set side by side by `hil report` (issue 32): per-target physics in a campaign, the estimate against the
truth on every target that has one, and the section's table and intervals on synthetic results."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from hil.campaign import parse_campaign
from records.record import read_table
from records.truth import TRUTH_TABLE
from reports.compare import metric_gaps, reference_target, target_order, target_values
from reports.estimation import estimate_against_truth
from reports.render import Figure, Heading, Paragraph, Table, build_report
from targets.spec import TargetSpec

from .px4_builds import MAIN_BUILD, needs_px4

ROOT = Path(__file__).resolve().parents[1]
DEMO_SQUARE = ROOT / "missions" / "examples" / "demo_square.yaml"
# demo_square made small: the bench flies in real time, each of its flights followed by its ULog's download.
SHORT_SQUARE = ROOT / "tests" / "missions" / "short_square.yaml"
SPEED = 4.0


def _bench_exists() -> bool:
    try:
        TargetSpec.parse("px4-hitl")
    except ValueError:
        return False
    return True


# ------------------------------------------------------------------------------------------ target names
def test_a_target_name_carries_its_physics():
    assert TargetSpec.parse("px4-sitl+harness") == TargetSpec("px4-sitl", "px4-sitl+harness", physics="harness")
    assert TargetSpec.parse("px4-sitl:3+harness").instance == 3
    assert TargetSpec.parse("px4-sitl").physics is None
    for bad in ("sim+harness", "px4-sitl+harness+harness", "px4-sitl:12+harness", "px4-sitl:x+harness"):
        with pytest.raises(ValueError, match=re.escape(repr(bad))):
            TargetSpec.parse(bad)


def test_each_target_of_a_campaign_flies_its_own_physics():
    campaign = parse_campaign({"name": "x", "missions": [{"mission": str(DEMO_SQUARE)}], "repeats": 2,
                               "targets": ["sim", "px4-sitl", "px4-sitl+harness"]}, "c.yaml")
    physics = {(t.target, t.repeat): t.physics for t in campaign.trials()}
    assert physics == {("sim", 0): "default", ("sim", 1): "default", ("px4-sitl", 0): "default",
                       ("px4-sitl", 1): "default", ("px4-sitl+harness", 0): "harness",
                       ("px4-sitl+harness", 1): "harness"}
    # What SIH cannot apply of a repeat's perturbation is left out on px4-sitl only.
    drawn = {t.target: t.perturbation for t in campaign.trials() if t.repeat == 1}
    assert drawn["px4-sitl"].wind_ned == (0.0, 0.0, 0.0) and "wind_m_s" in dict(drawn["px4-sitl"].not_applied)
    assert any(drawn["px4-sitl+harness"].wind_ned) and "wind_m_s" not in dict(drawn["px4-sitl+harness"].not_applied)
    # The campaign's own physics: still valid for the files written before, and a +harness name overrides it
    # either way.
    old = parse_campaign({"name": "x", "missions": [{"mission": str(DEMO_SQUARE)}], "physics": "harness",
                          "targets": ["px4-sitl", "px4-sitl+harness"]}, "c.yaml")
    assert {t.physics for t in old.trials()} == {"harness"}
    if _bench_exists():  # the bench is PX4 on the harness's physics, whatever the campaign's physics: says
        bench = parse_campaign({"name": "x", "missions": [{"mission": str(DEMO_SQUARE)}], "targets": ["px4-hitl"]},
                               "c.yaml")
        assert {t.physics for t in bench.trials()} == {"harness"}


# ---------------------------------------------------------------------------- the section, on synthetic results
BENCH_TIME = 50.0
# Each target's time used against the bench's, by repeat: PX4 on the harness's physics 1.5 s slower with some
# spread, SIH 4 s faster, the built-in vehicle the same.
SHIFT = {"sim": 0.0, "px4-sitl": -4.0, "px4-sitl+harness": 1.5, "px4-hitl": 0.0}
TRUTH_ERROR = {"sim": 0.0, "px4-sitl": 0.3, "px4-sitl+harness": 0.2, "px4-hitl": math.nan}


def synthetic(repeats: int = 8) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    rows = []
    for target in ("px4-sitl+harness", "px4-hitl", "sim", "px4-sitl"):  # not the report's order
        for repeat in range(repeats):
            time_used = BENCH_TIME + repeat + SHIFT[target] + (rng.normal(0, 0.3) if target != "px4-hitl" else 0)
            rows.append({"trial_id": f"{target}-{repeat}", "scene": "demo-square", "config": -1, "rule": "mission",
                         "profile": "default", "link": "none", "fault": "none", "planner": "autopilot",
                         "compute": "none", "onboard": "local", "mission": "demo_square.yaml", "repeat": repeat,
                         "target": target, "physics": "harness" if target.endswith("harness") else "default",
                         "outcome": "success", "success": True, "collided": False, "oracle_success": True,
                         "time_used_s": time_used, "duration_s": time_used, "path_length_m": 51.0 + rng.normal(0, 1),
                         "shortest_length_m": 50.0, "final_distance_m": 0.4, "tracking_error_m": 0.3,
                         "truth_error_h_m": TRUTH_ERROR[target] + (rng.uniform(0, 0.05) if target != "sim" else 0),
                         "truth_error_h_m_p95": 2 * TRUTH_ERROR[target], "truth_error_v_m": TRUTH_ERROR[target],
                         "truth_error_v_m_p95": 2 * TRUTH_ERROR[target], "platform_kind": "custom",
                         "twr_max": 2.0, "alpha_xy_max": 100.0, "alpha_z_max": 8.0, "tcr_1": 1.0, "tcr_2": 1.0,
                         "tcr_5": 1.0, "run": "r", "run_dir": "/nonexistent"})
    return pd.DataFrame(rows)


def test_the_bench_is_the_reference_and_targets_go_from_simulation_to_hardware():
    targets = list(dict.fromkeys(synthetic()["target"]))
    assert target_order(targets) == ["sim", "px4-sitl", "px4-sitl+harness", "px4-hitl"]
    assert reference_target(targets) == "px4-hitl"
    assert reference_target(["sim", "px4-sitl+harness", "px4-sitl"]) == "px4-sitl"  # no bench: SIH
    assert reference_target(["sim", "udpin://127.0.0.1:14540", "px4-sitl"]) == "udpin://127.0.0.1:14540"


def test_paired_differences_get_t_intervals_and_a_real_gap_is_flagged():
    results = synthetic()
    gaps = metric_gaps(results, "px4-hitl", "px4-sitl+harness").set_index("metric")
    pairs = results.pivot(index="repeat", columns="target", values="time_used_s")
    differences = (pairs["px4-sitl+harness"] - pairs["px4-hitl"]).to_numpy()
    half = stats.t.ppf(0.975, len(differences) - 1) * differences.std(ddof=1) / math.sqrt(len(differences))
    gap = gaps.loc["time_used_s"]
    assert gap["pairs"] == 8 and gap["difference"] == pytest.approx(differences.mean())
    assert (gap["low"], gap["high"]) == pytest.approx((differences.mean() - half, differences.mean() + half))
    assert gap["significant"] and 1.0 < gap["low"] < 1.5 < gap["high"] < 2.0
    assert not gaps.loc["path_length_m", "significant"]
    # A mission's duration is its time used: compared once. The bench has no truth: not compared on it.
    assert "duration_s" not in gaps.index and "truth_error_h_m" not in gaps.index
    # Too few pairs are never significant, however large the gap.
    few = metric_gaps(synthetic(repeats=3), "px4-hitl", "px4-sitl").set_index("metric")
    assert few.loc["time_used_s", "difference"] == pytest.approx(-4.0, abs=0.5) and not few["significant"].any()


def test_each_target_has_its_own_value_and_one_sample_has_no_interval():
    values = target_values(synthetic(repeats=1), ["sim", "px4-hitl"]).set_index(["metric", "target"])
    one = values.loc[("time_used_s", "sim")]
    assert one["n"] == 1 and one["value"] == pytest.approx(BENCH_TIME, abs=1.5) and math.isnan(one["low"])
    success = target_values(synthetic(repeats=3), ["sim"]).set_index(["metric", "target"]).loc[("success", "sim")]
    assert success["value"] == 1.0 and success["low"] < 0.5  # Wilson's: 3 of 3 is not certainty


def test_the_report_sets_the_four_targets_side_by_side():
    # A trial that ended in error measured the harness, not the vehicle: no sample of its target.
    errored = synthetic(repeats=1).iloc[[1]].assign(trial_id="error-0", repeat=8, outcome="error", success=False,
                                                    time_used_s=1e6)
    blocks = build_report(pd.concat([synthetic(), errored], ignore_index=True))
    assert any(isinstance(b, Paragraph) and "1 trial that ended in error" in b.text for b in blocks)
    headings = [b.text for b in blocks if isinstance(b, Heading)]
    assert "Simulation against the bench" in headings
    start = headings.index("Simulation against the bench")
    section = blocks[[i for i, b in enumerate(blocks) if isinstance(b, Heading)][start]:]
    side_by_side = next(b.frame for b in section if isinstance(b, Table))
    assert list(side_by_side.columns) == ["metric", "sim", "px4-sitl", "px4-sitl+harness", "px4-hitl",
                                          "sim - px4-hitl", "px4-sitl - px4-hitl", "px4-sitl+harness - px4-hitl"]
    time_used = side_by_side.set_index("metric").loc["time used (vehicle s)"]
    assert time_used["px4-sitl+harness - px4-hitl"].startswith("+1.") and time_used["px4-sitl+harness - px4-hitl"
                                                                                    ].endswith("(8) *")
    assert any(isinstance(b, Figure) and b.name == "targets_by_metric" for b in section)
    truth = next(b.frame for b in section if isinstance(b, Table) and "truth" in b.frame).set_index("target")
    assert truth.loc["px4-hitl", "truth"].startswith("none") and truth.loc["px4-hitl", "horizontal mean (m)"] == "-"
    assert truth.loc["px4-sitl", "truth"].startswith("PX4 SIH")
    assert truth.loc["px4-sitl+harness", "truth"] == "the harness's physics"
    assert truth.loc["sim", "horizontal mean (m)"].startswith("0.000 [0.000, 0.000] (8)")
    significant = [b.text for b in section if isinstance(b, Paragraph) and b.text.startswith("Significant gaps")]
    assert len(significant) == 3 and "time_used_s" in significant[1] + significant[2]


def test_the_estimate_against_the_truth_is_each_snapshot_against_its_own_truth():
    t_ns = np.arange(10) * 100_000_000
    telemetry = pd.DataFrame({"t_ns": t_ns, "north": np.arange(10.0), "east": 0.0, "down": -5.0})
    # A truth 3 m north and 4 m east of the estimate, 1 m below it; one snapshot has none.
    truth = pd.DataFrame({"t_ns": t_ns[1:], "north": np.arange(1.0, 10.0) + 3, "east": 4.0, "down": -4.0})
    errors = estimate_against_truth(telemetry, truth)
    assert errors["truth_error_h_m"] == pytest.approx(5.0) and errors["truth_error_v_m"] == pytest.approx(1.0)
    assert errors["truth_error_h_m_p95"] == pytest.approx(5.0)
    assert all(math.isnan(v) for v in estimate_against_truth(telemetry, truth.iloc[:0]).values())


# ------------------------------------------------------------------------------------------- on PX4 v1.16.1
@needs_px4
def test_a_campaign_flies_sih_and_the_harness_physics_side_by_side_and_the_report_compares_them(tmp_path):
    """A small square on the built-in vehicle, PX4 SIH and PX4 on the harness's physics (and the HITL bench when
    its target exists): each record names its target as written and flew its own physics, and `hil report` sets
    them side by side with the estimate against the truth on the three that have one. Small, because a campaign
    with the bench flies its trials one at a time (hil run: one worker with hardware), the bench's in real time;
    twice, because under load PX4 now and then refuses a trial or a mission upload times out on the bench's serial
    line (seen at load 10), and each target must still have flown one."""
    targets = ["sim", "px4-sitl", "px4-sitl+harness"] + (["px4-hitl"] if _bench_exists() else [])
    campaign = tmp_path / "c.yaml"
    campaign.write_text(yaml.safe_dump({"name": "s2b", "seed": 3, "repeats": 2, "speed": SPEED,
                                        "missions": [{"mission": str(SHORT_SQUARE)}], "targets": targets}))
    out, report = tmp_path / "run", tmp_path / "report"
    env = {**os.environ, "PX4_DIR": MAIN_BUILD}
    run = subprocess.run([sys.executable, "-m", "hil", "run", str(campaign), "--out", str(out), "--no-progress",
                          "--workers", "2", *(["--arm"] if "px4-hitl" in targets else [])],
                         cwd=ROOT, capture_output=True, text=True, timeout=1800, env=env)
    assert run.returncode in (0, 1), run.stdout[-2000:] + run.stderr[-2000:]
    records = sorted((out / "trials").iterdir())
    assert len(records) == 2 * len(targets)
    flown: dict[str, list[Path]] = {}
    reasons = {}
    for record in records:
        manifest = json.loads((record / "manifest.json").read_text())
        target = manifest["config"]["target"]
        assert target in targets and f"__{target}__" in record.name
        assert manifest["config"]["physics"] == ("harness" if target in ("px4-sitl+harness", "px4-hitl") else "default")
        if target.startswith("px4-sitl"):  # PX4 itself says which physics it flew
            console = (record / "px4-console.log").read_text()
            assert ("Simulator connected" in console) == (target == "px4-sitl+harness"), record.name
        reasons[record.name] = (manifest.get("summary") or {}).get("reason")
        if manifest["outcome"] != "error":
            flown.setdefault(target, []).append(record)
    # Under load PX4 may refuse a trial (its own reason, in the record); each target flew at least one.
    assert set(flown) == set(targets), reasons
    for record in flown["sim"]:  # the built-in vehicle's estimate is its truth
        both = read_table(record, "telemetry").merge(read_table(record, TRUTH_TABLE), on="t_ns", suffixes=("", "_t"))
        assert len(both) > 100 and (both["north"] == both["north_t"]).all()

    result = subprocess.run([sys.executable, "-m", "hil", "report", str(out), "--out", str(report)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    text = (report / "report.md").read_text()
    title = "Simulation against the bench" if "px4-hitl" in targets else "Simulation versus simulation"
    section = text[text.index(f"## {title}"):]
    reference = "px4-hitl" if "px4-hitl" in targets else "px4-sitl"
    others = [t for t in targets if t != reference]
    assert f"| metric | {' | '.join(targets)} | {' | '.join(f'{t} - {reference}' for t in others)} |" in section
    assert (report / "report_files" / "targets_by_metric.png").stat().st_size > 10_000
    truth = section[section.index("### The estimate against the truth, per target"):]
    truth = truth[:truth.index("\n### ")]
    rows = {cells[0]: cells for cells in (line.strip("| ").split(" | ") for line in truth.splitlines()
                                          if line.startswith("| ") and not line.startswith("| target"))}
    assert set(rows) >= {"sim", "px4-sitl", "px4-sitl+harness"}, truth
    assert rows["px4-sitl"][1].startswith("PX4 SIH") and rows["px4-sitl+harness"][1] == "the harness's physics"
    mean = {target: float(cells[2].split()[0]) for target, cells in rows.items() if cells[2] != "-"}
    assert mean["sim"] == 0.0
    # PX4's EKF2 against SIH's truth and the physics': off by centimetres to metres, never nothing, never tens.
    assert 0.0 < mean["px4-sitl"] < 5.0 and 0.0 < mean["px4-sitl+harness"] < 5.0, rows
