"""How a planner plugs into the onboard runtime: observations in, commands out.

A planner is any object with two methods (the `Planner` protocol):

* ``reset(task)`` once before a flight, with the `NavTask` to fly (start, goal, speed cap, flight
  volume; never the obstacles: a planner learns those from its sensor);
* ``step(observation) -> Command`` once per loop, at the runtime's rate.

It may time its own stages by wrapping them in ``with onboard.timing.span("map"):`` (and "plan",
"control"); a planner that does not is timed as one "plan" stage. A planner class is named on the
command line as ``module:Class`` (see `load_planner`) and must be constructible without arguments.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

from bridges.vehicle import VehicleState
from config.errors import ConfigError
from onboard.task import NavTask

CommandKind = Literal["position", "velocity", "acceleration", "trajectory", "done"]
COMMAND_KINDS: tuple[str, ...] = ("position", "velocity", "acceleration", "trajectory", "done")
# Columns of a trajectory command's value: time from the observation (s), NED position, NED velocity.
TRAJECTORY_COLUMNS = ("t", "north", "east", "down", "vn", "ve", "vd")


# m/s: a planner says "done" only within the goal radius and slower than this. "done" hands the
# vehicle to the flight controller's Hold, which from cruise speed brakes out of the radius again.
SETTLED_SPEED = 0.3


@dataclass(frozen=True)
class Observation:
    """What the planner knows at one loop: vehicle time, state, goal and sensor data (NED frame)."""

    t: float  # vehicle time (s) when the state was read
    state: VehicleState
    goal: tuple[float, float, float]  # NED m
    depth: np.ndarray | None = None  # (height, width) metres along the optical axis, NaN = no return
    points: np.ndarray | None = None  # (N, 3) NED m, the depth image as world points

    @property
    def position(self) -> np.ndarray:
        s = self.state
        return np.array([s.north, s.east, s.down])

    @property
    def velocity(self) -> np.ndarray:
        s = self.state
        return np.array([s.vn, s.ve, s.vd])


@dataclass(frozen=True)
class Command:
    """One planner output.

    * ``position``: value (north, east, down) m;
    * ``velocity``: value (vn, ve, vd) m/s;
    * ``acceleration``: value (an, ae, ad) m/s^2 (flown as a velocity setpoint, see onboard.tracking);
    * ``trajectory``: value an (K, 7) array of rows `TRAJECTORY_COLUMNS`, times relative to the
      observation the plan was made from; the runtime samples and tracks it between steps;
    * ``done``: the planner considers the task finished; the runtime stops.

    ``yaw`` (rad, NED heading) NaN keeps the current heading.
    """

    kind: CommandKind
    value: Any = ()
    yaw: float = math.nan

    def __post_init__(self) -> None:
        if self.kind not in COMMAND_KINDS:
            raise ValueError(f"Command.kind: expected one of {', '.join(COMMAND_KINDS)}, got {self.kind!r}")
        if self.kind == "trajectory":
            rows = np.asarray(self.value, dtype=float)
            if rows.ndim != 2 or rows.shape[1] != len(TRAJECTORY_COLUMNS) or len(rows) < 1:
                raise ValueError(f"trajectory command: expected a (K, 7) array of {TRAJECTORY_COLUMNS}, "
                                 f"got shape {rows.shape}")
            object.__setattr__(self, "value", rows)
        elif self.kind != "done":
            values = tuple(float(v) for v in self.value)
            if len(values) != 3:
                raise ValueError(f"{self.kind} command: expected 3 NED values, got {self.value!r}")
            object.__setattr__(self, "value", values)


class Planner(Protocol):
    """A navigation planner under test."""

    def reset(self, task: NavTask) -> None:
        """Forget any previous flight and prepare for `task`."""

    def step(self, observation: Observation) -> Command:
        """One loop: decide what the vehicle should do next."""


class PlannerLoadError(ConfigError):
    """A ``module:Class`` planner name that cannot be imported or instantiated."""


def planner_class(spec: str) -> type:
    """The planner class named ``package.module:ClassName``, checked to implement the protocol
    (imported, never called: a campaign file is validated before anything runs)."""
    module_name, sep, class_name = spec.partition(":")
    if not sep or not module_name or not class_name:
        raise PlannerLoadError(f"planner {spec!r}: expected module:Class, e.g. onboard.planners.avoid:OccupancyPlanner")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PlannerLoadError(f"planner {spec!r}: cannot import {module_name}: {exc}") from None
    cls = getattr(module, class_name, None)
    if cls is None:
        raise PlannerLoadError(f"planner {spec!r}: {module_name} has no {class_name}")
    # Only a class implementing the protocol is accepted: `os:system` names a callable, and calling
    # whatever a campaign file names would run it.
    if not isinstance(cls, type) or not (callable(getattr(cls, "reset", None)) and callable(getattr(cls, "step", None))):
        raise PlannerLoadError(f"planner {spec!r}: expected a class with reset(task) and step(observation), "
                               f"got {type(cls).__name__} {class_name}")
    return cls


def load_planner(spec: str) -> Planner:
    """Instantiate a planner named ``package.module:ClassName`` (no constructor arguments)."""
    return planner_class(spec)()
