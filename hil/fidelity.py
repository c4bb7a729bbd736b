"""Fidelity: fly the same scripted manoeuvres on two targets and compare what each vehicle did.

The built-in vehicle stands in for PX4 in every fast campaign, so it has to fly like PX4: a planner
that passes because the stand-in climbs or accelerates faster than PX4 would fail on PX4. This
module flies a fixed manoeuvre suite through the `Vehicle` API on any target (the built-in vehicle,
PX4 SITL, a real aircraft), extracts one number per figure from the vehicle's own telemetry, and
compares a candidate's figures with a reference's (PX4 is the reference): each reference figure
from several runs, so the reference's own run-to-run spread is known, and a band around it that
the candidate has to stay in.

Two flights per run (each from the ground, so that a run starts where the previous one ended):

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
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncContextManager, AsyncIterator, Awaitable, Callable, Sequence

import numpy as np

from bridges.vehicle import MissionWaypoint, Vehicle, VehicleError

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
# The heading's stream rate while recording (vehicle Hz): enough for a yaw step, light on the harness.
ATTITUDE_HZ = 30.0
# Arrived: this close and this slow (PX4's position estimate wanders by ~0.3 m and 0.2 m/s in hover).
ARRIVAL_M = 1.0
ARRIVAL_SPEED = 0.5
# When PX4's spread is narrower than this fraction of its mean, the band is this wide instead.
MIN_RELATIVE_BAND = 0.20


# ---------------------------------------------------------------------------------------------- figures

@dataclass(frozen=True)
class Figure:
    """One number the suite extracts: its name, unit, meaning, and the smallest band it gets.

    ``floor`` is an absolute half-width for figures whose value can be near zero (an overshoot of
    3 cm has no meaningful 20 % band). ``known`` explains a difference that cannot close.
    """

    name: str
    unit: str
    meaning: str
    floor: float
    known: str = ""


FIGURES: tuple[Figure, ...] = (
    Figure("takeoff_t90", "s", "takeoff command to 90 % of the takeoff altitude", 0.5),
    Figure("takeoff_overshoot", "m", "highest altitude above the takeoff altitude", 0.15),
    Figure("takeoff_climb_speed", "m/s", "fastest climb during the takeoff", 0.15),
    Figure("yaw_t90", "s", "offboard yaw step of 90 deg: time to 81 deg", 0.15),
    Figure("yaw_overshoot", "deg", "offboard yaw step: overshoot", 3.0),
    Figure("pos_rise", "s", "offboard 5 m position step: 10 % to 90 %", 0.2),
    Figure("pos_overshoot", "m", "offboard position step: overshoot", 0.15),
    Figure("pos_settle", "s", "offboard position step: time until within 0.5 m for good", 0.5,
           known="PX4's runs split between ~2.7 s (overshoot ~0.3 m) and ~8.6 s (overshoot 0.7-1.4 m, then "
                 "settling at its velocity integrator's pace); the built-in vehicle, on its exact state rather "
                 "than EKF2's estimate from SIH's noisy sensors, flies the first kind every time"),
    Figure("vel_t2_5", "s", "offboard 3 m/s velocity step: time to 2.5 m/s (velocity averaged over 0.5 s)", 0.3),
    Figure("vel_distance_8s", "m", "distance flown in the 8 s of the 3 m/s command", 1.0),
    Figure("stop_overshoot", "m", "distance flown after the 0 m/s command", 0.3),
    Figure("stop_time", "s", "0 m/s command to below 1 m/s", 0.3),
    Figure("track_rms", "m", "position setpoint on a 5 m circle at 2 m/s, 20 Hz: RMS error after 2 s", 0.1),
    Figure("track_max", "m", "the same: largest error after 2 s", 0.2),
    Figure("land_speed", "m/s", "land from 5 m: median descent speed between 4 m and 1 m", 0.1),
    Figure("land_disarm", "s", "land command to disarmed", 1.0),
    Figure("goto_speed", "m/s", "goto 30 m: fastest horizontal speed", 0.3),
    Figure("goto_time", "s", "goto 30 m: time to within 1 m of the target", 0.5),
    Figure("goto_overshoot", "m", "goto 30 m: farthest past the target", 0.15),
    Figure("mission_leg1", "s", "mission: start to the first waypoint (20 m)", 0.5),
    Figure("mission_leg2", "s", "mission: first to second waypoint (20 m, after a 90 deg turn)", 0.5),
    Figure("mission_leg3", "s", "mission: second to last waypoint (20 m, after a 90 deg turn)", 0.5),
    Figure("mission_cut1", "m", "mission: closest approach to the first turn's waypoint", 0.3),
    Figure("mission_cut2", "m", "mission: closest approach to the second turn's waypoint", 0.3),
    Figure("rtl_climb_speed", "m/s", "return: fastest climb", 0.15),
    Figure("rtl_alt", "m", "return: highest altitude (RTL_RETURN_ALT 15 m)", 0.5),
    Figure("rtl_cruise_speed", "m/s", "return: fastest horizontal speed", 0.3),
    Figure("rtl_descent_speed", "m/s", "return: fastest descent", 0.15),
    Figure("rtl_disarm", "s", "return command to disarmed", 2.0),
    Figure("rtl_home_error", "m", "return: horizontal distance from home when landed", 1.0),
)
FIGURE_BY_NAME = {f.name: f for f in FIGURES}
# What the CI subset flies (flight A without the offboard steps between the velocity step and land).
QUICK_FIGURES = ("takeoff_t90", "takeoff_overshoot", "takeoff_climb_speed", "vel_t2_5", "vel_distance_8s",
                 "stop_overshoot", "stop_time", "land_speed", "land_disarm")


# ---------------------------------------------------------------------------------------------- the trace

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

    def __init__(self) -> None:
        self.samples: list[Sample] = []
        self._changed = asyncio.Condition()
        self.disarmed_at: float | None = None  # vehicle time the vehicle said it disarmed
        self.events: list[tuple[float, str]] = []  # (vehicle time, what the script commanded)
        self.ground = 0.0  # NED down of the ground in the vehicle's frame (PX4's estimate drifts)
        self.yaw = math.nan  # the latest heading (rad), from its own message
        self.targets: list[Point] = []

    def mark(self, what: str) -> float:
        """Note a command at the current vehicle time; returns that time."""
        self.events.append((self.now, what))
        return self.now

    async def took_effect(self, sent: float, reached: Callable[[Point], bool], timeout: float = 10.0) -> float:
        """When a setpoint command sent at vehicle time `sent` reached the vehicle: midway between
        the last reported setpoint without it and the first with it (10 Hz). On a loaded machine
        the harness's commands arrive late; timing from their effect keeps that out of the figures.
        A vehicle that reports no setpoints (in-process) takes commands at once: `sent`."""
        if not self.targets:
            return sent
        deadline = self.now + timeout
        while True:
            before = sent
            for target in self.targets:
                if target.t < sent:
                    continue
                if reached(target):
                    return max(sent, 0.5 * (before + target.t))
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

    def arrays(self, t0: float = -math.inf, t1: float = math.inf) -> dict[str, np.ndarray]:
        """The samples in [t0, t1] as one numpy array per field."""
        rows = [s for s in self.samples if t0 <= s.t <= t1]
        names = ("t", "n", "e", "d", "vn", "ve", "vd", "yaw")
        return {name: np.array([getattr(s, name) for s in rows], dtype=float) for name in names}

    def save(self, path: Path) -> None:
        """The samples as CSV (one row per sample), for plotting a run that went wrong."""
        names = ("t", "n", "e", "d", "vn", "ve", "vd", "yaw", "armed", "landed")
        lines = [f"# {t:.3f} {what}" for t, what in self.events] + [",".join(names)] + [",".join(f"{getattr(s, k):.4f}" if isinstance(getattr(s, k), float)
                                              else str(int(getattr(s, k))) for k in names) for s in self.samples]
        path.write_text("\n".join(lines) + "\n")

    def at(self, t: float) -> Sample:
        """The first sample at or after `t` (the last one if none is)."""
        for sample in self.samples:
            if sample.t >= t:
                return sample
        return self.last


@contextlib.asynccontextmanager
async def recording(vehicle: Vehicle) -> AsyncIterator[Trace]:
    """Record `vehicle`'s telemetry into a Trace for the block.

    Over MAVLink the clock is LOCAL_POSITION_NED.time_boot_ms, the vehicle's own; on a vehicle in
    simulated time (lockstep) the snapshot time is already the vehicle's clock.
    """
    trace = Trace()
    tasks: list[asyncio.Task] = []
    mavlink = getattr(vehicle, "mavlink", None)
    if mavlink is not None:
        await _stream_rate(mavlink, 30, ATTITUDE_HZ)
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


async def _stream_rate(mavlink, message_id: int, hz: float) -> None:
    """SET_MESSAGE_INTERVAL: PX4 sends ATTITUDE at 100 Hz, which at a speed factor floods the harness."""
    from mavsdk.plugins.mavlink_direct import MavlinkMessage

    fields = {"target_system": 0, "target_component": 0, "command": 511, "confirmation": 0,
              "param1": float(message_id), "param2": 1e6 / hz, "param3": 0.0, "param4": 0.0, "param5": 0.0,
              "param6": 0.0, "param7": 0.0}
    await mavlink.send_message(MavlinkMessage("COMMAND_LONG", 0, 0, 0, 0, json.dumps(fields)))


async def _follow_local_position(vehicle: Vehicle, mavlink, trace: Trace) -> None:
    async for msg in mavlink.subscribe_message("LOCAL_POSITION_NED"):
        f = json.loads(msg.fields_json)
        s = vehicle.state
        sample = Sample(f["time_boot_ms"] / 1000.0, f["x"], f["y"], f["z"], f["vx"], f["vy"], f["vz"], trace.yaw,
                        s.armed and trace.disarmed_at is None, s.landed_state == "ON_GROUND")
        if trace.disarmed_at is not None and s.armed is False:
            trace.disarmed_at = None  # the heartbeat caught up; a later arm starts afresh
        await trace.add(sample)


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
    ground = trace.arrays(trace.now - 1.0)["d"]
    trace.ground = float(np.median(ground)) if ground.size else 0.0
    await vehicle.arm()
    t0 = trace.mark("takeoff")
    task = asyncio.create_task(vehicle.takeoff(TAKEOFF_ALT))
    try:
        await trace.wait(lambda s: task.done() or (vehicle.state.flight_mode == "HOLD"
                                                   and trace.altitude(s) > 0.8 * TAKEOFF_ALT), 60.0, "takeoff")
        await trace.until(trace.now + 3.0)
    finally:
        if not task.done():
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task  # a refused takeoff raises here
    return t0


async def fly_takeoff(vehicle: Vehicle, trace: Trace, figures: dict[str, float]) -> None:
    """Arm and take off to TAKEOFF_ALT."""
    t0 = await _take_off(vehicle, trace)
    a = trace.arrays(t0)
    alt = trace.ground - a["d"]
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
    moved = a["n"] - p.n
    figures["pos_rise"] = (_first_time(a["t"], moved >= 0.9 * POSITION_STEP_M)
                           - _first_time(a["t"], moved >= 0.1 * POSITION_STEP_M))
    figures["pos_overshoot"] = max(0.0, float(moved.max()) - POSITION_STEP_M)
    error = np.hypot(moved - POSITION_STEP_M, a["e"] - p.e)
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
    figures["vel_distance_8s"] = float(trace.at(min(t_stop, t0 + VELOCITY_HOLD_S)).n - trace.at(t0).n)
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
    low = (alt <= 4.0) & (alt >= 1.0)
    figures["land_speed"] = float(np.median(a["vd"][low])) if low.any() else math.nan
    figures["land_disarm"] = t_disarm - t0


async def fly_goto(vehicle: Vehicle, trace: Trace, figures: dict[str, float]) -> None:
    p = trace.last
    target = (p.n + GOTO_DISTANCE, p.e)
    t0 = trace.mark("goto")
    await vehicle.goto(target[0], target[1], -TAKEOFF_ALT, p.yaw)
    await _arrival(trace, target, 40.0, "arrival at the goto target")
    await trace.until(trace.now + 2.0)
    a = trace.arrays(t0)
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
    for i, (n, e) in enumerate(corners):
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
    figures["rtl_alt"] = float((trace.ground - a["d"]).max())
    figures["rtl_cruise_speed"] = float(np.hypot(a["vn"], a["ve"]).max())
    figures["rtl_descent_speed"] = float(a["vd"].max())
    figures["rtl_disarm"] = t_disarm - t0
    figures["rtl_home_error"] = float(math.hypot(a["n"][-1], a["e"][-1]))


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


async def fly_suite(open_vehicle: Callable[[], AsyncContextManager[Vehicle]], quick: bool = False,
                    trace_stem: Path | None = None) -> dict[str, float]:
    """Every manoeuvre of the suite (quick: the CI subset), each flight on a fresh vehicle from
    `open_vehicle`; each flight's telemetry goes to `<trace_stem>-<A|B>.csv` however it ends.

    A fresh vehicle per flight, because PX4 moves home to wherever it is armed next while its
    local frame stays where it booted: goto and mission targets are relative to home.
    """
    figures: dict[str, float] = {}
    flights: tuple[tuple[str, Flight], ...] = (("A", fly_flight_a),) if quick else (("A", fly_flight_a),
                                                                                    ("B", fly_flight_b))
    for name, flight in flights:
        async with open_vehicle() as vehicle, recording(vehicle) as trace:
            try:
                await vehicle.wait_armable(60.0)
                await trace.wait(lambda s: True, 10.0, "telemetry")
                figures.update(await flight(vehicle, trace, quick))
            finally:
                if trace_stem is not None:
                    trace.save(trace_stem.with_name(f"{trace_stem.name}-{name}.csv"))
    return figures


# ---------------------------------------------------------------------------------------------- targets

BUILTIN = "builtin"
PX4_SITL = "px4-sitl"
TARGETS = (BUILTIN, PX4_SITL)


@contextlib.asynccontextmanager
async def connected(target: str, speed: float, px4_dir: str | None = None) -> AsyncIterator[Vehicle]:
    """A fresh vehicle of `target` (builtin or px4-sitl) at `speed` x real time, connected over MAVSDK."""
    from targets import TargetOptions, open_target

    if target not in TARGETS:
        raise ValueError(f"target {target!r}: expected one of {', '.join(TARGETS)}")
    options = TargetOptions(speed=speed, px4_dir=px4_dir, connect_timeout_s=30.0)
    async with open_target("sim" if target == BUILTIN else PX4_SITL, options) as opened:
        yield opened.vehicle


async def run_target(target: str, runs: int, speed: float, px4_dir: str | None = None, quick: bool = False,
                     say: Callable[[str], None] = lambda text: None,
                     trace_dir: Path | None = None) -> list[dict[str, float]]:
    """`runs` independent runs of the suite on fresh vehicles of `target`; one figure dict per run.
    With `trace_dir`, each flight's telemetry is kept there as <target>-<run>-<flight>.csv."""
    results = []
    for run in range(runs):
        stem = trace_dir / f"{target}-{run + 1}" if trace_dir is not None else None
        figures = await fly_suite(lambda: connected(target, speed, px4_dir), quick, stem)
        say(f"{target} run {run + 1}/{runs}: " + ", ".join(f"{k} {v:.2f}" for k, v in figures.items()))
        results.append(figures)
    return results


# ---------------------------------------------------------------------------------------------- comparison

@dataclass(frozen=True)
class Row:
    """One figure of the comparison: every run of both targets, the band and the verdict."""

    figure: Figure
    reference: tuple[float, ...]
    candidate: tuple[float, ...]
    low: float
    high: float

    @property
    def reference_mean(self) -> float:
        return statistics.fmean(self.reference) if self.reference else math.nan

    @property
    def candidate_mean(self) -> float:
        return statistics.fmean(self.candidate) if self.candidate else math.nan

    @property
    def ratio(self) -> float:
        ref = self.reference_mean
        return self.candidate_mean / ref if ref and math.isfinite(ref) else math.nan

    @property
    def within(self) -> bool:
        return bool(self.candidate) and all(self.low <= v <= self.high for v in self.candidate)


def band(values: Sequence[float], figure: Figure) -> tuple[float, float]:
    """The reference runs' range, widened to +-MIN_RELATIVE_BAND of their mean and to the figure's floor."""
    lo, hi = min(values), max(values)
    mean = statistics.fmean(values)
    half = max(MIN_RELATIVE_BAND * abs(mean), figure.floor)
    return min(lo, mean - half), max(hi, mean + half)


def compare(reference: Sequence[dict[str, float]], candidate: Sequence[dict[str, float]]) -> list[Row]:
    """A Row per figure that the reference runs measured (finite values only)."""
    rows = []
    for figure in FIGURES:
        ref = tuple(r[figure.name] for r in reference if math.isfinite(r.get(figure.name, math.nan)))
        if not ref:
            continue
        cand = tuple(c.get(figure.name, math.nan) for c in candidate)
        lo, hi = band(ref, figure)
        rows.append(Row(figure, ref, cand, lo, hi))
    return rows


def format_table(rows: Sequence[Row], reference_name: str, candidate_name: str) -> str:
    """The comparison as a Markdown table, with the verdict and any known reason per figure."""
    lines = [f"| figure | unit | {reference_name} runs | {candidate_name} | ratio | band | verdict |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        ref = ", ".join(f"{v:.2f}" for v in row.reference)
        cand = ", ".join(f"{v:.2f}" for v in row.candidate)
        verdict = "ok" if row.within else ("known: " + row.figure.known if row.figure.known else "OUT")
        lines.append(f"| {row.figure.name} | {row.figure.unit} | {ref} | {cand} | {row.ratio:.2f} | "
                     f"{row.low:.2f}-{row.high:.2f} | {verdict} |")
    return "\n".join(lines)


def save_runs(path: Path, runs: dict[str, list[dict[str, float]]]) -> None:
    """Every run's figures per target, as JSON (reused with --reference instead of flying again)."""
    path.write_text(json.dumps(runs, indent=1, sort_keys=True))


def load_runs(path: Path) -> dict[str, list[dict[str, float]]]:
    """Figures saved by `save_runs`; ValueError naming the file when it is not such a file."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a fidelity runs file ({exc})") from None
    if not (isinstance(data, dict) and all(isinstance(v, list) for v in data.values())):
        raise ValueError(f"{path}: expected a mapping of target -> list of runs")
    return data

