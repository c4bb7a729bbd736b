"""What the built-in vehicle's sensors and estimator report: the true state plus PX4 SIH's noise.

The built-in vehicle flies on its exact state, but a client reading HIGHRES_IMU or ATTITUDE from
PX4 SITL never sees a gyro at exactly 0 or an attitude at exactly 0: SIH adds white noise to its
IMU, and PX4's filters and estimator pass some of it on. The levels here are measured from PX4
v1.16.1 SIH's own MAVLink output (standard deviation per axis, HIGHRES_IMU at 50 Hz and ATTITUDE
at 100 Hz):

* at rest, disarmed: accelerometer 0.07 m/s^2, gyro 0.007 rad/s, magnetometer 0.013-0.019 gauss,
  barometer 0.007 hPa; attitude 0.0019 rad roll and yaw, 0.0008 rad pitch, rates 0.006 rad/s;
* hovering at 5 m SIH's raw IMU noise is larger (it grows with the thrust) and so is what PX4
  reports: accelerometer 0.37 / 1.14 / 0.97 m/s^2, gyro 0.13 / 0.06 / 0.03 rad/s, barometer
  0.016 hPa, attitude 0.018 / 0.008 / 0.007 rad, rates 0.12 / 0.05 / 0.02 rad/s (two runs of
  benchmarks/sensor_noise.py, averaged; the built-in vehicle's own hover adds almost nothing).

Deterministic for a given seed, so a lockstep trial reproduces its telemetry exactly. The IMU and attitude
noise is drawn from numpy's generator a block at a time (NOISE_BLOCK draws): one Python-level draw per value
cost more than the rest of those messages.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np

Vec3 = tuple[float, float, float]


@dataclass(frozen=True)
class NoiseLevels:
    """Standard deviations per axis of what the vehicle reports."""

    accel: Vec3  # m/s^2
    gyro: Vec3  # rad/s
    mag: Vec3  # gauss
    pressure: float  # hPa
    attitude: Vec3  # rad: roll, pitch, yaw
    rates: Vec3  # rad/s


# PX4 v1.16.1 SIH, disarmed on the ground (benchmarks/sensor_noise.py measures it again).
AT_REST = NoiseLevels(accel=(0.072, 0.070, 0.069), gyro=(0.0074, 0.0069, 0.0069), mag=(0.014, 0.012, 0.019),
                      pressure=0.0069, attitude=(0.0019, 0.0008, 0.0019), rates=(0.0060, 0.0057, 0.0056))
# PX4 v1.16.1 SIH hovering at 5 m after a takeoff (the same benchmark, mean of two runs).
MOTORS_RUNNING = NoiseLevels(accel=(0.373, 1.139, 0.967), gyro=(0.132, 0.059, 0.0255), mag=AT_REST.mag,
                             pressure=0.016, attitude=(0.0184, 0.0078, 0.0068), rates=(0.117, 0.052, 0.0216))


# PX4 v1.16.1's estimate of a vehicle at rest, disarmed (GLOBAL_POSITION_INT at 50 Hz for 10 s, measured by
# tests/conformance's probe): the altitude wanders over seconds (standard deviation 0.11 m, 0.35 m between the
# lowest and the highest), the horizontal position by 0.03 m; HOME_POSITION stays where it was set.
REST_DRIFT_M = (0.03, 0.03, 0.11)  # north, east, down
REST_DRIFT_TAU_S = 5.0  # correlation time of each axis's wander
# Standard normal draws made at once for the IMU and attitude noise (ATTITUDE and HIGHRES_IMU take 16 a message).
NOISE_BLOCK = 1024


class SensorModel:
    """Noisy readings of the true state, as the vehicle reports them over MAVLink."""

    def __init__(self, seed: int = 0) -> None:
        self._rng = np.random.Generator(np.random.PCG64(seed))
        self._normals: list[float] = []
        self._next = 0
        # Its own generator, so that the IMU and attitude noise draw the same numbers as without it.
        self._drift_rng = random.Random(seed ^ 0x5EED)
        self._drift = [0.0, 0.0, 0.0]
        self._drift_at = 0.0

    def rest_drift(self, time_s: float) -> Vec3:
        """The estimate's error at rest at vehicle time `time_s` (north, east, down in m): a first-order
        Gauss-Markov process per axis with PX4's spread, advanced by the time since it was last asked."""
        dt = time_s - self._drift_at
        if dt > 0:
            keep = math.exp(-dt / REST_DRIFT_TAU_S)
            spread = math.sqrt(1.0 - keep * keep)
            self._drift = [x * keep + self._drift_rng.gauss(0.0, s * spread) for x, s in zip(self._drift, REST_DRIFT_M)]
            self._drift_at = time_s
        n, e, d = self._drift
        return n, e, d

    def _standard_normals(self, n: int) -> list[float]:
        """The next `n` draws of the IMU and attitude noise's generator (n <= NOISE_BLOCK)."""
        start = self._next
        if start + n > len(self._normals):
            self._normals, start = self._rng.standard_normal(NOISE_BLOCK).tolist(), 0
        self._next = start + n
        return self._normals[start:start + n]

    def _noisy(self, values: Vec3, sigmas: Vec3) -> list[float]:
        # Unrolled: a comprehension over three values costs twice the arithmetic (eight vectors a telemetry pass).
        x, y, z = values
        sx, sy, sz = sigmas
        nx, ny, nz = self._standard_normals(3)
        return [x + sx * nx, y + sy * ny, z + sz * nz]

    def imu(self, accel: Vec3, gyro: Vec3, mag: Vec3, pressure: float, running: bool
            ) -> tuple[list[float], list[float], list[float], float]:
        """HIGHRES_IMU's accelerometer (m/s^2), gyro (rad/s), magnetometer (gauss) and pressure (hPa)."""
        n = MOTORS_RUNNING if running else AT_REST
        return (self._noisy(accel, n.accel), self._noisy(gyro, n.gyro), self._noisy(mag, n.mag),
                pressure + n.pressure * self._standard_normals(1)[0])

    def attitude(self, euler: Vec3, rates: Vec3, running: bool) -> tuple[list[float], list[float]]:
        """ATTITUDE's roll, pitch, yaw (rad) and body rates (rad/s) as the estimator reports them."""
        n = MOTORS_RUNNING if running else AT_REST
        return self._noisy(euler, n.attitude), self._noisy(rates, n.rates)
