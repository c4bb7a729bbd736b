"""Fidelity: the built-in vehicle flies like PX4 v1.16.1 SIH (hil/fidelity.py, benchmarks/fidelity.py).

The PX4 test flies the CI subset of the manoeuvre suite (takeoff, offboard velocity step and stop,
land) on PX4 SITL three times, for its own run-to-run spread, and on a built-in vehicle process, both at a
speed factor through MAVSDK, and fails when a built-in figure leaves PX4's band. The others check
the suite itself without PX4: every figure is measured, the band and verdict say what they mean, and a
flight that fails in the air ends landed by the trial session's stop policy.
"""

from __future__ import annotations

import math

import pytest

from benchmarks.fidelity import main as fidelity_main
from bridges.lockstep_vehicle import LockstepVehicle
from bridges.vehicle import VehicleError
from hil import fidelity
from hil.cli import main as hil_main
from hil.fidelity import BUILTIN, PX4_SITL, Sample, Trace, fly_suite, run_target
from px4.sim.realtime import SimOptions, build_vehicle
from records.fidelity_run import (
    CANDIDATE,
    ESTIMATE,
    FIDELITY_KIND,
    FIGURE_PREFIX,
    REFERENCE,
    TRACE_TABLE,
    TRUTH,
)
from records.record import read_events, read_manifest, read_table
from reports.fidelity import (
    FIGURES,
    QUICK_FIGURES,
    Figure,
    band,
    compare,
    compare_records,
    differences,
    format_table,
)
from reports.results import load_results

from .conftest import BUILTIN_SPEED, SPEED
from .px4_builds import MAIN_BUILD, needs_px4

PX4_RUNS = 3  # PX4's run-to-run spread needs a few runs: two have put a band's edge at one run's value


async def test_the_suite_measures_every_figure_on_the_built_in_vehicle():
    # In simulated time (the lockstep vehicle): the whole suite in seconds of wall time.
    def lockstep(flight: str):
        autopilot, _ = build_vehicle(SimOptions())
        return LockstepVehicle(autopilot)

    figures = await fly_suite(lockstep)
    assert set(figures) == {f.name for f in FIGURES}
    assert all(math.isfinite(v) for v in figures.values()), figures
    # PX4's own numbers for what the default parameters command (v1.16.1 defaults):
    assert figures["rtl_alt"] == pytest.approx(15.0, abs=0.5)  # RTL_RETURN_ALT of the suite
    assert 4.0 < figures["goto_speed"] < 5.0  # MPC_XY_CRUISE 5 m/s, less what drag and the lag take
    assert figures["land_speed"] < 0.8  # MPC_LAND_SPEED 0.7 m/s


async def test_figures_come_from_the_ground_truth_only_when_asked_and_sent():
    trace = Trace(TRUTH)
    # The estimate: 1 m north and 0.5 m up of where the truth puts the vehicle (its own frame).
    await trace.add(Sample(1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, False, True))
    assert trace.source == ESTIMATE  # no truth yet: the estimate is all there is
    for t, true_n in ((1.1, 0.0), (1.2, 1.0), (1.3, 3.0)):
        trace.latest_truth = (100.0 + true_n, 50.0, -2.0, 10.0, 0.0, 0.0)  # another origin altogether
        await trace.add(Sample(t, 1.0 + true_n / 2, 0.0, -0.5, 5.0, 0.0, 0.0, 0.0, True, False))
    assert trace.source == TRUTH
    a = trace.arrays(1.1)
    # Aligned on the estimate at the first truth, then moving as the truth moves (not as the estimate).
    assert list(a["n"]) == pytest.approx([1.0, 2.0, 4.0]) and list(a["vn"]) == pytest.approx([10.0] * 3)
    assert trace.motion_frame(2.0, 0.0, 1.3) == pytest.approx((2.0 + 4.0 - 2.5, 0.0))
    rows = trace.rows()
    assert "true_n" not in rows[0] and [row["true_n"] for row in rows[1:]] == pytest.approx([1.0, 2.0, 4.0])
    estimate = Trace(ESTIMATE)
    estimate.latest_truth = (0.0,) * 6
    await estimate.add(Sample(1.0, 7.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, False, True))
    assert estimate.source == ESTIMATE and list(estimate.arrays()["n"]) == [7.0]  # truth sent, not asked for


async def test_a_setpoint_takes_effect_between_the_reports_around_it_even_when_reports_were_dropped():
    # The vehicle reports the setpoint it flies at 10 Hz of its clock; MAVSDK may drop reports on the way.
    trace = Trace()
    period = fidelity.TARGET_REPORT_PERIOD_S

    def report(t: float, vn: float) -> fidelity.Point:
        return fidelity.Point(t, 0.0, 0.0, -5.0, vn, 0.0, 0.0, 0.0)
    trace.targets = [report(10.0 + k * period, 3.0) for k in range(10)]
    new = 10.0 + 10 * period
    trace.targets.append(report(new, 0.0))
    took = await trace.took_effect(10.0, lambda target: target.vn < 0.3)
    assert took == pytest.approx(new - period / 2)
    # The five reports before the new one dropped: still within a report period of the first with it.
    del trace.targets[5:10]
    took = await trace.took_effect(10.0, lambda target: target.vn < 0.3)
    assert new - period <= took <= new and took == pytest.approx(new - period / 2)
    # Sent after the last report without it: midway between the sending and the first report with it.
    assert await trace.took_effect(new - 0.01, lambda target: target.vn < 0.3) == pytest.approx(new - 0.005)


def test_band_is_the_spread_or_20_percent_or_the_floor():
    f = Figure("x", "s", "", floor=0.1)
    assert band([10.0, 10.2], f) == pytest.approx((8.08, 12.12))  # spread narrower than +-20 % of the mean
    assert band([5.0, 15.0], f) == pytest.approx((5.0, 15.0))  # PX4's own spread is wider
    assert band([0.0, 0.02], f) == pytest.approx((-0.09, 0.11))  # near zero, the floor
    rows = compare([{"takeoff_t90": 8.0}, {"takeoff_t90": 9.0}], [{"takeoff_t90": 8.4}, {"takeoff_t90": 3.3}])
    assert len(rows) == 1 and not rows[0].within  # one candidate run outside fails the figure
    assert "OUT" in format_table(rows, "px4", "builtin")
    assert compare([{"takeoff_t90": 8.0}], [{"takeoff_t90": 8.4}])[0].within


@needs_px4
async def test_built_in_vehicle_stays_in_px4s_band_for_takeoff_velocity_step_and_land(tmp_path):
    reference = await run_target(PX4_SITL, PX4_RUNS, SPEED, MAIN_BUILD, quick=True, record_dir=tmp_path,
                                 role=REFERENCE)
    candidate = await run_target(BUILTIN, 1, SPEED, quick=True)
    # PX4 SIH streams its ground truth when asked, beside every estimate sample (--measure-on truth).
    flown = read_table(tmp_path / "trials" / f"{REFERENCE}-{PX4_SITL}-1", TRACE_TABLE)
    assert flown["true_n"].notna().mean() > 0.95 and flown["true_vd"].abs().max() > 0.5
    rows = compare(reference, candidate)
    assert {row.figure.name for row in rows} == set(QUICK_FIGURES)
    # A figure outside PX4's band fails unless the suite names why it cannot close (Figure.known,
    # printed with the table); every other figure of the subset must stay in the band.
    unexplained = set(differences(rows)[1])
    assert not unexplained, f"outside PX4's band: {sorted(unexplained)}\n" + format_table(rows, "px4-sitl", "builtin")


async def test_fidelity_runs_kept_as_trial_records_give_hil_report_its_fidelity_table(tmp_path):
    # Two real built-in vehicle processes over MAVSDK, one as the reference and one as the
    # candidate, quick suite at 10x; then `hil report` on the records.
    await run_target(BUILTIN, 1, 10.0, quick=True, record_dir=tmp_path, role=REFERENCE)
    await run_target(BUILTIN, 1, 10.0, quick=True, record_dir=tmp_path, role=CANDIDATE)
    results = load_results(tmp_path)
    assert sorted(results["role"]) == [CANDIDATE, REFERENCE]
    assert set(results["fidelity_source"]) == {"estimate"}  # the built-in reports no separate truth
    trace = read_table(tmp_path / "trials" / f"{CANDIDATE}-{BUILTIN}-1", TRACE_TABLE)
    assert len(trace) > 500 and set(trace["flight"]) == {"A"} and trace["armed"].any()

    assert hil_main(["report", str(tmp_path)]) == 0
    markdown = (tmp_path / "report.md").read_text()
    assert "## Fidelity" in markdown
    for name in QUICK_FIGURES:
        line = next(line for line in markdown.splitlines() if line.startswith(f"| {name} "))
        assert line.rstrip(" |").endswith("ok"), line  # the same vehicle twice: within its own band
    assert "OUTSIDE" not in markdown and "9 of 9 figures within" in markdown


async def test_a_flight_that_fails_in_the_air_ends_landed_by_the_stop_policy(tmp_path, monkeypatch):
    flown = []

    async def fails_at_altitude(vehicle, trace, quick):
        flown.append(vehicle)
        await fidelity.fly_takeoff(vehicle, trace, {})
        raise VehicleError("a manoeuvre went wrong at 5 m")

    monkeypatch.setattr(fidelity, "fly_flight_a", fails_at_altitude)
    with pytest.raises(VehicleError, match="went wrong"):
        await run_target(BUILTIN, 1, BUILTIN_SPEED, quick=True, record_dir=tmp_path)
    assert not flown[0].state.armed  # landed and disarmed before the target was closed
    record = tmp_path / "trials" / f"{CANDIDATE}-{BUILTIN}-1"
    assert "landing" in [e["kind"] for e in read_events(record)]
    manifest = read_manifest(record)
    assert manifest["status"] == "crashed" and "went wrong" in manifest["error"]  # not a run to compare


def test_records_without_a_reference_and_a_candidate_compare_to_nothing():
    run = {"kind": FIDELITY_KIND, "role": CANDIDATE, "target": BUILTIN, f"{FIGURE_PREFIX}takeoff_t90": 8.0}
    assert compare_records([run]) is None
    reference = {**run, "role": REFERENCE, "target": PX4_SITL, f"{FIGURE_PREFIX}takeoff_t90": 9.0}
    comparison = compare_records([run, reference, {"kind": "mission", "role": REFERENCE}])
    assert (comparison.reference, comparison.candidate) == (PX4_SITL, BUILTIN)
    assert [row.figure.name for row in comparison.rows] == ["takeoff_t90"]
    assert comparison.rows[0].within  # 8.0 against 9.0 +- 20 %


async def test_a_running_flight_controller_is_flown_only_with_arm(sim, tmp_path, capsys):
    # A built-in vehicle process the suite did not start stands in for a real aircraft here (no
    # aircraft on this machine): it is reached through its connection string, as hardware is.
    with pytest.raises(SystemExit) as refused:
        await fidelity_main(["--targets", sim.url, BUILTIN, "--quick", "--runs", "1"])
    assert refused.value.code == 2 and "refusing to arm" in capsys.readouterr().err
    code = await fidelity_main(["--targets", sim.url, BUILTIN, "--quick", "--runs", "1", "--arm",
                                "--speed", str(SPEED), "--record", str(tmp_path)])
    out = capsys.readouterr().out
    assert f"builtin against {sim.url}" in out and "takeoff_t90" in out
    assert code == 0, out  # the same vehicle, one process and another: within its own band
    assert sorted(load_results(tmp_path)["target"]) == sorted([sim.url, BUILTIN])


@pytest.mark.parametrize("content", [b"not json", b"[1, 2]", b'{"px4-sitl": [[1, 2]]}', b'{"px4-sitl": []}',
                                     b'{"px4-sitl": [{"takeoff_t90": "fast"}]}', b"\xff\xfe{}", b"[" * 100_000])
async def test_a_broken_runs_file_is_refused_naming_it(tmp_path, capsys, content):
    path = tmp_path / "runs.json"
    path.write_bytes(content)
    assert await fidelity_main(["--reference", str(path), "--targets", BUILTIN]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "Traceback" not in err
