"""Narrow gaps: walls across the route, each pierced by one slit (FLYINGTRUST, Sec. III-B).

FLYINGTRUST: 50 m by 50 m, flight ceiling 4 m, gap widths 0.85-0.9 m, the number of gaps rising
from configuration 1 to 10. Here configuration k (0-9) has k + 1 walls spread evenly between start
and goal, each spanning the whole width with a single slit at a random lateral position, so the
vehicle must find and line up with every gap in turn (the paper's large-yaw lateral manoeuvres).
Walls are 0.3 m thick and taller than the ceiling.
"""

from __future__ import annotations

import numpy as np

from missions.geometry import Boxes, Scene
from missions.scenes.base import end_points, flight_volume, make_scene

SIZE, CEILING, ALTITUDE = 50.0, 4.0, 1.5
GAP_WIDTH = (0.85, 0.9)  # m
WALL_THICKNESS = 0.3
FIRST_WALL, LAST_WALL = 8.0, 42.0  # m north: leaves room to see and turn after start and before goal
SLIT_MARGIN = 3.0  # m: slits stay this far from the side edges


def build_narrow_gap(rng: np.random.Generator, config: int, clearance: float) -> Scene:
    """`config + 1` walls, one slit each."""
    start, goal = end_points(SIZE, ALTITUDE)
    bounds = flight_volume(SIZE, SIZE, CEILING)
    walls = config + 1
    norths = np.linspace(FIRST_WALL, LAST_WALL, walls) if walls > 1 else np.array([SIZE / 2])
    widths = rng.uniform(*GAP_WIDTH, size=walls)
    centres = rng.uniform(-SIZE / 2 + SLIT_MARGIN, SIZE / 2 - SLIT_MARGIN, size=walls)
    top = -(CEILING + 2.0)
    lo, hi = [], []
    for north, centre, width in zip(norths, centres, widths):
        n0, n1 = north - WALL_THICKNESS / 2, north + WALL_THICKNESS / 2
        lo += [[n0, -SIZE / 2, top], [n0, centre + width / 2, top]]
        hi += [[n1, centre - width / 2, 0.0], [n1, SIZE / 2, 0.0]]
    return make_scene("narrow-gap", config, bounds, start, goal, boxes=Boxes(np.array(lo), np.array(hi)),
                      gaps=walls, gap_widths_m=np.round(widths, 3).tolist(), size_m=[SIZE, SIZE], ceiling_m=CEILING)
