"""QGroundControl's mission files, in and out: the `.plan` (JSON) and the plain `QGC WPL 110` text.

Field-trial users plan in QGroundControl; `read_plan` and `read_wpl` turn its files into the mapping a
benchmark-mission YAML file parses to (`missions.schema`), which `parse_benchmark_mission` validates,
and `write_plan` writes a `BenchmarkMission` back as a plan QGroundControl opens.

Supported mission items (MAV_CMD), as PX4 flies them on a multicopter:

* NAV_TAKEOFF (22): its altitude is the start altitude (the vehicle climbs straight up from home;
  PX4 does not fly to a multicopter takeoff's lat/lon). Without one, the start is the first
  waypoint's altitude.
* NAV_WAYPOINT (16): param1 hold (s), param2 acceptance radius (m, 0: the autopilot's), param4 yaw
  (deg, null/NaN keeps the heading). NAV_LOITER_TIME (19): param1 hold (s) at its position.
* NAV_LAND (21): the mission lands; at its lat/lon if given (PX4 flies there at the altitude it is at,
  then descends), else where it is. NAV_RETURN_TO_LAUNCH (20): back over home, then land.
  Nothing may follow either.
* CONDITION_GATE (4501): a gate PX4 flies through without stopping, as a waypoint at its lat/lon/alt
  (QGroundControl puts one at each end of a survey's transects when the camera triggers).
* DO_SET_CAM_TRIGG_DIST (206), IMAGE_START_CAPTURE (2000), IMAGE_STOP_CAPTURE (2001): accepted and
  without effect on the flight (the harness carries no camera; they do not move the vehicle).
* DO_CHANGE_SPEED (178): param2 (m/s, of speed type 0 airspeed or 1 ground speed) -> speed_cap; with
  several, the largest wins: the harness caps the whole flight with one speed, which must not slow
  the fastest stretch the plan asks for. Climb and descent speeds (types 2, 3) are not modelled.
  Without one, a plan's hoverSpeed (QGroundControl's planning speed for multicopters) is the cap.
* Frames of positioned items: GLOBAL_RELATIVE_ALT (3) / _INT (6), altitude above home, and GLOBAL
  (0) / _INT (5), AMSL, converted with the home's altitude. Terrain frames are refused.
* The planned home's altitude may be null: QGroundControl writes one when it knew no ground height
  (no vehicle connected, no terrain data). Altitudes above home do not need it; AMSL ones are refused.
* A survey ("survey") or corridor scan ("CorridorScan") ComplexItem is flown as the mission items
  QGroundControl generated for it and saved inside it (TransectStyleComplexItem.Items), which are
  what it uploads; each is read as the SimpleItem it is.

Refused, with the item's index and the reason: any other command, any other ComplexItem (a structure
scan, a landing pattern: QGroundControl saves only their settings and generates their items when it
loads the plan; convert them to waypoints first) or a survey without its generated items,
autoContinue false (the harness never advances a mission by hand), anything after a landing.
Geofence: at most one inclusion polygon and one inclusion circle (what the harness judges); exclusion
circles become no-fly cylinders (every altitude: QGroundControl's fences are 2D), exclusion polygons
no-fly polygons. Rally points are kept for export. The breach return point is not modelled and is
ignored.

Every file is hostile input: at most MAX_FILE_BYTES, UTF-8, at most `config.loading.MAX_DEPTH` levels
of JSON nesting, no duplicate keys, no NaN/Infinity literals (QGroundControl writes NaN as null and
null is accepted only where it writes one: a yaw that keeps the heading, a landing without a
position, parameters the command does not use, the planned home's altitude), at most `MAX_WAYPOINTS`
items, a complex item's generated ones included (what a MAVLink mission counts), latitudes within
[-90, 90], longitudes within [-180, 180], every point within MAX_RANGE_M of home. Every problem is
one ``FILE: FIELD.PATH: expected WHAT, got VALUE`` line of a `ConfigError`; field paths are the
plan's (``mission.items[3].params[4]``, ``mission.items[2].TransectStyleComplexItem.Items[5].params[6]``,
0-based as in the JSON) or the WPL file's line (``line 5.params[4]``).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from config.errors import ConfigError
from config.fields import (
    Field,
    Invalid,
    Problems,
    integer,
    is_number,
    number,
    read_fields,
    shown,
    text,
)
from config.loading import MAX_BYTES, MAX_DEPTH, read_text
from missions.geo import GeoOrigin
from missions.schema import DEFAULT_SPEED_CAP, BenchmarkMission
from missions.waypoint import MAX_ALTITUDE_M, MAX_WAYPOINTS

__all__ = ["plan_from_mission", "plan_mapping", "read_plan", "read_wpl", "wpl_mapping", "write_plan"]

WPL_HEADER = "QGC WPL 110"
# A plan item is ~300 bytes as QGroundControl indents it: room for MAX_WAYPOINTS of them, so the
# MAVLink item count, not the byte count, is what bounds a mission.
MAX_FILE_BYTES = 8 * MAX_BYTES
# A quadrotor's battery lasts a few kilometres: a point farther from home is a typo (lat/lon swapped,
# a 0/0 coordinate), and the local projection is only meant for short distances.
MAX_RANGE_M = 100_000.0
MAX_HOLD_S = 3600.0  # a hold over an hour is not a trial (sanity limit)

NAV_WAYPOINT, NAV_LOITER_TIME, NAV_RETURN_TO_LAUNCH, NAV_LAND, NAV_TAKEOFF = 16, 19, 20, 21, 22
DO_CHANGE_SPEED, DO_SET_CAM_TRIGG_DIST = 178, 206
IMAGE_START_CAPTURE, IMAGE_STOP_CAPTURE, CONDITION_GATE = 2000, 2001, 4501
FRAME_GLOBAL, FRAME_MISSION, FRAME_GLOBAL_RELATIVE_ALT = 0, 2, 3
AMSL_FRAMES = {0: "MAV_FRAME_GLOBAL", 5: "MAV_FRAME_GLOBAL_INT"}
RELATIVE_FRAMES = {3: "MAV_FRAME_GLOBAL_RELATIVE_ALT", 6: "MAV_FRAME_GLOBAL_RELATIVE_ALT_INT"}
ALTITUDE_MODE_RELATIVE = 1  # QGroundControl's AltMode for MAV_FRAME_GLOBAL_RELATIVE_ALT
FIRMWARE_PX4, VEHICLE_QUADROTOR = 12, 2  # MAV_AUTOPILOT_PX4, MAV_TYPE_QUADROTOR
SAME_POINT_M = 0.01  # a landing this close to the last point needs no move before it
LAT_LON_DECIMALS = 9  # of a degree in an exported plan: 0.1 mm, far below what any GPS tells apart
# The ComplexItems that keep the mission items QGroundControl generated (TransectStyleComplexItem.Items),
# by complexItemType, with what a message calls them.
TRANSECT_STYLE = {"survey": "survey", "CorridorScan": "corridor scan"}



def _checked(expect: str, test: Callable[[float], bool]) -> Field:
    """A finite number that passes `test`, as a field (`expect` says what passes)."""

    def parse(value: Any) -> float:
        if not (is_number(value) and test(value)):
            raise Invalid(expect)
        return float(value)

    return Field(expect, parse)


_LAT = _checked("a latitude within [-90, 90] (deg, WGS84)", lambda v: -90 <= v <= 90)
_LON = _checked("a longitude within [-180, 180] (deg, WGS84)", lambda v: -180 <= v <= 180)
_HOME_ALT = number("m above mean sea level", at_least=-500, at_most=9000)
_ALT = number("m altitude, in the item's frame")
_YAW = number("deg, clockwise from north; null keeps the heading")
_HOLD = number("s to hold", at_least=0, at_most=MAX_HOLD_S)
_ACCEPTANCE = number("m acceptance radius, 0: the autopilot's", at_least=0, at_most=1000)
_UNUSED = _checked("a number or null (a parameter this command does not use)", lambda v: True)
_SPEED_TYPE = _checked("0 (airspeed), 1 (ground speed), 2 (climb) or 3 (descent)", lambda v: v in (0, 1, 2, 3))
_SPEED = number("m/s; -1: no change, -2: the default")
# A fence wider than the range every point of a plan is held to fences nothing a quadrotor reaches: a
# radius in the wrong unit or a stray exponent, not a fence.
_FENCE_RADIUS = number(f"m, at most {MAX_RANGE_M / 1000:g} km: the range a plan's points are held to", above=0,
                       at_most=MAX_RANGE_M)


@dataclass(frozen=True)
class _Item:
    """One mission item, structurally checked: its params are still as the file gave them."""

    path: str  # the field path naming it in errors
    command: int
    frame: int
    params: tuple[Any, ...]  # 7 values; None where the file has null (plan) or nan (WPL)


@dataclass
class _Route:
    """What the items say so far, in the mapping's terms."""

    home: GeoOrigin
    home_alt_known: bool = True  # False: the plan's home altitude was null (home.alt_m is a stand-in)
    start_alt: float | None = None
    start_yaw: float | None = None
    waypoints: list[dict] = field(default_factory=list)
    local: list[tuple[float, float, float]] = field(default_factory=list)  # NED of each waypoint
    speeds: list[float] = field(default_factory=list)
    radii: list[float] = field(default_factory=list)
    landed_by: str | None = None  # the path of the LAND or RTL item

    @property
    def last_alt(self) -> float:
        """The altitude the vehicle is at before the next item (m above home)."""
        return -self.local[-1][2] if self.local else (self.start_alt or 0.0)

    def add(self, lat: float, lon: float, alt: float, hold: float = 0.0, yaw: float | None = None) -> None:
        """A waypoint at lat/lon (deg), alt m above home."""
        waypoint = {"lat": lat, "lon": lon, "alt": alt, "hold": hold}
        if yaw is not None:
            waypoint["yaw"] = yaw
        self.waypoints.append(waypoint)
        self.local.append(self.home.to_local(lat, lon, self.home.alt_m + alt))


# ---------------------------------------------------------------------------------------------------
# Reading files


def read_plan(path: str | os.PathLike[str]) -> dict:
    """A QGroundControl `.plan` file as a benchmark-mission mapping (see `plan_mapping`)."""
    source = str(path)
    return plan_mapping(_parse_json(read_text(path, "QGroundControl plan file", MAX_FILE_BYTES), source), source)


def read_wpl(path: str | os.PathLike[str]) -> dict:
    """A `QGC WPL 110` waypoint file as a benchmark-mission mapping (see `wpl_mapping`)."""
    return wpl_mapping(read_text(path, "QGC WPL 110 waypoint file", MAX_FILE_BYTES), str(path))


class _NotJson(Exception):
    """Something Python's JSON reader would accept that JSON (and QGroundControl) does not."""


def _parse_json(text: str, source: str) -> Any:
    """Parse JSON text strictly: no NaN/Infinity, no duplicate keys, bounded nesting."""
    try:
        data = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_object_once)
    except json.JSONDecodeError as error:
        raise ConfigError([f"{source}: line {error.lineno}, column {error.colno}: expected valid JSON, got a syntax "
                           f"error ({error.msg})"]) from None
    except _NotJson as refused:
        raise ConfigError([f"{source}: {refused}"]) from None
    except RecursionError:
        raise ConfigError([f"{source}: expected at most {MAX_DEPTH} levels of nesting, got deeper"]) from None
    except ValueError as error:  # an integer of thousands of digits
        raise ConfigError([f"{source}: expected valid JSON numbers, got {error}"]) from None
    if _nesting(data) > MAX_DEPTH:
        raise ConfigError([f"{source}: expected at most {MAX_DEPTH} levels of nesting, got deeper"])
    return data


def _refuse_constant(name: str) -> Any:
    raise _NotJson(f"expected JSON numbers, got {name} (not JSON; QGroundControl writes null for NaN)")


def _object_once(pairs: list[tuple[str, Any]]) -> dict:
    # Python keeps the last of two equal keys silently; a file that says two things is refused instead.
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _NotJson(f"expected each key once in a JSON object, got {key!r} twice")
        out[key] = value
    return out


def _nesting(data: Any) -> int:
    """How deep lists and objects nest (iteratively, stopping past MAX_DEPTH)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (list, dict)):
            deepest = max(deepest, depth)
            if depth > MAX_DEPTH:
                break
            stack.extend((child, depth + 1) for child in (value.values() if isinstance(value, dict) else value))
    return deepest


# ---------------------------------------------------------------------------------------------------
# The .plan file


def _equals(expected: Any, expect: str) -> Field:
    def parse(value: Any) -> Any:
        if type(value) is not type(expected) or value != expected:
            raise Invalid(expect)
        return value

    return Field(expect, parse)


_PLAN = {"fileType": _equals("Plan", '"Plan" (a QGroundControl plan file)'),
         "version": _equals(1, "1 (the plan file format QGroundControl writes)"),
         "groundStation": text("the program that wrote the plan", required=False)}
_MISSION = {"version": _equals(2, "2 (the mission format of QGroundControl 3.2 and later)"),
            "firmwareType": integer("MAV_AUTOPILOT", at_least=0, at_most=255, required=False),
            "vehicleType": integer("MAV_TYPE", at_least=0, at_most=255, required=False),
            "cruiseSpeed": number("m/s, fixed-wing", at_least=0, required=False),
            "hoverSpeed": number("m/s, multicopter", above=0, required=False),
            "globalPlanAltitudeMode": integer("QGroundControl's altitude mode", at_least=0, at_most=5,
                                              required=False)}
_FENCE = {"version": _equals(2, "2 (the geofence format of QGroundControl 3.3 and later)")}
_RALLY = {"version": _equals(2, "2 (the rally point format of QGroundControl 3.3 and later)")}


def plan_mapping(data: Any, source: str) -> dict:
    """A parsed QGroundControl plan (`source` names it in errors; its stem names the mission) as the
    mapping a benchmark-mission YAML file parses to: a multi_waypoint mission flown in mission mode
    from the plan's home, with its geofence and rally points. Raises one `ConfigError` listing every
    problem (see the module docstring for what is supported)."""
    problems = Problems(source)
    if not isinstance(data, dict):
        problems.invalid("<top level>", "a JSON object (a QGroundControl plan)", data)
        problems.raise_if_any()
    read_fields(data, _PLAN, "", problems, nested=("mission", "geoFence", "rallyPoints"))
    problems.raise_if_any()  # not a plan (or not this version of one): nothing below would make sense
    mission = _object_at(data, "mission", "mission", problems, required=True)
    problems.raise_if_any()
    # Unknown keys of the mission object are QGroundControl's business (it adds some across versions).
    values = read_fields({k: v for k, v in mission.items() if k in _MISSION}, _MISSION, "mission.", problems)
    home, home_alt_known = _home(mission.get("plannedHomePosition"), "mission.plannedHomePosition", problems)
    items = _plan_items(mission.get("items"), problems)
    problems.raise_if_any()
    mapping = _mission_mapping(Path(source).stem or "plan", _Route(home, home_alt_known), items, problems,
                               values.get("hoverSpeed"))
    airspace = _fence(data, home, problems)
    rally = _rally(data, problems)
    problems.raise_if_any()
    if airspace:
        mapping["airspace"] = airspace
    if rally:
        mapping["rally"] = rally
    return mapping


def _object_at(parent: dict, key: str, path: str, problems: Problems, required: bool = False) -> dict | None:
    """The JSON object at `key`, or None (with a problem when it is required or not an object)."""
    if key not in parent:
        if required:
            problems.add(path, "missing required field, expected a JSON object")
        return None
    if not isinstance(parent[key], dict):
        problems.invalid(path, "a JSON object", parent[key])
        return None
    return parent[key]


def _list_at(value: Any, path: str, what: str, problems: Problems, non_empty: bool = False) -> list:
    """`value` as a list of at most MAX_WAYPOINTS entries (what a MAVLink mission, fence or rally list counts)."""
    if not isinstance(value, list) or (non_empty and not value):
        problems.invalid(path, f"a {'non-empty ' if non_empty else ''}list of {what}", value)
        return []
    if len(value) > MAX_WAYPOINTS:
        problems.add(path, f"expected at most {MAX_WAYPOINTS} {what} (what a MAVLink mission holds), got {len(value)}")
        return []
    return value


def _coordinate(value: Any, path: str, problems: Problems, altitude: Field | None = None) -> tuple | None:
    """A [lat, lon] (or [lat, lon, alt] with `altitude`) array, each value checked; None if any is wrong."""
    fields = [_LAT, _LON] + ([altitude] if altitude else [])
    names = "[lat, lon, alt]" if altitude else "[lat, lon]"
    if not isinstance(value, list) or len(value) != len(fields):
        problems.invalid(path, f"a coordinate {names}", value)
        return None
    out = []
    for index, (entry, check) in enumerate(zip(value, fields, strict=True)):
        try:
            out.append(check.parse(entry))
        except Invalid as invalid:
            problems.invalid(f"{path}[{index}]", str(invalid), entry)
    return tuple(out) if len(out) == len(fields) else None


def _home(value: Any, path: str, problems: Problems) -> tuple[GeoOrigin, bool]:
    """The planned home, and whether its altitude is known."""
    if value is None:
        problems.add(path, "missing required field, expected the planned home [lat, lon, alt AMSL]")
        return GeoOrigin(0.0, 0.0, 0.0), True
    if isinstance(value, list) and len(value) == 3 and value[2] is None:
        # QGroundControl writes null when it knew no ground height there. The harness flies altitudes
        # above home, wherever the vehicle's home is; 0 m AMSL stands in, as a file without a home gets
        # the vehicle's own, and only an item in an AMSL frame, which would need the real one, is refused.
        lat_lon = _coordinate(value[:2], path, problems)
        return (GeoOrigin(*lat_lon, 0.0) if lat_lon else GeoOrigin(0.0, 0.0, 0.0)), False
    home = _coordinate(value, path, problems, _HOME_ALT)
    return (GeoOrigin(*home) if home else GeoOrigin(0.0, 0.0, 0.0)), True


def _plan_items(value: Any, problems: Problems) -> list[_Item]:
    """mission.items as the mission items QGroundControl would upload: complex items expanded."""
    items = []
    for index, entry in enumerate(_list_at(value, "mission.items", "mission items", problems, non_empty=True)):
        path = f"mission.items[{index}]"
        if isinstance(entry, dict) and entry.get("type") == "ComplexItem":
            items += _generated_items(entry, path, problems)
        elif (item := _plan_item(entry, path, problems)) is not None:
            items.append(item)
    if len(items) > MAX_WAYPOINTS:
        problems.add("mission.items", f"expected at most {MAX_WAYPOINTS} mission items with the complex items' "
                                      f"generated ones (what a MAVLink mission holds), got {len(items)}")
    return items


def _generated_items(entry: dict, path: str, problems: Problems) -> list[_Item]:
    """The mission items QGroundControl generated for a survey or corridor scan and saved inside it."""
    kind = entry.get("complexItemType")
    if not isinstance(kind, str) or kind not in TRANSECT_STYLE:
        problems.add(f"{path}.complexItemType",
                     f"expected a SimpleItem, or a ComplexItem of type {' or '.join(map(repr, TRANSECT_STYLE))} "
                     f"(which keep the mission items QGroundControl generated), got ComplexItem {shown(kind)} "
                     "(QGroundControl saves only its settings and generates its items when it loads the plan: "
                     "convert it to waypoints)")
        return []
    inner = _object_at(entry, "TransectStyleComplexItem", f"{path}.TransectStyleComplexItem", problems, required=True)
    if inner is None:
        return []
    items_path = f"{path}.TransectStyleComplexItem.Items"
    generated = _list_at(inner.get("Items"), items_path, f"mission items QGroundControl generated for the "
                                                         f"{TRANSECT_STYLE[kind]} (it saves them with the plan: open "
                                                         "and save this one in QGroundControl)",
                         problems, non_empty=True)
    return [item for index, child in enumerate(generated)
            if (item := _plan_item(child, f"{items_path}[{index}]", problems)) is not None]


_COMMAND = integer("MAV_CMD", at_least=0, at_most=65535)
_FRAME = integer("MAV_FRAME", at_least=0, at_most=255)


def _plan_item(entry: Any, path: str, problems: Problems) -> _Item | None:
    """One entry of mission.items, structurally: a SimpleItem with command, frame, 7 params, autoContinue."""
    if not isinstance(entry, dict):
        problems.invalid(path, "a JSON object (a mission item)", entry)
        return None
    kind = entry.get("type")
    if kind != "SimpleItem":
        problems.invalid(f"{path}.type", '"SimpleItem"', kind)
        return None
    reported = len(problems.lines)
    values = read_fields({k: entry[k] for k in ("command", "frame") if k in entry},
                         {"command": _COMMAND, "frame": _FRAME}, f"{path}.", problems)
    params = entry.get("params")
    if not (isinstance(params, list) and len(params) == 7):
        problems.invalid(f"{path}.params", "a list of 7 parameters (numbers, or null for NaN)", params)
    if entry.get("autoContinue") is not True:
        problems.invalid(f"{path}.autoContinue", "true (the harness never advances a mission by hand)",
                         entry.get("autoContinue"))
    if len(problems.lines) > reported:
        return None
    return _Item(path, values["command"], values["frame"], tuple(params))


def _fence(data: dict, home: GeoOrigin, problems: Problems) -> dict:
    """The plan's geoFence as the mapping's airspace block: polygons and circles in local metres."""
    fence = _object_at(data, "geoFence", "geoFence", problems)
    if fence is None:
        return {}
    read_fields(fence, _FENCE, "geoFence.", problems, nested=("polygons", "circles", "breachReturn"))
    airspace: dict[str, Any] = {}
    for index, entry in enumerate(_list_at(fence.get("polygons", []), "geoFence.polygons", "fence polygons", problems)):
        path = f"geoFence.polygons[{index}]"
        polygon = _fence_polygon(entry, path, home, problems)
        if polygon is not None:
            _add_zone(airspace, polygon, ("geofence", "no_fly_polygons", "polygon"), path, problems)
    for index, entry in enumerate(_list_at(fence.get("circles", []), "geoFence.circles", "fence circles", problems)):
        path = f"geoFence.circles[{index}]"
        circle = _fence_circle(entry, path, home, problems)
        if circle is not None:
            _add_zone(airspace, circle, ("geofence_circle", "no_fly", "circle"), path, problems)
    return airspace


def _add_zone(airspace: dict, zone: tuple[bool, Any], keys: tuple[str, str, str], path: str,
              problems: Problems) -> None:
    """(inclusion, zone) into the airspace: an inclusion zone is its one fence of that shape, exclusion
    zones add up. `keys`: the airspace keys for inside and outside, and the shape's name."""
    (inclusion, value), (inside, outside, shape) = zone, keys
    if not inclusion:
        airspace.setdefault(outside, []).append(value)
    elif inside in airspace:
        problems.add(f"{path}.inclusion", f"expected at most one inclusion {shape} (the harness judges one; "
                                          "merge them), got a second")
    else:
        airspace[inside] = value


def _inclusion(entry: dict, path: str, problems: Problems) -> bool | None:
    value = entry.get("inclusion")
    if not isinstance(value, bool):
        problems.invalid(f"{path}.inclusion", "true (keep inside) or false (keep out)", value)
        return None
    return value


def _fence_polygon(entry: Any, path: str, home: GeoOrigin, problems: Problems) -> tuple[bool, list] | None:
    """(inclusion, [[north, east], ...]) of one fence polygon."""
    if not isinstance(entry, dict):
        problems.invalid(path, "a JSON object {inclusion, polygon, version}", entry)
        return None
    inclusion = _inclusion(entry, path, problems)
    vertices = []
    for index, vertex in enumerate(_list_at(entry.get("polygon"), f"{path}.polygon", "[lat, lon] vertices", problems)):
        point = _coordinate(vertex, f"{path}.polygon[{index}]", problems)
        if point is not None:
            vertices.append(list(_local(home, *point, f"{path}.polygon[{index}]", problems)[:2]))
    if isinstance(entry.get("polygon"), list) and len(entry["polygon"]) < 3:
        problems.invalid(f"{path}.polygon", "at least 3 [lat, lon] vertices", entry["polygon"])
    return (inclusion, vertices) if inclusion is not None else None


def _fence_circle(entry: Any, path: str, home: GeoOrigin, problems: Problems) -> tuple[bool, dict] | None:
    """(inclusion, {north, east, radius}) of one fence circle."""
    if not isinstance(entry, dict):
        problems.invalid(path, "a JSON object {circle: {center, radius}, inclusion, version}", entry)
        return None
    inclusion = _inclusion(entry, path, problems)
    circle = _object_at(entry, "circle", f"{path}.circle", problems, required=True)
    if circle is None:
        return None
    center = _coordinate(circle.get("center"), f"{path}.circle.center", problems)
    radius = read_fields({"radius": circle["radius"]} if "radius" in circle else {}, {"radius": _FENCE_RADIUS},
                         f"{path}.circle.", problems).get("radius")
    if center is None or radius is None or inclusion is None:
        return None
    north, east, _ = _local(home, *center, f"{path}.circle.center", problems)
    return inclusion, {"north": north, "east": east, "radius": radius}


def _rally(data: dict, problems: Problems) -> list[dict]:
    """The plan's rally points as the mapping's {lat, lon, alt} (alt above home, as QGroundControl's are)."""
    rally = _object_at(data, "rallyPoints", "rallyPoints", problems)
    if rally is None:
        return []
    read_fields(rally, _RALLY, "rallyPoints.", problems, nested=("points",))
    altitude = number("m above home", at_least=0, at_most=MAX_ALTITUDE_M)
    points = []
    for index, value in enumerate(_list_at(rally.get("points", []), "rallyPoints.points", "[lat, lon, alt] points",
                                           problems)):
        point = _coordinate(value, f"rallyPoints.points[{index}]", problems, altitude)
        if point is not None:
            points.append({"lat": point[0], "lon": point[1], "alt": point[2]})
    return points


# ---------------------------------------------------------------------------------------------------
# The QGC WPL 110 file

_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_WHOLE = re.compile(r"[+-]?\d{1,10}")


def wpl_mapping(text: str, source: str) -> dict:
    """A `QGC WPL 110` file's text as the same mapping as `plan_mapping` gives (no fence, no rally
    points: the format has none). Each line is INDEX CURRENT FRAME COMMAND P1..P7 AUTOCONTINUE,
    tab-separated (any whitespace is accepted); item 0 is home, its altitude AMSL."""
    problems = Problems(source)
    lines = text.splitlines()
    if not lines or lines[0].strip() != WPL_HEADER:
        problems.invalid("line 1", f"the header {WPL_HEADER!r}", lines[0] if lines else "")
        problems.raise_if_any()
    rows = [(number_, line.split()) for number_, line in enumerate(lines[1:], start=2) if line.strip()]
    if len(rows) > MAX_WAYPOINTS + 1:
        problems.add("<file>", f"expected at most {MAX_WAYPOINTS} items after home (what a MAVLink mission holds), "
                               f"got {len(rows) - 1}")
        problems.raise_if_any()
    items = [item for index, (line, fields) in enumerate(rows)
             if (item := _wpl_item(line, fields, index, problems)) is not None]
    problems.raise_if_any()
    if not items:
        problems.add("<file>", "expected item 0, the home, and mission items after it, got no items")
        problems.raise_if_any()
    home = _wpl_home(items[0], problems)
    if len(items) == 1:
        problems.add("<file>", "expected mission items after the home, got none")
    problems.raise_if_any()
    return _mission_mapping(Path(source).stem or "mission", _Route(home), items[1:], problems, None)


def _wpl_home(item: _Item, problems: Problems) -> GeoOrigin:
    """Item 0: the home, written by QGroundControl and Mission Planner as a waypoint in frame 0 (AMSL)."""
    if item.command != NAV_WAYPOINT or item.frame not in AMSL_FRAMES:
        problems.add(item.path, f"expected item 0, the home: command {NAV_WAYPOINT} in frame {FRAME_GLOBAL} "
                                f"(lat, lon, alt AMSL), got command {item.command} in frame {item.frame}")
        return GeoOrigin(0.0, 0.0, 0.0)
    values = [_param(item, index, check, problems) for index, check in ((4, _LAT), (5, _LON), (6, _HOME_ALT))]
    return GeoOrigin(*values) if None not in values else GeoOrigin(0.0, 0.0, 0.0)


def _wpl_item(line: int, fields: list[str], index: int, problems: Problems) -> _Item | None:
    """One line: 12 columns, whole numbers where MAVLink has integers, numbers (or nan) for params."""
    path = f"line {line}"
    if len(fields) != 12:
        problems.add(path, "expected 12 columns: INDEX CURRENT FRAME COMMAND P1 P2 P3 P4 LAT LON ALT AUTOCONTINUE, "
                           f"got {len(fields)}")
        return None
    reported = len(problems.lines)
    whole = {name: _wpl_int(fields[column], f"{path}.{name}", problems)
             for column, name in ((0, "index"), (1, "current"), (2, "frame"), (3, "command"), (11, "autocontinue"))}
    if whole["index"] is not None and whole["index"] != index:
        problems.invalid(f"{path}.index", f"{index} (items numbered from 0, in order)", whole["index"])
    if whole["current"] not in (0, 1, None):
        problems.invalid(f"{path}.current", "0 or 1", whole["current"])
    if whole["autocontinue"] not in (1, None):
        problems.invalid(f"{path}.autocontinue", "1 (the harness never advances a mission by hand)",
                         whole["autocontinue"])
    for name, check in (("frame", _FRAME), ("command", _COMMAND)):
        if whole[name] is not None:
            try:
                check.parse(whole[name])
            except Invalid as invalid:
                problems.invalid(f"{path}.{name}", str(invalid), whole[name])
    if len(problems.lines) > reported:
        return None
    return _Item(path, whole["command"], whole["frame"], tuple(_wpl_number(value) for value in fields[4:11]))


def _wpl_int(value: str, path: str, problems: Problems) -> int | None:
    if not _WHOLE.fullmatch(value):
        problems.invalid(path, "a whole number", value)
        return None
    return int(value)


def _wpl_number(value: str) -> float | str | None:
    """A parameter: a float, None for nan (as QGroundControl writes NaN), or the text when it is neither
    (checked, and reported, where the command reads it)."""
    if value.lower() == "nan":
        return None
    return float(value) if len(value) <= 40 and _DECIMAL.fullmatch(value) else value


# ---------------------------------------------------------------------------------------------------
# Mission items -> the mapping


def _mission_mapping(name: str, route: _Route, items: list[_Item], problems: Problems,
                     hover_speed: float | None) -> dict:
    """The items of either format, flown from the home of `route` (empty so far), as a benchmark-mission mapping."""
    home = route.home
    for item in items:
        _apply(item, route, problems)
    problems.raise_if_any()
    if route.start_alt is None:
        # PX4 takes off before a mission that does not; the harness climbs to the first waypoint's altitude.
        route.start_alt = route.last_alt
    if route.start_alt <= 0:
        problems.add(items[0].path, "expected a TAKEOFF to an altitude > 0 m, or a first waypoint above home")
        problems.raise_if_any()
    if not route.waypoints:
        route.add(home.lat_deg, home.lon_deg, route.start_alt)  # takeoff then land: hover over home
    start: dict[str, Any] = {"north": 0.0, "east": 0.0, "alt": route.start_alt}
    if route.start_yaw is not None:
        start["yaw"] = route.start_yaw
    speed = max(route.speeds) if route.speeds else hover_speed
    mapping: dict[str, Any] = {
        "name": name, "type": "multi_waypoint", "mode": "mission",
        "home": {"lat": home.lat_deg, "lon": home.lon_deg, "alt": home.alt_m},
        "start": start, "waypoints": route.waypoints, "land": route.landed_by is not None,
    }
    if speed is not None:
        mapping["speed_cap"] = speed
    if route.radii:
        # One success radius judges every waypoint: the loosest the plan accepts.
        mapping["success_radius"] = max(route.radii)
    mapping["time_budget"] = _time_budget(route, speed or DEFAULT_SPEED_CAP)
    return mapping


def _time_budget(route: _Route, speed: float) -> float:
    """QGroundControl plans carry no time limit and a trial needs one: the path (up from home, every
    waypoint, down to the ground when it lands) at the mission's speed twice over, plus the holds, plus
    a minute; the factor and the minute cover PX4's slower climb and landing, turns and settling."""
    path = [(0.0, 0.0, 0.0), (0.0, 0.0, -route.start_alt)] + route.local
    if route.landed_by is not None:
        path.append((route.local[-1][0], route.local[-1][1], 0.0))
    length = float(np.linalg.norm(np.diff(np.array(path), axis=0), axis=1).sum())
    holds = sum(w["hold"] for w in route.waypoints)
    return float(math.ceil(length / speed * 2 + holds + 60.0))


@dataclass(frozen=True)
class _Command:
    name: str
    used: frozenset[int]  # the params it reads; the others need only be numbers or null
    apply: Callable[[_Item, _Route, Problems], None]


def _apply(item: _Item, route: _Route, problems: Problems) -> None:
    """Read one item into the route, or record why it cannot be flown."""
    command = COMMANDS.get(item.command)
    if command is None:
        supported = ", ".join(f"{number_} {c.name}" for number_, c in COMMANDS.items())
        problems.invalid(f"{item.path}.command", f"a supported command ({supported})", item.command)
        return
    if route.landed_by is not None:
        problems.add(item.path, f"expected no item after the landing ({route.landed_by}), got {command.name}")
        return
    for index in sorted(set(range(7)) - command.used):
        if item.params[index] is not None:
            _param(item, index, _UNUSED, problems)
    command.apply(item, route, problems)


def _param(item: _Item, index: int, check: Field, problems: Problems, nullable: bool = False) -> float | None:
    """params[index] read with `check`; null (NaN) only where `nullable`."""
    value = item.params[index]
    path = f"{item.path}.params[{index}]"
    if value is None:
        if not nullable:
            problems.add(path, f"expected {check.expect}, got null (NaN)")
        return None
    try:
        return check.parse(value)
    except Invalid as invalid:
        problems.invalid(path, str(invalid), value)
        return None


def _altitude(item: _Item, route: _Route, problems: Problems) -> float | None:
    """params[6] as m above home, converted from the item's frame; None (reported) if unusable."""
    if item.frame not in AMSL_FRAMES and item.frame not in RELATIVE_FRAMES:
        frames = ", ".join(f"{k} ({v})" for k, v in {**RELATIVE_FRAMES, **AMSL_FRAMES}.items())
        problems.invalid(f"{item.path}.frame", f"one of {frames}; terrain and local frames are not supported",
                         item.frame)
        return None
    if item.frame in AMSL_FRAMES and not route.home_alt_known:
        problems.invalid(f"{item.path}.frame", "a frame relative to home (3 or 6): the plannedHomePosition's altitude "
                                               "is null, so an altitude above mean sea level cannot be converted",
                         item.frame)
        return None
    value = _param(item, 6, _ALT, problems)
    if value is None:
        return None
    above_home = value - route.home.alt_m if item.frame in AMSL_FRAMES else value
    if not 0.0 <= above_home <= MAX_ALTITUDE_M:
        frame = AMSL_FRAMES.get(item.frame) or RELATIVE_FRAMES[item.frame]
        problems.add(f"{item.path}.params[6]", f"expected an altitude 0-{MAX_ALTITUDE_M:g} m above home "
                                               f"({frame}), got {value:g} ({above_home:g} m above home)")
        return None
    return above_home


def _local(home: GeoOrigin, lat: float, lon: float, path: str, problems: Problems,
           alt: float = 0.0) -> tuple[float, float, float]:
    """lat/lon (alt m above home) in local NED metres; a point farther than MAX_RANGE_M is reported."""
    north, east, down = home.to_local(lat, lon, home.alt_m + alt)
    if math.hypot(north, east) > MAX_RANGE_M:
        problems.add(path, f"expected a point within {MAX_RANGE_M / 1000:g} km of home (sanity limit), got "
                           f"{lat:g}, {lon:g}, {math.hypot(north, east) / 1000:.0f} km away")
    return north, east, down


def _position(item: _Item, route: _Route, problems: Problems) -> tuple[float, float, float] | None:
    """(lat, lon, alt above home) of a positioned item, or None (reported)."""
    lat, lon = _param(item, 4, _LAT, problems), _param(item, 5, _LON, problems)
    alt = _altitude(item, route, problems)
    if lat is None or lon is None or alt is None:
        return None
    _local(route.home, lat, lon, f"{item.path}.params[4:6]", problems)
    return lat, lon, alt


def _takeoff(item: _Item, route: _Route, problems: Problems) -> None:
    if route.start_alt is not None or route.waypoints:
        problems.add(f"{item.path}.command", "expected one TAKEOFF, before every waypoint, got another")
        return
    yaw = _param(item, 3, _YAW, problems, nullable=True)
    for index, check in ((4, _LAT), (5, _LON)):  # PX4 climbs straight up: its lat/lon need only be valid
        _param(item, index, check, problems, nullable=True)
    alt = _altitude(item, route, problems)
    if alt is not None and alt <= 0:
        problems.add(f"{item.path}.params[6]", f"expected a takeoff altitude > 0 m above home, got {alt:g}")
    elif alt is not None:
        route.start_alt, route.start_yaw = alt, yaw


def _waypoint(item: _Item, route: _Route, problems: Problems) -> None:
    hold = _param(item, 0, _HOLD, problems)
    radius = _param(item, 1, _ACCEPTANCE, problems)
    yaw = _param(item, 3, _YAW, problems, nullable=True)
    position = _position(item, route, problems)
    if position is not None and hold is not None and radius is not None:
        route.add(*position, hold=hold, yaw=yaw)
        if radius > 0:
            route.radii.append(radius)


def _gate(item: _Item, route: _Route, problems: Problems) -> None:
    position = _position(item, route, problems)
    if position is not None:
        route.add(*position)


def _no_effect(item: _Item, route: _Route, problems: Problems) -> None:
    """A camera command: the harness has no camera, and the vehicle flies on as if it were not there."""


def _loiter_time(item: _Item, route: _Route, problems: Problems) -> None:
    hold = _param(item, 0, _HOLD, problems)
    position = _position(item, route, problems)
    if position is not None and hold is not None:
        route.add(*position, hold=hold)


def _move_to(route: _Route, lat: float, lon: float) -> None:
    """Fly to lat/lon at the current altitude before descending there, unless already above it."""
    north, east, _ = route.home.to_local(lat, lon, route.home.alt_m)
    here = route.local[-1][:2] if route.local else (0.0, 0.0)
    if math.hypot(north - here[0], east - here[1]) > SAME_POINT_M:
        route.add(lat, lon, route.last_alt)


def _land(item: _Item, route: _Route, problems: Problems) -> None:
    _param(item, 3, _YAW, problems, nullable=True)
    lat = _param(item, 4, _LAT, problems, nullable=True)
    lon = _param(item, 5, _LON, problems, nullable=True)
    if (lat is None) != (lon is None):
        problems.add(f"{item.path}.params[4:6]", "expected both lat and lon, or both null (land where it is)")
        return
    if lat is not None:
        _local(route.home, lat, lon, f"{item.path}.params[4:6]", problems)
        _move_to(route, lat, lon)
    route.landed_by = item.path


def _return_to_launch(item: _Item, route: _Route, problems: Problems) -> None:
    # PX4 climbs to RTL_RETURN_ALT first; the harness returns at the altitude it is at.
    _move_to(route, route.home.lat_deg, route.home.lon_deg)
    route.landed_by = item.path


def _change_speed(item: _Item, route: _Route, problems: Problems) -> None:
    kind = _param(item, 0, _SPEED_TYPE, problems)
    speed = _param(item, 1, _SPEED, problems)
    if kind is None or speed is None or speed in (-1, -2) or kind in (2, 3):
        return  # vertical speeds are not modelled; -1 and -2 change nothing the plan states
    if speed <= 0:
        problems.invalid(f"{item.path}.params[1]", "a speed > 0 m/s, or -1 (no change) or -2 (the default)", speed)
        return
    route.speeds.append(speed)


COMMANDS: dict[int, _Command] = {
    NAV_TAKEOFF: _Command("NAV_TAKEOFF", frozenset({3, 4, 5, 6}), _takeoff),
    NAV_WAYPOINT: _Command("NAV_WAYPOINT", frozenset({0, 1, 3, 4, 5, 6}), _waypoint),
    NAV_LOITER_TIME: _Command("NAV_LOITER_TIME", frozenset({0, 4, 5, 6}), _loiter_time),
    NAV_LAND: _Command("NAV_LAND", frozenset({3, 4, 5}), _land),
    NAV_RETURN_TO_LAUNCH: _Command("NAV_RETURN_TO_LAUNCH", frozenset(), _return_to_launch),
    DO_CHANGE_SPEED: _Command("DO_CHANGE_SPEED", frozenset({0, 1}), _change_speed),
    CONDITION_GATE: _Command("CONDITION_GATE", frozenset({4, 5, 6}), _gate),
    DO_SET_CAM_TRIGG_DIST: _Command("DO_SET_CAM_TRIGG_DIST", frozenset(), _no_effect),
    IMAGE_START_CAPTURE: _Command("IMAGE_START_CAPTURE", frozenset(), _no_effect),
    IMAGE_STOP_CAPTURE: _Command("IMAGE_STOP_CAPTURE", frozenset(), _no_effect),
}


# ---------------------------------------------------------------------------------------------------
# Writing a plan


def plan_from_mission(mission: BenchmarkMission, home: GeoOrigin | None = None) -> dict:
    """A `BenchmarkMission` as a QGroundControl plan (the JSON object): the launch point below the
    start as plannedHomePosition, a TAKEOFF to the start altitude, a DO_CHANGE_SPEED to the speed cap,
    a NAV_WAYPOINT per route point (hold, yaw, the success radius as acceptance radius), a NAV_LAND
    when the route ends with a "land" point, the airspace as fence polygons and circles (the altitude
    band and the no-fly zones' altitude limits are lost: QGroundControl's fences are 2D) and the rally
    points. `home` places the mission's frame on Earth (default: the mission's own home). Routes of
    every type are written as waypoints; their stage names are lost. Latitudes and longitudes are
    written to LAT_LON_DECIMALS, so that a plan read and exported again is the same file."""
    origin = home or mission.home
    if origin is None:
        raise ConfigError([f"{mission.source}: home: expected a home {{lat, lon, alt}} to place the mission on "
                           "Earth for QGroundControl, got none (give one)"])
    # The vehicle's home: below the start.
    launch = GeoOrigin(*_lat_lon(origin, mission.start[0], mission.start[1]), origin.alt_m)
    items = _export_items(mission, origin)
    for sequence, item in enumerate(items, start=1):
        item["doJumpId"] = sequence
    return {
        "fileType": "Plan", "version": 1, "groundStation": "QGroundControl",
        "mission": {"version": 2, "firmwareType": FIRMWARE_PX4, "vehicleType": VEHICLE_QUADROTOR,
                    "cruiseSpeed": 15, "hoverSpeed": mission.speed_cap,
                    "globalPlanAltitudeMode": ALTITUDE_MODE_RELATIVE,
                    "plannedHomePosition": [launch.lat_deg, launch.lon_deg, launch.alt_m], "items": items},
        "geoFence": _export_fence(mission, origin),
        "rallyPoints": {"version": 2, "points": [[*_lat_lon(origin, n, e), -d] for n, e, d in mission.rally]},
    }


def write_plan(mission: BenchmarkMission, path: str | os.PathLike[str], home: GeoOrigin | None = None) -> None:
    """Write `plan_from_mission(mission, home)` to `path` as QGroundControl indents its plans."""
    Path(path).write_text(json.dumps(plan_from_mission(mission, home), indent=4) + "\n", encoding="utf-8")


def _lat_lon(origin: GeoOrigin, north: float, east: float) -> tuple[float, float]:
    """The lat/lon (deg) of a local point, to LAT_LON_DECIMALS: going through local metres and back moves
    a coordinate's last bits, and a plan exported, read and exported again must not change."""
    lat, lon, _ = origin.to_global(north, east, 0.0)
    return round(lat, LAT_LON_DECIMALS), round(lon, LAT_LON_DECIMALS)


def _simple_item(command: int, params: list, frame: int = FRAME_GLOBAL_RELATIVE_ALT) -> dict:
    """A SimpleItem as QGroundControl saves one (NaN params as null; altitude fields on positioned items)."""
    item: dict[str, Any] = {"autoContinue": True, "command": command, "frame": frame,
                            "params": [None if p is None or math.isnan(p) else p for p in params],
                            "type": "SimpleItem"}
    if frame == FRAME_GLOBAL_RELATIVE_ALT:
        item.update({"AMSLAltAboveTerrain": None, "Altitude": params[6], "AltitudeMode": ALTITUDE_MODE_RELATIVE})
    return item


def _export_items(mission: BenchmarkMission, origin: GeoOrigin) -> list[dict]:
    lands = mission.route[-1].stage == "land"
    points = mission.route[:-1] if lands else mission.route
    start_lat, start_lon = _lat_lon(origin, mission.start[0], mission.start[1])
    # Yaw 0 is the schema's default start heading, not a request: the takeoff keeps the heading.
    yaw = mission.start_yaw_deg or None
    items = [_simple_item(NAV_TAKEOFF, [0, 0, 0, yaw, start_lat, start_lon, float(-mission.start[2])]),
             _simple_item(DO_CHANGE_SPEED, [1, mission.speed_cap, -1, 0, 0, 0, 0], frame=FRAME_MISSION)]
    for point in points:
        lat, lon = _lat_lon(origin, point.north, point.east)
        items.append(_simple_item(NAV_WAYPOINT, [point.hold_s, mission.success_radius, 0, point.yaw_deg, lat, lon,
                                                 -point.down]))
    if lands:
        lat, lon = _lat_lon(origin, mission.route[-1].north, mission.route[-1].east)
        items.append(_simple_item(NAV_LAND, [0, 0, 0, None, lat, lon, 0]))
    return items


def _export_fence(mission: BenchmarkMission, origin: GeoOrigin) -> dict:
    airspace = mission.airspace

    def polygon(vertices: Any, inclusion: bool) -> dict:
        return {"inclusion": inclusion, "polygon": [list(_lat_lon(origin, n, e)) for n, e in vertices],
                "version": 1}

    def circle(north: float, east: float, radius: float, inclusion: bool) -> dict:
        return {"circle": {"center": list(_lat_lon(origin, north, east)), "radius": radius},
                "inclusion": inclusion, "version": 1}

    polygons = [polygon(airspace.geofence, True)] if airspace.geofence is not None else []
    polygons += [polygon(p, False) for p in airspace.no_fly_polygons]
    circles = [circle(*airspace.geofence_circle, True)] if airspace.geofence_circle is not None else []
    circles += [circle(z.north, z.east, z.radius, False) for z in airspace.no_fly]
    return {"version": 2, "polygons": polygons, "circles": circles}
