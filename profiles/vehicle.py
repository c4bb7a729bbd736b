"""A quadrotor as FLYINGTRUST describes it, and the rigid body that reproduces it.

A profile is the capability vector of FLYINGTRUST (seed 000, Sec. III-A, Eq. 11) plus mass:
``P = [TWR_max, alpha_xy_max, alpha_z_max]``. :meth:`VehicleProfile.physical` turns it into the
physical parameters of a simulated quadrotor that reproduces those three numbers exactly, using the
paper's model:

* thrust ``T = c_T * sum(w_i^2)`` (Eq. 1), so the maximum thrust of one rotor is
  ``f_max = TWR_max * m * g / 4`` (Eq. 2);
* rotor reaction torque ``M_i = c_M * w_i^2`` (Eq. 3);
* maximum roll/pitch torque with the rotors on one side at full thrust and the others stopped
  (Eqs. 4-5): ``2 * f_max * l * sqrt(2)/2`` for the cross layout, ``f_max * l`` for plus;
* maximum yaw torque with the two rotors of one spin direction at full thrust and the other two
  stopped: ``2 * M_max``;
* diagonal inertia (Eq. 8), so ``J_axis = tau_max_axis / alpha_max_axis`` (Eq. 9).

The inertias are therefore *derived* from the profile's angular accelerations, never assumed.
What the paper does not pin down has to be assumed; these are engineering assumptions, chosen to
be plausible for the 0.5-5 kg vehicles of Table I, and none of them changes the profile's three
numbers:

* Arm length (hub to rotor) follows geometric similarity, mass growing with the cube of size:
  ``l = 0.17 m * (m / 1 kg)^(1/3)``. The anchor is typical of 1 kg camera quadrotors (a 350 mm
  motor-to-motor diagonal); the same law gives about 5 cm for a 30 g micro quadrotor and 29 cm for
  5 kg, both ordinary frame sizes. Arm length only sets the inertia values (a longer arm means more
  torque, hence a larger ``J`` for the same ``alpha``).
* Propeller diameter ``D = 1.2 l`` (the largest propellers that do not overlap on a cross frame
  are ``1.41 l``). The rotor torque-to-thrust ratio ``c_M / c_T = 0.064 * D`` follows from
  momentum theory with typical static coefficients ``C_T ~ 0.1``, ``C_P ~ 0.04``
  (``Q/T = C_P D / (2 pi C_T)``); PX4's SIH default (0.1 N m / 5 N = 0.02 m) is of the same order.
  This ratio sets ``J_zz`` from ``alpha_z``.
* Maximum rotor speed from a propeller tip speed of 120 m/s: ``omega_max = 120 / (D/2)``. It only
  sets the scale of ``c_T`` and ``c_M``: the motor lag acts on rotor speed, and in units of
  ``omega_max`` the response is the same whatever ``omega_max`` is.
* Linear drag ``kdv = 0.4 1/s * m`` (drag deceleration 0.4 m/s^2 per m/s of airspeed, the order of
  identified rotor drag of small quadrotors; PX4's SIH default is 1.0 N/(m/s) for its 1 kg vehicle,
  which caps its speed near 10 m/s).
* Angular damping ``kdw = 1.0 1/s * J_xx``, the ratio of PX4's SIH defaults (SIH_KDW / SIH_IXX).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping

import yaml

GRAVITY = 9.80665  # m/s^2, the value PX4 uses (CONSTANTS_ONE_G)

ARM_LENGTH_AT_1KG = 0.17  # m, hub to rotor; see the module docstring
PROP_DIAMETER_PER_ARM = 1.2
TORQUE_PER_THRUST_PER_DIAMETER = 0.064  # c_M / c_T divided by the propeller diameter
PROP_TIP_SPEED_MAX = 120.0  # m/s
DRAG_PER_MASS = 0.4  # 1/s
ANGULAR_DAMPING_RATE = 1.0  # 1/s

LAYOUTS = ("cross", "plus")
VEHICLES_DIR = Path(__file__).resolve().parent / "vehicles"


class ProfileError(ValueError):
    """A vehicle profile is missing, malformed or physically implausible."""


def arm_length_for_mass(mass: float) -> float:
    """Hub-to-rotor distance (m) of a quadrotor of this mass, by geometric similarity."""
    return ARM_LENGTH_AT_1KG * (mass / 1.0) ** (1.0 / 3.0)


def omega_max_for_arm(arm_length: float) -> float:
    """Maximum rotor speed (rad/s) for the propeller that fits an arm of this length."""
    return PROP_TIP_SPEED_MAX / (0.5 * PROP_DIAMETER_PER_ARM * arm_length)


def _moment_arm_factor(layout: str) -> float:
    # Distance of a rotor from the roll (or pitch) axis, per metre of arm: the cross layout's arms
    # sit at 45 degrees to the body axes.
    return math.sqrt(2.0) / 2.0 if layout == "cross" else 1.0


def _rotors_per_side(layout: str) -> int:
    # Rotors that push one side up when rolling: two on a cross frame, one on a plus frame.
    return 2 if layout == "cross" else 1


@dataclass(frozen=True)
class PhysicalParams:
    """Rigid-body and rotor parameters of a quadrotor (SI units, body axes FRD).

    ``pitch_arm_ratio`` is the pitch moment arm over the roll moment arm. Profiles build symmetric
    frames (1.0); other values only come from PX4 parameters with SIH_L_PITCH != SIH_L_ROLL.
    """

    mass: float
    rotor_thrust_max: float  # N, one rotor
    arm_length: float  # m, hub to rotor
    rotor_torque_max: float  # N m, one rotor's reaction torque at full thrust
    ixx: float
    iyy: float
    izz: float
    motor_tau: float  # s, first-order lag of rotor speed
    omega_max: float  # rad/s
    c_t: float  # N/(rad/s)^2
    c_m: float  # N m/(rad/s)^2
    kdv: float  # N/(m/s), linear drag on airspeed
    kdw: float  # N m/(rad/s), angular damping
    layout: str = "cross"
    pitch_arm_ratio: float = 1.0

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout: expected one of {LAYOUTS}, got {self.layout!r}")
        for f in fields(self):
            if f.name in ("layout", "kdv", "kdw"):
                continue
            value = getattr(self, f.name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{f.name}: expected a finite number > 0, got {value!r}")
        if self.kdv < 0 or self.kdw < 0:
            raise ValueError(f"kdv, kdw: expected numbers >= 0, got {self.kdv}, {self.kdw}")

    @property
    def weight(self) -> float:
        """m g in newtons."""
        return self.mass * GRAVITY

    @property
    def thrust_max(self) -> float:
        """Total thrust with every rotor at full speed (N)."""
        return 4.0 * self.rotor_thrust_max

    @property
    def twr_max(self) -> float:
        """Maximum thrust-to-weight ratio (Eq. 2)."""
        return self.thrust_max / self.weight

    @property
    def hover_thrust(self) -> float:
        """Normalized collective thrust (0..1) that balances the weight."""
        return self.weight / self.thrust_max

    @property
    def roll_arm(self) -> float:
        """Distance of each rotor from the roll axis (m); PX4's SIH_L_ROLL."""
        return self.arm_length * _moment_arm_factor(self.layout)

    @property
    def pitch_arm(self) -> float:
        """Distance of each rotor from the pitch axis (m); PX4's SIH_L_PITCH."""
        return self.roll_arm * self.pitch_arm_ratio

    @property
    def torque_max(self) -> tuple[float, float, float]:
        """Largest roll, pitch and yaw torques the rotors can produce (N m)."""
        per_side = _rotors_per_side(self.layout) * self.rotor_thrust_max
        return (per_side * self.roll_arm, per_side * self.pitch_arm, 2.0 * self.rotor_torque_max)

    @property
    def alpha_max(self) -> tuple[float, float, float]:
        """Largest angular accelerations about body x, y, z (rad/s^2), Eq. 9."""
        tx, ty, tz = self.torque_max
        return (tx / self.ixx, ty / self.iyy, tz / self.izz)

    def to_sih_params(self) -> dict[str, float]:
        """These parameters under PX4 SIH's names, as the parameter table shows them."""
        return {
            "SIH_MASS": self.mass,
            "SIH_IXX": self.ixx,
            "SIH_IYY": self.iyy,
            "SIH_IZZ": self.izz,
            "SIH_T_MAX": self.rotor_thrust_max,
            "SIH_Q_MAX": self.rotor_torque_max,
            "SIH_L_ROLL": self.roll_arm,
            "SIH_L_PITCH": self.pitch_arm,
            "SIH_T_TAU": self.motor_tau,
            "SIH_KDV": self.kdv,
            "SIH_KDW": self.kdw,
        }

    @classmethod
    def from_sih_params(cls, mapping: Mapping[str, float], layout: str = "cross") -> "PhysicalParams":
        """Rebuild the vehicle from PX4 SIH parameters (the inverse of :meth:`to_sih_params`).

        SIH has no rotor speed; ``omega_max`` follows the arm-length assumption of this module,
        which only scales ``c_T`` and ``c_M``.
        """
        if layout not in LAYOUTS:
            raise ValueError(f"layout: expected one of {LAYOUTS}, got {layout!r}")
        l_roll = float(mapping["SIH_L_ROLL"])
        l_pitch = float(mapping["SIH_L_PITCH"])
        if l_roll <= 0 or l_pitch <= 0:
            raise ValueError(f"SIH_L_ROLL, SIH_L_PITCH: expected > 0, got {l_roll}, {l_pitch}")
        arm = l_roll / _moment_arm_factor(layout)
        omega_max = omega_max_for_arm(arm)
        t_max = float(mapping["SIH_T_MAX"])
        q_max = float(mapping["SIH_Q_MAX"])
        return cls(
            mass=float(mapping["SIH_MASS"]),
            rotor_thrust_max=t_max,
            arm_length=arm,
            rotor_torque_max=q_max,
            ixx=float(mapping["SIH_IXX"]),
            iyy=float(mapping["SIH_IYY"]),
            izz=float(mapping["SIH_IZZ"]),
            motor_tau=float(mapping["SIH_T_TAU"]),
            omega_max=omega_max,
            c_t=t_max / omega_max**2,
            c_m=q_max / omega_max**2,
            kdv=float(mapping["SIH_KDV"]),
            kdw=float(mapping["SIH_KDW"]),
            layout=layout,
            pitch_arm_ratio=l_pitch / l_roll,
        )


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# Field -> (required, check, expectation). A check returns True when the value is acceptable.
_RULES: dict[str, tuple[bool, Any, str]] = {
    "name": (True, lambda v: isinstance(v, str) and v.strip() != "", "a non-empty string"),
    "mass": (True, lambda v: _is_number(v) and 0.05 <= v <= 50.0, "a mass in kg between 0.05 and 50"),
    "twr_max": (True, lambda v: _is_number(v) and 1.0 < v <= 20.0,
                "a number > 1 (a vehicle that cannot hover) and <= 20"),
    "alpha_xy_max": (True, lambda v: _is_number(v) and v > 0, "a positive angular acceleration in rad/s^2"),
    "alpha_z_max": (True, lambda v: _is_number(v) and v > 0, "a positive angular acceleration in rad/s^2"),
    "layout": (False, lambda v: v in LAYOUTS, f"one of {', '.join(LAYOUTS)}"),
    "category": (False, lambda v: isinstance(v, str), "a string"),
    "radius": (False, lambda v: v is None or (_is_number(v) and 0 < v <= 5.0),
               "a collision radius in m, > 0 and <= 5"),
    "motor_tau": (False, lambda v: _is_number(v) and 0 < v <= 0.1, "a time constant in s, > 0 and <= 0.1"),
}


def _check_fields(values: Mapping[str, Any], source: str) -> None:
    unknown = sorted(set(values) - set(_RULES))
    if unknown:
        raise ProfileError(f"{source}: {unknown[0]}: unknown field (known: {', '.join(_RULES)})")
    for key, (required, ok, expectation) in _RULES.items():
        if key not in values:
            if required:
                raise ProfileError(f"{source}: {key}: missing (expected {expectation})")
            continue
        if not ok(values[key]):
            raise ProfileError(f"{source}: {key}: expected {expectation}, got {values[key]!r}")


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
    radius: float | None = None  # m; filled in when not given
    motor_tau: float = 0.03  # s

    def __post_init__(self) -> None:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        _check_fields(values, f"vehicle profile {self.name!r}")
        if self.radius is None:
            tip = arm_length_for_mass(self.mass) * (1.0 + 0.5 * PROP_DIAMETER_PER_ARM)
            object.__setattr__(self, "radius", tip)

    def physical(self) -> PhysicalParams:
        """The rigid body that reproduces this profile (see the module docstring)."""
        arm = arm_length_for_mass(self.mass)
        f_max = self.twr_max * self.mass * GRAVITY / 4.0
        roll_torque = _rotors_per_side(self.layout) * f_max * arm * _moment_arm_factor(self.layout)
        torque_per_thrust = TORQUE_PER_THRUST_PER_DIAMETER * PROP_DIAMETER_PER_ARM * arm
        q_max = torque_per_thrust * f_max
        ixx = roll_torque / self.alpha_xy_max
        omega_max = omega_max_for_arm(arm)
        return PhysicalParams(
            mass=self.mass,
            rotor_thrust_max=f_max,
            arm_length=arm,
            rotor_torque_max=q_max,
            ixx=ixx,
            iyy=ixx,
            izz=2.0 * q_max / self.alpha_z_max,
            motor_tau=self.motor_tau,
            omega_max=omega_max,
            c_t=f_max / omega_max**2,
            c_m=q_max / omega_max**2,
            kdv=DRAG_PER_MASS * self.mass,
            kdw=ANGULAR_DAMPING_RATE * ixx,
            layout=self.layout,
        )


def list_vehicle_profiles() -> list[str]:
    """Names of the profiles shipped in ``profiles/vehicles``."""
    return sorted(p.stem for p in VEHICLES_DIR.glob("*.yaml"))


def _display_path(path: Path) -> str:
    # Name shipped files the way a reader finds them in the repository.
    try:
        return str(path.resolve().relative_to(VEHICLES_DIR.parent.parent))
    except ValueError:
        return str(path)


def load_vehicle_profile(name_or_path: str | Path) -> VehicleProfile:
    """Load a profile by bare name (``profiles/vehicles/NAME.yaml``) or from a YAML file path."""
    text = str(name_or_path)
    is_name = isinstance(name_or_path, str) and "/" not in text and "\\" not in text \
        and not text.endswith((".yaml", ".yml"))
    if is_name:
        path = VEHICLES_DIR / f"{text}.yaml"
        if not path.is_file():
            raise ProfileError(
                f"unknown vehicle profile {text!r} (available: {', '.join(list_vehicle_profiles()) or 'none'})")
    else:
        path = Path(name_or_path)
        if not path.is_file():
            raise ProfileError(f"{path}: no such vehicle profile file")
    source = _display_path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ProfileError(f"{source}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ProfileError(f"{source}: expected a mapping of fields, got {type(data).__name__}")
    data = dict(data)
    data.setdefault("name", path.stem)
    _check_fields(data, source)
    return VehicleProfile(**data)
