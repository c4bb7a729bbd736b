"""One onboard navigation trial: take off, run the planner to the goal, judge it, land.

This is what `hil onboard` and the onboard benchmarks fly. The judging is FLYINGTRUST's (
Sec. III-C): success when the vehicle comes within the goal radius inside the time budget without
touching an obstacle; a collision is any telemetry sample where the vehicle's sphere (profile
radius) meets the scene. The collision test is `missions.geometry.Scene.collides`, the one checker
every target shares. (The campaign-level trial monitor of `hil` judges the same way; this module
exists so the runtime can be flown and measured on its own.)
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from dataclasses import dataclass

import numpy as np

from missions.geometry import Scene
from onboard.planner import Planner
from onboard.runtime import DEFAULT_RATE_HZ, RuntimeResult, run_planner
from onboard.sensing import SceneSensor
from onboard.task import NavTask
from profiles.compute import ComputeProfile
from records.clock import vehicle_seconds

LAND_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class TrialOutcome:
    """How one trial ended, and the runtime's own account of it."""

    outcome: str  # success | collision | timeout | planner_done (stopped short of the goal)
    reason: str
    final_distance_m: float
    min_clearance_m: float  # smallest obstacle distance minus vehicle radius over the flight
    flight_time_s: float  # vehicle time from the planner's start to the end
    runtime: RuntimeResult

    def summary(self) -> dict:
        return {"outcome": self.outcome, "reason": self.reason, "final_distance_m": self.final_distance_m,
                "min_clearance_m": self.min_clearance_m, "flight_time_s": self.flight_time_s,
                "onboard": self.runtime.summary()}


class _Judge:
    """Watches telemetry: records it, and ends the run on goal, collision or time budget."""

    def __init__(self, task: NavTask, scene: Scene | None, radius: float, recorder, stop: asyncio.Event):
        self.task, self.scene, self.radius, self.recorder, self.stop = task, scene, radius, recorder, stop
        self.outcome, self.reason = "", ""
        self.min_clearance = math.inf
        self.final_distance = math.nan

    def _end(self, outcome: str, reason: str) -> None:
        if not self.outcome:
            self.outcome, self.reason = outcome, reason
            self.stop.set()

    async def watch(self, vehicle) -> None:
        goal = np.asarray(self.task.goal)
        async for state in vehicle.telemetry():
            if self.recorder is not None:
                self.recorder.append("telemetry", state.as_row())
            position = np.array([state.north, state.east, state.down])
            self.final_distance = float(np.linalg.norm(position - goal))
            if self.scene is not None:
                clearance = float(self.scene.distance(self.task.to_scene(position))[0]) - self.radius
                self.min_clearance = min(self.min_clearance, clearance)
                if clearance < 0:
                    self._end("collision", f"hit an obstacle at N {position[0]:.2f} E {position[1]:.2f} "
                                           f"alt {-position[2]:.2f} m")
            if self.final_distance <= self.task.goal_radius:
                self._end("success", f"within {self.task.goal_radius:g} m of the goal")


async def fly_task(vehicle, planner: Planner, task: NavTask, *, scene: Scene | None = None, radius: float = 0.3,
                   rate_hz: float = DEFAULT_RATE_HZ, compute_profile: ComputeProfile | None = None,
                   recorder=None, land: bool = True) -> TrialOutcome:
    """Arm, take off to the task's altitude, run the planner until judged, then land (or hold)."""
    await vehicle.wait_armable(timeout=30.0)
    await vehicle.arm()
    await vehicle.takeoff(task.altitude)
    stop = asyncio.Event()
    judge = _Judge(task, scene, radius, recorder, stop)
    sensor = SceneSensor(scene, task.home_in_scene) if scene is not None else None
    clock_start = vehicle.state.t_ns
    watcher = asyncio.create_task(judge.watch(vehicle))

    async def budget() -> None:
        await vehicle.sleep(task.time_budget)
        judge._end("timeout", f"not at the goal after {task.time_budget:g} s")

    timer = asyncio.create_task(budget())
    try:
        runtime = await run_planner(vehicle, planner, task, rate_hz=rate_hz, sensor=sensor,
                                    compute_profile=compute_profile, recorder=recorder, stop=stop)
    finally:
        for task_ in (watcher, timer):
            task_.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task_
    flight_time = vehicle_seconds(vehicle.state.t_ns - clock_start, vehicle.speed_factor)
    if not judge.outcome:
        judge._end("planner_done", f"the planner stopped {judge.final_distance:.2f} m from the goal")
    if land:
        await vehicle.land()
        await vehicle.wait_until(lambda s: not s.in_air, LAND_TIMEOUT_S, "landing after the trial")
    return TrialOutcome(judge.outcome, judge.reason, judge.final_distance, judge.min_clearance, flight_time, runtime)
