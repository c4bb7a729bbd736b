"""The HIL pytest plugin as a user meets it: a suite that fails usefully, pass rates across repeats, safety skips."""

from __future__ import annotations

import itertools
import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from px4.sim import BUILTIN_AUTOPILOT
from records.record import read_table

HOVER_TEST = '''
import pytest

@pytest.mark.hil
async def test_hover(hil_vehicle, hil_expect):
    await hil_vehicle.arm()
    await hil_vehicle.takeoff(3.0)
    await hil_vehicle.sleep(2.0)
    hil_expect("altitude_error_m", abs(hil_vehicle.state.altitude - 3.0), le={bound})
'''


def run(pytester, bound: str, *args: str):
    pytester.makepyfile(test_hover=HOVER_TEST.format(bound=bound))
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    return pytester.runpytest_subprocess("--hil-target", "lockstep", "--hil-record-dir", str(pytester.path / "records"),
                                         *args)


def test_a_broken_threshold_names_the_metric_and_the_record(pytester):
    junit = pytester.path / "junit.xml"
    result = run(pytester, "1e-6", f"--junitxml={junit}")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "metric altitude_error_m = " in out and "expected <= 1e-06" in out
    assert "trial record: " in out and "failed metrics: altitude_error_m" in out
    record = pytester.path / "records" / "test_hover.py_test_hover"
    assert (record / "manifest.json").exists()
    prop = ET.parse(junit).find(".//property[@name='hil_record']")
    assert prop is not None and prop.get("value").endswith("test_hover.py_test_hover")
    props = {p.get("name"): p.get("value") for p in ET.parse(junit).iter("property")}
    assert props["hil_target"] == "lockstep" and props["hil_profile"] == "default"
    assert props["hil_threshold:altitude_error_m"] == "<= 1e-06" and float(props["hil_metric:altitude_error_m"]) > 0
    assert props["hil_autopilot"] == BUILTIN_AUTOPILOT and props["hil_harness_version"]


def test_a_rerun_keeps_the_failed_attempts_record_and_writes_its_own(pytester):
    # pytest-rerunfailures runs a failed test again in the same session: the first attempt's record is
    # evidence, so the second one must neither overwrite it nor be refused for finding it there.
    result = run(pytester, "1e-6", "--reruns", "1")
    result.assert_outcomes(failed=1)
    assert "1 failed, 1 rerun" in result.stdout.str()
    assert "already holds a trial record" not in result.stdout.str()
    first = pytester.path / "records" / "test_hover.py_test_hover"
    second = first.with_name(first.name + ".attempt2")
    for attempt, record in ((1, first), (2, second)):
        manifest = json.loads((record / "manifest.json").read_text())
        assert manifest["config"]["attempt"] == attempt and manifest["outcome"] == "failed", manifest


def flown(records: Path) -> list[tuple[dict, np.ndarray]]:
    """Each run's manifest and its track (north, east, down), in run order."""
    runs = sorted(records.iterdir())
    return [(json.loads((r / "manifest.json").read_text()), read_table(r, "telemetry")[["north", "east", "down"]]
             .to_numpy()) for r in runs]


def test_repeats_are_perturbed_runs_and_report_a_pass_rate_over_them(pytester):
    junit = pytester.path / "junit.xml"
    result = run(pytester, "0.5", "--hil-repeat", "3", "--hil-seed", "5", f"--junitxml={junit}")
    result.assert_outcomes(passed=3)
    out = result.stdout.str()
    assert "HIL pass rates over 3 runs" in out and "perturbed from --hil-seed 5" in out
    assert "100% [44%, 100%]  n=3  test_hover" in out  # Wilson: 3 of 3 is no proof of 100 %
    runs = flown(pytester.path / "records")
    # Three flights: the built-in vehicle in lockstep flies each run's own wind, spawn and sensor noise.
    assert all(not np.array_equal(a[1], b[1]) for a, b in itertools.combinations(runs, 2))
    assert len({r[0]["seed"] for r in runs}) == 3 and len({tuple(r[0]["config"]["perturbation"]["wind_ned"])
                                                           for r in runs}) == 3
    assert all(0 < math.hypot(*manifest["config"]["perturbation"]["position_ne"]) <= 0.3 for manifest, _ in runs)
    # The JUnit XML says which perturbation each run flew, as its record does.
    cases = [{p.get("name"): p.get("value") for p in case.iter("property")} for case in ET.parse(junit).iter("testcase")]
    assert sorted(int(c["hil_seed"]) for c in cases) == sorted(r[0]["seed"] for r in runs)
    assert sorted(json.loads(c["hil_perturbation"])["heading_deg"] for c in cases) == \
        sorted(r[0]["config"]["perturbation"]["heading_deg"] for r in runs)


def test_repeats_with_perturbation_off_fly_one_flight_and_count_as_one_observation(pytester):
    result = run(pytester, "0.5", "--hil-repeat", "3", "--hil-perturb", "off")
    result.assert_outcomes(passed=3)
    out = result.stdout.str()
    assert "perturbation off" in out and "100% (1 observation: 3 identical runs, no interval)  test_hover" in out
    runs = flown(pytester.path / "records")
    assert all(np.array_equal(runs[0][1], track) for _, track in runs)
    assert all(manifest["seed"] is None and manifest["config"]["perturbation"]["wind_ned"] == [0, 0, 0]
               for manifest, _ in runs)


def test_an_async_hil_test_runs_without_any_asyncio_configuration(pytester):
    """pytest-asyncio's default is strict mode: a copied example must not need asyncio_mode = auto."""
    pytester.makepyfile(test_hover=HOVER_TEST.format(bound="0.5"))
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest_subprocess("--hil-target", "lockstep", "--hil-record-dir", str(pytester.path / "records"))
    result.assert_outcomes(passed=1)


def test_a_connection_string_target_is_not_flown_without_hil_arm(pytester):
    pytester.makepyfile(test_hover=HOVER_TEST.format(bound="0.5"))
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    result = pytester.runpytest_subprocess("--hil-target", "udpin://127.0.0.1:14999", "-rs")
    result.assert_outcomes(skipped=1)
    assert "add --hil-arm" in result.stdout.str()


FAULT_TEST = '''
import pytest
from missions.faults import FaultSpec

@pytest.mark.hil
async def test_gps_loss(hil_vehicle, hil_faults):
    verdict = await hil_faults.inject_and_verify(FaultSpec(0.0, "off", None, 1.0, "gps"), timeout=3.0)
    assert verdict.verdict == "injected and observed", verdict
'''


async def test_fault_injection_on_a_connection_string_target_needs_its_own_option(pytester):
    from targets.builtin import SimProcessOptions, builtin_vehicle

    pytester.makepyfile(test_faults=FAULT_TEST)
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    async with builtin_vehicle(SimProcessOptions(speed=4.0)) as stand_in:  # stands in for a real aircraft
        refused = pytester.runpytest_subprocess("--hil-target", stand_in.url, "--hil-arm", "-rs")
        refused.assert_outcomes(skipped=1)
        assert "needs --allow-hardware-faults" in refused.stdout.str()
        allowed = pytester.runpytest_subprocess("--hil-target", stand_in.url, "--hil-arm", "--allow-hardware-faults")
        allowed.assert_outcomes(passed=1)


BENCH_TESTS = '''
import json
import pathlib
import pytest

LOG = pathlib.Path("bench.jsonl")

def note(**row):
    with LOG.open("a") as f:
        f.write(json.dumps(row) + "\\n")

@pytest.mark.hil(params={"MPC_XY_VEL_MAX": 7.5})
async def test_1_leaves_it_flying(hil_vehicle):
    note(test=1, connection=id(hil_vehicle._connection), param=await hil_vehicle.get_param("MPC_XY_VEL_MAX"))
    await hil_vehicle.arm()
    await hil_vehicle.takeoff(2.0)

@pytest.mark.hil
async def test_2_finds_it_as_it_was(hil_vehicle):
    note(test=2, connection=id(hil_vehicle._connection), param=await hil_vehicle.get_param("MPC_XY_VEL_MAX"),
         armed=hil_vehicle.state.armed, in_air=hil_vehicle.state.in_air)
'''


async def test_a_bench_board_keeps_one_connection_and_comes_back_to_a_known_state_between_tests(pytester, tmp_path):
    from targets.builtin import SimProcessOptions, builtin_vehicle

    pytester.makepyfile(test_bench=BENCH_TESTS)
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    async with builtin_vehicle(SimProcessOptions(speed=4.0)) as board:  # stands in for a board on the bench
        result = pytester.runpytest_subprocess("--hil-target", board.url, "--hil-arm", "-p", "no:randomly",
                                               "--hil-record-dir", str(pytester.path / "records"))
    result.assert_outcomes(passed=2)
    first, second = (json.loads(line) for line in (pytester.path / "bench.jsonl").read_text().splitlines())
    assert first["connection"] == second["connection"], "one MAVSDK connection for the session"
    assert first["param"] == 7.5, "the marker's parameter is set on a running flight controller"
    assert second["param"] != 7.5, "and restored after the test"
    assert not second["armed"] and not second["in_air"], "the first test's flight was landed"
    events = [json.loads(line)["kind"] for line in
              (pytester.path / "records" / "test_bench.py_test_1_leaves_it_flying" / "events.jsonl").open()]
    assert "params_set" in events


LAB = """targets:
  desk: {target: lockstep, profile: 1.00kg-SunnySky}
  board: {target: "udpin://127.0.0.1:9"}
default: [desk, board]
"""


def test_a_lab_file_names_the_targets_and_their_options(pytester):
    pytester.makepyfile(test_hover=HOVER_TEST.format(bound="0.5"))
    pytester.makefile(".yaml", lab=LAB)
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_subprocess("--hil-env", "lab.yaml", "--hil-record-dir", str(pytester.path / "r"),
                                           f"--junitxml={junit}", "-rs")
    result.assert_outcomes(passed=1, skipped=1)  # the board is not armed: the lab file does not say it may be
    assert "add --hil-arm" in result.stdout.str()
    cases = {c.get("name"): {p.get("name"): p.get("value") for p in c.iter("property")}
             for c in ET.parse(junit).iter("testcase")}
    assert cases["test_hover[desk]"]["hil_profile"] == "1.00kg-SunnySky"


def test_a_broken_lab_file_names_the_file_and_field(pytester):
    pytester.makepyfile(test_hover=HOVER_TEST.format(bound="0.5"))
    pytester.makefile(".yaml", lab="targets:\n  desk: {target: lockstep, arm: perhaps, colour: red}\n")
    result = pytester.runpytest_subprocess("--hil-env", "lab.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "lab.yaml: targets.desk.arm: expected true or false" in err and "targets.desk.colour" in err


def test_a_lab_target_misspelt_is_one_usage_error_before_any_test(pytester):
    pytester.makepyfile(test_hover=HOVER_TEST.format(bound="0.5"))
    pytester.makefile(".yaml", lab=LAB)
    result = pytester.runpytest_subprocess("--hil-env", "lab.yaml", "--hil-target", "dsek")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "lab.yaml: no target 'dsek' (did you mean desk? the lab's targets: desk, board" in result.stderr.str()
    assert "test_hover" not in result.stdout.str()


# A project that has nothing to do with HIL, in an environment where quad-hil is installed.
UNRELATED_CONFTEST = '''
import sys

def pytest_sessionfinish(session):
    with open("imported.txt", "w") as f:
        f.write(" ".join(m for m in ("pandas", "numpy", "mavsdk", "records", "targets") if m in sys.modules))
'''


def test_an_unrelated_project_imports_nothing_of_the_harness(pytester):
    """The plugin loads in every pytest run where quad-hil is installed: a project that never asks for a HIL
    option, marker or fixture must not pay for pandas, numpy or MAVSDK (about half a second a run)."""
    pytester.makeconftest(UNRELATED_CONFTEST)
    pytester.makepyfile(test_sum="def test_sum():\n    assert sum([1, 2]) == 3\n")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)
    assert "quad-hil" in result.stdout.str(), "the plugin is loaded (the header lists it)"
    assert (pytester.path / "imported.txt").read_text() == ""


def test_an_unrelated_project_gets_no_warning_and_keeps_its_own_loop_scope(pytester):
    """pytest-asyncio, installed with the plugin, warns when asyncio_default_fixture_loop_scope is unset."""
    pytester.makepyfile(test_sum="def test_sum():\n    assert sum([1, 2]) == 3\n")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)
    output = result.stdout.str() + result.stderr.str()
    assert "PytestDeprecationWarning" not in output and "is unset" not in output, output
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = session\n")
    assert "asyncio_default_fixture_loop_scope=session" in pytester.runpytest_subprocess().stdout.str()
