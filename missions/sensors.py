"""Virtual depth camera and point-cloud sensor: what the vehicle would see of a scene from a pose.

The camera is a pinhole looking along the body x axis (forward) with image right along body y and
image down along body z (FRD), so its rays are ``(1, u, v)`` in the body frame and the parameter
``t`` of a hit along such a ray *is* the depth (distance along the optical axis), as a depth
camera reports it. Defaults are FlightBench's (Table 9): 4 m range, 90 x 75 deg field
of view, 30 Hz.

Rays are intersected analytically with cylinders (side and caps) and boxes (slabs), after culling
the primitives that cannot be within range; voxels are traversed cube by cube along each ray to the
exact entry into the first occupied one. All three are compiled (`missions.raycast`). Pixels with no
return within range are NaN.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numba
import numpy as np

from missions.geometry import Scene
from missions.raycast import (
    hit_boxes,
    hit_cylinders,
    march_voxels,
    pixel_windows,
    visible,
)


@dataclass(frozen=True)
class Pose:
    """Vehicle position (NED, m) and attitude (rad): yaw about down, then pitch, then roll (ZYX, as PX4)."""

    position: tuple[float, float, float]
    yaw: float = 0.0
    pitch: float = 0.0
    roll: float = 0.0

    def rotation(self) -> np.ndarray:
        """Body (FRD) to NED rotation matrix."""
        cy, sy = np.cos(self.yaw), np.sin(self.yaw)
        cp, sp = np.cos(self.pitch), np.sin(self.pitch)
        cr, sr = np.cos(self.roll), np.sin(self.roll)
        return np.array([
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ])


@dataclass(frozen=True)
class DepthNoise:
    """Stereo-like depth noise: Gaussian with std ``sigma_at_1m * depth^2``, plus random dropouts.

    Depth error of a stereo camera grows with the square of depth; `dropout` is the probability a
    valid pixel returns nothing (NaN), as on dark or textureless surfaces.
    """

    sigma_at_1m: float = 0.0  # m
    dropout: float = 0.0  # probability per pixel
    seed: int | None = None


@dataclass(frozen=True)
class DepthCamera:
    """A pinhole depth camera; `render(scene, pose)` returns a (height, width) depth image in metres."""

    width: int = 64
    height: int = 48
    hfov_deg: float = 90.0
    vfov_deg: float = 75.0
    max_range: float = 4.0  # m, on depth (not along the ray)
    rate_hz: float = 30.0
    noise: DepthNoise = field(default_factory=DepthNoise)

    def rays(self) -> np.ndarray:
        """Body-frame rays ``(1, u, v)`` of every pixel centre, (height * width, 3), row-major."""
        return _pixel_rays(self.width, self.height, self.hfov_deg, self.vfov_deg)

    def render(self, scene: Scene, pose: Pose, rng: np.random.Generator | None = None) -> np.ndarray:
        """Depth image of `scene` from `pose`; NaN where nothing is within range."""
        origin = np.asarray(pose.position, dtype=float)
        rotation = pose.rotation()
        # Transposed into a C-ordered copy first: numpy multiplies by a transposed view on a slower path (24
        # against 11 us for the 3072 rays, quiet), and the product is the same to the bit.
        directions = self.rays() @ np.ascontiguousarray(rotation.T)
        # The longest ray in metres; a rotation keeps the rays' lengths, so it is the camera's own.
        reach = self.max_range * _longest_ray(self.width, self.height, self.hfov_deg, self.vfov_deg)
        depth = np.full(len(directions), np.inf)
        forward = np.ascontiguousarray(rotation[:, 0])
        u, v = _pixel_tangents(self.width, self.height, self.hfov_deg, self.vfov_deg)
        cylinders, boxes = scene.cylinders, scene.boxes
        if len(cylinders):
            bounds = cylinders.bounding_boxes()
            near = visible(*bounds, origin, forward, reach)
            if len(near):
                unit, length = cylinders.axes
                windows = pixel_windows(*bounds, near, origin, rotation, u, v)
                np.minimum(depth, hit_cylinders(cylinders.a, unit, length, cylinders.radius, near, windows, self.width,
                                                origin, directions), out=depth)
        if len(boxes):
            near = visible(boxes.lo, boxes.hi, origin, forward, reach)
            if len(near):
                windows = pixel_windows(boxes.lo, boxes.hi, near, origin, rotation, u, v)
                np.minimum(depth, hit_boxes(boxes.lo, boxes.hi, near, windows, self.width, origin, directions),
                           out=depth)
        if scene.voxels is not None and len(scene.voxels):
            voxels = scene.voxels
            np.minimum(depth, march_voxels(voxels.occupied, voxels.clear, np.asarray(voxels.origin, dtype=float),
                                           float(voxels.size), origin, directions, self.max_range), out=depth)
        depth[depth > self.max_range] = np.inf
        depth = self._add_noise(depth, rng)
        depth[~np.isfinite(depth)] = np.nan
        return depth.reshape(self.height, self.width)

    def _add_noise(self, depth: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        noise = self.noise
        if noise.sigma_at_1m <= 0 and noise.dropout <= 0:
            return depth
        rng = rng or np.random.default_rng(noise.seed)
        valid = np.isfinite(depth)
        noisy = depth.copy()
        noisy[valid] += rng.normal(0.0, 1.0, valid.sum()) * noise.sigma_at_1m * depth[valid] ** 2
        noisy[valid & (rng.random(len(depth)) < noise.dropout)] = np.inf
        noisy[valid & (noisy <= 0)] = np.inf
        return noisy

    def point_cloud(self, depth: np.ndarray, pose: Pose, frame: str = "world") -> np.ndarray:
        """The valid pixels of a depth image as points, (K, 3): in NED ("world") or the body frame ("body")."""
        flat = depth.ravel()
        if frame == "world":
            return _world_points(self.rays(), np.ascontiguousarray(flat, dtype=float), pose.rotation(),
                                 np.asarray(pose.position, dtype=float))
        if frame != "body":
            raise ValueError(f"frame: expected 'world' or 'body', got {frame!r}")
        valid = np.isfinite(flat)
        return self.rays()[valid] * flat[valid, None]


@numba.njit(cache=True)
def _world_points(rays: np.ndarray, depth: np.ndarray, rotation: np.ndarray, position: np.ndarray) -> np.ndarray:
    # The valid pixels' points in NED, (K, 3): compiled, as the planner asks 30 times a second.
    count = 0
    for k in range(depth.shape[0]):
        if np.isfinite(depth[k]):
            count += 1
    points = np.empty((count, 3))
    row = 0
    for k in range(depth.shape[0]):
        d = depth[k]
        if np.isfinite(d):
            b0, b1, b2 = rays[k, 0] * d, rays[k, 1] * d, rays[k, 2] * d
            for m in range(3):
                points[row, m] = b0 * rotation[m, 0] + b1 * rotation[m, 1] + b2 * rotation[m, 2] + position[m]
            row += 1
    return points


@lru_cache(maxsize=8)
def _pixel_rays(width: int, height: int, hfov_deg: float, vfov_deg: float) -> np.ndarray:
    u = np.tan(np.radians(hfov_deg) / 2) * ((np.arange(width) + 0.5) / width * 2 - 1)
    v = np.tan(np.radians(vfov_deg) / 2) * ((np.arange(height) + 0.5) / height * 2 - 1)
    uu, vv = np.meshgrid(u, v)
    rays = np.column_stack([np.ones(uu.size), uu.ravel(), vv.ravel()])
    rays.flags.writeable = False  # shared between calls
    return rays


@lru_cache(maxsize=8)
def _pixel_tangents(width: int, height: int, hfov_deg: float, vfov_deg: float) -> tuple[np.ndarray, np.ndarray]:
    """The pixel rays' u of each column and v of each row, ascending (`missions.raycast.pixel_windows`)."""
    rays = _pixel_rays(width, height, hfov_deg, vfov_deg)
    return np.ascontiguousarray(rays[:width, 1]), np.ascontiguousarray(rays[::width, 2])


@lru_cache(maxsize=8)
def _longest_ray(width: int, height: int, hfov_deg: float, vfov_deg: float) -> float:
    """Length of the longest pixel ray ``(1, u, v)`` (a corner's)."""
    return float(np.linalg.norm(_pixel_rays(width, height, hfov_deg, vfov_deg), axis=1).max())
