"""The fixtures a HIL test asks for: its target, profile and repetition; a connected vehicle whose
telemetry goes into the test's trial record; the recorder, the link, metrics, missions and faults.

pytest imports this module in every run where quad-hil is installed, to know the fixtures' names: what
flies (records, targets, MAVSDK, pandas) is imported by the fixture that needs it, when a test asks for it.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

from hil import version as harness_version
from hil.pytest_plugin.bench import BenchConnections
from hil.pytest_plugin.config import CONFIG, HilConfig, target_kind
from hil.pytest_plugin.target import LINK, ONBOARD, SIMULATOR, LinkUnderTest

if TYPE_CHECKING:
    from hil.pytest_plugin.lab import LabTarget
    from profiles.perturbation import Perturbation
    from records.record import TrialRecorder


@pytest.fixture
def hil_config(request: pytest.FixtureRequest) -> HilConfig:
    return request.config.stash[CONFIG]


@pytest.fixture
def hil_target(hil_config: HilConfig) -> str:
    """The target of this test (with several --hil-target, each test is parametrized over them)."""
    return hil_config.targets[0]


@pytest.fixture
def hil_profile(hil_config: HilConfig, hil_target: str) -> str:
    """The vehicle profile of this test: the lab file's for its target, else --hil-profile (a marker's
    `profiles` parametrize it)."""
    return hil_config.entry(hil_target).profile or hil_config.profile


@pytest.fixture
def hil_repeat() -> int:
    """Which repetition this is (--hil-repeat)."""
    return 0


@dataclass
class TestRecord:
    """Per-test bookkeeping the report hook reads: where the record is and which metrics failed."""

    path: Path
    metrics: dict = field(default_factory=dict)
    failed: list = field(default_factory=list)
    recorder: TrialRecorder | None = None  # the test's trial record while its vehicle is up
    rows: list = field(default_factory=list)  # its telemetry snapshots (the session's): the flight it flew


RECORD = pytest.StashKey[TestRecord]()


@pytest.fixture(scope="session")
def hil_bench() -> BenchConnections:
    """The session's connections to flight controllers it did not start (one per connection string)."""
    bench = BenchConnections()
    yield bench
    bench.close()


@pytest_asyncio.fixture
async def hil_vehicle(request: pytest.FixtureRequest, hil_config: HilConfig, hil_target: str, hil_profile: str,
                      hil_repeat: int, hil_bench: BenchConnections):
    """A connected, armable Vehicle on the chosen target, its telemetry recorded into this test's trial record."""
    from hil.pytest_plugin.target import bring_up
    from hil.safety import require_on_ground
    from hil.session import TrialSession
    from hil.stop import make_safe
    from px4.sim import BUILTIN_AUTOPILOT
    from records.summary import PytestSummary
    from targets.spec import TargetSpec

    marker = request.node.get_closest_marker("hil")
    opts = marker.kwargs if marker else {}
    targets = opts.get("targets")
    entry = hil_config.entry(hil_target)
    kind = target_kind(entry.target)
    if targets and kind not in targets:
        pytest.skip(f"runs on {', '.join(targets)}, not on {kind}")
    # A HITL board (px4-hitl) is flown as any board: arming only with --hil-arm, its parameters journaled.
    board = not TargetSpec.parse(entry.target).simulated
    if board and not (hil_config.arm or entry.arm):
        pytest.skip(f"{hil_target} may be a real aircraft: add --hil-arm to fly it")
    name = re.sub(r"[^\w.-]+", "_", request.node.nodeid).strip("_")
    # A rerun (pytest-rerunfailures) keeps the failed attempt's record and writes its own beside it.
    attempt = getattr(request.node, "execution_count", 1)
    record_dir = hil_config.record_root / (name if attempt <= 1 else f"{name}.attempt{attempt}")
    record = TestRecord(record_dir)
    request.node.stash[RECORD] = record
    request.node.user_properties.append(("hil_record", str(record_dir)))
    link_name = opts.get("link") or hil_config.link
    params = opts.get("params", {})
    seed, perturbation = _perturbation(hil_config, entry, hil_repeat, link_name)
    config = {"test": request.node.nodeid, "target": hil_target, "profile": hil_profile, "link": link_name,
              "params": params, "speed": hil_config.speed, "repeat": hil_repeat, "attempt": attempt,
              "perturbation": perturbation.as_config()}
    if seed is not None:
        request.node.user_properties.extend([("hil_seed", str(seed)),
                                             ("hil_perturbation", json.dumps(perturbation.as_config()))])
    with TrialSession(record_dir, config=config, target=hil_target, seed=seed) as session:
        recorder = session.recorder
        record.rows = session.rows
        try:
            async with bring_up(entry, hil_config, hil_profile, params, link_name, session, request,
                                hil_bench, perturbation) as vehicle:
                record.recorder = recorder
                await require_on_ground(vehicle)  # a vehicle someone else is flying is never handed to a test
                # A running flight controller is not rebooted between tests: what the test changes is set
                # through the journal and put back after the landing (a simulator takes them at boot).
                async with (_params_changed(vehicle, params, recorder) if board
                            else contextlib.nullcontext()):
                    await vehicle.wait_armable(timeout=30.0)
                    # What was tested, in the JUnit XML beside the verdict: a CI dashboard can tell runs apart. The
                    # built-in vehicle over MAVLink reports PX4's release as PX4 does; the report names it.
                    autopilot = (BUILTIN_AUTOPILOT if kind == "sim"
                                 else (await vehicle.preflight_status()).autopilot)
                    request.node.user_properties.extend([
                        ("hil_target", hil_target), ("hil_profile", hil_profile), ("hil_autopilot", autopilot),
                        ("hil_harness_version", harness_version())])
                    try:
                        yield vehicle
                    finally:
                        # Whatever the test did, the vehicle ends landed and disarmed, by the harness's one stop policy.
                        await make_safe(vehicle, event=recorder.event)
        finally:
            # After the target is down: its last rows (the physics' truth, PX4's logs) are in the record.
            passed = getattr(request.node, "_hil_call_passed", None)
            outcome = "not_run" if passed is None else "passed" if passed else "failed"  # None: setup failed/skipped
            session.finish(outcome, PytestSummary(outcome=outcome, metrics=record.metrics, failed=tuple(record.failed)))


def _perturbation(config: HilConfig, entry: LabTarget, repeat: int,
                  link: str | None) -> tuple[int | None, Perturbation]:
    """This run's seed (from --hil-seed and the run's index, as a campaign's trial seed is from its id) and what
    it flies: a campaign's default perturbation drawn from that seed, less what its target cannot apply
    (`targets.spec.perturbation_gaps`, named in the record). With --hil-perturb off, no seed: the nominal flight."""
    from hil.campaign import trial_seed
    from profiles.perturbation import Perturb, Perturbation
    from targets.spec import TargetSpec, perturbation_gaps

    if not config.perturb:
        return None, Perturbation()
    seed = trial_seed(config.seed, f"run{repeat}")
    gaps = perturbation_gaps(TargetSpec.parse(entry.target), entry.physics or config.physics, linked=link is not None)
    return seed, Perturb().draw(seed).without(gaps)


@contextlib.asynccontextmanager
async def _params_changed(vehicle, params: dict, recorder: TrialRecorder):
    """A flight controller the session did not start, for one test: its journal restored, the test's parameters
    set, and its own data-link-loss failsafe armed in case the test run dies (hil.stop.dead_mans_switch)."""
    from hil.param_journal import keep_journal
    from hil.stop import dead_mans_switch

    await keep_journal(vehicle, recorder)
    async with dead_mans_switch(vehicle, recorder.event), vehicle.params_changed(params) as originals:
        if params:
            recorder.event("params_set", params=dict(params), originals=originals)
        yield


@pytest.fixture
def hil_recorder(request: pytest.FixtureRequest, hil_vehicle) -> TrialRecorder:
    """The test's trial record (telemetry is in it already): add events, tables, a planner's timing."""
    return request.node.stash[RECORD].recorder


@pytest.fixture
def hil_link(request: pytest.FixtureRequest, hil_vehicle) -> LinkUnderTest | None:
    """The MAVLink impairment proxy this test's vehicle is reached through (None without a link profile)."""
    return request.node.stash.get(LINK, None)


@pytest.fixture
def hil_expect(request: pytest.FixtureRequest, hil_vehicle):
    """`hil_expect(metric, value, le=..., ge=...)`: record a metric and fail, naming it and the record, if out of bounds."""
    record: TestRecord = request.node.stash[RECORD]

    def expect(metric: str, value: float, *, le: float | None = None, ge: float | None = None) -> float:
        record.metrics[metric] = value
        record.recorder.event("metric", metric=metric, value=value, le=le, ge=ge)
        expected = []
        if le is not None:
            expected.append(f"<= {le:g}")
        if ge is not None:
            expected.append(f">= {ge:g}")
        request.node.user_properties.append((f"hil_metric:{metric}", f"{value:.6g}"))
        if expected:
            request.node.user_properties.append((f"hil_threshold:{metric}", " and ".join(expected)))
        # NaN compares false with everything, so a metric that could not be computed fails too.
        if math.isnan(value) or (le is not None and value > le) or (ge is not None and value < ge):
            record.failed.append(metric)
            raise AssertionError(f"metric {metric} = {value:.4g}, expected {' and '.join(expected)}"
                                 f" (trial record: {record.path})")
        return value
    return expect


@pytest.fixture
def hil_mission(request: pytest.FixtureRequest, hil_vehicle, hil_recorder, hil_profile: str):
    """`await hil_mission(path)`: fly a mission file (any format `hil fly` takes) on the vehicle, its airspace
    and scene judged as `hil fly` judges them, its faults in the harness's physics where that drives the vehicle;
    returns (outcome, reason, summary)."""
    from hil.fly import fly_mission
    from missions.load import load
    from profiles.library import load_vehicle_profile
    from records.clock import mark, speed_between, vehicle_time
    from records.record import read_table
    from reports.trial_summary import summarize_trial

    async def run(path):
        mission = load(path)
        recorder = hil_recorder
        # From the call, not from the latest snapshot: that one is as old as the synchronous fixture
        # set-up pytest ran since the event loop last turned (1.2-1.8 s measured). In lockstep the record's
        # stamps are simulated time, which stands still while nothing awaits the vehicle: its snapshot is now.
        start = mark(hil_vehicle.clock_s)
        since_ns = start.wall_ns if math.isfinite(hil_vehicle.speed_factor) else hil_vehicle.state.t_ns
        outcome, reason = await fly_mission(hil_vehicle, mission, recorder, load_vehicle_profile(hil_profile).radius,
                                            simulator=request.node.stash.get(SIMULATOR, None))
        speed = speed_between(start, mark(hil_vehicle.clock_s), hil_vehicle.speed_factor)
        recorder.flush()
        await recorder.written()  # the recorder writes on its own thread: the parts just flushed are read back
        table = read_table(recorder.record_dir, "telemetry")
        flown = vehicle_time(table[table.t_ns >= since_ns].reset_index(drop=True), speed)
        return outcome, reason, summarize_trial(flown, mission.to_waypoint_mission().reference_path())
    return run


@pytest.fixture
def hil_navigation(request: pytest.FixtureRequest, hil_vehicle, hil_recorder, hil_config: HilConfig, hil_profile: str,
                   hil_target: str):
    """`await hil_navigation("forest:3", planner="avoid", rule="flyingtrust")`: fly a scene from its start
    to its goal with a planner, judged as campaign trials and `hil onboard` judge it (one loop, one judge:
    `hil.navigation.fly_scene`); returns its `NavigationResult` (`.verdict.outcome`, `.monitor`, `.runtime`).

    The first argument may be a point_to_point mission file in a scene instead: its start, goal, airspace
    and rule (`rule` is then ignored). `planner`: avoid, straight or MODULE:CLASS; `compute`: a compute
    profile name to emulate. With --hil-onboard the planner runs on that onboard agent.
    """
    from hil.campaign import planner_choice
    from hil.navigation import Navigation, fly_scene, navigation_target
    from hil.rules import RULES, SuccessRule
    from onboard.planner import load_planner
    from profiles.compute import load_compute_profile
    from profiles.library import load_vehicle_profile
    from targets.spec import TargetSpec

    target = hil_config.entry(hil_target).target
    kind = target_kind(target)
    hardware = not TargetSpec.parse(target).simulated  # a board, px4-hitl's included: hil fly flies it so too

    async def run(mission: str, planner: str = "avoid", rule: str = "flyingtrust", compute: str | None = None,
                  rate_hz: float = 10.0):
        choice = planner_choice(planner)
        navigation = Navigation(load_planner(choice.spec), planner, sensor=choice.sensor, rate_hz=rate_hz,
                                compute=load_compute_profile(compute) if compute else None, spec=choice.spec,
                                remote=request.node.stash.get(ONBOARD, None))
        scene, benchmark = navigation_target(mission)
        judged_by = RULES[rule] if benchmark is None else SuccessRule.of_mission(benchmark)
        # Telemetry is recorded by hil_vehicle already; a lockstep vehicle is dropped, not landed.
        return await fly_scene(hil_vehicle, navigation, scene, judged_by, load_vehicle_profile(hil_profile).radius,
                               hil_recorder, land=kind != "lockstep", hardware=hardware, record=False,
                               mission=benchmark, simulator=request.node.stash.get(SIMULATOR, None))
    return run


@pytest_asyncio.fixture
async def hil_faults(request: pytest.FixtureRequest, hil_config: HilConfig, hil_target: str, hil_vehicle, hil_recorder):
    """A fault injector with its monitor: `await hil_faults.inject_and_verify(spec)` -> a FaultVerdict.

    On the harness's physics the faults act in the physics and sensors (PX4 is never told);
    elsewhere they are asked of the flight controller (MAV_CMD_INJECT_FAILURE).
    """
    from bridges.failure import FailureInjector
    from bridges.physics_faults import PhysicsFailureInjector
    from hil.fault_monitor import FaultMonitor

    entry = hil_config.entry(hil_target)
    if target_kind(entry.target) == "hardware" and not (hil_config.allow_hardware_faults or entry.faults):
        pytest.skip("fault injection on a connection-string target needs --allow-hardware-faults")
    simulator = request.node.stash.get(SIMULATOR, None)
    if target_kind(entry.target) == "lockstep":
        pytest.skip("the fault monitor proves a fault in the flight controller's MAVLink telemetry, which the "
                    "lockstep vehicle has none of (lockstep campaigns still fly fault profiles)")
    injector = PhysicsFailureInjector(simulator) if simulator is not None else FailureInjector(hil_vehicle)
    async with injector:
        async with FaultMonitor(hil_vehicle, injector, hil_recorder) as monitor:
            await monitor.wait_for_telemetry()
            yield monitor
