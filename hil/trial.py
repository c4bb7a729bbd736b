"""One campaign trial: bring its target up, fly the scene's navigation task with its planner
(`hil.navigation.fly_scene`, the one trial loop and judge) or a mission file's route on the autopilot, and
write the trial record. Its summary (`records.summary`) says what the trial knows of how it ran; the figures
of a results-table row are computed from the record by `reports.figures`, not here.

A lockstep vehicle is simply dropped at the end; a vehicle in real time lands, as it must on PX4
SITL or hardware. On MAVLink targets a link profile puts the impairment proxy
(`bridges.link_proxy`) between the target and this side.

`run_trial_spec` is the executors' entry point: synchronous, self-contained, returns the summary.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import json
import math
import os
from pathlib import Path
from typing import Any

from bridges.vehicle import VehicleError
from hil.agent_client import RemoteOnboard, remote_onboard
from hil.campaign import LOCAL, LOCKSTEP, NONE, TrialSpec, planner_choice
from hil.fly import fly_mission, keep_plan, mission_judged, mission_route, mission_time
from hil.monitor import TrialMonitor, Verdict
from hil.navigation import ARMABLE_TIMEOUT_S, Navigation, NavigationResult, fly_scene
from hil.param_journal import keep_journal
from hil.rules import RULES
from hil.safety import require_on_ground
from hil.session import TrialSession
from hil.stop import dead_mans_switch, make_safe
from missions.difficulty import roomy_guide_path, scene_difficulty
from missions.faults import load_fault_profile
from missions.geometry import polyline_length
from missions.load import load
from missions.paths import NoPathError, guide_path
from missions.scenes import DEFAULT_CLEARANCE, scene_for
from onboard.planner import load_planner
from onboard.task import task_for_scene
from profiles.compute import load_compute_profile
from profiles.library import load_vehicle_profile
from profiles.vehicle import VehicleProfile
from px4.sitl import SitlError
from records.atomic import write_file_atomically
from records.record import FLUSH_INTERVAL_S
from records.summary import (
    MissionSummary,
    NavigationSummary,
    Platform,
    SceneFacts,
    Summary,
)
from targets import TargetOptions

# Wall seconds a flight controller the harness did not start gets to answer (one it started is waited for
# while its process lives: targets).
CONNECT_TIMEOUT_S = 20.0


def scene_facts(name: str, config: int, cache_dir: Path) -> SceneFacts:
    """Task difficulty (TO, VO, AOL) and shortest-path length of a scene, computed once per campaign.

    Cached as JSON in `cache_dir`, written atomically so that a reader never sees half a file. The
    computation holds a lock on `cache_dir`: a campaign is scene-major, so the pool's workers start on a
    new scene together, and each computed the same numbers (0.13-0.8 CPU-s a scene, up to 2.5 % of the
    matrix) where one now computes them and the others wait for its file.
    """
    path = cache_dir / f"{name}-c{config}.json"
    if path.exists():
        return SceneFacts(**json.loads(path.read_text()))
    cache_dir.mkdir(parents=True, exist_ok=True)
    directory = os.open(cache_dir, os.O_RDONLY)
    try:
        fcntl.flock(directory, fcntl.LOCK_EX)  # released when closed, or when the process dies
        if path.exists():
            return SceneFacts(**json.loads(path.read_text()))
        facts = _compute_scene_facts(name, config)
        write_file_atomically(path, lambda temporary: temporary.write_text(json.dumps(dataclasses.asdict(facts))))
    finally:
        os.close(directory)
    return facts


def _compute_scene_facts(name: str, config: int) -> SceneFacts:
    scene = scene_for(name, config)
    try:
        shortest_path = guide_path(scene, DEFAULT_CLEARANCE)
    except NoPathError:
        shortest_path = None
    # The difficulty's path is often this one (a narrow gap has no roomier): it is not searched for twice.
    difficulty = scene_difficulty(scene, path=roomy_guide_path(scene, known={DEFAULT_CLEARANCE: shortest_path})).as_row()
    shortest = polyline_length(scene.reference_path() if shortest_path is None else shortest_path)
    return SceneFacts(difficulty_to=float(difficulty["to"]), difficulty_vo=float(difficulty["vo"]),
                      difficulty_aol=float(difficulty["aol"]), guide_length_m=float(difficulty["path_length"]),
                      shortest_length_m=float(shortest))


def run_trial_spec(spec: TrialSpec, record_dir: Path, cache_dir: Path, named: TrialSpec | None = None) -> Summary:
    """Run one trial to completion into `record_dir`; returns its manifest summary. `named`: the trial as its
    campaign names it, which the record keeps, when `spec` reads its files from copies (a Ray worker's)."""
    return asyncio.run(run_trial_async(spec, record_dir, cache_dir, named))


async def run_trial_async(spec: TrialSpec, record_dir: Path, cache_dir: Path,
                          named: TrialSpec | None = None) -> Summary:
    """Bring the trial's target up, fly it and write its record; returns the manifest summary."""
    config = (named or spec).as_config()
    if spec.mission:
        return await run_mission_trial(spec, record_dir, config)
    scene = scene_for(spec.scene, spec.config)
    facts = scene_facts(spec.scene, spec.config, cache_dir)
    rule = RULES[spec.rule]
    profile = load_vehicle_profile(spec.profile)
    with TrialSession(record_dir, config=config, target=spec.target, seed=spec.seed,
                      flush_interval_s=flush_interval_s(spec)) as session:
        recorder = session.recorder
        flight: NavigationResult | None = None
        speed_factor, error = 1.0, "not flown"
        remote, links = remote_onboard(spec.onboard) if spec.onboard != LOCAL else (None, ())
        options = dataclasses.replace(_target_options(spec), extra_links=links)
        try:
            # fly_scene records the telemetry of its navigation flight itself.
            async with session.target(spec.target, options, record=False) as opened:
                vehicle = opened.vehicle
                speed_factor = vehicle.speed_factor
                flight = await fly_scene(vehicle, navigation_for(spec, remote), scene, rule, profile.radius, recorder,
                                         land=spec.target != LOCKSTEP, hardware=opened.hardware,
                                         simulator=opened.simulator)
                if opened.link is not None:
                    recorder.event("link_summary", **opened.link.summary())
        except (VehicleError, SitlError) as exc:
            error = str(exc)  # after a flight that was judged, its verdict stands
        if flight is None:
            recorder.event("verdict", outcome="error", reason=error, t_s=math.nan)
            task = task_for_scene(scene)
            flight = NavigationResult(Verdict("error", error, math.nan),
                                      TrialMonitor(scene, rule, profile.radius, task.home_in_scene), task, None)
        verdict, monitor = flight.verdict, flight.monitor
        summary = NavigationSummary(
            outcome=verdict.outcome, reason=verdict.reason, end_time_s=verdict.t_s, speed_factor=speed_factor,
            time_budget_s=rule.time_budget_s, clock=monitor.clock,
            judged_on=monitor.judged_on,
            scene=spec.scene, scene_config=spec.config, planner=spec.planner, goal_radius_m=rule.goal_radius,
            nav_start_ns=monitor.t0_ns, nav_end_ns=monitor.end_ns,
            home=tuple(float(x) for x in flight.task.home_in_scene), platform=platform_of(profile), facts=facts)
        session.finish(verdict.outcome, summary)
    return summary


async def run_mission_trial(spec: TrialSpec, record_dir: Path, config: dict[str, Any]) -> MissionSummary:
    """A mission file's trial: its route flown on the autopilot as `hil fly` flies it (`hil.fly.fly_mission`:
    airspace and scene judged, stages recorded, faults applied), its comms-loss windows cut on the link."""

    mission = load(spec.mission, seed=spec.config if spec.config >= 0 else None)
    if spec.fault != NONE:
        mission = dataclasses.replace(mission, faults=mission.faults + tuple(load_fault_profile(spec.fault)))
    profile = load_vehicle_profile(spec.profile)
    with TrialSession(record_dir, config={**config, "mission_resolved": mission}, target=spec.target,
                      seed=spec.seed, flush_interval_s=flush_interval_s(spec)) as session:
        recorder = session.recorder
        options = dataclasses.replace(_target_options(spec), outages=tuple(
            (w.start_s, w.start_s + w.duration_s) for w in mission.comms_loss))
        truth = None
        try:
            async with session.target(spec.target, options) as opened:
                vehicle = opened.vehicle
                truth = vehicle.truth
                await require_on_ground(vehicle)
                if opened.hardware:  # a flight controller that outlives the run, as in hil fly
                    await keep_journal(vehicle, recorder)
                async with (dead_mans_switch(vehicle, recorder.event) if opened.hardware
                            else contextlib.nullcontext()):
                    await vehicle.wait_armable(ARMABLE_TIMEOUT_S)
                    try:
                        outcome, reason = await fly_mission(vehicle, mission, recorder, profile.radius,
                                                            simulator=opened.simulator)
                    except BaseException:  # a stop request or a crash: as in hil.navigation.fly_scene
                        if spec.target != LOCKSTEP:
                            await make_safe(vehicle, event=recorder.event)
                        raise
                keep_plan(mission, vehicle, record_dir, recorder)
        except (VehicleError, SitlError) as exc:
            outcome, reason = "error", str(exc)
        recorder.event("verdict", outcome=outcome, reason=reason)
        summary = MissionSummary(outcome=outcome, reason=reason, speed_factor=session.speed,
                                 route=mission_route(mission), platform=platform_of(profile),
                                 **mission_time(mission, session.rows, session.speed),
                                 **mission_judged(mission, profile.radius, truth))
        session.finish(outcome, summary)
    return summary


def flush_interval_s(spec: TrialSpec) -> float:
    """How often the trial's record writes its tables: a lockstep trial's once, when it ends. Its record is
    in the campaign's .partial/ until then, thrown away whole if the trial is killed (a Ray worker's
    returns only once finished), so parts flushed meanwhile were never read, and a lockstep trial, a few
    wall seconds and some ten thousand rows, flushed them about once a second of its wall time: written,
    fsynced, read back and deleted (some 2 % of a matrix trial's CPU, more on a loaded machine, where its
    wall time is longer). A trial at real time keeps its flushes: it may last an hour."""
    return math.inf if spec.target == LOCKSTEP else FLUSH_INTERVAL_S


def _target_options(spec: TrialSpec) -> TargetOptions:
    """How the trial's target comes up: its profile, link and perturbation."""
    return TargetOptions(profile=spec.profile, speed=spec.speed, link=spec.link if spec.link != NONE else None,
                         seed=spec.seed, physics=spec.physics, connect_timeout_s=CONNECT_TIMEOUT_S,
                         perturbation=spec.perturbation, allow_arming=spec.arm)


def navigation_for(spec: TrialSpec, remote: RemoteOnboard | None = None) -> Navigation:
    """The trial's planner and onboard conditions, from its campaign entry; `remote`: on an onboard agent."""
    choice = planner_choice(spec.planner)
    return Navigation(load_planner(choice.spec) if choice.ros2 is None else None, spec.planner, sensor=choice.sensor,
                      rate_hz=spec.rate_hz,
                      compute=load_compute_profile(spec.compute) if spec.compute != NONE else None,
                      faults=load_fault_profile(spec.fault) if spec.fault != NONE else (), spec=choice.spec,
                      remote=remote, ros2=choice.ros2)


def platform_of(profile: VehicleProfile) -> Platform:
    """The profile's facts a results table groups trials by."""
    return Platform(kind=profile.category, mass_kg=profile.mass, twr_max=profile.twr_max,
                    alpha_xy_max=profile.alpha_xy_max, alpha_z_max=profile.alpha_z_max, vehicle_radius_m=profile.radius)
