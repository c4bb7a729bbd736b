"""Benchmark missions: a scene plus a task, validated before anything flies.

A benchmark mission file (examples in `missions/examples/benchmark/`)::

    name: forest-orbit
    type: orbit                    # point_to_point | multi_waypoint | survey | orbit | inspection | precision_landing
    mode: offboard                 # without a planner: offboard (the harness streams setpoints) | mission (uploaded)
    home: {lat: 47.397742, lon: 8.545594, alt: 488}   # optional WGS84 home (alt AMSL): points may then be lat/lon
    scene: {generator: forest, seed: 3}     # or {file: my_scene.npz} (written by `hil scene export --format npz`)
    start: {north: 2, east: 0, alt: 1.5, yaw: 0}   # optional with a scene: the scene's start
    orbit: {north: 30, east: 0, alt: 2, radius: 6, laps: 1}   # the block named by the type (see below)
    speed_cap: 4.0                 # m/s          (defaults: FLYINGTRUST's 4 m/s, 2 m, 90 s)
    success_radius: 2.0            # m
    time_budget: 90                # s
    airspace:                      # UAVBench's airspace block
      altitude: {min: 0.3, max: 3}     # m above ground; default: ground to the scene's ceiling
      geofence: [[0, -20], [60, -20], [60, 20], [0, 20]]   # [north, east] polygon; default: none
      geofence_circle: {north: 30, east: 0, radius: 40}   # an inclusion circle instead of (or with) the polygon
      no_fly: [{north: 20, east: 5, radius: 3, alt_min: 0, alt_max: 10}]
      no_fly_polygons: [[[40, -5], [45, -5], [45, 5]]]     # keep-out polygons, every altitude
    rally: [{north: 0, east: 10, alt: 0}]   # rally points (QGroundControl's), kept for export
    faults: [...]                  # the fault schedule; its schema belongs to missions.faults
    comms: {loss_windows: [{start_s: 30, duration_s: 2}]}
    termination: {stop_on_collision: true, stop_on_geofence: true, settle_s: 0}
    sim: {dt_s: 0.004, controller_rate_hz: 250}

Task blocks by type: point_to_point `goal: {north, east, alt}` (default: the scene's goal);
multi_waypoint `waypoints: [{north, east, alt, hold, yaw}]` (default: the scene's waypoints then its
goal) and `land: true` to land below the last one; survey `survey: {north: [n0, n1], east: [e0, e1], alt, spacing}`; orbit `orbit: {north,
east, alt, radius, laps, clockwise}`; inspection `inspection: {north, east, standoff, alt,
clockwise}`; precision_landing `landing: {north, east, alt, hover_alt, hover_s}`.

Every point (start, goal, waypoints, rally) may be `{lat, lon, alt}` instead of `{north, east, alt}`
when the file has a `home`: it is converted at load with PX4's projection (`missions.geo`), alt
staying metres above home. A plain waypoint mission is this format's simplest case (a
multi_waypoint mission without a scene); `missions.load` also reads QGroundControl's `.plan` and
`QGC WPL 110` files, and the older waypoint YAML (`missions.waypoint`), into this one model.

Validation (UAVBench's rules, Sec. III-C) reports every problem as
``FILE: FIELD.PATH: expected WHAT, got VALUE``: structure and ranges of every field; start, goal
and every route point inside the altitude band and the geofence, outside no-fly cylinders and
outside obstacles; comms-loss windows starting at t >= 0 and within the time budget; the fault
schedule as `missions.faults` validates it (UAVBench: t >= 0, severity within limits).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from config.errors import ConfigError
from config.fields import (
    Field,
    Invalid,
    Problems,
    choice,
    flag,
    integer,
    is_number,
    number,
    read_fields,
    text,
)
from config.loading import load_yaml
from missions import templates
from missions.faults import parse_faults
from missions.geo import GeoOrigin
from missions.templates import MISSION_TYPES, RoutePoint
from missions.waypoint import MAX_ALTITUDE_M, Waypoint, WaypointMission

if TYPE_CHECKING:  # numba and scipy: 0.3 s that a mission without a scene (hil fly's first line) does without
    from missions.geometry import Scene

# FLYINGTRUST's trial settings (Sec. IV): 4 m/s cap, 2 m success radius, 1.5 min budget.
DEFAULT_SPEED_CAP, DEFAULT_SUCCESS_RADIUS, DEFAULT_TIME_BUDGET = 4.0, 2.0, 90.0

# The block each mission type reads its task from (point_to_point and multi_waypoint may default to the scene).
TASK_BLOCKS = {"point_to_point": "goal", "multi_waypoint": "waypoints", "survey": "survey", "orbit": "orbit",
               "inspection": "inspection", "precision_landing": "landing"}


@dataclass(frozen=True)
class SceneRef:
    """Where a mission's scene comes from: a generator and seed, or a scene file."""

    generator: str | None = None
    seed: int = 0
    file: str | None = None

    def load(self) -> Scene:
        """Generate or read the scene (generated scenes are cached per name and seed)."""
        if self.file is not None:
            from missions.export import load_scene
            return load_scene(Path(self.file))
        from missions.scenes import scene_for
        return scene_for(self.generator, self.seed)


@dataclass(frozen=True)
class NoFlyZone:
    """A vertical cylinder the vehicle must stay out of (UAVBench's no-fly zones)."""

    north: float
    east: float
    radius: float
    alt_min: float
    alt_max: float

    def contains(self, point: np.ndarray) -> bool:
        """Whether a NED point lies inside the cylinder."""
        alt = -point[2]
        return bool(np.hypot(point[0] - self.north, point[1] - self.east) < self.radius
                    and self.alt_min <= alt <= self.alt_max)


Polygon = tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class Airspace:
    """Altitude band (m above ground), optional inclusion fences ([north, east] polygon and/or circle),
    and keep-out zones (no-fly cylinders and polygons), all in the mission's frame."""

    alt_min: float
    alt_max: float
    geofence: Polygon | None
    no_fly: tuple[NoFlyZone, ...]
    geofence_circle: tuple[float, float, float] | None = None  # (north, east, radius)
    no_fly_polygons: tuple[Polygon, ...] = ()

    def violation(self, point: np.ndarray, floor: bool = True) -> str | None:
        """What a NED point violates, worded as an expectation, or None (`floor` False: below the band is fine)."""
        alt = -point[2]
        if alt > self.alt_max or (floor and alt < self.alt_min):
            return f"an altitude within the band {self.alt_min:g}-{self.alt_max:g} m (airspace.altitude)"
        if self.geofence is not None and not point_in_polygon(point[:2], np.array(self.geofence)):
            return "a point inside the geofence polygon (airspace.geofence)"
        if self.geofence_circle is not None:
            north, east, radius = self.geofence_circle
            if np.hypot(point[0] - north, point[1] - east) > radius:
                return "a point inside the geofence circle (airspace.geofence_circle)"
        for index, zone in enumerate(self.no_fly):
            if zone.contains(point):
                return f"a point outside no-fly zone airspace.no_fly[{index}]"
        for index, polygon in enumerate(self.no_fly_polygons):
            if point_in_polygon(point[:2], np.array(polygon)):
                return f"a point outside no-fly zone airspace.no_fly_polygons[{index}]"
        return None

    def shifted(self, offset: np.ndarray) -> "Airspace":
        """The same airspace in a frame whose origin lies at `offset` (north, east) of this one's."""
        dn, de = float(offset[0]), float(offset[1])

        def move(polygon: Polygon) -> Polygon:
            return tuple((n - dn, e - de) for n, e in polygon)

        circle = self.geofence_circle
        return replace(self, geofence=move(self.geofence) if self.geofence is not None else None,
                       geofence_circle=(circle[0] - dn, circle[1] - de, circle[2]) if circle is not None else None,
                       no_fly=tuple(replace(z, north=z.north - dn, east=z.east - de) for z in self.no_fly),
                       no_fly_polygons=tuple(move(p) for p in self.no_fly_polygons))


@dataclass(frozen=True)
class CommsLossWindow:
    """A period with no link between the onboard side and the flight controller."""

    start_s: float
    duration_s: float


@dataclass(frozen=True)
class Termination:
    """When a trial ends besides the time budget (UAV-ON: stop, collision, step limit)."""

    stop_on_collision: bool = True
    stop_on_geofence: bool = True
    settle_s: float = 0.0  # s the vehicle must stay within the success radius (FLYINGTRUST: "remaining stably")


@dataclass(frozen=True)
class SimSettings:
    """UAVBench's sim block: physics step and controller rate for the built-in vehicle (None: its defaults)."""

    dt_s: float | None = None
    controller_rate_hz: float | None = None


@dataclass(frozen=True)
class BenchmarkMission:
    """A validated benchmark mission; `route` is what to fly after reaching `start`, stage by stage."""

    name: str
    type: str
    scene: SceneRef | None
    start: np.ndarray  # NED
    start_yaw_deg: float
    route: tuple[RoutePoint, ...]
    speed_cap: float
    success_radius: float
    time_budget: float
    airspace: Airspace
    faults: tuple  # of missions.faults.FaultSpec
    comms_loss: tuple[CommsLossWindow, ...]
    termination: Termination
    sim: SimSettings
    source: str
    mode: str = "offboard"  # how the route is flown without a planner: offboard | mission (uploaded)
    home: GeoOrigin | None = None  # WGS84 home, when the file gave one
    rally: tuple[tuple[float, float, float], ...] = ()  # NED rally points

    @property
    def home_in_mission(self) -> np.ndarray:
        """Where the vehicle's home (the origin of its local frame) lies in the mission's frame: below the start."""
        return np.array([self.start[0], self.start[1], 0.0])

    @property
    def goal(self) -> np.ndarray:
        """Where the route ends (NED)."""
        return self.route[-1].position

    @property
    def stages(self) -> tuple[str, ...]:
        """Stage labels in the order they are flown, each once."""
        return tuple(dict.fromkeys(point.stage for point in self.route))

    def reference_path(self) -> np.ndarray:
        """Start then every route point, as a (K, 3) NED polyline (the reference for TCR)."""
        return np.vstack([self.start] + [p.position for p in self.route])

    def stage_paths(self) -> list[tuple[str, np.ndarray]]:
        """Each stage with its stretch of the reference path: from where it begins (the previous
        point) through its own points, for TCR per stage."""
        path = self.reference_path()
        out = []
        for stage in self.stages:
            indices = [i + 1 for i, p in enumerate(self.route) if p.stage == stage]
            out.append((stage, path[min(indices) - 1:max(indices) + 1]))
        return out

    def to_waypoint_mission(self) -> WaypointMission:
        """The route as a waypoint mission `hil fly` can fly: home below the start, in the mission's mode.

        A closing ``land`` point becomes the mission's landing; every other point is a waypoint.
        """
        home = self.home_in_mission
        lands = self.route[-1].stage == "land"
        points = self.route[:-1] if lands else self.route
        waypoints = tuple(Waypoint(north=p.north - home[0], east=p.east - home[1], down=p.down, hold_s=p.hold_s,
                                   yaw_deg=p.yaw_deg, stage=p.stage) for p in points)
        return WaypointMission(name=self.name, mode=self.mode, takeoff_altitude=float(-self.start[2]),
                               speed=self.speed_cap, acceptance_radius=self.success_radius,
                               time_budget=self.time_budget, land=lands, waypoints=waypoints, source=self.source)


def point_in_polygon(point: np.ndarray, polygon: np.ndarray) -> bool:
    """Even-odd rule: whether a 2D point lies inside a simple polygon given by its vertices."""
    x, y = point
    inside = False
    for (x1, y1), (x2, y2) in zip(polygon, np.roll(polygon, -1, axis=0)):
        if (y1 > y) != (y2 > y) and x < x1 + (y - y1) * (x2 - x1) / (y2 - y1):
            inside = not inside
    return inside


def load_benchmark_mission(path: str | os.PathLike[str], seed: int | None = None) -> BenchmarkMission:
    """Read and validate a benchmark mission file; `seed` replaces the scene's seed (suites use this)."""
    return parse_benchmark_mission(load_yaml(path, "benchmark mission file"), str(path), Path(path).parent, seed)


def _pair(meaning: str) -> Field:
    expect = f"[min, max], two numbers with min < max ({meaning})"

    def parse(value: Any) -> tuple[float, float]:
        if not (isinstance(value, list) and len(value) == 2 and all(map(is_number, value)) and value[0] < value[1]):
            raise Invalid(expect)
        return float(value[0]), float(value[1])

    return Field(expect, parse)


def _polygon(value: Any) -> tuple[tuple[float, float], ...]:
    expect = "a list of at least 3 [north, east] vertices enclosing an area"
    if not (isinstance(value, list) and len(value) >= 3
            and all(isinstance(v, list) and len(v) == 2 and all(map(is_number, v)) for v in value)):
        raise Invalid(expect)
    vertices = np.array(value, dtype=float)
    x, y = vertices[:, 0], vertices[:, 1]
    if abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))) < 1e-9:  # shoelace area
        raise Invalid(expect)
    return tuple((float(n), float(e)) for n, e in vertices)


_ALT = number("m above ground", at_least=0, at_most=MAX_ALTITUDE_M)
_POINT = {"north": number("m north"), "east": number("m east"), "alt": _ALT}
_START = {**_POINT, "yaw": number("deg, clockwise from north", required=False, default=0.0)}
_WAYPOINT = {**_POINT, "hold": number("s to hold", at_least=0, required=False, default=0.0),
             "yaw": number("deg, clockwise from north", required=False, default=None)}
_RALLY = {**_POINT, "alt": number("m above home", at_least=0, at_most=MAX_ALTITUDE_M)}
_HOME = {"lat": number("deg north (WGS84)", at_least=-90, at_most=90),
         "lon": number("deg east (WGS84)", at_least=-180, at_most=180),
         "alt": number("m above mean sea level", at_least=-500, at_most=9000)}
MODES = ("offboard", "mission")
_TOP = {
    "name": text("the mission's name"),
    "type": choice(MISSION_TYPES, required=False, default="point_to_point"),
    "mode": choice(MODES, required=False, default="offboard"),
    "land": flag("land below the route's last point at the end", default=False),
    "speed_cap": number("m/s", above=0, required=False, default=DEFAULT_SPEED_CAP),
    "success_radius": number("m", above=0, required=False, default=DEFAULT_SUCCESS_RADIUS),
    "time_budget": number("s", above=0, required=False, default=DEFAULT_TIME_BUDGET),
}
_NESTED = ("scene", "start", "home", "rally", "airspace", "faults", "comms", "termination", "sim",
           *TASK_BLOCKS.values())
_SCENE = {"generator": text("a scene name, see `hil scene list`", required=False),
          "seed": integer("scene configuration", at_least=0, at_most=9, required=False, default=0),
          "file": text("a scene .npz file, relative to the mission file", required=False)}
_SURVEY = {"north": _pair("m north"), "east": _pair("m east"), "alt": _ALT, "spacing": number("m between lines", above=0)}
_ORBIT = {"north": number("m north of the centre"), "east": number("m east of the centre"), "alt": _ALT,
          "radius": number("m", above=0), "laps": number("turns", above=0, at_most=20, required=False, default=1.0),
          "clockwise": flag("direction seen from above", default=True)}
_INSPECTION = {"north": number("m north of the target"), "east": number("m east of the target"),
               "standoff": number("m from the target centre", above=0), "alt": _ALT,
               "clockwise": flag("direction seen from above", default=True)}
_LANDING = {"north": number("m north of the pad"), "east": number("m east of the pad"),
            "alt": number("m, pad height above ground", at_least=0, required=False, default=0.0),
            "hover_alt": _ALT, "hover_s": number("s to hover before landing", at_least=0, required=False, default=2.0)}
_ALTITUDE = {"min": number("m above ground", at_least=0), "max": number("m above ground", above=0, at_most=MAX_ALTITUDE_M)}
_NO_FLY = {"north": number("m north"), "east": number("m east"), "radius": number("m", above=0),
           "alt_min": number("m above ground", at_least=0, required=False, default=0.0),
           "alt_max": number("m above ground", above=0, required=False, default=MAX_ALTITUDE_M)}
_CIRCLE = {"north": number("m north of the centre"), "east": number("m east of the centre"),
           "radius": number("m", above=0)}
_WINDOW = {"start_s": number("s after the trial starts", at_least=0), "duration_s": number("s", above=0)}
_TERMINATION = {"stop_on_collision": flag("end the trial at the first collision", True),
                "stop_on_geofence": flag("end the trial when the vehicle leaves the airspace", True),
                "settle_s": number("s to stay within the success radius", at_least=0, required=False, default=0.0)}
_SIM = {"dt_s": number("s physics step", above=0, at_most=0.1, required=False),
        "controller_rate_hz": number("Hz", above=0, at_most=10000, required=False)}


def _block(mapping: dict, key: str, fields: dict[str, Field], problems: Problems, prefix: str = "",
           required: bool = False) -> dict[str, Any] | None:
    """Read the mapping at `key` with `fields`; None (with a problem if required) when absent or not a mapping."""
    path = f"{prefix}{key}"
    if key not in mapping:
        if required:
            problems.add(path, f"missing required field, expected a mapping of {', '.join(fields)}")
        return None
    value = mapping[key]
    if not isinstance(value, dict):
        problems.invalid(path, f"a mapping of {', '.join(fields)}", value)
        return None
    reported = len(problems.lines)
    values = read_fields(value, fields, f"{path}.", problems)
    return values if len(problems.lines) == reported else None


def _list_of(mapping: dict, key: str, fields: dict[str, Field], problems: Problems, prefix: str = "") -> list[dict] | None:
    """Read a list of mappings at `key`; the valid entries, or None when absent or any entry is invalid."""
    path = f"{prefix}{key}"
    if key not in mapping:
        return None
    entries = mapping[key]
    if not isinstance(entries, list):
        problems.invalid(path, f"a list of mappings, each {{{', '.join(fields)}}}", entries)
        return None
    reported = len(problems.lines)
    values = []
    for index, entry in enumerate(entries):
        if isinstance(entry, dict):
            values.append(read_fields(entry, fields, f"{path}[{index}].", problems))
        else:
            problems.invalid(f"{path}[{index}]", f"a mapping {{{', '.join(fields)}}}", entry)
    return values if len(problems.lines) == reported else None


def parse_benchmark_mission(mapping: Any, source: str = "<string>", base_dir: Path | None = None,
                            seed: int | None = None) -> BenchmarkMission:
    """Validate a parsed benchmark mission; raise one `ConfigError` listing every problem."""
    problems = Problems(source)
    if not isinstance(mapping, dict):
        problems.invalid("<top level>", "a mapping of mission fields", mapping)
        problems.raise_if_any()
    home = _block(mapping, "home", _HOME, problems)
    home = GeoOrigin(home["lat"], home["lon"], home["alt"]) if home is not None else None
    mapping = _localized(mapping, home, problems)
    top = read_fields(mapping, _TOP, "", problems, nested=_NESTED)
    scene_ref, scene = _read_scene(mapping, problems, base_dir or Path("."), seed)
    start, yaw = _read_start(mapping, scene, problems)
    # An invalid type is already reported; its task block cannot be read without knowing it.
    route, where = _read_route(mapping, top["type"], scene, start, problems) if "type" in top else ([], [])
    if top.get("land") and route and route[-1].stage != "land":
        route.append(templates.landing(route[-1]))
        where.append("land")
    rally = _list_of(mapping, "rally", _RALLY, problems) or []
    airspace = _read_airspace(mapping, scene, problems)
    faults = _read_faults(mapping, problems)
    comms = _read_comms(mapping, problems)
    termination = _block(mapping, "termination", _TERMINATION, problems)
    sim = _block(mapping, "sim", _SIM, problems)
    problems.raise_if_any()  # semantic checks below need every structural piece

    _check_points(start, route, where, airspace, scene, problems)
    budget = top["time_budget"]
    for index, window in enumerate(comms):
        if window.start_s >= budget:
            problems.invalid(f"comms.loss_windows[{index}].start_s", f"a start before the time budget ({budget:g} s)",
                             window.start_s)
    problems.raise_if_any()
    return BenchmarkMission(
        name=top["name"], type=top["type"], scene=scene_ref, start=start, start_yaw_deg=yaw, route=tuple(route),
        speed_cap=top["speed_cap"], success_radius=top["success_radius"], time_budget=budget, airspace=airspace,
        faults=faults, comms_loss=comms, termination=Termination(**termination) if termination else Termination(),
        sim=SimSettings(**sim) if sim else SimSettings(), source=source, mode=top["mode"], home=home,
        rally=tuple(tuple(map(float, _xyz(r))) for r in rally))


def _localized(mapping: dict, home: GeoOrigin | None, problems: Problems) -> dict:
    """The mapping with every `{lat, lon, alt}` point (start, goal, waypoints, rally) as `{north, east, alt}`
    from `home`; a lat/lon point without a home, or with half a coordinate, is a problem."""

    def convert(point: Any, path: str) -> Any:
        if not isinstance(point, dict) or not ({"lat", "lon"} & point.keys()):
            return point
        if home is None:
            problems.add(path, "expected north/east, or a `home: {lat, lon, alt}` block for lat/lon points")
            return point
        values = read_fields({k: point[k] for k in ("lat", "lon") if k in point}, {k: _HOME[k] for k in ("lat", "lon")},
                             f"{path}.", problems)
        if values.get("lat") is None or values.get("lon") is None or "north" in point or "east" in point:
            if "north" in point or "east" in point:
                problems.add(path, "expected either lat/lon or north/east, not both")
            return point
        north, east, _ = home.to_local(values["lat"], values["lon"], home.alt_m)
        rest = {k: v for k, v in point.items() if k not in ("lat", "lon")}
        return {"north": north, "east": east, **rest}

    out = dict(mapping)
    for key in ("start", "goal"):
        if key in out:
            out[key] = convert(out[key], key)
    for key in ("waypoints", "rally"):
        if isinstance(out.get(key), list):
            out[key] = [convert(p, f"{key}[{i}]") for i, p in enumerate(out[key])]
    return out


def _read_scene(mapping: dict, problems: Problems, base_dir: Path, seed: int | None) -> tuple[SceneRef | None, Scene | None]:
    values = _block(mapping, "scene", _SCENE, problems)
    if values is None:
        return None, None
    # The scene generators (numba, scipy: 0.3 s) only for a mission with a scene.
    from missions.scenes import SCENES, SceneError

    if (values["generator"] is None) == (values["file"] is None):
        problems.add("scene", "expected exactly one of generator (with seed) or file")
        return None, None
    if values["file"] is not None:
        path = base_dir / values["file"]
        if not path.is_file():
            problems.invalid("scene.file", "an existing scene file (.npz, from `hil scene export --format npz`)",
                             values["file"])
            return None, None
        ref = SceneRef(file=str(path))
    else:
        if values["generator"] not in SCENES:
            problems.invalid("scene.generator", f"one of {', '.join(SCENES)}", values["generator"])
            return None, None
        ref = SceneRef(generator=values["generator"], seed=values["seed"] if seed is None else seed)
    try:
        return ref, ref.load()
    except (SceneError, OSError, ValueError, KeyError) as error:
        problems.add("scene", f"expected a loadable scene, got an error ({error})")
        return None, None


def _xyz(values: dict[str, Any]) -> np.ndarray:
    return np.array([values["north"], values["east"], -values["alt"]])


def _read_start(mapping: dict, scene: Scene | None, problems: Problems) -> tuple[np.ndarray, float]:
    values = _block(mapping, "start", _START, problems, required=scene is None and "scene" not in mapping)
    if values is not None:
        return _xyz(values), values["yaw"]
    return (scene.start.copy() if scene is not None else np.zeros(3)), 0.0


def _read_route(mapping: dict, mission_type: str, scene: Scene | None, start: np.ndarray,
                problems: Problems) -> tuple[list[RoutePoint], list[str]]:
    """The route and, for each route point, the field path a problem with it should name."""
    for other_type, key in TASK_BLOCKS.items():
        if key in mapping and other_type != mission_type:
            problems.add(key, f"unexpected for type {mission_type} (it belongs to type {other_type})")
    key = TASK_BLOCKS[mission_type]
    start_alt = float(-start[2])
    if mission_type == "point_to_point":
        values = _block(mapping, "goal", _POINT, problems, required=scene is None)
        if values is None and scene is not None and "goal" not in mapping:
            goal = (scene.goal[0], scene.goal[1], -scene.goal[2])
        elif values is None:
            return [], []
        else:
            goal = (values["north"], values["east"], values["alt"])
        return templates.point_to_point(goal), ["goal"]
    if mission_type == "multi_waypoint":
        entries = _list_of(mapping, "waypoints", _WAYPOINT, problems)
        if "waypoints" not in mapping and scene is not None:
            stops = np.vstack([scene.waypoints, scene.goal])
            entries = [{"north": n, "east": e, "alt": -d, "hold": 0.0, "yaw": None} for n, e, d in stops]
        if entries is None and "waypoints" in mapping:
            return [], []  # its problems are already recorded
        if not entries:
            problems.add("waypoints", "expected a non-empty list of waypoints, each {north, east, alt, hold}")
            return [], []
        route = templates.multi_waypoint([(w["north"], w["east"], w["alt"], w["hold"]) for w in entries],
                                         [w.get("yaw") for w in entries])
        return route, [f"waypoints[{i}]" for i in range(len(route))]
    builders: dict[str, tuple[dict[str, Field], Callable[[dict], list[RoutePoint]]]] = {
        "survey": (_SURVEY, lambda v: templates.survey(start_alt, v["north"], v["east"], v["alt"], v["spacing"])),
        "orbit": (_ORBIT, lambda v: templates.orbit((v["north"], v["east"]), v["alt"], v["radius"], v["laps"],
                                                     v["clockwise"])),
        "inspection": (_INSPECTION, lambda v: templates.inspection((start[0], start[1], start_alt),
                                                                    (v["north"], v["east"]), v["standoff"], v["alt"],
                                                                    v["clockwise"])),
        "precision_landing": (_LANDING, lambda v: templates.precision_landing(start_alt, (v["north"], v["east"]),
                                                                               v["alt"], v["hover_alt"], v["hover_s"])),
    }
    fields, build = builders[mission_type]
    values = _block(mapping, key, fields, problems, required=True)
    if values is None:
        return [], []
    route = build(values)
    counts: dict[str, int] = {}
    where = []
    for point in route:
        counts[point.stage] = counts.get(point.stage, 0) + 1
        where.append(f"{key} ({point.stage} point {counts[point.stage]})")
    return route, where


def _read_airspace(mapping: dict, scene: Scene | None, problems: Problems) -> Airspace:
    default_max = scene.ceiling if scene is not None else MAX_ALTITUDE_M
    raw = mapping.get("airspace", {})
    if not isinstance(raw, dict):
        problems.invalid("airspace", "a mapping of altitude, geofence, no_fly", raw)
        raw = {}
    read_fields(raw, {}, "airspace.", problems,
                nested=("altitude", "geofence", "geofence_circle", "no_fly", "no_fly_polygons"))
    band = _block(raw, "altitude", _ALTITUDE, problems, prefix="airspace.")
    if band is not None and band["min"] >= band["max"]:
        problems.invalid("airspace.altitude", "min < max", raw["altitude"])
    geofence = None
    if "geofence" in raw:
        try:
            geofence = _polygon(raw["geofence"])
        except Invalid as invalid:
            problems.invalid("airspace.geofence", str(invalid), raw["geofence"])
    circle = _block(raw, "geofence_circle", _CIRCLE, problems, prefix="airspace.")
    keep_out = []
    polygons = raw.get("no_fly_polygons", [])
    if not isinstance(polygons, list):
        problems.invalid("airspace.no_fly_polygons", "a list of polygons, each a list of [north, east] vertices",
                         polygons)
        polygons = []
    for index, polygon in enumerate(polygons):
        try:
            keep_out.append(_polygon(polygon))
        except Invalid as invalid:
            problems.invalid(f"airspace.no_fly_polygons[{index}]", str(invalid), polygon)
    zones = _list_of(raw, "no_fly", _NO_FLY, problems, prefix="airspace.") or []
    for index, zone in enumerate(zones):
        if zone["alt_min"] >= zone["alt_max"]:
            problems.invalid(f"airspace.no_fly[{index}]", "alt_min < alt_max", raw["no_fly"][index])
    return Airspace(alt_min=band["min"] if band else 0.0, alt_max=band["max"] if band else default_max,
                    geofence=geofence, no_fly=tuple(NoFlyZone(**z) for z in zones),
                    geofence_circle=(circle["north"], circle["east"], circle["radius"]) if circle else None,
                    no_fly_polygons=tuple(keep_out))


def _read_faults(mapping: dict, problems: Problems) -> tuple:
    """The faults block, validated by `missions.faults` (which owns the fault schema)."""
    if mapping.get("faults") is None:
        return ()
    try:
        return tuple(parse_faults(mapping["faults"]))
    except ConfigError as error:
        for line in error.problems:
            # Re-home each problem in this file: keep its field path (from "faults") and message.
            found = [i for i in (line.find("faults["), line.find("faults:")) if i >= 0]
            problems.lines.append(f"{problems.source}: {line[min(found):]}" if found else f"{problems.source}: faults: {line}")
        return ()


def _read_comms(mapping: dict, problems: Problems) -> tuple[CommsLossWindow, ...]:
    raw = mapping.get("comms", {})
    if not isinstance(raw, dict):
        problems.invalid("comms", "a mapping with loss_windows", raw)
        return ()
    read_fields(raw, {}, "comms.", problems, nested=("loss_windows",))
    windows = _list_of(raw, "loss_windows", _WINDOW, problems, prefix="comms.") or []
    return tuple(sorted((CommsLossWindow(**w) for w in windows), key=lambda w: w.start_s))


def _check_points(start: np.ndarray, route: list[RoutePoint], where: list[str], airspace: Airspace,
                  scene: Scene | None, problems: Problems) -> None:
    """Start and every route point: in the airspace, out of no-fly zones, out of obstacles."""
    # A landing goes below the altitude band's floor by design; only its ceiling and zones apply to it.
    points = [("start", start, True)] + [(w, p.position, p.stage != "land") for w, p in zip(where, route)]
    inside = scene.distance(np.array([p for _, p, _ in points])) <= 0 if scene is not None else [False] * len(points)
    for (path, point, floor), in_obstacle in zip(points, inside):
        shown = f"north={point[0]:g}, east={point[1]:g}, alt={-point[2] + 0.0:g}"
        violation = airspace.violation(point, floor=floor)
        if violation is not None:
            problems.add(path, f"expected {violation}, got {shown}")
        if in_obstacle:
            problems.add(path, f"expected a point outside every obstacle of the scene, got {shown}")
