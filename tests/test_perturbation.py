"""Repeats are samples (issue 31): a campaign's `perturb:` block, each trial's draw from its seed, the built-in
vehicle flying it, and the report counting identical repeats as one observation."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from config.errors import ConfigError
from hil.campaign import parse_campaign
from hil.cli import build_parser
from hil.commands.sim import perturbation_of
from profiles.link import link_for_trial
from profiles.perturbation import OFF, Perturb, Perturbation
from px4.sim.perturbation import perturb
from px4.sim.realtime import SimOptions, build_vehicle
from records.record import read_table
from reports.render import Table, build_report
from reports.results import load_results
from reports.stats import observations
from targets.builtin import SimProcessOptions, sim_command

ROOT = Path(__file__).resolve().parents[1]
# Three repeats of one short navigation task in lockstep: about 15 s a campaign on two cores.
CAMPAIGN = {"name": "repeats", "seed": 3, "repeats": 3, "missions": [{"scene": "forest", "configs": [0]}],
            "profiles": ["default"], "targets": ["lockstep"], "planners": ["avoid"]}


def run_campaign(tmp_path: Path, **fields) -> tuple[subprocess.CompletedProcess, Path]:
    path, out = tmp_path / "campaign.yaml", tmp_path / "out"
    path.write_text(yaml.safe_dump({**CAMPAIGN, **fields}))
    done = subprocess.run([sys.executable, "-m", "hil", "run", str(path), "--out", str(out), "--no-progress"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    return done, out


def metrics_row(results: pd.DataFrame) -> pd.Series:
    table = next(b.frame for b in build_report(results) if isinstance(b, Table) and "SR" in b.frame.columns)
    assert len(table) == 1
    return table.iloc[0]


def test_perturbed_repeats_fly_different_trajectories_and_the_intervals_come_from_them(tmp_path):
    done, out = run_campaign(tmp_path)
    assert done.returncode == 0, done.stderr
    results = load_results(out).sort_values("repeat")
    assert results["path_length_m"].nunique() == 3 and results["min_clearance_m"].nunique() == 3
    # Each record says what it flew, and its telemetry starts where that says.
    for record in sorted((out / "trials").iterdir()):
        drawn = json.loads((record / "manifest.json").read_text())["config"]["perturbation"]
        assert drawn["not_applied"] == {"link_jitter_ms": "no link profile: the trial's link is ideal"}
        assert 0 < math.hypot(*drawn["position_ne"]) <= 0.3 and 0 < math.hypot(*drawn["wind_ned"]) <= 1.0
        first = read_table(record, "telemetry").iloc[0]
        assert (first["north"], first["east"]) == pytest.approx(drawn["position_ne"], abs=1e-6)
        assert math.degrees(first["yaw"]) == pytest.approx(drawn["heading_deg"], abs=0.01)
    row = metrics_row(results)
    assert row["n"] == 3 and "trials" not in row.index
    low, high = (float(v) for v in row["DTS (m)"].split("[")[1].rstrip("]").split(","))
    assert low < high  # an interval over three different flights, not over copies of one


def test_with_perturb_off_repeats_are_identical_and_the_report_says_one_observation(tmp_path):
    done, out = run_campaign(tmp_path, perturb="off")
    assert done.returncode == 0, done.stderr
    results = load_results(out)
    assert results["path_length_m"].nunique() == 1 and results["min_clearance_m"].nunique() == 1
    for record in (out / "trials").iterdir():
        assert json.loads((record / "manifest.json").read_text())["config"]["perturbation"] == json.loads(
            json.dumps(Perturbation().as_config()))
    row = metrics_row(results)
    assert row["n"] == 1 and row["trials"] == 3
    assert row["DTS (m)"].endswith("(1 observation: 3 identical repeats)") and "[" not in row["DTS (m)"]
    overview = build_report(results)[1].text
    assert "the 3 trials are 1 observation." in overview


@pytest.mark.parametrize("value, expected", [
    ({"wind_m_s": float("nan")}, "perturb.wind_m_s: expected a number >= 0 (m/s, the steady wind's greatest speed), "
                                 "got nan"),
    ({"gust_m_s": -1}, "perturb.gust_m_s: expected a number >= 0"),
    ({"position_m": 1e9}, "perturb.position_m: expected a number <= 10 (m, the initial position's greatest offset; "
                          "sanity limit), got 1000000000.0"),
    ({"heading_deg": "5"}, "perturb.heading_deg: expected a number >= 0"),
    ({"sensor_noise": 1}, "perturb.sensor_noise: expected true or false"),
    ({"wind": 1.0}, "perturb.wind: unknown field (did you mean wind_m_s? "),
    ("sometimes", "perturb: expected off, none, on, or a mapping of sensor_noise, wind_m_s, gust_m_s, position_m, "
                  "heading_deg, link_jitter_ms, got 'sometimes'"),
    ([1, 2], "perturb: expected off, none, on, or a mapping of"),
])
def test_a_hostile_perturb_value_names_file_field_and_expectation(value, expected):
    with pytest.raises(ConfigError) as info:
        parse_campaign({**CAMPAIGN, "perturb": value}, "c.yaml")
    assert f"c.yaml: {expected}" in str(info.value)


def test_hil_run_refuses_a_hostile_perturb_with_exit_2_before_any_trial(tmp_path):
    done, out = run_campaign(tmp_path, perturb={"wind_m_s": -3})
    assert done.returncode == 2
    assert "perturb.wind_m_s: expected a number >= 0" in done.stderr and not (out / "trials").exists()


def test_perturbation_is_on_for_repeats_off_for_single_trials_and_stable_per_seed():
    assert parse_campaign(CAMPAIGN).perturb == Perturb()
    assert parse_campaign({**CAMPAIGN, "repeats": 1}).perturb == OFF
    assert parse_campaign({**CAMPAIGN, "repeats": 1, "perturb": {"wind_m_s": 2}}).perturb == Perturb(wind_m_s=2.0)
    for off in (False, "off", "none"):  # YAML reads an unquoted off as false
        assert parse_campaign({**CAMPAIGN, "perturb": off}).perturb == OFF
    trials = parse_campaign(CAMPAIGN).trials()
    assert len({t.perturbation for t in trials}) == 3 and all(t.perturbation.noise_seed == t.seed for t in trials)
    assert trials == parse_campaign(CAMPAIGN).trials()
    # The draw is a function of the seed alone: fixed here so a change to it shows (records name what they flew).
    drawn = Perturb().draw(12345)
    assert drawn.wind_ned == pytest.approx((0.41577, 0.02660, 0.0), abs=1e-5)
    assert drawn.position_ne == pytest.approx((-0.08200, 0.25989), abs=1e-5)
    assert drawn.heading_deg == pytest.approx(-1.31588, abs=1e-5)
    assert all(t.perturbation == Perturbation() for t in parse_campaign({**CAMPAIGN, "perturb": "off"}).trials())


def test_px4_sih_records_what_it_could_not_apply_and_a_link_takes_the_jitter():
    sih = parse_campaign({**CAMPAIGN, "targets": ["px4-sitl"], "links": ["wifi"]}).trials()[0].perturbation
    assert sih.wind_ned == (0.0, 0.0, 0.0) and sih.position_ne == (0.0, 0.0) and sih.noise_seed == 0
    assert sih.link_jitter_ms == 2.0
    assert set(dict(sih.not_applied)) == {"sensor_noise", "wind_m_s", "gust_m_s", "position_m", "heading_deg"}
    assert "SIH_WIND" in dict(sih.not_applied)["wind_m_s"]
    harness = parse_campaign({**CAMPAIGN, "targets": ["px4-sitl"], "physics": "harness"}).trials()[0].perturbation
    assert set(dict(harness.not_applied)) == {"position_m", "link_jitter_ms"} and harness.heading_deg != 0.0
    wifi, jittered = link_for_trial("wifi", 1), link_for_trial("wifi", 1, jitter_ms=2.0)
    assert jittered.to_vehicle.frames.latency.jitter_ms == wifi.to_vehicle.frames.latency.jitter_ms + 2.0
    assert link_for_trial(None, 1, ((1.0, 2.0),), jitter_ms=2.0).to_onboard.frames == link_for_trial(
        None, 1, ((1.0, 2.0),)).to_onboard.frames  # an ideal link stays ideal


def test_the_built_in_vehicle_starts_perturbed_and_hil_sim_takes_the_same_perturbation():
    drawn = Perturbation(noise_seed=9, wind_ned=(-0.5, 0.25, 0.0), gust_m_s=0.5, position_ne=(-0.2, 0.1),
                         heading_deg=-4.0)
    autopilot, _ = build_vehicle(SimOptions())
    perturb(autopilot, drawn)
    assert autopilot.position == pytest.approx((-0.2, 0.1, 0.0))
    assert math.degrees(autopilot.dyn.yaw) == pytest.approx(-4.0)
    assert tuple(autopilot.dyn.wind_ned) == (-0.5, 0.25, 0.0) and autopilot.faults.gust > 0
    # The sim target passes it to `hil sim` on its command line (a negative value too).
    args = build_parser().parse_args(sim_command(14540, SimProcessOptions(perturbation=drawn))[3:])
    assert perturbation_of(args) == drawn
    assert "--wind" not in " ".join(sim_command(14540, SimProcessOptions()))


def test_identical_repeats_are_one_observation_and_trials_that_never_flew_are_each_their_own():
    frame = pd.DataFrame({"scene": ["a"] * 5 + ["b"], "repeat": [0, 1, 2, 3, 4, 0], "outcome": ["success"] * 3
                          + ["error"] * 2 + ["success"], "path_length_m": [5.0, 5.0, 5.0 + 1e-15, np.nan, np.nan, 5.0]})
    observed = observations(frame, ["scene"], ["outcome", "path_length_m"])
    assert observed["repeat"].tolist() == [0, 2, 3, 4, 0] and observed["repeats"].tolist() == [2, 1, 1, 1, 1]


def hil_fly(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hil", "fly", "demo_square", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_hil_fly_flies_a_plan_under_the_perturbation_its_seed_draws_and_refuses_it_on_a_flight_controller(tmp_path):
    tracks = {}
    for name, seed in (("a", "5"), ("again", "5"), ("b", "6")):
        done = hil_fly("--target", "lockstep", "--perturb-seed", seed, "--record-dir", str(tmp_path / name))
        assert done.returncode == 0, done.stderr
        config = json.loads((tmp_path / name / "manifest.json").read_text())["config"]
        assert config["perturb_seed"] == int(seed) and 0 < math.hypot(*config["perturbation"]["wind_ned"]) <= 1.0
        assert f"perturbed (seed {seed}): noise seed {seed}; wind " in done.stdout
        tracks[name] = read_table(tmp_path / name, "telemetry")[["north", "east", "down"]].to_numpy()
    # The recorded seed flies the same flight again; another seed, another flight.
    assert np.array_equal(tracks["a"], tracks["again"]) and not np.array_equal(tracks["a"][:len(tracks["b"])],
                                                                               tracks["b"][:len(tracks["a"])])
    # Refused before anything is connected (no one listens on that port), with exit 2.
    refused = hil_fly("--target", "udpin://127.0.0.1:9", "--arm", "--perturb-seed", "5")
    assert refused.returncode == 2 and "--perturb-seed perturbs a simulated vehicle" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
