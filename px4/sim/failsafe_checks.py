"""The checks that trigger PX4's failsafes on the built-in vehicle: the geofence (GF_*), RC loss
(NAV_RCL_ACT), ground-station link loss (NAV_DLL_ACT), the position estimate (GPS loss) and offboard
loss (COM_OBL_RC_ACT), acted on
through the failsafe framework of px4/sim/failsafe.py (hold COM_FAIL_ACT_T, then act).
"""

from __future__ import annotations

import math

from pymavlink.dialects.v20 import common as mavlink

from px4.modes import FlightMode
from px4.sim.autopilot_types import POSITION_MODES
from px4.sim.failsafe import (
    DATALINK_LOSS_ACTIONS,
    GEOFENCE_ACTIONS,
    RC_LOSS_ACTIONS,
    activated,
    offboard_loss_action,
)

# GPS lost: PX4's EKF2 reports it stopped fusing GNSS after about this long without data (s).
GNSS_STOP_S = 1.0

class FailsafeChecks:
    """Watches for failsafe conditions every navigator cycle and acts on them.

    A mixin of `Autopilot` (px4/sim/autopilot.py), whose state it reads and sets.
    """

    # --- safety
    def _outside_fence(self, point: tuple[float, float, float]) -> str | None:
        """Which of PX4's fence limits (GF_MAX_HOR_DIST / GF_MAX_VER_DIST from home) `point` is past."""
        h, params = self.home, self._p()
        hor, ver = params["GF_MAX_HOR_DIST"], params["GF_MAX_VER_DIST"]
        if hor > 0 and math.hypot(point[0] - h[0], point[1] - h[1]) > hor:
            return "Geofence violation: exceeding maximum distance to Home"
        if ver > 0 and h[2] - point[2] > ver:
            return "Geofence violation: exceeding maximum altitude"
        return None

    def _check_geofence(self) -> None:
        """PX4's geofence: past a limit, act once per breach (GF_ACTION), holding first as the failsafe
        framework does."""
        breach = self._outside_fence(self.position)
        if breach is None or not self.armed or self.landed:
            self._geofence_breached = breach is not None and self._geofence_breached
            return
        if self._geofence_breached:
            return
        self._geofence_breached = True
        action = GEOFENCE_ACTIONS.get(int(self.params["GF_ACTION"]))
        if action is None:
            self.say(mavlink.MAV_SEVERITY_WARNING, breach)
            return
        self._hold_then(action, (breach,))

    def _check_rc_loss(self) -> None:
        """RC (MANUAL_CONTROL) was there and stopped for COM_RC_LOSS_T: NAV_RCL_ACT after the hold,
        in every mode COM_RCL_EXCEPT does not exempt (bit 0 Mission, 1 Hold, 2 Offboard)."""
        if self.manual.sticks is None or self.rc_available:
            self._rc_loss_handled = False
            return
        if self._rc_loss_handled or self.landed:
            return
        exempt = int(self.params["COM_RCL_EXCEPT"])
        if (self.mode == FlightMode.MISSION and exempt & 1) or (self.mode == FlightMode.HOLD and exempt & 2) \
                or (self.mode == FlightMode.OFFBOARD and exempt & 4):
            return
        self._rc_loss_handled = True
        action = RC_LOSS_ACTIONS.get(int(self.params["NAV_RCL_ACT"]), FlightMode.RTL)
        if action is not None:
            # PX4 v1.16.1 names this reason only in its events ("Manual control lost"), not in a STATUSTEXT.
            self._hold_then(action, ())

    def _check_datalink_loss(self) -> None:
        """A ground station was heard (HEARTBEAT of MAV_TYPE_GCS) and has been silent for COM_DL_LOSS_T:
        "Connection to ground station lost", then NAV_DLL_ACT after the hold, in every mode COM_DLL_EXCEPT
        does not exempt (bit 0 Mission, 1 Hold, 2 Offboard); "GCS connection regained" when it is back.
        PX4 v1.16.1 SIH does the same (tests/test_stop_px4.py flies it as tests/test_stop.py flies this)."""
        if self._gcs_heard_s is None:
            return
        if self.time_s - self._gcs_heard_s <= self.params["COM_DL_LOSS_T"]:
            if self._gcs_lost:
                self._gcs_lost = False
                self.say(mavlink.MAV_SEVERITY_INFO, "GCS connection regained")
            return
        if self._gcs_lost:
            return
        self._gcs_lost = True
        self.say(mavlink.MAV_SEVERITY_CRITICAL, "Connection to ground station lost")
        exempt = int(self.params["COM_DLL_EXCEPT"])
        if not self.armed or self.landed or (self.mode == FlightMode.MISSION and exempt & 1) \
                or (self.mode == FlightMode.HOLD and exempt & 2) or (self.mode == FlightMode.OFFBOARD and exempt & 4):
            return
        action = DATALINK_LOSS_ACTIONS.get(int(self.params["NAV_DLL_ACT"]))
        if action is not None:  # the reason was said above, as PX4 says it
            self._hold_then(action, ())

    def _hold_then(self, action: FlightMode | str, reasons: tuple[str, ...]) -> None:
        """Hold for COM_FAIL_ACT_T, then `action` (a Hold is entered at once); the first failsafe wins."""
        if self._failsafes.pending is not None:
            return
        self.failsafe = True
        if action == FlightMode.HOLD:
            self.say(mavlink.MAV_SEVERITY_CRITICAL, activated(action, reasons))
        else:
            self.say(mavlink.MAV_SEVERITY_CRITICAL,
                     self._failsafes.start(self.time_s, action, self.params["COM_FAIL_ACT_T"], reasons))
        self._enter_mode(FlightMode.HOLD)

    def _failsafe_act(self, action: FlightMode | str) -> None:
        self.failsafe = True
        if isinstance(action, FlightMode):
            self._enter_mode(action)
        else:  # disarm or terminate: PX4 cuts the motors
            self._disarm(f"Failsafe: {action}")

    def _check_position_estimate(self) -> None:
        """GPS off: EKF2 stops fusing it (and says so), dead-reckons for EKF2_NOAID_TOUT, then has no
        position; flying in a mode that needs one, PX4's position-loss failsafe descends (without
        RC to fly Altitude mode, its only fallback)."""
        if not self.faults.gps_fix_lost:
            self._gps_lost_at = None
            return
        if self._gps_lost_at is None:
            self._gps_lost_at = self.time_s
            self._gnss_stop_said = False
        if not self._gnss_stop_said and self.time_s - self._gps_lost_at >= GNSS_STOP_S:
            self._gnss_stop_said = True
            self.say(mavlink.MAV_SEVERITY_WARNING, "GNSS data fusion stopped")
        if not self.position_valid and self.armed and not self.landed and self.mode in POSITION_MODES:
            self.failsafe = True
            self.say(mavlink.MAV_SEVERITY_CRITICAL, "Failsafe: no position estimate, descending")
            self._enter_mode(FlightMode.LAND)

    def _check_failsafes(self) -> None:
        self._check_position_estimate()
        if not self.armed:
            self._failsafes.clear()
            return
        due = self._failsafes.due(self.time_s, self.mode)
        if due is not None:
            action, text = due
            self.say(mavlink.MAV_SEVERITY_CRITICAL, text)
            self._failsafe_act(action)
        self._check_geofence()
        self._check_rc_loss()
        self._check_datalink_loss()
        if self.mode == FlightMode.OFFBOARD and not self.offboard_signal:
            # No delay for offboard loss: its fallback (COM_OBL_RC_ACT) at once; without RC the
            # position fallbacks end in a landing where the vehicle is.
            action = offboard_loss_action(int(self.params["COM_OBL_RC_ACT"]), self.rc_available)
            self.say(mavlink.MAV_SEVERITY_CRITICAL, activated(action, ("No offboard control signal",)))
            self._failsafe_act(action)
