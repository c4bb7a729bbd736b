"""Random Perlin noise: voxel clutter thresholded from 3D gradient noise (FLYINGTRUST, Sec. III-B).

FLYINGTRUST: 40 m wide by 50 m long, flight ceiling 4 m, noise frequency 0.05, voxel fill rate
0.03. These are the parameters of the Perlin map generator common in quadrotor planning work
(mockamap, used with Fast-Planner and EGO-Planner): noise is sampled at voxel index times the
frequency, and the `fill` fraction of voxels with the highest noise become occupied. The voxel
edge is not given in the paper; 0.2 m is used here, so the noise has a 4 m period and the clutter
comes as irregular blobs about a metre or two across.
"""

from __future__ import annotations

import numpy as np

from missions.geometry import Scene, Voxels
from missions.scenes.base import end_points, flight_volume, make_scene

LENGTH, WIDTH, CEILING = 50.0, 40.0, 4.0
FREQUENCY = 0.05  # cycles per voxel
FILL = 0.03  # fraction of voxels occupied
VOXEL = 0.2  # m
START_CLEAR = 1.5  # m around start and goal kept empty


def perlin_noise(rng: np.random.Generator, x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Classic 3D gradient (Perlin) noise on the grid spanned by 1D coordinate arrays x, y, z.

    Each integer lattice point gets a random unit gradient; the value at a point is the smooth
    (quintic-faded) blend of the eight corner gradients dotted with the offsets to the point.
    Returns an array of shape (len(x), len(y), len(z)).
    """
    axes = [np.asarray(c, dtype=float) for c in (x, y, z)]
    corner = [np.floor(c).astype(int) for c in axes]
    frac = [(c - f).astype(np.float32) for c, f in zip(axes, corner)]
    base = [f - f.min() for f in corner]
    gradients = rng.normal(size=(base[0].max() + 2, base[1].max() + 2, base[2].max() + 2, 3)).astype(np.float32)
    gradients /= np.linalg.norm(gradients, axis=-1, keepdims=True)
    fade = [t * t * t * (t * (t * 6 - 15) + 10) for t in frac]
    total = np.zeros((len(axes[0]), len(axes[1]), len(axes[2])), dtype=np.float32)
    for dx in (0, 1):
        for dy in (0, 1):
            for dz in (0, 1):
                g = gradients[np.ix_(base[0] + dx, base[1] + dy, base[2] + dz)]
                dot = (g[..., 0] * (frac[0] - dx)[:, None, None] + g[..., 1] * (frac[1] - dy)[None, :, None]
                       + g[..., 2] * (frac[2] - dz)[None, None, :])
                weight = ((fade[0] if dx else 1 - fade[0])[:, None, None] * (fade[1] if dy else 1 - fade[1])[None, :, None]
                          * (fade[2] if dz else 1 - fade[2])[None, None, :])
                total += weight * dot
    return total


def build_perlin(rng: np.random.Generator, config: int, clearance: float) -> Scene:
    """Occupy the top FILL fraction of noise values over the flight volume; clear start and goal."""
    start, goal = end_points(LENGTH, CEILING / 2)
    bounds = flight_volume(LENGTH, WIDTH, CEILING)
    origin = bounds[0] + VOXEL / 2
    shape = np.floor((bounds[1] - bounds[0]) / VOXEL).astype(int)
    offset = rng.uniform(0, 1000, size=3)  # a fresh patch of noise per attempt
    index = [np.arange(n) for n in shape]
    noise = perlin_noise(rng, *(i * FREQUENCY + o for i, o in zip(index, offset)))
    occupied = noise > np.quantile(noise, 1.0 - FILL)
    centre_axes = [origin[a] + index[a] * VOXEL for a in range(3)]
    for p in (start, goal):
        squared = sum(np.square(c - p[a]).reshape([-1 if b == a else 1 for b in range(3)])
                      for a, c in enumerate(centre_axes))
        occupied &= squared > START_CLEAR**2
    return make_scene("perlin", config, bounds, start, goal, voxels=Voxels(origin, VOXEL, occupied),
                      frequency=FREQUENCY, fill=FILL, voxel_m=VOXEL, occupied_voxels=int(occupied.sum()),
                      size_m=[LENGTH, WIDTH], ceiling_m=CEILING)
