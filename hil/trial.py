"""One campaign trial: bring its target up, fly the scene's navigation task with its planner under
the trial monitor, and write the trial record whose manifest summary becomes a results-table row.

The flight: the vehicle's home is on the ground below the scene's start (`onboard.task`), so it
takes off straight to the start point; then the rule's speed cap is applied, the mission clock
starts, and the planner flies towards the goal in the onboard runtime (`onboard.runtime`, stage
timing recorded) while the trial's fault profile is applied, until the monitor decides (success,
collision, timeout, failsafe) or something breaks (error). A lockstep vehicle is simply dropped at
the end; a vehicle in real time lands, as it must on PX4 SITL or hardware. On MAVLink targets a
link profile puts the impairment proxy (`bridges.link_proxy`) between the target and this side.

`run_trial_spec` is the executors' entry point: synchronous, self-contained, returns the summary.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from bridges.vehicle import Vehicle, VehicleError
from hil.campaign import LOCKSTEP, NONE, TrialSpec, planner_choice
from hil.fly import land_and_wait
from hil.monitor import RULES, SuccessRule, TrialMonitor, Verdict
from hil.param_journal import ParamJournal, restore_pending
from hil.safety import require_on_ground
from hil.recording import record_telemetry
from missions.difficulty import scene_difficulty
from missions.geometry import Scene, polyline_length
from missions.paths import NoPathError, guide_path
from missions.scenes import DEFAULT_CLEARANCE, scene_for
from onboard.task import NavTask, task_for_scene
from profiles.vehicle import VehicleProfile, load_vehicle_profile
from px4.sitl import SitlError
from records.atomic import write_file_atomically
from records.clock import vehicle_time
from records.record import TrialRecorder, read_table
from reports.metrics import Trajectory, timing_summary, trial_metrics
from targets import TargetOptions, open_target

CONNECT_TIMEOUT_S = 20.0  # wall seconds for a MAVLink target to answer
PLANNER_STOP_S = 2.0  # wall seconds the onboard runtime gets to stop by itself after the verdict
ARMABLE_TIMEOUT_S = 30.0  # vehicle seconds


def scene_facts(name: str, config: int, cache_dir: Path) -> dict[str, float]:
    """Task difficulty (TO, VO, AOL) and shortest-path length of a scene, computed once per campaign.

    Cached as JSON in `cache_dir` (written atomically, so two workers racing both write the same
    numbers and a reader never sees half a file).
    """
    path = cache_dir / f"{name}-c{config}.json"
    if path.exists():
        return json.loads(path.read_text())
    scene = scene_for(name, config)
    difficulty = scene_difficulty(scene).as_row()
    try:
        shortest = polyline_length(guide_path(scene, DEFAULT_CLEARANCE))
    except NoPathError:
        shortest = polyline_length(scene.reference_path())
    facts = {"difficulty_to": float(difficulty["to"]), "difficulty_vo": float(difficulty["vo"]),
             "difficulty_aol": float(difficulty["aol"]), "guide_length_m": float(difficulty["path_length"]),
             "shortest_length_m": float(shortest)}
    cache_dir.mkdir(parents=True, exist_ok=True)
    write_file_atomically(path, lambda temporary: temporary.write_text(json.dumps(facts)))
    return facts


def run_trial_spec(spec: TrialSpec, record_dir: Path, cache_dir: Path) -> dict[str, Any]:
    """Run one trial to completion into `record_dir`; returns its manifest summary."""
    return asyncio.run(run_trial_async(spec, record_dir, cache_dir))


async def run_trial_async(spec: TrialSpec, record_dir: Path, cache_dir: Path) -> dict[str, Any]:
    """Bring the trial's target up, fly it and write its record; returns the manifest summary."""
    scene = scene_for(spec.scene, spec.config)
    facts = scene_facts(spec.scene, spec.config, cache_dir)
    rule = RULES[spec.rule]
    profile = load_vehicle_profile(spec.profile)
    task = task_for_scene(scene, speed_cap=rule.speed_cap or math.inf, goal_radius=rule.goal_radius,
                          time_budget=rule.time_budget_s)
    with TrialRecorder(record_dir, config=spec.as_config(), target=spec.target, seed=spec.seed) as recorder:
        rows: list[dict] = []
        speed_factor = 1.0
        monitor = TrialMonitor(scene, rule, profile.radius, task.home_in_scene)
        try:
            async with open_target(spec.target, _target_options(spec, record_dir, recorder)) as opened:
                vehicle = opened.vehicle
                recorder.event("connected", url=vehicle.url, target=opened.name)
                speed_factor = vehicle.speed_factor
                monitor = TrialMonitor(scene, rule, profile.radius, task.home_in_scene, speed_factor)
                verdict = await fly_navigation(vehicle, spec, scene, task, rule, monitor, recorder, rows,
                                               land=spec.target != LOCKSTEP, hardware=opened.hardware)
                if opened.link is not None:
                    recorder.event("link_summary", **opened.link.summary())
        except (VehicleError, SitlError) as exc:
            verdict = monitor.fail(str(exc))
        recorder.event("verdict", outcome=verdict.outcome, reason=verdict.reason, t_s=verdict.t_s)
        recorder.flush()
        summary = {
            "outcome": verdict.outcome,
            "reason": verdict.reason,
            "success": verdict.outcome == "success",
            "collided": verdict.outcome == "collision",
            "end_time_s": verdict.t_s,
            # Where the navigation phase lies in the telemetry table and where home is in the scene,
            # so reports can cut the flown track out of the record again.
            "nav_start_ns": monitor.t0_ns,
            "nav_end_ns": monitor.end_ns,
            **dict(zip(("home_north", "home_east", "home_down"), task.home_in_scene)),
            **_profile_columns(profile),
            **facts,
            **_flight_columns(rows, speed_factor, monitor, verdict, scene, profile, rule, facts),
            **timing_summary(_optional_table(record_dir, "timing")),
        }
        recorder.finish(verdict.outcome, summary)
    return summary


def _target_options(spec: TrialSpec, record_dir: Path, recorder: TrialRecorder) -> TargetOptions:
    """How the trial's target comes up: its profile and link; PX4's console and logs into the record."""
    return TargetOptions(profile=spec.profile, speed=spec.speed, link=spec.link if spec.link != NONE else None,
                         seed=spec.seed, physics=spec.physics, keep_in=record_dir, sink=recorder.append,
                         connect_timeout_s=CONNECT_TIMEOUT_S)


async def fly_navigation(vehicle: Vehicle, spec: TrialSpec, scene: Scene, task: NavTask, rule: SuccessRule,
                         monitor: TrialMonitor, recorder: TrialRecorder, rows: list[dict], *, land: bool,
                         hardware: bool = False) -> Verdict:
    """Take off to the start, fly the planner under the monitor, land if asked; returns the verdict.

    The rule's speed cap is set for the navigation phase only and restored after; on a flight
    controller that outlives the run (`hardware`) it is journaled first, and what an interrupted run
    left changed is restored before anything else.
    """
    await require_on_ground(vehicle)  # raised, not judged: a vehicle someone else flies is never landed either
    telemetry = asyncio.create_task(record_telemetry(vehicle, recorder, rows))
    try:
        if hardware:
            vehicle.journal = ParamJournal.for_vehicle(await vehicle.identity())
            restored = await restore_pending(vehicle, vehicle.journal)
            if restored:
                recorder.event("params_restored_after_crash", params=restored, journal=str(vehicle.journal.path))
        await vehicle.wait_armable(ARMABLE_TIMEOUT_S)
        await vehicle.arm()
        await vehicle.takeoff(task.altitude)
        recorder.event("at_start", altitude=vehicle.state.altitude)
        caps = {"MPC_XY_VEL_MAX": rule.speed_cap, "MPC_XY_CRUISE": rule.speed_cap} if rule.speed_cap else {}
        async with vehicle.params_changed(caps):
            verdict = await _navigate(vehicle, spec, scene, task, monitor, recorder)
    except VehicleError as exc:
        recorder.event("failed", reason=str(exc))
        verdict = monitor.fail(str(exc))
    finally:
        telemetry.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await telemetry
    # Not in `finally`: a cancelled trial (Ctrl-C) must not wait for a landing; closing the vehicle
    # leaves it landing or disarmed anyway (the Vehicle.close contract).
    if land:
        with contextlib.suppress(VehicleError):
            await land_and_wait(vehicle)
    return verdict


async def _navigate(vehicle: Vehicle, spec: TrialSpec, scene: Scene, task: NavTask, monitor: TrialMonitor,
                    recorder: TrialRecorder) -> Verdict:
    monitor.start(vehicle.state)
    recorder.event("navigation_started", planner=spec.planner)
    stop = asyncio.Event()
    watch = asyncio.create_task(monitor.watch(vehicle, stop))
    planner = asyncio.create_task(fly_planner(vehicle, spec, scene, task, recorder, stop))
    faults = asyncio.create_task(apply_faults(vehicle, spec, monitor, recorder))
    try:
        done, _ = await asyncio.wait({watch, planner}, return_when=asyncio.FIRST_COMPLETED)
        if planner in done and planner.exception() is not None and watch not in done:
            error = planner.exception()
            return monitor.fail(f"planner {spec.planner} failed: {type(error).__name__}: {error}")
        # A planner that finished by itself (it thinks it is there) leaves the decision to the monitor.
        return await watch
    finally:
        watch.cancel()
        faults.cancel()
        # `stop` is set: the runtime ends at its next cycle, holds the vehicle and records its
        # summary; only a runtime that does not is cancelled.
        await asyncio.wait({planner}, timeout=PLANNER_STOP_S)
        planner.cancel()
        await asyncio.gather(watch, planner, faults, return_exceptions=True)


async def fly_planner(vehicle: Vehicle, spec: TrialSpec, scene: Scene, task: NavTask, recorder: TrialRecorder,
                      stop: asyncio.Event) -> None:
    """Fly the navigation phase with the trial's planner in the onboard runtime until `stop` is set."""
    from onboard.planner import load_planner
    from onboard.runtime import run_planner
    from onboard.sensing import SceneSensor
    from profiles.compute import load_compute_profile

    choice = planner_choice(spec.planner)
    await run_planner(vehicle, load_planner(choice.spec), task, rate_hz=spec.rate_hz,
                      sensor=SceneSensor(scene, task.home_in_scene) if choice.sensor else None,
                      compute_profile=load_compute_profile(spec.compute) if spec.compute != NONE else None,
                      recorder=recorder, stop=stop)


async def apply_faults(vehicle: Vehicle, spec: TrialSpec, monitor: TrialMonitor, recorder: TrialRecorder) -> None:
    """Inject each fault of the trial's fault profile when its trigger fires, clear it when its time is up."""
    if spec.fault == NONE:
        return
    from bridges.failure import FailureInjector
    from missions.faults import load_fault_profile

    pending = list(load_fault_profile(spec.fault))
    active: list[tuple[float, object]] = []
    async with FailureInjector(vehicle) as injector:
        async for _ in vehicle.telemetry():
            elapsed, clearance = monitor.elapsed_s, monitor.clearance_m
            for fault in [f for f in pending if f.due(elapsed, 0, clearance)]:
                pending.remove(fault)
                result = await injector.inject(fault)
                recorder.event("fault_injected", fault=fault.describe(), accepted=result.accepted,
                               result=result.result, reason=result.reason, t_s=elapsed)
                if result.accepted and fault.duration_s is not None:
                    active.append((elapsed + fault.duration_s, fault))
            for ends, fault in [a for a in active if a[0] <= elapsed]:
                active.remove((ends, fault))
                await injector.clear(fault)
                recorder.event("fault_cleared", fault=fault.describe(), t_s=elapsed)
            if not pending and not active:
                return


def _flight_columns(rows: list[dict], speed_factor: float, monitor: TrialMonitor, verdict: Verdict, scene: Scene,
                    profile: VehicleProfile, rule: SuccessRule, facts: dict[str, float]) -> dict[str, Any]:
    """Per-trial metrics of the navigation phase (start point to verdict), in vehicle time."""
    telemetry = pd.DataFrame(rows)
    if monitor.t0_ns is not None and not telemetry.empty:
        end_ns = monitor.end_ns if monitor.end_ns is not None else int(telemetry["t_ns"].max())
        telemetry = telemetry[(telemetry["t_ns"] >= monitor.t0_ns) & (telemetry["t_ns"] <= end_ns)]
    else:
        telemetry = telemetry.iloc[0:0]
    trajectory = Trajectory.from_telemetry(vehicle_time(telemetry, speed_factor), offset=monitor.offset) \
        if len(telemetry) else None
    if trajectory is None or len(trajectory) < 2:
        return {"path_length_m": 0.0, "shortest_length_m": facts["shortest_length_m"], "oracle_success": False}
    return trial_metrics(trajectory, scene, vehicle_radius=profile.radius, goal_radius=rule.goal_radius,
                         shortest_length=facts["shortest_length_m"],
                         collision_time_s=verdict.t_s if verdict.outcome == "collision" else None,
                         success=verdict.outcome == "success")


def _profile_columns(profile: VehicleProfile) -> dict[str, Any]:
    return {"platform_kind": profile.category, "mass_kg": profile.mass, "twr_max": profile.twr_max,
            "alpha_xy_max": profile.alpha_xy_max, "alpha_z_max": profile.alpha_z_max,
            "vehicle_radius_m": profile.radius}


def _optional_table(record_dir: Path, name: str) -> pd.DataFrame | None:
    try:
        return read_table(record_dir, name)
    except FileNotFoundError:
        return None

