"""Free space on a grid, connectivity, and the guide path through a scene.

The grid marks a cell free when a sphere of the vehicle's clearance radius, centred at the cell
centre, touches no obstacle, with a margin of half the largest cell edge. That margin is what makes
the guarantee exact rather than approximate: the distance to obstacles changes by at most 1 m per
metre moved, so every point of the straight step between two neighbouring free centres (at most
one cell edge long) keeps the full clearance. "Connected" therefore means that a polyline with the
vehicle's clearance exists, not merely that the grid says so.

Prismatic scenes (every obstacle vertical and spanning the flight band, `Scene.is_prismatic`) are
searched in the plane at the start altitude, which is exact for them and far cheaper.

Cells are 6-connected (face neighbours), so connectivity and the shortest grid path use the same
graph. The guide path is that grid path, shortened by line-of-sight shortcuts checked against the
exact scene distance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import ndimage
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra

from missions.geometry import Scene, Voxels, sample_polyline


class NoPathError(RuntimeError):
    """Start and goal are not connected with the requested clearance."""


@dataclass(frozen=True, eq=False)
class FreeGrid:
    """Cells of a box-shaped grid; `free[i, j, k]` is the cell centred at ``origin + (i, j, k) * resolution``."""

    origin: np.ndarray
    resolution: np.ndarray  # (3,) cell edge per axis (m)
    free: np.ndarray  # bool (nx, ny, nz)

    def centre(self, index: np.ndarray) -> np.ndarray:
        """Cell centre(s) of integer index triple(s)."""
        return self.origin + np.asarray(index) * self.resolution

    def index_of(self, points: np.ndarray) -> np.ndarray:
        """Nearest cell index of each point, clipped to the grid."""
        index = np.rint((np.atleast_2d(points) - self.origin) / self.resolution).astype(int)
        return np.clip(index, 0, np.array(self.free.shape) - 1)

    def is_free(self, points: np.ndarray) -> np.ndarray:
        """Whether the cell nearest to each point is free."""
        i = self.index_of(points)
        return self.free[i[:, 0], i[:, 1], i[:, 2]]


def default_resolution(scene: Scene) -> float:
    """Cell edge for a scene: fine enough for its narrowest passage, coarse enough to stay fast."""
    if scene.voxels is not None:
        return scene.voxels.size
    return 0.1 if scene.is_prismatic else 0.25


def free_grid(scene: Scene, clearance: float, resolution: float | None = None) -> FreeGrid:
    """Mark the cells whose centre keeps `clearance` (plus the half-cell margin) from every obstacle.

    The grid spans the scene's rectangle and the flight band from `clearance` above the ground to
    the ceiling; a prismatic scene gets a single layer at the start altitude.
    """
    h = resolution or default_resolution(scene)
    lo = scene.bounds_min.astype(float).copy()
    hi = scene.bounds_max.astype(float).copy()
    hi[2] = -clearance  # the vehicle's sphere stays above the ground
    if scene.is_prismatic:
        lo[2] = hi[2] = scene.start[2]
    if scene.voxels is not None:
        # Align the grid with the voxels so each cell centre is a voxel centre.
        lo = scene.voxels.origin + np.ceil((lo - scene.voxels.origin) / h) * h
    shape = np.maximum(np.floor((hi - lo) / h).astype(int) + 1, 1)
    resolution = np.full(3, h)
    limit = clearance + 0.5 * h  # the half-cell margin of the module docstring
    blocked = np.zeros(shape, dtype=bool)
    for group in scene.groups:
        if isinstance(group, Voxels):
            blocked |= _voxels_blocking(group, lo, shape, limit)
        else:
            _rasterize(group, lo, resolution, shape, limit, blocked)
    return FreeGrid(lo, resolution, ~blocked)


def _rasterize(group, origin: np.ndarray, resolution: np.ndarray, shape: np.ndarray, limit: float,
               blocked: np.ndarray) -> None:
    """Mark cells within `limit` of each primitive, visiting only the cells near that primitive."""
    lo, hi = group.bounding_boxes()
    first = np.clip(np.floor((lo - limit - origin) / resolution).astype(int), 0, shape - 1)
    last = np.clip(np.ceil((hi + limit - origin) / resolution).astype(int), 0, shape - 1)
    for p in range(len(group)):
        (i0, j0, k0), (i1, j1, k1) = first[p], last[p]
        if np.any(last[p] < first[p]):
            continue
        ii, jj, kk = np.meshgrid(np.arange(i0, i1 + 1), np.arange(j0, j1 + 1), np.arange(k0, k1 + 1), indexing="ij")
        centres = origin + np.stack([ii, jj, kk], axis=-1).reshape(-1, 3) * resolution
        near = group.subset([p]).distance(centres) < limit
        blocked[ii.ravel()[near], jj.ravel()[near], kk.ravel()[near]] = True


def _voxels_blocking(voxels: Voxels, origin: np.ndarray, shape: np.ndarray, limit: float) -> np.ndarray:
    """Cells of an aligned grid within `limit` of an occupied cube, from a Euclidean distance transform.

    The transform gives the distance between cube centres; a point at distance d from a cube's centre
    is at least d - sqrt(3) * size / 2 from the cube, so that bound is used (conservative). The grid is
    aligned with the cubes, so the cells that overlap them are one block of each: cut out, not gathered
    cell by cell through an index grid of the whole volume.
    """
    size = voxels.size
    offset = np.rint((origin - voxels.origin) / size).astype(int)
    first = np.maximum(-offset, 0)
    last = np.minimum(shape, np.array(voxels.occupied.shape) - offset)
    blocked = np.zeros(shape, dtype=bool)
    if np.all(last > first):
        cells = tuple(slice(a, b) for a, b in zip(first, last))
        cubes = tuple(slice(a + o, b + o) for a, b, o in zip(first, last, offset))
        centre_distance = ndimage.distance_transform_edt(~voxels.occupied)[cubes] * size
        blocked[cells] = centre_distance - np.sqrt(3.0) * 0.5 * size < limit
    return blocked


def _endpoint_cell(grid: FreeGrid, point: np.ndarray) -> tuple[int, int, int]:
    """The free cell nearest to `point` within one cell edge, or raise `NoPathError`."""
    index = grid.index_of(point)[0]
    window = [slice(max(i - 1, 0), i + 2) for i in index]
    candidates = np.argwhere(grid.free[tuple(window)]) + [w.start for w in window]
    if not len(candidates):
        raise NoPathError(f"no free cell within one cell of {np.round(point, 2).tolist()}")
    best = np.argmin(np.linalg.norm(grid.centre(candidates) - point, axis=1))
    return tuple(int(v) for v in candidates[best])


def connected(grid: FreeGrid, points: np.ndarray) -> bool:
    """Whether all `points` (start, waypoints, goal) lie in one free, 6-connected component."""
    labels, _ = ndimage.label(grid.free)
    try:
        cells = [_endpoint_cell(grid, p) for p in np.atleast_2d(points)]
    except NoPathError:
        return False
    first = labels[cells[0]]
    return first != 0 and all(labels[c] == first for c in cells)


def grid_path(grid: FreeGrid, start: np.ndarray, goal: np.ndarray) -> np.ndarray:
    """Shortest 6-connected chain of free cell centres from start to goal, as a (K, 3) polyline."""
    s, g = _endpoint_cell(grid, start), _endpoint_cell(grid, goal)
    free_index = -np.ones(grid.free.shape, dtype=np.int64)
    cells = np.argwhere(grid.free)
    free_index[tuple(cells.T)] = np.arange(len(cells))
    rows, cols, weights = [], [], []
    for axis in range(3):
        if grid.free.shape[axis] < 2:
            continue
        head = [slice(None)] * 3
        tail = [slice(None)] * 3
        head[axis], tail[axis] = slice(None, -1), slice(1, None)
        both = grid.free[tuple(head)] & grid.free[tuple(tail)]
        rows.append(free_index[tuple(head)][both])
        cols.append(free_index[tuple(tail)][both])
        weights.append(np.full(int(both.sum()), grid.resolution[axis]))
    n = len(cells)
    graph = coo_matrix((np.concatenate(weights), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n)).tocsr()
    source, target = free_index[s], free_index[g]
    distances, predecessors = dijkstra(graph, directed=False, indices=source, return_predecessors=True)
    if not np.isfinite(distances[target]):
        raise NoPathError("start and goal are in different free regions")
    chain = [target]
    while chain[-1] != source:
        chain.append(predecessors[chain[-1]])
    return grid.centre(cells[chain[::-1]])


def shortcut(scene: Scene, path: np.ndarray, clearance: float, step: float = 0.05) -> np.ndarray:
    """Drop vertices of `path` while the straight segment that replaces them keeps `clearance`.

    Greedy: from an anchor, reach as far along the path as a clear straight line allows. A reach of
    one vertex keeps the original segment, so the result is never worse than the input.
    """
    kept = [path[0]]
    anchor = 0
    while anchor < len(path) - 1:
        def clear(j: int) -> bool:
            return _segment_clear(scene, path[anchor], path[j], clearance, step)

        # Gallop (1, 2, 4, ... vertices ahead) while the line is clear, then bisect the last gap:
        # O(log n) segment checks per kept vertex instead of O(n).
        good, ahead = anchor + 1, 1
        while good < len(path) - 1:
            probe = min(anchor + 2 * ahead, len(path) - 1)
            if not clear(probe):
                bad = probe
                while bad - good > 1:
                    mid = (good + bad) // 2
                    good, bad = (mid, bad) if clear(mid) else (good, mid)
                break
            good, ahead = probe, 2 * ahead
        kept.append(path[good])
        anchor = good
    return np.array(kept)


def _segment_clear(scene: Scene, a: np.ndarray, b: np.ndarray, clearance: float, step: float) -> bool:
    points = sample_polyline(np.array([a, b]), step)
    # Sampling every `step` can miss a dip of at most step / 2 between samples.
    return bool(scene.distance(points).min() >= clearance + 0.5 * step)


def guide_path(scene: Scene, clearance: float, resolution: float | None = None) -> np.ndarray:
    """A short collision-free path start -> waypoints -> goal with `clearance`, as a (K, 3) polyline.

    Raises `NoPathError` if a leg is blocked. In a prismatic scene the plane path is lifted to the
    altitudes of its end points, interpolated by distance travelled.
    """
    grid = free_grid(scene, clearance, resolution)
    stops = scene.reference_path()
    legs = []
    for a, b in zip(stops[:-1], stops[1:]):
        # The end cells are within a cell of the true end points; replacing them (rather than adding
        # a hop to them) avoids sub-cell zig-zags that would read as sharp turns.
        chain = grid_path(grid, a, b)
        chain = np.vstack([a, chain[1:-1], b])
        if scene.is_prismatic:
            along = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(chain[:, :2], axis=0), axis=1))])
            chain[:, 2] = a[2] + (b[2] - a[2]) * along / max(along[-1], 1e-9)
        # Straight runs keep a vertex every half metre: places where a shortcut may turn off them.
        legs.append(shortcut(scene, sample_polyline(_drop_collinear(chain), 0.5), clearance))
    return np.vstack([legs[0]] + [leg[1:] for leg in legs[1:]])


def _drop_collinear(path: np.ndarray) -> np.ndarray:
    """Remove vertices where the path goes straight on (grid chains are mostly such vertices)."""
    if len(path) < 3:
        return path
    d1 = path[1:-1] - path[:-2]
    d2 = path[2:] - path[1:-1]
    straight = np.linalg.norm(np.cross(d1, d2), axis=1) < 1e-9
    return np.vstack([path[:1], path[1:-1][~straight], path[-1:]])
