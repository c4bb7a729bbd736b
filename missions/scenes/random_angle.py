"""Random-angle cylinders: tilted cylinders in every orientation (FLYINGTRUST, Sec. III-B).

FLYINGTRUST: 40 m wide by 60 m long, flight ceiling 3 m, density 1/36, radius 0.25-0.5 m, tilt
0-180 degrees. The tilt is measured from the vertical in a vertical plane of random azimuth, so
0 and 180 degrees are upright and 90 is lying flat. Cylinder length is not given; 6 m makes an
upright one span the flight band and a flat one a bar across it. Centres are at a random height
in the flight band, so bars can sometimes be passed over or under.
"""

from __future__ import annotations

import numpy as np

from missions.geometry import Cylinders, Scene
from missions.scenes.base import end_points, flight_volume, make_scene, scatter

LENGTH, WIDTH, CEILING = 60.0, 40.0, 3.0
DENSITY = 1.0 / 36.0
RADIUS = (0.25, 0.5)  # m
TILT_DEG = (0.0, 180.0)
CYLINDER_LENGTH = 6.0  # m
MIN_GAP = 1.5  # m between centres (in the plane)
START_CLEAR = 4.0  # a flat 6 m bar centred 4 m away can still reach within 1 m of the start


def build_random_angle(rng: np.random.Generator, config: int, clearance: float) -> Scene:
    """Cylinders at density 1/36 with uniformly random tilt, azimuth, radius and centre height."""
    start, goal = end_points(LENGTH, CEILING / 2)
    bounds = flight_volume(LENGTH, WIDTH, CEILING)
    count = int(round(LENGTH * WIDTH * DENSITY))
    xy = scatter(rng, count, bounds[0][:2], bounds[1][:2], MIN_GAP,
                 [(start[:2], START_CLEAR), (goal[:2], START_CLEAR)])
    n = len(xy)
    tilt = np.radians(rng.uniform(*TILT_DEG, size=n))
    azimuth = rng.uniform(0.0, 2 * np.pi, size=n)
    axis = np.column_stack([np.sin(tilt) * np.cos(azimuth), np.sin(tilt) * np.sin(azimuth), -np.cos(tilt)])
    centre = np.column_stack([xy, -rng.uniform(0.0, CEILING, size=n)])
    half = 0.5 * CYLINDER_LENGTH * axis
    cylinders = Cylinders(centre - half, centre + half, rng.uniform(*RADIUS, size=n))
    return make_scene("random-angle", config, bounds, start, goal, cylinders=cylinders, density=DENSITY,
                      count=n, size_m=[LENGTH, WIDTH], ceiling_m=CEILING)
