"""Waypoint missions: what the autopilot is told to fly, and the older waypoint YAML.

`WaypointMission` is a flight plan (takeoff altitude, waypoints, mode, landing) that `hil fly`
uploads or streams; `missions.schema.BenchmarkMission.to_waypoint_mission()` makes one. Files in
the older waypoint format below still load (through `missions.load`, which reads them here and turns
them into the one mission model)::

    name: demo-square
    mode: mission          # mission: uploaded and flown by the autopilot; offboard: the harness streams setpoints
    takeoff_altitude: 5.0  # m above home
    speed: 5.0             # m/s cruise
    acceptance_radius: 1.0 # m
    time_budget: 90        # s; the trial fails as timeout past this
    land: true             # optional, default true; false holds at the last waypoint
    waypoints:             # north/east in m from home, alt in m above home
      - {north: 10, east: 0, alt: 5}
      - {north: 10, east: 10, alt: 5, hold: 1.0, yaw: 90}   # optional hold (s) and yaw (deg)

Positions are converted to local NED at load (down = -alt), the frame the rest of the harness uses.
A bad file raises one `ConfigError` listing every problem, one line each, in the form
``FILE: FIELD.PATH: expected WHAT, got VALUE`` (waypoint indices count from 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from config.errors import ConfigError
from config.fields import (
    Field,
    Problems,
    choice,
    flag,
    mapping_entries,
    number,
    read_fields,
    text,
)

__all__ = ["Waypoint", "WaypointMission", "parse_mission"]

MODES = ("mission", "offboard")
EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"  # packaged missions, loadable by name

# Small-UAS rules cap flight at about 120 m above ground; a waypoint above that is almost
# certainly a typo (feet, or an absolute altitude) rather than intent.
MAX_ALTITUDE_M = 120.0


@dataclass(frozen=True)
class Waypoint:
    """One waypoint in local NED metres relative to home."""

    north: float
    east: float
    down: float
    hold_s: float = 0.0
    yaw_deg: float | None = None  # None: the autopilot keeps its own heading
    stage: str = ""  # the mission stage this waypoint ends (missions.templates), recorded when flown

    @property
    def alt(self) -> float:
        """Metres above home."""
        return -self.down


@dataclass(frozen=True)
class WaypointMission:
    """A validated mission; `source` is the file it came from (or "<string>")."""

    name: str
    mode: str
    takeoff_altitude: float
    speed: float
    acceptance_radius: float
    time_budget: float
    land: bool
    waypoints: tuple[Waypoint, ...]
    source: str

    def reference_path(self) -> np.ndarray:
        """The intended flight as a (K, 3) NED polyline.

        Home (0, 0, 0), the takeoff point straight above it, every waypoint in order and, if the
        mission lands, the touchdown point below the last waypoint.
        """
        points = [(0.0, 0.0, 0.0), (0.0, 0.0, -self.takeoff_altitude)]
        points += [(w.north, w.east, w.down) for w in self.waypoints]
        if self.land:
            last = self.waypoints[-1]
            points.append((last.north, last.east, 0.0))
        return np.array(points, dtype=float)


def parse_mission(mapping: Any, source: str = "<string>") -> WaypointMission:
    """Validate an already-parsed mission mapping (e.g. from a campaign file).

    Every problem is collected first and raised together as one `ConfigError`, so a user fixes a
    file in one pass; nothing partially validated is ever returned.
    """
    problems = Problems(source)
    if not isinstance(mapping, dict):
        problems.invalid("<top level>", "a mapping of mission fields", mapping)
        raise ConfigError(problems.lines)

    values = read_fields(mapping, _MISSION_FIELDS, "", problems, nested=("waypoints",))
    waypoints = _read_waypoints(mapping, problems)
    problems.raise_if_any()
    return WaypointMission(**values, waypoints=waypoints, source=source)


_MISSION_FIELDS: dict[str, Field] = {
    "name": text("the mission's name"),
    "mode": choice(MODES),
    "takeoff_altitude": number("metres above home", above=0, at_most=MAX_ALTITUDE_M),
    "speed": number("m/s cruise", above=0),
    "acceptance_radius": number("metres", above=0),
    "time_budget": number("seconds", above=0),
    "land": flag("true lands at the end, false holds at the last waypoint", default=True),
}

_WAYPOINT_FIELDS: dict[str, Field] = {
    "north": number("metres north of home"),
    "east": number("metres east of home"),
    "alt": number("metres above home", above=0, at_most=MAX_ALTITUDE_M),
    "hold": number("seconds to hold", at_least=0, required=False, default=0.0),
    "yaw": number("degrees, clockwise from north", required=False, default=None),
}


# A MAVLink mission counts its items in a uint16; each waypoint may add a speed and a delay item.
MAX_WAYPOINTS = 65535 // 3


def _read_waypoints(mapping: dict[Any, Any], problems: Problems) -> tuple[Waypoint, ...]:
    expect = "a non-empty list of waypoints, each {north, east, alt}"
    if "waypoints" not in mapping:
        problems.add("waypoints", f"missing required field, expected {expect}")
        return ()
    entries = mapping["waypoints"]
    if isinstance(entries, list) and len(entries) > MAX_WAYPOINTS:
        problems.add("waypoints", f"expected at most {MAX_WAYPOINTS} waypoints (with the takeoff and speed items, "
                                  f"what a MAVLink mission holds), got {len(entries)}")
        return ()
    waypoints = []
    for path, entry in mapping_entries(mapping["waypoints"], "waypoints", "{north, east, alt} with optional hold, yaw",
                                       problems):
        reported = len(problems.lines)
        values = read_fields(entry, _WAYPOINT_FIELDS, f"{path}.", problems)
        if len(problems.lines) == reported:
            waypoints.append(
                Waypoint(
                    north=values["north"],
                    east=values["east"],
                    down=-values["alt"],
                    hold_s=values["hold"],
                    yaw_deg=values["yaw"],
                )
            )
    return tuple(waypoints)
