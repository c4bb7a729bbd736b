"""One navigation flight through a scene, whoever asks for it: the one trial loop of the harness.

A campaign trial (`hil.trial`), `hil onboard` (a companion computer on a MAVLink link), the pytest
plugin's `hil_navigation` fixture and the onboard benchmarks all fly `fly_scene`, so one flight gets
one verdict, whichever way it was started. The flight:

1. the vehicle must be disarmed on the ground (`hil.safety.require_on_ground`); on a flight
   controller that outlives the run, what an interrupted run left changed is restored first;
2. arm, take off straight to the scene's start (home is on the ground below it, `onboard.task`);
3. the rule's speed cap is set (and restored after), the mission clock starts, and the planner flies
   towards the goal in the onboard runtime (stage timing recorded) while the fault profile is applied,
   until the one judge, `hil.monitor.TrialMonitor`, decides (success, collision, timeout, failsafe)
   or something breaks (error);
4. land, when asked (a lockstep vehicle is simply dropped; one in real time must come down), by the
   stop policy (`hil.stop`), which also brings it down when the flight is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from aio.tasks import cancel_and_wait
from bridges.failure import FailureInjector
from bridges.physics_faults import PhysicsFailureInjector
from bridges.vehicle import Vehicle, VehicleError, VehicleLost
from config.errors import ConfigError
from hil.agent_client import (
    LOST_AFTER_S,
    AgentError,
    OnboardLost,
    RemoteOnboard,
    agent_session,
    trial_job,
)
from hil.monitor import TrialMonitor, Verdict
from hil.param_journal import keep_journal
from hil.recording import record_telemetry
from hil.rules import SuccessRule
from hil.safety import require_on_ground
from hil.stop import dead_mans_switch, land_and_wait, make_safe
from missions.faults import FaultSpec
from missions.geometry import Scene
from missions.load import load
from missions.schema import BenchmarkMission
from onboard.planner import Planner
from onboard.ros2.topics import Ros2Endpoint
from onboard.runtime import DEFAULT_RATE_HZ, RuntimeResult, run_planner
from onboard.sensing import SceneSensor
from onboard.task import NavTask, scene_from_spec, task_for_mission, task_for_scene
from profiles.compute import ComputeProfile
from records.record import TrialRecorder
from records.summary import Summary

PLANNER_STOP_S = 2.0  # wall seconds the onboard runtime gets to stop by itself after the verdict
ARMABLE_TIMEOUT_S = 30.0  # vehicle seconds


@dataclass(frozen=True)
class Navigation:
    """What flies the navigation phase: the planner and the conditions it runs under."""

    planner: Planner | None  # None with `ros2`: the planner is an external ROS 2 node
    name: str  # how the record names the planner (its MODULE:CLASS or short name)
    sensor: bool = True  # the virtual depth camera in the scene; False: the planner flies blind
    rate_hz: float = DEFAULT_RATE_HZ
    compute: ComputeProfile | None = None  # emulate a slower onboard computer
    faults: tuple[FaultSpec, ...] = ()  # injected when their triggers fire
    spec: str = ""  # the planner's module:Class, which a companion computer loads
    remote: RemoteOnboard | None = None  # the planner runs on an onboard agent; None: in this process
    ros2: Ros2Endpoint | None = None  # the planner is a ROS 2 node on this endpoint, bridged from this process


@dataclass
class NavigationResult:
    """How the flight ended: the judge's verdict, the judge itself (where the navigation phase lies in
    the telemetry, clearances) and the onboard runtime's own account (None if it never finished)."""

    verdict: Verdict
    monitor: TrialMonitor
    task: NavTask
    runtime: RuntimeResult | None

    def ending(self) -> Summary:
        """How the flight ended, as a record keeps it where nothing more is known of the trial (a campaign
        trial's `hil.trial` adds the platform's and the scene's facts). The runtime's own account is the
        record's `onboard_finished` event; figures are the record's to give (`reports.figures`)."""
        return Summary(outcome=self.verdict.outcome, reason=self.verdict.reason)


async def fly_scene(vehicle: Vehicle, navigation: Navigation, scene: Scene, rule: SuccessRule, vehicle_radius: float,
                    recorder: TrialRecorder, *, land: bool, hardware: bool = False,
                    record: bool = True, mission: BenchmarkMission | None = None,
                    simulator=None) -> NavigationResult:
    """Fly the scene's start -> goal task under `rule` (module docstring); returns the verdict and more.

    `mission`: a point-to-point mission in this scene flies its own start -> goal instead, its airspace judged.

    `hardware`: the flight controller outlives the run, so parameter changes are journaled first.
    `record`: record telemetry here (False where the caller records it already, as the pytest plugin does).
    `simulator`: the harness's physics when it drives the target: the navigation's faults act in it.
    Raises only what happens before the vehicle is touched (`UnexpectedVehicleState`): a vehicle someone
    else flies is never judged, and never landed either.
    """
    if mission is None:
        task = task_for_scene(scene, speed_cap=rule.speed_cap or math.inf, goal_radius=rule.goal_radius,
                              time_budget=rule.time_budget_s)
        monitor = TrialMonitor(scene, rule, vehicle_radius, task.home_in_scene, vehicle.speed_factor,
                               truth=vehicle.truth)
    else:
        task = task_for_mission(mission, scene)
        monitor = TrialMonitor(scene, rule, vehicle_radius, task.home_in_scene, vehicle.speed_factor,
                               goal=mission.goal, airspace=mission.airspace, truth=vehicle.truth)
    runtime = None
    await require_on_ground(vehicle)
    telemetry = asyncio.create_task(record_telemetry(vehicle, recorder)) if record else None
    try:
        if hardware:
            await keep_journal(vehicle, recorder)
        # An onboard agent is brought to ready (its own link to the flight controller up) before arming.
        async with (dead_mans_switch(vehicle, recorder.event) if hardware else contextlib.nullcontext()), \
                _planner_host(vehicle, navigation, scene, task, recorder) as host:
            await vehicle.wait_armable(ARMABLE_TIMEOUT_S)
            async with vehicle.params_changed(vehicle.takeoff_params(task.altitude)):
                await vehicle.arm()
                recorder.event("armed")
                await vehicle.takeoff(task.altitude)
            recorder.event("at_start", altitude=vehicle.state.altitude)
            caps = {"MPC_XY_VEL_MAX": rule.speed_cap, "MPC_XY_CRUISE": rule.speed_cap} if rule.speed_cap else {}
            async with vehicle.params_changed(caps):
                verdict, runtime = await _navigate(vehicle, navigation, host, monitor, recorder, simulator)
    except VehicleError as exc:
        recorder.event("failed", reason=str(exc))
        verdict = monitor.fail(str(exc))
    except AgentError as exc:  # before the navigation phase: the vehicle is still on the ground
        lost = isinstance(exc, OnboardLost)
        recorder.event("onboard_lost" if lost else "failed", reason=str(exc))
        verdict = monitor.lost(str(exc)) if lost else monitor.fail(str(exc))
    except BaseException:
        # A stop request (Ctrl-C of hil onboard, SIGTERM to a campaign's worker) or a crash of the harness's own:
        # a vehicle in real time is brought down by the stop policy before it goes on; a lockstep one is dropped.
        if land:
            await make_safe(vehicle, event=recorder.event)
        raise
    finally:
        if telemetry is not None:
            await cancel_and_wait(telemetry)
    recorder.event("verdict", outcome=verdict.outcome, reason=verdict.reason, t_s=verdict.t_s,
                   judged_on=monitor.judged_on, judged_on_estimate=monitor.on_estimate)
    if land:
        with contextlib.suppress(VehicleError):
            await land_and_wait(vehicle, recorder)
    return NavigationResult(verdict, monitor, task, runtime)


def navigation_target(spec: str) -> tuple[Scene, BenchmarkMission | None]:
    """What a planner flies, from ``SCENE[:SEED]`` (the scene's task) or a mission file (any format
    `missions.load` reads) that is a point-to-point mission in a scene. Raises `ConfigError` or `SceneError`."""

    if not Path(spec).suffix and not Path(spec).exists():
        return scene_from_spec(spec), None
    mission = load(spec)
    if mission.type != "point_to_point" or mission.scene is None:
        raise ConfigError([f"{spec}: type: expected a point_to_point mission in a scene (a planner flies from a start "
                           f"to a goal among obstacles; fly a {mission.type} route with `hil fly`), got "
                           f"{mission.type}{'' if mission.scene else ' without a scene'}"])
    return mission.scene.load(), mission


PlannerHost = Callable[[asyncio.Event], Awaitable[RuntimeResult]]  # runs the planner until the event is set


@contextlib.asynccontextmanager
async def _planner_host(vehicle: Vehicle, navigation: Navigation, scene: Scene, task: NavTask,
                        recorder: TrialRecorder) -> AsyncIterator[PlannerHost]:
    """Where the planner loop runs: the onboard runtime in this process, an onboard agent's session, or a
    ROS 2 node on the DDS domain, bridged from this process (its endpoint claimed before the vehicle arms)."""
    sensor = SceneSensor(scene, task.home_in_scene) if navigation.sensor and navigation.remote is None else None
    if navigation.ros2 is not None:
        from onboard.ros2.node_planner import claim_endpoint, run_node_planner

        # One vehicle per endpoint at a time: a node serves whatever odometry it hears.
        async with claim_endpoint(navigation.ros2):
            yield lambda stop: run_node_planner(vehicle, navigation.ros2, task, sensor=sensor, recorder=recorder,
                                                stop=stop)
        return
    if navigation.remote is None:
        yield lambda stop: run_planner(vehicle, navigation.planner, task, rate_hz=navigation.rate_hz, sensor=sensor,
                                       compute_profile=navigation.compute, recorder=recorder, stop=stop)
        return
    job = trial_job(recorder.record_dir.name, navigation.spec, navigation.sensor, navigation.rate_hz,
                    navigation.compute.name if navigation.compute else None, scene.name, scene.seed, task,
                    navigation.remote.vehicle_url, vehicle.speed_factor, ARMABLE_TIMEOUT_S, vehicle.lost_after_s)
    async with agent_session(navigation.remote, job, recorder) as session:
        yield session.run


async def _navigate(vehicle: Vehicle, navigation: Navigation, host: PlannerHost, monitor: TrialMonitor,
                    recorder: TrialRecorder, simulator=None) -> tuple[Verdict, RuntimeResult | None]:
    monitor.start(vehicle.state)
    recorder.event("navigation_started", planner=navigation.name)
    stop = asyncio.Event()
    watch = asyncio.create_task(monitor.watch(vehicle, stop))
    planner = asyncio.create_task(host(stop))
    faults = asyncio.create_task(apply_faults(vehicle, navigation.faults, monitor, recorder, simulator))
    try:
        done, _ = await asyncio.wait({watch, planner}, return_when=asyncio.FIRST_COMPLETED)
        if vehicle.lost is not None:  # whoever saw it first (the judge, the planner's loop, the board's): one error
            raise VehicleLost(vehicle.lost)
        if planner in done and isinstance(planner.exception(), OnboardLost):
            return await _lost(vehicle, monitor, recorder, planner.exception()), None
        if planner in done and planner.exception() is not None and watch not in done:
            error = planner.exception()
            return monitor.fail(f"planner {navigation.name} failed: {type(error).__name__}: {error}"), None
        # A planner that finished by itself (it thinks it is there) leaves the decision to the judge.
        verdict = await watch
    finally:
        watch.cancel()
        faults.cancel()
        # `stop` is set: the runtime ends at its next cycle, holds the vehicle and records its
        # summary (a board's comes over the network); only a runtime that does not is cancelled.
        await asyncio.wait({planner}, timeout=PLANNER_STOP_S if navigation.remote is None else LOST_AFTER_S)
        planner.cancel()
        await asyncio.gather(watch, planner, faults, return_exceptions=True)
    if planner.done() and not planner.cancelled() and isinstance(planner.exception(), OnboardLost):
        # Lost as the verdict came: the vehicle's own offboard-loss failsafe is the loss's doing.
        return await _lost(vehicle, monitor, recorder, planner.exception()), None
    finished = planner.done() and not planner.cancelled() and planner.exception() is None
    return verdict, planner.result() if finished else None


async def _lost(vehicle: Vehicle, monitor: TrialMonitor, recorder: TrialRecorder, error: BaseException) -> Verdict:
    """The companion computer is gone mid-flight: hold the vehicle now (the caller lands it)."""
    recorder.event("onboard_lost", reason=str(error))
    with contextlib.suppress(VehicleError):
        await vehicle.hold()
    return monitor.lost(str(error))


class Progress(Protocol):
    """What fault triggers read of a flight: mission time so far and the gap to the nearest obstacle."""

    elapsed_s: float
    clearance_m: float


async def apply_faults(vehicle: Vehicle, faults: tuple[FaultSpec, ...], monitor: Progress,
                       recorder: TrialRecorder, simulator=None) -> None:
    """Inject each fault when its trigger fires (reading `monitor`: the trial monitor of a navigation
    flight, the route judge of a mission flight), clear it when its time is up. The faults go into `simulator`,
    the harness's physics, when it drives the target (PX4 on it, SITL or a HITL board, finds out through its
    sensors; its own failure injection there acts on nothing it reads), else to the flight controller."""
    if not faults:
        return

    pending = list(faults)
    active: list[tuple[float, FaultSpec]] = []
    async with PhysicsFailureInjector(simulator) if simulator is not None else FailureInjector(vehicle) as injector:
        async for _ in vehicle.telemetry():
            elapsed, clearance = monitor.elapsed_s, monitor.clearance_m
            for fault in [f for f in pending if f.due(elapsed, 0, clearance)]:
                pending.remove(fault)
                answer = await injector.inject(fault)
                recorder.event("fault_injected", fault=fault.describe(), accepted=answer.accepted,
                               result=answer.result, reason=answer.reason, t_s=elapsed)
                if answer.accepted and fault.duration_s is not None:
                    active.append((elapsed + fault.duration_s, fault))
            for ends, fault in [a for a in active if a[0] <= elapsed]:
                active.remove((ends, fault))
                await injector.clear(fault)
                recorder.event("fault_cleared", fault=fault.describe(), t_s=elapsed)
            if not pending and not active:
                break
        # A fault without a duration lasts to the end of the flight: leaving the injector would clear
        # it, so hold here until the flight cancels this task.
        if injector.active:
            await asyncio.Event().wait()
