"""The checks that trigger PX4's failsafes on the built-in vehicle: the geofence (GF_*), RC loss
(NAV_RCL_ACT), ground-station link loss (NAV_DLL_ACT), the position estimate (GPS loss) and offboard
loss (COM_OBL_RC_ACT), acted on through the failsafe framework of px4/sim/failsafe.py (hold
COM_FAIL_ACT_T, then act).

As PX4's commander runs its failsafe checks and then applies what they decide, the checks here read the
vehicle's published state (`VehicleStatus`: public attributes of the autopilot, as a uORB subscriber
reads vehicle_status) and return `FailsafeAction`s; the commander (px4/sim/autopilot.py) applies them.
The checks keep their own state (breached, RC loss handled, GPS lost since, the pending hold).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Iterator, Protocol

from pymavlink.dialects.v20 import common as mavlink

from physics.faults import VehicleFaults
from px4.modes import FlightMode
from px4.params import ParamStore
from px4.sim.autopilot_types import POSITION_MODES
from px4.sim.failsafe import (
    DATALINK_LOSS_ACTIONS,
    GEOFENCE_ACTIONS,
    RC_LOSS_ACTIONS,
    FailsafeFramework,
    activated,
    offboard_loss_action,
)
from px4.sim.manual import ManualControl

# GPS lost: PX4's EKF2 reports it stopped fusing GNSS after about this long without data (s).
GNSS_STOP_S = 1.0
# Bound once for the check made every cycle: in Python 3.11 a member looked up on its Enum class goes
# through EnumType's __getattr__ hook (about 0.1 us, four times a plain attribute).
_OFFBOARD = FlightMode.OFFBOARD


class Act(Enum):
    """What a failsafe does: NONE only tells the pilot; the others switch mode, or cut the motors."""

    NONE = None
    HOLD = FlightMode.HOLD
    RTL = FlightMode.RTL
    LAND = FlightMode.LAND
    POSITION = FlightMode.POSCTL
    ALTITUDE = FlightMode.ALTCTL
    MANUAL = FlightMode.MANUAL
    TERMINATE = "terminate"
    DISARM = "disarm"

    @classmethod
    def of(cls, action: FlightMode | str) -> "Act":
        """The act for a parameter table's entry (px4.sim.failsafe: a mode, or "terminate" / "disarm")."""
        return cls(action)


@dataclass(frozen=True)
class FailsafeAction:
    """One decision of the checks: say `text` (at `severity`), then `act`."""

    act: Act
    text: str
    severity: int = mavlink.MAV_SEVERITY_CRITICAL


NOTHING: tuple[FailsafeAction, ...] = ()


class VehicleStatus(Protocol):
    """What the checks read of the vehicle (the commander's published state)."""

    time_s: float
    armed: bool
    landed: bool
    mode: FlightMode
    home: tuple[float, float, float]
    params: ParamStore
    manual: ManualControl
    faults: VehicleFaults
    gcs_heard_s: float | None

    @property
    def position(self) -> tuple[float, float, float]: ...

    @property
    def rc_available(self) -> bool: ...

    @property
    def offboard_signal(self) -> bool: ...


class FailsafeChecks:
    """Watches for failsafe conditions every navigator cycle; `check` returns what to do, in order."""

    def __init__(self) -> None:
        self._framework = FailsafeFramework()
        self._geofence_breached = False
        self._rc_loss_handled = False  # the current RC loss has had its failsafe
        self._gcs_lost = False
        self._gps_lost_at: float | None = None
        self._gnss_stop_said = False

    # --- what the commander asks
    def position_valid(self, now_s: float, params: ParamStore) -> bool:
        """The estimator still has a horizontal position: GPS, or dead reckoning for EKF2_NOAID_TOUT."""
        lost = self._gps_lost_at
        return lost is None or now_s - lost < params["EKF2_NOAID_TOUT"] / 1e6

    @staticmethod
    def outside_fence(point: tuple[float, float, float], home: tuple[float, float, float],
                      params: ParamStore) -> str | None:
        """Which of PX4's fence limits (GF_MAX_HOR_DIST / GF_MAX_VER_DIST from home) `point` is past."""
        hor, ver = params["GF_MAX_HOR_DIST"], params["GF_MAX_VER_DIST"]
        if hor > 0 and math.hypot(point[0] - home[0], point[1] - home[1]) > hor:
            return "Geofence violation: exceeding maximum distance to Home"
        if ver > 0 and home[2] - point[2] > ver:
            return "Geofence violation: exceeding maximum altitude"
        return None

    def decide(self, v: VehicleStatus) -> Iterator[FailsafeAction]:
        """This cycle's actions in PX4's order. The commander applies each before taking the next, so a
        check sees the vehicle as the actions before it left it (a failsafe's new mode, a disarm).

        Checks that cannot act this cycle are not called (the common case at 50 Hz: no GPS fault, nothing
        pending, no fence, no RC or ground station ever heard, not in Offboard)."""
        if v.faults.gps_fix_lost:
            yield from self._check_position_estimate(v)
        else:
            self._gps_lost_at = None
        if not v.armed:
            self._framework.clear()
            return
        if self._framework.pending is not None:
            yield from self._check_pending(v)
        yield from self._check_geofence(v)
        if v.manual.sticks is not None:
            yield from self._check_rc_loss(v)
        else:
            self._rc_loss_handled = False
        if v.gcs_heard_s is not None:
            yield from self._check_datalink_loss(v)
        if v.mode is _OFFBOARD:
            yield from self._check_offboard_loss(v)

    # --- the checks
    def _check_position_estimate(self, v: VehicleStatus) -> tuple[FailsafeAction, ...]:
        """GPS off (called only then): EKF2 stops fusing it (and says so), dead-reckons for EKF2_NOAID_TOUT,
        then has no position; flying in a mode that needs one, PX4's position-loss failsafe descends
        (without RC to fly Altitude mode, its only fallback)."""
        out = []
        if self._gps_lost_at is None:
            self._gps_lost_at = v.time_s
            self._gnss_stop_said = False
        if not self._gnss_stop_said and v.time_s - self._gps_lost_at >= GNSS_STOP_S:
            self._gnss_stop_said = True
            out.append(FailsafeAction(Act.NONE, "GNSS data fusion stopped", mavlink.MAV_SEVERITY_WARNING))
        if not self.position_valid(v.time_s, v.params) and v.armed and not v.landed and v.mode in POSITION_MODES:
            out.append(FailsafeAction(Act.LAND, "Failsafe: no position estimate, descending"))
        return tuple(out)

    def _check_pending(self, v: VehicleStatus) -> tuple[FailsafeAction, ...]:
        """A hold that is over acts (called only while one is pending)."""
        due = self._framework.due(v.time_s, v.mode)
        if due is None:
            return NOTHING
        action, text = due
        return (FailsafeAction(Act.of(action), text),)

    def _check_geofence(self, v: VehicleStatus) -> tuple[FailsafeAction, ...]:
        """PX4's geofence: past a limit, act once per breach (GF_ACTION), holding first as the failsafe
        framework does."""
        params = v.params
        if params["GF_MAX_HOR_DIST"] <= 0 and params["GF_MAX_VER_DIST"] <= 0:
            self._geofence_breached = False  # no fence (PX4's default): nothing to breach, no position to read
            return NOTHING
        breach = self.outside_fence(v.position, v.home, params)
        if breach is None or not v.armed or v.landed:
            self._geofence_breached = breach is not None and self._geofence_breached
            return NOTHING
        if self._geofence_breached:
            return NOTHING
        self._geofence_breached = True
        action = GEOFENCE_ACTIONS.get(int(v.params["GF_ACTION"]))
        if action is None:
            return (FailsafeAction(Act.NONE, breach, mavlink.MAV_SEVERITY_WARNING),)
        return self._hold_then(v, action, (breach,))

    def _check_rc_loss(self, v: VehicleStatus) -> tuple[FailsafeAction, ...]:
        """RC (MANUAL_CONTROL) was there and stopped for COM_RC_LOSS_T: NAV_RCL_ACT after the hold,
        in every mode COM_RCL_EXCEPT does not exempt (bit 0 Mission, 1 Hold, 2 Offboard). Called once RC
        was ever heard."""
        if v.rc_available:
            self._rc_loss_handled = False
            return NOTHING
        if self._rc_loss_handled or v.landed or _exempt(v.mode, int(v.params["COM_RCL_EXCEPT"])):
            return NOTHING
        self._rc_loss_handled = True
        action = RC_LOSS_ACTIONS.get(int(v.params["NAV_RCL_ACT"]), FlightMode.RTL)
        if action is None:
            return NOTHING
        # PX4 v1.16.1 names this reason only in its events ("Manual control lost"), not in a STATUSTEXT.
        return self._hold_then(v, action, ())

    def _check_datalink_loss(self, v: VehicleStatus) -> tuple[FailsafeAction, ...]:
        """A ground station was heard (HEARTBEAT of MAV_TYPE_GCS) and has been silent for COM_DL_LOSS_T:
        "Connection to ground station lost", then NAV_DLL_ACT after the hold, in every mode COM_DLL_EXCEPT
        does not exempt (bit 0 Mission, 1 Hold, 2 Offboard); "GCS connection regained" when it is back.
        PX4 v1.16.1 SIH does the same (tests/test_stop_px4.py flies it as tests/test_stop.py flies this).
        Called once a ground station was ever heard."""
        if v.time_s - v.gcs_heard_s <= v.params["COM_DL_LOSS_T"]:
            if self._gcs_lost:
                self._gcs_lost = False
                return (FailsafeAction(Act.NONE, "GCS connection regained", mavlink.MAV_SEVERITY_INFO),)
            return NOTHING
        if self._gcs_lost:
            return NOTHING
        self._gcs_lost = True
        lost = FailsafeAction(Act.NONE, "Connection to ground station lost")
        action = DATALINK_LOSS_ACTIONS.get(int(v.params["NAV_DLL_ACT"]))
        if not v.armed or v.landed or _exempt(v.mode, int(v.params["COM_DLL_EXCEPT"])) or action is None:
            return (lost,)
        return (lost,) + self._hold_then(v, action, ())  # the reason was said first, as PX4 says it

    def _check_offboard_loss(self, v: VehicleStatus) -> tuple[FailsafeAction, ...]:
        """No delay for offboard loss: its fallback (COM_OBL_RC_ACT) at once; without RC the position
        fallbacks end in a landing where the vehicle is. Called in Offboard."""
        if v.offboard_signal:
            return NOTHING
        action = offboard_loss_action(int(v.params["COM_OBL_RC_ACT"]), v.rc_available)
        return (FailsafeAction(Act.of(action), activated(action, ("No offboard control signal",))),)

    def _hold_then(self, v: VehicleStatus, action: FlightMode | str,
                   reasons: tuple[str, ...]) -> tuple[FailsafeAction, ...]:
        """Hold for COM_FAIL_ACT_T, then `action` (a Hold is entered at once); the first failsafe wins."""
        if self._framework.pending is not None:
            return NOTHING
        if action == FlightMode.HOLD:
            return (FailsafeAction(Act.HOLD, activated(action, reasons)),)
        return (FailsafeAction(Act.HOLD, self._framework.start(v.time_s, action, v.params["COM_FAIL_ACT_T"], reasons)),)


def _exempt(mode: FlightMode, bits: int) -> bool:
    """COM_RCL_EXCEPT / COM_DLL_EXCEPT: bit 0 Mission, 1 Hold, 2 Offboard carry on without the link."""
    return bool((mode == FlightMode.MISSION and bits & 1) or (mode == FlightMode.HOLD and bits & 2)
                or (mode == FlightMode.OFFBOARD and bits & 4))
