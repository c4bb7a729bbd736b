"""Urban: buildings and free-standing walls (FLYINGTRUST, Sec. III-B).

FLYINGTRUST: 60 m by 60 m, flight ceiling 10 m, ten configurations sampled from a Unity urban
project. The project's layouts are not published, so buildings are drawn here: rectangular
footprints 4-12 m on a side covering about a quarter of the ground, at least 3 m apart (streets),
plus thin walls 4-10 m long. Everything is taller than the ceiling (the paper's "vertical obstacles
resembling buildings and walls"), so the vehicle must go around, not over.
"""

from __future__ import annotations

import numpy as np

from missions.geometry import Boxes, Scene
from missions.scenes.base import end_points, flight_volume, make_scene

SIZE, CEILING, ALTITUDE = 60.0, 10.0, 2.0
FOOTPRINT = (4.0, 12.0)  # m, building side
STREET = 3.0  # m, minimum gap between buildings
COVERAGE = 0.25  # fraction of the ground under buildings
WALLS = 6
WALL_LENGTH, WALL_THICKNESS = (4.0, 10.0), 0.3
START_CLEAR = 3.0


def _overlaps(lo: np.ndarray, hi: np.ndarray, placed: list[tuple[np.ndarray, np.ndarray]], gap: float) -> bool:
    return any(np.all(lo < h + gap) and np.all(hi > l - gap) for l, h in placed)


def build_urban(rng: np.random.Generator, config: int, clearance: float) -> Scene:
    """Random non-overlapping buildings up to the target coverage, then a few walls."""
    start, goal = end_points(SIZE, ALTITUDE)
    bounds = flight_volume(SIZE, SIZE, CEILING)
    keep_out = [(p[:2] - START_CLEAR, p[:2] + START_CLEAR) for p in (start, goal)]
    placed: list[tuple[np.ndarray, np.ndarray]] = []
    covered = 0.0
    for _ in range(2000):
        if covered >= COVERAGE * SIZE * SIZE:
            break
        side = rng.uniform(*FOOTPRINT, size=2)
        lo = rng.uniform(bounds[0][:2], bounds[1][:2] - side)
        hi = lo + side
        if _overlaps(lo, hi, placed, STREET) or _overlaps(lo, hi, keep_out, 0.0):
            continue
        placed.append((lo, hi))
        covered += side[0] * side[1]
    buildings = len(placed)
    for _ in range(WALLS * 50):
        if len(placed) == buildings + WALLS:
            break
        extent = np.array([rng.uniform(*WALL_LENGTH), WALL_THICKNESS])
        if rng.random() < 0.5:
            extent = extent[::-1]
        lo = rng.uniform(bounds[0][:2], bounds[1][:2] - extent)
        hi = lo + extent
        if _overlaps(lo, hi, placed, STREET) or _overlaps(lo, hi, keep_out, 0.0):
            continue
        placed.append((lo, hi))
    heights = rng.uniform(CEILING + 2.0, 3 * CEILING, size=len(placed))
    lo = np.array([[l[0], l[1], -h] for (l, _), h in zip(placed, heights)])
    hi = np.array([[u[0], u[1], 0.0] for _, u in placed])
    return make_scene("urban", config, bounds, start, goal, boxes=Boxes(lo, hi),
                      buildings=buildings, walls=len(placed) - buildings, size_m=[SIZE, SIZE], ceiling_m=CEILING)
