"""An obstacle-avoiding reference planner: occupancy mapping, grid search, trajectory control.

Three stages, each timed (onboard.timing):

* map: depth points near flight altitude go into a 2D occupancy grid with the vehicle's radius
  plus a margin inflated around each occupied cell (onboard.planners.occupancy);
* plan: a search over a square window of the grid around the vehicle (8-connected, blocked cells
  removed; onboard.planners.grid_search, compiled) for the local target: the goal if it is in the
  window and reachable, else the edge cell minimizing path length + straight-line distance to the
  goal (unknown space is assumed free, so the estimate is optimistic, as in A*); the path to it is
  shortened by line-of-sight pruning;
* control: the path is time-parametrized from the current speed with bounded acceleration up to
  the speed cap, slowing so as to stop at the end of the known path, and handed to the runtime as
  a 2-second trajectory; the heading follows the path so the camera looks where the vehicle goes.

It plans in the horizontal plane at the task's altitude, which is right for scenes of upright
obstacles (FLYINGTRUST's Forest, FlightBench's forest tests) and not for overhangs or 3D clutter.
"""

from __future__ import annotations

import bisect
import itertools
import math

import numba
import numpy as np

from onboard.planner import SETTLED_SPEED, Command, Observation
from onboard.planners.grid_search import search
from onboard.planners.occupancy import OccupancyGrid
from onboard.task import NavTask
from onboard.timing import span
from onboard.tracking import sample

RESOLUTION = 0.25  # m per grid cell
VEHICLE_RADIUS = 0.3  # m, the default profile's 0.27 m rounded up
MARGIN = 0.45  # m kept clear beyond the vehicle's radius (covers tracking error at replans)
BAND = 0.6  # m above and below flight altitude in which a depth point is an obstacle
WINDOW = 9.0  # m, half the side of the search window (over twice the 4 m sensing range)
ACCEL = 2.5  # m/s^2 planned (PX4's MPC_ACC_HOR default is 3)
HORIZON = 2.0  # s of trajectory per plan
SAMPLE = 0.1  # s between trajectory rows
LOOK_AHEAD = 1.5  # m along the path for the heading
CORNER_FLOOR = 0.3  # fraction of the cap kept through the sharpest corner


class OccupancyPlanner:
    """Map, plan and control stages over a depth-built occupancy grid (see module docstring).

    A finer `resolution` costs more computation per step (cells grow with its inverse square),
    which is how a test gives it a FlightBench-sized compute budget.
    """

    def __init__(self, resolution: float = RESOLUTION) -> None:
        self.resolution = resolution

    def reset(self, task: NavTask) -> None:
        self.task = task
        lo = np.array(task.bounds_min[:2]) + VEHICLE_RADIUS
        hi = np.array(task.bounds_max[:2]) - VEHICLE_RADIUS
        self.grid = OccupancyGrid(tuple(lo), tuple(hi), self.resolution, VEHICLE_RADIUS + MARGIN, task.altitude, BAND)
        self._last_cell = np.array(self.grid.shape) - 1
        self.goal = np.asarray(task.goal, dtype=float)
        self.previous: tuple[float, np.ndarray] | None = None  # (observation time, trajectory) of the last plan
        # The last search, keyed by what decides it: most plans see the same window from the same cell
        # (the map changes only as new obstacles come into view), and then the route is the same too.
        self._last_route: tuple[tuple, np.ndarray | None] | None = None

    def step(self, obs: Observation) -> Command:
        here = obs.position
        if np.linalg.norm(self.goal - here) <= 0.5 * self.task.goal_radius \
                and np.linalg.norm(obs.velocity) < SETTLED_SPEED:
            return Command("done")
        with span("map"):
            self.grid.insert(obs.points)
        with span("plan"):
            path = self._plan(here[:2])
        with span("control"):
            command = self._trajectory(path, here, self._start_speed(obs))
            self.previous = (obs.t, command.value)
            return command

    # ------------------------------------------------------------------ plan
    def _plan(self, here: np.ndarray) -> np.ndarray:
        """North-east waypoints from here towards the goal, avoiding blocked cells."""
        grid = self.grid
        goal = self.goal[:2]
        if math.dist(goal, here) <= WINDOW and grid.segment_free(here, goal):
            return np.vstack([here, goal])
        half = int(WINDOW / grid.resolution)
        # A vehicle that overshot the flight volume (past a goal near its edge, or a PX4 estimate that
        # wandered) plans from the nearest cell inside it.
        centre = np.minimum(np.maximum(grid.cell(here), 0), self._last_cell)  # np.clip's dispatch costs more
        lo = np.maximum(centre - half, 0)
        hi = np.minimum(centre + half + 1, grid.shape)
        window = grid.blocked[lo[0]:hi[0], lo[1]:hi[1]]
        key = (tuple(lo), tuple(centre), window.tobytes())  # lo and centre fix the window's shape
        if self._last_route is None or self._last_route[0] != key:
            self._last_route = (key, self._route(window, lo, centre - lo))
        route = self._last_route[1]
        if route is None:
            return np.vstack([here, here])  # boxed in: hold position and keep looking
        return self._prune(np.vstack([here, route]))

    def _route(self, blocked: np.ndarray, lo: np.ndarray, start: np.ndarray) -> np.ndarray | None:
        """Cell centres of the shortest path from window cell `start` (or the nearest free cell) to
        the target (`_target`), without the start's; None if no cell is reachable. `blocked` is the
        window at grid cell `lo`."""
        grid = self.grid
        goal = self.goal[:2]
        if blocked[tuple(start)]:
            start = self._nearest_free(blocked, start)
        rows, cols = blocked.shape
        # Straight-line distance from each cell centre to the goal, in cells: the search's estimate.
        north = grid.origin[0] + np.arange(lo[0], lo[0] + rows) * grid.resolution - goal[0]
        east = grid.origin[1] + np.arange(lo[1], lo[1] + cols) * grid.resolution - goal[1]
        to_goal = (np.sqrt(north[:, None] ** 2 + east[None, :] ** 2) / grid.resolution).ravel()
        goal_cell = grid.cell(goal) - lo
        in_window = bool(np.all((goal_cell >= 0) & (goal_cell < blocked.shape)))
        # Straight to the goal's cell when it is in the window, else to the best edge cell; only when
        # neither is reachable has the search seen every reachable cell, and `_target` chooses among them.
        distance, previous, target = search(blocked, start, to_goal, goal_cell[0] * cols + goal_cell[1] if in_window
                                            else -1, stop_at_edge=not in_window)
        if target < 0:
            target = self._target(distance + to_goal, blocked.shape, goal_cell)
        if target is None:
            return None
        chain = [target]
        while previous[chain[-1]] >= 0:
            chain.append(int(previous[chain[-1]]))
        route = grid.centre(np.column_stack(np.divmod(chain[::-1], cols)) + lo)
        if math.dist(goal, route[-1]) < grid.resolution:
            route[-1] = goal
        return route[1:]

    @staticmethod
    def _target(score: np.ndarray, shape: tuple[int, int], goal: np.ndarray) -> int | None:
        """The exit to head for: the goal's cell if it is in the window and reachable, else the
        best cell on the window's edge; a dead end in front of an obstacle is never a target."""
        if np.all((goal >= 0) & (goal < shape)) and np.isfinite(score[goal[0] * shape[1] + goal[1]]):
            return int(goal[0] * shape[1] + goal[1])
        edge = np.zeros(shape, dtype=bool)
        edge[[0, -1], :] = edge[:, [0, -1]] = True
        candidates = np.where(edge.ravel(), score, np.inf)
        if not np.isfinite(candidates).any():
            candidates = score  # no way out of the window: get as close as possible
        target = int(np.argmin(candidates))
        return target if np.isfinite(candidates[target]) else None

    @staticmethod
    def _nearest_free(blocked: np.ndarray, cell: np.ndarray) -> np.ndarray:
        """The free cell closest to `cell` (the vehicle drifted into an inflated margin)."""
        free = np.argwhere(~blocked)
        if not len(free):
            return cell
        return free[np.argmin(np.linalg.norm(free - cell, axis=1))]

    def _prune(self, path: np.ndarray) -> np.ndarray:
        """Drop waypoints that the line of sight from an earlier one already covers: from each
        waypoint kept, the next one kept is the furthest in sight (the following one if none is)."""
        kept = [path[0]]
        i = 0
        while i < len(path) - 1:
            in_sight = np.flatnonzero(self.grid.segments_free(path[i], path[i + 2:]))
            i = i + 2 + int(in_sight[-1]) if len(in_sight) else i + 1
            kept.append(path[i])
        return np.array(kept)

    # ------------------------------------------------------------------ control
    def _start_speed(self, obs: Observation) -> float:
        """Speed to plan from: the last plan's speed now, or the measured one if higher.

        Starting from the measured speed alone would restart every acceleration from the vehicle's
        lag behind the previous plan, and it would never reach the cap.
        """
        measured = math.hypot(obs.state.vn, obs.state.ve)
        if self.previous is None:
            return measured
        t0, rows = self.previous
        _, planned = sample(rows, obs.t - t0)
        return max(measured, math.hypot(planned[0], planned[1]))

    def _trajectory(self, path: np.ndarray, here: np.ndarray, start_speed: float) -> Command:
        """Time-parametrize the path: accelerate to the cap, stop at its end; rows every SAMPLE s.

        The path has a handful of vertices: its lengths and corner speeds are Python floats (numpy's
        per-call overhead would dominate), and the rows are compiled (`_time_profile`).
        """
        points = path.tolist()
        lengths = [math.hypot(n1 - n0, e1 - e0) for (n0, e0), (n1, e1) in itertools.pairwise(points)]
        arc = [0.0, *itertools.accumulate(lengths)]
        total = arc[-1]
        cap = self.task.speed_cap
        speed = min(start_speed, cap)
        # Speed allowed at each vertex: full speed straight on, slower the sharper the turn, zero
        # at the end; between vertices, no faster than braking in time for the next one allows.
        corner = [cap] * len(points)
        corner[-1] = 0.0
        for i in range(1, len(points) - 1):
            (n0, e0), (n1, e1), (n2, e2) = points[i - 1:i + 2]
            cos_turn = ((n1 - n0) * (n2 - n1) + (e1 - e0) * (e2 - e1)) / max(lengths[i - 1] * lengths[i], 1e-9)
            corner[i] = cap * max(CORNER_FLOOR, (1.0 + cos_turn) / 2.0)
        rows = _time_profile(np.ascontiguousarray(path, dtype=float), np.array(lengths), np.array(arc),
                             np.array(corner), cap, speed, -self.task.altitude)
        (north, east), _ = _along(points, arc, min(total, LOOK_AHEAD))
        heading = (north - here[0], east - here[1])
        yaw = math.atan2(heading[1], heading[0]) if math.hypot(*heading) > 0.2 else math.nan
        return Command("trajectory", rows, yaw=yaw)


# Rows of a plan: t reaches HORIZON after HORIZON / SAMPLE steps, and the row at that step is the last.
_MAX_ROWS = int(round(HORIZON / SAMPLE)) + 2


@numba.njit(cache=True)
def _time_profile(points: np.ndarray, lengths: np.ndarray, arc: np.ndarray, corner: np.ndarray, cap: float,
                  speed: float, down: float) -> np.ndarray:
    """The trajectory's rows (`onboard.planner.TRAJECTORY_COLUMNS`) along the polyline `points` (K, 2), its
    segments' `lengths` and the arc length and allowed speed at each vertex, from `speed`: at most the cap,
    no faster than braking in time for the next vertex allows. The same operations in the same order as the
    Python loop it replaced (`_along`'s included), which numba keeps without fastmath: the same numbers, and
    `_trajectory` at a quarter of its cost, 30 times a second."""
    rows = np.empty((_MAX_ROWS, 7))
    total = arc[-1]
    last = len(points) - 2
    count, s, t = 0, 0.0, 0.0
    while True:
        if count == _MAX_ROWS:
            raise ValueError("a plan of more rows than HORIZON / SAMPLE allows")
        # _along: the point and unit direction at arc length s.
        if len(points) < 2 or total <= 0:
            north, east, dn, de = points[0, 0], points[0, 1], 0.0, 0.0
        else:
            i = min(np.searchsorted(arc, s, side="right") - 1, last)
            n0, e0 = points[i, 0], points[i, 1]
            step_n, step_e = points[i + 1, 0] - n0, points[i + 1, 1] - e0
            length = lengths[i]
            if length == 0:
                north, east, dn, de = n0, e0, 0.0, 0.0
            else:
                f = (s - arc[i]) / length
                north, east, dn, de = n0 + step_n * f, e0 + step_e * f, step_n / length, step_e / length
        least, found = np.inf, False  # min() of the vertices ahead: the first, unless a later one is less
        for k in range(len(arc)):
            if arc[k] >= s:
                term = corner[k] * corner[k] + 2.0 * ACCEL * (arc[k] - s)
                if not found or term < least:
                    least, found = term, True
        brake = math.sqrt(least)
        v = cap
        if brake < v:
            v = brake
        if speed < v:
            v = speed
        rows[count, 0], rows[count, 1], rows[count, 2], rows[count, 3] = t, north, east, down
        rows[count, 4], rows[count, 5], rows[count, 6] = dn * v, de * v, 0.0
        count += 1
        if t >= HORIZON or s >= total:
            break
        speed = cap
        if v + ACCEL * SAMPLE < speed:
            speed = v + ACCEL * SAMPLE
        advanced = s + v * SAMPLE
        s = advanced if advanced < total else total
        t += SAMPLE
    return rows[:count].copy()


def _along(points: list, arc: list[float], s: float) -> tuple[tuple[float, float], tuple[float, float]]:
    """Point and unit direction at arc length `s` along a polyline: its vertices as (north, east)
    pairs and the arc length at each."""
    if len(points) < 2 or arc[-1] <= 0:
        return tuple(points[0]), (0.0, 0.0)
    i = min(bisect.bisect_right(arc, s) - 1, len(points) - 2)
    (n0, e0), (n1, e1) = points[i], points[i + 1]
    dn, de = n1 - n0, e1 - e0
    length = math.hypot(dn, de)
    if length == 0:
        return (n0, e0), (0.0, 0.0)
    f = (s - arc[i]) / length
    return (n0 + dn * f, e0 + de * f), (dn / length, de / length)
