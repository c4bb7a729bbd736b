"""The mission protocol: upload (MISSION_COUNT, then MISSION_REQUEST(_INT) with retries), download,
clear and set current, for missions, fences and rally points; a malformed item is rejected
naming its field, as PX4 does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from pymavlink.dialects.v20 import common as mavlink

from px4.sim import inputs
from px4.sim.autopilot import NAV_PERIOD_S, Autopilot
from px4.sim.mavlink_dispatch import handles
from px4.sim.mavlink_link import Link
from px4.sim.mission_items import SUPPORTED_FRAMES, MissionItem

# PX4 stores a global item's coordinates as integers and downloads it in MISSION_ITEM_INT in the _INT frame
# (measured on v1.16.1: an item uploaded in GLOBAL comes back in GLOBAL_INT, in GLOBAL_RELATIVE_ALT in
# GLOBAL_RELATIVE_ALT_INT; missions, fences and rally points alike).
INT_FRAMES = {mavlink.MAV_FRAME_GLOBAL: mavlink.MAV_FRAME_GLOBAL_INT,
              mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT: mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT}
# Which mission commands PX4 v1.16.1 takes in which frame (measured: 21 commands uploaded one by one in
# GLOBAL, GLOBAL_RELATIVE_ALT and MISSION). In a global frame only the commands that go to a place (and the
# region-of-interest ones); in MAV_FRAME_MISSION everything but those that go to a place and DO_SET_SERVO.
# Any other pair is MAV_MISSION_UNSUPPORTED with "IGN MISSION_ITEM: Invalid item": an RTL in
# GLOBAL_RELATIVE_ALT as Mission Planner and MAVProxy's QGC WPL files carry it, a DO_CHANGE_SPEED there.
_C = mavlink
PLACE_COMMANDS = {_C.MAV_CMD_NAV_WAYPOINT, _C.MAV_CMD_NAV_LOITER_UNLIM, _C.MAV_CMD_NAV_LOITER_TIME, _C.MAV_CMD_NAV_LAND,
                  _C.MAV_CMD_NAV_TAKEOFF, _C.MAV_CMD_NAV_LOITER_TO_ALT, _C.MAV_CMD_DO_SET_ROI_LOCATION}
GLOBAL_FRAME_COMMANDS = PLACE_COMMANDS | {_C.MAV_CMD_DO_SET_ROI, _C.MAV_CMD_NAV_ROI}
NOT_IN_MISSION_FRAME = PLACE_COMMANDS | {_C.MAV_CMD_DO_SET_SERVO}
GLOBAL_FRAMES = {_C.MAV_FRAME_GLOBAL, _C.MAV_FRAME_GLOBAL_INT, _C.MAV_FRAME_GLOBAL_RELATIVE_ALT,
                 _C.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT}


def _takes(frame: int, command: int) -> bool:
    """Whether PX4 takes a mission item of this command in this frame."""
    if frame in GLOBAL_FRAMES:
        return command in GLOBAL_FRAME_COMMANDS
    if frame == _C.MAV_FRAME_MISSION:
        return command not in NOT_IN_MISSION_FRAME
    return True


# As PX4 v1.16.1 asks for an item a client leaves unanswered (measured, vehicle seconds): again every 0.25 s,
# and after 5 s without an item it drops the upload without a word (no MISSION_ACK).
MISSION_RETRY_S = 0.25
MISSION_TIMEOUT_S = 5.0


def _invalid_item_field(msg) -> int | None:
    """The MAV_MISSION_INVALID_PARAMn of a mission item's first unusable field, None if all are usable.
    NaN stays allowed in param1-4 (MAVLink's "unchanged"); inf never is; x, y, z must be finite."""
    params = (msg.param1, msg.param2, msg.param3, msg.param4)
    for index, value in enumerate(params):
        if math.isinf(value):
            return mavlink.MAV_MISSION_INVALID_PARAM1 + index
    x, y = (msg.x / 1e7, msg.y / 1e7) if msg.get_type() == "MISSION_ITEM_INT" else (msg.x, msg.y)
    global_frame = msg.frame not in (mavlink.MAV_FRAME_LOCAL_NED, mavlink.MAV_FRAME_MISSION)
    if not inputs.usable(x, 90.0 if global_frame else math.inf):
        return mavlink.MAV_MISSION_INVALID_PARAM5_X
    if not inputs.usable(y, 180.0 if global_frame else math.inf):
        return mavlink.MAV_MISSION_INVALID_PARAM6_Y
    if not math.isnan(msg.z) and not inputs.usable(msg.z, inputs.MAX_ABS_ALTITUDE_M):
        return mavlink.MAV_MISSION_INVALID_PARAM7
    return None


@dataclass
class _Upload:
    """An upload in progress: the client announced `count` items of one mission type."""

    mission_type: int
    count: int
    peer: tuple[int, int]
    items: list[MissionItem] = field(default_factory=list)
    asked_at: float = 0.0  # vehicle seconds
    progress_at: float = 0.0  # when the count or the last item came


@dataclass
class _Ack:
    """An upload's MISSION_ACK held until the navigator has checked the plan it installed."""

    peer: tuple[int, int]
    mission_type: int
    installed_at: float  # vehicle seconds


class MissionProtocol:
    """Runs mission uploads and downloads per link.

    A member of `MavlinkServer` (px4/sim/mavlink_server.py), as PX4's mavlink module holds its mission
    manager: it is handed the autopilot, the links (MISSION_SET_CURRENT is answered on every one),
    `mission_current` (builds MISSION_CURRENT) and `flush_texts` (sends the queued status texts now, so that
    "Invalid item" arrives before its MISSION_ACK). It keeps, per link, the upload in progress, whether the
    link speaks the _INT forms, and an ACK held until the navigator has taken up what it acknowledges.
    """

    def __init__(self, autopilot: Autopilot, links: list[Link], mission_current: Callable[[], object],
                 flush_texts: Callable[[], None]) -> None:
        self.ap = autopilot
        self.links = links
        self.mission_current = mission_current
        self.flush_texts = flush_texts
        self._uploads: dict[Link, _Upload] = {}
        self._int_mode: dict[Link, bool] = {}
        self._held_acks: dict[Link, _Ack] = {}

    def _speaks_int(self, link: Link) -> bool:
        """PX4's mission manager (one per MAVLink instance) starts in the float forms and takes up the forms
        the last MISSION_ITEM(_INT) or MISSION_REQUEST(_INT) came in; a MISSION_ACK UNSUPPORTED during an
        upload switches it (MAVSDK's answer to MISSION_REQUEST). Measured on v1.16.1: a fresh pymavlink
        client's MISSION_COUNT gets MISSION_REQUEST on the ground-station port and on the API port alike.
        Here the ground-station port starts as PX4's; an API port (`hil sim --link`) starts in the _INT forms,
        as the built-in vehicle always spoke there (tests/test_hostile_mavlink.py asks for them)."""
        return self._int_mode.get(link, not link.gcs)

    # ---- mission protocol
    @handles(mavlink.MAVLINK_MSG_ID_MISSION_COUNT)
    def _on_mission_count(self, link: Link, msg) -> None:
        mtype = getattr(msg, "mission_type", 0)
        peer = (msg.get_srcSystem(), msg.get_srcComponent())
        if msg.count == 0:
            self._install(link, peer, mtype, [])
            return
        self._uploads[link] = _Upload(mtype, msg.count, peer, progress_at=self.ap.time_s)
        self._request_item(link)

    def _request_item(self, link: Link) -> None:
        up = self._uploads.get(link)
        assert up is not None
        up.asked_at = self.ap.time_s
        request = (mavlink.MAVLink_mission_request_int_message if self._speaks_int(link)
                   else mavlink.MAVLink_mission_request_message)
        link.send(request(up.peer[0], up.peer[1], len(up.items), up.mission_type))

    def pump(self, link: Link) -> None:
        """What the protocol sends on `link` unasked this tick: an item asked again, a held ACK now due."""
        self._retry_upload(link)
        held = self._held_acks.get(link)
        # The navigator checks a new plan on its next cycle (every NAV_PERIOD_S); a MISSION_START or a mode
        # change to Mission that a client sends on the ACK must find it checked, or it is not flown.
        if held is not None and self.ap.time_s - held.installed_at >= NAV_PERIOD_S - self.ap.dt / 2:
            del self._held_acks[link]
            link.send(mavlink.MAVLink_mission_ack_message(held.peer[0], held.peer[1], mavlink.MAV_MISSION_ACCEPTED,
                                                          held.mission_type))

    def _retry_upload(self, link: Link) -> None:
        up = self._uploads.get(link)
        now = self.ap.time_s
        if up is None or now - up.asked_at < MISSION_RETRY_S:
            return
        if now - up.progress_at >= MISSION_TIMEOUT_S:
            del self._uploads[link]
            return
        self._request_item(link)

    @handles(mavlink.MAVLINK_MSG_ID_MISSION_ACK)
    def _on_mission_ack(self, link: Link, msg) -> None:
        up = self._uploads.get(link)
        if up is None or (msg.get_srcSystem(), msg.get_srcComponent()) != up.peer:
            return  # the end of a download, or not the uploading client's
        if msg.type == mavlink.MAV_MISSION_UNSUPPORTED:
            # The client does not take the forms asked in (MAVSDK answers MISSION_REQUEST so): ask in the others.
            self._int_mode[link] = not self._speaks_int(link)
            self._request_item(link)
        elif msg.type == mavlink.MAV_MISSION_OPERATION_CANCELLED:
            del self._uploads[link]

    @handles(mavlink.MAVLINK_MSG_ID_MISSION_ITEM_INT, mavlink.MAVLINK_MSG_ID_MISSION_ITEM)
    def _on_mission_item_int(self, link: Link, msg) -> None:
        self._int_mode[link] = msg.get_type() == "MISSION_ITEM_INT"
        up = self._uploads.get(link)
        if up is None or getattr(msg, "mission_type", 0) != up.mission_type:
            return
        if msg.seq != len(up.items):
            self._request_item(link)  # a repeat or a skip: ask again for the one we need
            return
        item = MissionItem.from_message(msg)
        invalid = _invalid_item_field(msg)
        if invalid is not None:
            link.send(mavlink.MAVLink_mission_ack_message(up.peer[0], up.peer[1], invalid, up.mission_type))
            del self._uploads[link]
            return
        if item.mission_type == mavlink.MAV_MISSION_TYPE_MISSION and item.frame not in SUPPORTED_FRAMES:
            link.send(mavlink.MAVLink_mission_ack_message(up.peer[0], up.peer[1], mavlink.MAV_MISSION_UNSUPPORTED_FRAME,
                                                          up.mission_type))
            del self._uploads[link]
            return
        if item.mission_type == mavlink.MAV_MISSION_TYPE_MISSION and not _takes(item.frame, item.command):
            self.ap.say(mavlink.MAV_SEVERITY_CRITICAL, "IGN MISSION_ITEM: Invalid item")
            self.flush_texts()
            link.send(mavlink.MAVLink_mission_ack_message(up.peer[0], up.peer[1], mavlink.MAV_MISSION_UNSUPPORTED,
                                                          up.mission_type))
            del self._uploads[link]
            return
        up.items.append(item)
        up.progress_at = self.ap.time_s
        if len(up.items) < up.count:
            self._request_item(link)
            return
        del self._uploads[link]
        self._install(link, up.peer, up.mission_type, up.items)

    def _install(self, link: Link, peer: tuple[int, int], mission_type: int, items: list[MissionItem]) -> None:
        """Store a plan and acknowledge it: a mission once the navigator has checked it, the others at once."""
        if mission_type in (mavlink.MAV_MISSION_TYPE_MISSION, mavlink.MAV_MISSION_TYPE_ALL):
            self.ap.set_mission(items)
            self._held_acks[link] = _Ack(peer, mission_type, self.ap.time_s)
        if mission_type == mavlink.MAV_MISSION_TYPE_ALL:
            self.ap.extra_missions.clear()
        elif mission_type != mavlink.MAV_MISSION_TYPE_MISSION:
            self.ap.extra_missions[mission_type] = items
            link.send(mavlink.MAVLink_mission_ack_message(peer[0], peer[1], mavlink.MAV_MISSION_ACCEPTED, mission_type))

    def _items(self, mission_type: int) -> list[MissionItem]:
        if mission_type == mavlink.MAV_MISSION_TYPE_MISSION:
            return self.ap.mission
        return self.ap.extra_missions.get(mission_type, [])

    @handles(mavlink.MAVLINK_MSG_ID_MISSION_REQUEST_LIST)
    def _on_mission_request_list(self, link: Link, msg) -> None:
        mtype = getattr(msg, "mission_type", 0)
        link.send(mavlink.MAVLink_mission_count_message(msg.get_srcSystem(), msg.get_srcComponent(),
                                                        len(self._items(mtype)), mtype))

    @handles(mavlink.MAVLINK_MSG_ID_MISSION_REQUEST_INT, mavlink.MAVLINK_MSG_ID_MISSION_REQUEST)
    def _on_mission_request_int(self, link: Link, msg) -> None:
        self._int_mode[link] = msg.get_type() == "MISSION_REQUEST_INT"
        mtype = getattr(msg, "mission_type", 0)
        items = self._items(mtype)
        if not 0 <= msg.seq < len(items):
            link.send(mavlink.MAVLink_mission_ack_message(msg.get_srcSystem(), msg.get_srcComponent(),
                                                          mavlink.MAV_MISSION_INVALID_SEQUENCE, mtype))
            return
        it = items[msg.seq]
        current = int(mtype == mavlink.MAV_MISSION_TYPE_MISSION and msg.seq == self.ap.mission_current)
        if msg.get_type() == "MISSION_REQUEST":
            scale = 1e7 if it.frame not in (mavlink.MAV_FRAME_LOCAL_NED,) else 1e4
            out = mavlink.MAVLink_mission_item_message(msg.get_srcSystem(), msg.get_srcComponent(), it.seq, it.frame,
                                                       it.command, current, it.autocontinue, it.param1, it.param2,
                                                       it.param3, it.param4, it.x / scale, it.y / scale, it.z, mtype)
        else:
            out = mavlink.MAVLink_mission_item_int_message(msg.get_srcSystem(), msg.get_srcComponent(), it.seq,
                                                           INT_FRAMES.get(it.frame, it.frame),
                                                           it.command, current, it.autocontinue, it.param1, it.param2,
                                                           it.param3, it.param4, it.x, it.y, it.z, mtype)
        link.send(out)

    @handles(mavlink.MAVLINK_MSG_ID_MISSION_CLEAR_ALL)
    def _on_mission_clear_all(self, link: Link, msg) -> None:
        self._install(link, (msg.get_srcSystem(), msg.get_srcComponent()), getattr(msg, "mission_type", 0), [])

    @handles(mavlink.MAVLINK_MSG_ID_MISSION_SET_CURRENT)
    def _on_mission_set_current(self, link: Link, msg) -> None:
        if self.ap.set_mission_current(msg.seq).accepted:
            for each in self.links:
                each.send(self.mission_current())
