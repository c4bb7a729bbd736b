"""An obstacle-avoiding reference planner: occupancy mapping, grid search, trajectory control.

Three stages, each timed (onboard.timing):

* map: depth points near flight altitude go into a 2D occupancy grid with the vehicle's radius
  plus a margin inflated around each occupied cell (onboard.planners.occupancy);
* plan: Dijkstra over a square window of the grid around the vehicle (8-connected, blocked cells
  removed), then the window cell minimizing path length + straight-line distance to the goal is
  the local target (unknown space is assumed free, so the estimate is optimistic, as in A*); the
  path to it is shortened by line-of-sight pruning;
* control: the path is time-parametrized from the current speed with bounded acceleration up to
  the speed cap, slowing so as to stop at the end of the known path, and handed to the runtime as
  a 2-second trajectory; the heading follows the path so the camera looks where the vehicle goes.

It plans in the horizontal plane at the task's altitude, which is right for scenes of upright
obstacles (FLYINGTRUST's Forest, FlightBench's forest tests) and not for overhangs or 3D clutter.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from onboard.planner import SETTLED_SPEED, Command, Observation
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
# The 8 neighbour offsets, each once per undirected edge.
_EDGES = ((0, 1), (1, 0), (1, 1), (1, -1))


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
        self.goal = np.asarray(task.goal, dtype=float)
        self.previous: tuple[float, np.ndarray] | None = None  # (observation time, trajectory) of the last plan

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
        if grid.segment_free(here, goal) and np.linalg.norm(goal - here) <= WINDOW:
            return np.vstack([here, goal])
        half = int(WINDOW / grid.resolution)
        # A vehicle that overshot the flight volume (past a goal near its edge, or a PX4 estimate that
        # wandered) plans from the nearest cell inside it.
        centre = np.clip(grid.cell(here), 0, np.array(grid.shape) - 1)
        lo = np.maximum(centre - half, 0)
        hi = np.minimum(centre + half + 1, grid.shape)
        blocked = grid.blocked[lo[0]:hi[0], lo[1]:hi[1]].copy()
        start = centre - lo
        if blocked[tuple(start)]:
            start = self._nearest_free(blocked, start)
        graph = _grid_graph(blocked)
        cols = blocked.shape[1]
        distance, previous = dijkstra(graph, directed=False, indices=start[0] * cols + start[1],
                                      return_predecessors=True)
        cells = np.column_stack(np.unravel_index(np.arange(blocked.size), blocked.shape))
        to_goal = np.linalg.norm(grid.centre(cells + lo) - goal, axis=1) / grid.resolution
        score = distance + to_goal  # both in cells; unreachable cells are inf
        target = self._target(score, blocked.shape, grid.cell(goal) - lo)
        if target is None:
            return np.vstack([here, here])  # boxed in: hold position and keep looking
        chain = [target]
        while previous[chain[-1]] >= 0:
            chain.append(int(previous[chain[-1]]))
        route = grid.centre(cells[chain[::-1]] + lo)
        if np.linalg.norm(goal - route[-1]) < grid.resolution:
            route[-1] = goal
        return self._prune(np.vstack([here, route[1:]]))

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
        """Drop waypoints that the line of sight from an earlier one already covers."""
        kept = [path[0]]
        i = 0
        while i < len(path) - 1:
            j = len(path) - 1
            while j > i + 1 and not self.grid.segment_free(path[i], path[j]):
                j -= 1
            kept.append(path[j])
            i = j
        return np.array(kept)

    # ------------------------------------------------------------------ control
    def _start_speed(self, obs: Observation) -> float:
        """Speed to plan from: the last plan's speed now, or the measured one if higher.

        Starting from the measured speed alone would restart every acceleration from the vehicle's
        lag behind the previous plan, and it would never reach the cap.
        """
        measured = float(np.linalg.norm(obs.velocity[:2]))
        if self.previous is None:
            return measured
        t0, rows = self.previous
        _, planned = sample(rows, obs.t - t0)
        return max(measured, float(np.linalg.norm(planned[:2])))

    def _trajectory(self, path: np.ndarray, here: np.ndarray, start_speed: float) -> Command:
        """Time-parametrize the path: accelerate to the cap, stop at its end; rows every SAMPLE s."""
        segments = np.diff(path, axis=0)
        lengths = np.linalg.norm(segments, axis=1)
        arc = np.concatenate([[0.0], np.cumsum(lengths)])
        total = float(arc[-1])
        cap = self.task.speed_cap
        speed = min(start_speed, cap)
        # Speed allowed at each vertex: full speed straight on, slower the sharper the turn, zero
        # at the end; between vertices, no faster than braking in time for the next one allows.
        corner = np.full(len(path), cap)
        corner[-1] = 0.0
        for i in range(1, len(path) - 1):
            a, b = segments[i - 1], segments[i]
            cos_turn = float(a @ b) / max(lengths[i - 1] * lengths[i], 1e-9)
            corner[i] = cap * max(CORNER_FLOOR, (1.0 + cos_turn) / 2.0)
        rows, s, t = [], 0.0, 0.0
        down = -self.task.altitude
        while True:
            point, direction = _along(path, arc, s)
            ahead = arc >= s
            brake = np.sqrt(corner[ahead] ** 2 + 2.0 * ACCEL * (arc[ahead] - s)).min()
            v = min(cap, brake, speed)
            rows.append((t, point[0], point[1], down, direction[0] * v, direction[1] * v, 0.0))
            if t >= HORIZON or s >= total:
                break
            speed = min(cap, v + ACCEL * SAMPLE)
            s = min(total, s + v * SAMPLE)
            t += SAMPLE
        ahead, _ = _along(path, arc, min(total, LOOK_AHEAD))
        heading = ahead - here[:2]
        yaw = math.atan2(heading[1], heading[0]) if np.linalg.norm(heading) > 0.2 else math.nan
        return Command("trajectory", np.array(rows), yaw=yaw)


def _along(path: np.ndarray, arc: np.ndarray, s: float) -> tuple[np.ndarray, np.ndarray]:
    """Point and unit direction at arc length `s` along a polyline."""
    if len(path) < 2 or arc[-1] <= 0:
        return path[0], np.zeros(2)
    i = min(int(np.searchsorted(arc, s, side="right")) - 1, len(path) - 2)
    segment = path[i + 1] - path[i]
    length = float(np.linalg.norm(segment))
    if length == 0:
        return path[i], np.zeros(2)
    return path[i] + segment * ((s - arc[i]) / length), segment / length


def _grid_graph(blocked: np.ndarray) -> csr_matrix:
    """8-connected graph of the free cells of a 2D grid, edge weights in cells (1 or sqrt 2)."""
    rows, cols = blocked.shape
    index = np.arange(blocked.size).reshape(blocked.shape)
    free = ~blocked
    heads, tails, weights = [], [], []
    for di, dj in _EDGES:
        a = index[0:rows - di, max(0, -dj):cols - max(0, dj)]
        b = index[di:rows, max(0, dj):cols - max(0, -dj)]
        ok = free.ravel()[a.ravel()] & free.ravel()[b.ravel()]
        if di and dj:
            # No corner cutting: a diagonal step needs both cells it passes between free.
            c = index[0:rows - di, max(0, dj):cols - max(0, -dj)]
            d = index[di:rows, max(0, -dj):cols - max(0, dj)]
            ok &= free.ravel()[c.ravel()] & free.ravel()[d.ravel()]
        heads.append(a.ravel()[ok])
        tails.append(b.ravel()[ok])
        weights.append(np.full(int(ok.sum()), math.hypot(di, dj)))
    return csr_matrix((np.concatenate(weights), (np.concatenate(heads), np.concatenate(tails))),
                      shape=(blocked.size, blocked.size))
