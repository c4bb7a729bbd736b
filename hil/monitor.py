"""The trial monitor: watches telemetry against the scene and decides how a navigation trial ended.

One monitor for every target (lockstep, built-in vehicle over MAVLink, PX4 SITL, hardware), fed by
the same `Vehicle` telemetry and the same scene geometry (`missions.geometry.Scene.distance`), so
outcomes are comparable across targets (DESIGN.md, "How data flows through one trial", step 5).

Outcomes, first one that holds wins:

* collision: the vehicle's sphere (profile radius) touches an obstacle (FLYINGTRUST: any collision
  is a failure; FlightBench: "without crashing");
* breach: the vehicle left a mission's airspace (altitude band, geofences, no-fly zones);
* failsafe: the vehicle left the navigation on its own (disarmed, landed, or switched to a
  return/land mode nobody commanded);
* success: within the rule's goal radius, and still there after the rule's hold time;
* timeout: the rule's time budget (mission time since the start point) ran out;
* onboard_lost: the companion computer running the planner (an onboard agent) stopped answering;
  told to the monitor by the trial loop (`lost`), it stands over the failsafe the loss causes.

The rule is a mission setting (`SuccessRule`), FLYINGTRUST's or FlightBench's. Times are vehicle
time: telemetry stamps are scaled by the target's speed factor (a lockstep vehicle stamps in
simulated time already).
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass

import numpy as np

from bridges.vehicle import Vehicle, VehicleState
from hil.rules import SuccessRule
from missions.geometry import Scene
from missions.schema import Airspace
from records.clock import clock_scale

# Flight modes a vehicle falls into by itself when a failsafe triggers (MAVSDK's names).
FAILSAFE_MODES = ("RETURN_TO_LAUNCH", "LAND")


@dataclass(frozen=True)
class Verdict:
    """How the trial ended and when (s of mission time)."""

    outcome: str  # success | collision | breach | timeout | failsafe | error | onboard_lost
    reason: str
    t_s: float


def hazard(position: np.ndarray, scene: Scene | None, airspace: Airspace | None, vehicle_radius: float,
           floor: bool = True) -> tuple[str, str] | None:
    """What ends a flight at this position (mission frame, NED): ("collision" | "breach", reason), or None.

    `floor`: whether the airspace's lowest altitude applies (not while taking off or landing).
    """
    if scene is not None:
        clearance = float(scene.distance(position)[0])
        if clearance < vehicle_radius:
            return "collision", (f"obstacle within {clearance:.2f} m of the centre (vehicle radius "
                                 f"{vehicle_radius:.2f} m) at {_fmt(position)}")
    if airspace is not None:
        why = airspace.violation(position, floor=floor)
        if why is not None:
            return "breach", f"left the mission's airspace at {_fmt(position)}: expected {why}"
    return None


class TrialMonitor:
    """Feed it telemetry with `update`; it returns a `Verdict` once the trial is decided.

    `offset` maps the vehicle's local NED frame (origin at its home) into the scene frame; `goal` (scene
    frame) is the scene's unless given; an `airspace` (a mission's) is enforced besides the scene.
    """

    def __init__(self, scene: Scene, rule: SuccessRule, vehicle_radius: float, offset: np.ndarray,
                 speed_factor: float = 1.0, goal: np.ndarray | None = None, airspace: Airspace | None = None) -> None:
        self.scene = scene
        self.goal = np.asarray(scene.goal if goal is None else goal, dtype=float)
        self._goal = self.goal.tolist()  # for math.dist: numpy's norm of three numbers takes ten times as long
        self.airspace = airspace
        self.rule = rule
        self.radius = vehicle_radius
        self.offset = np.asarray(offset, dtype=float)
        self._scale = clock_scale(speed_factor)
        self._t0_ns: int | None = None
        self._inside_since: float | None = None
        self.verdict: Verdict | None = None
        self.end_ns: int | None = None  # stamp of the last snapshot checked: the deciding one once decided
        self.elapsed_s = 0.0  # mission time of the last snapshot checked
        self._position: np.ndarray | None = None  # of the last snapshot checked
        self._clearance: float | None = math.inf  # its obstacle distance; None: not computed yet
        self.min_clearance_m = math.inf  # smallest gap between the vehicle's sphere and an obstacle so far
        self.goal_distance_m = math.nan  # goal distance of the last snapshot checked

    @property
    def clearance_m(self) -> float:
        """Obstacle distance (m) of the last snapshot checked."""
        if self._clearance is None:
            self._clearance = float(self.scene.distance(self._position)[0])
        return self._clearance

    @property
    def t0_ns(self) -> int | None:
        """Telemetry stamp at which the mission clock started."""
        return self._t0_ns

    def start(self, state: VehicleState) -> None:
        """Start the mission clock (the vehicle is at the start point)."""
        self._t0_ns = state.t_ns

    def update(self, state: VehicleState) -> Verdict | None:
        """Check one snapshot; the first decisive one fixes the verdict."""
        if self.verdict is not None or self._t0_ns is None:
            return self.verdict
        t = (state.t_ns - self._t0_ns) / 1e9 * self._scale
        self.end_ns = state.t_ns
        position = np.array([state.north, state.east, state.down]) + self.offset
        where = position.tolist()
        distance = math.dist(where, self._goal)
        self.elapsed_s, self.goal_distance_m, self._position = t, distance, position
        # The exact obstacle distance only where it could decide a collision or lower the smallest gap
        # so far: elsewhere a table's lower bound proves it can do neither (a tenth of a trial's time
        # at 100 Hz telemetry went to exact distances in open space).
        floor = self.scene.distance_floor(where)
        if floor >= self.radius and floor - self.radius >= self.min_clearance_m:
            self._clearance = None
        else:
            clearance = self._clearance = float(self.scene.distance(position)[0])
            self.min_clearance_m = min(self.min_clearance_m, clearance - self.radius)
            if clearance < self.radius:
                return self._decide("collision", f"obstacle within {clearance:.2f} m of the centre "
                                                 f"(vehicle radius {self.radius:.2f} m) at {_fmt(position)}", t)
        if self.airspace is not None:
            found = hazard(position, None, self.airspace, self.radius)
            if found is not None:
                return self._decide(*found, t)
        if not state.armed or not state.in_air:
            return self._decide("failsafe", "the vehicle disarmed or landed during navigation", t)
        if state.flight_mode in FAILSAFE_MODES:
            return self._decide("failsafe", f"the vehicle switched to {state.flight_mode} by itself", t)
        if distance <= self.rule.goal_radius:
            if self._inside_since is None:
                self._inside_since = t
            if t - self._inside_since >= self.rule.hold_s:
                return self._decide("success", "", t)
        else:
            self._inside_since = None
        if t > self.rule.time_budget_s:
            return self._decide("timeout", f"goal not reached and held within {self.rule.time_budget_s:g} s "
                                           f"(ended {distance:.1f} m from it)", t)
        return None

    def fail(self, reason: str, t_s: float = math.nan) -> Verdict:
        """End the trial as an error (the planner or the link broke), unless it was decided already."""
        return self.verdict or self._decide("error", reason, t_s)

    def lost(self, reason: str) -> Verdict:
        """End the trial as onboard_lost (the companion computer running the planner stopped answering).
        It stands over a failsafe or error already decided: the vehicle's offboard-loss failsafe is the loss."""
        if self.verdict is None or self.verdict.outcome in ("failsafe", "error"):
            return self._decide("onboard_lost", reason, self.elapsed_s if self._t0_ns is not None else math.nan)
        return self.verdict

    async def watch(self, vehicle: Vehicle, stop: asyncio.Event) -> Verdict:
        """Check every snapshot until decided, then set `stop` so the planner ends."""
        try:
            await vehicle.each_snapshot(lambda state: self.update(state) is not None)
        finally:
            stop.set()
        return self.verdict

    def _decide(self, outcome: str, reason: str, t_s: float) -> Verdict:
        self.verdict = Verdict(outcome, reason, t_s)
        return self.verdict


def _fmt(position: np.ndarray) -> str:
    return "(" + ", ".join(f"{v:.1f}" for v in position) + ") m NED"
