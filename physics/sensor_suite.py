"""What PX4's sensors read on the harness's vehicle: IMU, magnetometer, barometer, airspeed, GPS.

Each reading is the truth of the rigid body (`physics.dynamics.QuadrotorDynamics`) plus the
imperfections a real sensor has, at the rate a real sensor has them:

* accelerometer and gyroscope, every IMU sample (250 Hz, the rate PX4's SITL start-up script
  integrates at, IMU_INTEG_RATE): white noise plus a turn-on bias drawn once per run, so PX4's
  estimator has biases to learn, as on hardware;
* magnetometer (100 Hz): the earth's field at home rotated into the body frame, plus noise;
* barometer (50 Hz): ISA pressure at the true altitude, plus noise;
* differential pressure (off by default; a multicopter has no pitot): dynamic pressure of the
  forward airspeed;
* GPS (10 Hz): position and velocity with white fix-to-fix noise, the accuracy it claims (eph/epv),
  and the number of satellites. The slowly drifting error of a real receiver is not modelled.

Rates and noise figures come from the vehicle profile's sensors (`profiles.sensors.SensorProfile`,
PX4-like defaults). Noise is drawn from generators seeded by the run's seed, so a run is reproducible.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from missions.geo import GeoOrigin
from physics.dynamics import FORCE, OMEGA, POS, VEL, Q, rotation_matrix
from profiles.sensors import SensorProfile

# PX4's SITL home (the jMAVSim / Gazebo default, and SIH_LOC_*): ETH Zurich's model airfield.
DEFAULT_HOME = GeoOrigin(47.397742, 8.545594, 488.0)
SEA_LEVEL_PRESSURE_HPA = 1013.25
SEA_LEVEL_TEMPERATURE_K = 288.15
LAPSE_RATE_K_PER_M = 0.0065
AIR_DENSITY = 1.225  # kg/m^3, ISA sea level; only the airspeed sensor uses it
NOISE_BLOCK = 4096  # standard normal draws made at once for the IMU samples' noise
_MOST_NORMALS = 11  # that one IMU sample takes: accelerometer, gyroscope, magnetometer, barometer, airspeed
# ISA troposphere exponent g M / (R L).
_BARO_EXPONENT = 5.25588


def pressure_hpa(altitude_amsl_m: float) -> float:
    """ISA static pressure (hPa) at an altitude above mean sea level."""
    ratio = 1.0 - LAPSE_RATE_K_PER_M * altitude_amsl_m / SEA_LEVEL_TEMPERATURE_K
    return SEA_LEVEL_PRESSURE_HPA * ratio ** _BARO_EXPONENT


def body_from_world(q: list[float], v: tuple[float, float, float]) -> tuple[float, float, float]:
    """A world (NED) vector in body (FRD) axes, for the attitude quaternion q = (w, x, y, z)."""
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = rotation_matrix(*q)
    a, b, c = v
    # The transpose of the body-to-world rotation.
    return (r00 * a + r10 * b + r20 * c, r01 * a + r11 * b + r21 * c, r02 * a + r12 * b + r22 * c)


class ImuSample(NamedTuple):
    """One HIL_SENSOR's worth of readings; `mag`, `pressure_hpa`, `diff_pressure_hpa` are None when
    that sensor has no new sample this time (a named tuple: one is made every IMU sample)."""

    accel: list[float]
    gyro: list[float]
    mag: list[float] | None
    pressure_hpa: float | None
    pressure_alt_m: float
    diff_pressure_hpa: float | None
    temperature_c: float


@dataclass
class GpsSample:
    """One HIL_GPS: degrees, metres AMSL, NED m/s, accuracies in metres."""

    lat_deg: float
    lon_deg: float
    alt_m: float
    vel_ned: tuple[float, float, float]
    eph_m: float
    epv_m: float
    satellites: int


class _Schedule:
    """Whether a sensor at `rate_hz` has a new sample at IMU sample `i`: the samples fall on the IMU
    samples where its own count ticks over, so 100 Hz on a 250 Hz IMU is 100 a second, not 125."""

    def __init__(self, rate_hz: float, imu_rate_hz: float):
        self.rate, self.imu_rate = rate_hz, imu_rate_hz

    def due(self, i: int) -> bool:
        if self.rate <= 0:
            return False
        return i == 0 or (i * self.rate) // self.imu_rate != ((i - 1) * self.rate) // self.imu_rate


class SensorSuite:
    """The vehicle's sensors: call `imu()` once per IMU sample and `gps()` when `gps_due()`."""

    def __init__(self, options: SensorProfile, home: GeoOrigin = DEFAULT_HOME, seed: int = 0):
        self.options = options
        self.home = home
        self._rng = random.Random(seed)
        gauss = self._rng.gauss
        self.accel_bias = [gauss(0.0, options.accel_bias) for _ in range(3)]
        self.gyro_bias = [gauss(0.0, options.gyro_bias) for _ in range(3)]
        self._field_ned = options.magnetic_field.ned()
        rate = options.imu_rate_hz
        self._mag = _Schedule(options.mag_rate_hz, rate)
        self._baro = _Schedule(options.baro_rate_hz, rate)
        self._airspeed = _Schedule(options.airspeed_rate_hz, rate)
        self._gps = _Schedule(options.gps_rate_hz, rate)
        self.index = 0  # IMU samples taken so far
        # The IMU samples' noise: standard normal draws made a block at a time, a sample taking its own in
        # order (a draw each was a Python call each, some 8 an IMU sample, in a lockstep loop PX4 waits on).
        self._normals_rng = np.random.default_rng(seed)
        self._normals: list[float] = []
        self._next_normal = 0

    def imu(self, dyn) -> ImuSample:
        """Readings of the IMU (and of whichever slower sensors are due) for the body's state now."""
        o = self.options
        i = self.index
        self.index += 1
        # The state read once: each of the body's vector properties copies it out of its array afresh.
        s = dyn.state.tolist()
        ab, gb = self.accel_bias, self.gyro_bias
        an, gn = o.accel_noise, o.gyro_noise
        z, k = self._normals, self._next_normal
        if k + _MOST_NORMALS > len(z):
            z = self._normals = self._normals_rng.standard_normal(NOISE_BLOCK).tolist()
            k = 0
        accel = [s[FORCE] + ab[0] + an * z[k], s[FORCE + 1] + ab[1] + an * z[k + 1],
                 s[FORCE + 2] + ab[2] + an * z[k + 2]]
        gyro = [s[OMEGA] + gb[0] + gn * z[k + 3], s[OMEGA + 1] + gb[1] + gn * z[k + 4],
                s[OMEGA + 2] + gb[2] + gn * z[k + 5]]
        k += 6
        q = s[Q:Q + 4]
        mag = None
        if self._mag.due(i):
            b, mn = body_from_world(q, self._field_ned), o.mag_noise
            mag = [b[0] + mn * z[k], b[1] + mn * z[k + 1], b[2] + mn * z[k + 2]]
            k += 3
        alt = self.home.alt_m - s[POS + 2]
        pressure = None
        if self._baro.due(i):
            pressure = pressure_hpa(alt + o.baro_noise_m * z[k])
            k += 1
        diff = None
        if self._airspeed.due(i):
            wind = dyn.wind_ned.tolist()
            forward = body_from_world(q, (s[VEL] - wind[0], s[VEL + 1] - wind[1], s[VEL + 2] - wind[2]))[0]
            diff = 0.5 * AIR_DENSITY * forward * abs(forward) / 100.0 + o.airspeed_noise * z[k]
            k += 1
        self._next_normal = k
        return ImuSample(accel, gyro, mag, pressure, alt, diff, o.temperature_c)

    def gps_due(self) -> bool:
        """Whether the GPS has a new fix for the IMU sample about to be taken."""
        return self._gps.due(self.index)

    def gps(self, dyn) -> GpsSample:
        """A GPS fix for the body's position and velocity now."""
        o = self.options
        gauss = self._rng.gauss
        h, v, dv = o.gps_horizontal_noise_m, o.gps_vertical_noise_m, o.gps_velocity_noise
        p, w = dyn.pos, dyn.vel
        lat, lon, alt = self.home.to_global(p[0] + gauss(0.0, h), p[1] + gauss(0.0, h), p[2] + gauss(0.0, v))
        vel = (w[0] + gauss(0.0, dv), w[1] + gauss(0.0, dv), w[2] + gauss(0.0, dv))
        return GpsSample(lat, lon, alt, vel, o.gps_eph_m, o.gps_epv_m, o.gps_satellites)
