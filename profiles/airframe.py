"""From a real airframe to FLYINGTRUST's capability numbers (the inverse of a profile).

A user who knows the hardware (mass, frame, motors and propellers, inertia) gets the three numbers
FLYINGTRUST describes a platform by (Sec. III-A, Eq. 11): ``TWR_max``, ``alpha_xy_max``
and ``alpha_z_max``. The model is the paper's:

* rotor thrust ``f = c_T w^2`` (Eq. 1), so ``TWR_max = 4 f_max / (m g)`` (Eq. 2);
* rotor reaction torque ``M = c_M w^2`` (Eq. 3);
* saturated roll/pitch torque with the rotors of one side at full thrust and the others stopped
  (Eqs. 4-5), yaw torque with the two rotors of one spin direction at full thrust;
* ``alpha = tau_max / J`` per body axis with diagonal ``J`` (Eqs. 6-9). As in the paper,
  ``alpha_xy`` is the roll value (Sec. III-A: roll dominates; J_xx ~ J_yy).

The rotor may be described in any of three ways, whichever the data sheet gives:

* ``thrust_max`` (N) and ``torque_max`` (N m) of one rotor at full throttle (a thrust-stand test);
* the paper's coefficients ``c_t`` (N/(rad/s)^2), ``c_m`` (N m/(rad/s)^2) and ``omega_max`` (rad/s);
* propeller data: ``diameter`` (m), static coefficients ``ct`` and ``cq`` (the UIUC/APC convention
  ``T = ct rho n^2 D^4``, ``Q = cq rho n^2 D^5`` with ``n`` in rev/s), ``rpm_max`` under load, and
  optionally ``air_density`` (kg/m^3, default 1.225, sea level).

The frame geometry (which rotors push which side) is shared with :mod:`profiles.physical`, so the
forward derivation and this inverse cannot drift apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

GRAVITY = 9.80665  # m/s^2, the value PX4 uses (CONSTANTS_ONE_G)
SEA_LEVEL_AIR_DENSITY = 1.225  # kg/m^3, ISA
LAYOUTS = ("cross", "plus")


def moment_arm_factor(layout: str) -> float:
    """Distance of a rotor from the roll (or pitch) axis, per metre of arm."""
    # The cross layout's arms sit at 45 degrees to the body axes.
    return math.sqrt(2.0) / 2.0 if layout == "cross" else 1.0


def rotors_per_side(layout: str) -> int:
    """Rotors that push one side up when rolling: two on a cross frame, one on a plus frame."""
    return 2 if layout == "cross" else 1


def torque_max(layout: str, arm_length: float, rotor_thrust_max: float, rotor_torque_max: float,
               pitch_arm_ratio: float = 1.0) -> tuple[float, float, float]:
    """Largest roll, pitch and yaw torques (N m) a quadrotor's rotors can produce (Eqs. 4-5)."""
    roll_arm = arm_length * moment_arm_factor(layout)
    per_side = rotors_per_side(layout) * rotor_thrust_max
    return per_side * roll_arm, per_side * roll_arm * pitch_arm_ratio, 2.0 * rotor_torque_max


@dataclass(frozen=True)
class Capability:
    """FLYINGTRUST's ``P = [TWR_max, alpha_xy_max, alpha_z_max]`` (Eq. 11)."""

    twr_max: float
    alpha_xy_max: float  # rad/s^2
    alpha_z_max: float  # rad/s^2


@dataclass(frozen=True)
class Airframe:
    """A quadrotor as built: mass, frame, one rotor's limits and the inertia (SI units)."""

    mass: float  # kg
    arm_length: float  # m, hub to rotor
    rotor_thrust_max: float  # N, one rotor at full throttle
    rotor_torque_max: float  # N m, one rotor's reaction torque at full throttle
    ixx: float  # kg m^2
    iyy: float
    izz: float
    layout: str = "cross"

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout: expected one of {', '.join(LAYOUTS)}, got {self.layout!r}")
        for name in ("mass", "arm_length", "rotor_thrust_max", "rotor_torque_max", "ixx", "iyy", "izz"):
            value = getattr(self, name)
            if not (is_finite_number(value) and value > 0):
                raise ValueError(f"{name}: expected a finite number > 0, got {value!r}")

    def capability(self) -> Capability:
        """The three FLYINGTRUST numbers of this airframe (Eqs. 2 and 9)."""
        tx, _, tz = torque_max(self.layout, self.arm_length, self.rotor_thrust_max, self.rotor_torque_max)
        return Capability(
            twr_max=4.0 * self.rotor_thrust_max / (self.mass * GRAVITY),
            alpha_xy_max=tx / self.ixx,
            alpha_z_max=tz / self.izz,
        )

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "Airframe":
        """Build from a profile's ``physical:`` block; ValueError names the offending field.

        Expected keys: ``mass``, ``arm_length``, ``ixx``, ``iyy``, ``izz``, optional ``layout``, and
        ``rotor``: a mapping in one of the three forms of the module docstring.
        """
        known = {"mass", "arm_length", "ixx", "iyy", "izz", "layout", "rotor"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{unknown[0]}: unknown field (known: {', '.join(sorted(known))})")
        for key in ("mass", "arm_length", "ixx", "iyy", "izz", "rotor"):
            if key not in data:
                raise ValueError(f"{key}: missing")
        rotor = data["rotor"]
        if not isinstance(rotor, Mapping):
            raise ValueError(f"rotor: expected a mapping, got {rotor!r}")
        try:
            thrust, torque = rotor_limits(rotor)
        except ValueError as exc:
            raise ValueError(f"rotor.{exc}") from None
        return cls(mass=data["mass"], arm_length=data["arm_length"], rotor_thrust_max=thrust,
                   rotor_torque_max=torque, ixx=data["ixx"], iyy=data["iyy"], izz=data["izz"],
                   layout=data.get("layout", "cross"))


# The three ways to describe a rotor, by the set of keys they use.
_ROTOR_FORMS = (
    ("thrust_max", "torque_max"),
    ("c_t", "c_m", "omega_max"),
    ("diameter", "ct", "cq", "rpm_max"),
)


def rotor_limits(rotor: Mapping[str, Any]) -> tuple[float, float]:
    """One rotor's full-throttle thrust (N) and reaction torque (N m) from any of the three forms.

    ValueError messages start with the offending key, so callers can prefix a path.
    """
    keys = set(rotor)
    form = next((f for f in _ROTOR_FORMS if set(f) <= keys), None)
    if form is None:
        forms = "; ".join(" + ".join(f) for f in _ROTOR_FORMS)
        raise ValueError(f"{', '.join(sorted(keys)) or '(empty)'}: expected one of these sets of keys: {forms}")
    allowed = set(form) | ({"air_density"} if "diameter" in form else set())
    extra = sorted(keys - allowed)
    if extra:
        raise ValueError(f"{extra[0]}: not used with {' + '.join(form)}")
    for key in sorted(allowed & keys):
        if not (is_finite_number(rotor[key]) and rotor[key] > 0):
            raise ValueError(f"{key}: expected a finite number > 0, got {rotor[key]!r}")
    if form[0] == "thrust_max":
        return float(rotor["thrust_max"]), float(rotor["torque_max"])
    if form[0] == "c_t":
        w2 = float(rotor["omega_max"]) ** 2
        return float(rotor["c_t"]) * w2, float(rotor["c_m"]) * w2
    rho = float(rotor.get("air_density", SEA_LEVEL_AIR_DENSITY))
    n2 = (float(rotor["rpm_max"]) / 60.0) ** 2
    d = float(rotor["diameter"])
    return float(rotor["ct"]) * rho * n2 * d**4, float(rotor["cq"]) * rho * n2 * d**5


def is_finite_number(v: Any) -> bool:
    """A real number (not a bool), neither infinite nor NaN."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
