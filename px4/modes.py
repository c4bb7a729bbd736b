"""PX4 flight modes and their MAVLink encoding.

PX4 packs its mode into HEARTBEAT.custom_mode as a little-endian struct
{uint16 reserved; uint8 main_mode; uint8 sub_mode}, so the main mode sits in bits 16-23 and the
sub mode in bits 24-31 (px4_custom_mode.h). Clients such as MAVSDK and QGroundControl decode
exactly this, so the built-in vehicle uses it too, and DO_SET_MODE carries the same two numbers
in param2 (main) and param3 (sub).
"""

from __future__ import annotations

from enum import Enum

from pymavlink.dialects.v20 import common as mavlink

# PX4 main modes
MAIN_MANUAL = 1
MAIN_ALTCTL = 2
MAIN_POSCTL = 3
MAIN_AUTO = 4
MAIN_ACRO = 5
MAIN_OFFBOARD = 6
MAIN_STABILIZED = 7

# PX4 POSCTL sub modes
POSCTL_ORBIT = 1

# PX4 AUTO sub modes
AUTO_READY = 1
AUTO_TAKEOFF = 2
AUTO_LOITER = 3
AUTO_MISSION = 4
AUTO_RTL = 5
AUTO_LAND = 6
AUTO_FOLLOW_TARGET = 8
AUTO_PRECLAND = 9


class FlightMode(Enum):
    """The modes the built-in vehicle can be in, valued by PX4's (main, sub) pair."""

    MANUAL = (MAIN_MANUAL, 0)
    ALTCTL = (MAIN_ALTCTL, 0)
    POSCTL = (MAIN_POSCTL, 0)
    ORBIT = (MAIN_POSCTL, POSCTL_ORBIT)
    ACRO = (MAIN_ACRO, 0)
    STABILIZED = (MAIN_STABILIZED, 0)
    OFFBOARD = (MAIN_OFFBOARD, 0)
    READY = (MAIN_AUTO, AUTO_READY)
    TAKEOFF = (MAIN_AUTO, AUTO_TAKEOFF)
    HOLD = (MAIN_AUTO, AUTO_LOITER)
    MISSION = (MAIN_AUTO, AUTO_MISSION)
    RTL = (MAIN_AUTO, AUTO_RTL)
    LAND = (MAIN_AUTO, AUTO_LAND)
    FOLLOW_TARGET = (MAIN_AUTO, AUTO_FOLLOW_TARGET)

    @property
    def custom_mode(self) -> int:
        """HEARTBEAT.custom_mode for this mode."""
        main, sub = self.value
        return (main << 16) | (sub << 24)

    @property
    def is_auto(self) -> bool:
        return self.value[0] == MAIN_AUTO

    def base_mode(self, armed: bool) -> int:
        """HEARTBEAT.base_mode flags PX4 reports for this mode (mavlink_messages.cpp shape)."""
        flags = mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED
        if armed:
            flags |= mavlink.MAV_MODE_FLAG_SAFETY_ARMED
        main = self.value[0]
        if main in (MAIN_MANUAL, MAIN_ACRO, MAIN_STABILIZED, MAIN_ALTCTL):
            flags |= mavlink.MAV_MODE_FLAG_MANUAL_INPUT_ENABLED | mavlink.MAV_MODE_FLAG_STABILIZE_ENABLED
        elif main == MAIN_POSCTL:
            flags |= (mavlink.MAV_MODE_FLAG_MANUAL_INPUT_ENABLED | mavlink.MAV_MODE_FLAG_STABILIZE_ENABLED
                      | mavlink.MAV_MODE_FLAG_GUIDED_ENABLED)
        else:
            flags |= (mavlink.MAV_MODE_FLAG_AUTO_ENABLED | mavlink.MAV_MODE_FLAG_STABILIZE_ENABLED
                      | mavlink.MAV_MODE_FLAG_GUIDED_ENABLED)
        return flags


_BY_PAIR = {m.value: m for m in FlightMode}


def decode_custom_mode(custom_mode: int) -> FlightMode | None:
    """The FlightMode of a HEARTBEAT.custom_mode, or None for a mode this vehicle does not have."""
    return mode_from_set_mode((custom_mode >> 16) & 0xFF, (custom_mode >> 24) & 0xFF)


def mode_from_set_mode(main: int, sub: int) -> FlightMode | None:
    """The FlightMode asked for by DO_SET_MODE / SET_MODE (param2 = main, param3 = sub)."""
    if main != MAIN_AUTO:
        sub = 0
    elif sub == 0:
        sub = AUTO_MISSION  # PX4 reads AUTO without a sub mode as Mission
    return _BY_PAIR.get((int(main), int(sub)))


# MAV_STANDARD_MODE values (MAVLink standard modes protocol)
STANDARD_NONE, STANDARD_POSITION_HOLD, STANDARD_ORBIT, STANDARD_CRUISE = 0, 1, 2, 3
STANDARD_ALTITUDE_HOLD, STANDARD_SAFE_RECOVERY, STANDARD_MISSION, STANDARD_LAND, STANDARD_TAKEOFF = 4, 5, 6, 7, 8
# MAV_MODE_PROPERTY flags
MODE_ADVANCED, MODE_NOT_USER_SELECTABLE = 1, 2


def _custom(main: int, sub: int = 0) -> int:
    return (main << 16) | (sub << 24)


# AVAILABLE_MODES as PX4 v1.16.1 SITL (multicopter) answers REQUEST_MESSAGE(435), in its order:
# (standard_mode, custom_mode, properties, mode_name). PX4 names only the modes without a standard
# mode; the last eight are the slots of external (ROS 2) modes, none registered. Measured from the binary.
AVAILABLE_MODES: tuple[tuple[int, int, int, str], ...] = (
    (STANDARD_NONE, _custom(MAIN_MANUAL), MODE_ADVANCED, "Manual"),
    (STANDARD_ALTITUDE_HOLD, _custom(MAIN_ALTCTL), 0, ""),
    (STANDARD_POSITION_HOLD, _custom(MAIN_POSCTL), 0, ""),
    (STANDARD_MISSION, _custom(MAIN_AUTO, AUTO_MISSION), MODE_ADVANCED, ""),
    (STANDARD_NONE, _custom(MAIN_AUTO, AUTO_LOITER), MODE_ADVANCED, "Hold"),
    (STANDARD_SAFE_RECOVERY, _custom(MAIN_AUTO, AUTO_RTL), MODE_ADVANCED, ""),
    (STANDARD_NONE, _custom(MAIN_POSCTL, 2), MODE_ADVANCED, "Position Slow"),
    (STANDARD_NONE, _custom(MAIN_ACRO), MODE_ADVANCED, "Acro"),
    (STANDARD_NONE, _custom(10), MODE_ADVANCED | MODE_NOT_USER_SELECTABLE, "Termination"),
    (STANDARD_NONE, _custom(MAIN_OFFBOARD), MODE_ADVANCED, "Offboard"),
    (STANDARD_NONE, _custom(MAIN_STABILIZED), MODE_ADVANCED, "Stabilized"),
    (STANDARD_TAKEOFF, _custom(MAIN_AUTO, AUTO_TAKEOFF), MODE_ADVANCED, ""),
    (STANDARD_LAND, _custom(MAIN_AUTO, AUTO_LAND), MODE_ADVANCED, ""),
    (STANDARD_NONE, _custom(MAIN_AUTO, AUTO_FOLLOW_TARGET), MODE_ADVANCED, "Follow Target"),
    (STANDARD_NONE, _custom(MAIN_AUTO, AUTO_PRECLAND), MODE_ADVANCED, "Precision Landing"),
    (STANDARD_ORBIT, _custom(MAIN_POSCTL, 1), MODE_ADVANCED, ""),
    (STANDARD_NONE, _custom(MAIN_AUTO, 10), MODE_ADVANCED, "VTOL Takeoff"),
) + tuple((STANDARD_NONE, _custom(MAIN_AUTO, sub), MODE_NOT_USER_SELECTABLE, "(Mode not available)")
          for sub in range(11, 19))

_STANDARD_BY_CUSTOM = {custom: standard for standard, custom, _, _ in AVAILABLE_MODES}


def standard_mode(custom_mode: int) -> int:
    """CURRENT_MODE.standard_mode for a HEARTBEAT.custom_mode (0 where PX4 has no standard mode)."""
    return _STANDARD_BY_CUSTOM.get(custom_mode, STANDARD_NONE)
