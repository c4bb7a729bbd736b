"""What a planner is asked to do: fly from the start to a goal inside a flight volume.

The vehicle's local NED frame has its origin at home, where it was armed; a scene's coordinates
have their own origin. A `NavTask` is always in the vehicle's frame, and `home_in_scene` says where
home lies in the scene, so the sensor and the collision check can convert (``scene = local +
home_in_scene``). Planners get the task but never the scene: they learn obstacles from the sensor.

Defaults are FLYINGTRUST's (Sec. III-C): 4 m/s speed cap, 1.5 min budget, success within
2 m of the goal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from missions.geometry import Scene
from missions.schema import BenchmarkMission

SPEED_CAP = 4.0  # m/s
TIME_BUDGET = 90.0  # s
GOAL_RADIUS = 2.0  # m


@dataclass(frozen=True)
class NavTask:
    """A point-to-point navigation task in the vehicle's local NED frame (metres)."""

    name: str
    start: tuple[float, float, float]  # where the flight begins (above home, at flight altitude)
    goal: tuple[float, float, float]
    bounds_min: tuple[float, float, float]  # flight volume corner (down = -ceiling)
    bounds_max: tuple[float, float, float]  # (down = 0: the ground)
    home_in_scene: tuple[float, float, float] = (0.0, 0.0, 0.0)
    speed_cap: float = SPEED_CAP
    goal_radius: float = GOAL_RADIUS
    time_budget: float = TIME_BUDGET

    @property
    def altitude(self) -> float:
        """Flight altitude (m above home): the start's."""
        return -self.start[2]

    def to_scene(self, points: np.ndarray) -> np.ndarray:
        """Local NED points in scene coordinates."""
        return np.asarray(points, dtype=float) + np.asarray(self.home_in_scene)

    def from_scene(self, points: np.ndarray) -> np.ndarray:
        """Scene points in local NED."""
        return np.asarray(points, dtype=float) - np.asarray(self.home_in_scene)


def task_for_scene(scene: Scene, speed_cap: float = SPEED_CAP, goal_radius: float = GOAL_RADIUS,
                   time_budget: float = TIME_BUDGET) -> NavTask:
    """The scene's start -> goal task, with home on the ground below the scene's start."""
    home = np.array([scene.start[0], scene.start[1], 0.0])

    def local(p: np.ndarray) -> tuple[float, float, float]:
        return tuple(float(v) for v in np.asarray(p, dtype=float) - home)

    return NavTask(name=f"{scene.name}:{scene.seed}", start=local(scene.start), goal=local(scene.goal),
                   bounds_min=local(scene.bounds_min), bounds_max=local(scene.bounds_max),
                   home_in_scene=tuple(float(v) for v in home), speed_cap=speed_cap, goal_radius=goal_radius,
                   time_budget=time_budget)


def task_for_mission(mission: BenchmarkMission, scene: Scene) -> NavTask:
    """A point-to-point mission's task: its start and goal, home on the ground below its start, the scene's
    flight volume, and the mission's speed cap, success radius and time budget."""
    home = mission.home_in_mission

    def local(p: np.ndarray) -> tuple[float, float, float]:
        return tuple(float(v) for v in np.asarray(p, dtype=float) - home)

    return NavTask(name=mission.name, start=local(mission.start), goal=local(mission.goal),
                   bounds_min=local(scene.bounds_min), bounds_max=local(scene.bounds_max),
                   home_in_scene=tuple(float(v) for v in home), speed_cap=mission.speed_cap,
                   goal_radius=mission.success_radius, time_budget=mission.time_budget)


def scene_from_spec(spec: str) -> Scene:
    """``SCENE[:SEED]`` (e.g. ``forest:3``; seed 0 if left out) -> that scene configuration.

    Raises `missions.scenes.SceneError` (a ValueError) for an unknown scene or bad seed.
    """
    from missions.scenes import SceneError, generate

    name, _, seed = spec.partition(":")
    if seed and not seed.isdigit():
        raise SceneError(f"mission {spec!r}: expected SCENE or SCENE:SEED with a seed 0-9")
    return generate(name, int(seed or 0))
