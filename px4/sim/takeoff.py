"""Takeoff and landing state as PX4's multicopter position controller and land detector keep them.

Two pieces of PX4 decide when a multicopter starts to fly and when it counts as landed again; the
built-in vehicle runs both so that it lifts off and disarms when PX4 would:

* ``TakeoffHandling`` (mc_pos_control's Takeoff): after arming the motors spool up for
  COM_SPOOLUP_TIME; a takeoff request then ramps the upward velocity limit from ``-g / MPC_Z_VEL_P_ACC``
  (which holds the thrust at zero) to the climb speed over MPC_TKO_RAMP_T, so the thrust rises
  smoothly and the vehicle leaves the ground part way through the ramp. Until the ramp is over there
  is no minimum thrust and the tilt is limited to MPC_TILTMAX_LND.
* ``LandDetector`` (the multicopter land detector): ground contact (low thrust, a descent being
  commanded, no vertical or horizontal movement), then maybe-landed (minimal thrust, no rotation),
  then landed, each held for LNDMC_TRIG_TIME / 3 before the next may follow; leaving any stage is
  immediate. With a range finder in use (SIH's in v1.16) and its distance to the ground not valid, the
  three stages take three times as long (LandDetector::_set_hysteresis_factor(3)). The range reads below
  its minimum once the vehicle touches down, so on PX4 v1.16.1 SIH a landing is detected ~3.4 s after
  touchdown rather than ~1.4 s (measured in its ULog: dist_bottom_valid false 0.1 s before the truth's
  touchdown, ground contact, maybe landed and landed each a second apart, dist_bottom_valid again just
  after the landing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum
from typing import Sequence

from profiles.airframe import GRAVITY

# A commanded descent faster than this counts as "descending" for the ground-contact check.
DESCENT_VZ_THRESHOLD = 0.25  # m/s
# Thrust thresholds as a share of the range from MPC_THR_MIN to hover thrust.
LOW_THRUST_SHARE = 0.6  # ground contact (PX4's value when its hover-thrust estimate is valid)
MINIMAL_THRUST_SHARE = 0.1  # maybe landed
# Once maybe-landed, movement thresholds widen by this factor (propeller wash, estimator noise).
SETTLED_WIDENING = 2.5
# The stages' hold times are this many times longer without a valid distance to the ground.
NO_DISTANCE_FACTOR = 3


class TakeoffState(IntEnum):
    """PX4's takeoff_status.takeoff_state."""

    DISARMED = 0
    SPOOLUP = 1
    READY_FOR_TAKEOFF = 2
    RAMPUP = 3
    FLIGHT = 4


# Bound once for the checks made every cycle: in Python 3.11 a member looked up on its Enum class goes
# through EnumType's __getattr__ hook (about 0.1 us, four times a plain attribute).
_RAMPUP, _FLIGHT = TakeoffState.RAMPUP, TakeoffState.FLIGHT


class TakeoffHandling:
    """The takeoff state machine and its velocity ramp."""

    def __init__(self) -> None:
        self.state = TakeoffState.DISARMED
        self._armed_since: float | None = None
        self._progress = 0.0

    def update(self, now: float, armed: bool, landed: bool, want_takeoff: bool, spoolup_s: float,
               skip: bool = False) -> None:
        """Advance the state machine (`skip`: a mode without altitude control flies at once)."""
        if self.state is _FLIGHT and armed and not landed:
            return  # flying: nothing to change (the common case)
        if not armed:
            self.state = TakeoffState.DISARMED
            self._armed_since = None
            return
        if self._armed_since is None:
            self._armed_since = now
        if self.state == TakeoffState.DISARMED:
            self.state = TakeoffState.SPOOLUP
        if self.state == TakeoffState.SPOOLUP and now - self._armed_since >= spoolup_s:
            self.state = TakeoffState.READY_FOR_TAKEOFF
        if self.state == TakeoffState.READY_FOR_TAKEOFF and want_takeoff:
            self.state = TakeoffState.RAMPUP
            self._progress = 0.0
        if self.state == TakeoffState.RAMPUP and self._progress >= 1.0:
            self.state = TakeoffState.FLIGHT
        if self.state == TakeoffState.FLIGHT and landed:
            self.state = TakeoffState.READY_FOR_TAKEOFF
        if skip:
            self.state = TakeoffState.FLIGHT

    def upward_limit(self, dt: float, climb_speed: float, ramp_s: float, vel_p_z: float) -> float:
        """The upward velocity limit for this cycle (negative: the thrust is held at zero)."""
        if self.state is _FLIGHT:
            return climb_speed
        start = -GRAVITY / max(vel_p_z, 0.01)
        if self.state < TakeoffState.RAMPUP:
            return start
        if self.state == TakeoffState.RAMPUP:
            self._progress = self._progress + dt / ramp_s if ramp_s > dt else 1.0
            if self._progress < 1.0:
                return start + self._progress * (climb_speed - start)
        return climb_speed

    @property
    def flying(self) -> bool:
        return self.state >= _FLIGHT

    @property
    def taken_off(self) -> bool:
        """Ramping up or flying: the position controller acts (before, the motors idle)."""
        return self.state >= _RAMPUP


class _Hysteresis:
    """True only after the condition has held for `delay`; false at once (PX4's Hysteresis, from false)."""

    def __init__(self, state: bool) -> None:
        self.state = state
        self._since: float | None = None

    def update(self, condition: bool, now: float, delay: float) -> bool:
        if not condition:
            self.state = False
            self._since = None
        elif not self.state:
            self._since = now if self._since is None else self._since
            self.state = now - self._since >= delay
        return self.state


@dataclass
class LandInputs:
    """What the land detector looks at in one cycle."""

    armed: bool
    climb_rate_controlled: bool  # a mode that controls the vertical speed (auto, offboard, position)
    thrust: float  # collective, normalized
    hover_thrust: float
    thr_min: float  # MPC_THR_MIN
    vz_sp: float  # commanded vertical speed (NaN: none)
    vel: Sequence[float]  # NED
    omega_xy: float  # rad/s, roll and pitch rate magnitude
    distance_valid: bool = True  # a valid distance to the ground, or no range finder in use


class LandDetector:
    """Ground contact, maybe landed, landed: PX4's multicopter land detector, stage by stage."""

    def __init__(self) -> None:
        self._ground_contact = _Hysteresis(True)
        self._maybe_landed = _Hysteresis(True)
        self._landed = _Hysteresis(True)

    @property
    def landed(self) -> bool:
        return self._landed.state

    @property
    def ground_contact(self) -> bool:
        return self._ground_contact.state

    def clear_in_flight(self, thrust: float, hover_thrust: float, thr_min: float) -> bool:
        """The update of an armed cycle when no stage is set and the thrust is too high for ground
        contact (every condition false; the common case in flight, kept cheap). False: not such a
        cycle, call `update`."""
        stages = (self._ground_contact, self._maybe_landed, self._landed)
        if stages[0].state or stages[1].state or stages[2].state \
                or thrust <= thr_min + (hover_thrust - thr_min) * LOW_THRUST_SHARE:
            return False
        for stage in stages:
            stage._since = None
        return True

    def update(self, now: float, x: LandInputs, trigger_s: float, z_vel_max: float, xy_vel_max: float,
               rot_max_deg: float) -> None:
        delay = trigger_s / 3.0 * (1 if x.distance_valid else NO_DISTANCE_FACTOR)
        settled = self._maybe_landed.state
        vertical = abs(x.vel[2]) > z_vel_max * (SETTLED_WIDENING if settled else 1.0)
        horizontal = math.hypot(x.vel[0], x.vel[1]) > xy_vel_max
        low = x.thrust <= x.thr_min + (x.hover_thrust - x.thr_min) * LOW_THRUST_SHARE
        contact = low
        if x.climb_rate_controlled and not settled and not self._landed.state:
            contact = contact and math.isfinite(x.vz_sp) and x.vz_sp > DESCENT_VZ_THRESHOLD
        contact = contact and not horizontal and not vertical
        self._ground_contact.update(contact or not x.armed, now, delay)

        minimal = x.thrust <= x.thr_min + (x.hover_thrust - x.thr_min) * MINIMAL_THRUST_SHARE
        still = x.omega_xy <= math.radians(rot_max_deg) * (SETTLED_WIDENING if settled else 1.0)
        maybe = not x.armed or (minimal and still and self._ground_contact.state)
        self._maybe_landed.update(maybe, now, delay)
        self._landed.update(not x.armed or self._maybe_landed.state, now, delay)
