"""Fixtures shared by the integration tests: a real built-in vehicle process and a real MAVSDK link.

Every vehicle here is a separate process speaking MAVLink over loopback UDP (or a pty pair), and
every client is MAVSDK 4 or pymavlink: nothing in between is mocked. Vehicles run at a speed factor
so that the flights take seconds, exactly as PX4_SIM_SPEED_FACTOR would make PX4 SITL do.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from bridges.mavsdk_vehicle import connect
from targets.builtin import SimProcessOptions, builtin_vehicle

from .mavlink_client import Client
from .px4_builds import NO_PX4

pytest_plugins = ["pytester"]  # tests/test_pytest_plugin.py runs pytest sessions of its own

# PX4 SITL flies at 4x: it takes about 45 % of a core idle there (v1.16.1), and more would only make it fall
# behind on the CI machine's two shared cores. The fixtures below use the same factor, because tests that
# count streams per wall second or compare with lockstep use them. A test that starts its own built-in
# vehicle and judges in vehicle time flies it at BUILTIN_SPEED (about 35 % of a core idle), in half the time.
SPEED = 4.0
BUILTIN_SPEED = 8.0

# A shell that starts `make test` in the background (`cmd &` without job control) ignores SIGINT,
# and every process it starts inherits that: the Ctrl-C tests' `hil` processes would never see their
# Ctrl-C. The tests' own process takes SIGINT back, so the processes they start get the default.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# PX4 SITL flies in real time at a speed factor, on the same two cores as the other test workers'
# processes: a stall of any of them now and then puts PX4 outside a bound that holds its measured spread
# (each test names the spread it measured). A test that flies real PX4 runs at most twice
# (pytest-rerunfailures): a rerun is printed (R) and counted in the summary and the JUnit XML, so a
# test that fails twice fails, and one that needs reruns often shows it. Built-in vehicle tests never rerun.
PX4_RERUNS = 1


def _flies_px4(item: pytest.Item) -> bool:
    if any(mark.kwargs.get("reason") == NO_PX4 for mark in item.iter_markers("skipif")):
        return True
    callspec = getattr(item, "callspec", None)
    return callspec is not None and ("px4" in callspec.id or bool(callspec.params.get("build")))


TESTS = Path(__file__).resolve().parent
# The fast tier (`make test-fast`, `pytest -m fast`): the inner loop of a change, about two minutes on two cores,
# beside the whole suite that `make test` and CI run. It is these modules, whole: each checks the core of a
# package in seconds (units, file formats, hostile input, the judge and the stop policy on scripted vehicles,
# targets coming up, lockstep flights). A test added to one of them is in the tier; one that takes longer (a
# whole flight through `hil fly`, say) is marked slow and stays out, as does every test that flies PX4.
# tests/test_fast_tier.py fails when a package has no fast module, or when a module named here is gone.
FAST_MODULES = frozenset({
    "test_cli_startup.py", "test_compare.py", "test_config_loading.py", "test_control.py", "test_difficulty.py",
    "test_estimation.py", "test_fast_tier.py", "test_geometry.py", "test_hostile_files.py", "test_layers.py",
    "test_limits.py", "test_link_model.py", "test_lockstep.py", "test_margins.py", "test_metrics.py",
    "test_mission_file.py", "test_mission_schema.py", "test_monitor.py", "test_onboard_resources_profile.py",
    "test_onboard_units.py", "test_params_changed.py", "test_params_file.py", "test_params_table.py",
    "test_physics.py", "test_profile_library.py", "test_profiles_cli.py", "test_qgc.py", "test_record.py",
    "test_report_plots.py", "test_scenes.py", "test_scores_stats.py", "test_session.py", "test_stop_policy.py",
    "test_summary.py", "test_targets.py", "test_tasks.py", "test_trajectory.py", "test_trial_summary.py",
    "test_ulog.py",
})


ROOT = TESTS.parent
# numba builds a kernel on its first call and caches it beside its source (__pycache__/*.nbi, stale once the source
# is newer). On a fresh clone every test process would build what it first calls, seconds of CPU each, mid-flight:
# a built-in vehicle builds its own before it opens its links (px4.sim.realtime.warm_up), but a planner or a depth
# camera in the harness would stall a flight that keeps the wall clock (PX4 at 4x). One lockstep campaign over
# the scenes' geometry and the avoid planner builds them all, once, before the workers start.
KERNEL_PACKAGES = ("physics", "px4", "missions", "onboard")
WARM_CAMPAIGN = """name: warm-up
missions:
  - {scene: forest, configs: [0], rule: flyingtrust}
  - {scene: maze, configs: [0], rule: flightbench}
targets: [lockstep]
planners: [avoid]
"""


def _kernels_unbuilt() -> list[Path]:
    """The sources of compiled kernels with no cache at least as new as themselves (an index left by a kernel
    since renamed stays behind, so one fresh index will do)."""
    unbuilt = []
    for package in KERNEL_PACKAGES:
        for source in (ROOT / package).rglob("*.py"):
            if "numba.njit" not in source.read_text(encoding="utf-8"):
                continue
            caches = list((source.parent / "__pycache__").glob(f"{source.stem}.*.nbi"))
            if not caches or max(c.stat().st_mtime for c in caches) < source.stat().st_mtime:
                unbuilt.append(source.relative_to(ROOT))
    return unbuilt


def pytest_sessionstart(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput"):  # an xdist worker: the controller has done it
        return
    unbuilt = _kernels_unbuilt()
    if not unbuilt:
        return
    print(f"\nbuilding the compiled kernels once, before any test flies ({len(unbuilt)} sources without a "
          f"fresh cache: {', '.join(map(str, unbuilt[:4]))}{' ...' if len(unbuilt) > 4 else ''})", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        campaign = Path(tmp) / "warm-up.yaml"
        campaign.write_text(WARM_CAMPAIGN)
        built = subprocess.run([sys.executable, "-m", "hil", "run", str(campaign), "--out", str(Path(tmp) / "run"),
                                "--no-progress", "--workers", "1"], cwd=ROOT, capture_output=True, text=True,
                               timeout=900)
    if built.returncode not in (0, 1):  # 1: a trial that did not succeed, which builds its kernels all the same
        raise pytest.UsageError(f"the warm-up campaign failed (exit {built.returncode}):\n{built.stderr[-3000:]}")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "fast: the fast tier (make test-fast): tests/conftest.py's FAST_MODULES")


def _is_fast(item: pytest.Item) -> bool:
    return (item.path.parent == TESTS and item.path.name in FAST_MODULES and not _flies_px4(item)
            and item.get_closest_marker("slow") is None)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _flies_px4(item):
            item.add_marker(pytest.mark.flaky(reruns=PX4_RERUNS))
        if _is_fast(item):
            item.add_marker(pytest.mark.fast)


@pytest.fixture(autouse=True, scope="session")
def _own_state_dir(tmp_path_factory):
    """Parameter journals of the flights tests make (and of the processes they start) stay in the
    test session's own directory, never in the user's ~/.local/state."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HIL_STATE_DIR", str(tmp_path_factory.mktemp("hil-state")))
        yield


@pytest.fixture
async def sim():
    """A built-in vehicle process at SPEED x real time; its URL is `sim.url`."""
    async with builtin_vehicle(SimProcessOptions(speed=SPEED)) as proc:
        yield proc


@pytest.fixture
async def vehicle(sim):
    """A MAVSDK-backed Vehicle connected to `sim` and ready to arm."""
    v = await connect(sim.url, timeout=10.0, speed_factor=SPEED)
    try:
        await v.wait_armable(timeout=10.0)
        yield v
    finally:
        await v.close()


@pytest.fixture
async def client(sim):
    """A plain pymavlink client (as a ground station) on `sim`."""
    c = Client(sim.url)
    yield c
    c.close()
