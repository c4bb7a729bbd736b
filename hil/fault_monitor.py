"""Inject a fault and check in telemetry that it really happened.

An accepted MAV_CMD_INJECT_FAILURE proves nothing: PX4 accepts commands no module acts on. So
after each injection the monitor watches the vehicle's own MAVLink telemetry for the effect the
fault must have, and records one of three verdicts:

- "injected and observed": accepted, and the effect was seen (the evidence is recorded);
- "injected, not observed": accepted, but nothing showed within the timeout;
- "refused": the flight controller (or MAVSDK) did not take it.

The effect looked for, per fault type (plus, for every type, the vehicle declaring a failsafe:
HEARTBEAT system_status CRITICAL or worse):

- motor off: the motor's SERVO_OUTPUT_RAW channel drops to its stopped value, or the vehicle tilts
  or sinks (ATTITUDE, LOCAL_POSITION_NED);
- motor degraded, wind steady/gust: the vehicle is pushed off its hover (tilt or position change),
  or the controller visibly compensates (that motor's output rises against the others);
- gps off: GPS_RAW_INT fix_type below 3D; wrong: GPS_RAW_INT disagrees with the estimate
  (GLOBAL_POSITION_INT) by more than 5 m; stuck: GPS_RAW_INT frozen while the estimate moves;
- gyro/accel/mag/baro: HIGHRES_IMU fields not updated, frozen or implausible, or the sensor marked
  unhealthy in SYS_STATUS; gyro/accel degraded (noise): gyro scatter well above normal;
- battery off: battery remaining unknown; battery degraded (sag): remaining drops.

Telemetry is the flight controller's own MAVLink messages (`Vehicle.messages`), so the check is the
same on every MAVLink target. Timeouts and delays are vehicle time.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import statistics
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pymavlink.dialects.v20 import common as mavlink

from bridges.failure import FailureInjector, InjectionResult
from missions.faults import FaultSpec
from records.clock import mark, now_ns, seconds_since

OBSERVED = "injected and observed"
NOT_OBSERVED = "injected, not observed"
REFUSED = "refused"
WATCHED = ("HEARTBEAT", "SERVO_OUTPUT_RAW", "ATTITUDE", "LOCAL_POSITION_NED", "GPS_RAW_INT", "GLOBAL_POSITION_INT",
           "HIGHRES_IMU", "SYS_STATUS", "BATTERY_STATUS")
STOPPED_PWM = 1000  # what a stopped motor's channel shows (the built-in vehicle and PX4's PWM_MAIN_MIN)
TILT_RAD = math.radians(10.0)
SINK_M = 1.0
DISPLACEMENT_M = 0.5
GPS_DISAGREE_M = 5.0
_SENSOR_BITS = {"gyro": (0x038, mavlink.MAV_SYS_STATUS_SENSOR_3D_GYRO, ("xgyro", "ygyro", "zgyro")),
                "accel": (0x007, mavlink.MAV_SYS_STATUS_SENSOR_3D_ACCEL, ("xacc", "yacc", "zacc")),
                "mag": (0x1C0, mavlink.MAV_SYS_STATUS_SENSOR_3D_MAG, ("xmag", "ymag", "zmag")),
                "baro": (0x200, mavlink.MAV_SYS_STATUS_SENSOR_ABSOLUTE_PRESSURE, ("abs_pressure",))}
Fields = dict[str, Any]


@dataclass(frozen=True)
class FaultVerdict:
    """The outcome of one injection."""

    fault: FaultSpec
    verdict: str  # OBSERVED | NOT_OBSERVED | REFUSED
    result: str  # the flight controller's answer (InjectionResult.result)
    evidence: str  # what was seen, or why it was refused
    observed_after_s: float = math.nan  # vehicle seconds from the accepted command to the evidence

    def as_row(self) -> dict[str, Any]:
        return {"fault": self.fault.describe(), "type": self.fault.type, "target": self.fault.target,
                "severity": self.fault.severity, "verdict": self.verdict, "result": self.result,
                "evidence": self.evidence, "observed_after_s": self.observed_after_s}


def _distance_m(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Metres between two nearby points (equirectangular; fine for the metres-to-km scale here)."""
    k = 6_378_137.0 * math.pi / 180.0
    dn = (lat2 - lat1) * k
    de = (lon2 - lon1) * k * math.cos(math.radians(lat1))
    return math.hypot(dn, de)


class FaultMonitor:
    """Watches a MAVLink vehicle's telemetry; `inject_and_verify()` injects one fault and judges it.

    Use as ``async with FaultMonitor(vehicle, injector, recorder) as monitor``; the injector must be
    entered already (it owns SYS_FAILURE_EN). Each verdict becomes a "fault_verdict" event and a
    row of the "faults" table when a recorder is given.
    """

    def __init__(self, vehicle, injector: FailureInjector, recorder=None, history: int = 200):
        self.vehicle = vehicle
        self.injector = injector
        self.recorder = recorder
        self.latest: dict[str, Fields] = {}
        self.history: dict[str, deque[tuple[float, Fields]]] = {name: deque(maxlen=history) for name in WATCHED}
        self._changed = asyncio.Event()
        self._tasks: list[asyncio.Task] = []

    async def __aenter__(self) -> FaultMonitor:
        for name in WATCHED:
            self._tasks.append(asyncio.create_task(self._follow(name)))
        return self

    async def __aexit__(self, *exc) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _follow(self, name: str) -> None:
        async for fields in self.vehicle.messages(name):
            self.latest[name] = fields
            self.history[name].append((time.monotonic(), fields))
            self._changed.set()

    async def wait_for_telemetry(self, names: tuple[str, ...] = WATCHED, timeout: float = 5.0) -> None:
        """Until every named message has been seen once (a baseline needs them); `timeout` in vehicle seconds."""
        async with self.vehicle.deadline(timeout):
            while not all(n in self.latest for n in names):
                self._changed.clear()
                await self._changed.wait()

    async def inject_and_verify(self, spec: FaultSpec, timeout: float = 5.0) -> FaultVerdict:
        """Inject `spec`, then watch up to `timeout` vehicle seconds for its effect."""
        baseline = {name: dict(fields) for name, fields in self.latest.items()}
        answer: InjectionResult = await self.injector.inject(spec)
        if not answer.accepted:
            return self._record(FaultVerdict(spec, REFUSED, answer.result, answer.reason))
        start = time.monotonic()
        # The delay is measured on the vehicle's clock: a simulator a loaded machine keeps below its speed factor
        # would otherwise look slow to react.
        accepted = mark(self.vehicle.clock_s)
        check = _check_for(spec, baseline)
        with contextlib.suppress(TimeoutError):
            async with self.vehicle.deadline(timeout):
                while True:
                    self._changed.clear()
                    evidence = check(self, start) or _failsafe(self.latest, baseline)
                    if evidence:
                        after_s = seconds_since(accepted.wall_ns, accepted.vehicle_s, now_ns(),
                                                self.vehicle.clock_s, self.vehicle.speed_factor)
                        return self._record(FaultVerdict(spec, OBSERVED, answer.result, evidence, after_s))
                    await self._changed.wait()
        return self._record(FaultVerdict(spec, NOT_OBSERVED, answer.result,
                                         f"no effect in telemetry within {timeout:g} s"))

    def since(self, name: str, start: float) -> list[Fields]:
        """The `name` messages received after `start` (monotonic s: the order they arrived in)."""
        return [fields for t, fields in self.history[name] if t >= start]

    def _record(self, verdict: FaultVerdict) -> FaultVerdict:
        if self.recorder is not None:
            row = verdict.as_row()
            self.recorder.event("fault_verdict", **row)
            self.recorder.append("faults", row)
        return verdict


# ---------------------------------------------------------------------- checks per fault type
Check = Callable[[FaultMonitor, float], str | None]


def _failsafe(latest: dict[str, Fields], baseline: dict[str, Fields]) -> str | None:
    status = latest.get("HEARTBEAT", {}).get("system_status", 0)
    before = baseline.get("HEARTBEAT", {}).get("system_status", 0)
    if status >= mavlink.MAV_STATE_CRITICAL and before < mavlink.MAV_STATE_CRITICAL:
        return f"HEARTBEAT system_status {status} (failsafe)"
    return None


def _disturbed(mon: FaultMonitor, start: float, base: dict[str, Fields], sink_only: bool = False) -> str | None:
    """The vehicle tilted, sank or was pushed away from where it was at injection."""
    for att in mon.since("ATTITUDE", start):
        tilt = math.hypot(att["roll"], att["pitch"])
        tilt0 = math.hypot(base.get("ATTITUDE", {}).get("roll", 0.0), base.get("ATTITUDE", {}).get("pitch", 0.0))
        if tilt - tilt0 > TILT_RAD:
            return f"ATTITUDE tilt {math.degrees(tilt):.1f} deg (was {math.degrees(tilt0):.1f})"
    p0 = base.get("LOCAL_POSITION_NED")
    if p0 is not None:
        for p in mon.since("LOCAL_POSITION_NED", start):
            if p["z"] - p0["z"] > SINK_M:
                return f"LOCAL_POSITION_NED sank {p['z'] - p0['z']:.2f} m"
            moved = math.dist((p["x"], p["y"], p["z"]), (p0["x"], p0["y"], p0["z"]))
            if not sink_only and moved > DISPLACEMENT_M:
                return f"LOCAL_POSITION_NED moved {moved:.2f} m"
    return None


def _servo(fields: Fields, motor: int) -> int:
    return int(fields[f"servo{motor}_raw"])


def _check_for(spec: FaultSpec, base: dict[str, Fields]) -> Check:
    kind, target = spec.type, spec.target
    motors = [spec.instance] if spec.instance else [1, 2, 3, 4]

    def motor_off(mon: FaultMonitor, start: float) -> str | None:
        for out in mon.since("SERVO_OUTPUT_RAW", start):
            stopped = [m for m in motors if _servo(out, m) <= STOPPED_PWM]
            if stopped:
                before = base.get("SERVO_OUTPUT_RAW")
                was = f" (was {_servo(before, stopped[0])})" if before else ""
                return f"SERVO_OUTPUT_RAW servo{stopped[0]}_raw {_servo(out, stopped[0])}{was}"
        return _disturbed(mon, start, base, sink_only=True)

    def pushed(mon: FaultMonitor, start: float) -> str | None:
        if kind == "degraded" and "SERVO_OUTPUT_RAW" in base:
            # The controller makes up for a weak rotor by driving it harder than the others.
            def lead(out: Fields) -> float:
                m = motors[0]
                others = [_servo(out, k) for k in (1, 2, 3, 4) if k != m]
                return _servo(out, m) - statistics.mean(others)
            lead0 = lead(base["SERVO_OUTPUT_RAW"])
            for out in mon.since("SERVO_OUTPUT_RAW", start):
                if lead(out) - lead0 > 30:
                    return f"SERVO_OUTPUT_RAW servo{motors[0]}_raw {lead(out):+.0f} us against the others (was {lead0:+.0f})"
        return _disturbed(mon, start, base)

    def gps(mon: FaultMonitor, start: float) -> str | None:
        raws = mon.since("GPS_RAW_INT", start)
        if kind == "off":
            for raw in raws:
                if raw["fix_type"] < mavlink.GPS_FIX_TYPE_3D_FIX:
                    return f"GPS_RAW_INT fix_type {raw['fix_type']} (was {base.get('GPS_RAW_INT', {}).get('fix_type')})"
            return None
        est = mon.latest.get("GLOBAL_POSITION_INT")
        if kind == "wrong" and est is not None:
            for raw in raws:
                off = _distance_m(raw["lat"] / 1e7, raw["lon"] / 1e7, est["lat"] / 1e7, est["lon"] / 1e7)
                if off > GPS_DISAGREE_M:
                    return f"GPS_RAW_INT {off:.1f} m from the estimated position"
        if kind == "stuck" and len(raws) >= 2 and est is not None:
            first = raws[0]
            frozen = all((r["lat"], r["lon"], r["alt"]) == (first["lat"], first["lon"], first["alt"]) for r in raws)
            moved = _distance_m(first["lat"] / 1e7, first["lon"] / 1e7, est["lat"] / 1e7, est["lon"] / 1e7)
            if frozen and moved > 1.0:
                return f"GPS_RAW_INT frozen for {len(raws)} messages while the estimate moved {moved:.1f} m"
        return None

    def sensor(mon: FaultMonitor, start: float) -> str | None:
        unit, ftype = target, kind
        bits, health_bit, names = _SENSOR_BITS[unit]
        for status in mon.since("SYS_STATUS", start):
            if not status["onboard_control_sensors_health"] & health_bit:
                return f"SYS_STATUS: {unit} unhealthy"
        imus = mon.since("HIGHRES_IMU", start)
        for imu in imus:
            if not imu["fields_updated"] & bits:
                return f"HIGHRES_IMU: {unit} fields not updated"
            if any(abs(imu[n]) > 1000.0 for n in names if n != "abs_pressure") or not 100.0 < imu.get(
                    "abs_pressure", 1000.0) < 1100.0:
                return f"HIGHRES_IMU: implausible {unit} values"
        if ftype == "stuck" and len(imus) >= 10 and all(
                tuple(i[n] for n in names) == tuple(imus[0][n] for n in names) for i in imus):
            return f"HIGHRES_IMU: {unit} frozen for {len(imus)} messages"
        return None

    def noise(mon: FaultMonitor, start: float) -> str | None:
        imus = mon.since("HIGHRES_IMU", start)
        if len(imus) < 20:
            return None
        scatter = statistics.pstdev(i["xgyro"] for i in imus)
        return f"HIGHRES_IMU gyro scatter {scatter:.3f} rad/s" if scatter > 0.05 * spec.severity else None

    def battery(mon: FaultMonitor, start: float) -> str | None:
        before = base.get("BATTERY_STATUS", {}).get("battery_remaining", 100)
        for msg in mon.since("SYS_STATUS", start) + mon.since("BATTERY_STATUS", start):
            remaining = msg["battery_remaining"]
            if kind == "off" and remaining == -1:
                return "battery remaining reported unknown (-1)"
            if kind == "degraded" and 0 <= remaining < before - 50 * spec.severity:
                return f"battery remaining {remaining} % (was {before} %)"
        return None

    motor = target in ("motor1", "motor2", "motor3", "motor4", "motors")
    if motor and kind == "off":
        return motor_off
    if (motor and kind == "degraded") or target == "wind":
        return pushed
    if target == "gps":
        return gps
    if target in ("gyro", "accel") and kind == "degraded":
        return noise
    if target in _SENSOR_BITS:
        return sensor
    if target == "battery":
        return battery
    return lambda mon, start: None  # only a failsafe can show it (e.g. a lost MAVLink or RC signal)
