"""pymavlink probes: a ground station's requests on the ground-station link, one protocol question each."""

from __future__ import annotations

import math
import struct
from typing import Awaitable, Callable

from pymavlink.dialects.v20 import common as mavlink

from px4.modes import FlightMode, decode_custom_mode

from ..mavlink_client import Client
from .suite import Target, blocking, case

CRUISE = "MPC_XY_CRUISE"


def on_gcs(probe: Callable[[Client], dict]) -> Callable[[Target], Awaitable[dict]]:
    """A probe asked as a ground station on the target's ground-station link (in a thread: pymavlink blocks)."""
    def run(target: Target) -> dict:
        client = Client(target.gcs_url)
        try:
            return probe(client)
        finally:
            client.close()
    run.__name__ = probe.__name__
    return blocking(run)


def _name(msg) -> str:
    return msg.param_id.rstrip("\x00") if isinstance(msg.param_id, str) else msg.param_id.decode().rstrip("\x00")


def _param_replies(client: Client, name: str, seconds: float) -> list[float]:
    return [m.param_value for m in client.collect(seconds, {"PARAM_VALUE"}) if _name(m) == name]


def _read_param(client: Client, name: str) -> float | None:
    client.drain()
    client.conn.mav.param_request_read_send(*client.target, name.encode(), -1)
    reply = client.recv("PARAM_VALUE", 3.0, lambda m: _name(m) == name)
    return None if reply is None else round(reply.param_value, 3)


def _set_param(client: Client, name: str, value: float, param_type: int) -> list[float]:
    client.drain()
    client.conn.mav.param_set_send(*client.target, name.encode(), value, param_type)
    return [round(v, 3) for v in _param_replies(client, name, 1.5)]


def _vehicle_seconds(client: Client, seconds: float, kinds: set[str]) -> list:
    """Messages of `kinds` over `seconds` of the vehicle's own clock (time_boot_ms), at most 4x that in wall time."""
    out, start = [], None
    for msg in client.stream(4 * seconds / 1.0 + 2.0, kinds | {"ATTITUDE"}):
        if msg.get_type() == "ATTITUDE":
            start = msg.time_boot_ms if start is None else start
            if msg.time_boot_ms - start >= seconds * 1000:
                break
        if msg.get_type() in kinds and start is not None:
            out.append(msg)
    return out


@case("PARAM_SET outside the range (MPC_XY_CRUISE 1000, -5)", "pymavlink", quick=True)
@on_gcs
def param_set_out_of_range(client: Client) -> dict:
    obs = {}
    for value in (1000.0, -5.0):
        obs[f"echo of {value:g}"] = _set_param(client, CRUISE, value, mavlink.MAV_PARAM_TYPE_REAL32)[:1]
        obs[f"read back after {value:g}"] = _read_param(client, CRUISE)
    return obs


@case("PARAM_SET of the wrong type (MPC_XY_CRUISE as INT32)", "pymavlink", quick=True)
@on_gcs
def param_set_wrong_type(client: Client) -> dict:
    before = _read_param(client, CRUISE)
    wire = struct.unpack("<f", struct.pack("<i", 7))[0]
    replies = _set_param(client, CRUISE, wire, mavlink.MAV_PARAM_TYPE_INT32)
    return {"replies": len(replies), "unchanged": _read_param(client, CRUISE) == before}


@case("streams on the ground-station link", "pymavlink", quick=True)
@on_gcs
def gcs_streams(client: Client) -> dict:
    kinds = {m.get_type() for m in client.collect(3.0, {"HIGHRES_IMU", "ATTITUDE", "GLOBAL_POSITION_INT",
                                                          "ODOMETRY", "SERVO_OUTPUT_RAW"})}
    return {kind: kind in kinds for kind in ("HIGHRES_IMU", "ATTITUDE", "GLOBAL_POSITION_INT", "ODOMETRY",
                                             "SERVO_OUTPUT_RAW")}


@case("SET_MESSAGE_INTERVAL 0 restores the link's default", "pymavlink", tolerance={"GLOBAL_POSITION_INT Hz": 1.5})
@on_gcs
def interval_zero(client: Client) -> dict:
    msg_id = mavlink.MAVLINK_MSG_ID_GLOBAL_POSITION_INT
    fast = client.command(mavlink.MAV_CMD_SET_MESSAGE_INTERVAL, msg_id, 20000)
    reset = client.command(mavlink.MAV_CMD_SET_MESSAGE_INTERVAL, msg_id, 0)
    seconds = 4.0
    count = len(_vehicle_seconds(client, seconds, {"GLOBAL_POSITION_INT"}))
    return {"ACK 50 Hz": fast, "ACK 0": reset, "GLOBAL_POSITION_INT Hz": round(count / seconds, 1)}


@case("DO_SET_MODE main mode 99; REBOOT param1 0", "pymavlink", quick=True)
@on_gcs
def odd_commands(client: Client) -> dict:
    mode = client.command(mavlink.MAV_CMD_DO_SET_MODE, mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, 99, 0)
    reboot = client.command(mavlink.MAV_CMD_PREFLIGHT_REBOOT_SHUTDOWN, 0)
    return {"DO_SET_MODE 99": mode, "REBOOT 0": reboot}


# A fence (one inclusion polygon) and a rally point as QGroundControl uploads them: fence vertices in
# MAV_FRAME_GLOBAL, rally points in MAV_FRAME_GLOBAL_RELATIVE_ALT.
FENCE = [(mavlink.MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION, mavlink.MAV_FRAME_GLOBAL, 4, dn, de, 0.0)
         for dn, de in ((1, 1), (1, -1), (-1, -1), (-1, 1))]
RALLY = [(mavlink.MAV_CMD_NAV_RALLY_POINT, mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT, 0, 0.5, 0.5, 10.0)]


def _upload(client: Client, items: list, mission_type: int, home: tuple[float, float]) -> int | None:
    client.drain()
    client.conn.mav.mission_count_send(*client.target, len(items), mission_type)
    for _ in items:
        req = next((m for m in client.stream(3.0, {"MISSION_REQUEST_INT", "MISSION_REQUEST"})
                    if m.mission_type == mission_type), None)
        if req is None:
            return None
        command, frame, p1, dn, de, alt = items[req.seq]
        lat = int((home[0] + dn * 1e-4) * 1e7)
        lon = int((home[1] + de * 1e-4) * 1e7)
        client.conn.mav.mission_item_int_send(*client.target, req.seq, frame, command, 0, 1, p1, 0, 0, 0, lat, lon,
                                              alt, mission_type)
    ack = client.recv("MISSION_ACK", 3.0, lambda m: m.mission_type == mission_type)
    return None if ack is None else ack.type


@case("mission upload the client leaves unanswered", "pymavlink", quick=True, tolerance={"requests": 1})
@on_gcs
def abandoned_upload(client: Client) -> dict:
    client.wait_armable(10.0)
    client.drain()
    client.conn.mav.mission_count_send(*client.target, 3, mavlink.MAV_MISSION_TYPE_MISSION)
    seconds = 8.0
    msgs = _vehicle_seconds(client, seconds, {"MISSION_REQUEST_INT", "MISSION_REQUEST", "MISSION_ACK"})
    acks = [m.type for m in msgs if m.get_type() == "MISSION_ACK"]
    return {"requests": sum(m.get_type() != "MISSION_ACK" for m in msgs), "MISSION_ACK": acks}


def _download_frames(client: Client, mission_type: int) -> list[int] | None:
    client.drain()
    client.conn.mav.mission_request_list_send(*client.target, mission_type)
    count = client.recv("MISSION_COUNT", 3.0, lambda m: m.mission_type == mission_type)
    if count is None:
        return None
    frames = []
    for seq in range(count.count):
        client.conn.mav.mission_request_int_send(*client.target, seq, mission_type)
        item = client.recv("MISSION_ITEM_INT", 3.0, lambda m: m.seq == seq and m.mission_type == mission_type)
        if item is None:
            return None
        frames.append(item.frame)
    client.conn.mav.mission_ack_send(*client.target, mavlink.MAV_MISSION_ACCEPTED, mission_type)
    return frames


def _home(client: Client) -> tuple[float, float]:
    client.wait_armable(10.0)
    pos = client.recv("GLOBAL_POSITION_INT", 5.0)
    return pos.lat / 1e7, pos.lon / 1e7


@case("fence and rally plan uploaded, downloaded", "pymavlink", quick=True)
@on_gcs
def fence_rally_frames(client: Client) -> dict:
    home = _home(client)
    obs = {"fence upload": _upload(client, FENCE, mavlink.MAV_MISSION_TYPE_FENCE, home),
           "rally upload": _upload(client, RALLY, mavlink.MAV_MISSION_TYPE_RALLY, home)}
    obs["fence frames"] = _download_frames(client, mavlink.MAV_MISSION_TYPE_FENCE)
    obs["rally frames"] = _download_frames(client, mavlink.MAV_MISSION_TYPE_RALLY)
    return obs


def _spread_m(values: list[float], scale: float) -> float:
    return round((max(values) - min(values)) * scale, 2) if values else math.nan


# PX4's estimate at rest: over 10 s its altitude spread 0.31-0.40 m and its horizontal 0.14-0.20 m (four runs).
@case("position and home at rest", "pymavlink", tolerance={"altitude spread m": 0.3, "horizontal spread m": 0.15})
@on_gcs
def rest_drift(client: Client) -> dict:
    client.wait_armable(10.0)
    client.command(mavlink.MAV_CMD_SET_MESSAGE_INTERVAL, mavlink.MAVLINK_MSG_ID_HOME_POSITION, 200000)
    msgs = _vehicle_seconds(client, 10.0, {"GLOBAL_POSITION_INT", "HOME_POSITION"})
    pos = [m for m in msgs if m.get_type() == "GLOBAL_POSITION_INT"]
    home = [m for m in msgs if m.get_type() == "HOME_POSITION"]
    metres = 1e-7 * 6371000 * math.pi / 180
    return {
        "position moves": len({(m.lat, m.lon, m.alt) for m in pos}) > 1,
        "altitude spread m": _spread_m([m.alt / 1000 for m in pos], 1.0),
        "horizontal spread m": max(_spread_m([m.lat for m in pos], metres), _spread_m([m.lon for m in pos], metres)),
        "home moves": len({(m.latitude, m.longitude, m.altitude) for m in home}) > 1,
    }


# What PX4 v1.16.1 tells the pilot over a mission of take-off, waypoint and return (measured, in this order):
# "Executing Mission", "Climb to 5.0 meters above home", "Takeoff detected", "Returning to launch",
# "RTL: start return at 499 m (10 m above destination)", "RTL: land at destination", "Landing detected",
# "Disarmed by landing"; and never "Mission finished, loitering" (the mission ends in its return). Compared in
# that order, so that a text said at the wrong moment differs too.
MISSION_TEXTS = ("Executing Mission", "Climb to 5.0 meters above home", "Takeoff detected", "Returning to launch",
                 "RTL: start return", "RTL: land at destination", "Landing detected", "Disarmed by landing",
                 "Mission finished")


@case("mission flown to its RTL: what the pilot reads", "pymavlink", speed=4.0)
@on_gcs
def mission_texts(client: Client) -> dict:
    home = _home(client)
    items = [(mavlink.MAV_CMD_NAV_TAKEOFF, mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT, 0, 0, 0, 5.0),
             (mavlink.MAV_CMD_NAV_WAYPOINT, mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT, 0, 1, 0, 5.0),
             (mavlink.MAV_CMD_NAV_RETURN_TO_LAUNCH, mavlink.MAV_FRAME_MISSION, 0, 0, 0, 0.0)]
    upload = _upload(client, items, mavlink.MAV_MISSION_TYPE_MISSION, home)
    # As a pilot starts it: once the plan is on the vehicle, not in the same millisecond. PX4 v1.16.1 DENIED a
    # MISSION_START sent the moment its first upload was acknowledged on 3 of 6 fresh instances (its navigator
    # had not yet checked the plan); the built-in vehicle holds the ACK until its navigator has, so needs no pause.
    _vehicle_seconds(client, 0.5, set())
    arm = client.command(mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 1)
    start = client.command(mavlink.MAV_CMD_MISSION_START, 0, 0)
    landed = client.recv("HEARTBEAT", 120.0,
                         lambda m: m.get_srcComponent() == 1 and not m.base_mode & mavlink.MAV_MODE_FLAG_SAFETY_ARMED)
    _vehicle_seconds(client, 1.0, set())  # the texts that follow the disarm
    obs = {"upload": upload, "arm": arm, "start": start, "disarmed at the end": landed is not None}
    for text in MISSION_TEXTS:
        obs[f"said {text!r}"] = any(t.startswith(text) for t in client.texts)
    obs["order"] = [text for t in client.texts for text in MISSION_TEXTS if t.startswith(text)]
    return obs


def _texts_from(client: Client, start: int, wanted: tuple[str, ...]) -> list[str]:
    """The wanted texts said since the client's `start`-th, in the order said, each as the first of `wanted`
    it begins with."""
    said = (next((text for text in wanted if t.startswith(text)), None) for t in client.texts[start:])
    return [text for text in said if text is not None]


def _take_off(client: Client) -> bool:
    """Arm and take off to the default altitude; True once in Hold up there."""
    client.wait_armable(10.0)
    client.command(mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 1)
    client.command(mavlink.MAV_CMD_NAV_TAKEOFF, 0, 0, 0, math.nan, math.nan, math.nan, math.nan)
    return client.recv("HEARTBEAT", 30.0, lambda m: m.get_srcComponent() == 1
                       and decode_custom_mode(m.custom_mode) == FlightMode.HOLD) is not None


# PX4 v1.16.1 on a take-off and a LAND (measured, in this order): "Using default takeoff altitude: 2.5 m",
# "Takeoff detected", "Landing at current position", "Landing detected", "Disarmed by landing" 2 s later.
LAND_TEXTS = ("Using default takeoff altitude: 2.5 m", "Takeoff detected", "Takeoff complete",
              "Landing at current position", "Landing detected", "Disarmed by landing")


@case("take-off, LAND: what the pilot reads", "pymavlink", speed=4.0, quick=True)
@on_gcs
def land_texts(client: Client) -> dict:
    obs = {"in Hold after the take-off": _take_off(client)}
    _vehicle_seconds(client, 2.0, set())
    obs["LAND"] = client.command(mavlink.MAV_CMD_NAV_LAND, 0, 0, 0, math.nan, math.nan, math.nan, math.nan)
    disarmed = client.recv("HEARTBEAT", 60.0, lambda m: m.get_srcComponent() == 1
                           and not m.base_mode & mavlink.MAV_MODE_FLAG_SAFETY_ARMED)
    _vehicle_seconds(client, 1.0, set())
    obs["disarmed"] = disarmed is not None
    obs["texts"] = _texts_from(client, 0, LAND_TEXTS)
    return obs


# PX4 v1.16.1 with RC (MANUAL_CONTROL) lost in Position mode, NAV_RCL_ACT 2 (measured on its GCS link): "Failsafe
# activated: entering Hold for 5 seconds", Hold, 5 s later "Failsafe activated" and the return's "RTL: start
# return at ..." (the reasons and the action's name reach a MAVSDK client as events only).
FAILSAFE_TEXTS = ("Failsafe activated: entering Hold for 5 seconds", "Failsafe activated", "RTL: start return")


@case("RC lost in Position mode: what the pilot reads", "pymavlink", speed=4.0, quick=True)
@on_gcs
def rc_loss_texts(client: Client) -> dict:
    client.sticks = (0.0, 0.0, 0.5, 0.0)
    obs = {"in Hold after the take-off": _take_off(client), "Position": client.set_mode(FlightMode.POSCTL)}
    _vehicle_seconds(client, 2.0, set())
    start = len(client.texts)
    client.sticks = None
    modes = [decode_custom_mode(m.custom_mode).name for m in _vehicle_seconds(client, 15.0, {"HEARTBEAT"})
             if m.get_srcComponent() == 1]
    obs["modes after the sticks stop"] = [mode for i, mode in enumerate(modes) if i == 0 or modes[i - 1] != mode]
    obs["texts"] = _texts_from(client, start, FAILSAFE_TEXTS)[:3]
    return obs
