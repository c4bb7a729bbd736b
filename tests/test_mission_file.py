"""Waypoint missions: the shipped examples load as waypoint plans, files in the older waypoint format
still load (through `missions.load`, into the one mission model), and every bad input is explained."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import yaml

from config.errors import ConfigError
from missions.load import load
from missions.waypoint import (
    MAX_ALTITUDE_M,
    WaypointMission,
    parse_mission,
)

EXAMPLES = Path(__file__).resolve().parent.parent / "missions" / "examples"


def load_mission(path) -> WaypointMission:
    """A mission file as the waypoint plan `hil fly` flies."""
    return load(path).to_waypoint_mission()

GOOD = {
    "name": "t",
    "mode": "mission",
    "takeoff_altitude": 5.0,
    "speed": 5.0,
    "acceptance_radius": 1.0,
    "time_budget": 90,
    "land": True,
    "waypoints": [
        {"north": 10, "east": 0, "alt": 5},
        {"north": 10, "east": 10, "alt": 5, "hold": 1.0, "yaw": 90},
        {"north": 0, "east": 10, "alt": 4},
    ],
}


def write_mission(tmp_path: Path, mapping: dict) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(mapping, sort_keys=False))
    return path


def load_errors(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_mission(path)
    return list(caught.value.problems)


def square_corners(mission: WaypointMission) -> np.ndarray:
    return np.array([(w.north, w.east) for w in mission.waypoints])


@pytest.mark.parametrize("name", ["demo_square.yaml", "offboard_square.yaml"])
def test_examples_are_a_landed_square(name: str) -> None:
    mission = load_mission(EXAMPLES / name)
    corners = square_corners(mission)
    sides = np.linalg.norm(np.diff(np.vstack([corners, corners[:1]]), axis=0), axis=1)
    assert len(mission.waypoints) == 4
    assert np.allclose(sides, sides[0]) and sides[0] > 0
    assert all(w.alt == mission.takeoff_altitude and w.down == -w.alt for w in mission.waypoints)
    assert mission.land and mission.source == str(EXAMPLES / name)


def test_examples_differ_only_in_how_they_are_flown() -> None:
    uploaded = load_mission(EXAMPLES / "demo_square.yaml")
    streamed = load_mission(EXAMPLES / "offboard_square.yaml")
    assert (uploaded.mode, streamed.mode) == ("mission", "offboard")
    assert uploaded.waypoints == streamed.waypoints


def test_reference_path_climbs_visits_waypoints_and_lands() -> None:
    mission = parse_mission(GOOD)
    path = mission.reference_path()
    waypoints = np.array([(w.north, w.east, w.down) for w in mission.waypoints])
    assert np.array_equal(path[0], [0, 0, 0])
    assert np.array_equal(path[1], [0, 0, -mission.takeoff_altitude])
    assert np.array_equal(path[2:-1], waypoints)
    assert np.array_equal(path[-1], [*waypoints[-1, :2], 0])


def test_reference_path_without_landing_ends_at_last_waypoint() -> None:
    mission = parse_mission({**GOOD, "land": False})
    last = mission.waypoints[-1]
    assert np.array_equal(mission.reference_path()[-1], [last.north, last.east, last.down])
    assert len(mission.reference_path()) == 2 + len(mission.waypoints)


def test_optional_fields_take_their_defaults() -> None:
    mapping = copy.deepcopy(GOOD)
    del mapping["land"]
    mission = parse_mission(mapping)
    assert mission.land is True
    assert mission.waypoints[0].hold_s == 0.0 and mission.waypoints[0].yaw_deg is None
    assert mission.waypoints[1].hold_s == 1.0 and mission.waypoints[1].yaw_deg == 90.0
    assert mission.source == "<string>"


def mutated(edit) -> dict:
    mapping = copy.deepcopy(GOOD)
    edit(mapping)
    return mapping


# (how to break GOOD, the field path named, words of the expectation)
BAD_INPUTS = [
    (lambda m: m["waypoints"][2].update(alt="high"), "waypoints[2].alt", ["number > 0", "'high'"]),
    (lambda m: m["waypoints"][1].update(alt=MAX_ALTITUDE_M + 1), "waypoints[1].alt", ["<= 120", "sanity"]),
    (lambda m: m["waypoints"][0].update(hold=-1), "waypoints[0].hold", [">= 0"]),
    (lambda m: m["waypoints"][0].pop("north"), "waypoints[0].north", ["missing", "number"]),
    (lambda m: m["waypoints"][0].update(nroth=1), "waypoints[0].nroth", ["unknown", "allowed: alt, east"]),
    (lambda m: m.pop("speed"), "speed", ["missing", "m/s"]),
    (lambda m: m.update(spead=3), "spead", ["unknown", "did you mean speed", "allowed:"]),
    (lambda m: m.update(speed=-2), "speed", ["number > 0"]),
    (lambda m: m.update(acceptance_radius=-1), "acceptance_radius", ["number > 0"]),
    (lambda m: m.update(time_budget=-5), "time_budget", ["number > 0"]),
    (lambda m: m.update(time_budget=True), "time_budget", ["number > 0", "True"]),
    (lambda m: m.update(mode="auto"), "mode", ["one of mission, offboard", "'auto'"]),
    (lambda m: m.update(takeoff_altitude=500), "takeoff_altitude", ["<= 120"]),
    (lambda m: m.update(land="yes please"), "land", ["true or false"]),
    (lambda m: m.update(waypoints=[]), "waypoints", ["non-empty list"]),
    (lambda m: m.pop("waypoints"), "waypoints", ["missing"]),
    (lambda m: m["waypoints"].append(7), "waypoints[3]", ["mapping"]),
]


@pytest.mark.parametrize("edit, field, expectation", BAD_INPUTS)
def test_bad_input_names_file_field_and_expectation(tmp_path: Path, edit, field: str, expectation: list[str]) -> None:
    path = write_mission(tmp_path, mutated(edit))
    errors = load_errors(path)
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"{path}: {field}: ")
    for words in expectation:
        assert words in errors[0]


def test_yaml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    lines = yaml.safe_dump(GOOD, sort_keys=False).splitlines()
    broken_line = 3
    lines.insert(broken_line - 1, "speed: [5.0")
    path.write_text("\n".join(lines) + "\n")
    (error,) = load_errors(path)
    assert error.startswith(f"{path}: line ")
    assert "YAML" in error


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("- just\n- a list\n")
    (error,) = load_errors(path)
    assert error.startswith(f"{path}: ") and "mapping" in error


def test_missing_file_is_a_mission_error(tmp_path: Path) -> None:
    (error,) = load_errors(tmp_path / "absent.yaml")
    assert str(tmp_path / "absent.yaml") in error


def test_all_problems_reported_together_one_line_each(tmp_path: Path) -> None:
    def break_three_things(m: dict) -> None:
        m["speed"] = -1
        m["mode"] = "auto"
        m["waypoints"][1]["alt"] = "high"

    path = write_mission(tmp_path, mutated(break_three_things))
    with pytest.raises(ConfigError) as caught:
        load_mission(path)
    lines = str(caught.value).splitlines()
    assert len(lines) == 3 and lines == list(caught.value.problems)
    assert all(line.startswith(f"{path}: ") for line in lines)
    assert {line.split(": ")[1] for line in lines} == {"speed", "mode", "waypoints[1].alt"}


def test_a_mission_longer_than_mavlink_can_hold_is_refused(tmp_path):
    from config.errors import ConfigError
    from missions.waypoint import MAX_WAYPOINTS

    path = tmp_path / "long.yaml"
    rows = "\n".join(f"  - {{north: {i % 50}, east: 0, alt: 5}}" for i in range(MAX_WAYPOINTS + 1))
    path.write_text("name: long\nmode: mission\ntakeoff_altitude: 5\nspeed: 5\nacceptance_radius: 1\n"
                    f"time_budget: 60\nwaypoints:\n{rows}\n")
    with pytest.raises(ConfigError, match=rf"{path}: waypoints: expected at most {MAX_WAYPOINTS} waypoints"):
        load_mission(path)


def test_a_packaged_mission_loads_by_name_and_a_typo_gets_a_suggestion():
    assert load_mission("demo_square").name == "demo-square"
    with pytest.raises(ConfigError, match="did you mean demo_square"):
        load_mission("demo_sqare")
