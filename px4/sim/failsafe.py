"""PX4's failsafe framework (commander/failsafe, v1.14 and newer), as far as the built-in vehicle needs it.

A failsafe condition (RC lost, geofence breached) does not act at once: the vehicle first holds for
COM_FAIL_ACT_T seconds, saying "Failsafe activated: entering Hold for 5 seconds", so a pilot can take
over; then the action (RTL, Land, ...) follows with "Failsafe activated" (PX4 v1.16.1's STATUSTEXTs,
measured for RC loss and the geofence; the action itself it tells only by its events). A mode change by the user during
the hold cancels it. Offboard loss acts at once with its fallback (COM_OBL_RC_ACT), and without RC
the position fallbacks end in a landing where the vehicle is. Measured on PX4 v1.16.1 SIH (the
behaviour suite, tests/behaviour/test_fence_and_rc.py and test_offboard.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from px4.modes import FlightMode

# NAV_RCL_ACT / GF_ACTION value -> what the vehicle does after the hold (None: nothing more).
RC_LOSS_ACTIONS = {0: None, 1: FlightMode.HOLD, 2: FlightMode.RTL, 3: FlightMode.LAND, 5: "disarm", 6: "disarm"}
# NAV_DLL_ACT: 0 disabled, 1 Hold, 2 Return, 3 Land, 5 Terminate, 6 Disarm (PX4 v1.14 and v1.16).
DATALINK_LOSS_ACTIONS = {0: None, 1: FlightMode.HOLD, 2: FlightMode.RTL, 3: FlightMode.LAND, 5: "terminate", 6: "disarm"}
GEOFENCE_ACTIONS = {0: None, 1: None, 2: FlightMode.HOLD, 3: FlightMode.RTL, 4: "terminate", 5: FlightMode.LAND}
# COM_OBL_RC_ACT -> the offboard-loss fallback; 0-2 (Position, Altitude, Manual) need a pilot.
OFFBOARD_LOSS_ACTIONS = {0: FlightMode.POSCTL, 1: FlightMode.ALTCTL, 2: FlightMode.MANUAL, 3: FlightMode.RTL,
                         4: FlightMode.LAND, 5: FlightMode.HOLD, 6: "terminate", 7: "disarm"}
# How PX4 names a mode in its failsafe messages.
MODE_WORDS = {FlightMode.RTL: "RTL", FlightMode.LAND: "Land", FlightMode.HOLD: "Hold",
              FlightMode.POSCTL: "Position", FlightMode.ALTCTL: "Altitude"}


def offboard_loss_action(com_obl_rc_act: int, rc_available: bool) -> FlightMode | str:
    """What offboard loss switches to: the parameter's fallback, or, where that needs a pilot and
    there is no RC, a landing in place (PX4 v1.14/v1.16: "Failsafe activated", then it lands)."""
    action = OFFBOARD_LOSS_ACTIONS.get(com_obl_rc_act, FlightMode.POSCTL)
    if action in (FlightMode.POSCTL, FlightMode.ALTCTL, FlightMode.MANUAL) and not rc_available:
        return FlightMode.LAND
    return action


@dataclass
class PendingAction:
    """A failsafe holding the vehicle until `due_s`, then acting."""

    action: FlightMode | str
    due_s: float
    reasons: tuple[str, ...]


class FailsafeFramework:
    """Hold, then act: one pending failsafe at a time; the first condition wins, as in PX4."""

    def __init__(self) -> None:
        self.pending: PendingAction | None = None

    def start(self, now_s: float, action: FlightMode | str, delay_s: float, reasons: tuple[str, ...]) -> str:
        """Begin holding for `delay_s` before `action`; returns PX4's text for it."""
        self.pending = PendingAction(action, now_s + max(delay_s, 0.0), reasons)
        return "Failsafe activated: entering Hold for " + f"{delay_s:g} seconds" + _lines(reasons)

    def due(self, now_s: float, mode: FlightMode) -> tuple[FlightMode | str, str] | None:
        """The action and its text once the hold is over; None while holding, or if the user has
        changed the mode meanwhile (the failsafe is then cleared)."""
        pending = self.pending
        if pending is None:
            return None
        if mode != FlightMode.HOLD:
            self.pending = None
            return None
        if now_s < pending.due_s:
            return None
        self.pending = None
        return pending.action, "Failsafe activated" + _lines(pending.reasons)

    def clear(self) -> None:
        """Disarmed, or the condition went away before the action."""
        self.pending = None


def activated(action: FlightMode | str, reasons: tuple[str, ...]) -> str:
    """The text of a failsafe that acts at once."""
    return _announce(f"switching to {_word(action)}", reasons)


def _word(action: FlightMode | str) -> str:
    return MODE_WORDS.get(action, action.name.title() if isinstance(action, FlightMode) else str(action))


def _announce(what: str, reasons: tuple[str, ...]) -> str:
    return "Failsafe activated: " + what + _lines(reasons)


def _lines(reasons: tuple[str, ...]) -> str:
    return "".join(f"\n- {reason}" for reason in reasons)
