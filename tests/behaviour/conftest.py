"""One behaviour suite, two autopilots: every test here runs on the built-in vehicle and on PX4 SITL
(PX4_DIR, v1.16.1 in CI) with the same assertions; tests marked `px4_smoke` also run on each build in
PX4_SMOKE_DIRS (v1.14.0 in CI). PX4 is the truth: where the built-in vehicle differs, it is the bug.

Each test gets a fresh autopilot process at a speed factor (PX4_SIM_SPEED_FACTOR for PX4, which also
lengthens its loss timeouts by that factor in rcS; the built-in vehicle does the same), with two
links, as on PX4 SITL: the API link a MAVSDK `vehicle` uses, and a ground-station link for a plain
pymavlink `gcs` client. Where a PX4 release lacks a feature, the test marks that target xfail (strict)
with the reason, never a silent skip.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterator

import pytest

from bridges.mavsdk_vehicle import connect
from targets.builtin import SimProcessOptions, builtin_vehicle
from px4.process import free_udp_port
from px4.sitl import SitlOptions, px4_sitl

from ..mavlink_client import Client
from ..px4_builds import MAIN_BUILD, NO_PX4, SMOKE_BUILDS

# Speed factors: PX4 SITL takes about 45 % of a core idle at 4x (v1.16.1), and two of them share the CI
# machine's two cores with the harness, so more would only make it fall behind. The built-in vehicle
# takes about 18 % at 4x and keeps 8x, so its half of the suite flies in half the time. Every test reads
# the factor from `autopilot.speed`; its thresholds are in vehicle time.
PX4_SPEED = 4.0
BUILTIN_SPEED = 8.0
BUILTIN = "builtin"


@dataclass(frozen=True)
class AutopilotUnderTest:
    """An autopilot process for one test: where MAVSDK connects, where a ground station talks."""

    kind: str  # "builtin" | "px4-sitl"
    build: str | None  # the PX4 build directory, px4-sitl only
    url: str  # MAVSDK connection string (API link)
    gcs_url: str  # pymavlink connection string (ground-station link)
    speed: float
    system_id: int

    @property
    def is_px4(self) -> bool:
        return self.kind == "px4-sitl"

    def xfail_on(self, request, kind: str, reason: str) -> None:
        """Mark this test as failing on `kind` (strict: it must fail there), saying why."""
        if self.kind == kind:
            request.applymarker(pytest.mark.xfail(strict=True, reason=reason))


def pytest_generate_tests(metafunc) -> None:
    if "autopilot" not in metafunc.fixturenames:
        return
    builds = [None, MAIN_BUILD or "missing"]
    ids = [BUILTIN, "px4"]
    if metafunc.definition.get_closest_marker("px4_smoke"):
        builds += SMOKE_BUILDS
        ids += [f"px4-{Path(d).name}" for d in SMOKE_BUILDS]
    metafunc.parametrize("autopilot", builds, ids=ids, indirect=True)


@contextlib.asynccontextmanager
async def start_autopilot(build: str | None, params: dict[str, float] | None = None) -> AsyncIterator[AutopilotUnderTest]:
    """A fresh built-in vehicle (build None) or PX4 SITL from `build`, with `params` set at boot."""
    params = dict(params or {})
    if build is None:
        gcs_port = free_udp_port()
        speed = BUILTIN_SPEED
        options = SimProcessOptions(speed=speed, params=params, extra_links=[f"udpin://127.0.0.1:{gcs_port}"])
        async with builtin_vehicle(options) as sim:
            yield AutopilotUnderTest(BUILTIN, None, sim.url, f"udpout:127.0.0.1:{gcs_port}", speed, 1)
        return
    async with px4_sitl(SitlOptions(px4_dir=build, speed=PX4_SPEED, params=params)) as sitl:
        yield AutopilotUnderTest("px4-sitl", build, sitl.url, f"udpout:127.0.0.1:{sitl.ports.gcs_local}", PX4_SPEED,
                                 sitl.ports.system_id)


def _boot_params(request) -> dict[str, float]:
    marker = request.node.get_closest_marker("boot_params")
    return dict(marker.args[0]) if marker else {}


@pytest.fixture
async def autopilot(request) -> AsyncIterator[AutopilotUnderTest]:
    """The autopilot under test, fresh for each test; `@pytest.mark.boot_params({...})` sets parameters at boot."""
    if request.param == "missing":
        pytest.skip(NO_PX4)
    async with start_autopilot(request.param, _boot_params(request)) as running:
        yield running


@pytest.fixture
async def vehicle(autopilot):
    """A MAVSDK-backed Vehicle on the autopilot's API link, ready to arm."""
    v = await connect(autopilot.url, timeout=20.0, speed_factor=autopilot.speed)
    try:
        await v.wait_armable(timeout=60.0)
        yield v
    finally:
        await v.close()


@pytest.fixture
def gcs(autopilot):
    """A plain pymavlink client on the autopilot's ground-station link."""
    client = Client(autopilot.gcs_url)
    try:
        yield client
    finally:
        client.close()
