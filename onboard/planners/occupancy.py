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

import numba
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

    def insert(self, points: np.ndarray) -> int:
        """Mark the cells of depth points near flight altitude; returns how many cells became occupied."""
        if points is None or not len(points):
            return 0
        return _insert(self.occupied, self.blocked, self._disc, self.origin, float(self.resolution),
                       float(self.down), float(self.band), np.ascontiguousarray(points, dtype=float))

    def segment_free(self, a: np.ndarray, b: np.ndarray) -> bool:
        """Whether the straight north-east segment a-b crosses no blocked cell (sampled at half a cell)."""
        return bool(self.segments_free(a, np.asarray(b, dtype=float)[None])[0])

    def segments_free(self, a: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """`segment_free` from `a` to each row of `ends` (K, 2): sample k of n along a segment is
        ``a + (end - a) * (k / n)``, n the fewest half-cell steps; a sample off the grid counts as blocked."""
        return _segments_free(self.blocked, self.origin, float(self.resolution), np.asarray(a, dtype=float),
                              np.ascontiguousarray(ends, dtype=float))


# Line-of-sight checks run a few times per plan over dozens of segments: compiled, each segment stops at
# its first blocked sample instead of every sample of every segment being computed as arrays.
@numba.njit(cache=True)
def _insert(occupied: np.ndarray, blocked: np.ndarray, disc: np.ndarray, origin: np.ndarray, resolution: float,
            down: float, band: float, points: np.ndarray) -> int:
    # Compiled: a depth image's thousands of points arrive 30 times a second, most of them on cells
    # already occupied.
    rows, cols = occupied.shape
    added = 0
    for n in range(points.shape[0]):
        if not abs(points[n, 2] - down) <= band:
            continue
        i = int(np.rint((points[n, 0] - origin[0]) / resolution))
        j = int(np.rint((points[n, 1] - origin[1]) / resolution))
        if i < 0 or i >= rows or j < 0 or j >= cols or occupied[i, j]:
            continue
        occupied[i, j] = True
        added += 1
        for k in range(disc.shape[0]):
            a, b = i + disc[k, 0], j + disc[k, 1]
            if 0 <= a < rows and 0 <= b < cols:
                blocked[a, b] = True
    return added


@numba.njit(cache=True)
def _segments_free(blocked: np.ndarray, origin: np.ndarray, resolution: float, a: np.ndarray,
                   ends: np.ndarray) -> np.ndarray:
    rows, cols = blocked.shape
    free = np.ones(ends.shape[0], dtype=np.bool_)
    for s in range(ends.shape[0]):
        dn, de = ends[s, 0] - a[0], ends[s, 1] - a[1]
        n = max(int(np.ceil(np.sqrt(dn * dn + de * de) / (0.5 * resolution))), 1)
        for k in range(n + 1):
            f = k / n
            i = int(np.rint((a[0] + dn * f - origin[0]) / resolution))
            j = int(np.rint((a[1] + de * f - origin[1]) / resolution))
            if i < 0 or i >= rows or j < 0 or j >= cols or blocked[i, j]:
                free[s] = False
                break
    return free
