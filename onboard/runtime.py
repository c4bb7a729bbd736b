"""The onboard runtime: drive a planner in a closed loop through any `Vehicle`, timing every stage.

Interface (shared with the campaign runner)::

    from onboard.planner import Observation, Command, Planner   # step(Observation) -> Command
    from onboard.runtime import run_planner, RuntimeResult

    result = await run_planner(vehicle, planner, task, rate_hz=10, sensor=SceneSensor(scene, task.home_in_scene),
                               compute_profile=load_compute_profile("jetson_orin_nx"), recorder=recorder,
                               stop=stop_event)

`vehicle` must be airborne (taken off); `task` is an `onboard.task.NavTask`. The runtime calls
``planner.reset(task)``, starts offboard and then, every 1/rate_hz of vehicle time:

1. sense: reads the telemetry snapshot and, with a sensor, renders depth and points;
2. step: calls ``planner.step(observation)``, timing the planner's map / plan / control spans;
3. emulate: with a compute profile, holds the command back for the emulated compute time
   (onboard.emulation: simulated delay in lockstep, real delay at real time);
4. act: sends the command; until the next cycle a trajectory is tracked and an acceleration
   integrated at `setpoint_hz` (onboard.tracking), and position setpoints are timed down the link
   where the target echoes them (onboard.link).

It stops when `stop` is set or the planner returns a ``done`` command, then switches the vehicle to
Hold (also on error or cancellation). It works the same on the lockstep vehicle (simulated time;
create it with ``telemetry_hz=100`` or more, since lockstep sleeps resolve at the telemetry period)
and on MAVLink targets (real time or a speed factor).

Recorded, when a recorder is given (t_ns is the process's monotonic clock throughout):

* table "timing": one row per span: cycle, stage, t_ns (start), dur_ns (measured), emulated_ns
  (stretched by the compute profile; the same as measured for sense and link), t_vehicle;
* table "onboard": one row per cycle: the command, measured / emulated compute time, the hold,
  and latency_s, the vehicle time from sensing to the command taking effect;
* table "tracking": the position error while a trajectory is tracked;
* table "resources": the resource sampler (onboard.resources);
* events "onboard_started" and "onboard_finished" (the latter with `RuntimeResult.summary()`).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd

from onboard.emulation import emulate
from onboard.link import LinkTimer
from onboard.planner import Command, Observation, Planner
from onboard.resources import DEFAULT_INTERVAL_S, ResourceSampler
from onboard.sensing import SceneSensor
from onboard.task import NavTask
from onboard.timing import COMPUTE_STAGES, StageProfiler, StageStats, stats_as_dict, summarize
from onboard.tracking import integrate_acceleration, track
from profiles.compute import ComputeProfile

DEFAULT_RATE_HZ = 10.0
DEFAULT_SETPOINT_HZ = 30.0
# Setpoints are never faster than this above the task's speed cap (room for the tracking correction).
SPEED_MARGIN = 1.25


@dataclass(frozen=True)
class RuntimeResult:
    """How a planner run went: why it ended, its stage timing and how well commands were tracked."""

    reason: str  # "done" (the planner said so) | "stopped" (the caller's stop event)
    cycles: int
    overruns: int  # cycles that could not start on time (compute + hold longer than the period)
    timing: dict[str, StageStats]  # measured, per stage and "total" (T_tot), per cycle
    emulated: dict[str, StageStats]  # the same, stretched by the compute profile
    compute_profile: str | None
    tracking_error_mean_m: float = math.nan  # trajectory commands only
    tracking_error_max_m: float = math.nan
    latency_mean_s: float = math.nan  # sensing -> command in effect, vehicle time
    spans: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)  # the raw timing table

    def summary(self) -> dict[str, Any]:
        """JSON-ready, for a manifest summary or an event."""
        return {"reason": self.reason, "cycles": self.cycles, "overruns": self.overruns,
                "compute_profile": self.compute_profile, "timing_ms": stats_as_dict(self.timing),
                "emulated_timing_ms": stats_as_dict(self.emulated),
                "tracking_error_mean_m": self.tracking_error_mean_m, "tracking_error_max_m": self.tracking_error_max_m,
                "latency_mean_s": self.latency_mean_s}


def vehicle_clock(vehicle) -> Callable[[], float]:
    """Vehicle time in seconds: simulated time in lockstep (its snapshots are stamped with it),
    else the monotonic clock times the speed factor."""
    if math.isinf(vehicle.speed_factor):
        return lambda: vehicle.state.t_ns / 1e9
    return lambda: time.monotonic() * vehicle.speed_factor


class _Loop:
    """One run of the loop; holds what the cycles share. See the module docstring for the steps."""

    def __init__(self, vehicle, planner: Planner, task: NavTask, rate_hz: float, setpoint_hz: float,
                 sensor: SceneSensor | None, profile: ComputeProfile | None, recorder, stop: asyncio.Event):
        self.vehicle, self.planner, self.task = vehicle, planner, task
        self.period, self.setpoint_period = 1.0 / rate_hz, 1.0 / setpoint_hz
        self.sensor, self.profile, self.recorder, self.stop = sensor, profile, recorder, stop
        self.clock = vehicle_clock(vehicle)
        self.profiler = StageProfiler()
        self.link = LinkTimer(vehicle, self.profiler) if LinkTimer.supported(vehicle) else None
        self.speed_limit = task.speed_cap * SPEED_MARGIN
        self.spans: list[dict[str, Any]] = []
        self.tracking_errors: list[float] = []
        self.latencies: list[float] = []
        self.overruns = 0
        self.active: Command | None = None
        self.active_t0 = 0.0  # vehicle time the active command's observation was made
        self.velocity_sp: np.ndarray | None = None  # the last velocity setpoint sent
        self.last_track_t: float | None = None  # vehicle time of the last tracking setpoint

    async def run(self) -> tuple[str, int]:
        self.planner.reset(self.task)
        await self.vehicle.start_offboard(rate_hz=1.0 / self.setpoint_period)
        if self.link is not None:
            self.link.start()
        cycle, next_tick = 0, self.clock()
        try:
            while not self.stop.is_set():
                observation = self._sense()
                command = self._step(observation)
                stage_ns = self._record_spans(cycle, observation.t)
                compute = emulate(self.profile, stage_ns, self.vehicle.speed_factor)
                if compute.hold_s > 0:
                    await self.vehicle.sleep(compute.hold_s)
                if command.kind == "done":
                    return "done", cycle + 1
                await self._act(command, observation)
                latency = self.clock() - observation.t
                self.latencies.append(latency)
                self._record_cycle(cycle, observation, command, compute, latency)
                cycle += 1
                next_tick += self.period
                if self.clock() > next_tick:
                    self.overruns += 1
                    next_tick = self.clock()  # start the next cycle now; never race to catch up
                await self._follow_until(next_tick)
            return "stopped", cycle
        finally:
            if self.link is not None:
                await self.link.stop()
            self._record_spans(cycle, self.clock())  # late link echoes
            with contextlib.suppress(Exception):
                await asyncio.shield(self.vehicle.stop_offboard())

    def _sense(self) -> Observation:
        with self.profiler.span("sense"):
            state = self.vehicle.state
            t = self.clock()
            depth, points = self.sensor.read(state) if self.sensor is not None else (None, None)
        return Observation(t, state, self.task.goal, depth, points)

    def _step(self, observation: Observation) -> Command:
        token = self.profiler.activate()
        start = time.monotonic_ns()
        try:
            command = self.planner.step(observation)
        finally:
            end = time.monotonic_ns()
            StageProfiler.deactivate(token)
        if not self.profiler.marked(COMPUTE_STAGES):
            self.profiler.add("plan", start, end)  # a planner that marks no stages is all "plan"
        return command

    def _record_spans(self, cycle: int, t_vehicle: float) -> dict[str, int]:
        """Drain the profiler into the timing rows; returns this cycle's compute time per stage (ns)."""
        stage_ns: dict[str, int] = {}
        for stage, start, end in self.profiler.drain():
            duration = end - start
            factor = self.profile.factor(stage) if self.profile is not None and stage in COMPUTE_STAGES else 1.0
            row = {"t_ns": start, "cycle": cycle, "stage": stage, "dur_ns": duration,
                   "emulated_ns": int(duration * factor), "t_vehicle": t_vehicle}
            self.spans.append(row)
            if self.recorder is not None:
                self.recorder.append("timing", row)
            if stage in COMPUTE_STAGES:
                stage_ns[stage] = stage_ns.get(stage, 0) + duration
        return stage_ns

    async def _act(self, command: Command, observation: Observation) -> None:
        """Make `command` the active one and send its first setpoint."""
        self.active, self.active_t0 = command, observation.t
        v = self.vehicle
        if command.kind == "position":
            self.velocity_sp = None
            await v.set_position_ned(*command.value, yaw=command.yaw)
            if self.link is not None:
                self.link.sent(command.value)
        elif command.kind == "velocity":
            await self._send_velocity(command.value, command.yaw)
        else:
            if command.kind == "acceleration" and self.last_track_t is None:
                self.last_track_t = self.clock()
            await self._track_once()

    async def _track_once(self) -> None:
        """One setpoint of an active trajectory or acceleration command."""
        command, s, now = self.active, self.vehicle.state, self.clock()
        if command.kind == "trajectory":
            velocity, error = track(command.value, now - self.active_t0, np.array([s.north, s.east, s.down]),
                                    self.speed_limit)
            self.tracking_errors.append(error)
            if self.recorder is not None:
                self.recorder.append("tracking", {"t_vehicle": now, "error_m": error})
        else:
            # Integrate on the last velocity setpoint, not the measured velocity: the vehicle lags
            # its setpoint, and restarting from the lag every tick would never reach the acceleration.
            base = self.velocity_sp if self.velocity_sp is not None else np.array([s.vn, s.ve, s.vd])
            velocity = integrate_acceleration(base, command.value, now - self.last_track_t, self.speed_limit)
        self.last_track_t = now
        await self._send_velocity(velocity, command.yaw)

    async def _send_velocity(self, velocity, yaw: float) -> None:
        self.velocity_sp = np.asarray(velocity, dtype=float)
        await self.vehicle.set_velocity_ned(*self.velocity_sp, yaw=yaw)

    async def _follow_until(self, deadline: float) -> None:
        """Wait for the next cycle, tracking an active trajectory or acceleration meanwhile."""
        tracking = self.active is not None and self.active.kind in ("trajectory", "acceleration")
        while not self.stop.is_set():
            remaining = deadline - self.clock()
            if remaining <= 1e-6:
                return
            await self.vehicle.sleep(min(remaining, self.setpoint_period) if tracking else remaining)
            if tracking and deadline - self.clock() > 1e-6:
                await self._track_once()

    def _record_cycle(self, cycle: int, observation: Observation, command: Command, compute, latency: float) -> None:
        if self.recorder is None:
            return
        value = np.asarray(command.value, dtype=float)
        first = value[0, 1:4] if command.kind == "trajectory" else value
        self.recorder.append("onboard", {
            "cycle": cycle, "t_vehicle": observation.t, "kind": command.kind,
            "cmd_0": float(first[0]), "cmd_1": float(first[1]), "cmd_2": float(first[2]), "yaw": command.yaw,
            "measured_s": compute.measured_s, "emulated_s": compute.emulated_s, "hold_s": compute.hold_s,
            "excess_s": compute.excess_s, "latency_s": latency})


async def run_planner(vehicle, planner: Planner, task: NavTask, *, rate_hz: float = DEFAULT_RATE_HZ,
                      setpoint_hz: float = DEFAULT_SETPOINT_HZ, sensor: SceneSensor | None = None,
                      compute_profile: ComputeProfile | None = None, recorder=None,
                      stop: asyncio.Event | None = None,
                      resource_interval_s: float | None = DEFAULT_INTERVAL_S) -> RuntimeResult:
    """Run `planner` on an airborne `vehicle` until `stop` is set or it says done (module docstring)."""
    stop = stop or asyncio.Event()
    loop = _Loop(vehicle, planner, task, rate_hz, setpoint_hz, sensor, compute_profile, recorder, stop)
    if recorder is not None:
        recorder.event("onboard_started", task=task.name, rate_hz=rate_hz, setpoint_hz=setpoint_hz,
                       compute_profile=compute_profile.as_dict() if compute_profile else None,
                       link_timed=loop.link is not None)
    sampler = ResourceSampler(recorder, resource_interval_s) if recorder is not None and resource_interval_s else None
    async with (sampler if sampler is not None else contextlib.nullcontext()):
        reason, cycles = await loop.run()
    spans = pd.DataFrame(loop.spans, columns=["t_ns", "cycle", "stage", "dur_ns", "emulated_ns", "t_vehicle"])
    errors = np.asarray(loop.tracking_errors)
    timing = summarize(spans)
    # Without a compute profile every emulated duration is its measured one (int(d * 1.0) == d): the same
    # statistics, and summarizing a trial's spans is a pandas group-by.
    emulated = summarize(spans, "emulated_ns") if compute_profile is not None else timing
    result = RuntimeResult(
        reason=reason, cycles=cycles, overruns=loop.overruns, timing=timing,
        emulated=emulated, compute_profile=compute_profile.name if compute_profile else None,
        tracking_error_mean_m=float(errors.mean()) if errors.size else math.nan,
        tracking_error_max_m=float(errors.max()) if errors.size else math.nan,
        latency_mean_s=float(np.mean(loop.latencies)) if loop.latencies else math.nan, spans=spans)
    if recorder is not None:
        recorder.event("onboard_finished", **result.summary())
    return result
