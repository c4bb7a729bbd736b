"""Fixtures shared by the integration tests: a real built-in vehicle process and a real MAVSDK link.

Every vehicle here is a separate process speaking MAVLink over loopback UDP (or a pty pair), and
every client is MAVSDK 4 or pymavlink: nothing in between is mocked. Vehicles run at a speed factor
so that the flights take seconds, exactly as PX4_SIM_SPEED_FACTOR would make PX4 SITL do.
"""

from __future__ import annotations

import signal

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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _flies_px4(item):
            item.add_marker(pytest.mark.flaky(reruns=PX4_RERUNS))


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
