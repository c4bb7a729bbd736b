"""QGroundControl's mission files in and out (missions/qgc.py): the shipped plan imports as QGroundControl
wrote it, a plan exported from a mission imports back to the same mission, a QGC WPL 110 file flies the
same route as its plan, and every broken file is refused naming the item and the field."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import numpy as np
import pytest

from config.errors import ConfigError
from config.loading import MAX_DEPTH
from missions.geo import GeoOrigin
from missions.load import load
from missions.qgc import (
    MAX_FILE_BYTES,
    plan_from_mission,
    plan_mapping,
    read_plan,
    read_wpl,
    wpl_mapping,
    write_plan,
)
from missions.schema import parse_benchmark_mission
from missions.waypoint import MAX_WAYPOINTS
from records.record import read_manifest

from .test_cli import hil

ROOT = Path(__file__).resolve().parents[1]
FIELD_SQUARE = ROOT / "missions" / "examples" / "qgc" / "field_square.plan"
HOME = GeoOrigin(47.397742, 8.545594, 488.0)
CM = 0.01

# What field_square.plan was planned as: (north, east, alt above home, hold s, yaw deg) per waypoint.
PLANNED = [(30, 0, 10, 0, None), (30, 30, 10, 3, 90), (0, 30, 15, 0, None), (0, 0, 15, 4, None)]


def plan_json() -> dict:
    return json.loads(FIELD_SQUARE.read_text())


def imported(path: Path = FIELD_SQUARE):
    return parse_benchmark_mission(read_plan(path), str(path))


def route_array(mission) -> np.ndarray:
    return np.array([p.position for p in mission.route])


# ---------------------------------------------------------------------------------------------------
# The shipped plan


def test_the_shipped_plan_imports_as_the_mission_qgroundcontrol_planned():
    mission = imported()
    assert (mission.name, mission.type, mission.mode) == ("field_square", "multi_waypoint", "mission")
    assert mission.home == HOME
    np.testing.assert_allclose(mission.start, [0, 0, -10])  # the takeoff altitude
    assert mission.speed_cap == 5.0  # DO_CHANGE_SPEED
    assert mission.success_radius == 2.0  # acceptance radii are 0 (the autopilot's): the default
    assert [p.stage for p in mission.route] == ["waypoint-1", "waypoint-2", "waypoint-3", "waypoint-4", "land"]
    assert [p.hold_s for p in mission.route[:-1]] == [w[3] for w in PLANNED]  # the hold and the loiter time
    assert [p.yaw_deg for p in mission.route[:-1]] == [w[4] for w in PLANNED]
    np.testing.assert_allclose(mission.route[-1].position, [0, 0, 0], atol=CM)  # lands at home
    # path 10 up + 4 x 30 m + 5 m climb + 15 down = 150 m at 5 m/s, twice, + 7 s of holds + 60 s.
    assert mission.time_budget == pytest.approx(150 / 5 * 2 + 7 + 60, abs=1)


def test_the_waypoints_are_the_lat_lon_of_the_plan_converted_with_its_home():
    items = [i for i in plan_json()["mission"]["items"] if i["command"] in (16, 19)]
    expected = np.array([HOME.to_local(i["params"][4], i["params"][5], HOME.alt_m + i["params"][6]) for i in items])
    route = route_array(imported())[:-1]
    assert np.abs(route - expected).max() < CM
    planned = np.array([(n, e, -alt) for n, e, alt, _, _ in PLANNED], dtype=float)
    assert np.abs(route - planned).max() < CM


def test_the_shipped_plan_keeps_its_fence_no_fly_zones_and_rally_points():
    mission = imported()
    airspace = mission.airspace
    np.testing.assert_allclose(airspace.geofence, [(-20, -20), (60, -20), (60, 60), (-20, 60)], atol=CM)
    assert airspace.geofence_circle is None
    assert len(airspace.no_fly) == 1
    zone = airspace.no_fly[0]
    np.testing.assert_allclose([zone.north, zone.east, zone.radius], [15, 48, 6], atol=CM)
    np.testing.assert_allclose(airspace.no_fly_polygons[0], [(42, -12), (52, -12), (52, 8), (42, 8)], atol=CM)
    np.testing.assert_allclose(mission.rally, [(-10, -10, -10), (50, 50, -20)], atol=CM)


def test_missions_load_reads_a_plan_by_its_suffix():
    mission = load(FIELD_SQUARE)
    np.testing.assert_allclose(route_array(mission), route_array(imported()))
    assert mission.source == str(FIELD_SQUARE)


# ---------------------------------------------------------------------------------------------------
# Export and back


def assert_same_mission(back, mission, offset=(0.0, 0.0)):
    """`back` (re-imported) is `mission` seen from `offset` (north, east), to a centimetre."""
    shift = np.array([offset[0], offset[1], 0.0])
    assert np.abs(route_array(back) - (route_array(mission) - shift)).max() < CM
    assert [p.hold_s for p in back.route] == [p.hold_s for p in mission.route]
    assert [p.yaw_deg for p in back.route] == [p.yaw_deg for p in mission.route]
    assert back.route[-1].stage == mission.route[-1].stage
    np.testing.assert_allclose(back.start, mission.start - shift, atol=CM)
    assert (back.speed_cap, back.success_radius, back.mode) == (mission.speed_cap, mission.success_radius, "mission")


def test_a_plan_exported_from_the_shipped_plan_imports_back_to_the_same_mission(tmp_path):
    mission = imported()
    path = tmp_path / "again.plan"
    write_plan(mission, path)
    back = imported(path)
    assert_same_mission(back, mission)
    assert back.home == mission.home
    for mine, theirs in ((back.airspace.geofence, mission.airspace.geofence),
                         (back.airspace.no_fly_polygons, mission.airspace.no_fly_polygons),
                         ([(z.north, z.east, z.radius) for z in back.airspace.no_fly],
                          [(z.north, z.east, z.radius) for z in mission.airspace.no_fly]),
                         (back.rally, mission.rally)):
        np.testing.assert_allclose(mine, theirs, atol=CM)


def test_an_exported_plan_is_what_qgroundcontrol_writes(tmp_path):
    plan = plan_from_mission(imported())
    assert (plan["fileType"], plan["version"], plan["mission"]["version"]) == ("Plan", 1, 2)
    assert (plan["geoFence"]["version"], plan["rallyPoints"]["version"]) == (2, 2)
    items = plan["mission"]["items"]
    assert [i["command"] for i in items] == [22, 178, 16, 16, 16, 16, 21]
    assert [i["doJumpId"] for i in items] == list(range(1, 8))
    assert all(i["type"] == "SimpleItem" and i["autoContinue"] is True and len(i["params"]) == 7 for i in items)
    assert items[0]["params"][3] is None  # NaN yaw written as null, as QGroundControl does
    assert items[1]["params"][:3] == [1, 5.0, -1]  # ground speed 5 m/s, throttle unchanged
    assert items[3]["params"][0] == 3 and items[3]["params"][1] == 2.0 and items[3]["params"][3] == 90
    assert [c["inclusion"] for c in plan["geoFence"]["circles"]] == [False]
    assert [p["inclusion"] for p in plan["geoFence"]["polygons"]] == [True, False]
    json.dumps(plan, allow_nan=False)  # strict JSON: QGroundControl reads no NaN literals


def test_a_yaml_mission_exports_with_a_given_home_from_its_launch_point(tmp_path):
    source = ROOT / "missions" / "examples" / "demo_square.yaml"
    mission = load(source)
    with pytest.raises(ConfigError, match=r"demo_square.yaml: home: expected a home"):
        plan_from_mission(mission)  # no home in the file and none given
    path = tmp_path / "demo.plan"
    write_plan(mission, path, HOME)
    assert_same_mission(imported(path), mission)

    # A start away from the frame's origin: the vehicle's home (plannedHomePosition) is below the start.
    offset = parse_benchmark_mission({**yaml_of(source), "start": {"north": 2, "east": 3, "alt": 5},
                                      "home": {"lat": HOME.lat_deg, "lon": HOME.lon_deg, "alt": HOME.alt_m}})
    write_plan(offset, path)
    back = imported(path)
    assert_same_mission(back, offset, offset=(2, 3))
    np.testing.assert_allclose(back.home.to_local(HOME.lat_deg, HOME.lon_deg, HOME.alt_m), [-2, -3, 0], atol=CM)


def yaml_of(path: Path) -> dict:
    import yaml
    return yaml.safe_load(path.read_text())


# ---------------------------------------------------------------------------------------------------
# QGC WPL 110


def wpl_from_plan(plan: dict) -> str:
    """The plan's mission as a QGC WPL 110 file (tab-separated, item 0 the home in frame 0), as Mission
    Planner writes one."""
    lat, lon, alt = plan["mission"]["plannedHomePosition"]
    rows = [[0, 1, 0, 16, 0, 0, 0, 0, lat, lon, alt, 1]]
    for index, item in enumerate(plan["mission"]["items"], start=1):
        params = ["nan" if p is None else p for p in item["params"]]
        rows.append([index, 0, item["frame"], item["command"], *params, 1])
    return "QGC WPL 110\n" + "".join("\t".join(str(v) for v in row) + "\n" for row in rows)


def test_a_wpl_file_imports_to_the_same_route_as_its_plan(tmp_path):
    path = tmp_path / "field_square.waypoints"
    path.write_text(wpl_from_plan(plan_json()))
    from_wpl = load(path)  # found by its header
    mission = imported()
    assert np.abs(route_array(from_wpl) - route_array(mission)).max() < CM
    assert [p.hold_s for p in from_wpl.route] == [p.hold_s for p in mission.route]
    assert [p.yaw_deg for p in from_wpl.route] == [p.yaw_deg for p in mission.route]
    assert (from_wpl.speed_cap, from_wpl.home, from_wpl.mode) == (mission.speed_cap, mission.home, "mission")
    assert from_wpl.airspace.geofence is None and from_wpl.rally == ()  # the format has neither
    assert read_wpl(path) == wpl_mapping(path.read_text(), str(path))


# ---------------------------------------------------------------------------------------------------
# What the items mean


def mapping_of(*items, home=(47.397742, 8.545594, 488.0)) -> dict:
    """plan_mapping of a plan with these (command, frame, params) items."""
    plan = plan_json()
    plan["mission"]["plannedHomePosition"] = list(home)
    plan["mission"]["items"] = [
        {"autoContinue": True, "command": c, "frame": f, "params": list(p), "type": "SimpleItem"} for c, f, p in items]
    del plan["geoFence"], plan["rallyPoints"]
    return plan_mapping(plan, "t.plan")


def ll(north: float, east: float) -> tuple[float, float]:
    return HOME.to_global(north, east, 0.0)[:2]


TAKEOFF = (22, 3, (0, 0, 0, None, *ll(0, 0), 10))


def waypoint(north, east, alt, frame=3, hold=0, radius=0, yaw=None):
    return 16, frame, (hold, radius, 0, yaw, *ll(north, east), alt)


def local_route(mapping: dict) -> np.ndarray:
    return route_array(parse_benchmark_mission(mapping, "t.plan"))


def test_return_to_launch_flies_back_over_home_and_lands():
    mapping = mapping_of(TAKEOFF, waypoint(20, 0, 10), (20, 2, (0,) * 7))
    assert mapping["land"] is True
    np.testing.assert_allclose(local_route(mapping), [[20, 0, -10], [0, 0, -10], [0, 0, 0]], atol=CM)


def test_a_landing_elsewhere_flies_there_at_its_altitude_first_and_one_without_a_position_lands_in_place():
    elsewhere = mapping_of(TAKEOFF, waypoint(20, 0, 10), (21, 3, (0, 0, 0, None, *ll(20, 15), 0)))
    np.testing.assert_allclose(local_route(elsewhere), [[20, 0, -10], [20, 15, -10], [20, 15, 0]], atol=CM)
    in_place = mapping_of(TAKEOFF, waypoint(20, 0, 10), (21, 3, (0, 0, 0, None, None, None, 0)))
    np.testing.assert_allclose(local_route(in_place), [[20, 0, -10], [20, 0, 0]], atol=CM)


def test_amsl_altitudes_are_converted_with_the_home_altitude():
    mapping = mapping_of((22, 0, (0, 0, 0, None, *ll(0, 0), 500)), waypoint(10, 0, 495.5, frame=5))
    assert mapping["start"]["alt"] == pytest.approx(12)
    np.testing.assert_allclose(local_route(mapping), [[10, 0, -7.5]], atol=CM)


def test_speeds_radii_and_a_missing_takeoff():
    mapping = mapping_of((178, 2, (1, 3, -1, 0, 0, 0, 0)), waypoint(10, 0, 8, radius=1.5),
                         (178, 2, (0, 6, -1, 0, 0, 0, 0)), (178, 2, (2, 9, -1, 0, 0, 0, 0)), waypoint(10, 10, 8))
    assert mapping["speed_cap"] == 6  # the largest horizontal speed; climb speed (type 2) is not one
    assert mapping["success_radius"] == 1.5
    assert mapping["start"]["alt"] == 8  # no takeoff: climb to the first waypoint's altitude
    assert mapping["land"] is False
    # Path: 8 up, 10 north, 10 east = 28 m at 6 m/s, twice, + 60 s.
    assert mapping["time_budget"] == pytest.approx(28 / 6 * 2 + 60, abs=1)
    only_takeoff = mapping_of(TAKEOFF, (21, 3, (0, 0, 0, None, None, None, 0)))
    np.testing.assert_allclose(local_route(only_takeoff), [[0, 0, -10], [0, 0, 0]], atol=CM)


# ---------------------------------------------------------------------------------------------------
# Hostile plans


def broken(change) -> dict:
    plan = copy.deepcopy(plan_json())
    change(plan)
    return plan


def item_at(index):
    return lambda plan: plan["mission"]["items"][index]


def setting(getter, key, value):
    def change(plan):
        getter(plan)[key] = value
    return change


def set_param(index, param, value):
    def change(plan):
        plan["mission"]["items"][index]["params"][param] = value
    return change


def complex_item(plan):
    plan["mission"]["items"][3] = {"type": "ComplexItem", "complexItemType": "survey", "version": 5,
                                   "TransectStyleComplexItem": {}, "polygon": []}


def survey_holding_a_survey(plan):
    complex_item(plan)
    plan["mission"]["items"][3]["TransectStyleComplexItem"]["Items"] = [copy.deepcopy(plan["mission"]["items"][3])]


def second_inclusion_polygon(plan):
    plan["geoFence"]["polygons"].append(copy.deepcopy(plan["geoFence"]["polygons"][0]))


HOSTILE_PLANS = {
    "wrong fileType": (setting(lambda p: p, "fileType", "Mission"), r'fileType: expected "Plan" .*got \'Mission\''),
    "misspelt geoFence": (lambda p: p.update(geofence=p.pop("geoFence")),
                          r"geofence: unknown field \(did you mean geoFence\?"),
    "items not a list": (setting(lambda p: p["mission"], "items", {"a": 1}),
                         r"mission\.items: expected a non-empty list of mission items, got \{'a': 1\}"),
    "params of length 6": (lambda p: p["mission"]["items"][2]["params"].pop(),
                           r"mission\.items\[2\]\.params: expected a list of 7 parameters"),
    "a string in params": (set_param(2, 4, "abc"),
                           r"mission\.items\[2\]\.params\[4\]: expected a latitude within \[-90, 90\] \(deg, WGS84\), "
                           r"got 'abc'"),
    "a string in an unused param": (set_param(2, 2, "abc"),
                                    r"mission\.items\[2\]\.params\[2\]: expected a number or null .*got 'abc'"),
    "unknown command 999": (setting(item_at(3), "command", 999),
                            r"mission\.items\[3\]\.command: expected a supported command "
                            r"\(22 NAV_TAKEOFF, 16 NAV_WAYPOINT.*\), got 999"),
    "unsupported frame": (setting(item_at(3), "frame", 10),
                          r"mission\.items\[3\]\.frame: expected one of 3 \(MAV_FRAME_GLOBAL_RELATIVE_ALT\).*got 10"),
    "lat 95": (set_param(3, 4, 95),
               r"mission\.items\[3\]\.params\[4\]: expected a latitude within \[-90, 90\].*got 95"),
    "lon -181": (set_param(3, 5, -181), r"mission\.items\[3\]\.params\[5\]: expected a longitude .*got -181"),
    "a survey without its items": (complex_item, (r"mission\.items\[3\]\.TransectStyleComplexItem\.Items: expected "
                                                  r"a non-empty list of mission items QGroundControl generated for the "
                                                  r"survey")),
    "a survey item not a SimpleItem": (survey_holding_a_survey, (r"mission\.items\[3\]\.TransectStyleComplexItem\."
                                                                 r"Items\[0\]\.type: expected \"SimpleItem\"")),
    "an AMSL item under a null home altitude": (
        lambda p: (p["mission"]["plannedHomePosition"].__setitem__(2, None), set_param(3, 6, 500)(p),
                   setting(item_at(3), "frame", 0)(p)),
        (r"mission\.items\[3\]\.frame: expected a frame relative to home \(3 or 6\): the plannedHomePosition's "
         r"altitude is null.*got 0")),
    "null hold": (set_param(3, 0, None),
                  r"mission\.items\[3\]\.params\[0\]: expected a number >= 0 \(s to hold\), got null"),
    "null altitude": (set_param(3, 6, None), r"mission\.items\[3\]\.params\[6\]: expected a number .*got null"),
    "altitude too high": (set_param(3, 6, 500),
                          r"mission\.items\[3\]\.params\[6\]: expected an altitude 0-120 m above home"),
    "a waypoint 0/0": (lambda p: p["mission"]["items"][3]["params"].__setitem__(slice(4, 6), [0, 0]),
                       r"mission\.items\[3\]\.params\[4:6\]: expected a point within 100 km of home"),
    "autoContinue false": (setting(item_at(3), "autoContinue", False),
                           r"mission\.items\[3\]\.autoContinue: expected true"),
    "an item after the landing": (lambda p: p["mission"]["items"].append(copy.deepcopy(p["mission"]["items"][2])),
                                  r"mission\.items\[7\]: expected no item after the landing \(mission\.items\[6\]\)"),
    "speed 0": (set_param(1, 1, 0), r"mission\.items\[1\]\.params\[1\]: expected a speed > 0 m/s"),
    "two takeoffs": (lambda p: p["mission"]["items"].insert(3, copy.deepcopy(p["mission"]["items"][0])),
                     r"mission\.items\[3\]\.command: expected one TAKEOFF, before every waypoint"),
    "no home": (lambda p: p["mission"].pop("plannedHomePosition"), r"mission\.plannedHomePosition: missing required"),
    "mission version 1": (setting(lambda p: p["mission"], "version", 1), r"mission\.version: expected 2"),
    "fence vertex lat 95": (lambda p: p["geoFence"]["polygons"][0]["polygon"][1].__setitem__(0, 95),
                            r"geoFence\.polygons\[0\]\.polygon\[1\]\[0\]: expected a latitude"),
    "two inclusion polygons": (second_inclusion_polygon,
                               r"geoFence\.polygons\[2\]\.inclusion: expected at most one inclusion polygon"),
    "fence circle without radius": (lambda p: p["geoFence"]["circles"][0]["circle"].pop("radius"),
                                    r"geoFence\.circles\[0\]\.circle\.radius: missing required field"),
    "rally altitude": (lambda p: p["rallyPoints"]["points"][0].__setitem__(2, 1000),
                       r"rallyPoints\.points\[0\]\[2\]: expected a number <= 120"),
    "too many items": (lambda p: p["mission"]["items"].extend([p["mission"]["items"][2]] * MAX_WAYPOINTS),
                       rf"mission\.items: expected at most {MAX_WAYPOINTS} mission items"),
    "not a plan at all": (lambda p: p.clear() or p.update({"x": []}), r"x: unknown field"),
}


@pytest.mark.parametrize("change, message", HOSTILE_PLANS.values(), ids=HOSTILE_PLANS.keys())
def test_a_broken_plan_is_refused_naming_the_item_and_the_field(change, message):
    with pytest.raises(ConfigError) as refused:
        plan_mapping(broken(change), "mission.plan")
    assert re.search(rf"^mission\.plan: {message}", str(refused.value), re.MULTILINE), str(refused.value)
    assert all(line.startswith("mission.plan: ") for line in refused.value.problems)


def test_every_problem_of_a_plan_is_reported_at_once():
    def two(plan):
        set_param(2, 4, 95)(plan)
        setting(item_at(3), "command", 999)(plan)
    with pytest.raises(ConfigError) as refused:
        plan_mapping(broken(two), "mission.plan")
    assert len(refused.value.problems) == 2


def file_cases() -> dict:
    text = FIELD_SQUARE.read_text()
    return {
        "not UTF-8": (text[:100].encode() + b"\xff\xfe" + text[100:].encode(),
                      r"expected a QGroundControl plan file in UTF-8 text, got byte 0xff at offset 100"),
        "nesting bomb": ("[" * 100_000 + "]" * 100_000, rf"expected at most {MAX_DEPTH} levels of nesting"),
        "nested just too deep": ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), r"expected at most 32 levels"),
        "truncated": (text[:len(text) // 2], r"line \d+, column \d+: expected valid JSON, got a syntax error"),
        "empty": ("", r"line 1, column 1: expected valid JSON"),
        "NaN literal": (text.replace('"hoverSpeed": 5', '"hoverSpeed": NaN'), r"expected JSON numbers, got NaN"),
        "a duplicate key": (text.replace('"hoverSpeed": 5', '"hoverSpeed": 5, "hoverSpeed": 6'),
                            r"expected each key once in a JSON object, got 'hoverSpeed' twice"),
        "a huge number": (text.replace('"hoverSpeed": 5', '"hoverSpeed": 1e999'),
                          r"mission\.hoverSpeed: expected a number"),
        "too large": (" " * (MAX_FILE_BYTES + 1),
                      rf"expected a QGroundControl plan file of at most {MAX_FILE_BYTES // 1024} kB"),
        "not an object": ("[1, 2]", r"<top level>: expected a JSON object"),
    }


@pytest.mark.parametrize("case", file_cases().keys())
def test_a_broken_plan_file_is_refused_naming_the_file(case, tmp_path):
    content, message = file_cases()[case]
    path = tmp_path / "mission.plan"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ConfigError) as refused:
        load(path)  # through the one loader, as hil fly reads it
    assert re.search(rf"^{re.escape(str(path))}: {message}", str(refused.value), re.MULTILINE), str(refused.value)


def test_a_missing_plan_file_is_refused_naming_it(tmp_path):
    with pytest.raises(ConfigError, match=r"nothing\.plan: expected a readable QGroundControl plan file"):
        read_plan(tmp_path / "nothing.plan")


# ---------------------------------------------------------------------------------------------------
# Hostile WPL files


def wpl_lines() -> list[str]:
    return wpl_from_plan(plan_json()).splitlines()


def wpl_changed(line: int, column: int, value: str) -> str:
    lines = wpl_lines()
    fields = lines[line - 1].split("\t")
    fields[column] = value
    lines[line - 1] = "\t".join(fields)
    return "\n".join(lines) + "\n"


HOSTILE_WPL = {
    "wrong header": (lambda: "QGC WPL 120\n" + "\n".join(wpl_lines()[1:]),
                     r"line 1: expected the header 'QGC WPL 110'"),
    "11 columns": (lambda: "\n".join(wpl_lines()[:4] + ["\t".join(wpl_lines()[4].split("\t")[:11])]),
                   r"line 5: expected 12 columns: .*, got 11$"),
    "a word in a param": (lambda: wpl_changed(5, 8, "abc"), r"line 5\.params\[4\]: expected a latitude .*got 'abc'"),
    "infinity in a param": (lambda: wpl_changed(5, 10, "inf"), r"line 5\.params\[6\]: expected a number .*got 'inf'"),
    "a fraction of a command": (lambda: wpl_changed(5, 3, "16.5"),
                                r"line 5\.command: expected a whole number, got '16\.5'"),
    "unknown command": (lambda: wpl_changed(5, 3, "999"), r"line 5\.command: expected a supported command .*got 999"),
    "index out of order": (lambda: wpl_changed(5, 0, "7"), r"line 5\.index: expected 3 \(items numbered from 0"),
    "home in a relative frame": (lambda: wpl_changed(2, 2, "3"),
                                 r"line 2: expected item 0, the home: command 16 in frame 0"),
    "home lat 95": (lambda: wpl_changed(2, 8, "95"), r"line 2\.params\[4\]: expected a latitude"),
    "autocontinue 0": (lambda: wpl_changed(5, 11, "0"), r"line 5\.autocontinue: expected 1"),
    "only a home": (lambda: "\n".join(wpl_lines()[:2]), r"<file>: expected mission items after the home"),
    "too many items": (lambda: "\n".join(wpl_lines()[:2] + [wpl_lines()[4]] * (MAX_WAYPOINTS + 1)),
                       rf"<file>: expected at most {MAX_WAYPOINTS} items"),
}


@pytest.mark.parametrize("make, message", HOSTILE_WPL.values(), ids=HOSTILE_WPL.keys())
def test_a_broken_wpl_file_is_refused_naming_the_line_and_the_field(make, message):
    with pytest.raises(ConfigError) as refused:
        wpl_mapping(make(), "mission.waypoints")
    assert re.search(rf"^mission\.waypoints: {message}", str(refused.value), re.MULTILINE), str(refused.value)


def test_a_wpl_file_that_is_not_utf8_is_refused(tmp_path):
    path = tmp_path / "mission.waypoints"
    path.write_bytes(b"QGC WPL 110\n0\t1\t0\t16\t\xff")
    with pytest.raises(ConfigError, match=r"expected a QGC WPL 110 waypoint file in UTF-8 text, got byte 0xff"):
        load(path)


# ---------------------------------------------------------------------------------------------------
# Plans as QGroundControl writes them: nulls, complex items (issue 36)


def qgc_item(command: int, params: list, frame: int = 3) -> dict:
    """A SimpleItem as QGroundControl saves one: NaN as null, the altitude fields beside a position."""
    item = {"autoContinue": True, "command": command, "doJumpId": 0, "frame": frame, "params": params,
            "type": "SimpleItem"}
    if frame == 3:
        item.update({"AMSLAltAboveTerrain": None, "Altitude": params[6], "AltitudeMode": 1})
    return item


def qgc_plan(items: list[dict], home_alt: float | None = None) -> dict:
    """A plan with QGroundControl's keys around `items`; the home's altitude null unless given, as
    QGroundControl writes it when it knew no ground height (MAVSDK-Python's example-mission.plan)."""
    for sequence, item in enumerate(items, start=1):
        item["doJumpId"] = sequence
    return {"fileType": "Plan", "geoFence": {"circles": [], "polygons": [], "version": 2},
            "groundStation": "QGroundControl",
            "mission": {"cruiseSpeed": 15, "firmwareType": 12, "globalPlanAltitudeMode": 1, "hoverSpeed": 5,
                        "items": items, "plannedHomePosition": [HOME.lat_deg, HOME.lon_deg, home_alt],
                        "vehicleType": 2, "version": 2},
            "rallyPoints": {"points": [], "version": 2}, "version": 1}


def qgc_takeoff(alt: float) -> dict:
    return qgc_item(22, [0, 0, 0, None, *ll(0, 0), alt])


def qgc_waypoint(north: float, east: float, alt: float) -> dict:
    return qgc_item(16, [0, 0, 0, None, *ll(north, east), alt])


RETURN = qgc_item(20, [0] * 7, frame=2)
SURVEY_ALT = 15
# Two transects of a 20 x 10 m survey flown north then south, with 5 m turnarounds: the waypoints
# QGroundControl generates, camera gates at the transects' ends, as (north, east).
SURVEY_PATH = [(-5, 0), (0, 0), (20, 0), (25, 0), (25, 10), (20, 10), (0, 10), (-5, 10)]


def survey(kind: str = "survey") -> dict:
    """A survey ComplexItem with the keys QGroundControl 4 saves, its generated items in Items: a
    waypoint at each turnaround, a CONDITION_GATE where the camera starts and stops triggering (its
    DO_SET_CAM_TRIGG_DIST after it) and an IMAGE_START_CAPTURE with QGroundControl's NaN (null) params."""
    def gate(north, east, trigger):
        return [qgc_item(4501, [0, 1, 0, 0, *ll(north, east), SURVEY_ALT]),
                qgc_item(206, [trigger, 0, 1, 0, 0, 0, 0], frame=2)]
    turn = [qgc_item(16, [0, 0, 0, None, *ll(n, e), SURVEY_ALT]) for n, e in SURVEY_PATH]
    generated = ([turn[0], *gate(0, 0, 5), *gate(20, 0, 0), turn[3], turn[4], *gate(20, 10, 5), *gate(0, 10, 0),
                  turn[7], qgc_item(2000, [0, 0, 1, None, None, None, None], 2)])
    for sequence, item in enumerate(generated, start=2):
        item["doJumpId"] = sequence
        for key in ("AMSLAltAboveTerrain", "Altitude", "AltitudeMode"):  # a generated item is a bare MissionItem
            item.pop(key, None)
    corners = [list(ll(n, e)) for n, e in ((0, 0), (20, 0), (20, 10), (0, 10))]
    return {"TransectStyleComplexItem": {
                "CameraCalc": {"AdjustedFootprintFrontal": 25, "AdjustedFootprintSide": 25,
                               "CameraName": "Manual (no camera specs)", "DistanceMode": 1,
                               "DistanceToSurface": SURVEY_ALT, "version": 1},
                "CameraShots": 8, "CameraTriggerInTurnAround": False, "HoverAndCapture": False, "Items": generated,
                "Refly90Degrees": False, "TurnAroundDistance": 5,
                "VisualTransectPoints": [list(ll(n, e)) for n, e in SURVEY_PATH[1:3] + SURVEY_PATH[5:7]],
                "version": 2},
            "angle": 0, "complexItemType": kind, "entryLocation": 0, "flyAlternateTransects": False,
            "polygon": corners, "splitConcavePolygons": True, "type": "ComplexItem", "version": 5}


def structure_scan() -> dict:
    """A structure scan as QGroundControl saves it: settings and a footprint, no mission items."""
    return {"Altitude": 10, "CameraCalc": {"CameraName": "Manual (no camera specs)", "DistanceMode": 1,
                                           "DistanceToSurface": 10, "version": 1},
            "GimbalPitch": 0, "Layers": 2, "StartFromTop": False, "StructureHeight": 20,
            "complexItemType": "StructureScan", "polygon": [list(ll(n, e)) for n, e in ((10, 0), (15, 0), (15, 5))],
            "type": "ComplexItem", "version": 3}


def write_json(path: Path, plan: dict) -> Path:
    path.write_text(json.dumps(plan, indent=4))  # json.dumps writes None as null, as QGroundControl does
    return path


@pytest.mark.slow  # the flight: out of the fast tier
def test_a_plan_with_a_null_home_altitude_checks_and_flies_in_lockstep(tmp_path):
    """MAVSDK-Python's example-mission.plan's shape: takeoff, a square, return, home altitude null."""
    path = write_json(tmp_path / "null_home.plan", qgc_plan(
        [qgc_takeoff(12), qgc_waypoint(25, 0, 12), qgc_waypoint(25, 25, 12), qgc_waypoint(0, 25, 12), RETURN]))
    mission = load(path)
    assert mission.home == GeoOrigin(HOME.lat_deg, HOME.lon_deg, 0.0)  # altitudes above home need no AMSL one
    np.testing.assert_allclose(route_array(mission), [[25, 0, -12], [25, 25, -12], [0, 25, -12], [0, 0, -12],
                                                      [0, 0, 0]], atol=CM)
    record = tmp_path / "trial"
    checked = hil("mission", "check", str(path))
    assert checked.returncode == 0, checked.stderr
    flown = hil("fly", str(path), "--target", "lockstep", "--record-dir", str(record), timeout=300)
    assert flown.returncode == 0, flown.stdout + flown.stderr
    assert read_manifest(record)["outcome"] == "success"


def test_a_survey_flies_as_the_waypoints_qgroundcontrol_generated_for_it(tmp_path):
    for kind in ("survey", "CorridorScan"):
        path = write_json(tmp_path / f"{kind}.plan", qgc_plan([qgc_takeoff(SURVEY_ALT), survey(kind), RETURN], 488.0))
        mission = load(path)
        expected = [(n, e, -SURVEY_ALT) for n, e in SURVEY_PATH] + [(0, 0, -SURVEY_ALT), (0, 0, 0)]
        np.testing.assert_allclose(route_array(mission), expected, atol=CM)
        assert [p.hold_s for p in mission.route] == [0.0] * len(expected)


def test_a_structure_scan_is_refused_by_name_with_exit_2(tmp_path):
    path = write_json(tmp_path / "scan.plan", qgc_plan([qgc_takeoff(10), structure_scan(), RETURN], 488.0))
    for command in (["mission", "check", str(path)], ["fly", str(path), "--target", "lockstep"]):
        result = hil(*command)
        assert result.returncode == 2, result.stdout + result.stderr
        assert "Traceback" not in result.stderr
        assert (f"{path}: mission.items[1].complexItemType: expected a SimpleItem, or a ComplexItem of type 'survey' "
                "or 'CorridorScan'") in result.stderr
        assert "got ComplexItem 'StructureScan'" in result.stderr


@pytest.mark.parametrize("source", ["field_square", "survey"])
def test_export_import_export_is_byte_identical(tmp_path, source):
    path = FIELD_SQUARE if source == "field_square" else write_json(
        tmp_path / "survey.plan", qgc_plan([qgc_takeoff(SURVEY_ALT), survey(), RETURN], 488.0))
    first, second = tmp_path / "first.plan", tmp_path / "second.plan"
    write_plan(imported(path), first)
    write_plan(imported(first), second)
    assert first.read_bytes() == second.read_bytes()
