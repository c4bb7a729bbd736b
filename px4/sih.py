"""A vehicle profile as PX4 SIH parameters, so that PX4 SITL flies the profile's capability.

How PX4's SIH (src/modules/simulation/simulator_sih/sih.cpp, quadcopter case; the same equations
in v1.14.0 and v1.16.1, which moved the integration to an ECEF frame) turns actuator outputs into
forces, as read from its source (Sih::read_motors, generate_force_and_torques,
equations_of_motion):

* each motor output ``u_i`` in [0, 1] passes a first-order lag with time constant SIH_T_TAU
  (explicit Euler at the simulator step), and the thrust is *linear* in the lagged ``u_i``:
  ``T = SIH_T_MAX * (u0 + u1 + u2 + u3)`` along body -z;
* roll torque ``SIH_L_ROLL * SIH_T_MAX * (-u0 + u1 + u2 - u3)``, pitch torque
  ``SIH_L_PITCH * SIH_T_MAX * (u0 - u1 + u2 - u3)``, yaw torque ``SIH_Q_MAX * (u0 + u1 - u2 - u3)``
  (PX4's quad-X order: 0 front-right CCW, 1 rear-left CCW, 2 front-left CW, 3 rear-right CW).
  SIH_L_ROLL is therefore the distance of each rotor from the roll axis (for a cross frame,
  arm length times sqrt(2)/2), and the saturated torques are ``2 L_ROLL T_MAX``,
  ``2 L_PITCH T_MAX`` and ``2 Q_MAX``: exactly FLYINGTRUST's Eqs. 4-5 with two rotors per side;
* drag ``-SIH_KDV * v_air`` (N), angular damping ``-SIH_KDW * w`` (N m), full inertia matrix
  from SIH_IXX..SIH_IZZ (cross terms default to 0), body rates clamped to +-6 pi rad/s.

So the profile's three numbers come out of SIH exactly when SIH gets the rigid body that
:meth:`profiles.vehicle.VehicleProfile.physical` derives (`profiles.physical`): ``4 T_MAX / (m g) = TWR_max``,
``2 L_ROLL T_MAX / I_xx = alpha_xy_max``, ``2 Q_MAX / I_zz = alpha_z_max``. Measured on the
shipped v1.14.0 and v1.16.1 binaries (px4/sih_check.py, benchmarks/sih_profiles.py): every
number within 0.5 % for the profiles of Table I. The mapping of the three numbers was right all
along; what read 3.13 m/s^2 for a 3.92 m/s^2 profile (2.00kg-T-MOTOR) was the way it was read:
the peak of the estimator's filtered acceleration during a velocity-controlled climb, where PX4's
allocator holds the motors at about 0.95 of full (attitude margin, MC_AIRMODE 0) and SIH_KDV's
drag grows with the climb speed. px4/sih_check.py explains and measures it properly.

Expected error, steady state: none from the model; PX4 stores parameters as float32 (relative
rounding 6e-8), and newer SIH versions use the Somigliana gravity at SIH_LOC_LAT0 (9.808 m/s^2 at
PX4's default 47.4 deg) instead of 9.80665, which shifts the climb acceleration ``(TWR - 1) g`` by
about 0.02 %. Transients differ slightly from the built-in vehicle: SIH lags the thrust, the
built-in vehicle the rotor speed (thrust ~ speed^2), so a thrust step rises a little faster on the
built-in vehicle for the same time constant.

Motor lag. SIH advances its lag only by explicit Euler at its simulation step ``dt``
(sih.cpp, read_motors: ``u += dt / SIH_T_TAU * (u_sp - u)``); ``dt`` is
``1 / min(IMU_GYRO_RATEMAX, IMU_INTEG_RATE)`` in lockstep (sih.cpp, lockstep_loop), 4 ms with
the SITL defaults (800 and 250 Hz; measured: actuator_motors every 4 ms on v1.14.0 and v1.16.1).
Taken literally, a 30 ms profile lag would become a 28 ms one (the Euler pole ``1 - dt/tau``
against ``exp(-dt/tau)``), and a lag shorter than ``dt/2`` would diverge. So SIH_T_TAU is set to
``dt / (1 - exp(-dt / tau))``: SIH's discrete lag then equals the continuous first-order lag at
every step, for any tau (tau -> 0 gives SIH_T_TAU = dt, a step with no lag, the best a 4 ms
simulator can do).

Controller parameters. PX4's rate controller outputs *normalized* torque (1 = all the torque the
rotors have), so the same MC_*RATE_* gains give a loop gain proportional to the vehicle's angular
acceleration. The SIH airframe's gains are tuned for SIH's default vehicle (alpha_xy 80, alpha_z
6.67 rad/s^2); a 1467 rad/s^2 profile with those gains would oscillate and a 3.3 rad/s^2 yaw axis
would crawl. The gain multipliers MC_ROLLRATE_K / MC_PITCHRATE_K / MC_YAWRATE_K are scaled by
``alpha_default / alpha_profile`` so that every profile keeps the default loop bandwidth, and
MPC_THR_HOVER starts at the profile's true hover thrust ``1 / TWR_max`` (PX4 then refines it).
The control allocator needs nothing from the profile: for a symmetric quad-X the pseudo-inverse
it builds from CA_ROTOR*_PX/PY (0.15 m in v1.14's SIH airframe, 1 m in v1.16's) is normalized
per axis (ControlAllocationPseudoInverse::normalizeControlAllocationMatrix), so arm length cancels
and a full roll command saturates one side whatever the geometry parameters say; measured: the
same profile gives the same identified torques on both releases (px4/sih_check.py).

What SIH cannot reproduce (``ValueError`` naming the profile, the limit and PX4's reason):

* a layout other than quad-X: SIH's quadcopter torques are written for quad-X only;
* hover thrust ``1 / TWR_max`` outside [0.12, 0.8], i.e. TWR_max outside [1.25, 8.33]:
  MPC_THR_HOVER is documented for 0.1-0.8 (mc_pos_control/multicopter_position_control_params.c)
  and MulticopterPositionControl::parameters_update constrains it to [MPC_THR_MIN, MPC_THR_MAX]
  ("Hover thrust has been constrained by min/max"); with MPC_THR_MIN at its default 0.12, a vehicle
  whose hover thrust is lower cannot even descend at PX4's minimum collective thrust;
* an angular acceleration whose gain multiplier falls outside MC_*RATE_K's range 0.01-5
  (mc_rate_control_params.c): alpha_xy outside [16, 8000] rad/s^2 or alpha_z outside
  [1.33, 667] rad/s^2; PX4's rate loop cannot be brought to the default bandwidth there.

SIH also clamps body rates at +-6 pi rad/s (sih.cpp, equations_of_motion). A profile has no rate
limit, so nothing is refused for it, but an agile profile's peak angular acceleration can only be
measured by identification (px4/sih_check.py), not read off a flight.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from profiles.airframe import GRAVITY, LAYOUTS, Capability, moment_arm_factor
from profiles.physical import PhysicalParams, omega_max_for_arm
from profiles.vehicle import VehicleProfile
from px4.params import SPEC_BY_NAME

# PX4's ranges for the gain multipliers (mc_rate_control_params.c: @min 0.01 @max 5.0).
RATE_K_RANGE = (0.01, 5.0)
# MPC_THR_HOVER: @max 0.8 (multicopter_position_control_params.c); below MPC_THR_MIN (default
# 0.12) MulticopterPositionControl::parameters_update constrains it.
THR_HOVER_RANGE = (0.12, 0.8)
# SIH's simulation step with the SITL defaults: 1 / min(IMU_GYRO_RATEMAX 800, IMU_INTEG_RATE 250).
SIH_STEP_S = 0.004


def physical_to_sih(phys: PhysicalParams) -> dict[str, float]:
    """A rigid body under PX4 SIH's parameter names, as the parameter table shows them."""
    return {
        "SIH_MASS": phys.mass,
        "SIH_IXX": phys.ixx,
        "SIH_IYY": phys.iyy,
        "SIH_IZZ": phys.izz,
        "SIH_T_MAX": phys.rotor_thrust_max,
        "SIH_Q_MAX": phys.rotor_torque_max,
        "SIH_L_ROLL": phys.roll_arm,
        "SIH_L_PITCH": phys.pitch_arm,
        "SIH_T_TAU": phys.motor_tau,
        "SIH_KDV": phys.kdv,
        "SIH_KDW": phys.kdw,
    }


def physical_from_sih(mapping: Mapping[str, float], layout: str = "cross") -> PhysicalParams:
    """Rebuild the vehicle from PX4 SIH parameters (the inverse of :func:`physical_to_sih`).

    SIH has no rotor speed; ``omega_max`` follows the arm-length assumption of profiles.physical,
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
    return PhysicalParams(
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


def sih_default_capability() -> Capability:
    """The capability of SIH's default vehicle, computed with SIH's own equations."""
    return sih_capability({name: spec.default for name, spec in SPEC_BY_NAME.items() if name.startswith("SIH_")})


def sih_capability(params: dict[str, float]) -> Capability:
    """What SIH makes of these parameters: its force and torque equations at saturation.

    Computed in float32 as PX4 stores parameters, so the result includes the rounding PX4 sees.
    Saturation means all four outputs at 1 (thrust), the two rotors of one side at 1 and the other
    two at 0 (roll), the two counter-clockwise rotors at 1 (yaw).
    """
    p = {name: np.float32(value) for name, value in params.items()}
    thrust = p["SIH_T_MAX"] * np.float32(4.0)
    roll_torque = p["SIH_L_ROLL"] * p["SIH_T_MAX"] * np.float32(2.0)
    yaw_torque = p["SIH_Q_MAX"] * np.float32(2.0)
    return Capability(
        twr_max=float(thrust / (p["SIH_MASS"] * np.float32(GRAVITY))),
        alpha_xy_max=float(roll_torque / p["SIH_IXX"]),
        alpha_z_max=float(yaw_torque / p["SIH_IZZ"]),
    )


def sih_motor_tau(tau: float, step: float = SIH_STEP_S) -> float:
    """SIH_T_TAU that makes SIH's explicit-Euler lag equal a continuous lag ``tau`` at every step."""
    return step / (1.0 - math.exp(-step / tau))


def sih_params(profile: VehicleProfile) -> dict[str, float]:
    """SIH_* parameters of the rigid body that reproduces ``profile`` (see the module docstring)."""
    if profile.layout != "cross":
        raise ValueError(f"profile {profile.name!r}: PX4 SIH simulates the cross (quad-X) layout only, not "
                         f"{profile.layout!r} (sih.cpp, generate_force_and_torques: quad-X torques)")
    params = physical_to_sih(profile.physical())
    params["SIH_T_TAU"] = sih_motor_tau(profile.motor_tau)
    return params


def _refuse_outside(profile: VehicleProfile, what: str, value: float, lo: float, hi: float, reason: str) -> None:
    if not lo <= value <= hi:
        raise ValueError(f"profile {profile.name!r}: {what} {value:.4g} is outside [{lo:.4g}, {hi:.4g}]; "
                         f"PX4 SITL SIH cannot fly it: {reason}")


def controller_params(profile: VehicleProfile) -> dict[str, float]:
    """PX4 controller parameters that suit the profile's vehicle (hover thrust, rate-loop gain).

    ValueError when PX4's parameter ranges cannot fit the profile (see the module docstring).
    """
    reference = sih_default_capability()
    lo, hi = RATE_K_RANGE
    hover = 1.0 / profile.twr_max
    _refuse_outside(profile, "TWR_max", profile.twr_max, 1.0 / THR_HOVER_RANGE[1], 1.0 / THR_HOVER_RANGE[0],
                    f"its hover thrust 1/TWR_max = {hover:.3f} must lie in MPC_THR_HOVER's "
                    f"{THR_HOVER_RANGE[0]}-{THR_HOVER_RANGE[1]} (multicopter_position_control_params.c @max 0.8; "
                    "MulticopterPositionControl::parameters_update constrains it to MPC_THR_MIN 0.12 and above, "
                    "and a lower hover thrust cannot descend at PX4's minimum collective thrust)")
    k_range = "MC_ROLLRATE_K/MC_PITCHRATE_K/MC_YAWRATE_K accept 0.01-5 (mc_rate_control_params.c)"
    _refuse_outside(profile, "alpha_xy_max (rad/s^2)", profile.alpha_xy_max, reference.alpha_xy_max / hi,
                    reference.alpha_xy_max / lo, f"the rate-loop gain multiplier that keeps PX4's default "
                    f"bandwidth is {reference.alpha_xy_max:.0f}/alpha_xy_max, and {k_range}")
    _refuse_outside(profile, "alpha_z_max (rad/s^2)", profile.alpha_z_max, reference.alpha_z_max / hi,
                    reference.alpha_z_max / lo, f"the yaw-rate gain multiplier that keeps PX4's default "
                    f"bandwidth is {reference.alpha_z_max:.3g}/alpha_z_max, and {k_range}")
    k_xy = reference.alpha_xy_max / profile.alpha_xy_max
    return {
        "MPC_THR_HOVER": hover,
        "MC_ROLLRATE_K": k_xy,
        "MC_PITCHRATE_K": k_xy,
        "MC_YAWRATE_K": reference.alpha_z_max / profile.alpha_z_max,
    }


def sitl_params(profile: VehicleProfile) -> dict[str, float]:
    """Everything PX4 SITL SIH needs to fly ``profile``: SIH_* plus controller parameters.

    ValueError naming the profile, the limit and PX4's reason when SIH cannot reproduce it.
    """
    return {**sih_params(profile), **controller_params(profile)}
