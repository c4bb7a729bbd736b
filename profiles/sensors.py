"""A vehicle's sensors: rates and imperfections, as a profile gives them (``sensors:`` in its YAML).

What PX4 reads when it flies on the harness's physics (`physics.sensor_suite` turns the
truth into readings with these figures). The defaults are those of PX4's Gazebo Classic models
(IMU noise densities of its iris; per-sample standard deviation = density x sqrt(rate)), at PX4's
SITL rates (IMU 250 Hz as IMU_INTEG_RATE, magnetometer 100 Hz, barometer 50 Hz, GPS 10 Hz). A
profile of a noisier vehicle overrides what differs:

    sensors:
      gyro_noise: 0.006
      gps_rate_hz: 5
      magnetic_field: {declination_deg: -2.0, inclination_deg: 60.0, strength_gauss: 0.5}

The earth's field is not computed from a world magnetic model: the default is the field at PX4's
default SITL home (Zurich), and a vehicle flown elsewhere must give its home's field, or PX4's
estimator sees a heading offset by the difference in declination.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Mapping


@dataclass(frozen=True)
class MagneticField:
    """The earth's magnetic field at home: declination (deg east of true north), inclination (deg,
    positive pointing down) and total intensity (gauss)."""

    declination_deg: float = 3.0
    inclination_deg: float = 63.5
    strength_gauss: float = 0.48

    def ned(self) -> tuple[float, float, float]:
        """The field vector in the world frame (north, east, down), gauss."""
        dec = math.radians(self.declination_deg)
        inc = math.radians(self.inclination_deg)
        horizontal = self.strength_gauss * math.cos(inc)
        return horizontal * math.cos(dec), horizontal * math.sin(dec), self.strength_gauss * math.sin(inc)


@dataclass(frozen=True)
class SensorProfile:
    """Rates (Hz) and imperfections (standard deviations, SI units) of the simulated sensors.

    A rate of 0 turns a sensor off (its `fields_updated` bits are never set, or no HIL_GPS is sent).
    """

    imu_rate_hz: float = 250.0
    mag_rate_hz: float = 100.0
    baro_rate_hz: float = 50.0
    airspeed_rate_hz: float = 0.0
    gps_rate_hz: float = 10.0
    accel_noise: float = 0.0294  # m/s^2 per sample: 0.00186 m/s^2/sqrt(Hz) at 250 Hz
    gyro_noise: float = 0.00295  # rad/s per sample: 0.00018665 rad/s/sqrt(Hz) at 250 Hz
    accel_bias: float = 0.05  # m/s^2, turn-on bias per axis (drawn once)
    gyro_bias: float = 0.002  # rad/s, turn-on bias per axis (drawn once)
    mag_noise: float = 0.002  # gauss
    baro_noise_m: float = 0.05  # metres of altitude
    airspeed_noise: float = 0.01  # hPa
    # Fix-to-fix noise. A receiver's larger errors drift slowly (not modelled); white noise of that
    # size would be wrong twice: it averages out, and PX4 takes its height origin from one fix.
    gps_horizontal_noise_m: float = 0.02
    gps_vertical_noise_m: float = 0.04
    gps_velocity_noise: float = 0.05  # m/s
    gps_eph_m: float = 0.5  # the accuracy the receiver claims
    gps_epv_m: float = 0.8
    gps_satellites: int = 10
    temperature_c: float = 25.0
    magnetic_field: MagneticField = field(default_factory=MagneticField)

    def __post_init__(self) -> None:
        for name in ("imu_rate_hz", "mag_rate_hz", "baro_rate_hz", "airspeed_rate_hz", "gps_rate_hz"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0.0 <= value <= 1000.0):
                raise ValueError(f"{name}: expected a rate in Hz between 0 and 1000, got {value!r}")
        if self.imu_rate_hz < 50.0:
            raise ValueError(f"imu_rate_hz: expected at least 50 Hz (PX4's rate controller runs on IMU samples), "
                             f"got {self.imu_rate_hz!r}")
        for name in ("accel_noise", "gyro_noise", "accel_bias", "gyro_bias", "mag_noise", "baro_noise_m",
                     "airspeed_noise", "gps_horizontal_noise_m", "gps_vertical_noise_m", "gps_velocity_noise",
                     "gps_eph_m", "gps_epv_m"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f"{name}: expected a finite number >= 0, got {value!r}")
        if not 0 <= self.gps_satellites <= 255:
            raise ValueError(f"gps_satellites: expected 0-255, got {self.gps_satellites!r}")


def sensor_profile_from_mapping(data: Any, source: str) -> SensorProfile:
    """A `SensorProfile` from a profile's ``sensors:`` mapping; ValueError naming ``source`` and the field."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{source}: expected a mapping of sensor settings, got {type(data).__name__}")
    known = {f.name for f in fields(SensorProfile)}
    values = dict(data)
    for key in values:
        if key not in known:
            raise ValueError(f"{source}.{key}: unknown sensor setting (known: {', '.join(sorted(known))})")
    if "magnetic_field" in values:
        mag = values["magnetic_field"]
        mag_known = {f.name for f in fields(MagneticField)}
        if not isinstance(mag, Mapping) or set(mag) - mag_known:
            raise ValueError(f"{source}.magnetic_field: expected a mapping of {', '.join(sorted(mag_known))}")
        for key, value in mag.items():
            if not _is_number(value):
                raise ValueError(f"{source}.magnetic_field.{key}: expected a number, got {value!r}")
        values["magnetic_field"] = MagneticField(**mag)
    for key, value in values.items():
        if key != "magnetic_field" and not _is_number(value):
            raise ValueError(f"{source}.{key}: expected a number, got {value!r}")
    if "gps_satellites" in values:
        if values["gps_satellites"] != int(values["gps_satellites"]):
            raise ValueError(f"{source}.gps_satellites: expected a whole number, got {values['gps_satellites']!r}")
        values["gps_satellites"] = int(values["gps_satellites"])
    try:
        return SensorProfile(**values)
    except ValueError as exc:
        raise ValueError(f"{source}.{exc}") from None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
