"""Sudden drop: overhangs that force a quick descent (FLYINGTRUST, Sec. III-B).

FLYINGTRUST: 50 m by 50 m by 14 m, lowest obstacle point 1.5 m above the ground, start altitude
2.5 m, flight ceiling 4 m, obstacle count rising from configuration 1 to 10. Here configuration k
(0-9) has k + 1 overhangs: blocks hanging from 14 m down to a bottom 1.5-2.2 m above the ground,
each spanning the whole width and 2-5 m deep along the route. Flying at the start altitude hits
them; the vehicle must drop under each (one bottom is exactly at the 1.5 m lowest point).
"""

from __future__ import annotations

import numpy as np

from missions.geometry import Boxes, Scene
from missions.scenes.base import end_points, flight_volume, make_scene

SIZE, HEIGHT, CEILING, START_ALTITUDE = 50.0, 14.0, 4.0, 2.5
LOWEST_POINT = 1.5  # m
BOTTOM = (LOWEST_POINT, 2.2)  # m above ground
DEPTH = (2.0, 5.0)  # m along the route
FIRST, LAST = 8.0, 42.0  # m north


def build_sudden_drop(rng: np.random.Generator, config: int, clearance: float) -> Scene:
    """`config + 1` full-width overhangs in separate slots between start and goal."""
    start, goal = end_points(SIZE, START_ALTITUDE)
    bounds = flight_volume(SIZE, SIZE, CEILING)
    count = config + 1
    slot = (LAST - FIRST) / count
    depth = rng.uniform(*DEPTH, size=count)
    depth = np.minimum(depth, 0.8 * slot)  # overhangs never merge: each is a separate drop
    north = FIRST + slot * np.arange(count) + rng.uniform(0, 1, size=count) * (slot - depth)
    bottom = rng.uniform(*BOTTOM, size=count)
    bottom[rng.integers(count)] = LOWEST_POINT
    lo = np.column_stack([north, np.full(count, -SIZE / 2), np.full(count, -HEIGHT)])
    hi = np.column_stack([north + depth, np.full(count, SIZE / 2), -bottom])
    return make_scene("sudden-drop", config, bounds, start, goal, boxes=Boxes(lo, hi), obstacles=count,
                      bottoms_m=np.round(bottom, 3).tolist(), size_m=[SIZE, SIZE, HEIGHT], ceiling_m=CEILING)
