"""FlightBench's three scenes and eight tests (Sec. 3.1.2).

FlightBench gives each test's difficulty (Table 2) and what distinguishes the tests, but not the
scene geometry, so the layouts here are built to match those descriptions:

* Forest low / mid / high: the forest generator at rising tree density ("TO and VO metrics
  increase with higher tree density"), start and goal across the forest.
* Maze low / mid / high: one perfect maze of walls; the tests start at the same cell and end at
  cells a quarter, half and all of the way along the longest route, so length and number of turns
  rise together ("varying lengths and turn complexities").
* Multi-Waypoint 1 / 2: one scene of columns, boxes and partial walls; waypoints at different
  heights, test 2 zig-zagging back and forth for the sharpest turns ("the highest AOL in test 2").
"""

from __future__ import annotations

from collections import deque
from functools import partial

import numpy as np

from missions.geometry import Boxes, Scene
from missions.scenes.base import flight_volume, make_scene, scatter, vertical_cylinders
from missions.scenes.forest import build_forest
from missions.scenes.maze import CELL, carve, cell_centre, wall_boxes

FOREST_DENSITY = {"low": 1 / 49, "mid": 1 / 25, "high": 1 / 16}  # trees per m^2
FOREST_LENGTH, FOREST_WIDTH, FOREST_CEILING = 40.0, 30.0, 4.0

MAZE_ROWS, MAZE_COLS, MAZE_CEILING, MAZE_ALTITUDE = 12, 8, 2.0, 1.0
MAZE_REACH = {"low": 0.25, "mid": 0.5, "high": 1.0}  # fraction of the longest route from the start

MW_LENGTH, MW_WIDTH, MW_CEILING = 30.0, 20.0, 6.0
MW_ROUTES = {
    # North, east, altitude (m). Test 1 threads the cluttered middle, test 2 doubles back.
    1: [(2, 0, 1.5), (10.5, -3, 3.0), (17, 3.5, 2.0), (23, -1, 4.0), (28, 0, 2.0)],
    2: [(2, 0, 1.5), (14, 7, 3.0), (7, -7, 2.5), (21, -3, 4.0), (15, 7, 2.0), (28, 0, 2.0)],
}
MW_COLUMNS, MW_COLUMN_RADIUS = 14, 0.3


def build_forest_test(rng: np.random.Generator, config: int, clearance: float, *, level: str) -> Scene:
    """A FlightBench forest test: the forest generator at this level's density."""
    return build_forest(rng, config, clearance, name=f"flightbench-forest-{level}", density=FOREST_DENSITY[level],
                        length=FOREST_LENGTH, width=FOREST_WIDTH, ceiling=FOREST_CEILING, altitude=2.0)


def _cell_depths(north_wall: np.ndarray, east_wall: np.ndarray, start: tuple[int, int]) -> np.ndarray:
    """Breadth-first number of cells from `start` to every maze cell."""
    rows, cols = east_wall.shape[0], north_wall.shape[1]
    depth = -np.ones((rows, cols), dtype=int)
    depth[start] = 0
    queue = deque([start])
    while queue:
        r, c = queue.popleft()
        steps = [((r + 1, c), r + 1 < rows and not north_wall[r, c]), ((r - 1, c), r > 0 and not north_wall[r - 1, c]),
                 ((r, c + 1), c + 1 < cols and not east_wall[r, c]), ((r, c - 1), c > 0 and not east_wall[r, c - 1])]
        for cell, open_ in steps:
            if open_ and depth[cell] < 0:
                depth[cell] = depth[r, c] + 1
                queue.append(cell)
    return depth


def build_maze_test(rng: np.random.Generator, config: int, clearance: float, *, level: str) -> Scene:
    """A FlightBench maze test: goal a given fraction of the longest route away from the start."""
    north_wall, east_wall = carve(rng, MAZE_ROWS, MAZE_COLS)
    origin_east = -MAZE_COLS * CELL / 2
    start_cell = (0, MAZE_COLS // 2)
    depth = _cell_depths(north_wall, east_wall, start_cell)
    target = MAZE_REACH[level] * depth.max()
    goal_cell = tuple(np.argwhere(depth == depth.flat[np.argmin(np.abs(depth - target))])[0])
    bounds = flight_volume(MAZE_ROWS * CELL, MAZE_COLS * CELL, MAZE_CEILING)
    return make_scene(f"flightbench-maze-{level}", config, bounds,
                      cell_centre(*start_cell, origin_east, MAZE_ALTITUDE), cell_centre(*goal_cell, origin_east, MAZE_ALTITUDE),
                      boxes=wall_boxes(north_wall, east_wall, origin_east, MAZE_CEILING + 1.0),
                      route_cells=int(depth[goal_cell]), cells=[MAZE_ROWS, MAZE_COLS])


def build_multi_waypoint(rng: np.random.Generator, config: int, clearance: float, *, test: int) -> Scene:
    """A FlightBench multi-waypoint test: shared clutter, this test's waypoints in order."""
    route = np.array([(n, e, -alt) for n, e, alt in MW_ROUTES[test]], dtype=float)
    bounds = flight_volume(MW_LENGTH, MW_WIDTH, MW_CEILING)
    every_route = np.vstack([np.array([(n, e) for n, e, _ in r]) for r in MW_ROUTES.values()])
    keep_out = [(p, 1.5) for p in every_route]
    xy = scatter(rng, MW_COLUMNS, bounds[0][:2] + 1, bounds[1][:2] - 1, 2.5, keep_out)
    columns = vertical_cylinders(xy[:, 0], xy[:, 1], np.full(len(xy), MW_COLUMN_RADIUS), MW_CEILING + 1.0)
    # Partial walls (one from each side) and low boxes to fly over; jittered per configuration.
    jitter = rng.uniform(-0.5, 0.5, size=4)
    lo = np.array([[9.0 + jitter[0], -MW_WIDTH / 2, -MW_CEILING - 1], [19.0 + jitter[1], -1.0, -MW_CEILING - 1],
                   [5.0, 3.0 + jitter[2], -1.2], [24.0, -8.0 + jitter[3], -1.5]])
    hi = np.array([[9.3 + jitter[0], -5.0, 0.0], [19.3 + jitter[1], MW_WIDTH / 2, 0.0],
                   [7.0, 6.0 + jitter[2], 0.0], [26.0, -5.0 + jitter[3], 0.0]])
    return make_scene(f"flightbench-mw-{test}", config, bounds, route[0], route[-1], cylinders=columns,
                      boxes=Boxes(lo, hi), waypoints=route[1:-1], columns=len(xy))


FOREST_TESTS = {level: partial(build_forest_test, level=level) for level in FOREST_DENSITY}
MAZE_TESTS = {level: partial(build_maze_test, level=level) for level in MAZE_REACH}
MW_TESTS = {test: partial(build_multi_waypoint, test=test) for test in MW_ROUTES}
