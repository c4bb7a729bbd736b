"""A vehicle profile as PX4 SIH parameters, so that PX4 SITL flies the profile's capability.

How PX4's SIH (src/modules/simulation/simulator_sih/sih.cpp, quadcopter case) turns actuator
outputs into forces, as read from its source:

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
:meth:`profiles.vehicle.VehicleProfile.physical` derives: ``4 T_MAX / (m g) = TWR_max``,
``2 L_ROLL T_MAX / I_xx = alpha_xy_max``, ``2 Q_MAX / I_zz = alpha_z_max``.

Expected error, steady state: none from the model; PX4 stores parameters as float32 (relative
rounding 6e-8), and newer SIH versions use the Somigliana gravity at SIH_LOC_LAT0 (9.808 m/s^2 at
PX4's default 47.4 deg) instead of 9.80665, which shifts the climb acceleration ``(TWR - 1) g`` by
about 0.02 %. Transients differ slightly from the built-in vehicle: SIH lags the thrust, the
built-in vehicle the rotor speed (thrust ~ speed^2), so a thrust step rises a little faster on the
built-in vehicle for the same time constant.

Controller parameters. PX4's rate controller outputs *normalized* torque (1 = all the torque the
rotors have), so the same MC_*RATE_* gains give a loop gain proportional to the vehicle's angular
acceleration. The SIH airframe's gains are tuned for SIH's default vehicle (alpha_xy 80, alpha_z
6.67 rad/s^2); a 1467 rad/s^2 profile with those gains would oscillate and a 3.3 rad/s^2 yaw axis
would crawl. The gain multipliers MC_ROLLRATE_K / MC_PITCHRATE_K / MC_YAWRATE_K are scaled by
``alpha_default / alpha_profile`` so that every profile keeps the default loop bandwidth, and
MPC_THR_HOVER starts at the profile's true hover thrust ``1 / TWR_max`` (PX4 then refines it).
"""

from __future__ import annotations

import numpy as np

from profiles.airframe import GRAVITY, Capability
from profiles.vehicle import VehicleProfile
from px4.params import SPEC_BY_NAME

# PX4's ranges for the gain multipliers (mc_rate_control_params.c: @min 0.01 @max 5.0).
RATE_K_RANGE = (0.01, 5.0)
# MPC_THR_HOVER's range in PX4 (mc_pos_control_params.c).
THR_HOVER_RANGE = (0.1, 0.8)


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


def sih_params(profile: VehicleProfile) -> dict[str, float]:
    """SIH_* parameters of the rigid body that reproduces ``profile`` (see the module docstring)."""
    if profile.layout != "cross":
        # SIH's quadcopter is quad-X only; a plus frame would need SIH's torque formulas changed.
        raise ValueError(f"profile {profile.name!r}: PX4 SIH simulates the cross (quad-X) layout only, "
                         f"not {profile.layout!r}")
    return profile.physical().to_sih_params()


def controller_params(profile: VehicleProfile) -> dict[str, float]:
    """PX4 controller parameters that suit the profile's vehicle (hover thrust, rate-loop gain)."""
    reference = sih_default_capability()
    lo, hi = RATE_K_RANGE
    k_xy = min(max(reference.alpha_xy_max / profile.alpha_xy_max, lo), hi)
    k_z = min(max(reference.alpha_z_max / profile.alpha_z_max, lo), hi)
    hover = min(max(1.0 / profile.twr_max, THR_HOVER_RANGE[0]), THR_HOVER_RANGE[1])
    return {
        "MPC_THR_HOVER": hover,
        "MC_ROLLRATE_K": k_xy,
        "MC_PITCHRATE_K": k_xy,
        "MC_YAWRATE_K": k_z,
    }


def sitl_params(profile: VehicleProfile) -> dict[str, float]:
    """Everything PX4 SITL SIH needs to fly ``profile``: SIH_* plus controller parameters."""
    return {**sih_params(profile), **controller_params(profile)}
