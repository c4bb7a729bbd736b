"""Measure, from PX4's own flight log, whether PX4 SITL SIH flies a vehicle profile's capability.

A profile promises three numbers (FLYINGTRUST, Sec. III-A): the climb acceleration at full
collective thrust from hover, ``(TWR_max - 1) g``, and the largest angular accelerations about
roll/pitch (``alpha_xy_max``) and yaw (``alpha_z_max``), reached with the rotors of one side (one
spin direction) at full thrust and the others stopped (Eqs. 4-5). This module reads a ULog of a
flight that excites the three (see :mod:`bridges.capability_flight`) and measures what SIH
actually did with the motor outputs PX4 commanded.

Why the measurement is an identification and not a peak read off a plot. Three things stand
between "full command" and what a flight shows, all of them measured on PX4 v1.14.0 and v1.16.1:

* PX4 never gives all four motors 1.0 while it needs any torque: with MC_AIRMODE 0 the control
  allocator (control_allocator, ControlAllocationSequentialDesaturation::mixAirmodeDisabled)
  lowers the collective to keep attitude authority, and SIH's gyro noise (sih.cpp,
  reconstruct_sensors_signals: 0.14 rad/s on x) keeps the rate loop busy. At a full collective
  setpoint the motors average about 0.90-0.96, so the directly observed climb acceleration falls
  short of ``(TWR - 1) g`` by 0.4-0.8 m/s^2 on a TWR 1.4 vehicle, whatever the profile;
* SIH's linear drag ``-SIH_KDV v`` eats the acceleration as the climb speed builds;
* SIH clamps body rates at +-6 pi rad/s (sih.cpp, equations_of_motion), which a 1000 rad/s^2
  vehicle reaches within about 30 ms, before its motors (30 ms lag) have spun up: its peak
  angular acceleration can never be observed directly.

SIH's force and torque are *linear* in its lagged motor outputs (sih.cpp,
generate_force_and_torques; read_motors applies the first-order lag SIH_T_TAU with explicit Euler
at each simulator step, to the output the controllers published at the step before). So the
capability is the gain of that linear map, scaled to the full command, and the log has everything
to measure it: ``actuator_motors`` at every control step (the allocator's outputs, which
pwm_out_sim passes to SIH as 1000 + 1000 u microseconds, i.e. u to 1e-3), and SIH's ground truth
(``vehicle_local_position_groundtruth``, ``vehicle_attitude_groundtruth``,
``vehicle_angular_velocity_groundtruth``). The motor outputs are
passed through SIH's own lag, and then

* climb: ``-a_z + g - (KDV/m) v_z = TWR g * mean(u) * cos(tilt)`` for every ground-truth sample
  taken level while PX4 commanded full collective thrust (vehicle_thrust_setpoint at -1) and the
  motors had settled (4 time constants), least squares for ``TWR``; reported as ``(TWR - 1) g``;
* angular: between consecutive ground-truth rate samples,
  ``delta w = alpha * integral(D dt) + integral(-KDW/I w - w x I w / I) dt``, where ``D`` is the
  normalized rotor differential (1 = FLYINGTRUST's saturating pattern), least squares for
  ``alpha``; intervals touching SIH's rate clamp or the ground are left out.

SIH_KDV, SIH_KDW, SIH_I*, SIH_MASS and SIH_T_TAU are read from the log's parameters: the
corrections use what PX4 ran with. ``excitation`` says how much of the full command the flight
reached (mean motor output at full collective; largest ``|D|``), ``observed`` what the flight
showed directly (drag-corrected climb acceleration at PX4's full collective; the largest
rotor-produced angular acceleration). An agile profile is identified from a fraction of its
torque: with the rate gains scaled to keep PX4's default bandwidth (px4/sih.py), the ~25 rad/s
rate error of the capability flight's attitude reversals asks a 1467 rad/s^2 vehicle for about
11 % of its differential, and SIH's clamp forbids a much larger error; the identification holds
all the same because SIH is linear in the outputs PX4 sent. Gravity: ``g`` = 9.80665 m/s^2 on both sides; v1.16's SIH
uses the Somigliana gravity at SIH_LOC_LAT0 (9.808 m/s^2), a 0.02 % difference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pyulog import ULog

from profiles.airframe import GRAVITY
from profiles.vehicle import VehicleProfile
from px4.ulog import read_topic

# SDLOG_PROFILE bit 0 (default topics, which include SIH's ground truth in SITL) and bit 4 (high
# rate: actuator_motors and vehicle_thrust_setpoint at every control step); logger/logged_topics.cpp.
LOG_PARAMS = {"SDLOG_PROFILE": 17}
# The identification's own error is the output quantization (1e-3 of full command, averaged over
# hundreds of steps), float32 parameters, SIH's Somigliana gravity (0.02 %) and the logger's gaps
# (bridged, see _lagged_motors); measured: within 0.4 % on both releases. 3 % leaves a wide margin
# and still catches any mapping slip worth a name (the bound is 10 %).
TOLERANCE = 0.03
# Below this fraction of the full command the flight says too little about the capability. SIH is
# linear in the outputs, so what matters is excitation against the fit's residuals: 5 % of a
# 1400 rad/s^2 vehicle's torque is 70 rad/s^2, against residuals under 1 rad/s^2.
MIN_EXCITATION = 0.05
RATE_CLAMP = 6.0 * math.pi  # rad/s, sih.cpp equations_of_motion
CLAMP_MARGIN = 0.95
SETTLE_TAUS = 4.0  # motor time constants after the full-collective setpoint before a sample counts
AIRBORNE_M = 1.0  # ground truth below this height is near SIH's ground contact
FULL_COLLECTIVE = 0.999
LEVEL_COSINE = math.cos(math.radians(10.0))  # a climb sample is one flown level (tilt under 10 deg)
GAP_MEMORY_TAUS = 2.0  # after a logger gap, the reconstructed lag is left out this long
FULL_RATE_S = 0.006  # actuator_motors must be logged at every control step (4 ms in SITL)
TOPICS = ("actuator_motors", "vehicle_thrust_setpoint", "vehicle_local_position_groundtruth",
          "vehicle_attitude_groundtruth", "vehicle_angular_velocity_groundtruth")
SIH_PARAMS = ("SIH_MASS", "SIH_IXX", "SIH_IYY", "SIH_IZZ", "SIH_KDV", "SIH_KDW", "SIH_T_TAU")


class MeasurementError(RuntimeError):
    """The log cannot answer: a topic or parameter is missing, or no sample is usable for a quantity."""


@dataclass(frozen=True)
class Measurement:
    """One of a profile's numbers, as the profile asks and as PX4 SITL SIH produced it."""

    quantity: str  # "climb", "roll", "pitch", "yaw"
    unit: str
    expected: float
    measured: float
    excitation: float  # fraction of the full command the flight reached
    observed: float  # what the flight showed directly (see the module docstring)
    samples: int

    @property
    def error(self) -> float:
        """Relative error of the measured value."""
        return self.measured / self.expected - 1.0

    def passed(self, tolerance: float = TOLERANCE) -> bool:
        """Within ``tolerance`` of the profile, from a flight that reached MIN_EXCITATION of full command."""
        return abs(self.error) <= tolerance and self.excitation >= MIN_EXCITATION


@dataclass(frozen=True)
class SihCheck:
    """A profile's capability measured on one PX4 build."""

    profile: str
    px4_version: str
    measurements: tuple[Measurement, ...]

    def passed(self, tolerance: float = TOLERANCE) -> bool:
        """Every measurement passed."""
        return all(m.passed(tolerance) for m in self.measurements)

    def get(self, quantity: str) -> Measurement:
        """The measurement of ``quantity`` ("climb", "roll", "pitch" or "yaw")."""
        return next(m for m in self.measurements if m.quantity == quantity)


@dataclass(frozen=True)
class _Motors:
    """SIH's lagged motor outputs at every control step."""

    t: np.ndarray  # s
    u: np.ndarray  # (n, 4), after SIH's lag
    step: float  # s, SIH's simulation step
    guessed: np.ndarray  # (n,) bool: the state still carries an output the log did not have

    def at(self, t: np.ndarray) -> np.ndarray:
        """Index of the motor state SIH used for the step that produced a sample at time ``t``."""
        return np.clip(np.searchsorted(self.t, t + 1e-5, side="right") - 1, 0, len(self.t) - 1)

    def differentials(self) -> np.ndarray:
        """Normalized roll, pitch, yaw rotor differentials in SIH's quad-X order (sih.cpp)."""
        u0, u1, u2, u3 = self.u.T
        return 0.5 * np.stack([-u0 + u1 + u2 - u3, u0 - u1 + u2 - u3, u0 + u1 - u2 - u3], axis=1)


def _seconds(frame) -> np.ndarray:
    return frame["timestamp"].to_numpy(dtype=np.float64) * 1e-6


def _vector(frame, name: str, n: int) -> np.ndarray:
    return np.stack([frame[f"{name}[{i}]"].to_numpy(dtype=np.float64) for i in range(n)], axis=1)


def _lagged_motors(frame, tau: float) -> _Motors:
    t = _seconds(frame)
    if len(t) < 100:
        raise MeasurementError("actuator_motors has fewer than 100 samples: no flight in this log")
    step = float(np.median(np.diff(t)))
    if step > FULL_RATE_S:
        raise MeasurementError(f"actuator_motors logged every {step * 1e3:.0f} ms; the check needs every control "
                               f"step: fly with SDLOG_PROFILE {LOG_PARAMS['SDLOG_PROFILE']} (high-rate topics)")
    command = np.clip(np.nan_to_num(_vector(frame, "control", 4)), 0.0, 1.0)
    # SIH steps every `step` whatever the logger keeps (v1.14.0's logger drops ~3 % of these
    # samples): run SIH's lag on its own step grid, each step taking the output of the step before
    # (interpolated where the log has a gap). sih.cpp read_motors: explicit Euler.
    # The grid: every logged sample, plus one step per step the logger skipped.
    per_sample = np.maximum(np.rint(np.diff(t) / step).astype(int), 1)
    owner = np.repeat(np.arange(len(t) - 1), per_sample)
    offset = np.arange(len(owner)) - np.repeat(np.cumsum(per_sample) - per_sample, per_sample)
    grid = np.append(t[owner] + offset * step, t[-1])
    logged = np.append(offset == 0, True)
    previous = np.stack([np.interp(grid - step, t, command[:, i]) for i in range(4)], axis=1)
    gain = step / tau
    u = np.empty((len(grid), 4))
    u[0] = command[0]
    for k in range(1, len(grid)):
        u[k] = u[k - 1] + gain * (previous[k] - u[k - 1])
    # An interpolated output stays in the lagged state for a few time constants: flag those steps.
    memory = int(np.ceil(GAP_MEMORY_TAUS * tau / step))
    gaps = np.concatenate([[0], np.cumsum(~np.roll(logged, 1))])
    guessed = gaps[1:] - gaps[np.clip(np.arange(len(grid)) - memory + 1, 0, None)] > 0
    return _Motors(grid, u, step, guessed)


def _parameters(log: ULog) -> dict[str, float]:
    missing = [name for name in SIH_PARAMS if name not in log.initial_parameters]
    if missing:
        raise MeasurementError(f"the log has no {', '.join(missing)}: not a SIH flight")
    return {name: float(log.initial_parameters[name]) for name in SIH_PARAMS}


def _px4_version(log: ULog) -> str:
    release = log.msg_info_dict.get("ver_sw_release")
    if isinstance(release, int) and release:
        major, minor, patch = (release >> 24) & 0xFF, (release >> 16) & 0xFF, (release >> 8) & 0xFF
        return f"v{major}.{minor}.{patch}"
    return str(log.msg_info_dict.get("ver_sw", "unknown"))


def _tilt_cosine(attitude, t: np.ndarray) -> np.ndarray:
    q = _vector(attitude, "q", 4)
    r33 = 1.0 - 2.0 * (q[:, 1] ** 2 + q[:, 2] ** 2)
    return np.interp(t, _seconds(attitude), r33)


def measure_climb(log: ULog, profile: VehicleProfile, motors: _Motors, params: dict[str, float]) -> Measurement:
    """Climb acceleration at full collective thrust from hover, ``(TWR - 1) g`` (module docstring)."""
    position = read_topic(log, "vehicle_local_position_groundtruth")
    thrust = read_topic(log, "vehicle_thrust_setpoint")
    t = _seconds(position)
    t_sp = _seconds(thrust)
    full = thrust["xyz[2]"].to_numpy() <= -FULL_COLLECTIVE
    # A sample counts once full collective has been commanded for SETTLE_TAUS motor time constants.
    since = np.full(len(t_sp), -np.inf)
    starts = t_sp[np.flatnonzero(full & ~np.concatenate([[False], full[:-1]]))]
    index = np.searchsorted(starts, t_sp, side="right") - 1
    since[full & (index >= 0)] = starts[index[full & (index >= 0)]]
    at = np.clip(np.searchsorted(t_sp, t, side="right") - 1, 0, len(t_sp) - 1)
    settled = full[at] & (t - since[at] >= SETTLE_TAUS * params["SIH_T_TAU"])
    tilt_cosine = _tilt_cosine(read_topic(log, "vehicle_attitude_groundtruth"), t)
    # (Logger gaps are kept here: an interpolated output moves the mean collective by ~1e-3.)
    use = settled & (tilt_cosine >= LEVEL_COSINE) & (-position["z"].to_numpy() > AIRBORNE_M)
    if use.sum() < 3:
        raise MeasurementError("no ground-truth sample at full collective thrust, level and in the air: the flight "
                               "did not command full thrust long enough (at least 4 motor time constants)")
    collective = motors.u[motors.at(t[use])].mean(axis=1)
    x = GRAVITY * collective * tilt_cosine[use]
    vz = position["vz"].to_numpy()[use]
    thrust_accel = -position["az"].to_numpy()[use] + GRAVITY - params["SIH_KDV"] / params["SIH_MASS"] * vz
    twr = float(np.dot(x, thrust_accel) / np.dot(x, x))
    return Measurement("climb", "m/s^2", (profile.twr_max - 1.0) * GRAVITY, (twr - 1.0) * GRAVITY,
                       float(collective.mean()), float(np.median(thrust_accel) - GRAVITY), int(use.sum()))


def measure_angular(log: ULog, profile: VehicleProfile, motors: _Motors, params: dict[str, float]) -> list[Measurement]:
    """Roll, pitch and yaw angular acceleration at the saturating rotor pattern (module docstring)."""
    rates = read_topic(log, "vehicle_angular_velocity_groundtruth")
    position = read_topic(log, "vehicle_local_position_groundtruth")
    t = _seconds(rates)
    w = _vector(rates, "xyz", 3)
    height = -np.interp(t, _seconds(position), position["z"].to_numpy())
    inertia = np.array([params["SIH_IXX"], params["SIH_IYY"], params["SIH_IZZ"]])
    # Integral of D over each interval between rate samples, from a running sum on the motor grid.
    d = motors.differentials()
    running = np.vstack([np.zeros(3), np.cumsum(d * motors.step, axis=0)])
    drive = running[motors.at(t[1:]) + 1] - running[motors.at(t[:-1]) + 1]
    h = np.diff(t)
    mid = 0.5 * (w[1:] + w[:-1])
    # What SIH adds besides the rotors: its angular damper and the gyroscopic term (equations_of_motion).
    passive = (-params["SIH_KDW"] * mid - np.cross(mid, mid * inertia)) / inertia
    rotor_change = np.diff(w, axis=0) - passive * h[:, None]
    below_clamp = np.abs(w).max(axis=1) < CLAMP_MARGIN * RATE_CLAMP
    ok = (below_clamp[1:] & below_clamp[:-1] & (height[1:] > AIRBORNE_M) & (height[:-1] > AIRBORNE_M) & (h < 0.05)
          & (t[:-1] >= motors.t[0]) & (t[1:] <= motors.t[-1]))
    # Intervals whose motor state carries an output the logger dropped are left out.
    guessed = np.concatenate([[0], np.cumsum(motors.guessed)])
    ok &= guessed[motors.at(t[1:]) + 1] - guessed[motors.at(t[:-1]) + 1] == 0
    # Every motor step inside a kept interval, for the excitation the fit actually saw.
    edges = np.zeros(len(motors.t) + 1, dtype=int)
    np.add.at(edges, motors.at(t[:-1][ok]) + 1, 1)
    np.add.at(edges, motors.at(t[1:][ok]) + 1, -1)
    seen = np.cumsum(edges)[:-1] > 0
    results = []
    for axis, (quantity, expected) in enumerate((("roll", profile.alpha_xy_max), ("pitch", profile.alpha_xy_max),
                                                 ("yaw", profile.alpha_z_max))):
        x, y = drive[ok, axis], rotor_change[ok, axis]
        if not ok.any() or not np.dot(x, x) > 0:
            raise MeasurementError(f"no airborne {quantity} motion below SIH's rate clamp in the log")
        alpha = float(np.dot(x, y) / np.dot(x, x))
        excitation = float(np.abs(d[seen, axis]).max())
        observed = float(np.abs(y / h[ok]).max())
        results.append(Measurement(quantity, "rad/s^2", expected, alpha, excitation, observed, int(ok.sum())))
    return results


def check_log(path: Path | str, profile: VehicleProfile) -> SihCheck:
    """Measure ``profile``'s climb and angular accelerations from the ULog of a capability flight."""
    log = ULog(str(path), list(TOPICS))
    missing = [topic for topic in TOPICS if topic not in {d.name for d in log.data_list}]
    if missing:
        raise MeasurementError(f"{path}: no {', '.join(missing)} in the log (PX4 SITL SIH logs ground truth; "
                               f"fly with {LOG_PARAMS})")
    params = _parameters(log)
    motors = _lagged_motors(read_topic(log, "actuator_motors"), params["SIH_T_TAU"])
    measurements = (measure_climb(log, profile, motors, params), *measure_angular(log, profile, motors, params))
    return SihCheck(profile.name, _px4_version(log), measurements)
