"""Forest: upright tree trunks scattered at a given density (FLYINGTRUST, Sec. III-B).

FLYINGTRUST: 40 m wide by 60 m long, flight ceiling 3 m, tree density 1/49 (one tree per 49 m^2,
so about 49 trees), ten random configurations. Trunk radius and height are not given in the paper;
trunks here are 0.2-0.4 m in radius (ordinary mature trunks) and reach 2 m above the ceiling so
the vehicle cannot fly over them.
"""

from __future__ import annotations

import numpy as np

from missions.geometry import Scene
from missions.scenes.base import (
    end_points,
    flight_volume,
    make_scene,
    scatter,
    vertical_cylinders,
)

LENGTH, WIDTH, CEILING = 60.0, 40.0, 3.0
DENSITY = 1.0 / 49.0  # trees per m^2
TRUNK_RADIUS = (0.2, 0.4)  # m
MIN_TRUNK_GAP = 1.5  # m between trunk centres: a forest, not a thicket
START_CLEAR = 2.0  # m around start and goal with no trunk


def build_forest(rng: np.random.Generator, config: int, clearance: float, *, name: str = "forest",
                 density: float = DENSITY, length: float = LENGTH, width: float = WIDTH,
                 ceiling: float = CEILING, altitude: float | None = None) -> Scene:
    """Trunks at `density` per m^2, placed uniformly at random (with a minimum spacing)."""
    altitude = ceiling / 2 if altitude is None else altitude
    start, goal = end_points(length, altitude)
    bounds = flight_volume(length, width, ceiling)
    count = int(round(length * width * density))
    keep_out = [(start[:2], START_CLEAR), (goal[:2], START_CLEAR)]
    xy = scatter(rng, count, bounds[0][:2], bounds[1][:2], MIN_TRUNK_GAP, keep_out)
    radius = rng.uniform(*TRUNK_RADIUS, size=len(xy))
    trunks = vertical_cylinders(xy[:, 0], xy[:, 1], radius, ceiling + 2.0)
    return make_scene(name, config, bounds, start, goal, cylinders=trunks, density=density,
                      trees=len(xy), size_m=[length, width], ceiling_m=ceiling)
