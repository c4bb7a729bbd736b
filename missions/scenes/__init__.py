"""Scene generators: FLYINGTRUST's seven scenarios and FlightBench's eight tests, by name.

    from missions.scenes import generate, SCENES
    scene = generate("forest", seed=3)

Every scene comes in ten seeded configurations (seed 0-9), each deterministic and checked to be
valid and connected with the vehicle's clearance (see `missions.scenes.base`).
"""

from __future__ import annotations

from functools import lru_cache

from missions.geometry import Scene
from missions.scenes import flightbench
from missions.scenes.base import (
    CONFIGURATIONS,
    DEFAULT_CLEARANCE,
    SceneError,
    SceneSpec,
)
from missions.scenes.base import generate as _generate
from missions.scenes.forest import build_forest
from missions.scenes.maze import build_maze
from missions.scenes.narrow_gap import build_narrow_gap
from missions.scenes.perlin import build_perlin
from missions.scenes.random_angle import build_random_angle
from missions.scenes.sudden_drop import build_sudden_drop
from missions.scenes.urban import build_urban

__all__ = ["CONFIGURATIONS", "DEFAULT_CLEARANCE", "FLYINGTRUST", "FLIGHTBENCH", "SCENES", "SceneError", "SceneSpec",
           "generate"]

_FT = "FLYINGTRUST Sec. III-B"
_FB = "FlightBench Sec. 3.1.2"

FLYINGTRUST = (
    SceneSpec("forest", _FT, "40 x 60 m, ceiling 3 m, upright trunks at density 1/49", build_forest),
    SceneSpec("urban", _FT, "60 x 60 m, ceiling 10 m, buildings and walls", build_urban),
    SceneSpec("random-angle", _FT, "40 x 60 m, ceiling 3 m, cylinders r 0.25-0.5 m tilted 0-180 deg, density 1/36",
              build_random_angle),
    SceneSpec("narrow-gap", _FT, "50 x 50 m, ceiling 4 m, walls with 0.85-0.9 m slits, seed + 1 gaps",
              build_narrow_gap),
    SceneSpec("sudden-drop", _FT, "50 x 50 x 14 m, start 2.5 m, ceiling 4 m, overhangs down to 1.5 m, seed + 1 of them",
              build_sudden_drop),
    SceneSpec("maze", _FT, "25 x 40 m perfect maze of 2.5 m cells, flight height 2 m", build_maze),
    SceneSpec("perlin", _FT, "40 x 50 m, ceiling 4 m, Perlin voxels: frequency 0.05, fill 0.03", build_perlin),
)

FLIGHTBENCH = tuple(
    [SceneSpec(f"flightbench-forest-{level}", _FB, f"forest test, {level} tree density", build, blocked_line=False)
     for level, build in flightbench.FOREST_TESTS.items()]
    + [SceneSpec(f"flightbench-maze-{level}", _FB, f"maze test, {level} route length and turns", build)
       for level, build in flightbench.MAZE_TESTS.items()]
    + [SceneSpec(f"flightbench-mw-{test}", _FB, f"multi-waypoint test {test}", build, blocked_line=False,
                 task="multi_waypoint")
       for test, build in flightbench.MW_TESTS.items()]
)

SCENES: dict[str, SceneSpec] = {spec.name: spec for spec in FLYINGTRUST + FLIGHTBENCH}


def generate(name: str, seed: int = 0, clearance: float = DEFAULT_CLEARANCE) -> Scene:
    """Configuration `seed` (0-9) of the named scene; raise `SceneError` for an unknown name or bad seed."""
    if name not in SCENES:
        raise SceneError(f"unknown scene {name!r} (known: {', '.join(SCENES)})")
    return _generate(SCENES[name], seed, clearance)


@lru_cache(maxsize=32)
def scene_for(name: str, seed: int) -> Scene:
    """`generate(name, seed)`, kept per process: campaigns, missions and reports ask for the same scenes
    over and over, and generating one (with its path checks) takes up to a second."""
    return generate(name, seed)
