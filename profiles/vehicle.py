"""A quadrotor as FLYINGTRUST describes it: the capability vector, validated.

A profile is the capability vector of FLYINGTRUST (Sec. III-A, Eq. 11) plus mass:
``P = [TWR_max, alpha_xy_max, alpha_z_max]``. :meth:`VehicleProfile.physical` turns it into the
physical parameters of a simulated quadrotor that reproduces those three numbers exactly
(:mod:`profiles.physical` has the model and its assumptions). Instead of the three numbers a profile
may give a ``physical:`` block (mass, frame, rotors, inertia; see :mod:`profiles.airframe`) from which
they are computed. An optional ``sensors:`` block gives the rates and noise of what PX4 reads when it
flies on the harness's physics (:mod:`profiles.sensors`; PX4-like defaults otherwise). Profiles are
found by name or path with :mod:`profiles.library`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from config.errors import ConfigError
from config.fields import shown
from profiles.airframe import LAYOUTS, Airframe, is_finite_number
from profiles.physical import DRAG_PER_MASS, PROP_DIAMETER_PER_ARM, PhysicalParams, arm_length_for_mass, derive_physical
from profiles.sensors import SensorProfile, sensor_profile_from_mapping


class ProfileError(ConfigError):
    """A vehicle profile is missing, malformed or physically implausible."""


# Field -> (required, check, expectation). A check returns True when the value is acceptable.
# The mass range covers micro quadrotors to heavy-lift frames; Table I spans 0.55-5.45 kg.
_RULES: dict[str, tuple[bool, Any, str]] = {
    "name": (True, lambda v: isinstance(v, str) and v.strip() != "", "a non-empty string"),
    "mass": (True, lambda v: is_finite_number(v) and 0.05 <= v <= 50.0, "a mass in kg between 0.05 and 50"),
    "twr_max": (True, lambda v: is_finite_number(v) and 1.0 < v <= 20.0,
                "a number > 1 (a vehicle that cannot hover) and <= 20"),
    "alpha_xy_max": (True, lambda v: is_finite_number(v) and 0 < v <= 20000.0,
                     "a positive angular acceleration in rad/s^2, at most 20000"),
    "alpha_z_max": (True, lambda v: is_finite_number(v) and 0 < v <= 20000.0,
                    "a positive angular acceleration in rad/s^2, at most 20000"),
    "layout": (False, lambda v: v in LAYOUTS, f"one of {', '.join(LAYOUTS)}"),
    "category": (False, lambda v: isinstance(v, str), "a string"),
    "label": (False, lambda v: isinstance(v, str), "a string"),
    "radius": (False, lambda v: v is None or (is_finite_number(v) and 0 < v <= 5.0),
               "a collision radius in m, > 0 and <= 5"),
    "motor_tau": (False, lambda v: is_finite_number(v) and 0 < v <= 0.1, "a time constant in s, > 0 and <= 0.1"),
    "drag": (False, lambda v: is_finite_number(v) and 0 <= v <= 5.0,
             "a linear drag per unit mass in 1/s, >= 0 and <= 5"),
    "arm_length": (False, lambda v: v is None or (is_finite_number(v) and 0 < v <= 5.0),
                   "a hub-to-rotor distance in m, > 0 and <= 5"),
    "torque_per_thrust": (False, lambda v: v is None or (is_finite_number(v) and 0 < v <= 1.0),
                          "a rotor reaction torque per newton of thrust in m (c_M / c_T), > 0 and <= 1"),
    "sensors": (False, lambda v: isinstance(v, SensorProfile), "a mapping of sensor settings (profiles/sensors.py)"),
}
# Fields a `physical:` block supplies; a file giving both would say the same thing twice.
_FROM_PHYSICAL = ("mass", "twr_max", "alpha_xy_max", "alpha_z_max", "layout")


def _check_fields(values: Mapping[str, Any], source: str) -> None:
    unknown = sorted(set(values) - set(_RULES))
    if unknown:
        raise ProfileError(f"{source}: {unknown[0]}: unknown field (known: {', '.join(_RULES)}, physical)")
    for key, (required, ok, expectation) in _RULES.items():
        if key not in values:
            if required:
                raise ProfileError(f"{source}: {key}: missing (expected {expectation})")
            continue
        if not ok(values[key]):
            raise ProfileError(f"{source}: {key}: expected {expectation}, got {shown(values[key])}")


@dataclass(frozen=True)
class VehicleProfile:
    """A quadrotor by capability: FLYINGTRUST's ``[TWR_max, alpha_xy_max, alpha_z_max]`` and mass.

    ``radius`` (collision radius) defaults to hub-to-propeller-tip, ``arm_length * (1 + 0.6)``.
    """

    name: str
    mass: float  # kg
    twr_max: float
    alpha_xy_max: float  # rad/s^2
    alpha_z_max: float  # rad/s^2
    layout: str = "cross"
    category: str = "custom"
    label: str = ""  # the name as a source wrote it (e.g. FLYINGTRUST's "0.55kg-Quadrotor 1")
    radius: float | None = None  # m; filled in when not given
    motor_tau: float = 0.03  # s
    drag: float = DRAG_PER_MASS  # 1/s: drag deceleration per m/s of airspeed
    arm_length: float | None = None  # m; None: by geometric similarity (arm_length_for_mass)
    torque_per_thrust: float | None = None  # m (c_M / c_T); None: from the propeller that fits the arm
    sensors: SensorProfile = field(default_factory=SensorProfile)  # what PX4 reads on the harness's physics

    def __post_init__(self) -> None:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        _check_fields(values, f"vehicle profile {self.name!r}")
        if self.radius is None:
            tip = self._arm() * (1.0 + 0.5 * PROP_DIAMETER_PER_ARM)
            object.__setattr__(self, "radius", tip)

    def _arm(self) -> float:
        return self.arm_length if self.arm_length is not None else arm_length_for_mass(self.mass)

    def physical(self) -> PhysicalParams:
        """The rigid body that reproduces this profile (`profiles.physical`)."""
        return derive_physical(self.mass, self.twr_max, self.alpha_xy_max, self.alpha_z_max, self.layout,
                               self.motor_tau, self.drag, self.arm_length, self.torque_per_thrust)


def profile_from_mapping(data: Mapping[str, Any], source: str) -> VehicleProfile:
    """Validate one profile's fields and build it; ``source`` prefixes every error message.

    Either the capability numbers (``mass``, ``twr_max``, ``alpha_xy_max``, ``alpha_z_max``) or a
    ``physical:`` block (see :mod:`profiles.airframe`) from which they are computed.
    """
    values = dict(data)
    physical = values.pop("physical", None)
    if physical is not None:
        if not isinstance(physical, Mapping):
            raise ProfileError(f"{source}: physical: expected a mapping, got {type(physical).__name__}")
        twice = [key for key in _FROM_PHYSICAL if key in values]
        if twice:
            raise ProfileError(f"{source}: {twice[0]}: given next to a physical block, which determines it; "
                               "give one or the other")
        try:
            frame = Airframe.from_mapping(physical)
        except ValueError as exc:
            raise ProfileError(f"{source}: physical.{exc}") from None
        capability = frame.capability()
        values.update(mass=frame.mass, layout=frame.layout, twr_max=capability.twr_max,
                      alpha_xy_max=capability.alpha_xy_max, alpha_z_max=capability.alpha_z_max)
    if "sensors" in values:
        try:
            values["sensors"] = sensor_profile_from_mapping(values["sensors"], f"{source}: sensors")
        except ValueError as exc:
            raise ProfileError(str(exc)) from None
    _check_fields(values, source)
    return VehicleProfile(**values)
