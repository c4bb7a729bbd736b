"""FlightBench's task-difficulty metrics (Sec. 3.1.1, Eqs. 1-4) on a guide path through a scene.

* Traversability Obstruction, TO (Eqs. 1-2): cover the guide path with a chain of free spheres
  (a flight corridor); TO = (1 / N_T) * sum over the smaller half of the radii of R / r_i. Narrow
  corridors give small spheres and a high TO.
* View Occlusion, VO (Eq. 3): at samples along the path, looking along it, split the field of view
  into M rings from the centre out; VO = mean over samples of sum_j m_j * R / s_ij, s_ij the distance
  to the nearest obstacle point in ring j. Obstacles close to the centre of the view weigh most.
* Angle Over Length, AOL (Eq. 4): (1 / L) * sum_i (exp(theta_i / (pi / 6)) - 1) over the turning
  angles theta_i of the path; zero for a straight path, steeply higher for sharp turns.

Parameters are the FlightBench authors' defaults (FlightBench, Sec. 3.1.1; docs/design.md): R = 4 m, drone radius 0.15 m, K = 40
candidates, k1..k4 = 0.7, 0.1, 0.35, 0.1, M = 4 rings weighted 0.55, 0.3, 0.1, 0.05, half-FOV 36 deg.

Choices the paper leaves open, made here: sphere radii are capped at R (nothing beyond the sensing
range counts as space); candidate centres are drawn from an isotropic Gaussian around p_hi with a
standard deviation of half the previous radius, and must contain p_hi so that the corridor stays
connected; p_hi is the farthest point of the path still inside the newest sphere; a ring with no
obstacle within R contributes nothing to VO; VO samples are 0.5 m apart.

The guide path (FlightBench uses a topological path from a roadmap) is the grid-search path of
`missions.paths`, computed with the largest clearance the scene allows among 1 m, 0.6 m, 0.3 m and
the drone radius. A path that grazes obstacles at exactly the drone radius cannot be covered by
free spheres of any size (Eq. 1's radius is the obstacle distance minus r_d), so TO would measure
the grazing, not the space around the route.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass

import numpy as np
from scipy.spatial import cKDTree

from missions.geometry import Scene, polyline_length, sample_polyline
from missions.paths import NoPathError, guide_path

SENSING_RANGE = 4.0  # m, R
DRONE_RADIUS = 0.15  # m, r_d
CANDIDATES = 40  # K
SCORE_WEIGHTS = (0.7, 0.1, 0.35, 0.1)  # k1..k4
RING_WEIGHTS = (0.55, 0.3, 0.1, 0.05)  # m_j, centre outwards
HALF_FOV_DEG = 36.0
VO_STEP = 0.5  # m between VO samples
PATH_STEP = 0.05  # m, resolution at which the corridor follows the path
SURFACE_SPACING = 0.1  # m, obstacle point cloud for VO
GUIDE_CLEARANCES = (1.0, 0.6, 0.3)  # m, tried in turn before the drone radius itself


@dataclass(frozen=True)
class Difficulty:
    """TO, VO and AOL of one scene, with the guide path they were computed on."""

    to: float
    vo: float
    aol: float
    path_length: float  # m
    spheres: int  # N_T

    def as_row(self) -> dict[str, float]:
        """The numbers, for a results table."""
        return asdict(self)


def sphere_volume(r: np.ndarray | float) -> np.ndarray | float:
    """Volume of a ball of radius r."""
    return 4.0 / 3.0 * math.pi * np.asarray(r) ** 3


def lens_volume(r1: float, r2: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Volume of the intersection of balls of radii r1 and r2 whose centres are d apart."""
    r2, d = np.asarray(r2, dtype=float), np.asarray(d, dtype=float)
    small = np.minimum(r1, r2)
    volume = np.where(d >= r1 + r2, 0.0, sphere_volume(small))  # disjoint, or (for now) nested
    partial = (d < r1 + r2) & (d > np.abs(r1 - r2))
    with np.errstate(divide="ignore", invalid="ignore"):
        lens = math.pi * (r1 + r2 - d) ** 2 * (d**2 + 2 * d * (r1 + r2) - 3 * (r1 - r2) ** 2) / (12 * d)
    return np.where(partial, lens, volume)


def corridor(scene: Scene, path: np.ndarray, *, sensing_range: float = SENSING_RANGE,
             drone_radius: float = DRONE_RADIUS, candidates: int = CANDIDATES,
             weights: tuple[float, float, float, float] = SCORE_WEIGHTS, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The sphere corridor of Eq. 1 along `path`: (centres (N_T, 3), radii (N_T,))."""
    k1, k2, k3, k4 = weights
    rng = np.random.default_rng(seed)
    dense = sample_polyline(path, PATH_STEP)

    def radius(points: np.ndarray) -> np.ndarray:
        return np.minimum(scene.distance(points) - drone_radius, sensing_range)

    centres = [dense[0]]
    radii = [max(float(radius(dense[0])[0]), PATH_STEP)]
    reached = _last_inside(dense, 0, centres[0], radii[0])
    while reached < len(dense) - 1:
        previous, previous_r = centres[-1], radii[-1]
        p_hi = dense[reached]
        z = p_hi - previous
        z = z / np.linalg.norm(z) if np.linalg.norm(z) > 1e-9 else _unit(dense[reached + 1] - p_hi)
        cand = p_hi + rng.normal(0.0, 0.5 * previous_r, size=(candidates, 3))
        r = radius(cand)
        d = cand - p_hi
        along = d @ z
        lateral = np.linalg.norm(d - along[:, None] * z, axis=1)
        score = (k1 * sphere_volume(r) + k2 * lens_volume(previous_r, r, np.linalg.norm(cand - previous, axis=1))
                 - k3 * along - k4 * lateral)
        score[(r <= 0) | (np.linalg.norm(d, axis=1) >= r)] = -np.inf
        if np.isfinite(score.max()):
            best_centre, best_r = cand[np.argmax(score)], float(r[np.argmax(score)])
        else:  # no candidate contains p_hi: fall back to the sphere centred on it
            best_centre, best_r = p_hi, max(float(radius(p_hi)[0]), PATH_STEP)
        centres.append(best_centre)
        radii.append(best_r)
        # Always move on by at least one path sample, so a path that grazes an obstacle still ends.
        reached = max(_last_inside(dense, reached, best_centre, best_r), reached + 1)
    return np.array(centres), np.array(radii)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / max(np.linalg.norm(v), 1e-12)


def _last_inside(dense: np.ndarray, first: int, centre: np.ndarray, r: float) -> int:
    """Index of the last point of the run of path points from `first` that lies inside the sphere."""
    inside = np.linalg.norm(dense[first:] - centre, axis=1) <= r
    if not inside[0]:
        return first
    outside = np.flatnonzero(~inside)
    return first + (outside[0] - 1 if len(outside) else len(inside) - 1)


def traversability_obstruction(radii: np.ndarray, sensing_range: float = SENSING_RANGE) -> float:
    """Eq. 2: (1 / N_T) * sum of R / r_i over the floor(N_T / 2) smallest radii."""
    r = np.sort(np.asarray(radii, dtype=float))
    return float((sensing_range / r[: len(r) // 2]).sum() / len(r))


def view_occlusion(scene: Scene, path: np.ndarray, *, sensing_range: float = SENSING_RANGE,
                   half_fov_deg: float = HALF_FOV_DEG, ring_weights: tuple[float, ...] = RING_WEIGHTS,
                   step: float = VO_STEP, cloud: np.ndarray | None = None) -> float:
    """Eq. 3 on samples every `step` metres along `path`, looking along the path."""
    cloud = scene.surface_points(SURFACE_SPACING) if cloud is None else cloud
    samples, directions = _samples_with_heading(path, step)
    if not len(cloud):
        return 0.0
    tree = cKDTree(cloud)
    rings = len(ring_weights)
    ring_width = math.radians(half_fov_deg) / rings
    total = 0.0
    for q, v, near in zip(samples, directions, tree.query_ball_point(samples, sensing_range)):
        if not near:
            continue
        offsets = cloud[near] - q
        distance = np.linalg.norm(offsets, axis=1)
        angle = np.arccos(np.clip(offsets @ v / np.maximum(distance, 1e-12), -1.0, 1.0))
        ring = (angle / ring_width).astype(int)
        for j, m in enumerate(ring_weights):
            in_ring = ring == j
            if in_ring.any():
                total += m * sensing_range / max(distance[in_ring].min(), 1e-6)
    return total / len(samples)


def _samples_with_heading(path: np.ndarray, step: float) -> tuple[np.ndarray, np.ndarray]:
    """Points every `step` metres along a polyline (its end excluded) and the unit heading of their segment."""
    points, headings = [], []
    for a, b in zip(path[:-1], path[1:]):
        length = np.linalg.norm(b - a)
        if length < 1e-9:
            continue
        t = np.arange(0.0, length, step)
        points.append(a + np.outer(t, (b - a) / length))
        headings.append(np.broadcast_to((b - a) / length, (len(t), 3)))
    return np.vstack(points), np.vstack(headings)


def turning_angles(path: np.ndarray) -> np.ndarray:
    """Angle (rad, 0..pi) between consecutive segments at each interior vertex; zero-length segments ignored."""
    segments = np.diff(np.asarray(path, dtype=float), axis=0)
    segments = segments[np.linalg.norm(segments, axis=1) > 1e-9]
    u = segments / np.linalg.norm(segments, axis=1, keepdims=True)
    return np.arccos(np.clip(np.einsum("ij,ij->i", u[:-1], u[1:]), -1.0, 1.0))


def angle_over_length(path: np.ndarray) -> float:
    """Eq. 4: (1 / L) * sum_i (exp(theta_i / (pi / 6)) - 1)."""
    theta = turning_angles(path)
    return float(np.sum(np.exp(theta / (math.pi / 6)) - 1.0) / polyline_length(path))


def roomy_guide_path(scene: Scene, drone_radius: float = DRONE_RADIUS,
                     known: Mapping[float, np.ndarray | None] | None = None) -> np.ndarray:
    """The guide path with the largest clearance in `GUIDE_CLEARANCES` (or the drone radius) that exists.
    `known`: guide paths the caller has already searched for, by clearance (None: there is none), not searched again."""
    known = known or {}
    for clearance in [c for c in GUIDE_CLEARANCES if c > drone_radius] + [drone_radius]:
        if clearance in known:
            if known[clearance] is not None:
                return known[clearance]
            continue
        try:
            return guide_path(scene, clearance)
        except NoPathError:
            continue
    raise NoPathError(f"{scene.name} seed {scene.seed}: no path even with the drone radius {drone_radius} m")


def scene_difficulty(scene: Scene, drone_radius: float = DRONE_RADIUS, path: np.ndarray | None = None) -> Difficulty:
    """TO, VO and AOL of a scene on a path (by default `roomy_guide_path`)."""
    path = roomy_guide_path(scene, drone_radius) if path is None else path
    _, radii = corridor(scene, path, drone_radius=drone_radius)
    return Difficulty(
        to=traversability_obstruction(radii),
        vo=view_occlusion(scene, path),
        aol=angle_over_length(path),
        path_length=polyline_length(path),
        spheres=len(radii),
    )
