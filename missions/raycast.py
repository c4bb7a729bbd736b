"""Where depth-camera rays first meet cylinders, boxes and voxels: the camera's hot loops, compiled with numba.

Every function takes rays ``(1, u, v)`` turned into the world frame, (N, 3), so a ray's parameter is its
depth, and returns each ray's nearest hit depth, inf on a miss; a camera inside an obstacle sees it at 0.

Cylinders and boxes are solved analytically, with the operations of the numpy expressions they replaced
in the same order (numba keeps IEEE order without fastmath), so their depths are the same numbers, at a
half to a third of their cost. Voxels are walked cube by cube along each ray (Amanatides and Woo's
traversal), crossing empty blocks in one move, to the exact entry into the first occupied one. That
replaced a march of whole numpy arrays at a quarter of the voxel edge, which cost about 15 ms a frame (a
third of a FLYINGTRUST matrix trial) and erred at grazing entries: a sample could round to a cube beside
the one the ray entered, or a clipped corner fall between two samples.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, error_model="numpy")
def march_voxels(occupied: np.ndarray, clear: np.ndarray, grid_origin: np.ndarray, size: float,
                 origin: np.ndarray, directions: np.ndarray, max_depth: float) -> np.ndarray:
    """Depth of each ray's first occupied cube, inf where none is met within `max_depth`.

    Cube (i, j, k) of `occupied` has its centre at ``grid_origin + (i, j, k) * size``. `clear` holds
    each cube's chessboard distance, in cubes, to the nearest occupied one (`Voxels.clear`): from a cube
    at distance k the ray crosses the empty block of cubes within k - 1 of it in one move.
    """
    shape = occupied.shape
    lo = grid_origin - size / 2  # the grid's corners
    hi = np.empty(3)
    for axis in range(3):
        hi[axis] = lo[axis] + shape[axis] * size
    inverse = np.empty(3)
    step = np.empty(3, dtype=np.int64)
    cell = np.empty(3, dtype=np.int64)
    crossing = np.empty(3)  # the depth at which the ray leaves its cube along each axis
    depths = np.full(directions.shape[0], np.inf)
    for ray in range(directions.shape[0]):
        direction = directions[ray]
        # The stretch [near, far] of the ray inside the grid's box, cut at max_depth.
        near, far = _slab(lo, hi, origin, direction)
        near, far = (near if near > 0.0 else 0.0), (far if far < max_depth else max_depth)
        if not near <= far:
            continue
        for axis in range(3):
            inverse[axis] = 1.0 / direction[axis]
            at = (origin[axis] + near * direction[axis] - lo[axis]) / size
            cell[axis] = min(max(int(np.floor(at)), 0), shape[axis] - 1)
            step[axis] = 1 if direction[axis] > 0 else -1
            crossing[axis] = _crossing(lo[axis], size, cell[axis], step[axis], origin[axis], inverse[axis])
        depth = near
        while True:
            if occupied[cell[0], cell[1], cell[2]]:
                depths[ray] = depth
                break
            reach = clear[cell[0], cell[1], cell[2]] - 1
            if reach >= 1:
                # Leave the empty block [cell - reach, cell + reach] where the ray crosses its far side, into
                # the cube beyond that side; along the other axes the ray is still within the block.
                axis, leave = 0, np.inf
                for a in range(3):
                    t = _crossing(lo[a], size, cell[a] + reach * step[a], step[a], origin[a], inverse[a])
                    if t < leave:
                        axis, leave = a, t
                depth = leave if leave > depth else depth
                if depth > far:
                    break
                for a in range(3):
                    if a != axis:
                        at = int(np.floor((origin[a] + depth * direction[a] - lo[a]) / size))
                        cell[a] = min(max(at, cell[a] - reach), cell[a] + reach)
                cell[axis] += (reach + 1) * step[axis]
                if cell[axis] < 0 or cell[axis] >= shape[axis]:
                    break
                for a in range(3):
                    crossing[a] = _crossing(lo[a], size, cell[a], step[a], origin[a], inverse[a])
                continue
            axis = 0 if crossing[0] <= crossing[1] and crossing[0] <= crossing[2] else (
                1 if crossing[1] <= crossing[2] else 2)
            # A move out of an empty block can leave a crossing a rounding error behind the ray.
            depth = crossing[axis] if crossing[axis] > depth else depth
            cell[axis] += step[axis]
            if depth > far or cell[axis] < 0 or cell[axis] >= shape[axis]:
                break
            crossing[axis] = _crossing(lo[axis], size, cell[axis], step[axis], origin[axis], inverse[axis])
    return depths


@numba.njit(cache=True, error_model="numpy")
def visible(lo: np.ndarray, hi: np.ndarray, origin: np.ndarray, forward: np.ndarray, reach: float) -> np.ndarray:
    """Indices of the obstacles with bounds (lo, hi) (M, 3) that a camera at `origin` looking along
    `forward` may see: within `reach` of it and not wholly behind it.

    Every ray has a forward component of 1 and the field of view is under 180 degrees, so a box whose
    every corner lies behind the camera's image plane cannot be seen.
    """
    keep = np.empty(lo.shape[0], dtype=np.int64)
    count = 0
    for i in range(lo.shape[0]):
        gap2 = 0.0
        ahead = 0.0
        for k in range(3):
            below, above = lo[i, k] - origin[k], hi[i, k] - origin[k]
            gap = below if below > -above else -above
            gap = gap if gap > 0.0 else 0.0
            gap2 += gap * gap
            near, far = below * forward[k], above * forward[k]
            ahead += near if near > far else far
        if np.sqrt(gap2) <= reach and ahead > 0:
            keep[count] = i
            count += 1
    return keep[:count]


@numba.njit(cache=True, error_model="numpy")
def hit_boxes(lo: np.ndarray, hi: np.ndarray, index: np.ndarray, origin: np.ndarray,
              directions: np.ndarray) -> np.ndarray:
    """Depth at which each ray enters the nearest of the boxes (lo, hi) (M, 3) listed in `index` (slab
    method, as `_slab`: the same operations on the same numbers, with what does not change from box to box
    or ray to ray computed once, as a maze's frame meets some eighty boxes with each of 3072 rays)."""
    below = np.empty((len(index), 3))
    above = np.empty((len(index), 3))
    for k in range(len(index)):
        for axis in range(3):
            below[k, axis] = lo[index[k], axis] - origin[axis]
            above[k, axis] = hi[index[k], axis] - origin[axis]
    inverse = np.empty(3)
    depths = np.full(directions.shape[0], np.inf)
    for ray in range(directions.shape[0]):
        for axis in range(3):
            inverse[axis] = 1.0 / directions[ray, axis]
        best = np.inf
        for k in range(len(index)):
            t_near, t_far = -np.inf, np.inf
            for axis in range(3):
                t1 = below[k, axis] * inverse[axis]
                t2 = above[k, axis] * inverse[axis]
                t1 = np.inf if np.isnan(t1) else t1
                t2 = np.inf if np.isnan(t2) else t2
                lower, upper = (t1, t2) if t1 < t2 else (t2, t1)
                t_near = lower if lower > t_near else t_near
                t_far = upper if upper < t_far else t_far
            t_near = t_near if t_near > 0.0 else 0.0
            if t_far >= t_near and t_near < best:
                best = t_near
        depths[ray] = best
    return depths


@numba.njit(cache=True, error_model="numpy")
def _slab(lo: np.ndarray, hi: np.ndarray, origin: np.ndarray, direction: np.ndarray) -> tuple[float, float]:
    """Ray parameters (t_near, t_far) where a ray enters and leaves the box [lo, hi] (slab method); it
    meets the box ahead of the camera only if t_far >= max(t_near, 0)."""
    t_near, t_far = -np.inf, np.inf
    for axis in range(3):
        inverse = 1.0 / direction[axis]
        t1 = (lo[axis] - origin[axis]) * inverse
        t2 = (hi[axis] - origin[axis]) * inverse
        # Parallel to this slab: +-inf inside it, and NaN (0 * inf) on its boundary, taken as +inf.
        t1 = np.inf if np.isnan(t1) else t1
        t2 = np.inf if np.isnan(t2) else t2
        lower, upper = (t1, t2) if t1 < t2 else (t2, t1)
        t_near = lower if lower > t_near else t_near
        t_far = upper if upper < t_far else t_far
    return t_near, t_far


@numba.njit(cache=True, error_model="numpy")
def hit_cylinders(a: np.ndarray, unit: np.ndarray, length: np.ndarray, radius: np.ndarray, index: np.ndarray,
                  origin: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """Depth at which each ray first meets one of the finite cylinders listed in `index`, side or end disc.

    Cylinder i runs from `a[i]` along `unit[i]` for `length[i]` metres with radius `radius[i]`.
    """
    depths = np.full(directions.shape[0], np.inf)
    for ray in range(directions.shape[0]):
        d0, d1, d2 = directions[ray, 0], directions[ray, 1], directions[ray, 2]
        best_of_all = np.inf
        for i in index:
            u0, u1, u2 = unit[i, 0], unit[i, 1], unit[i, 2]
            rel0, rel1, rel2 = origin[0] - a[i, 0], origin[1] - a[i, 1], origin[2] - a[i, 2]
            r2 = radius[i] * radius[i]
            d_axial = d0 * u0 + d1 * u1 + d2 * u2
            o_axial = rel0 * u0 + rel1 * u1 + rel2 * u2
            # Side: |(rel + t d) - ((rel + t d).u) u|^2 = r^2, a quadratic in t.
            p0, p1, p2 = d0 - d_axial * u0, d1 - d_axial * u1, d2 - d_axial * u2
            q0, q1, q2 = rel0 - o_axial * u0, rel1 - o_axial * u1, rel2 - o_axial * u2
            qa = p0 * p0 + p1 * p1 + p2 * p2
            qb = 2 * (p0 * q0 + p1 * q1 + p2 * q2)
            qc = (q0 * q0 + q1 * q1 + q2 * q2) - r2
            disc = qb * qb - 4 * qa * qc
            root = np.sqrt(disc if disc > 0.0 else 0.0)
            t_side = 0.0 if qc <= 0 else (-qb - root) / (2 * qa)  # qc <= 0: camera inside the infinite tube
            along = o_axial + t_side * d_axial
            ok = disc >= 0 and qa > 1e-12 and t_side >= 0 and along >= 0 and along <= length[i]
            best = t_side if ok else np.inf
            for cap in (0.0, 1.0):  # the two end discs
                t_cap = (cap * length[i] - o_axial) / d_axial
                end = cap * length[i]
                e0 = rel0 + t_cap * d0 - end * u0
                e1 = rel1 + t_cap * d1 - end * u1
                e2 = rel2 + t_cap * d2 - end * u2
                if t_cap >= 0 and e0 * e0 + e1 * e1 + e2 * e2 <= r2 and t_cap < best:
                    best = t_cap
            if best < best_of_all:
                best_of_all = best
        depths[ray] = best_of_all
    return depths


@numba.njit(cache=True, error_model="numpy")
def _crossing(lo: float, size: float, cell: int, step: int, origin: float, inverse: float) -> float:
    """Depth at which a ray leaves `cell` along one axis, going `step`; inf if it never moves on that axis.

    Computed from the cell's index rather than accumulated, so long rays do not drift.
    """
    if inverse == np.inf or inverse == -np.inf:
        return np.inf
    boundary = lo + (cell + 1 if step > 0 else cell) * size
    return (boundary - origin) * inverse
