"""A quadrotor as FLYINGTRUST describes it, and the rigid body that reproduces it.

A profile is the capability vector of FLYINGTRUST (Sec. III-A, Eq. 11) plus mass:
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
* A profile may give its own ``arm_length`` and ``torque_per_thrust`` instead of these two
  assumptions (the default profile gives SIH's: 0.2 m / cos 45 deg and 0.1 N m / 5 N), which then
  also set the inertias and the angular damping.
* Linear drag ``kdv = 0.4 1/s * m`` (drag deceleration 0.4 m/s^2 per m/s of airspeed, the order of
  identified rotor drag of small quadrotors) unless the profile gives its own ``drag`` (1/s); PX4's
  SIH default is 1.0 N/(m/s) for its 1 kg vehicle, which the default profile takes so that it flies
  as fast as PX4's SIH does.
* Angular damping ``kdw = 1.0 1/s * J_xx``, the ratio of PX4's SIH defaults (SIH_KDW / SIH_IXX).

Where profiles live: ``profiles/vehicles/*.yaml``. A file is either one profile (found by its
file name) or a library, a mapping whose ``profiles`` is a list (``flyingtrust.yaml``: all 36
platforms of Table I, found by each entry's ``name``). Names match regardless of case, spaces and
underscores. Instead of the three numbers a profile may give a ``physical:`` block (mass, frame,
rotors, inertia; see :mod:`profiles.airframe`) from which they are computed. An optional
``sensors:`` block gives the rates and noise of what PX4 reads when it flies on the harness's
physics (:mod:`profiles.sensors`; PX4-like defaults otherwise).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping


from config.errors import ConfigError
from config.fields import shown
from config.loading import load_yaml
from profiles.airframe import GRAVITY, LAYOUTS, Airframe, is_finite_number, moment_arm_factor
from profiles.sensors import SensorProfile, sensor_profile_from_mapping
from profiles.airframe import torque_max as frame_torque_max

ARM_LENGTH_AT_1KG = 0.17  # m, hub to rotor; see the module docstring
PROP_DIAMETER_PER_ARM = 1.2
TORQUE_PER_THRUST_PER_DIAMETER = 0.064  # c_M / c_T divided by the propeller diameter
PROP_TIP_SPEED_MAX = 120.0  # m/s
DRAG_PER_MASS = 0.4  # 1/s
ANGULAR_DAMPING_RATE = 1.0  # 1/s

VEHICLES_DIR = Path(__file__).resolve().parent / "vehicles"


class ProfileError(ConfigError):
    """A vehicle profile is missing, malformed or physically implausible."""


def arm_length_for_mass(mass: float) -> float:
    """Hub-to-rotor distance (m) of a quadrotor of this mass, by geometric similarity."""
    return ARM_LENGTH_AT_1KG * (mass / 1.0) ** (1.0 / 3.0)


def omega_max_for_arm(arm_length: float) -> float:
    """Maximum rotor speed (rad/s) for the propeller that fits an arm of this length."""
    return PROP_TIP_SPEED_MAX / (0.5 * PROP_DIAMETER_PER_ARM * arm_length)


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
        return self.arm_length * moment_arm_factor(self.layout)

    @property
    def pitch_arm(self) -> float:
        """Distance of each rotor from the pitch axis (m); PX4's SIH_L_PITCH."""
        return self.roll_arm * self.pitch_arm_ratio

    @property
    def torque_max(self) -> tuple[float, float, float]:
        """Largest roll, pitch and yaw torques the rotors can produce (N m)."""
        return frame_torque_max(self.layout, self.arm_length, self.rotor_thrust_max, self.rotor_torque_max,
                          self.pitch_arm_ratio)

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
        arm = l_roll / moment_arm_factor(layout)
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
        """The rigid body that reproduces this profile (see the module docstring)."""
        arm = self._arm()
        f_max = self.twr_max * self.mass * GRAVITY / 4.0
        torque_per_thrust = (self.torque_per_thrust if self.torque_per_thrust is not None
                             else TORQUE_PER_THRUST_PER_DIAMETER * PROP_DIAMETER_PER_ARM * arm)
        q_max = torque_per_thrust * f_max
        roll_torque = frame_torque_max(self.layout, arm, f_max, q_max)[0]
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
            kdv=self.drag * self.mass,
            kdw=ANGULAR_DAMPING_RATE * ixx,
            layout=self.layout,
        )


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


def _profile_key(name: str) -> str:
    # Names are matched the way people type them: case, spaces and underscores do not matter,
    # so "0.55kg-Quadrotor 1" finds "0.55kg-Quadrotor-1".
    return re.sub(r"[\s_]+", "-", name.strip()).lower()


def _display_path(path: Path) -> str:
    # Name shipped files the way a reader finds them in the repository.
    try:
        return str(path.resolve().relative_to(VEHICLES_DIR.parent.parent))
    except ValueError:
        return str(path)


def _read_yaml(path: Path) -> Any:
    try:
        return load_yaml(path, "vehicle profile")
    except ConfigError as exc:
        raise ProfileError(list(exc.problems)) from None


def _library_profiles(path: Path, data: Mapping[str, Any]) -> list[VehicleProfile]:
    """Every profile of a library file (a mapping whose ``profiles`` is a list), all validated."""
    source = _display_path(path)
    entries = data["profiles"]
    if not isinstance(entries, list) or not entries:
        raise ProfileError(f"{source}: profiles: expected a non-empty list of profiles")
    profiles: list[VehicleProfile] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        where = f"{source}: profiles[{index}]"
        if not isinstance(entry, dict):
            raise ProfileError(f"{where}: expected a mapping of fields, got {type(entry).__name__}")
        if isinstance(entry.get("name"), str):
            where += f" ({entry['name']})"
        profile = profile_from_mapping(entry, where)
        key = _profile_key(profile.name)
        if key in seen:
            raise ProfileError(f"{where}: name: {profile.name!r} already used by profiles[{seen[key]}]")
        seen[key] = index
        profiles.append(profile)
    return profiles


def _shipped() -> dict[str, Path | VehicleProfile]:
    """Every shipped profile by key: single-profile files by path (loaded on demand), library entries loaded."""
    found: dict[str, Path | VehicleProfile] = {}
    for path in sorted(VEHICLES_DIR.glob("*.yaml")):
        library = _library_file(path, path.stat().st_mtime_ns)
        if library is None:
            found[_profile_key(path.stem)] = path
        else:
            for profile in library:
                found[_profile_key(profile.name)] = profile
    return found


@functools.lru_cache(maxsize=32)
def _library_file(path: Path, mtime_ns: int) -> tuple[VehicleProfile, ...] | None:
    # Parsing the 36-platform library takes ~100 ms, and campaigns load a profile per trial: keep
    # each file's parse until it changes on disk (mtime in the key).
    data = _read_yaml(path)
    if isinstance(data, dict) and "profiles" in data:
        return tuple(_library_profiles(path, data))
    return None


def library_profiles(category: str | None = None) -> list[VehicleProfile]:
    """The profiles of the shipped library files (FLYINGTRUST's Table I), optionally of one category."""
    profiles = [p for p in _shipped().values() if isinstance(p, VehicleProfile)]
    return [p for p in profiles if category is None or p.category == category]


def list_vehicle_profiles() -> list[str]:
    """Names of the profiles shipped in ``profiles/vehicles`` (single files and library entries)."""
    return sorted((p.name if isinstance(p, VehicleProfile) else p.stem for p in _shipped().values()),
                  key=_profile_key)


def load_vehicle_profile(name_or_path: str | Path) -> VehicleProfile:
    """Load a profile by name (a shipped file's stem or a library entry) or from a YAML file path."""
    text = str(name_or_path)
    is_name = isinstance(name_or_path, str) and "/" not in text and "\\" not in text \
        and not text.endswith((".yaml", ".yml"))
    if is_name:
        shipped = _shipped()
        found = shipped.get(_profile_key(text))
        if found is None:
            names = ", ".join(list_vehicle_profiles()) or "none"
            raise ProfileError(f"unknown vehicle profile {text!r} (available: {names}; "
                               "`hil profiles list` shows them as a table)")
        if isinstance(found, VehicleProfile):
            return found
        path = found
    else:
        path = Path(name_or_path)
        if not path.is_file():
            raise ProfileError(f"{path}: no such vehicle profile file")
    source = _display_path(path)
    data = _read_yaml(path)
    if not isinstance(data, dict):
        raise ProfileError(f"{source}: expected a mapping of fields, got {type(data).__name__}")
    if "profiles" in data:
        raise ProfileError(f"{source}: a library of {len(data['profiles'] or [])} profiles; "
                           "load one of them by name instead")
    data = dict(data)
    data.setdefault("name", path.stem)
    return profile_from_mapping(data, source)
