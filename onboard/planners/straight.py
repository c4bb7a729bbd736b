"""FLYINGTRUST's straight-flight baseline (Sec. IV): fly the straight line to the goal.

"A straight line connecting start and goal served as the reference trajectory": the planner
moves a position setpoint along the line from where the vehicle is at the first step to the goal,
at the task's speed cap, and stops it on the goal. It ignores obstacles, which is the point: it
gives the floor every real planner must beat. It says done once the vehicle is within the goal
radius and nearly still.
"""

from __future__ import annotations

import math

import numpy as np

from onboard.planner import SETTLED_SPEED, Command, Observation
from onboard.task import NavTask
from onboard.timing import span


class StraightLine:
    """Position setpoint moving along the start-goal line at the speed cap."""

    def reset(self, task: NavTask) -> None:
        self.task = task
        self.origin: np.ndarray | None = None
        self.t0 = 0.0

    def step(self, observation: Observation) -> Command:
        with span("plan"):
            goal = np.asarray(self.task.goal, dtype=float)
            if self.origin is None:
                self.origin, self.t0 = observation.position, observation.t
            line = goal - self.origin
            length = float(np.linalg.norm(line))
            if np.linalg.norm(goal - observation.position) <= self.task.goal_radius \
                    and np.linalg.norm(observation.velocity) < SETTLED_SPEED:
                return Command("done")
            travelled = min(length, self.task.speed_cap * (observation.t - self.t0))
            carrot = self.origin + (line / length * travelled if length > 0 else 0.0)
            yaw = math.atan2(line[1], line[0]) if length > 0 else math.nan
        return Command("position", tuple(carrot), yaw=yaw)
