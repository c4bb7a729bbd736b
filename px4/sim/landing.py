"""Landing as PX4's commander sees it: the land detector's verdict (px4/sim/takeoff.py) turned into
the landed state, and auto-disarm after a landing (COM_DISARM_LAND) or a takeoff that never came
(COM_DISARM_PRFLT).
"""

from __future__ import annotations

import math

from pymavlink.dialects.v20 import common as mavlink

from px4.modes import FlightMode
from px4.sim.autopilot_types import AutoPhase, LandedState
from px4.sim.control import AttitudeSetpoint
from px4.sim.takeoff import LandInputs


class LandingState:
    """Land detection, landed state and auto-disarm.

    A mixin of `Autopilot` (px4/sim/autopilot.py), whose state it reads and sets.
    """

    def _detect_landing(self, vz_sp: float) -> None:
        """PX4's land detector, then auto-disarm after landing (COM_DISARM_LAND) or a takeoff that
        never came (COM_DISARM_PRFLT)."""
        p, dyn, ctrl = self._p(), self.dyn, self.ctrl
        thrust = 0.0 if self._idle else ctrl.thrust_sp
        if self.armed and not self.landed and self._land_detector.clear_in_flight(thrust, ctrl.hover_thrust,
                                                                                  p["MPC_THR_MIN"]):
            # Flying with thrust: no stage of the detector can change (the common case, kept cheap).
            self.landed_state = self._landed_state()
            return
        om = dyn.omega
        climb_rate_controlled = not isinstance(self.current_setpoint, AttitudeSetpoint)
        inputs = LandInputs(self.armed, climb_rate_controlled, thrust, ctrl.hover_thrust, p["MPC_THR_MIN"], vz_sp,
                            dyn.vel, math.hypot(om[0], om[1]), self.distance_valid)
        self._land_detector.update(self.time_s, inputs, p["LNDMC_TRIG_TIME"], p["LNDMC_Z_VEL_MAX"],
                                   p["LNDMC_XY_VEL_MAX"], p["LNDMC_ROT_MAX"])
        was_landed = self.landed
        self.landed = self._land_detector.landed
        if not self.armed:
            self._landed_since = None
        elif was_landed and not self.landed:
            self._took_off = True
            self._landed_since = None
            self.say(mavlink.MAV_SEVERITY_INFO, "Takeoff detected")  # PX4 v1.16.1's commander (measured)
        elif self.landed and not was_landed:
            self._landed_since = self.time_s
            self.say(mavlink.MAV_SEVERITY_INFO, "Landing detected")
        if self.armed and self.landed:
            since_arm = self.time_s - self._armed_at
            if self._took_off and p["COM_DISARM_LAND"] >= 0 and self._landed_since is not None \
                    and self.time_s - self._landed_since >= p["COM_DISARM_LAND"]:
                self._disarm("Disarmed by landing")  # PX4 v1.16.1 words it so (measured)
            elif not self._took_off and p["COM_DISARM_PRFLT"] > 0 and since_arm > p["COM_DISARM_PRFLT"]:
                self._disarm("Disarmed: no takeoff after arming (COM_DISARM_PRFLT)")
        self.landed_state = self._landed_state()

    def _landed_state(self) -> LandedState:
        if self.landed:
            return LandedState.ON_GROUND
        if self.mode == FlightMode.TAKEOFF or (self.mode == FlightMode.MISSION and self.auto_phase == AutoPhase.CLIMB
                                               and self.dyn.pos[2] > -1.0):
            return LandedState.TAKEOFF
        if self.mode == FlightMode.LAND or self.auto_phase == AutoPhase.LAND:
            return LandedState.LANDING
        return LandedState.IN_AIR
