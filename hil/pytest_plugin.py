"""The pytest plugin: HIL tests get a connected, healthy `Vehicle` on whatever target the command line names.

    pytest tests/hil                                   # the targets of the ini option hil_targets (default: sim)
    pytest tests/hil --hil-target sim --hil-target px4-sitl   # every test on both, same assertions
    pytest tests/hil --hil-target px4-sitl --hil-profile 1.40kg-EMAX
    pytest tests/hil --hil-target serial:///dev/ttyACM0:921600 --hil-arm   # a flight controller on the bench
    pytest tests/hil --hil-repeat 10                   # pass rate with a 95 % interval per test

Fixtures: `hil_vehicle` (connected, armable, telemetry recorded into the test's trial record),
`hil_mission` (fly a mission file on it), `hil_faults` (inject a fault and check it showed),
`hil_link` (the impairment proxy in use, if any), `hil_expect` (assert a metric; a failure names
the metric and the record). Mark tests with `@pytest.mark.hil(...)` to choose targets, profiles,
a link profile and vehicle parameters. All durations in these fixtures are vehicle time.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import pytest_asyncio

SIM_TARGETS = ("sim", "lockstep", "px4-sitl")


def target_kind(target: str) -> str:
    """sim | lockstep | px4-sitl | hardware (a connection string: treated as a real aircraft)."""
    base = target.split(":", 1)[0] if target.startswith("px4-sitl") else target
    return base if base in SIM_TARGETS else "hardware"


@dataclass
class HilConfig:
    """What the command line asked for."""

    targets: list[str]
    profile: str
    link: str | None
    record_root: Path
    speed: float
    arm: bool
    allow_hardware_faults: bool
    repeat: int


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hil", "hardware-in-the-loop (quad-hil)")
    group.addoption("--hil-target", action="append", default=None,
                    help="sim (built-in vehicle process), lockstep (in-process, simulated time), px4-sitl[:N], or a "
                         "connection string for a flight controller; repeat it to run every test on each "
                         "(default: the ini option hil_targets, else sim)")
    group.addoption("--hil-profile", default="default", help="vehicle profile for simulated targets")
    group.addoption("--hil-link", default=None, help="link profile (profiles/links or a YAML file) to impair every "
                                                     "test's link with, through the MAVLink proxy")
    group.addoption("--hil-record-dir", default=None, help="where trial records go (default: runs/pytest-<time>)")
    group.addoption("--hil-speed", type=float, default=None, help="built-in vehicle speed factor (default: ini hil_speed)")
    group.addoption("--hil-arm", action="store_true", help="allow arming a connection-string target (a real aircraft)")
    group.addoption("--allow-hardware-faults", action="store_true",
                    help="allow fault injection on a connection-string target")
    group.addoption("--hil-repeat", type=int, default=1, help="run each HIL test N times and report its pass rate")
    parser.addini("hil_speed", "default speed factor of the built-in vehicle in HIL tests", default="1")
    parser.addini("hil_targets", "targets every HIL test runs on, space-separated", default="sim")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "hil(targets=None, profiles=None, link=None, params=None): a hardware-in-the-"
                                       "loop test; runs only on the listed target kinds, once per listed profile, "
                                       "through a link profile, with vehicle parameters set (simulators)")
    stamp = time.strftime("%Y%m%dT%H%M%S")
    speed = config.getoption("--hil-speed") or float(config.getini("hil_speed"))
    config.stash[_CONFIG] = HilConfig(
        targets=config.getoption("--hil-target") or config.getini("hil_targets").split(),
        profile=config.getoption("--hil-profile"),
        link=config.getoption("--hil-link"),
        record_root=Path(config.getoption("--hil-record-dir") or Path("runs") / f"pytest-{stamp}"),
        speed=speed, arm=config.getoption("--hil-arm"),
        allow_hardware_faults=config.getoption("--allow-hardware-faults"), repeat=config.getoption("--hil-repeat"))


_CONFIG = pytest.StashKey[HilConfig]()
_RECORD = pytest.StashKey[dict]()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("hil")
    if marker is None or "hil_vehicle" not in metafunc.fixturenames:
        return
    profiles = marker.kwargs.get("profiles")
    if profiles:
        metafunc.parametrize("hil_profile", list(profiles), ids=[re.sub(r"\W+", "_", p) for p in profiles])
    cfg = metafunc.config.stash[_CONFIG]
    if len(cfg.targets) > 1:
        metafunc.parametrize("hil_target", cfg.targets, ids=cfg.targets)
    repeat = cfg.repeat
    if repeat > 1:
        metafunc.parametrize("hil_repeat", range(repeat), ids=[f"run{i}" for i in range(repeat)])


@pytest.fixture
def hil_config(request: pytest.FixtureRequest) -> HilConfig:
    return request.config.stash[_CONFIG]


@pytest.fixture
def hil_target(hil_config: HilConfig) -> str:
    """The target of this test (with several --hil-target, each test is parametrized over them)."""
    return hil_config.targets[0]


@pytest.fixture
def hil_profile(hil_config: HilConfig) -> str:
    """The vehicle profile of this test (a marker's `profiles` parametrize it)."""
    return hil_config.profile


@pytest.fixture
def hil_repeat() -> int:
    """Which repetition this is (--hil-repeat)."""
    return 0


@dataclass
class _TestRecord:
    """Per-test bookkeeping the report hook reads: where the record is and which metrics failed."""

    path: Path
    metrics: dict = field(default_factory=dict)
    failed: list = field(default_factory=list)


@pytest_asyncio.fixture
async def hil_vehicle(request: pytest.FixtureRequest, hil_config: HilConfig, hil_target: str, hil_profile: str,
                      hil_repeat: int):
    """A connected, armable Vehicle on the chosen target, its telemetry recorded into this test's trial record."""
    from records.record import TrialRecorder

    marker = request.node.get_closest_marker("hil")
    opts = marker.kwargs if marker else {}
    targets = opts.get("targets")
    kind = target_kind(hil_target)
    if targets and kind not in targets:
        pytest.skip(f"runs on {', '.join(targets)}, not on {kind}")
    if kind == "hardware" and not hil_config.arm:
        pytest.skip(f"{hil_target} may be a real aircraft: add --hil-arm to fly it")
    name = re.sub(r"[^\w.-]+", "_", request.node.nodeid).strip("_")
    record_dir = hil_config.record_root / name
    record = _TestRecord(record_dir)
    request.node.stash[_RECORD] = record
    request.node.user_properties.append(("hil_record", str(record_dir)))
    link_name = opts.get("link") or hil_config.link
    config = {"test": request.node.nodeid, "target": hil_target, "profile": hil_profile, "link": link_name,
              "params": opts.get("params", {}), "speed": hil_config.speed, "repeat": hil_repeat}
    async with contextlib.AsyncExitStack() as stack:
        vehicle = await stack.enter_async_context(_bring_up(hil_target, hil_config.speed, hil_profile,
                                                            opts.get("params", {}), link_name, request))
        recorder = stack.enter_context(TrialRecorder(record_dir, config=config, target=hil_target))
        vehicle.hil_recorder = recorder
        telemetry = asyncio.get_running_loop().create_task(_record_telemetry(vehicle, recorder))
        await vehicle.wait_armable(timeout=30.0)
        try:
            yield vehicle
        finally:
            telemetry.cancel()
            with contextlib.suppress(BaseException):
                await telemetry
            await _make_safe(vehicle)
            passed = getattr(request.node, "_hil_call_passed", None)
            recorder.finish("passed" if passed else "failed", {"metrics": record.metrics, "failed": record.failed})


async def _record_telemetry(vehicle, recorder) -> None:
    async for state in vehicle.telemetry():
        recorder.append("telemetry", state.as_row())


async def _make_safe(vehicle) -> None:
    """Whatever the test did, the vehicle ends on the ground and disarmed (or landing, if it will not finish)."""
    from bridges.vehicle import VehicleError

    with contextlib.suppress(VehicleError, TimeoutError):
        if vehicle.state.in_air:
            await vehicle.release()
            await vehicle.land()
            await vehicle.wait_until(lambda s: not s.armed, 120.0, "landing after the test")


@contextlib.asynccontextmanager
async def _bring_up(target: str, speed: float, profile: str, params: dict, link_name: str | None, request):
    """Start (or reach) the target and yield a connected Vehicle; stop everything after."""
    from bridges.lockstep_vehicle import LockstepVehicle
    from hil.targets import SimProcessOptions, builtin_vehicle
    from px4.sim.realtime import SimOptions, build_vehicle

    kind = target_kind(target)
    if kind == "lockstep":
        from profiles.link import load_link_profile

        autopilot, _ = build_vehicle(SimOptions(profile=profile, params=params))
        link = load_link_profile(link_name) if link_name else None
        async with LockstepVehicle(autopilot, link=link) as vehicle:
            if link is not None:  # the same impairment model, in simulated time
                request.node.stash[_LINK] = LinkUnderTest(link_name, rows=vehicle.link.rows)
            yield vehicle
        return
    if kind == "px4-sitl":
        from profiles.vehicle import load_vehicle_profile
        from px4.sih import sitl_params
        from px4.sitl import Px4NotFound, SitlOptions, px4_sitl
        instance = int(target.split(":")[1]) if ":" in target else None
        try:
            sitl_run = px4_sitl(SitlOptions(instance=instance, speed=speed,
                                            params={**sitl_params(load_vehicle_profile(profile)), **params}))
            sitl = await sitl_run.__aenter__()
        except Px4NotFound as exc:
            pytest.skip(str(exc))
        try:
            async with _connected(sitl.url, speed, link_name, request) as vehicle:
                yield vehicle
        finally:
            await sitl_run.__aexit__(None, None, None)
        return
    if kind == "sim":
        async with builtin_vehicle(SimProcessOptions(profile=profile, speed=speed, params=params)) as sim:
            async with _connected(sim.url, speed, link_name, request) as vehicle:
                yield vehicle
        return
    async with _connected(target, 1.0, link_name, request) as vehicle:
        yield vehicle


@contextlib.asynccontextmanager
async def _connected(url: str, speed: float, link_name: str | None, request):
    """MAVSDK on `url`, through the impairment proxy when a link profile is named."""
    from bridges.link_proxy import LinkProxy
    from bridges.mavsdk_vehicle import connect
    from bridges.transport import parse_url
    from px4.process import free_udp_port
    from profiles.link import load_link_profile

    proxy = None
    if link_name:
        endpoint = parse_url(url)
        if endpoint.scheme != "udpin":
            pytest.skip(f"--hil-link needs a UDP target the proxy can stand in front of, not {url}")
        onboard_port = free_udp_port()
        link = LinkUnderTest(link_name)
        proxy = LinkProxy(url, f"udpout://127.0.0.1:{onboard_port}", load_link_profile(link_name), sink=link.rows.append,
                          speed=speed)
        await proxy.start()
        link.proxy = proxy
        request.node.stash[_LINK] = link
        url = f"udpin://127.0.0.1:{onboard_port}"
    try:
        vehicle = await connect(url, timeout=15.0, speed_factor=speed)
        try:
            yield vehicle
        finally:
            await vehicle.close()
    finally:
        if proxy is not None:
            proxy.close()


@dataclass
class LinkUnderTest:
    """The impairment proxy a test's vehicle is reached through, and every frame's fate so far."""

    profile: str
    rows: list = field(default_factory=list)
    proxy: object = None

    def applied_delays_ms(self, direction: str) -> list[float]:
        """Delays really applied to the frames that went through, one direction (to_vehicle | to_onboard)."""
        return [r["applied_ms"] for r in self.rows
                if r["direction"] == direction and r["fate"] != "dropped" and r["copy_no"] == 0]


_LINK = pytest.StashKey[LinkUnderTest]()


@pytest.fixture
def hil_link(request: pytest.FixtureRequest, hil_vehicle) -> LinkUnderTest | None:
    """The MAVLink impairment proxy this test's vehicle is reached through (None without a link profile)."""
    return request.node.stash.get(_LINK, None)


@pytest.fixture
def hil_expect(request: pytest.FixtureRequest, hil_vehicle):
    """`hil_expect(metric, value, le=..., ge=...)`: record a metric and fail, naming it and the record, if out of bounds."""
    record: _TestRecord = request.node.stash[_RECORD]

    def expect(metric: str, value: float, *, le: float | None = None, ge: float | None = None) -> float:
        record.metrics[metric] = value
        hil_vehicle.hil_recorder.event("metric", metric=metric, value=value, le=le, ge=ge)
        expected = []
        if le is not None:
            expected.append(f"<= {le:g}")
        if ge is not None:
            expected.append(f">= {ge:g}")
        # NaN compares false with everything, so a metric that could not be computed fails too.
        if math.isnan(value) or (le is not None and value > le) or (ge is not None and value < ge):
            record.failed.append(metric)
            raise AssertionError(f"metric {metric} = {value:.4g}, expected {' and '.join(expected)}"
                                 f" (trial record: {record.path})")
        return value
    return expect


@pytest.fixture
def hil_mission(hil_vehicle):
    """`await hil_mission(path)`: fly a waypoint mission file on the vehicle; returns (outcome, reason, summary)."""
    from hil.fly import fly_mission
    from records.clock import vehicle_time
    from records.record import read_table
    from missions.waypoint import load_mission
    from reports.trial_summary import summarize_trial

    async def run(path):
        mission = load_mission(path)
        recorder = hil_vehicle.hil_recorder
        start_ns = hil_vehicle.state.t_ns
        outcome, reason = await fly_mission(hil_vehicle, mission, recorder)
        recorder.flush()
        table = read_table(recorder.record_dir, "telemetry")
        flown = vehicle_time(table[table.t_ns >= start_ns].reset_index(drop=True), hil_vehicle.speed_factor)
        return outcome, reason, summarize_trial(flown, mission.reference_path())
    return run


@pytest_asyncio.fixture
async def hil_faults(hil_config: HilConfig, hil_target: str, hil_vehicle):
    """A fault injector with its monitor: `await hil_faults.inject_and_verify(spec)` -> a FaultVerdict."""
    from bridges.failure import FailureInjector
    from hil.fault_monitor import FaultMonitor

    if target_kind(hil_target) == "hardware" and not hil_config.allow_hardware_faults:
        pytest.skip("fault injection on a connection-string target needs --allow-hardware-faults")
    if target_kind(hil_target) == "lockstep":
        pytest.skip("faults are injected over MAVLink (MAV_CMD_INJECT_FAILURE); the lockstep vehicle has no link")
    async with FailureInjector(hil_vehicle) as injector:
        async with FaultMonitor(hil_vehicle, injector, hil_vehicle.hil_recorder) as monitor:
            await monitor.wait_for_telemetry()
            yield monitor


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    outcome = yield
    report = outcome.get_result()
    record = item.stash.get(_RECORD, None)
    if report.when == "call":
        item._hil_call_passed = report.passed
    if record is not None and report.failed:
        lines = [f"trial record: {record.path}"]
        if record.failed:
            lines.append("failed metrics: " + ", ".join(f"{m} = {record.metrics[m]:.4g}" for m in record.failed))
        report.sections.append(("hil", "\n".join(lines)))


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    cfg = config.stash.get(_CONFIG, None)
    if cfg is None or cfg.repeat <= 1:
        return
    import pandas as pd

    from reports.stats import flakiness

    rows = []
    for report in terminalreporter.stats.get("passed", []) + terminalreporter.stats.get("failed", []):
        if report.when == "call" and "[" in report.nodeid and "run" in report.nodeid:
            case = re.sub(r"-?run\d+(?=\]|-)", "", report.nodeid).replace("[]", "")
            rows.append({"case": case, "success": float(report.passed)})
    if not rows:
        return
    table = flakiness(pd.DataFrame(rows), ["case"])
    terminalreporter.section(f"HIL pass rates over {cfg.repeat} runs (95 % bootstrap interval)")
    for row in table.itertuples():
        mark = "  flaky" if row.flaky else ""
        terminalreporter.write_line(f"{row.pass_rate:6.0%} [{row.low:.0%}, {row.high:.0%}]  n={row.n}  {row.case}{mark}")
