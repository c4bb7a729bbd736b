"""The rigid body of a quadrotor profile: the physical parameters that reproduce its capability.

FLYINGTRUST's model (Sec. III-A):

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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from profiles.airframe import GRAVITY, LAYOUTS, moment_arm_factor
from profiles.airframe import torque_max as frame_torque_max

ARM_LENGTH_AT_1KG = 0.17  # m, hub to rotor; see the module docstring
PROP_DIAMETER_PER_ARM = 1.2
TORQUE_PER_THRUST_PER_DIAMETER = 0.064  # c_M / c_T divided by the propeller diameter
PROP_TIP_SPEED_MAX = 120.0  # m/s
DRAG_PER_MASS = 0.4  # 1/s
ANGULAR_DAMPING_RATE = 1.0  # 1/s


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



def derive_physical(mass: float, twr_max: float, alpha_xy_max: float, alpha_z_max: float, layout: str,
                    motor_tau: float, drag: float, arm_length: float | None = None,
                    torque_per_thrust: float | None = None) -> PhysicalParams:
    """The rigid body that reproduces a capability vector (see the module docstring)."""
    arm = arm_length if arm_length is not None else arm_length_for_mass(mass)
    f_max = twr_max * mass * GRAVITY / 4.0
    if torque_per_thrust is None:
        torque_per_thrust = TORQUE_PER_THRUST_PER_DIAMETER * PROP_DIAMETER_PER_ARM * arm
    q_max = torque_per_thrust * f_max
    roll_torque = frame_torque_max(layout, arm, f_max, q_max)[0]
    ixx = roll_torque / alpha_xy_max
    omega_max = omega_max_for_arm(arm)
    return PhysicalParams(mass=mass, rotor_thrust_max=f_max, arm_length=arm, rotor_torque_max=q_max, ixx=ixx, iyy=ixx,
                          izz=2.0 * q_max / alpha_z_max, motor_tau=motor_tau, omega_max=omega_max,
                          c_t=f_max / omega_max**2, c_m=q_max / omega_max**2, kdv=drag * mass,
                          kdw=ANGULAR_DAMPING_RATE * ixx, layout=layout)
