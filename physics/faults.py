"""Faults of the simulated vehicle: what is broken right now, and how that changes what it does and says.

The built-in vehicle and PX4's external simulator (`px4.external_physics`) hold the same faults. Two ways
into the built-in vehicle, both MAVLink commands handled by `px4.sim.mavlink_commands`:

- `MAV_CMD_INJECT_FAILURE` (420) with PX4's FAILURE_UNIT / FAILURE_TYPE and instance (1-based,
  0 = all), gated by SYS_FAILURE_EN exactly as PX4 gates it (0: DENIED). Supported here:

  ========================  ==============================  ========================================
  unit                      types                           effect
  ========================  ==============================  ========================================
  MOTOR (101)               OFF, OK; instance 1-4 or 0      the motor's output is cut (it stops, as
                                                            PX4's motor failure does)
  GPS (4)                   OFF, STUCK, WRONG, OK           GPS_RAW_INT: no fix / frozen / shifted by
                                                            WRONG_GPS_OFFSET_M; OFF also clears the
                                                            GPS health bit and the fix (pre-arm)
  GYRO, ACCEL, MAG, BARO    OFF, STUCK, GARBAGE, OK         HIGHRES_IMU fields: not updated / frozen
                                                            / random; health bit cleared
  BATTERY (100)             OFF, OK                         battery readings unknown
  MAVLINK_SIGNAL (105)      OFF, OK                         incoming MAVLink ignored (except this
                                                            command, so it can be undone)
  RC_SIGNAL (104)           OFF, OK                         sticks (MANUAL_CONTROL) ignored: RC lost
  ========================  ==============================  ========================================

  Anything else (optical flow, VIO, ...; SLOW, DELAYED, INTERMITTENT) is answered UNSUPPORTED, as
  PX4 answers what no module implements.

- `SIM_FAULT_COMMAND` (MAV_CMD_USER_1, MAVLink's range for private commands; PX4 answers it
  UNSUPPORTED) for what only a simulator can do: param1 = `SimFault`, param2 = instance,
  param3 = severity in [0, 1], param4-6 = a vector (wind N, E, D in m/s). Severity 0 clears.

The flight logic never asks "is there a fault?": the autopilot passes its motor outputs through
`motor_outputs()` and the MAVLink server passes its sensor readings through the `*_reading()`
methods, so a fault-free vehicle runs the same code with identity hooks.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from enum import IntEnum

from pymavlink.dialects.v20 import common as mavlink

SIM_FAULT_COMMAND = mavlink.MAV_CMD_USER_1
MOTORS = 4
# How far a WRONG GPS puts the vehicle (north, east, up metres): far enough to be unmistakable.
WRONG_GPS_OFFSET_M = (50.0, 50.0, 10.0)
# Severity 1 of the simulator faults.
MAX_GYRO_NOISE = 0.5  # rad/s standard deviation
MAX_ACCEL_NOISE = 5.0  # m/s^2 standard deviation
MAX_GUST = 10.0  # m/s standard deviation of each gust axis
GUST_TIME_CONSTANT_S = 2.0

_SENSOR_UNITS = {
    mavlink.FAILURE_UNIT_SENSOR_GYRO: mavlink.MAV_SYS_STATUS_SENSOR_3D_GYRO,
    mavlink.FAILURE_UNIT_SENSOR_ACCEL: mavlink.MAV_SYS_STATUS_SENSOR_3D_ACCEL,
    mavlink.FAILURE_UNIT_SENSOR_MAG: mavlink.MAV_SYS_STATUS_SENSOR_3D_MAG,
    mavlink.FAILURE_UNIT_SENSOR_BARO: mavlink.MAV_SYS_STATUS_SENSOR_ABSOLUTE_PRESSURE,
}
_SENSOR_TYPES = (mavlink.FAILURE_TYPE_OFF, mavlink.FAILURE_TYPE_STUCK, mavlink.FAILURE_TYPE_GARBAGE)
_GPS_TYPES = (mavlink.FAILURE_TYPE_OFF, mavlink.FAILURE_TYPE_STUCK, mavlink.FAILURE_TYPE_WRONG)
# HIGHRES_IMU fields_updated bits of each sensor.
_IMU_BITS = {
    mavlink.FAILURE_UNIT_SENSOR_ACCEL: 0x007,
    mavlink.FAILURE_UNIT_SENSOR_GYRO: 0x038,
    mavlink.FAILURE_UNIT_SENSOR_MAG: 0x1C0,
    mavlink.FAILURE_UNIT_SENSOR_BARO: 0x200 | 0x800,  # absolute pressure, pressure altitude
}

# Failures the built-in vehicle acts out in its own MAVLink server, which PX4 flying this physics as its external
# simulator (px4.external_physics, SITL or a HITL board) never reads: none passes through HIL_SENSOR / HIL_GPS.
# Accepting them there would leave the firmware untouched while the record says faulted.
_NOT_IN_THE_PHYSICS = {
    mavlink.FAILURE_UNIT_SYSTEM_BATTERY: "battery off: PX4 measures its battery itself (HIL carries no battery "
                                         "reading); the physics can sag it instead (type degraded, target battery)",
    mavlink.FAILURE_UNIT_SYSTEM_RC_SIGNAL: "RC signal loss: the receiver is PX4's own, not on the simulator's link",
    mavlink.FAILURE_UNIT_SYSTEM_MAVLINK_SIGNAL: "MAVLink signal loss: the ground station's link is PX4's own, not "
                                                "the simulator's (cut it with a link profile's outage instead)",
}


class SimFault(IntEnum):
    """param1 of SIM_FAULT_COMMAND."""

    THRUST_LOSS = 1  # instance 1-4 (0 = all): the rotor gives (1 - severity) of its thrust
    SENSOR_NOISE = 2  # gyro and accel noise, severity x MAX_*_NOISE standard deviation
    BATTERY_SAG = 3  # readings show severity less charge and a proportional voltage sag
    WIND = 4  # steady wind, param4-6 = north, east, down (m/s)
    GUST = 5  # random gusts, severity x MAX_GUST standard deviation per axis


@dataclass(frozen=True)
class FaultResult:
    """A MAV_RESULT and, when refused, the reason (becomes a STATUSTEXT, as in PX4)."""

    result: int
    reason: str = ""


ACCEPTED = FaultResult(mavlink.MAV_RESULT_ACCEPTED)


def _unsupported(reason: str) -> FaultResult:
    return FaultResult(mavlink.MAV_RESULT_UNSUPPORTED, reason)


@dataclass
class VehicleFaults:
    """The built-in vehicle's current faults. `rotor_efficiency` and `wind_ned` are the physics'
    own lists (`QuadrotorDynamics`), changed in place so the physics sees faults at once."""

    rotor_efficiency: list[float]
    wind_ned: list[float]
    seed: int = 0
    motors_off: set[int] = field(default_factory=set)  # 0-based
    gps: int = mavlink.FAILURE_TYPE_OK
    sensors: dict[int, int] = field(default_factory=dict)  # FAILURE_UNIT -> FAILURE_TYPE
    battery_off: bool = False
    mavlink_lost: bool = False
    rc_lost: bool = False  # the pilot's sticks (MANUAL_CONTROL) stop counting: RC-loss failsafe
    noise: float = 0.0  # severity
    battery_sag: float = 0.0
    steady_wind: tuple[float, float, float] = (0.0, 0.0, 0.0)
    gust: float = 0.0

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._gust_state = [0.0, 0.0, 0.0]
        self._stuck: dict[int, tuple] = {}  # unit -> frozen reading
        self._apply_wind()  # a vehicle made with a steady wind (a trial's perturbation) starts in it

    # ------------------------------------------------------------------ commands
    def inject_failure(self, unit: int, ftype: int, instance: int, enabled: bool) -> FaultResult:
        """MAV_CMD_INJECT_FAILURE; `enabled` is SYS_FAILURE_EN."""
        if not enabled:
            return FaultResult(mavlink.MAV_RESULT_DENIED, "Failure injection disabled (SYS_FAILURE_EN 0)")
        ok = ftype == mavlink.FAILURE_TYPE_OK
        if unit == mavlink.FAILURE_UNIT_SYSTEM_MOTOR:
            if not (ok or ftype == mavlink.FAILURE_TYPE_OFF):
                return _unsupported(f"motor failure type {ftype} not supported (OFF, OK)")
            if not 0 <= instance <= MOTORS:
                return _unsupported(f"no motor {instance} (1-{MOTORS}, 0 = all)")
            motors = range(MOTORS) if instance == 0 else (instance - 1,)
            for m in motors:
                (self.motors_off.discard if ok else self.motors_off.add)(m)
            return ACCEPTED
        if unit == mavlink.FAILURE_UNIT_SENSOR_GPS:
            if not (ok or ftype in _GPS_TYPES):
                return _unsupported(f"GPS failure type {ftype} not supported (OFF, STUCK, WRONG, OK)")
            self.gps = ftype
            self._stuck.pop(unit, None)
            return ACCEPTED
        if unit in _SENSOR_UNITS:
            if not (ok or ftype in _SENSOR_TYPES):
                return _unsupported(f"sensor failure type {ftype} not supported (OFF, STUCK, GARBAGE, OK)")
            if instance > 1:
                return _unsupported(f"no sensor instance {instance} (the vehicle has one of each)")
            if ok:
                self.sensors.pop(unit, None)
            else:
                self.sensors[unit] = ftype
            self._stuck.pop(unit, None)
            return ACCEPTED
        if unit == mavlink.FAILURE_UNIT_SYSTEM_BATTERY:
            if not (ok or ftype == mavlink.FAILURE_TYPE_OFF):
                return _unsupported(f"battery failure type {ftype} not supported (OFF, OK)")
            self.battery_off = not ok
            return ACCEPTED
        if unit == mavlink.FAILURE_UNIT_SYSTEM_MAVLINK_SIGNAL:
            if not (ok or ftype == mavlink.FAILURE_TYPE_OFF):
                return _unsupported(f"MAVLink signal failure type {ftype} not supported (OFF, OK)")
            self.mavlink_lost = not ok
            return ACCEPTED
        if unit == mavlink.FAILURE_UNIT_SYSTEM_RC_SIGNAL:
            if not (ok or ftype == mavlink.FAILURE_TYPE_OFF):
                return _unsupported(f"RC signal failure type {ftype} not supported (OFF, OK)")
            self.rc_lost = not ok
            return ACCEPTED
        return _unsupported(f"failure unit {unit} not simulated by the built-in vehicle")

    def inject_sim(self, kind: int, instance: int, severity: float, vector: tuple[float, float, float],
                   enabled: bool) -> FaultResult:
        """SIM_FAULT_COMMAND; severity 0 clears."""
        if not enabled:
            return FaultResult(mavlink.MAV_RESULT_DENIED, "Failure injection disabled (SYS_FAILURE_EN 0)")
        if not 0.0 <= severity <= 1.0:
            return FaultResult(mavlink.MAV_RESULT_DENIED, f"severity {severity} outside [0, 1]")
        if kind == SimFault.THRUST_LOSS:
            if not 0 <= instance <= MOTORS:
                return _unsupported(f"no motor {instance} (1-{MOTORS}, 0 = all)")
            for m in (range(MOTORS) if instance == 0 else (instance - 1,)):
                self.rotor_efficiency[m] = 1.0 - severity
        elif kind == SimFault.SENSOR_NOISE:
            self.noise = severity
        elif kind == SimFault.BATTERY_SAG:
            self.battery_sag = severity
        elif kind == SimFault.WIND:
            if not all(math.isfinite(v) for v in vector):
                return FaultResult(mavlink.MAV_RESULT_DENIED, "wind needs north, east, down in param4-6")
            self.steady_wind = vector
        elif kind == SimFault.GUST:
            self.gust = severity
        else:
            return _unsupported(f"simulator fault {kind} unknown")
        self._apply_wind()
        return ACCEPTED

    # ------------------------------------------------------------------ hooks
    def motor_outputs(self, u: list[float]) -> list[float]:
        """Motor commands as the motors get them: a failed motor gets nothing."""
        if not self.motors_off:
            return u
        return [0.0 if i in self.motors_off else c for i, c in enumerate(u)]

    def step(self, dt: float) -> None:
        """Advance time-varying faults (gusts) by one physics step."""
        if self.gust <= 0.0:
            return
        # A first-order random process per axis: stationary standard deviation gust x MAX_GUST.
        a = dt / GUST_TIME_CONSTANT_S
        sigma = self.gust * MAX_GUST * math.sqrt(2.0 * a)
        g = self._gust_state
        for i in range(3):
            g[i] += -a * g[i] + sigma * self._rng.gauss(0.0, 1.0)
        self._apply_wind()

    def _apply_wind(self) -> None:
        gust = self._gust_state if self.gust > 0 else (0.0, 0.0, 0.0)
        for i in range(3):
            self.wind_ned[i] = self.steady_wind[i] + gust[i]

    @property
    def gps_fix_lost(self) -> bool:
        return self.gps == mavlink.FAILURE_TYPE_OFF

    def gps_reading(self, lat: float, lon: float, alt: float) -> tuple[float, float, float] | None:
        """What the GPS reports for the true position (degrees, degrees, metres AMSL); None: nothing."""
        if self.gps == mavlink.FAILURE_TYPE_OFF:
            return None
        if self.gps == mavlink.FAILURE_TYPE_STUCK:
            return self._stuck.setdefault(mavlink.FAILURE_UNIT_SENSOR_GPS, (lat, lon, alt))
        if self.gps == mavlink.FAILURE_TYPE_WRONG:
            n, e, up = WRONG_GPS_OFFSET_M
            dlat = math.degrees(n / 6_378_137.0)
            dlon = math.degrees(e / (6_378_137.0 * math.cos(math.radians(lat))))
            return lat + dlat, lon + dlon, alt + up
        return lat, lon, alt

    def imu_reading(self, accel: list[float], gyro: list[float], mag: list[float], pressure: float,
                    fields_updated: int) -> tuple[list[float], list[float], list[float], float, int]:
        """HIGHRES_IMU values (m/s^2, rad/s, gauss, hPa) and fields_updated, after sensor faults and noise."""
        if self.noise > 0:
            accel = [v + self._rng.gauss(0.0, self.noise * MAX_ACCEL_NOISE) for v in accel]
            gyro = [v + self._rng.gauss(0.0, self.noise * MAX_GYRO_NOISE) for v in gyro]
        if not self.sensors:
            return accel, gyro, mag, pressure, fields_updated
        readings = {mavlink.FAILURE_UNIT_SENSOR_ACCEL: accel, mavlink.FAILURE_UNIT_SENSOR_GYRO: gyro,
                    mavlink.FAILURE_UNIT_SENSOR_MAG: mag, mavlink.FAILURE_UNIT_SENSOR_BARO: [pressure]}
        for unit, ftype in self.sensors.items():
            value = readings[unit]
            if ftype == mavlink.FAILURE_TYPE_OFF:
                readings[unit] = [0.0] * len(value)
                fields_updated &= ~_IMU_BITS[unit]
            elif ftype == mavlink.FAILURE_TYPE_STUCK:
                readings[unit] = list(self._stuck.setdefault(unit, tuple(value)))
            else:  # GARBAGE: values no real sensor of this kind would give
                readings[unit] = [self._rng.uniform(-1e4, 1e4) for _ in value]
        return (readings[mavlink.FAILURE_UNIT_SENSOR_ACCEL], readings[mavlink.FAILURE_UNIT_SENSOR_GYRO],
                readings[mavlink.FAILURE_UNIT_SENSOR_MAG], readings[mavlink.FAILURE_UNIT_SENSOR_BARO][0], fields_updated)

    def unhealthy_sensors(self) -> int:
        """SYS_STATUS sensor bits to report unhealthy."""
        bits = 0
        for unit, ftype in self.sensors.items():
            if ftype in (mavlink.FAILURE_TYPE_OFF, mavlink.FAILURE_TYPE_GARBAGE):
                bits |= _SENSOR_UNITS[unit]
        if self.gps == mavlink.FAILURE_TYPE_OFF:
            bits |= mavlink.MAV_SYS_STATUS_SENSOR_GPS
        if self.battery_off:
            bits |= mavlink.MAV_SYS_STATUS_SENSOR_BATTERY
        return bits

    def battery_reading(self, remaining: float, voltage: float) -> tuple[float, float]:
        """(remaining fraction, volts) as reported; (-1, NaN) when the battery monitor is off."""
        if self.battery_off:
            return -1.0, math.nan
        return remaining * (1.0 - self.battery_sag), voltage * (1.0 - 0.25 * self.battery_sag)

    def accepts(self, msg) -> bool:
        """False for incoming messages a lost MAVLink signal swallows (the fault commands still pass)."""
        if not self.mavlink_lost:
            return True
        return msg.get_type() in ("COMMAND_LONG", "COMMAND_INT") and msg.command in (
            mavlink.MAV_CMD_INJECT_FAILURE, SIM_FAULT_COMMAND)


def failure_refusal(unit: int, failure_type: int, instance: int = 0) -> str:
    """Why PX4 on the harness's physics as its external simulator would not read a PX4 failure made there ("" when it
    would): asked by that simulator, and of a fault schedule before anything flies."""
    if failure_type != mavlink.FAILURE_TYPE_OK and unit in _NOT_IN_THE_PHYSICS:
        return _NOT_IN_THE_PHYSICS[unit]
    # The built-in vehicle's fault table decides the rest (units, types, instances); a scratch one is never flown.
    answer = VehicleFaults([1.0] * MOTORS, [0.0] * 3).inject_failure(unit, failure_type, instance, enabled=True)
    return "" if answer.result == mavlink.MAV_RESULT_ACCEPTED else answer.reason
