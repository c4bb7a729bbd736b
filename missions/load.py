"""Any mission file into the one mission model (`missions.schema.BenchmarkMission`).

Every entry point (`hil fly`, `hil run`, `hil onboard`, the pytest plugin's `hil_mission`) loads
missions here, so they all accept the same files:

* the mission YAML of `missions.schema` (a waypoint list is its simplest case);
* the older waypoint YAML (`takeoff_altitude`, `speed`, `acceptance_radius`; `missions.waypoint`),
  read as it always was and turned into the same model;
* QGroundControl's `.plan` (JSON) and `QGC WPL 110` text files (`missions.qgc`).

A bare name (``demo_square``) is a mission shipped in `missions/examples/`.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from config.errors import ConfigError
from config.loading import load_yaml, open_regular, packaged
from missions.schema import (
    Airspace,
    BenchmarkMission,
    SimSettings,
    Termination,
    parse_benchmark_mission,
)
from missions.templates import RoutePoint, landing
from missions.waypoint import (
    EXAMPLES_DIR,
    MAX_ALTITUDE_M,
    WaypointMission,
    parse_mission,
)

WPL_HEADER = "QGC WPL"
# Fields only the older waypoint YAML has: a file with any of them is read as one.
LEGACY_FIELDS = ("takeoff_altitude", "speed", "acceptance_radius")


def load(path: str | os.PathLike[str], seed: int | None = None) -> BenchmarkMission:
    """Read and validate a mission file of any supported format; `seed` replaces a scene's seed.

    Raises `ConfigError` naming the file, the field and what was expected.
    """
    path = Path(packaged(path, EXAMPLES_DIR, "mission"))
    if path.suffix.lower() == ".plan":
        from missions.qgc import read_plan
        return parse_benchmark_mission(read_plan(path), str(path), path.parent, seed)
    if _starts_with(path, WPL_HEADER):
        from missions.qgc import read_wpl
        return parse_benchmark_mission(read_wpl(path), str(path), path.parent, seed)
    data = load_yaml(path, "mission file")
    if isinstance(data, dict) and any(key in data for key in LEGACY_FIELDS):
        return from_waypoint_mission(parse_mission(data, str(path)))
    return parse_benchmark_mission(data, str(path), path.parent, seed)


def _starts_with(path: Path, header: str) -> bool:
    try:
        with open_regular(path, "mission file") as file:
            return file.read(len(header)) == header.encode()
    except (OSError, ConfigError):
        return False  # the YAML reader names the file and the problem


def from_waypoint_mission(mission: WaypointMission) -> BenchmarkMission:
    """A waypoint mission as the one model: a multi_waypoint mission without a scene, home at the origin.

    `to_waypoint_mission()` of the result gives `mission` back.
    """
    route = [RoutePoint(w.north, w.east, w.down, f"waypoint-{i + 1}", w.hold_s, w.yaw_deg)
             for i, w in enumerate(mission.waypoints)]
    if mission.land:
        route.append(landing(route[-1]))
    return BenchmarkMission(
        name=mission.name, type="multi_waypoint", scene=None, start=np.array([0.0, 0.0, -mission.takeoff_altitude]),
        start_yaw_deg=0.0, route=tuple(route), speed_cap=mission.speed, success_radius=mission.acceptance_radius,
        time_budget=mission.time_budget, airspace=Airspace(0.0, MAX_ALTITUDE_M, None, ()), faults=(),
        comms_loss=(), termination=Termination(), sim=SimSettings(), source=mission.source,
        mode=mission.mode)
