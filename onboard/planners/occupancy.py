"""A 2D occupancy map at flight altitude, built from depth-camera points.

The map is a grid over the task's flight volume, seen from above. A depth point within `band`
metres of the flight altitude marks its cell occupied; points above or below that band (ground
clutter, overhangs) do not, which suits scenes of upright obstacles such as Forest. Cells never
seen are free (an optimistic map: the planner replans as it sees more).

Each newly occupied cell also stamps a disc of the inflation radius into the "blocked" layer, so
path search can treat the vehicle as a point. Occupancy is never cleared: the scenes are static
and the sensor is noise-free by default.
"""

from __future__ import annotations

import numpy as np


class OccupancyGrid:
    """Occupied and inflated ("blocked") cells of a north-east grid in local NED."""

    def __init__(self, lo: tuple[float, float], hi: tuple[float, float], resolution: float, inflation: float,
                 altitude: float, band: float) -> None:
        self.origin = np.asarray(lo, dtype=float)
        self.resolution = resolution
        self.shape = tuple(int(np.ceil((h - l) / resolution)) + 1 for l, h in zip(lo, hi))
        self.occupied = np.zeros(self.shape, dtype=bool)
        self.blocked = np.zeros(self.shape, dtype=bool)
        self.down = -altitude
        self.band = band
        r = int(np.ceil(inflation / resolution))
        di, dj = np.mgrid[-r:r + 1, -r:r + 1]
        keep = (di**2 + dj**2) * resolution**2 <= inflation**2
        self._disc = np.column_stack([di[keep], dj[keep]])

    def cell(self, north_east: np.ndarray) -> np.ndarray:
        """Grid indices of (N, 2) or (2,) north-east points (may lie outside the grid)."""
        return np.rint((np.asarray(north_east, dtype=float) - self.origin) / self.resolution).astype(int)

    def centre(self, cells: np.ndarray) -> np.ndarray:
        """North-east coordinates of cell centres."""
        return self.origin + np.asarray(cells, dtype=float) * self.resolution

    def inside(self, cells: np.ndarray) -> np.ndarray:
        cells = np.atleast_2d(cells)
        return np.all((cells >= 0) & (cells < np.array(self.shape)), axis=1)

    def insert(self, points: np.ndarray) -> int:
        """Mark the cells of depth points near flight altitude; returns how many cells became occupied."""
        if points is None or not len(points):
            return 0
        near = np.abs(points[:, 2] - self.down) <= self.band
        cells = self.cell(points[near, :2])
        cells = cells[self.inside(cells)] if len(cells) else cells
        if not len(cells):
            return 0
        cells = np.unique(cells, axis=0)
        new = cells[~self.occupied[cells[:, 0], cells[:, 1]]]
        if len(new):
            self.occupied[new[:, 0], new[:, 1]] = True
            stamped = (new[:, None, :] + self._disc[None, :, :]).reshape(-1, 2)
            stamped = stamped[self.inside(stamped)]
            self.blocked[stamped[:, 0], stamped[:, 1]] = True
        return len(new)

    def segment_free(self, a: np.ndarray, b: np.ndarray) -> bool:
        """Whether the straight north-east segment a-b crosses no blocked cell (sampled at half a cell)."""
        n = max(int(np.ceil(np.linalg.norm(b - a) / (0.5 * self.resolution))), 1)
        cells = self.cell(a + (b - a) * (np.arange(n + 1) / n)[:, None])
        if not np.all(self.inside(cells)):
            return False
        return not self.blocked[cells[:, 0], cells[:, 1]].any()
