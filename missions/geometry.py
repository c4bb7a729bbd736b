"""Scene geometry: obstacle primitives in local NED metres and the distance queries every target shares.

A scene is a flight volume (a rectangle of ground, from the ground up to a flight ceiling) holding
obstacles of three kinds, each stored as arrays:

* `Cylinders`: finite cylinders between two axis end points, any orientation (tree trunks are
  vertical, FLYINGTRUST's random-angle cylinders are tilted);
* `Boxes`: axis-aligned boxes (buildings, walls, overhangs);
* `Voxels`: an occupancy grid of cubes (Perlin-noise clutter).

Distances are exact signed distances to the obstacle surface (negative inside), computed
analytically for cylinders and boxes, in compiled loops over points and primitives (the trial monitor
asks for one point at each telemetry sample, where numpy's per-call overhead was most of the cost).
For voxels the distance is exact to the nearest few cubes, found with a k-d tree over cube centres
(see `Voxels.distance`).

Frames (docs/design.md, conventions): NED, so ``down = -altitude``; the ground is ``down = 0``. The ground and the
ceiling are not obstacles here: they bound the flight volume (`Scene.bounds_min` / `bounds_max`),
and the trial monitor treats ground contact separately from collisions because take-off and
landing touch it on purpose.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Sequence

import numba
import numpy as np
from scipy.ndimage import distance_transform_cdt
from scipy.spatial import cKDTree

# Edge (m) of the coarse grid of distance lower bounds that lets `Scene.collides` skip exact work.
FLOOR_CELL = 0.5


def _as_points(points: np.ndarray) -> np.ndarray:
    array = np.asarray(points, dtype=float)
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2 or array.shape[1] != 3:
        raise ValueError(f"points: expected shape (N, 3) or (3,), got {np.shape(points)}")
    return array


@numba.njit(cache=True)
def _nearer(best: float, distance: float) -> float:
    """The smaller distance, and NaN once either is NaN (a point with a NaN coordinate has no distance)."""
    return best if best != best or distance >= best else distance


@numba.njit(cache=True)
def _cylinder_distances(points: np.ndarray, a: np.ndarray, unit: np.ndarray, length: np.ndarray,
                        radius: np.ndarray) -> np.ndarray:
    """Signed distance from each point to the nearest capped cylinder; NaN for a point with a NaN."""
    out = np.empty(points.shape[0])
    for n in range(points.shape[0]):
        best = np.inf
        for i in range(a.shape[0]):
            r0, r1, r2 = points[n, 0] - a[i, 0], points[n, 1] - a[i, 1], points[n, 2] - a[i, 2]
            along = r0 * unit[i, 0] + r1 * unit[i, 1] + r2 * unit[i, 2]
            squared = r0 * r0 + r1 * r1 + r2 * r2 - along * along
            radial = math.sqrt(squared if squared > 0.0 else 0.0)
            # Outside in the radial and/or axial sense, or inside (the larger of the two, negative).
            d_radial = radial - radius[i]
            d_axial = max(-along, along - length[i])
            distance = math.hypot(max(d_radial, 0.0), max(d_axial, 0.0)) + min(max(d_radial, d_axial), 0.0)
            best = _nearer(best, distance)
        out[n] = best
    return out


@numba.njit(cache=True)
def _box_distances(points: np.ndarray, centre: np.ndarray, half: np.ndarray) -> np.ndarray:
    """Signed distance from each point to the nearest axis-aligned box; NaN for a point with a NaN."""
    out = np.empty(points.shape[0])
    for n in range(points.shape[0]):
        best = np.inf
        for i in range(centre.shape[0]):
            q0 = abs(points[n, 0] - centre[i, 0]) - half[i, 0]
            q1 = abs(points[n, 1] - centre[i, 1]) - half[i, 1]
            q2 = abs(points[n, 2] - centre[i, 2]) - half[i, 2]
            o0, o1, o2 = max(q0, 0.0), max(q1, 0.0), max(q2, 0.0)
            distance = math.sqrt(o0 * o0 + o1 * o1 + o2 * o2) + min(max(q0, q1, q2), 0.0)
            best = _nearer(best, distance)
        out[n] = best
    return out


@dataclass(frozen=True, eq=False)
class Cylinders:
    """Finite cylinders: axis from `a[i]` to `b[i]` (NED, m), radius `radius[i]` (m), flat caps."""

    a: np.ndarray
    b: np.ndarray
    radius: np.ndarray

    @staticmethod
    def empty() -> Cylinders:
        """No cylinders."""
        return Cylinders(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0))

    def __len__(self) -> int:
        return len(self.radius)

    @cached_property
    def axes(self) -> tuple[np.ndarray, np.ndarray]:
        """Unit vectors from each `a` towards its `b`, (P, 3), and the lengths (m), (P,)."""
        axis = self.b - self.a
        length = np.linalg.norm(axis, axis=1)
        return axis / length[:, None], length

    def subset(self, index: np.ndarray) -> Cylinders:
        """The cylinders selected by a boolean mask or index array."""
        return Cylinders(self.a[index], self.b[index], self.radius[index])

    def distance(self, points: np.ndarray) -> np.ndarray:
        """Signed distance (m) from each point to the nearest cylinder; +inf when there are none."""
        points = _as_points(points)
        if not len(self):
            return np.full(len(points), np.inf)
        unit, length = self.axes
        return _cylinder_distances(points, np.ascontiguousarray(self.a, dtype=float), unit, length,
                                   np.asarray(self.radius, dtype=float))

    def bounding_boxes(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-cylinder axis-aligned bounds (lo, hi), each (P, 3)."""
        return self._bounds

    @cached_property
    def _bounds(self) -> tuple[np.ndarray, np.ndarray]:
        # The depth camera asks at every frame.
        unit, _ = self.axes
        # A disc of radius r perpendicular to unit axis u reaches r * sqrt(1 - u_k^2) along axis k.
        reach = self.radius[:, None] * np.sqrt(np.clip(1.0 - unit**2, 0.0, 1.0))
        return np.minimum(self.a, self.b) - reach, np.maximum(self.a, self.b) + reach

    def surface_points(self, spacing: float) -> np.ndarray:
        """Points on every cylinder's side and caps, about `spacing` apart."""
        unit, length = self.axes
        clouds = []
        for a, u, h, r in zip(self.a, unit, length, self.radius):
            e1, e2 = perpendicular_basis(u)
            around = np.linspace(0, 2 * np.pi, max(int(np.ceil(2 * np.pi * r / spacing)), 6), endpoint=False)
            rings = np.linspace(0.0, h, max(int(np.ceil(h / spacing)), 1) + 1)
            circle = np.cos(around)[:, None] * e1 + np.sin(around)[:, None] * e2
            side = a + rings[:, None, None] * u + r * circle[None, :, :]
            caps = [a + rr * circle for rr in np.arange(spacing, r, spacing)] + [a[None]]
            caps += [c + h * u for c in caps]
            clouds += [side.reshape(-1, 3), *caps]
        return np.vstack(clouds) if clouds else np.zeros((0, 3))


def perpendicular_basis(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors perpendicular to unit vector `u` and to each other."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(u[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = np.cross(u, helper)
    e1 /= np.linalg.norm(e1)
    return e1, np.cross(u, e1)


@dataclass(frozen=True, eq=False)
class Boxes:
    """Axis-aligned boxes from corner `lo[i]` to corner `hi[i]` (NED, m)."""

    lo: np.ndarray
    hi: np.ndarray

    @staticmethod
    def empty() -> Boxes:
        """No boxes."""
        return Boxes(np.zeros((0, 3)), np.zeros((0, 3)))

    def __len__(self) -> int:
        return len(self.lo)

    def subset(self, index: np.ndarray) -> Boxes:
        """The boxes selected by a boolean mask or index array."""
        return Boxes(self.lo[index], self.hi[index])

    def distance(self, points: np.ndarray) -> np.ndarray:
        """Signed distance (m) from each point to the nearest box; +inf when there are none."""
        points = _as_points(points)
        if not len(self):
            return np.full(len(points), np.inf)
        centre, half = self._centres_and_halves
        return _box_distances(points, centre, half)

    @cached_property
    def _centres_and_halves(self) -> tuple[np.ndarray, np.ndarray]:
        return 0.5 * (self.lo + self.hi), 0.5 * (self.hi - self.lo)

    def bounding_boxes(self) -> tuple[np.ndarray, np.ndarray]:
        """The boxes themselves, as (lo, hi)."""
        return self.lo, self.hi

    def surface_points(self, spacing: float) -> np.ndarray:
        """Points on every box face, about `spacing` apart (edges included)."""
        clouds = []
        for lo, hi in zip(self.lo, self.hi):
            axes = [np.linspace(lo[k], hi[k], max(int(np.ceil((hi[k] - lo[k]) / spacing)), 1) + 1) for k in range(3)]
            for k in range(3):
                i, j = [m for m in range(3) if m != k]
                gi, gj = np.meshgrid(axes[i], axes[j], indexing="ij")
                for value in (lo[k], hi[k]):
                    face = np.empty((gi.size, 3))
                    face[:, i], face[:, j], face[:, k] = gi.ravel(), gj.ravel(), value
                    clouds.append(face)
        return np.vstack(clouds) if clouds else np.zeros((0, 3))


# Neighbours by face, used to find the exposed faces of a voxel grid.
_FACE_OFFSETS = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]])


@dataclass(frozen=True, eq=False)
class Voxels:
    """Cubes of edge `size` (m); voxel (i, j, k) has its centre at ``origin + (i, j, k) * size``."""

    origin: np.ndarray
    size: float
    occupied: np.ndarray  # bool (nx, ny, nz)

    def __len__(self) -> int:
        return len(self.centres)

    @cached_property
    def clear(self) -> np.ndarray:
        """Each cube's chessboard distance, in cubes, to the nearest occupied one (0 for an occupied cube):
        the cubes within that distance minus one are all empty, which lets a ray cross them at once."""
        if not self.occupied.any():
            return np.full(self.occupied.shape, max(self.occupied.shape), dtype=np.int64)
        return distance_transform_cdt(~self.occupied, metric="chessboard").astype(np.int64)

    @cached_property
    def centres(self) -> np.ndarray:
        """Centres of the occupied voxels, (V, 3)."""
        return self.origin + np.argwhere(self.occupied) * self.size

    @cached_property
    def _tree(self) -> cKDTree:
        return cKDTree(self.centres)

    # Cubes whose centres are nearest are, in practice, the nearest cubes; checking a few of them
    # exactly leaves an over-estimate of at most (sqrt(3) - 1) * size / 2 in the rare corner case
    # where a farther centre owns the nearer face.
    NEAREST_CHECKED = 4

    def distance(self, points: np.ndarray) -> np.ndarray:
        """Signed distance (m) from each point to the nearest occupied cube; +inf when there are none."""
        points = _as_points(points)
        if not len(self):
            return np.full(len(points), np.inf)
        k = min(self.NEAREST_CHECKED, len(self))
        _, index = self._tree.query(points, k=k)
        index = index.reshape(len(points), k)
        q = np.abs(points[:, None, :] - self.centres[index]) - 0.5 * self.size
        outside = np.linalg.norm(np.maximum(q, 0.0), axis=2)
        inside = np.minimum(q.max(axis=2), 0.0)
        return (outside + inside).min(axis=1)

    def bounding_boxes(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-voxel bounds (lo, hi)."""
        return self.centres - 0.5 * self.size, self.centres + 0.5 * self.size

    def exposed_faces(self) -> tuple[np.ndarray, np.ndarray]:
        """Faces between an occupied voxel and free space: (face centres (F, 3), outward unit normals (F, 3))."""
        padded = np.pad(self.occupied, 1)
        inner = padded[1:-1, 1:-1, 1:-1]
        centres, normals = [], []
        for offset in _FACE_OFFSETS:
            shifted = np.roll(padded, -offset, axis=(0, 1, 2))[1:-1, 1:-1, 1:-1]
            cells = np.argwhere(inner & ~shifted)
            centres.append(self.origin + (cells + 0.5 * offset) * self.size)
            normals.append(np.broadcast_to(offset.astype(float), (len(cells), 3)))
        return np.vstack(centres), np.vstack(normals)

    def surface_points(self, spacing: float) -> np.ndarray:
        """Points on the exposed cube faces, about `spacing` apart."""
        centres, normals = self.exposed_faces()
        n = max(int(round(self.size / spacing)), 1)
        steps = (np.arange(n) + 0.5) / n - 0.5  # offsets across a face, in voxel units
        clouds = []
        for axis in range(3):
            on_axis = normals[:, axis] != 0
            i, j = [m for m in range(3) if m != axis]
            gi, gj = np.meshgrid(steps, steps, indexing="ij")
            grid = np.zeros((gi.size, 3))
            grid[:, i], grid[:, j] = gi.ravel() * self.size, gj.ravel() * self.size
            clouds.append((centres[on_axis][:, None, :] + grid[None]).reshape(-1, 3))
        return np.vstack(clouds)


@dataclass(frozen=True, eq=False)
class Scene:
    """A flight volume with obstacles, a start and a goal, all in local NED metres.

    `waypoints` are intermediate points a test must visit in order (FlightBench's Multi-Waypoint
    tests); the straight reference path is start -> waypoints -> goal. `parameters` records how the
    generator made the scene (densities, counts...), for reports and for `hil scene show`.
    """

    name: str
    seed: int
    bounds_min: np.ndarray  # (north, east, down) corner; down = -ceiling
    bounds_max: np.ndarray  # (north, east, down) corner; down = 0 (the ground)
    start: np.ndarray
    goal: np.ndarray
    cylinders: Cylinders = field(default_factory=Cylinders.empty)
    boxes: Boxes = field(default_factory=Boxes.empty)
    voxels: Voxels | None = None
    waypoints: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    parameters: dict = field(default_factory=dict)

    @property
    def ceiling(self) -> float:
        """Highest allowed altitude (m above the ground)."""
        return float(-self.bounds_min[2])

    @property
    def groups(self) -> list:
        """The non-empty obstacle groups."""
        groups = [g for g in (self.cylinders, self.boxes) if len(g)]
        if self.voxels is not None and len(self.voxels):
            groups.append(self.voxels)
        return groups

    def reference_path(self) -> np.ndarray:
        """The straight-line reference: start, waypoints in order, goal, as a (K, 3) polyline."""
        return np.vstack([self.start, self.waypoints, self.goal])

    def distance(self, points: np.ndarray) -> np.ndarray:
        """Signed distance (m) from each point to the nearest obstacle surface (+inf in an empty scene)."""
        points = _as_points(points)
        result = np.full(len(points), np.inf)
        for group in self.groups:
            np.minimum(result, group.distance(points), out=result)
        return result

    def collides(self, points: np.ndarray, radius: float) -> np.ndarray:
        """Whether a sphere of `radius` (the vehicle) at each point touches an obstacle.

        Exact: points whose grid cell is provably clear (`_distance_floor`) skip the exact distance,
        which is computed only for the rest, so the common case of open space costs a table lookup.
        """
        points = _as_points(points)
        if len(points) == 1:
            # The monitor's per-sample call: array arithmetic on one point is all per-call overhead.
            return np.array([self._collides_one(points[0].tolist(), radius)])
        origin, floor = self._distance_floor
        index = np.floor((points - origin) / FLOOR_CELL).astype(int)
        inside = np.all((index >= 0) & (index < floor.shape), axis=1)
        maybe = ~inside
        cells = index[inside]
        maybe[inside] = floor[cells[:, 0], cells[:, 1], cells[:, 2]] < radius
        hit = np.zeros(len(points), dtype=bool)
        if maybe.any():
            hit[maybe] = self.distance(points[maybe]) < radius
        return hit

    def _collides_one(self, point: list[float], radius: float) -> bool:
        if self.distance_floor(point) >= radius:
            return False
        return bool(self.distance(np.array([point]))[0] < radius)

    def distance_floor(self, point: Sequence[float]) -> float:
        """A lower bound of the obstacle distance at one point (m), from a table: -inf outside the flight
        volume. For a caller that needs the exact distance only when it could be small."""
        origin, floor = self._distance_floor
        shape = floor.shape
        x, y, z = point[0], point[1], point[2]
        if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
            return -math.inf
        i = math.floor((x - float(origin[0])) / FLOOR_CELL)
        j = math.floor((y - float(origin[1])) / FLOOR_CELL)
        k = math.floor((z - float(origin[2])) / FLOOR_CELL)
        if 0 <= i < shape[0] and 0 <= j < shape[1] and 0 <= k < shape[2]:
            return floor.item(i, j, k)
        return -math.inf

    @cached_property
    def _distance_floor(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower bounds of the obstacle distance over FLOOR_CELL cubes covering the flight volume.

        The distance changes by at most 1 m per metre moved, so no point of a cube is closer to an
        obstacle than the cube's centre minus half the cube's diagonal.
        """
        shape = np.maximum(np.ceil((self.bounds_max - self.bounds_min) / FLOOR_CELL).astype(int), 1)
        axes = [self.bounds_min[k] + (np.arange(shape[k]) + 0.5) * FLOOR_CELL for k in range(3)]
        centres = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
        floor = self.distance(centres) - np.sqrt(3.0) / 2 * FLOOR_CELL
        return self.bounds_min.astype(float), floor.reshape(shape)

    def path_clearance(self, path: np.ndarray, step: float = 0.05) -> float:
        """Smallest obstacle distance along a polyline, sampled every `step` metres."""
        return float(self.distance(sample_polyline(path, step)).min())

    def in_bounds(self, points: np.ndarray) -> np.ndarray:
        """Whether each point lies inside the flight volume (ground to ceiling, inside the rectangle)."""
        points = _as_points(points)
        return np.all((points >= self.bounds_min) & (points <= self.bounds_max), axis=1)

    def surface_points(self, spacing: float = 0.1) -> np.ndarray:
        """A point cloud of every obstacle surface, about `spacing` apart (for exports and VO)."""
        clouds = [group.surface_points(spacing) for group in self.groups]
        return np.vstack(clouds) if clouds else np.zeros((0, 3))

    @property
    def is_prismatic(self) -> bool:
        """True when every obstacle is vertical and spans the whole flight band (ground to ceiling).

        Then free space is the same at every altitude and path search can be done in the plane.
        """
        if self.voxels is not None and len(self.voxels):
            return False
        lo = np.vstack([g.bounding_boxes()[0] for g in self.groups]) if self.groups else np.zeros((0, 3))
        hi = np.vstack([g.bounding_boxes()[1] for g in self.groups]) if self.groups else np.zeros((0, 3))
        spans = np.all((lo[:, 2] <= self.bounds_min[2]) & (hi[:, 2] >= self.bounds_max[2]))
        if len(self.cylinders):
            unit, _ = self.cylinders.axes
            spans = spans and bool(np.all(np.abs(unit[:, 2]) > 1 - 1e-9))
        return bool(spans)


def sample_polyline(path: np.ndarray, step: float) -> np.ndarray:
    """Points along a polyline no more than `step` apart, vertices included."""
    path = _as_points(path)
    pieces = [path[:1]]
    for a, b in zip(path[:-1], path[1:]):
        n = max(int(np.ceil(np.linalg.norm(b - a) / step)), 1)
        pieces.append(a + (b - a) * (np.arange(1, n + 1) / n)[:, None])
    return np.vstack(pieces)


def polyline_length(path: np.ndarray) -> float:
    """Total length (m) of a polyline."""
    return float(np.linalg.norm(np.diff(_as_points(path), axis=0), axis=1).sum())
