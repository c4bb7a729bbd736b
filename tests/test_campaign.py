"""Campaigns end to end through the real `hil` command: cross-join, results table, resume, kill -9,
Ctrl-C with simulator processes running, and the report (the Ray executor: test_ray.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest
import yaml

from config.errors import ConfigError
from hil.campaign import parse_campaign
from missions.schema import MAX_ALTITUDE_M
from records.record import read_events
from reports.render import write_report
from reports.results import load_results

ROOT = Path(__file__).resolve().parents[1]


def write_campaign(path: Path, **fields) -> Path:
    data = {"name": "t", "seed": 3, "repeats": 1, "missions": [{"scene": "forest", "configs": [0]}],
            "profiles": ["default"], "targets": ["lockstep"], "planners": ["straight"], **fields}
    path.write_text(yaml.safe_dump(data))
    return path


def hil(*args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hil", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_cross_join_ids_and_seeds():
    campaign = parse_campaign({"name": "x", "repeats": 2, "missions": [{"scene": "forest", "configs": [0, 1]}],
                               "profiles": ["default", "1.00kg-SunnySky"], "planners": ["straight", "onboard.planners.avoid:OccupancyPlanner"]})
    trials = campaign.trials()
    assert len(trials) == 2 * 2 * 2 * 2
    assert len({t.trial_id for t in trials}) == len(trials)
    assert len({t.seed for t in trials}) == len(trials)
    assert trials == parse_campaign({"name": "x", "repeats": 2, "missions": [{"scene": "forest", "configs": [0, 1]}],
                                     "profiles": ["default", "1.00kg-SunnySky"],
                                     "planners": ["straight", "onboard.planners.avoid:OccupancyPlanner"]}).trials()  # stable


def test_library_profiles_expand_to_the_flyingtrust_table():
    campaign = parse_campaign({"name": "x", "missions": [{"scene": "maze", "configs": "all"}],
                               "profiles": [{"library": "flyingtrust"}]})
    assert len(campaign.profiles) == 36
    assert len(campaign.trials()) == 360


def test_a_bad_campaign_lists_every_problem():
    with pytest.raises(ConfigError) as info:
        parse_campaign({"name": "x", "repeats": 0, "missions": [{"scene": "jungle", "configs": [12]}],
                        "profiles": ["no-such-profile"], "targets": ["moon"], "colour": "red"}, "c.yaml")
    text = str(info.value)
    for field in ("repeats", "missions[0].scene", "missions[0].configs", "profiles[0]", "targets[0]", "colour"):
        assert f"c.yaml: {field}:" in text
    with pytest.raises(ConfigError, match="physics: expected default unless a target is px4-sitl"):
        parse_campaign({"name": "x", "missions": [{"scene": "forest"}], "physics": "harness"}, "c.yaml")
    # A link profile is fine in lockstep: the same impairment model runs in simulated time.
    parse_campaign({"name": "x", "missions": [{"scene": "forest"}], "links": ["wifi"]}, "c.yaml")


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _cmdline(process: psutil.Process) -> list[str]:
    """Its command line; empty once it has exited (a zombie or gone: CI caught one between listing and reading)."""
    try:
        return process.cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return []


def _finish(proc: subprocess.Popen, timeout: float) -> tuple[str, str]:
    """The process's (stdout, stderr) once it exits; one that does not exit in time is killed, never
    left behind, and fails the test with the end of its stderr."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, stderr = proc.communicate()
        raise AssertionError(f"{' '.join(proc.args[2:4])} did not exit within {timeout:g} s: {stderr[-2000:]}") from None


def _wait_for_trials(out: Path, count: int, timeout: float = 60.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        finished = len(list((out / "trials").glob("*"))) if (out / "trials").is_dir() else 0
        if finished >= count:
            return finished
        time.sleep(0.02)
    raise AssertionError(f"fewer than {count} trials finished in {out} within {timeout:g} s")


def _start_run(path: Path, out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "hil", "run", str(path), "--out", str(out), "--no-progress",
                             *extra], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_gone(processes: list[psutil.Process], timeout: float = 15.0) -> list[psutil.Process]:
    _, alive = psutil.wait_procs(processes, timeout=timeout)
    return alive


def test_kill_9_loses_at_most_the_trials_in_flight_and_resume_never_repeats(tmp_path):
    campaign = write_campaign(tmp_path / "c.yaml", missions=[{"scene": "forest", "configs": [0, 1]}],
                              profiles=["default", "1.00kg-SunnySky"], repeats=2)  # 8 trials
    out = tmp_path / "run"
    errors = tmp_path / "stderr.txt"
    with open(errors, "w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "hil", "run", str(campaign), "--out", str(out), "--workers",
                                 "2", "--no-progress"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr)
    _wait_for_trials(out, 2)
    workers = _descendants(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not _wait_gone(workers), "workers outlived a killed hil run"
    time.sleep(1.0)  # the resource tracker outlives its parent by a moment
    assert "Traceback" not in errors.read_text() and "leaked" not in errors.read_text(), errors.read_text()
    finished = {p.name for p in (out / "trials").iterdir()}
    assert 2 <= len(finished) < 8
    for record in (out / "trials").iterdir():  # everything published is complete
        assert json.loads((record / "manifest.json").read_text())["status"] == "finished"

    resumed = hil("run", str(out), "--workers", "2", "--no-progress")  # the directory resumes
    assert resumed.returncode == 0, resumed.stderr
    assert f"{8 - len(finished)} trials run" in resumed.stdout
    assert f"{len(finished)} already finished" in resumed.stdout
    assert not (out / ".partial").exists()
    for record in (out / "trials").iterdir():  # each trial flown exactly once
        assert [e["kind"] for e in read_events(record)].count("trial_started") == 1

    table = pd.read_parquet(out / "results.parquet")
    assert len(table) == 8 and table["trial_id"].is_unique and len(pd.read_csv(out / "results.csv")) == 8
    for column in ("scene", "profile", "target", "planner", "seed", "outcome", "reason", "avg_speed", "progress",
                   "difficulty_to", "difficulty_vo", "difficulty_aol", "t_tot_ms", "min_clearance_m", "tcr_2"):
        assert column in table.columns
    assert set(table["outcome"]) == {"collision"}  # the straight line is blocked by construction

    markdown, page = write_report(load_results(out), out)
    html = page.read_text()
    assert "data:image/png;base64," in html and "Composite score" in html and "Flown tracks" in html
    assert (out / "report_files" / "success_by_scenario.png").exists() and "Table II" in markdown.read_text()


# A worker whose stop lands inside a weakref callback (the garbage collector runs them wherever it
# likes): the callback itself raises the signal here, so the handler runs inside it, every time.
_STOP_IN_CALLBACK = """
import signal, time, weakref
from hil.executors import stop_on_sigterm
stop_on_sigterm()
class Trial: pass
trial = Trial()
watch = weakref.ref(trial, lambda _: signal.raise_signal(signal.SIGTERM))
del trial
time.sleep(5)
print("the worker ran on")
"""


def test_a_stop_that_lands_in_a_weakref_callback_still_ends_the_worker():
    """Python ignores a SystemExit raised in a weakref callback (it prints "Exception ignored" and goes
    on): a campaign worker SIGTERMed at that moment ran on (the kill -9 test saw the traceback)."""
    worker = subprocess.run([sys.executable, "-c", _STOP_IN_CALLBACK], cwd=ROOT, capture_output=True, text=True,
                            timeout=30)
    assert worker.returncode == 128 + signal.SIGTERM, (worker.returncode, worker.stdout, worker.stderr)
    assert "ran on" not in worker.stdout and "Traceback" not in worker.stderr, worker.stderr


def test_ctrl_c_stops_cleanly_without_orphan_simulators(tmp_path):
    campaign = write_campaign(tmp_path / "c.yaml", targets=["sim"], speed=4.0,
                              profiles=["default", "1.00kg-SunnySky"], repeats=2)
    out = tmp_path / "run"
    # A new session, signalled as a group: what a terminal does with Ctrl-C.
    proc = subprocess.Popen([sys.executable, "-m", "hil", "run", str(campaign), "--out", str(out), "--workers", "2",
                             "--no-progress"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 30
    simulators: list[psutil.Process] = []
    while time.monotonic() < deadline and len(simulators) < 2:
        simulators = [p for p in _descendants(proc.pid) if "sim" in " ".join(_cmdline(p)[3:5])]
        time.sleep(0.1)
    assert simulators, "no simulator process started"
    time.sleep(1.0)  # mid-trial
    everything = _descendants(proc.pid)
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = _finish(proc, 30)
    assert proc.returncode == 130, stderr
    assert "resumes" in stderr
    assert not _wait_gone(everything, timeout=10), "processes left behind after Ctrl-C"
    assert not (out / ".partial").exists()
    assert (out / "results.parquet").exists()


def test_a_lockstep_trial_flies_its_fault_profile(tmp_path):
    """Faults reach the lockstep vehicle through the same Vehicle calls as over MAVLink, and are felt."""
    faults = tmp_path / "motor_off.yaml"
    faults.write_text("faults:\n  - {start_s: 2, type: \"off\", target: motor1}\n")
    campaign = write_campaign(tmp_path / "c.yaml", faults=[str(faults)])
    done = hil("run", str(campaign), "--out", str(tmp_path / "out"), "--workers", "1", "--no-progress")
    assert done.returncode == 0, done.stderr
    [record] = (tmp_path / "out" / "trials").iterdir()
    injected = [e for e in read_events(record) if e["kind"] == "fault_injected"]
    assert [(e["accepted"], e["result"]) for e in injected] == [(True, "SUCCESS")], injected
    assert load_results(tmp_path / "out")["outcome"].tolist() != ["success"]  # a quad does not fly on three motors


def test_a_trial_over_mavlink_through_the_link_proxy(tmp_path):
    # At 2x: at 4x a quarter-second stall of the planner process on a loaded CI machine is a second
    # of vehicle time without setpoints, and the vehicle's offboard-loss failsafe lands it (seen once).
    campaign = write_campaign(tmp_path / "c.yaml", targets=["sim"], links=["wifi"], speed=2.0)
    out = tmp_path / "run"
    result = hil("run", str(campaign), "--out", str(out), "--workers", "1", "--no-progress")
    assert result.returncode == 0, result.stderr
    row = pd.read_parquet(out / "results.parquet").iloc[0]
    assert row["outcome"] == "collision", row["reason"]  # the same verdict as in lockstep
    assert row["link"] == "wifi" and row["t_plan_ms"] > 0
    kinds = [e["kind"] for e in read_events(out / "trials" / row["trial_id"])]
    assert "link_summary" in kinds and "onboard_finished" in kinds


def test_a_profile_px4_cannot_fly_is_refused_for_px4_sitl_naming_px4s_reason(tmp_path):
    rocket = tmp_path / "rocket.yaml"
    rocket.write_text("name: rocket\ncategory: virtual\nmass: 1.0\ntwr_max: 12.0\nalpha_xy_max: 80.0\n"
                      "alpha_z_max: 6.67\nlayout: cross\nmotor_tau: 0.03\n")
    campaign = write_campaign(tmp_path / "c.yaml", profiles=["default", str(rocket)], targets=["sim", "px4-sitl"])
    with pytest.raises(ConfigError, match=r"profiles\[1\]: not flyable on px4-sitl: .*rocket.*MPC_THR_HOVER"):
        parse_campaign(yaml.safe_load(campaign.read_text()), str(campaign))
    # The same profile is fine for the built-in vehicle alone.
    parse_campaign({**yaml.safe_load(campaign.read_text()), "targets": ["sim"]}, str(campaign))


# What a navigation trial's row holds: its summary's facts (records.summary) and the figures reports compute from its
# record (reports.figures). Reports, gates, campaign files and users' saved tables name these columns.
NAVIGATION_COLUMNS = (
    "outcome", "reason", "success", "collided", "end_time_s", "nav_start_ns", "nav_end_ns", "home_north", "home_east",
    "home_down", "platform_kind", "mass_kg", "twr_max", "alpha_xy_max", "alpha_z_max", "vehicle_radius_m",
    "difficulty_to", "difficulty_vo", "difficulty_aol", "guide_length_m", "shortest_length_m", "duration_s",
    "path_length_m", "avg_speed", "avg_curvature", "avg_acceleration", "avg_jerk", "progress", "final_distance_m",
    "closest_distance_m", "oracle_success", "tcr_1", "tcr_2", "tcr_5", "min_clearance_m", "geofence_violation_s",
    "altitude_violation_s", "margin_clearance_m", "margin_fence_m", "t_map_ms", "t_plan_ms", "t_ctrl_ms", "t_tot_ms")
# A mission file's trial: the platform's facts, its stages, and the mission metrics (per stage too).
MISSION_COLUMNS = (
    "outcome", "reason", "platform_kind", "mass_kg", "vehicle_radius_m", "stages", "stages_completed", "duration_s",
    "path_length_m", "avg_speed", "progress", "final_distance_m", "closest_distance_m", "oracle_success",
    "shortest_length_m", "success", "collided", "tcr_1", "tcr_2", "tcr_5", "tcr_2_waypoint-1", "tcr_2_land")


def test_a_results_row_holds_every_figure_computed_once_from_its_record(tmp_path):
    from records.campaign_dir import FIGURES_DIR
    from reports.figures import trial_figures

    square = ROOT / "missions" / "examples" / "demo_square.yaml"
    campaign = write_campaign(tmp_path / "c.yaml", planners=["avoid"],
                              missions=[{"scene": "forest", "configs": [0, 1]}, {"mission": str(square)}])
    out = tmp_path / "run"
    result = hil("run", str(campaign), "--out", str(out), "--workers", "2", "--no-progress")
    assert result.returncode == 0, result.stderr
    table = pd.read_parquet(out / "results.parquet").set_index("trial_id")
    navigation, mission = table[table["planner"] == "avoid"].iloc[0], table[table["planner"] == "autopilot"].iloc[0]
    assert navigation.name.startswith("forest__c0__")
    assert navigation["outcome"] == "success", navigation["reason"]
    assert navigation[list(NAVIGATION_COLUMNS)].notna().all(), navigation[navigation.isna()]
    assert navigation["success"] and navigation["path_length_m"] > navigation["shortest_length_m"] * 0.9
    assert mission["outcome"] == "success" and mission[list(MISSION_COLUMNS)].notna().all(), mission[mission.isna()]
    assert mission["stages_completed"] == 1.0 and mission["path_length_m"] > 40.0
    # A mission's summary keeps the airspace its judge watched: the room below the ceiling is its fence margin,
    # and with no scene there is no obstacle to clear.
    # A mission's summary keeps the airspace its judge watched (demo_square's: the default ceiling), so its fence
    # margin is the least room below that ceiling over the flight; with no scene there is nothing to clear.
    assert MAX_ALTITUDE_M - 6.0 < mission["margin_fence_m"] < MAX_ALTITUDE_M - 4.0
    assert pd.isna(mission["margin_clearance_m"])
    assert navigation["margin_clearance_m"] == navigation["min_clearance_m"] > 0
    # The row's figures are the record's, kept beside it as the trial finished.
    kept = {path.stem: path for path in (out / FIGURES_DIR).iterdir()}
    assert set(kept) == set(table.index)
    for trial_id, figures in ((trial_id, trial_figures(out / "trials" / trial_id)) for trial_id in table.index):
        assert table.loc[trial_id, list(figures)].to_dict() == pytest.approx(figures, nan_ok=True)

    # A resumed campaign keeps what it has; a trial whose kept figures are gone or unreadable gets them again.
    navigation_id, mission_id = navigation.name, mission.name
    kept[navigation_id].unlink()
    kept[mission_id].write_text("{not json")
    untouched = {trial_id: path.stat().st_mtime_ns for trial_id, path in kept.items()
                 if trial_id not in (navigation_id, mission_id)}
    assert untouched
    resumed = hil("run", str(out), "--no-progress")
    assert resumed.returncode == 0 and "0 trials run" in resumed.stdout, resumed.stderr
    assert kept[navigation_id].exists() and json.loads(kept[mission_id].read_text())["figures"]
    pd.testing.assert_frame_equal(pd.read_parquet(out / "results.parquet").set_index("trial_id"), table)
    assert all(kept[trial_id].stat().st_mtime_ns == mtime for trial_id, mtime in untouched.items())


MANY = {"missions": [{"scene": "forest", "configs": [0, 1]}], "profiles": ["default", "1.00kg-SunnySky"],
        "repeats": 6}  # 24 short lockstep trials


def test_a_report_after_a_killed_resume_counts_every_finished_trial(tmp_path):
    campaign, out = write_campaign(tmp_path / "c.yaml", **MANY), tmp_path / "run"
    first = _start_run(campaign, out, "--workers", "1")
    _wait_for_trials(out, 2)
    first.send_signal(signal.SIGINT)  # Ctrl-C: the run writes its (soon stale) results table
    _finish(first, 60)
    stale = len(pd.read_parquet(out / "results.parquet"))
    resumed = _start_run(out, out, "--workers", "1")
    _wait_for_trials(out, stale + 3)
    resumed.send_signal(signal.SIGKILL)  # no table written this time
    _finish(resumed, 60)
    finished = len(list((out / "trials").iterdir()))
    assert finished > stale and len(load_results(out)) == finished


def test_a_ctrl_c_that_a_finalizer_swallowed_still_stops_the_campaign(tmp_path):
    # A signal's KeyboardInterrupt raised inside a __del__ is printed as "Exception ignored" and lost;
    # CI saw `hil run` run on to its last trial after one. The pool must still stop.
    import contextlib

    from hil.campaign import load_campaign
    from hil.executors import STOP, LocalPool
    from hil.runner import run_campaign
    from reports.results import CampaignResults

    class SwallowingPool(LocalPool):
        def run(self, trials, campaign_dir):
            for n, done in enumerate(super().run(trials, campaign_dir)):
                if n == 0:
                    with contextlib.suppress(KeyboardInterrupt):  # as a finalizer would
                        STOP.handler(signal.SIGINT, None)
                yield done

    campaign = load_campaign(write_campaign(tmp_path / "c.yaml", **MANY))
    try:
        summary = run_campaign(campaign, tmp_path / "run", SwallowingPool(1),
                               results=CampaignResults(tmp_path / "run"), progress=False)
    finally:
        STOP.requested = False
    assert summary.interrupted and summary.ran < 4, summary


def test_a_killed_worker_costs_no_trial(tmp_path):
    # 8 trials, not 24: a worker is killed once two have finished, with six left for the two workers, so it dies
    # in a trial and its trial is flown again; more trials after that only repeat the ones before.
    campaign = write_campaign(tmp_path / "c.yaml", **{**MANY, "repeats": 2})
    out = tmp_path / "run"
    run = _start_run(campaign, out, "--workers", "2")
    _wait_for_trials(out, 2)
    # A worker: a child of the forkserver, which `hil run` started and which forks each worker (hil.executors).
    victim = next(p for p in _descendants(run.pid) if p.ppid() != run.pid and "forkserver" in " ".join(_cmdline(p)))
    victim.kill()
    stdout, stderr = _finish(run, 120)
    assert run.returncode == 0, stdout + stderr
    assert "a worker died (signal SIGKILL)" in stderr and "running it again" in stderr
    assert "8 trials run" in stdout
    trials = list((out / "trials").iterdir())
    assert len(trials) == 8
    for record in trials:  # each trial flown to completion exactly once
        assert [e["kind"] for e in read_events(record)].count("trial_started") == 1


def test_a_second_run_on_the_same_directory_is_refused_naming_the_first(tmp_path):
    # 4 trials, not 24: the first run is held stopped (SIGSTOP) while the second tries, so it is
    # still running then however slowly the second starts, and it need not fly 24 trials afterwards.
    # The flock is the kernel's, held by a stopped process; its worker flies on meanwhile.
    campaign = write_campaign(tmp_path / "c.yaml", missions=[{"scene": "forest", "configs": [0, 1]}],
                              profiles=["default", "1.00kg-SunnySky"])
    out = tmp_path / "run"
    first = _start_run(campaign, out, "--workers", "1")
    _wait_for_trials(out, 1)
    first.send_signal(signal.SIGSTOP)
    try:
        second = hil("run", str(out), "--no-progress")
    finally:
        first.send_signal(signal.SIGCONT)
    assert second.returncode == 2 and f"pid {first.pid}" in second.stderr, second.stderr
    assert "Traceback" not in second.stderr
    stdout, stderr = _finish(first, 120)
    assert first.returncode == 0, stderr
    for record in (out / "trials").iterdir():  # the refused run flew nothing
        assert [e["kind"] for e in read_events(record)].count("trial_started") == 1
