"""Maze: a random labyrinth of walls (FLYINGTRUST, Sec. III-B; FlightBench).

FLYINGTRUST: 25 m by 40 m, flight height limited to 2 m, ten random layouts. The maze here is a
perfect maze (one route between any two cells, dead ends everywhere else) carved by a randomized
depth-first search on 2.5 m cells, with 0.2 m walls taller than the ceiling. The start is the
middle cell of the south row, the goal the middle cell of the north row.
"""

from __future__ import annotations

import numpy as np

from missions.geometry import Boxes, Scene
from missions.scenes.base import flight_volume, make_scene

LENGTH, WIDTH, CEILING, ALTITUDE = 40.0, 25.0, 2.0, 1.0
CELL, WALL = 2.5, 0.2  # m
WALL_HEIGHT = CEILING + 1.0


def carve(rng: np.random.Generator, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """Randomized depth-first search; returns which walls remain.

    `north_wall[r, c]` is the wall between cell (r, c) and (r + 1, c); `east_wall[r, c]` between
    (r, c) and (r, c + 1). Row r runs along north, column c along east.
    """
    north_wall = np.ones((rows - 1, cols), dtype=bool)
    east_wall = np.ones((rows, cols - 1), dtype=bool)
    seen = np.zeros((rows, cols), dtype=bool)
    stack = [(0, cols // 2)]
    seen[stack[0]] = True
    while stack:
        r, c = stack[-1]
        options = [(r + dr, c + dc) for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1))
                   if 0 <= r + dr < rows and 0 <= c + dc < cols and not seen[r + dr, c + dc]]
        if not options:
            stack.pop()
            continue
        nr, nc = options[rng.integers(len(options))]
        if nr != r:
            north_wall[min(r, nr), c] = False
        else:
            east_wall[r, min(c, nc)] = False
        seen[nr, nc] = True
        stack.append((nr, nc))
    return north_wall, east_wall


def wall_boxes(north_wall: np.ndarray, east_wall: np.ndarray, origin_east: float, height: float) -> Boxes:
    """Boxes for the outer boundary and the remaining inner walls; runs of wall are merged into one box."""
    rows, cols = east_wall.shape[0], north_wall.shape[1]
    h = WALL / 2
    lo, hi = [], []

    def add(n0, n1, e0, e1):
        lo.append([n0, e0, -height])
        hi.append([n1, e1, 0.0])

    for r in range(rows + 1):  # walls running east-west at north = r * CELL
        line = np.ones(cols, dtype=bool) if r in (0, rows) else north_wall[r - 1]
        for c0, c1 in _runs(line):
            add(r * CELL - h, r * CELL + h, origin_east + c0 * CELL - h, origin_east + c1 * CELL + h)
    for c in range(cols + 1):  # walls running north-south at east = c * CELL
        line = np.ones(rows, dtype=bool) if c in (0, cols) else east_wall[:, c - 1]
        for r0, r1 in _runs(line):
            add(r0 * CELL - h, r1 * CELL + h, origin_east + c * CELL - h, origin_east + c * CELL + h)
    return Boxes(np.array(lo), np.array(hi))


def _runs(line: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) index ranges of consecutive True values."""
    padded = np.concatenate([[False], line, [False]]).astype(int)
    edges = np.flatnonzero(np.diff(padded))
    return list(zip(edges[::2], edges[1::2]))


def cell_centre(row: int, col: int, origin_east: float, altitude: float) -> np.ndarray:
    """NED centre of a maze cell at `altitude`."""
    return np.array([(row + 0.5) * CELL, origin_east + (col + 0.5) * CELL, -altitude])


def build_maze(rng: np.random.Generator, config: int, clearance: float) -> Scene:
    """A 16 x 10 cell perfect maze from the middle of the south row to the middle of the north row."""
    rows, cols = int(LENGTH / CELL), int(WIDTH / CELL)
    north_wall, east_wall = carve(rng, rows, cols)
    origin_east = -WIDTH / 2
    bounds = flight_volume(LENGTH, WIDTH, CEILING)
    start = cell_centre(0, cols // 2, origin_east, ALTITUDE)
    goal = cell_centre(rows - 1, cols // 2, origin_east, ALTITUDE)
    return make_scene("maze", config, bounds, start, goal,
                      boxes=wall_boxes(north_wall, east_wall, origin_east, WALL_HEIGHT),
                      cells=[rows, cols], cell_m=CELL, size_m=[LENGTH, WIDTH], ceiling_m=CEILING)
