"""Mission items as the MAVLink mission protocol carries them, and what each means to fly.

Items are stored exactly as uploaded (MISSION_ITEM_INT fields), so a download returns what was
sent; `target_local` turns an item's coordinates into the local NED point the navigator flies to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pymavlink.dialects.v20 import common as mavlink

from missions.geo import GeoOrigin

# Frames whose x/y are lat/lon (degrees * 1e7 in the _INT variants), and how z is referenced.
_GLOBAL_AMSL = {mavlink.MAV_FRAME_GLOBAL, mavlink.MAV_FRAME_GLOBAL_INT}
_GLOBAL_REL = {mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT, mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT}
_LOCAL = {mavlink.MAV_FRAME_LOCAL_NED}
SUPPORTED_FRAMES = _GLOBAL_AMSL | _GLOBAL_REL | _LOCAL | {mavlink.MAV_FRAME_MISSION}

# Navigation commands move the vehicle; DO commands take effect at once.
NAV_COMMANDS = {
    mavlink.MAV_CMD_NAV_WAYPOINT,
    mavlink.MAV_CMD_NAV_LOITER_UNLIM,
    mavlink.MAV_CMD_NAV_LOITER_TIME,
    mavlink.MAV_CMD_NAV_RETURN_TO_LAUNCH,
    mavlink.MAV_CMD_NAV_LAND,
    mavlink.MAV_CMD_NAV_TAKEOFF,
    mavlink.MAV_CMD_NAV_DELAY,  # MAVSDK's loiter_time_s: wait where the vehicle is
}


@dataclass(frozen=True)
class MissionItem:
    """One MISSION_ITEM_INT, normalised (x/y are degrees * 1e7 for global frames)."""

    seq: int
    frame: int
    command: int
    param1: float = 0.0
    param2: float = 0.0
    param3: float = 0.0
    param4: float = 0.0
    x: int = 0
    y: int = 0
    z: float = 0.0
    autocontinue: int = 1
    mission_type: int = mavlink.MAV_MISSION_TYPE_MISSION

    @classmethod
    def from_message(cls, msg) -> "MissionItem":
        """From a MISSION_ITEM_INT or a legacy float MISSION_ITEM."""
        x, y = msg.x, msg.y
        if msg.get_type() == "MISSION_ITEM" and msg.frame in _GLOBAL_AMSL | _GLOBAL_REL:
            x, y = int(round(x * 1e7)), int(round(y * 1e7))
        elif msg.get_type() == "MISSION_ITEM":
            # Local frames in the float message carry metres; keep millimetres in the int field.
            x, y = int(round(x * 1e4)), int(round(y * 1e4))
        return cls(seq=msg.seq, frame=msg.frame, command=msg.command, param1=msg.param1,
                   param2=msg.param2, param3=msg.param3, param4=msg.param4, x=int(x), y=int(y),
                   z=float(msg.z), autocontinue=msg.autocontinue,
                   mission_type=getattr(msg, "mission_type", mavlink.MAV_MISSION_TYPE_MISSION))

    @property
    def is_nav(self) -> bool:
        return self.command in NAV_COMMANDS

    def has_position(self) -> bool:
        """Whether x/y name a place (0/0 or NaN-like means 'where the vehicle is', as in PX4)."""
        if self.command == mavlink.MAV_CMD_NAV_DELAY or self.frame == mavlink.MAV_FRAME_MISSION:
            return False
        if self.frame in _LOCAL:
            return True
        return not (self.x == 0 and self.y == 0)

    def target_local(self, origin: GeoOrigin, current: tuple[float, float, float]) -> tuple[float, float, float]:
        """The local NED point this item flies to; missing coordinates keep the current ones."""
        if self.frame in _LOCAL:
            return self.x / 1e4, self.y / 1e4, self.z
        if self.frame in _GLOBAL_AMSL:
            alt_amsl = self.z
        elif self.frame in _GLOBAL_REL:
            alt_amsl = origin.alt_m + self.z
        else:
            return current
        if self.has_position():
            north, east, down = origin.to_local(self.x / 1e7, self.y / 1e7, alt_amsl)
        else:
            north, east, down = current[0], current[1], origin.alt_m - alt_amsl
        if math.isnan(self.z):
            down = current[2]
        return north, east, down
