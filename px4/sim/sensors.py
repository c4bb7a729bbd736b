"""What the built-in vehicle's sensors and estimator report: the true state plus PX4 SIH's noise.

The built-in vehicle flies on its exact state, but a client reading HIGHRES_IMU or ATTITUDE from
PX4 SITL never sees a gyro at exactly 0 or an attitude at exactly 0: SIH adds white noise to its
IMU, and PX4's filters and estimator pass some of it on. The levels here are measured from PX4
v1.16.1 SIH's own MAVLink output (standard deviation per axis, HIGHRES_IMU at 50 Hz and ATTITUDE
at 100 Hz):

* at rest, disarmed: accelerometer 0.07 m/s^2, gyro 0.007 rad/s, magnetometer 0.013-0.019 gauss,
  barometer 0.007 hPa; attitude 0.0019 rad roll and yaw, 0.0008 rad pitch, rates 0.006 rad/s;
* with the motors running SIH's raw IMU noise grows (accelerometer 0.5 / 1.7 / 1.4 m/s^2, gyro
  0.14 / 0.07 / 0.03 rad/s before PX4's filters, against 0.1 and 0.01 at rest), and the levels
  reported in flight grow by the same ratios.

Deterministic for a given seed, so a lockstep trial reproduces its telemetry exactly.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

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
# SIH's raw IMU noise with thrust over its raw noise at rest (sih.cpp: 0.5/1.7/1.4 vs 0.1 m/s^2,
# 0.14/0.07/0.03 vs 0.01 rad/s): the reported levels scale with it.
_ACCEL_GAIN = (5.0, 17.0, 14.0)
_GYRO_GAIN = (14.0, 7.0, 3.0)
MOTORS_RUNNING = NoiseLevels(
    accel=tuple(a * g for a, g in zip(AT_REST.accel, _ACCEL_GAIN)),
    gyro=tuple(a * g for a, g in zip(AT_REST.gyro, _GYRO_GAIN)),
    mag=AT_REST.mag, pressure=AT_REST.pressure,
    attitude=AT_REST.attitude,
    rates=tuple(a * g for a, g in zip(AT_REST.rates, _GYRO_GAIN)))


class SensorModel:
    """Noisy readings of the true state, as the vehicle reports them over MAVLink."""

    def __init__(self, seed: int = 0) -> None:
        self._rng = random.Random(seed)

    def _noisy(self, values, sigmas) -> list[float]:
        gauss = self._rng.gauss
        return [v + gauss(0.0, s) for v, s in zip(values, sigmas)]

    def imu(self, accel: Vec3, gyro: Vec3, mag: Vec3, pressure: float, running: bool
            ) -> tuple[list[float], list[float], list[float], float]:
        """HIGHRES_IMU's accelerometer (m/s^2), gyro (rad/s), magnetometer (gauss) and pressure (hPa)."""
        n = MOTORS_RUNNING if running else AT_REST
        return (self._noisy(accel, n.accel), self._noisy(gyro, n.gyro), self._noisy(mag, n.mag),
                pressure + self._rng.gauss(0.0, n.pressure))

    def attitude(self, euler: Vec3, rates: Vec3, running: bool) -> tuple[list[float], list[float]]:
        """ATTITUDE's roll, pitch, yaw (rad) and body rates (rad/s) as the estimator reports them."""
        n = MOTORS_RUNNING if running else AT_REST
        return self._noisy(euler, n.attitude), self._noisy(rates, n.rates)
