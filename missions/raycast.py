"""Where depth-camera rays first meet cylinders, boxes and voxels: the camera's hot loops, compiled with numba.

Every function takes rays ``(1, u, v)`` turned into the world frame, (N, 3), so a ray's parameter is its
depth, and returns each ray's nearest hit depth, inf on a miss; a camera inside an obstacle sees it at 0.

Cylinders and boxes are solved analytically, with the operations of the numpy expressions they replaced
in the same order (numba keeps IEEE order without fastmath), so their depths are the same numbers, at a
half to a third of their cost. Each obstacle is tried only with the pixels of its window (`pixel_windows`:
the image rectangle its bounding box projects into), not with all 3072 rays: a tree trunk a few metres away
covers a tenth of the image, and trying every ray against every obstacle in range was most of a frame. A
pixel outside the window cannot meet the obstacle, and each ray's depth is still the least over the same
obstacles in the same order, so the image is the same. Voxels are walked cube by cube along each ray (Amanatides and Woo's
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


# In front of the camera means this far (m) ahead of its image plane: a box reaching nearer is given the whole image,
# so that no rounding of a corner's depth can narrow the window of a box that reaches behind the camera.
_IN_FRONT_M = 1e-6
# The window is widened by this much (in image-plane units, a pixel is some 0.03) against rounding: a ray's
# direction is computed in floating point, and so are the bounds of a cylinder.
_WINDOW_MARGIN = 1e-6


@numba.njit(cache=True, error_model="numpy")
def pixel_windows(lo: np.ndarray, hi: np.ndarray, index: np.ndarray, origin: np.ndarray, rotation: np.ndarray,
                  u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The pixels that may see each box (lo, hi) (M, 3) listed in `index`: rows [r0, r1) and columns [c0, c1),
    as (len(index), 4) rows (r0, r1, c0, c1), for a camera at `origin` turned by `rotation` (body to NED) whose
    pixel rays are ``(1, u[column], v[row])`` in the body frame, `u` and `v` ascending.

    A box wholly in front of the camera projects into the convex hull of its corners' projections, so a ray
    whose (u, v) lies outside their bounding rectangle misses it; a box reaching to the image plane or behind
    it gets the whole image.
    """
    windows = np.empty((len(index), 4), dtype=np.int64)
    for k in range(len(index)):
        i = index[k]
        u_lo, u_hi, v_lo, v_hi = np.inf, -np.inf, np.inf, -np.inf
        behind = False
        for corner in range(8):
            p0 = (hi[i, 0] if corner & 1 else lo[i, 0]) - origin[0]
            p1 = (hi[i, 1] if corner & 2 else lo[i, 1]) - origin[1]
            p2 = (hi[i, 2] if corner & 4 else lo[i, 2]) - origin[2]
            forward = rotation[0, 0] * p0 + rotation[1, 0] * p1 + rotation[2, 0] * p2
            if not forward > _IN_FRONT_M:
                behind = True
                break
            across = (rotation[0, 1] * p0 + rotation[1, 1] * p1 + rotation[2, 1] * p2) / forward
            down = (rotation[0, 2] * p0 + rotation[1, 2] * p1 + rotation[2, 2] * p2) / forward
            u_lo, u_hi = min(u_lo, across), max(u_hi, across)
            v_lo, v_hi = min(v_lo, down), max(v_hi, down)
        if behind:
            windows[k, 0], windows[k, 1], windows[k, 2], windows[k, 3] = 0, len(v), 0, len(u)
            continue
        windows[k, 0] = np.searchsorted(v, v_lo - _WINDOW_MARGIN)
        windows[k, 1] = np.searchsorted(v, v_hi + _WINDOW_MARGIN, side="right")
        windows[k, 2] = np.searchsorted(u, u_lo - _WINDOW_MARGIN)
        windows[k, 3] = np.searchsorted(u, u_hi + _WINDOW_MARGIN, side="right")
    return windows


@numba.njit(cache=True, error_model="numpy")
def hit_boxes(lo: np.ndarray, hi: np.ndarray, index: np.ndarray, windows: np.ndarray, width: int,
              origin: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """Depth at which each ray enters the nearest of the boxes (lo, hi) (M, 3) listed in `index` (slab
    method, as `_slab`: the same operations on the same numbers, with what does not change from box to box
    or ray to ray computed once, as a maze's frame meets some eighty boxes with each of 3072 rays). Box k is
    tried with the pixels of `windows[k]` (`pixel_windows`) of an image `width` pixels wide, rays row-major."""
    below = np.empty(3)
    above = np.empty(3)
    depths = np.full(directions.shape[0], np.inf)
    for k in range(len(index)):
        for axis in range(3):
            below[axis] = lo[index[k], axis] - origin[axis]
            above[axis] = hi[index[k], axis] - origin[axis]
        for row in range(windows[k, 0], windows[k, 1]):
            for ray in range(row * width + windows[k, 2], row * width + windows[k, 3]):
                t_near, t_far = -np.inf, np.inf
                for axis in range(3):
                    inverse = 1.0 / directions[ray, axis]
                    t1 = below[axis] * inverse
                    t2 = above[axis] * inverse
                    t1 = np.inf if np.isnan(t1) else t1
                    t2 = np.inf if np.isnan(t2) else t2
                    lower, upper = (t1, t2) if t1 < t2 else (t2, t1)
                    t_near = lower if lower > t_near else t_near
                    t_far = upper if upper < t_far else t_far
                t_near = t_near if t_near > 0.0 else 0.0
                if t_far >= t_near and t_near < depths[ray]:
                    depths[ray] = t_near
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
                  windows: np.ndarray, width: int, origin: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """Depth at which each ray first meets one of the finite cylinders listed in `index`, side or end disc.

    Cylinder i runs from `a[i]` along `unit[i]` for `length[i]` metres with radius `radius[i]`. Cylinder
    `index[k]` is tried with the pixels of `windows[k]` (`pixel_windows`) of an image `width` pixels wide,
    rays row-major.
    """
    depths = np.full(directions.shape[0], np.inf)
    for k in range(len(index)):
        i = index[k]
        u0, u1, u2 = unit[i, 0], unit[i, 1], unit[i, 2]
        rel0, rel1, rel2 = origin[0] - a[i, 0], origin[1] - a[i, 1], origin[2] - a[i, 2]
        r2 = radius[i] * radius[i]
        o_axial = rel0 * u0 + rel1 * u1 + rel2 * u2
        q0, q1, q2 = rel0 - o_axial * u0, rel1 - o_axial * u1, rel2 - o_axial * u2
        qc = (q0 * q0 + q1 * q1 + q2 * q2) - r2
        for row in range(windows[k, 0], windows[k, 1]):
            for ray in range(row * width + windows[k, 2], row * width + windows[k, 3]):
                d0, d1, d2 = directions[ray, 0], directions[ray, 1], directions[ray, 2]
                d_axial = d0 * u0 + d1 * u1 + d2 * u2
                # Side: |(rel + t d) - ((rel + t d).u) u|^2 = r^2, a quadratic in t.
                p0, p1, p2 = d0 - d_axial * u0, d1 - d_axial * u1, d2 - d_axial * u2
                qa = p0 * p0 + p1 * p1 + p2 * p2
                qb = 2 * (p0 * q0 + p1 * q1 + p2 * q2)
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
                if best < depths[ray]:
                    depths[ray] = best
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
