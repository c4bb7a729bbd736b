"""Waypoint mission files: the YAML that `hil fly MISSION.yaml` flies.

A mission file looks like this (see `missions/examples/`)::

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
A bad file raises one `MissionError` listing every problem, one line each, in the form
``FILE: FIELD.PATH: expected WHAT, got VALUE`` (waypoint indices count from 0).
"""

from __future__ import annotations

import difflib
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import yaml

MODES = ("mission", "offboard")

# Small-UAS rules cap flight at about 120 m above ground; a waypoint above that is almost
# certainly a typo (feet, or an absolute altitude) rather than intent.
MAX_ALTITUDE_M = 120.0


class MissionError(ValueError):
    """A mission file is invalid. `problems` holds one line per error; str() joins them."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class Waypoint:
    """One waypoint in local NED metres relative to home."""

    north: float
    east: float
    down: float
    hold_s: float = 0.0
    yaw_deg: float | None = None  # None: the autopilot keeps its own heading

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


def load_mission(path: str | os.PathLike[str]) -> WaypointMission:
    """Read and validate a mission file; raise `MissionError` naming the file on any problem."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise MissionError([f"{source}: expected a readable mission file, got {error.strerror}"]) from None
    try:
        mapping = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise MissionError([f"{source}: {_describe_yaml_error(error)}"]) from None
    return parse_mission(mapping, source)


def parse_mission(mapping: Any, source: str = "<string>") -> WaypointMission:
    """Validate an already-parsed mission mapping (e.g. from a campaign file).

    Every problem is collected first and raised together as one `MissionError`, so a user fixes a
    file in one pass; nothing partially validated is ever returned.
    """
    problems = _Problems(source)
    if not isinstance(mapping, dict):
        problems.invalid("<top level>", "a mapping of mission fields", mapping)
        raise MissionError(problems.lines)

    values = _read_fields(mapping, _MISSION_FIELDS, "", problems, nested=("waypoints",))
    waypoints = _read_waypoints(mapping, problems)
    if problems.lines:
        raise MissionError(problems.lines)
    return WaypointMission(**values, waypoints=waypoints, source=source)


class _Invalid(Exception):
    """Raised by a field parser; the message says what was expected."""


@dataclass(frozen=True)
class _Field:
    """How to read one YAML field: what it should be, and a parser that raises `_Invalid`."""

    expect: str
    parse: Callable[[Any], Any]
    required: bool = True
    default: Any = None


class _Problems:
    """Collects error lines for one source so they can all be reported at once."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.lines.append(f"{self.source}: {path}: {message}")

    def invalid(self, path: str, expectation: str, value: Any) -> None:
        shown = repr(value)
        if len(shown) > 40:
            shown = shown[:37] + "..."
        self.add(path, f"expected {expectation}, got {shown}")


def _number(
    meaning: str,
    *,
    above: float | None = None,
    at_least: float | None = None,
    at_most: float | None = None,
    required: bool = True,
    default: float | None = None,
) -> _Field:
    """A finite number with optional bounds; `meaning` (units) goes into every message."""
    if above is not None:
        expect = f"a number > {above:g} ({meaning})"
    elif at_least is not None:
        expect = f"a number >= {at_least:g} ({meaning})"
    else:
        expect = f"a number ({meaning})"

    def parse(value: Any) -> float:
        # YAML turns `yes`/`no` into booleans, which Python would happily treat as 1/0.
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise _Invalid(expect)
        if (above is not None and value <= above) or (at_least is not None and value < at_least):
            raise _Invalid(expect)
        if at_most is not None and value > at_most:
            raise _Invalid(f"a number <= {at_most:g} ({meaning}; sanity limit)")
        return float(value)

    return _Field(expect, parse, required, default)


def _choice(options: tuple[str, ...]) -> _Field:
    expect = "one of " + ", ".join(options)

    def parse(value: Any) -> str:
        if value not in options:
            raise _Invalid(expect)
        return value

    return _Field(expect, parse)


def _text(meaning: str) -> _Field:
    expect = f"a non-empty string ({meaning})"

    def parse(value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise _Invalid(expect)
        return value

    return _Field(expect, parse)


def _flag(meaning: str, default: bool) -> _Field:
    expect = f"true or false ({meaning})"

    def parse(value: Any) -> bool:
        if not isinstance(value, bool):
            raise _Invalid(expect)
        return value

    return _Field(expect, parse, required=False, default=default)


_MISSION_FIELDS: dict[str, _Field] = {
    "name": _text("the mission's name"),
    "mode": _choice(MODES),
    "takeoff_altitude": _number("metres above home", above=0, at_most=MAX_ALTITUDE_M),
    "speed": _number("m/s cruise", above=0),
    "acceptance_radius": _number("metres", above=0),
    "time_budget": _number("seconds", above=0),
    "land": _flag("true lands at the end, false holds at the last waypoint", default=True),
}

_WAYPOINT_FIELDS: dict[str, _Field] = {
    "north": _number("metres north of home"),
    "east": _number("metres east of home"),
    "alt": _number("metres above home", above=0, at_most=MAX_ALTITUDE_M),
    "hold": _number("seconds to hold", at_least=0, required=False, default=0.0),
    "yaw": _number("degrees, clockwise from north", required=False, default=None),
}


def _read_fields(
    mapping: dict[Any, Any],
    fields: Mapping[str, _Field],
    prefix: str,
    problems: _Problems,
    nested: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Parse the scalar fields of one mapping, recording unknown, missing and invalid ones.

    `nested` names fields the caller reads itself; they are allowed but not parsed here.
    """
    allowed = sorted([*fields, *nested])
    for key in mapping:
        if key not in allowed:
            hint = difflib.get_close_matches(str(key), allowed, n=1)
            suggestion = f"did you mean {hint[0]}? " if hint else ""
            problems.add(f"{prefix}{key}", f"unknown field ({suggestion}allowed: {', '.join(allowed)})")
    values: dict[str, Any] = {}
    for key, field in fields.items():
        if key not in mapping:
            if field.required:
                problems.add(f"{prefix}{key}", f"missing required field, expected {field.expect}")
            values[key] = field.default
            continue
        try:
            values[key] = field.parse(mapping[key])
        except _Invalid as invalid:
            problems.invalid(f"{prefix}{key}", str(invalid), mapping[key])
    return values


def _read_waypoints(mapping: dict[Any, Any], problems: _Problems) -> tuple[Waypoint, ...]:
    expect = "a non-empty list of waypoints, each {north, east, alt}"
    if "waypoints" not in mapping:
        problems.add("waypoints", f"missing required field, expected {expect}")
        return ()
    entries = mapping["waypoints"]
    if not isinstance(entries, list) or not entries:
        problems.invalid("waypoints", expect, entries)
        return ()
    waypoints = []
    for index, entry in enumerate(entries):
        path = f"waypoints[{index}]"
        if not isinstance(entry, dict):
            problems.invalid(path, "a mapping {north, east, alt} with optional hold, yaw", entry)
            continue
        reported = len(problems.lines)
        values = _read_fields(entry, _WAYPOINT_FIELDS, f"{path}.", problems)
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


def _describe_yaml_error(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "<document>"
    problem = getattr(error, "problem", None) or str(error)
    return f"{where}: expected valid YAML, got a syntax error ({problem})"
