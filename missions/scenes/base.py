"""What every scene generator shares: seeding, start/goal clearing, and the connectivity guarantee.

A generator is a function ``build(rng, config, clearance) -> Scene``. `generate` calls it with a
random generator derived from (scene name, configuration, attempt) and accepts the first attempt
whose scene is valid:

* start, goal (and waypoints) lie in the flight volume with the vehicle's clearance;
* they are connected by a path with that clearance (`missions.paths`, grid search);
* for point-to-point scenes, obstacles sit on the straight start-goal line, as in FLYINGTRUST
  (FLYINGTRUST, Sec. IV: "a straight line connecting start and goal served as the reference
  trajectory, with obstacles placed along it").

A rejected attempt is regenerated, not patched, so every accepted scene is exactly what its
generator describes; attempts are numbered, so the result is still a pure function of the seed.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

from missions.geometry import Boxes, Cylinders, Scene, Voxels
from missions.paths import connected, free_grid

CONFIGURATIONS = 10  # seeded configurations per scene (FLYINGTRUST: ten each)
DEFAULT_CLEARANCE = 0.3  # m; covers the default vehicle profile's 0.27 m radius
MAX_ATTEMPTS = 25

Builder = Callable[[np.random.Generator, int, float], Scene]


class SceneError(ValueError):
    """An unknown scene, a bad seed, or a generator that could not produce a valid scene."""


@dataclass(frozen=True)
class SceneSpec:
    """A named scene generator and what the source paper says about it."""

    name: str
    source: str  # paper and section the dimensions come from
    summary: str
    build: Builder
    blocked_line: bool = True  # require obstacles on the straight start-goal line
    task: str = "point_to_point"  # the mission type a suite flies in this scene (see missions.templates)


def rng_for(name: str, config: int, attempt: int) -> np.random.Generator:
    """The random generator of one attempt; stable across Python runs (no salted `hash`)."""
    return np.random.default_rng([zlib.crc32(name.encode()), config, attempt])


def generate(spec: SceneSpec, seed: int, clearance: float = DEFAULT_CLEARANCE) -> Scene:
    """Build configuration `seed` (0-9) of a scene, regenerating until it is valid (see module doc)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < CONFIGURATIONS:
        raise SceneError(f"{spec.name}: seed: expected an integer 0-{CONFIGURATIONS - 1}, got {seed!r}")
    reasons = []
    for attempt in range(MAX_ATTEMPTS):
        scene = spec.build(rng_for(spec.name, int(seed), attempt), int(seed), clearance)
        problem = validity_problem(scene, clearance, spec.blocked_line)
        if problem is None:
            scene.parameters.update(attempt=attempt, clearance=clearance)
            return scene
        reasons.append(problem)
    raise SceneError(f"{spec.name} seed {seed}: no valid scene in {MAX_ATTEMPTS} attempts ({reasons[-1]})")


def validity_problem(scene: Scene, clearance: float, blocked_line: bool) -> str | None:
    """Why a scene is unusable, or None when it is valid."""
    stops = scene.reference_path()
    if not np.all(scene.in_bounds(stops)):
        return "start, goal or a waypoint is outside the flight volume"
    if np.any(scene.distance(stops) < clearance):
        return "start, goal or a waypoint is within the clearance of an obstacle"
    if blocked_line and scene.path_clearance(stops) >= clearance:
        return "no obstacle on the straight reference line"
    if not connected(free_grid(scene, clearance), stops):
        return "start and goal are not connected with the vehicle's clearance"
    return None


def flight_volume(length: float, width: float, ceiling: float) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of a `length` (north) x `width` (east) rectangle, centred on east = 0, ground to ceiling."""
    return np.array([0.0, -width / 2, -ceiling]), np.array([length, width / 2, 0.0])


def end_points(length: float, altitude: float, margin: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    """Start and goal on the centre line, `margin` in from the south and north edges."""
    return np.array([margin, 0.0, -altitude]), np.array([length - margin, 0.0, -altitude])


def vertical_cylinders(north: np.ndarray, east: np.ndarray, radius: np.ndarray, height: float) -> Cylinders:
    """Upright cylinders standing on the ground, `height` tall (tree trunks, columns)."""
    a = np.column_stack([north, east, np.zeros(len(north))])
    b = a + [0.0, 0.0, -height]
    return Cylinders(a, b, np.asarray(radius, dtype=float))


def scatter(rng: np.random.Generator, count: int, lo: np.ndarray, hi: np.ndarray, min_gap: float,
            keep_out: list[tuple[np.ndarray, float]]) -> np.ndarray:
    """Up to `count` random 2D points in [lo, hi], `min_gap` apart and outside the keep-out circles.

    Rejection sampling with a bounded number of tries, so a crowded area yields fewer points rather
    than looping forever.
    """
    points: list[np.ndarray] = []
    for _ in range(count * 30):
        if len(points) == count:
            break
        p = rng.uniform(lo, hi)
        if any(np.linalg.norm(p - c) < r for c, r in keep_out):
            continue
        if points and np.min(np.linalg.norm(np.array(points) - p, axis=1)) < min_gap:
            continue
        points.append(p)
    return np.array(points).reshape(-1, 2)


def make_scene(name: str, config: int, bounds: tuple[np.ndarray, np.ndarray], start: np.ndarray, goal: np.ndarray,
               *, cylinders: Cylinders | None = None, boxes: Boxes | None = None, voxels: Voxels | None = None,
               waypoints: np.ndarray | None = None, **parameters) -> Scene:
    """A `Scene` with empty groups filled in; keyword `parameters` are recorded on the scene."""
    return Scene(
        name=name, seed=config, bounds_min=bounds[0], bounds_max=bounds[1], start=start, goal=goal,
        cylinders=cylinders if cylinders is not None else Cylinders.empty(),
        boxes=boxes if boxes is not None else Boxes.empty(),
        voxels=voxels,
        waypoints=waypoints if waypoints is not None else np.zeros((0, 3)),
        parameters=dict(parameters),
    )
