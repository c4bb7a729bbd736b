"""Landing as PX4's commander sees it: the land detector's verdict (px4/sim/takeoff.py) turned into
the landed state, and auto-disarm after a landing (COM_DISARM_LAND) or a takeoff that never came
(COM_DISARM_PRFLT).

A part of the autopilot of its own, as PX4's land detector publishes vehicle_land_detected for the
commander: it reads the vehicle's published state (`LandingStatus`: the autopilot's public attributes)
and returns its verdict, the texts to say and a disarm's reason; the commander applies them.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Protocol

from physics.dynamics import QuadrotorDynamics
from px4.modes import FlightMode
from px4.sim.autopilot_types import AutoPhase, LandedState
from px4.sim.control import AttitudeSetpoint, MulticopterController, TrajectorySetpoint
from px4.sim.takeoff import LandDetector, LandInputs


class LandingStatus(Protocol):
    """What the landing part reads of the vehicle (the commander's published state)."""

    time_s: float
    armed: bool
    landed: bool
    mode: FlightMode
    dyn: QuadrotorDynamics
    ctrl: MulticopterController
    current_setpoint: TrajectorySetpoint | AttitudeSetpoint | None

    @property
    def distance_valid(self) -> bool: ...

    @property
    def auto_phase(self) -> AutoPhase: ...

    def param_snapshot(self) -> dict[str, float]: ...


class LandingVerdict(NamedTuple):
    """One cycle's verdict: landed or not, texts for the pilot, and why to disarm ("": not)."""

    landed: bool
    said: tuple[str, ...] = ()
    disarm: str = ""


FLYING = LandingVerdict(False)
# What `landed_state` compares every cycle, bound once: in Python 3.11 a member looked up on its Enum class
# goes through EnumType's __getattr__ hook (about 0.1 us, four times a plain attribute).
_TAKEOFF, _MISSION, _LAND = FlightMode.TAKEOFF, FlightMode.MISSION, FlightMode.LAND
_CLIMB, _LAND_PHASE = AutoPhase.CLIMB, AutoPhase.LAND
_ON_GROUND, _IN_AIR, _TAKING_OFF, _LANDING = (LandedState.ON_GROUND, LandedState.IN_AIR, LandedState.TAKEOFF,
                                             LandedState.LANDING)


class Landing:
    """Land detection and auto-disarm."""

    def __init__(self) -> None:
        self._detector = LandDetector()
        self._landed_since: float | None = None
        self._armed_at = 0.0
        self._took_off = False

    @property
    def ground_contact(self) -> bool:
        return self._detector.ground_contact

    def on_arm(self, now_s: float) -> None:
        self._armed_at = now_s
        self._took_off = False

    def update(self, v: LandingStatus, thrust: float, vz_sp: float) -> LandingVerdict:
        """PX4's land detector, then auto-disarm after landing (COM_DISARM_LAND) or a takeoff that
        never came (COM_DISARM_PRFLT). `thrust`: the collective commanded (0 at idle)."""
        p, dyn, ctrl = v.param_snapshot(), v.dyn, v.ctrl
        if v.armed and not v.landed and self._detector.clear_in_flight(thrust, ctrl.hover_thrust, p["MPC_THR_MIN"]):
            # Flying with thrust: no stage of the detector can change (the common case, kept cheap).
            return FLYING
        om = dyn.omega
        climb_rate_controlled = not isinstance(v.current_setpoint, AttitudeSetpoint)
        inputs = LandInputs(v.armed, climb_rate_controlled, thrust, ctrl.hover_thrust, p["MPC_THR_MIN"], vz_sp,
                            dyn.vel, math.hypot(om[0], om[1]), v.distance_valid)
        self._detector.update(v.time_s, inputs, p["LNDMC_TRIG_TIME"], p["LNDMC_Z_VEL_MAX"],
                              p["LNDMC_XY_VEL_MAX"], p["LNDMC_ROT_MAX"])
        landed = self._detector.landed
        said: tuple[str, ...] = ()
        if not v.armed:
            self._landed_since = None
        elif v.landed and not landed:
            self._took_off = True
            self._landed_since = None
            said = ("Takeoff detected",)  # PX4 v1.16.1's commander (measured)
        elif landed and not v.landed:
            self._landed_since = v.time_s
            said = ("Landing detected",)
        if v.armed and landed:
            since_arm = v.time_s - self._armed_at
            if self._took_off and p["COM_DISARM_LAND"] >= 0 and self._landed_since is not None \
                    and v.time_s - self._landed_since >= p["COM_DISARM_LAND"]:
                return LandingVerdict(landed, said, "Disarmed by landing")  # PX4 v1.16.1 words it so (measured)
            if not self._took_off and p["COM_DISARM_PRFLT"] > 0 and since_arm > p["COM_DISARM_PRFLT"]:
                return LandingVerdict(landed, said, "Disarmed: no takeoff after arming (COM_DISARM_PRFLT)")
        return LandingVerdict(landed, said)

    @staticmethod
    def landed_state(v: LandingStatus) -> LandedState:
        """EXTENDED_SYS_STATE's landed state for the vehicle as it is now."""
        if v.landed:
            return _ON_GROUND
        mode = v.mode
        if mode is _TAKEOFF or (mode is _MISSION and v.auto_phase is _CLIMB and v.dyn.pos[2] > -1.0):
            return _TAKING_OFF
        if mode is _LAND or v.auto_phase is _LAND_PHASE:
            return _LANDING
        return _IN_AIR
