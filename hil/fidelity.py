"""Fidelity: fly the same scripted manoeuvres on two targets and compare what each vehicle did.

The built-in vehicle stands in for PX4 in every fast campaign, so it has to fly like PX4: a planner
that passes because the stand-in climbs or accelerates faster than PX4 would fail on PX4. This
module flies a fixed manoeuvre suite through the `Vehicle` API on any target (the built-in vehicle,
PX4 SITL on SIH or on the harness's physics, a running flight controller), extracts one number per
figure from the vehicle's own telemetry (its estimate, or the simulator's ground truth where PX4
SIH streams it), and keeps each run (CSV traces, or its trial record, which `hil report` tabulates).
reports/fidelity.py compares a candidate's figures with a reference's (PX4 is the reference): each
reference figure from several runs, so the reference's own run-to-run spread is known, and a band
around it that the candidate has to stay in.

Each run is one trial session (hil.session) on its target and one record; each of its flights opens a
fresh vehicle through the session and ends, however it ends, with the vehicle brought down by the stop
policy (hil.stop). Two flights per run (each from the ground, so that a run starts where the previous one
ended):

* A: takeoff; offboard yaw step, position step, velocity step and stop, a position setpoint moving
  on a circle streamed at 20 Hz; land.
* B: takeoff; goto (reposition) at the cruise speed; a mission with fly-through waypoints and two
  right-angle turns; return to launch.

Times are the vehicle's clock (LOCAL_POSITION_NED.time_boot_ms on a MAVLink target), never the
wall clock: a simulator that falls behind its speed factor on a loaded machine must not make its
vehicle look slow.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import AsyncContextManager

import numpy as np

from aio.tasks import cancel_and_wait
from bridges.truth import (
    HIL_STATE_QUATERNION,
    SET_MESSAGE_INTERVAL,
    TRUTH_HZ,
    sih_states,
)
from bridges.vehicle import MissionWaypoint, Vehicle, VehicleError
from config.loading import read_text
from hil.param_journal import keep_journal
from hil.safety import require_on_ground
from hil.session import TrialSession
from hil.stop import dead_mans_switch, make_safe
from records.campaign_dir import TRIALS_DIR
from records.fidelity_run import (
    CANDIDATE,
    ESTIMATE,
    FIDELITY_KIND,
    FIGURE_PREFIX,
    TRACE_TABLE,
    TRUTH,
)
from records.record import TrialRecorder
from records.summary import FiguresSummary
from targets import TargetOptions, TargetSpec

TAKEOFF_ALT = 5.0
YAW_STEP_DEG = 90.0
POSITION_STEP_M = 5.0
VELOCITY_STEP = 3.0  # m/s, north
VELOCITY_HOLD_S = 8.0
STOP_WATCH_S = 6.0
CIRCLE_RADIUS = 5.0
CIRCLE_SPEED = 2.0  # m/s along the circle
SETPOINT_RATE_HZ = 20.0
GOTO_DISTANCE = 30.0
MISSION_LEG = 20.0
MISSION_RADIUS = 2.0  # acceptance radius of the mission's fly-through waypoints
# The return: a low return altitude keeps the flight short; both targets get the same values.
RTL_PARAMS = {"RTL_RETURN_ALT": 15.0, "RTL_DESCEND_ALT": 10.0}
ATTITUDE = 30  # message id
# The heading's stream rate while recording (vehicle Hz): enough for a yaw step, light on the harness.
ATTITUDE_HZ = 30.0
# Arrived: this close and this slow (PX4's position estimate wanders by ~0.3 m and 0.2 m/s in hover).
# PX4 streams POSITION_TARGET_LOCAL_NED at 9.9 Hz of vehicle time (v1.14 and v1.16.1 SIH, px4/reference), the
# built-in vehicle at 10: the vehicle's last report without a new setpoint is at most a period before its first with it.
TARGET_REPORT_PERIOD_S = 1.0 / 9.9
ARRIVAL_M = 1.0
ARRIVAL_SPEED = 0.5
MAX_RUNS_FILE_BYTES = 10 << 20  # a runs file is kilobytes; a bigger one is not one
# The landing's descent speed is timed between these heights (m): below MPC_LAND_ALT2, above the crawl.
LAND_FROM, LAND_TO = 4.0, 1.0
# ---------------------------------------------------------------------------------------------- the trace

SAMPLE_FIELDS = ("t", "n", "e", "d", "vn", "ve", "vd", "yaw", "armed", "landed")  # a Sample, as kept
TRUTH_FIELDS = ("n", "e", "d", "vn", "ve", "vd")  # what the ground truth adds (true_*)

@dataclass(frozen=True)
class Point:
    """A state on the vehicle's clock (s): position and velocity NED (m, m/s), heading (rad). Alone,
    the setpoint the vehicle reports it flies (POSITION_TARGET_LOCAL_NED)."""

    t: float
    n: float
    e: float
    d: float
    vn: float
    ve: float
    vd: float
    yaw: float


@dataclass(frozen=True)
class Sample(Point):
    """One telemetry sample: the vehicle's estimate of itself, armed and landed."""

    armed: bool
    landed: bool


class Trace:
    """The telemetry of one flight on the vehicle's clock, and waiting on that clock."""

    def __init__(self, measure_on: str = ESTIMATE) -> None:
        self.measure_on = measure_on  # ESTIMATE or TRUTH (falls back to the estimate where there is none)
        self.samples: list[Sample] = []
        self._changed = asyncio.Condition()
        self.disarmed_at: float | None = None  # vehicle time the vehicle said it disarmed
        self.events: list[tuple[float, str]] = []  # (vehicle time, what the script commanded)
        self.ground = 0.0  # NED down of the ground in the vehicle's frame (PX4's estimate drifts)
        self.yaw = math.nan  # the latest heading (rad), from its own message
        self.targets: list[Point] = []
        # The simulator's ground truth, one entry per sample (None until the first truth arrives), in
        # the estimate's frame as it stood at that first one.
        self.truth: list[Point | None] = []
        self.latest_truth: tuple[float, ...] | None = None  # (n, e, d, vn, ve, vd) as last received
        self._truth_offset: tuple[float, float, float] | None = None
        self.truth_ground = 0.0  # `ground` in the truth's frame

    def mark(self, what: str) -> float:
        """Note a command at the current vehicle time; returns that time."""
        self.events.append((self.now, what))
        return self.now

    async def took_effect(self, sent: float, reached: Callable[[Point], bool], timeout: float = 10.0) -> float:
        """When a setpoint command sent at vehicle time `sent` reached the vehicle: midway between
        the last reported setpoint without it and the first with it (10 Hz). On a loaded machine
        the harness's commands arrive late; timing from their effect keeps that out of the figures.
        Reports MAVSDK dropped on the way (a harness that does not keep up: beside two CPU burners at
        10x, a stop timed 0.5 s early) leave a gap before the first with it: the last without it is then
        taken one report period before that. A vehicle that reports no setpoints (in-process) takes
        commands at once: `sent`."""
        if not self.targets:
            return sent
        deadline = self.now + timeout
        while True:
            before = sent
            for target in self.targets:
                if target.t < sent:
                    continue
                if reached(target):
                    return max(sent, 0.5 * (max(before, target.t - TARGET_REPORT_PERIOD_S) + target.t))
                before = target.t
            if self.now > deadline:
                raise VehicleError(f"the vehicle did not report the new setpoint within {timeout:.0f} s")
            await self.until(self.now + 0.1)

    def altitude(self, sample: Sample) -> float:
        """Height above the ground the vehicle stood on before the flight."""
        return self.ground - sample.d

    @property
    def now(self) -> float:
        return self.samples[-1].t if self.samples else 0.0

    @property
    def last(self) -> Sample:
        if not self.samples:
            raise VehicleError("no telemetry yet")
        return self.samples[-1]

    async def add(self, sample: Sample) -> None:
        if self.samples and sample.t < self.samples[-1].t:
            return  # a reordered datagram: the clock never runs backwards
        truth = None
        if self.latest_truth is not None:
            n, e, d, vn, ve, vd = self.latest_truth
            if self._truth_offset is None:
                self._truth_offset = (sample.n - n, sample.e - e, sample.d - d)
            on, oe, od = self._truth_offset
            truth = Point(sample.t, n + on, e + oe, d + od, vn, ve, vd, sample.yaw)
        self.truth.append(truth)
        self.samples.append(sample)
        async with self._changed:
            self._changed.notify_all()

    async def wait(self, predicate: Callable[[Sample], bool], timeout: float, what: str) -> Sample:
        """The first new sample satisfying `predicate`, within `timeout` vehicle seconds."""
        deadline = self.now + timeout
        seen = len(self.samples)
        while True:
            async with self._changed:
                await asyncio.wait_for(self._changed.wait_for(lambda: len(self.samples) > seen), 30.0)
            for sample in self.samples[seen:]:
                if predicate(sample):
                    return sample
            seen = len(self.samples)
            if self.now > deadline:
                raise VehicleError(f"timed out after {timeout:.0f} s of vehicle time waiting for {what}")

    async def until(self, t: float) -> None:
        """Wait until the vehicle's clock reads `t`."""
        if self.now < t:
            await self.wait(lambda s: s.t >= t, t - self.now + 1.0, f"vehicle time {t:.1f} s")

    @property
    def has_truth(self) -> bool:
        """Whether the vehicle reports its ground truth (PX4 SIH does, when asked)."""
        return bool(self.truth) and self.truth[-1] is not None

    @property
    def source(self) -> str:
        """What the figures are measured on: the simulator's ground truth (when asked for and the
        vehicle reports it), else the vehicle's estimate."""
        return TRUTH if self.measure_on == TRUTH and self.has_truth else ESTIMATE

    def arrays(self, t0: float = -math.inf, t1: float = math.inf) -> dict[str, np.ndarray]:
        """How the vehicle moved in [t0, t1], one numpy array per field, and "alt" above the ground.

        On the estimate (LOCAL_POSITION_NED, what the autopilot flies on and what the harness judges
        every trial on) or on the simulator's ground truth (`source`). Commands and waits always use
        the estimate, as the autopilot does."""
        truth = self.source == TRUTH
        points = self.truth if truth else self.samples
        rows = [p for p in points if p is not None and t0 <= p.t <= t1]
        names = ("t", "n", "e", "d", "vn", "ve", "vd", "yaw")
        out = {name: np.array([getattr(p, name) for p in rows], dtype=float) for name in names}
        out["alt"] = (self.truth_ground if truth else self.ground) - out["d"]
        return out

    def set_ground(self) -> None:
        """Where the ground is: the vehicle's height in the last second (before a takeoff)."""
        recent = [i for i, s in enumerate(self.samples) if s.t >= self.now - 1.0]
        self.ground = float(np.median([self.samples[i].d for i in recent])) if recent else 0.0
        true_d = [p.d for p in (self.truth[i] for i in recent) if p is not None]
        self.truth_ground = float(np.median(true_d)) if true_d else 0.0

    def motion_frame(self, n: float, e: float, t: float) -> tuple[float, float]:
        """A horizontal position the vehicle was sent to (its estimate's frame) in the frame of
        `arrays`, as the estimate stood at vehicle time `t`: where the vehicle truly headed."""
        if self.source != TRUTH:
            return n, e
        i = next((k for k, s in enumerate(self.samples) if s.t >= t), len(self.samples) - 1)
        truth = self.truth[i] or next(p for p in self.truth if p is not None)
        return n + truth.n - self.samples[i].n, e + truth.e - self.samples[i].e

    def rows(self) -> list[dict[str, float | bool]]:
        """One dict per sample: the estimate, and the ground truth as true_* when there is one."""
        rows = []
        for sample, truth in zip(self.samples, self.truth):
            row: dict[str, float | bool] = {k: getattr(sample, k) for k in SAMPLE_FIELDS}
            if truth is not None:
                row.update({f"true_{k}": getattr(truth, k) for k in TRUTH_FIELDS})
            rows.append(row)
        return rows

    def save(self, path: Path) -> None:
        """The samples as CSV (one row per sample, the ground truth beside the estimate when there is
        one: true_n ... true_vd), for plotting a run that went wrong."""
        columns = SAMPLE_FIELDS + (tuple(f"true_{k}" for k in TRUTH_FIELDS) if self.has_truth else ())

        def cell(value: float | bool | None) -> str:
            return "" if value is None else str(int(value)) if isinstance(value, bool) else f"{value:.4f}"

        lines = [f"# {t:.3f} {what}" for t, what in self.events] + [",".join(columns)]
        lines += [",".join(cell(row.get(k)) for k in columns) for row in self.rows()]
        path.write_text("\n".join(lines) + "\n")


@contextlib.asynccontextmanager
async def recording(vehicle: Vehicle, measure_on: str = ESTIMATE) -> AsyncIterator[Trace]:
    """Record `vehicle`'s telemetry into a Trace for the block.

    Over MAVLink the clock is LOCAL_POSITION_NED.time_boot_ms, the vehicle's own; on a vehicle in
    simulated time (lockstep) the snapshot time is already the vehicle's clock.
    """
    trace = Trace(measure_on)
    tasks: list[asyncio.Task] = []
    mavlink = getattr(vehicle, "mavlink", None)
    if mavlink is not None:
        # SET_MESSAGE_INTERVAL: PX4 sends ATTITUDE at 100 Hz, which at a speed factor floods the harness;
        # PX4 SIH answers the second with its ground truth (a vehicle that does not never sends it).
        await vehicle.command_long(SET_MESSAGE_INTERVAL, ATTITUDE, 1e6 / ATTITUDE_HZ)
        await vehicle.command_long(SET_MESSAGE_INTERVAL, HIL_STATE_QUATERNION, 1e6 / TRUTH_HZ)
        tasks.append(asyncio.create_task(_follow_truth(vehicle, trace)))
        tasks.append(asyncio.create_task(_follow_local_position(vehicle, mavlink, trace)))
        tasks.append(asyncio.create_task(_follow_attitude(mavlink, trace)))
        tasks.append(asyncio.create_task(_follow_targets(mavlink, trace)))
        tasks.append(asyncio.create_task(_follow_disarm_texts(mavlink, trace)))
    elif math.isinf(vehicle.speed_factor):
        tasks.append(asyncio.create_task(_follow_snapshots(vehicle, trace)))
    else:
        raise VehicleError(f"{vehicle.url}: no vehicle clock to record the fidelity manoeuvres on")
    try:
        yield trace
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _follow_local_position(vehicle: Vehicle, mavlink, trace: Trace) -> None:
    async for msg in mavlink.subscribe_message("LOCAL_POSITION_NED"):
        f = json.loads(msg.fields_json)
        s = vehicle.state
        sample = Sample(f["time_boot_ms"] / 1000.0, f["x"], f["y"], f["z"], f["vx"], f["vy"], f["vz"], trace.yaw,
                        s.armed and trace.disarmed_at is None, s.landed_state == "ON_GROUND")
        if trace.disarmed_at is not None and s.armed is False:
            trace.disarmed_at = None  # the heartbeat caught up; a later arm starts afresh
        await trace.add(sample)


async def _follow_truth(vehicle: Vehicle, trace: Trace) -> None:
    # HIL_STATE_QUATERNION from SIH carries no time (time_usec 0): each truth goes with the next
    # LOCAL_POSITION_NED, at most one truth interval (20 ms of vehicle time) late.
    async for state in sih_states(vehicle.messages("HIL_STATE_QUATERNION")):
        trace.latest_truth = state


async def _follow_attitude(mavlink, trace: Trace) -> None:
    # The heading straight from ATTITUDE: MAVSDK's own attitude stream lags when the harness is busy.
    async for msg in mavlink.subscribe_message("ATTITUDE"):
        trace.yaw = json.loads(msg.fields_json)["yaw"]


async def _follow_targets(mavlink, trace: Trace) -> None:
    async for msg in mavlink.subscribe_message("POSITION_TARGET_LOCAL_NED"):
        f = json.loads(msg.fields_json)
        value = [math.nan if f[k] is None else float(f[k]) for k in ("x", "y", "z", "vx", "vy", "vz", "yaw")]
        trace.targets.append(Point(f["time_boot_ms"] / 1000.0, *value))


async def _follow_disarm_texts(mavlink, trace: Trace) -> None:
    # HEARTBEAT (armed) comes at 1 Hz on PX4; its "Disarmed by ..." text arrives at once.
    async for msg in mavlink.subscribe_message("STATUSTEXT"):
        text = json.loads(msg.fields_json).get("text", "")
        if "isarmed" in text and trace.samples:
            trace.disarmed_at = trace.now


async def _follow_snapshots(vehicle: Vehicle, trace: Trace) -> None:
    async for s in vehicle.telemetry():
        await trace.add(Sample(s.t_ns / 1e9, s.north, s.east, s.down, s.vn, s.ve, s.vd, s.yaw, s.armed,
                               s.landed_state == "ON_GROUND"))


# ---------------------------------------------------------------------------------------------- manoeuvres

def _wrap(angle: float) -> float:
    return math.remainder(angle, math.tau)


def _first_time(t: np.ndarray, mask: np.ndarray) -> float:
    idx = np.flatnonzero(mask)
    return float(t[idx[0]]) if idx.size else math.nan


def _averaged(t: np.ndarray, x: np.ndarray, window: float) -> np.ndarray:
    """x averaged over `window` seconds centred on each sample (PX4's velocity estimate wanders
    +-0.1 m/s, which would decide a threshold crossed on a slow approach otherwise)."""
    csum = np.concatenate(([0.0], np.cumsum(x)))
    lo = np.searchsorted(t, t - 0.5 * window, side="left")
    hi = np.searchsorted(t, t + 0.5 * window, side="right")
    return (csum[hi] - csum[lo]) / np.maximum(hi - lo, 1)


def _settle_time(t: np.ndarray, inside: np.ndarray, t0: float) -> float:
    """Time from t0 after which `inside` holds until the end of the window."""
    outside = np.flatnonzero(~inside)
    if outside.size == 0:
        return 0.0
    if outside[-1] + 1 >= t.size:
        return math.nan
    return float(t[outside[-1] + 1] - t0)


async def _arrival(trace: Trace, target: tuple[float, float], timeout: float, what: str) -> Sample:
    """Within ARRIVAL_M of `target` and slower than ARRIVAL_SPEED (PX4's estimate wanders ~0.3 m)."""
    return await trace.wait(lambda s: math.hypot(s.n - target[0], s.e - target[1]) < ARRIVAL_M
                            and math.hypot(s.vn, s.ve) < ARRIVAL_SPEED, timeout, what)


async def _wait_disarmed(vehicle: Vehicle, trace: Trace, timeout: float) -> float:
    """Vehicle time of the disarm (the text, or the heartbeat if it comes first)."""
    sample = await trace.wait(lambda s: not s.armed, timeout, "disarm")
    return trace.disarmed_at if trace.disarmed_at is not None else sample.t


async def _take_off(vehicle: Vehicle, trace: Trace) -> float:
    """Arm and take off to TAKEOFF_ALT; returns the vehicle time of the takeoff command.

    `Vehicle.takeoff` ends with the harness's own settle at the exact altitude, which needs
    PX4's height estimate within 0.15 m of home's: on the ground that estimate drifts by 0.3 m
    and more. The climb is PX4's; the settle is not measured, so it is not waited for.
    """
    trace.set_ground()
    await vehicle.arm()
    t0 = trace.mark("takeoff")
    task = asyncio.create_task(vehicle.takeoff(TAKEOFF_ALT))
    try:
        await trace.wait(lambda s: task.done() or (vehicle.state.flight_mode == "HOLD"
                                                   and trace.altitude(s) > 0.8 * TAKEOFF_ALT), 60.0, "takeoff")
        await trace.until(trace.now + 3.0)
    finally:
        await cancel_and_wait(task)  # a refused takeoff raises here
    return t0


async def fly_takeoff(vehicle: Vehicle, trace: Trace, figures: dict[str, float]) -> None:
    """Arm and take off to TAKEOFF_ALT."""
    t0 = await _take_off(vehicle, trace)
    a = trace.arrays(t0)
    alt = a["alt"]
    figures["takeoff_t90"] = _first_time(a["t"], alt >= 0.9 * TAKEOFF_ALT) - t0
    figures["takeoff_overshoot"] = max(0.0, float(alt.max()) - TAKEOFF_ALT)
    figures["takeoff_climb_speed"] = float((-a["vd"]).max())


async def _hold_offboard(vehicle: Vehicle, trace: Trace) -> Sample:
    """Start offboard holding the current position; returns where."""
    await vehicle.start_offboard(SETPOINT_RATE_HZ)
    await trace.until(trace.now + 2.0)
    return trace.last


async def fly_yaw_step(vehicle: Vehicle, trace: Trace, figures: dict[str, float]) -> None:
    p = trace.last
    target = _wrap(p.yaw + math.radians(YAW_STEP_DEG))
    sent = trace.mark("yaw step")
    await vehicle.set_position_ned(p.n, p.e, p.d, target)
    t0 = await trace.took_effect(sent, lambda tg: abs(_wrap(tg.yaw - target)) < math.radians(5.0))
    await trace.until(t0 + 8.0)
    a = trace.arrays(t0)
    turned = np.degrees(np.unwrap(a["yaw"]) - a["yaw"][0])
    figures["yaw_t90"] = _first_time(a["t"], turned >= 0.9 * YAW_STEP_DEG) - t0
    figures["yaw_overshoot"] = max(0.0, float(turned.max()) - YAW_STEP_DEG)


async def fly_position_step(vehicle: Vehicle, trace: Trace, figures: dict[str, float]) -> None:
    p = trace.last
    sent = trace.mark("position step")
    await vehicle.set_position_ned(p.n + POSITION_STEP_M, p.e, p.d, p.yaw)
    t0 = await trace.took_effect(sent, lambda tg: tg.n > p.n + 0.9 * POSITION_STEP_M)
    await trace.until(t0 + 10.0)
    a = trace.arrays(t0)
    moved = a["n"] - a["n"][0]
    figures["pos_rise"] = (_first_time(a["t"], moved >= 0.9 * POSITION_STEP_M)
                           - _first_time(a["t"], moved >= 0.1 * POSITION_STEP_M))
    figures["pos_overshoot"] = max(0.0, float(moved.max()) - POSITION_STEP_M)
    error = np.hypot(moved - POSITION_STEP_M, a["e"] - a["e"][0])
    figures["pos_settle"] = _settle_time(a["t"], error <= 0.5, t0)


async def fly_velocity_step(vehicle: Vehicle, trace: Trace, figures: dict[str, float]) -> None:
    p = trace.last
    sent = trace.mark("velocity step")
    await vehicle.set_velocity_ned(VELOCITY_STEP, 0.0, 0.0, p.yaw)
    t0 = await trace.took_effect(sent, lambda tg: tg.vn > 0.9 * VELOCITY_STEP)
    await trace.until(t0 + VELOCITY_HOLD_S)
    sent_stop = trace.mark("stop")
    await vehicle.set_velocity_ned(0.0, 0.0, 0.0, p.yaw)
    t_stop = await trace.took_effect(sent_stop, lambda tg: abs(tg.vn) < 0.1 * VELOCITY_STEP)
    await trace.until(t_stop + STOP_WATCH_S)
    a = trace.arrays(t0, t_stop)
    figures["vel_t2_5"] = _first_time(a["t"], _averaged(a["t"], a["vn"], 0.5) >= 2.5) - t0
    held = trace.arrays(t0, min(t_stop, t0 + VELOCITY_HOLD_S))
    figures["vel_distance_8s"] = float(held["n"][-1] - held["n"][0])
    b = trace.arrays(t_stop)
    figures["stop_overshoot"] = float(b["n"].max() - b["n"][0])
    figures["stop_time"] = _first_time(b["t"], np.hypot(b["vn"], b["ve"]) < 1.0) - t_stop


async def _level_off(vehicle: Vehicle, trace: Trace) -> None:
    """Hold position TAKEOFF_ALT above the ground again: under velocity setpoints PX4's altitude
    follows its estimate's drift (metres in a minute on SIH), and later figures need a known height."""
    p = trace.last
    await vehicle.set_position_ned(p.n, p.e, trace.ground - TAKEOFF_ALT, p.yaw)
    await trace.wait(lambda s: abs(trace.altitude(s) - TAKEOFF_ALT) < 0.3 and math.hypot(s.vn, s.ve) < ARRIVAL_SPEED,
                     30.0, "level flight at the takeoff altitude")


async def fly_tracking(vehicle: Vehicle, trace: Trace, figures: dict[str, float]) -> None:
    """A position setpoint moving on a circle, sent at SETPOINT_RATE_HZ; the error against it."""
    p = trace.last
    center = (p.n - CIRCLE_RADIUS, p.e)
    omega = CIRCLE_SPEED / CIRCLE_RADIUS
    duration = math.tau / omega
    t0 = trace.mark("circle")
    errors: list[tuple[float, float]] = []
    while trace.now < t0 + duration:
        # The setpoint at this vehicle time; the error is measured against the setpoint in force.
        phase = omega * (trace.now - t0)
        sp = (center[0] + CIRCLE_RADIUS * math.cos(phase), center[1] + CIRCLE_RADIUS * math.sin(phase))
        await vehicle.set_position_ned(sp[0], sp[1], p.d, p.yaw)
        await vehicle.sleep(1.0 / SETPOINT_RATE_HZ)
        s = trace.last
        now_phase = omega * (s.t - t0)
        expected = (center[0] + CIRCLE_RADIUS * math.cos(now_phase), center[1] + CIRCLE_RADIUS * math.sin(now_phase))
        errors.append((s.t - t0, math.hypot(s.n - expected[0], s.e - expected[1])))
    late = np.array([err for t, err in errors if t >= 2.0])
    figures["track_rms"] = float(np.sqrt(np.mean(late ** 2)))
    figures["track_max"] = float(late.max())
    await vehicle.set_position_ned(center[0] + CIRCLE_RADIUS, center[1], p.d, p.yaw)
    await trace.until(trace.now + 4.0)


async def fly_land(vehicle: Vehicle, trace: Trace, figures: dict[str, float]) -> None:
    t0 = trace.mark("land")
    await vehicle.land()
    t_disarm = await _wait_disarmed(vehicle, trace, 60.0)
    a = trace.arrays(t0)
    alt = a["d"][-1] - a["d"]  # above where it came to rest (PX4's estimate drifts on the ground)
    # From the altitude, not the velocity estimate: PX4 SIH's vertical velocity estimate reads
    # 0.1-0.2 m/s faster than its own altitude falls during the descent (measured, v1.16.1).
    figures["land_speed"] = (LAND_FROM - LAND_TO) / (_first_time(a["t"], alt <= LAND_TO)
                                                     - _first_time(a["t"], alt <= LAND_FROM))
    figures["land_disarm"] = t_disarm - t0


async def fly_goto(vehicle: Vehicle, trace: Trace, figures: dict[str, float]) -> None:
    p = trace.last
    target = (p.n + GOTO_DISTANCE, p.e)
    t0 = trace.mark("goto")
    await vehicle.goto(target[0], target[1], -TAKEOFF_ALT, p.yaw)
    await _arrival(trace, target, 40.0, "arrival at the goto target")
    await trace.until(trace.now + 2.0)
    a = trace.arrays(t0)
    target = trace.motion_frame(*target, t0)
    figures["goto_speed"] = float(np.hypot(a["vn"], a["ve"]).max())
    figures["goto_time"] = _first_time(a["t"], np.hypot(a["n"] - target[0], a["e"] - target[1]) < 1.0) - t0
    figures["goto_overshoot"] = max(0.0, float(a["n"].max() - target[0]))


async def fly_mission(vehicle: Vehicle, trace: Trace, figures: dict[str, float]) -> None:
    """Three 20 m legs with two right turns at fly-through waypoints (acceptance radius 2 m)."""
    p = trace.last
    corners = [(p.n, p.e + MISSION_LEG), (p.n - MISSION_LEG, p.e + MISSION_LEG), (p.n - MISSION_LEG, p.e + 2 * MISSION_LEG)]
    await vehicle.upload_mission([MissionWaypoint(n, e, -TAKEOFF_ALT, acceptance_radius=MISSION_RADIUS)
                                  for n, e in corners])
    t0 = trace.mark("mission start")
    await vehicle.start_mission()
    await _arrival(trace, corners[-1], 60.0, "the mission's last waypoint")
    a = trace.arrays(t0)
    times = [t0]
    for i, (n, e) in enumerate(trace.motion_frame(n, e, t0) for n, e in corners):
        dist = np.hypot(a["n"] - n, a["e"] - e)
        if i < 2:
            figures[f"mission_cut{i + 1}"] = float(dist.min())
            times.append(float(a["t"][int(np.argmin(dist))]))
        else:
            times.append(_first_time(a["t"], dist < 1.0))
    for i in range(3):
        figures[f"mission_leg{i + 1}"] = times[i + 1] - times[i]


async def fly_return(vehicle: Vehicle, trace: Trace, figures: dict[str, float]) -> None:
    async with vehicle.params_changed(RTL_PARAMS):
        t0 = trace.mark("return")
        await vehicle.return_to_launch()
        t_disarm = await _wait_disarmed(vehicle, trace, 120.0)
    a = trace.arrays(t0)
    figures["rtl_climb_speed"] = float((-a["vd"]).max())
    figures["rtl_alt"] = float(a["alt"].max())
    figures["rtl_cruise_speed"] = float(np.hypot(a["vn"], a["ve"]).max())
    figures["rtl_descent_speed"] = float(a["vd"].max())
    figures["rtl_disarm"] = t_disarm - t0
    took_off = next(t for t, what in trace.events if what == "takeoff")
    home = trace.arrays(took_off - 1.0, took_off)
    figures["rtl_home_error"] = float(math.hypot(a["n"][-1] - home["n"][-1], a["e"][-1] - home["e"][-1]))


async def fly_flight_a(vehicle: Vehicle, trace: Trace, quick: bool = False) -> dict[str, float]:
    """Takeoff, the offboard steps, land (quick: takeoff, velocity step, land)."""
    figures: dict[str, float] = {}
    await fly_takeoff(vehicle, trace, figures)
    await _hold_offboard(vehicle, trace)
    if not quick:
        await fly_yaw_step(vehicle, trace, figures)
        await fly_position_step(vehicle, trace, figures)
    await fly_velocity_step(vehicle, trace, figures)
    await _level_off(vehicle, trace)
    if not quick:
        await fly_tracking(vehicle, trace, figures)
    await vehicle.stop_offboard()
    await trace.until(trace.now + 2.0)
    await fly_land(vehicle, trace, figures)
    return figures


async def fly_flight_b(vehicle: Vehicle, trace: Trace, quick: bool = False) -> dict[str, float]:
    """Takeoff, goto, mission, return."""
    figures: dict[str, float] = {}
    await _take_off(vehicle, trace)
    await fly_goto(vehicle, trace, figures)
    await fly_mission(vehicle, trace, figures)
    await fly_return(vehicle, trace, figures)
    return figures


Flight = Callable[[Vehicle, Trace, bool], Awaitable[dict[str, float]]]


async def fly_suite(open_vehicle: Callable[[str], AsyncContextManager[Vehicle]], quick: bool = False,
                    keep: Callable[[str, Trace], None] | None = None, measure_on: str = ESTIMATE) -> dict[str, float]:
    """Every manoeuvre of the suite (quick: the CI subset), each flight on a fresh vehicle from
    `open_vehicle(flight name)`; `keep(flight name, trace)` is handed each flight's telemetry however it ends.

    A fresh vehicle per flight, because PX4 moves home to wherever it is armed next while its
    local frame stays where it booted: goto and mission targets are relative to home.
    """
    figures: dict[str, float] = {}
    flights: tuple[tuple[str, Flight], ...] = (("A", fly_flight_a),) if quick else (("A", fly_flight_a),
                                                                                    ("B", fly_flight_b))
    for name, flight in flights:
        async with open_vehicle(name) as vehicle, recording(vehicle, measure_on) as trace:
            try:
                await vehicle.wait_armable(60.0)
                await trace.wait(lambda s: True, 10.0, "telemetry")
                figures.update(await flight(vehicle, trace, quick))
            finally:
                if keep is not None:
                    keep(name, trace)
    return figures


# ---------------------------------------------------------------------------------------------- targets

BUILTIN = "builtin"
PX4_SITL = "px4-sitl"
PX4_HARNESS_PHYSICS = "px4-sitl-harness"  # PX4 SITL flying the harness's physics (lockstep)
TARGETS = (BUILTIN, PX4_SITL, PX4_HARNESS_PHYSICS)  # and any connection string of a running flight controller


def target_spec(target: str) -> tuple[TargetSpec, str]:
    """What a suite target name opens: (the harness's target, its physics). ValueError naming the
    choices for anything else that is not a connection string."""
    if target == BUILTIN:
        return TargetSpec.parse("sim"), "default"
    if target == PX4_HARNESS_PHYSICS:
        return TargetSpec.parse(PX4_SITL), "harness"
    expected = (f"target {target!r}: expected {', '.join(TARGETS)} or the connection string of a running flight "
                "controller (e.g. udpin://127.0.0.1:14540)")
    try:
        spec = TargetSpec.parse(target)
    except ValueError:
        raise ValueError(expected) from None
    if not spec.simulated or spec.kind == PX4_SITL:
        return spec, "default"
    raise ValueError(expected)


@contextlib.asynccontextmanager
async def connected(session: TrialSession, target: str, speed: float, px4_dir: str | None = None,
                    flight: str | None = None, say: Callable[[str], None] = lambda text: None) -> AsyncIterator[Vehicle]:
    """A vehicle of `target` (a suite target name or a running flight controller's connection string)
    at `speed` x real time, brought up through `session` and connected over MAVSDK: a fresh one for a
    simulated target. With `flight`, its PX4 console and ULogs go into the record's flight-<flight>/ and
    the rows its physics adds carry the flight's name, as the suite's trace does.

    However the block ends (landed, an error mid-air, Ctrl-C), the vehicle is brought down by the stop
    policy (hil.stop.make_safe; `say` gets what a person must read). A running flight controller is
    flown only from the ground, disarmed (anything else is refused before a command is sent), with its
    parameter journal kept and its own data-link-loss failsafe armed for the block, as every flight on
    one is; whether it may be flown at all is the caller's to decide (`--arm`)."""

    spec, physics = target_spec(target)
    recorder = session.recorder
    options = TargetOptions(speed=speed if spec.simulated else 1.0, px4_dir=px4_dir, physics=physics,
                            connect_timeout_s=30.0, allow_arming=not spec.simulated)
    if flight is not None:
        # A run's flights share its record: one PX4 console each, not the last one over the others.
        options = replace(options, keep_in=session.record_dir / f"flight-{flight}",
                          sink=lambda table, row: recorder.append(table, {"flight": flight, **row}))
    # record=False: the suite records its own telemetry (the trace table, every flight of the run), and a
    # record's telemetry log is one vehicle's.
    async with session.target(spec, options, record=False) as opened:
        vehicle = opened.vehicle
        if opened.hardware:
            await require_on_ground(vehicle)
            await keep_journal(vehicle, recorder)
        # The dead-man's switch outside the stop policy: it stays armed while the vehicle comes down.
        async with dead_mans_switch(vehicle, recorder.event) if opened.hardware else contextlib.nullcontext():
            try:
                yield vehicle
            finally:
                await make_safe(vehicle, say, recorder.event)


@contextlib.contextmanager
def run_record_dir(record_dir: Path | None, name: str) -> Iterator[Path]:
    """Where a run's trial record goes: <record_dir>/trials/<name>, or, when runs are not kept as records,
    a scratch directory removed after the run (every run is a trial session, and a session has a record)."""
    if record_dir is not None:
        yield record_dir / TRIALS_DIR / name
        return
    with tempfile.TemporaryDirectory(prefix="fidelity-") as scratch:
        yield Path(scratch) / name


async def run_target(target: str, runs: int, speed: float, px4_dir: str | None = None, quick: bool = False,
                     say: Callable[[str], None] = lambda text: None, trace_dir: Path | None = None,
                     record_dir: Path | None = None, role: str = CANDIDATE,
                     measure_on: str = ESTIMATE) -> list[dict[str, float]]:
    """`runs` independent runs of the suite on fresh vehicles of `target`; one figure dict per run.

    Each run is a trial session, each of its flights a vehicle through it (`connected`). With
    `trace_dir`, each flight's telemetry is kept there as <target>-<run>-<flight>.csv. With `record_dir`,
    each run's record is kept in <record_dir>/trials/ (what `hil report` reads): config kind "fidelity",
    the target's `role` (reference or candidate), the figures in the summary as fidelity.<figure>, and
    the telemetry of every flight as the table "fidelity". A run that fails raises, its record left
    crashed with the error (`hil report` lists it, and compares only the runs that finished)."""
    results = []
    for run in range(runs):
        name = f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', target)}-{run + 1}"  # a URL too
        config = {"kind": FIDELITY_KIND, "role": role, "target": target, "repeat": run, "speed": speed,
                  "quick": quick, "px4_dir": px4_dir or "", "measure_on": measure_on}
        with run_record_dir(record_dir, f"{role}-{name}") as trial, \
                TrialSession(trial, config=config, target=target) as session:
            keeper = _Keeper(name, trace_dir, session.recorder)
            figures = await fly_suite(lambda flight: connected(session, target, speed, px4_dir, flight, say), quick,
                                      keeper.keep, measure_on)
            session.finish("success", FiguresSummary(outcome="success", figures={
                **{f"{FIGURE_PREFIX}{k}": v for k, v in figures.items()}, "fidelity_source": keeper.source}))
        say(f"{target} run {run + 1}/{runs} (on its {keeper.source}): "
            + ", ".join(f"{k} {v:.2f}" for k, v in figures.items()))
        results.append(figures)
    return results


class _Keeper:
    """Where one run's flights go when they end: CSV files, its trial record, and what they were measured on."""

    def __init__(self, name: str, trace_dir: Path | None, recorder: TrialRecorder) -> None:
        self.name = name
        self.trace_dir = trace_dir
        self.recorder = recorder
        self._sources: set[str] = set()

    @property
    def source(self) -> str:
        return "/".join(sorted(self._sources)) or "nothing"

    def keep(self, flight: str, trace: Trace) -> None:
        self._sources.add(trace.source)
        if self.trace_dir is not None:
            trace.save(self.trace_dir / f"{self.name}-{flight}.csv")
        for row in trace.rows():
            self.recorder.append(TRACE_TABLE, {"flight": flight, **row})


def save_runs(path: Path, runs: dict[str, list[dict[str, float]]]) -> None:
    """Every run's figures per target, as JSON (reused with --reference instead of flying again)."""
    path.write_text(json.dumps(runs, indent=1))  # in flying order: the reference first


def load_runs(path: Path) -> dict[str, list[dict[str, float]]]:
    """Figures saved by `save_runs`; ValueError naming the file and the entry when it is not such a file."""
    text = read_text(path, "fidelity runs file", MAX_RUNS_FILE_BYTES)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{path}: not a fidelity runs file ({type(exc).__name__}: {str(exc)[:120]})") from None
    if not (isinstance(data, dict) and data and all(isinstance(v, list) and v for v in data.values())):
        raise ValueError(f"{path}: expected a mapping of target -> a list of runs (as --save writes it)")
    for target, runs in data.items():
        for i, run in enumerate(runs):
            if not (isinstance(run, dict) and all(isinstance(k, str) and isinstance(v, (int, float))
                                                  and not isinstance(v, bool) for k, v in run.items())):
                raise ValueError(f"{path}: {target} run {i + 1}: expected a mapping of figure name -> number")
    return data
