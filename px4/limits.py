"""A stronger vehicle standing in for a weaker profile, by PX4 controller limits.

The field case: one real drone flies trials for many FLYINGTRUST profiles. Its motors cannot be
made weaker, but PX4's controllers can be told not to use what the weaker profile would not have.
:func:`cap_plan` maps a target profile onto PX4 parameters, never loosening a limit the vehicle
already has; a Vehicle's ``params_changed(plan.params)`` sets them for a block and always restores
them (journaled on hardware).

What each limit emulates (``g`` gravity, ``TWR``, ``alpha`` the target's numbers):

* collective thrust: ``MPC_THR_MAX = TWR_target / TWR_vehicle``, the fraction of the vehicle's full
  thrust the target has at full throttle. Assumes normalized thrust is linear in thrust (true of
  PX4 SIH; on hardware, true once THR_MDL_FAC is identified);
* climb: ``MPC_ACC_UP_MAX = (TWR - 1) g``, full thrust straight up from hover (Eq. 2);
* horizontal: ``MPC_ACC_HOR_MAX = g sqrt(TWR^2 - 1)`` and ``MPC_TILTMAX_AIR = acos(1 / TWR)``: full
  thrust tilted as far as it still holds altitude;
* attitude agility: PX4 v1.14 has no angular-acceleration limit, so the body-rate limits stand in
  for it. In flight the rotors sit at hover thrust ``h = 1 / TWR`` and can only move by
  ``min(h, 1 - h)`` either way, so the angular acceleration a hovering vehicle can use is
  ``alpha_hover = alpha * min(1, 2 min(h, 1 - h))`` (57 % of alpha_max at TWR 1.4).
  ``MC_ROLLRATE_MAX = MC_PITCHRATE_MAX = 0.5 sqrt(alpha_hover_xy * theta_xy)`` and
  ``MC_YAWRATE_MAX = 0.5 sqrt(alpha_hover_z * theta_z)`` make a reference attitude change
  ``theta`` (30 deg of roll, 90 deg of yaw) take as long at the capped rate as the target needs
  for it at that acceleration (accelerate half way, brake half way: ``2 sqrt(theta / alpha)``).
  Smaller changes then come out faster than on the target, larger ones slower, and the peak
  angular acceleration is still the vehicle's own: that part of the target cannot be emulated
  with PX4 parameters (benchmarks/capped_emulation.py measures how much it matters).

Where the caps apply: PX4's position controller (position, velocity and acceleration setpoints,
offboard or auto) honours all of them; attitude and rate offboard setpoints bypass the position
controller's thrust and acceleration limits, and their normalized thrust refers to the *vehicle's*
full thrust. A target that needs more than the vehicle has (a higher TWR or angular acceleration)
is noted in :attr:`CapPlan.notes` and that limit is left alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from profiles.airframe import GRAVITY
from profiles.vehicle import VehicleProfile
from px4.params import SPEC_BY_NAME

# Reference attitude changes for the rate limits (see the module docstring): a brisk roll into a
# lateral dodge, and a quarter turn of heading.
REFERENCE_TILT_RAD = math.radians(30.0)
REFERENCE_YAW_RAD = math.radians(90.0)

CAP_PARAMS = ("MPC_THR_MAX", "MPC_ACC_UP_MAX", "MPC_ACC_HOR_MAX", "MPC_ACC_HOR", "MPC_TILTMAX_AIR",
              "MC_ROLLRATE_MAX", "MC_PITCHRATE_MAX", "MC_YAWRATE_MAX")


@dataclass(frozen=True)
class CapPlan:
    """The PX4 parameters that make ``vehicle`` fly like ``target``, and what they cannot do."""

    target: str
    vehicle: str
    params: dict[str, float]
    notes: tuple[str, ...] = ()


def hover_angular_acceleration(profile: VehicleProfile) -> tuple[float, float]:
    """Roll/pitch and yaw angular acceleration (rad/s^2) available around hover thrust."""
    h = 1.0 / profile.twr_max
    authority = min(1.0, 2.0 * min(h, 1.0 - h))
    return profile.alpha_xy_max * authority, profile.alpha_z_max * authority


def target_bounds(target: VehicleProfile) -> dict[str, float]:
    """The target's capability as PX4 limit values (before comparing with the vehicle's own)."""
    twr = target.twr_max
    alpha_xy, alpha_z = hover_angular_acceleration(target)
    return {
        "MPC_ACC_UP_MAX": (twr - 1.0) * GRAVITY,
        "MPC_ACC_HOR_MAX": GRAVITY * math.sqrt(twr * twr - 1.0),
        "MPC_ACC_HOR": GRAVITY * math.sqrt(twr * twr - 1.0),
        "MPC_TILTMAX_AIR": math.degrees(math.acos(1.0 / twr)),
        "MC_ROLLRATE_MAX": math.degrees(0.5 * math.sqrt(alpha_xy * REFERENCE_TILT_RAD)),
        "MC_PITCHRATE_MAX": math.degrees(0.5 * math.sqrt(alpha_xy * REFERENCE_TILT_RAD)),
        "MC_YAWRATE_MAX": math.degrees(0.5 * math.sqrt(alpha_z * REFERENCE_YAW_RAD)),
    }


def cap_plan(target: VehicleProfile, vehicle: VehicleProfile, current: Mapping[str, float]) -> CapPlan:
    """PX4 limits for ``vehicle`` (whose present values of CAP_PARAMS are ``current``) to fly as ``target``.

    Every value is ``min(current, bound)`` clipped to PX4's parameter range, so a cap never
    loosens what the operator has set. Raises KeyError naming a parameter missing from ``current``.
    """
    missing = [name for name in CAP_PARAMS if name not in current]
    if missing:
        raise KeyError(f"current value of {missing[0]} is needed to cap it (read it from the vehicle first)")
    notes: list[str] = []
    bounds = target_bounds(target)
    bounds["MPC_THR_MAX"] = target.twr_max / vehicle.twr_max
    if target.twr_max > vehicle.twr_max:
        notes.append(f"TWR: target {target.twr_max:g} exceeds the vehicle's {vehicle.twr_max:g}; "
                     "thrust cannot be raised, so climb and horizontal acceleration stay the vehicle's")
    if target.alpha_xy_max > vehicle.alpha_xy_max:
        notes.append(f"alpha_xy: target {target.alpha_xy_max:g} rad/s^2 exceeds the vehicle's "
                     f"{vehicle.alpha_xy_max:g}; roll and pitch stay the vehicle's")
        del bounds["MC_ROLLRATE_MAX"], bounds["MC_PITCHRATE_MAX"]
    if target.alpha_z_max > vehicle.alpha_z_max:
        notes.append(f"alpha_z: target {target.alpha_z_max:g} rad/s^2 exceeds the vehicle's "
                     f"{vehicle.alpha_z_max:g}; yaw stays the vehicle's")
        del bounds["MC_YAWRATE_MAX"]
    notes.append("angular acceleration: PX4 has no limit for it; body-rate limits approximate the "
                 "target's attitude-change times, peak angular acceleration stays the vehicle's")
    params: dict[str, float] = {}
    for name in CAP_PARAMS:
        value = min(float(current[name]), bounds.get(name, math.inf))
        spec = SPEC_BY_NAME[name]
        if value < spec.min:
            notes.append(f"{name}: the target needs {value:.3g} {spec.unit}, below PX4's minimum "
                         f"{spec.min:g}; set to the minimum")
            value = spec.min
        params[name] = value
    return CapPlan(target.name, vehicle.name, params, tuple(notes))
