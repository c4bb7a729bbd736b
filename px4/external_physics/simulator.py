"""The harness's vehicle as PX4's external simulator: physics, faults and sensors, one frame at a time.

`HarnessSimulator` has no I/O. Each `frame()` advances the rigid body (`physics.dynamics`) by one
IMU period with the motor commands in force and returns the bytes PX4 gets for the new instant
(HIL_SENSOR, and HIL_GPS / HIL_STATE_QUATERNION when due); `apply()` takes PX4's answer
(HIL_ACTUATOR_CONTROLS) as the commands for the next frame. `px4.external_physics.lockstep` moves
those bytes over a socket or a serial line.

Faults act on the physics and the sensors, where PX4 sees them only as a real vehicle would
(through what its sensors read and how the vehicle moves). They are the built-in vehicle's
(`physics.faults.VehicleFaults`): motor off, thrust loss, sensor off / stuck / garbage / noise,
GPS off / stuck / wrong, wind and gusts; a battery sag lowers every rotor's thrust as a sagging
voltage does (thrust goes with the square of the voltage), since PX4 measures its battery itself
(its battery simulator in SITL, its own ADC on a board) and HIL has no battery message.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pymavlink.dialects.v20 import common as mavlink

from missions.geo import GeoOrigin
from physics.dynamics import (
    FORCE,
    GROUND,
    MAX_DT,
    OMEGA,
    POS,
    VEL,
    Q,
    QuadrotorDynamics,
    euler_of,
    rotor_geometry,
)
from physics.faults import MAX_GUST, VehicleFaults, failure_refusal
from physics.sensor_suite import DEFAULT_HOME, SensorSuite, pressure_hpa
from profiles.library import load_vehicle_profile
from profiles.perturbation import Perturbation
from profiles.sensors import SensorProfile
from profiles.vehicle import VehicleProfile
from px4.external_physics.hil_messages import (
    ACCEL_BITS,
    BARO_BITS,
    DIFF_PRESSURE_BITS,
    GYRO_BITS,
    MAG_BITS,
    MOTORS,
    ActuatorControls,
    HilEncoder,
)
from px4.external_physics.records import RecordBuffer

# Voltage fraction lost at battery-sag severity 1 (the built-in vehicle's battery readings sag the same).
SAG_AT_FULL_SEVERITY = 0.25

TRUTH_TABLE = "sim_truth"
SENSOR_TABLE = "sim_sensors"
GPS_TABLE = "sim_gps"


@dataclass(frozen=True)
class SimulatorOptions:
    """What the harness simulates for PX4, and how fast.

    ``sensors`` replaces the profile's sensor figures when given.
    ``speed`` None runs in lockstep as fast as PX4 and the physics can go together; a number also
    paces the pair to the wall clock times that factor (never faster; slower when the machine
    cannot keep up). A board in HITL has no lockstep and runs at ``speed`` (normally 1).
    ``ground_truth_rate_hz`` > 0 also sends HIL_STATE_QUATERNION, which PX4 logs as its
    ground-truth topics. ``motor_channels`` are the HIL_ACTUATOR_CONTROLS outputs of motors 1-4.
    ``record_rate_hz`` is how often the truth and the IMU readings sent are recorded (every GPS fix
    is recorded).
    """

    profile: str | VehicleProfile = "default"
    sensors: SensorProfile | None = None  # None: the profile's
    home: GeoOrigin = DEFAULT_HOME
    yaw_deg: float = 0.0
    speed: float | None = None
    ground_truth_rate_hz: float = 0.0
    motor_channels: tuple[int, ...] = (0, 1, 2, 3)
    record_rate_hz: float = 50.0
    seed: int = 0
    # A campaign repeat's wind, gusts and heading offset (its sensor noise is `seed`'s; PX4 puts its origin
    # where the vehicle starts, so no spawn offset).
    perturbation: Perturbation = Perturbation()
    reply_timeout_s: float = 0.5  # wall seconds a lockstep frame waits for PX4's actuator reply

    def __post_init__(self) -> None:
        if self.speed is not None and not (math.isfinite(self.speed) and self.speed > 0):
            raise ValueError(f"speed: expected None (as fast as possible) or a factor > 0, got {self.speed!r}")
        if len(self.motor_channels) != MOTORS or not all(isinstance(c, int) and 0 <= c < 16
                                                         for c in self.motor_channels):
            raise ValueError(f"motor_channels: expected {MOTORS} HIL_ACTUATOR_CONTROLS channels 0-15, "
                             f"got {self.motor_channels!r}")
        for name in ("ground_truth_rate_hz", "record_rate_hz"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name}: expected a rate in Hz >= 0, got {value!r}")
        if not (math.isfinite(self.reply_timeout_s) and self.reply_timeout_s > 0):
            raise ValueError(f"reply_timeout_s: expected seconds > 0, got {self.reply_timeout_s!r}")
        if not 0.0 <= self.perturbation.gust_m_s <= MAX_GUST:
            raise ValueError(f"gusts: expected 0 to {MAX_GUST:g} m/s, got {self.perturbation.gust_m_s!r}")

    def vehicle_profile(self) -> VehicleProfile:
        return self.profile if isinstance(self.profile, VehicleProfile) else load_vehicle_profile(self.profile)


def px4_params_for(profile: VehicleProfile) -> dict[str, float]:
    """PX4 parameters that make its control allocation and hover thrust match the profile's rigid
    body: rotor positions and torque coefficients (CA_ROTORn_*, in PX4's motor order) and the
    normalized thrust that holds the weight (MPC_THR_HOVER, which PX4 then keeps estimating)."""
    phys = profile.physical()
    positions, spins = rotor_geometry(phys)
    params: dict[str, float] = {"CA_ROTOR_COUNT": float(MOTORS), "MPC_THR_HOVER": round(phys.hover_thrust, 4)}
    torque_per_thrust = phys.c_m / phys.c_t
    for i, ((x, y), spin) in enumerate(zip(positions, spins)):
        params[f"CA_ROTOR{i}_PX"] = round(x, 4)
        params[f"CA_ROTOR{i}_PY"] = round(y, 4)
        # PX4's KM: reaction torque per unit thrust, positive for a counter-clockwise rotor.
        params[f"CA_ROTOR{i}_KM"] = round(spin * torque_per_thrust, 4)
    return params


class HarnessSimulator:
    """Physics, faults and sensors of one vehicle, stepped a frame (one IMU period) at a time.

    Ground truth is read from ``dyn`` (positions NED from the take-off point, SI units);
    ``time_us`` is the simulated clock PX4 runs on in lockstep.
    """

    def __init__(self, options: SimulatorOptions):
        self.options = options
        self.profile = options.vehicle_profile()
        phys = self.profile.physical()
        sensors = options.sensors or self.profile.sensors
        rate = sensors.imu_rate_hz
        self.frame_us = int(round(1e6 / rate))
        self._substeps = max(1, math.ceil(self.frame_us * 1e-6 / MAX_DT - 1e-9))
        self.dyn = QuadrotorDynamics(phys, self.frame_us * 1e-6 / self._substeps)
        perturbation = options.perturbation
        self.dyn.reset(yaw=math.radians(options.yaw_deg + perturbation.heading_deg))
        self.faults = VehicleFaults(self.dyn.rotor_efficiency, self.dyn.wind_ned, seed=options.seed,
                                    steady_wind=perturbation.wind_ned, gust=perturbation.gust_m_s / MAX_GUST)
        self.sensors = SensorSuite(sensors, options.home, seed=options.seed + 1)
        self.home = options.home
        self.time_us = 0
        self.commands = [0.0] * MOTORS  # what PX4 asked of each motor
        self.armed = False
        self.last_controls: ActuatorControls | None = None
        self.records = RecordBuffer()
        self._encoder = HilEncoder()
        self._truth_every = _every(options.record_rate_hz, rate)
        self._state_every = _every(options.ground_truth_rate_hz, rate)
        self._frames = 0
        self._last_mag = [0.0, 0.0, 0.0]
        self._last_pressure = pressure_hpa(self.home.alt_m)

    # ------------------------------------------------------------------ PX4's side of the exchange
    def apply(self, controls: ActuatorControls) -> None:
        """PX4's outputs (HIL_ACTUATOR_CONTROLS) become the motor commands from the next frame on."""
        self.last_controls = controls
        self.armed = controls.armed
        self.commands = controls.motors(self.options.motor_channels)

    def motor_inputs(self) -> list[float]:
        """What the rotors get: PX4's commands after motor faults and battery sag."""
        u = self.faults.motor_outputs(self.commands)
        sag = self.faults.battery_sag
        if sag > 0.0:
            scale = (1.0 - SAG_AT_FULL_SEVERITY * sag) ** 2
            u = [c * scale for c in u]
        return u

    def frame(self) -> bytes:
        """Advance one IMU period and return what PX4 gets for the new instant."""
        u = self.motor_inputs()
        dyn, faults = self.dyn, self.faults
        for _ in range(self._substeps):
            faults.step(dyn.dt)
            dyn.step(u)
        self.time_us += self.frame_us
        frames = self._frames
        self._frames = frames + 1
        record = self._truth_every and frames % self._truth_every == 0
        out = self._sensor_message(record)
        if self.sensors.gps_due():
            out += self._gps_message()
        if self._state_every and frames % self._state_every == 0:
            out += self._state_message()
        if record:
            self.records.add(TRUTH_TABLE, self.truth_row(u))
        return out

    # ------------------------------------------------------------------ messages
    def _sensor_message(self, record: bool) -> bytes:
        s = self.sensors.imu(self.dyn)
        fields = ACCEL_BITS | GYRO_BITS
        if s.mag is not None:
            fields |= MAG_BITS
            self._last_mag = s.mag
        if s.pressure_hpa is not None:
            fields |= BARO_BITS
            self._last_pressure = s.pressure_hpa
        if s.diff_pressure_hpa is not None:
            fields |= DIFF_PRESSURE_BITS
            diff = s.diff_pressure_hpa
        else:
            diff = 0.0
        # A frozen or silenced sensor keeps the value it had when the fault began: the last real one.
        accel, gyro, mag, pressure, fields = self.faults.imu_reading(s.accel, s.gyro, self._last_mag,
                                                                     self._last_pressure, fields)
        if record:
            self.records.add(SENSOR_TABLE, {
                "time_us": self.time_us, "fields_updated": fields,
                "xacc": accel[0], "yacc": accel[1], "zacc": accel[2], "xgyro": gyro[0], "ygyro": gyro[1],
                "zgyro": gyro[2], "xmag": mag[0], "ymag": mag[1], "zmag": mag[2], "abs_pressure_hpa": pressure,
                "diff_pressure_hpa": diff})
        return self._encoder.hil_sensor(self.time_us, accel, gyro, mag, pressure, diff, s.pressure_alt_m,
                                        s.temperature_c, fields)

    def _gps_message(self) -> bytes:
        fix = self.sensors.gps(self.dyn)
        reading = self.faults.gps_reading(fix.lat_deg, fix.lon_deg, fix.alt_m)
        if reading is None:  # the receiver is gone: nothing arrives, as with PX4's own GPS "off"
            return b""
        lat, lon, alt = reading
        self.records.add(GPS_TABLE, {"time_us": self.time_us, "lat_deg": lat, "lon_deg": lon, "alt_m": alt,
                                     "vn": fix.vel_ned[0], "ve": fix.vel_ned[1], "vd": fix.vel_ned[2],
                                     "eph_m": fix.eph_m, "epv_m": fix.epv_m, "satellites": fix.satellites})
        return self._encoder.hil_gps(self.time_us, lat, lon, alt, fix.vel_ned, fix.eph_m, fix.epv_m, fix.satellites)

    def _state_message(self) -> bytes:
        d = self.dyn
        lat, lon, alt = self.home.to_global(*d.pos)
        return self._encoder.hil_state_quaternion(self.time_us, d.q, d.omega, lat, lon, alt, d.vel, d.specific_force)

    # ------------------------------------------------------------------ truth
    @property
    def time_s(self) -> float:
        return self.time_us * 1e-6

    def truth_row(self, motor_inputs: list[float] | None = None) -> dict[str, Any]:
        """The true state now, as one row of the truth table (positions NED from the take-off point)."""
        d = self.dyn
        u = motor_inputs if motor_inputs is not None else self.motor_inputs()
        # The state read once (each of the body's properties copies it out of its array afresh): at the
        # benchmark's 250 Hz a row is made every frame.
        s = d.state.tolist()
        roll, pitch, yaw = euler_of(s[Q], s[Q + 1], s[Q + 2], s[Q + 3])
        wind = d.wind_ned.tolist()
        c = self.commands
        # (the MOTORS motors' columns written out: formatting their names cost a quarter of the row)
        return {
            "time_us": self.time_us, "north": s[POS], "east": s[POS + 1], "down": s[POS + 2],
            "vn": s[VEL], "ve": s[VEL + 1], "vd": s[VEL + 2], "qw": s[Q], "qx": s[Q + 1], "qy": s[Q + 2],
            "qz": s[Q + 3], "roll": roll, "pitch": pitch, "yaw": yaw, "p": s[OMEGA], "q": s[OMEGA + 1],
            "r": s[OMEGA + 2], "ax_body": s[FORCE], "ay_body": s[FORCE + 1], "az_body": s[FORCE + 2],
            "wind_n": wind[0], "wind_e": wind[1], "wind_d": wind[2], "armed": self.armed, "on_ground": s[GROUND] != 0.0,
            "cmd1": c[0], "motor1": u[0], "cmd2": c[1], "motor2": u[1], "cmd3": c[2], "motor3": u[2],
            "cmd4": c[3], "motor4": u[3]}

    # ------------------------------------------------------------------ faults
    def inject_failure(self, unit: int, failure_type: int, instance: int = 0) -> None:
        """A PX4 failure (MAV_CMD_INJECT_FAILURE's FAILURE_UNIT / FAILURE_TYPE, instance 1-based, 0 =
        all) made real in the physics and sensors; ValueError with the reason when it cannot be."""
        refused = failure_refusal(unit, failure_type, instance)
        if refused:
            raise ValueError(refused)
        _accepted_or_raise(self.faults.inject_failure(unit, failure_type, instance, enabled=True))

    def inject_sim(self, kind: int, instance: int = 0, severity: float = 1.0,
                   vector: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> None:
        """A simulator fault (`physics.faults.SimFault`: thrust loss, sensor noise, battery sag, wind,
        gust); severity 0 clears it. ValueError with the reason when it cannot be applied."""
        _accepted_or_raise(self.faults.inject_sim(kind, instance, severity, vector, enabled=True))


def _every(rate_hz: float, frame_rate_hz: float) -> int:
    """Frames between two events at ``rate_hz`` (0: never)."""
    return 0 if rate_hz <= 0 else max(1, round(frame_rate_hz / rate_hz))


def _accepted_or_raise(result) -> None:
    if result.result != mavlink.MAV_RESULT_ACCEPTED:
        raise ValueError(result.reason or f"fault refused (MAV_RESULT {result.result})")
