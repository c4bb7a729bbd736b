"""The one judge: watches telemetry and decides how a flight ended, from end conditions composed per flight.

One judge for every target (lockstep, built-in vehicle over MAVLink, PX4 SITL, hardware) and every kind of
flight, fed by the same `Vehicle` telemetry and the same geometry (`missions.geometry.Scene.distance`), so
outcomes are comparable across targets and across ways of flying. Like RotorPy's exit predicates, a flight
is judged by a list of end conditions, checked in order on each snapshot; the first that holds decides:

* collision (`SceneContact`): the vehicle's sphere (profile radius) touches an obstacle (FLYINGTRUST: any
  collision is a failure; FlightBench: "without crashing") — the one collision path;
* breach (`AirspaceLimits`): the vehicle left a mission's airspace (altitude band, geofences, no-fly zones);
  the band's floor holds once it has climbed into the band, until it lands;
* failsafe (`LeftOnItsOwn`): the vehicle left the navigation on its own (disarmed, landed, or switched to a
  return/land mode nobody commanded);
* success (`GoalHeld`): within the rule's goal radius, and still there after the rule's hold time;
* timeout (`TimeBudget`): the time budget (mission time since the start) ran out.

Every flight has the first two (scene and airspace, where it has them); a planner's navigation adds the
other three (`TrialMonitor`); a route flown by the autopilot adds none, its flight deciding success when
the mission is finished (`RouteJudge`). Besides: error and onboard_lost, told to the judge by the trial
loop (`fail`, `lost`). Times are vehicle time, on the vehicle's own stamps (`VehicleState.t_vehicle_s`), so a
paused or starved simulator stretches no budget; only a vehicle whose snapshots carry no stamp is timed on the
harness clock times its speed factor (`clock` says which).

Positions are the truth where the target has one (`bridges.truth`: the built-in vehicle's state, PX4 SIH's
ground truth, the harness's physics) and the estimate the telemetry reports only where nothing else exists
(hardware), or for a snapshot whose truth is not known yet; `judged_on` says which decided.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from bridges.vehicle import GroundTruth, Vehicle, VehicleError, VehicleState
from hil.rules import SuccessRule
from missions.geometry import Scene
from missions.schema import Airspace, BenchmarkMission
from records.clock import VEHICLE_CLOCK, seconds_since, stamp_clock
from records.fidelity_run import ESTIMATE, TRUTH
from records.summary import Outcome

# Flight modes a vehicle falls into by itself when a failsafe triggers (MAVSDK's names).
FAILSAFE_MODES = ("RETURN_TO_LAUNCH", "LAND")
# Modes in which the vehicle is on its way down to the ground, below any altitude band's floor.
LANDING_MODES = FAILSAFE_MODES
# How far above the altitude band's floor the vehicle must climb before the floor holds (m): PX4 reports
# TAKING_OFF while its estimate still wanders a millimetre either side of the ground, and a band from 0 m
# would otherwise be left at the first step.
BAND_ENTRY_M = 0.5


@dataclass(frozen=True)
class Verdict:
    """How the trial ended and when (s of mission time)."""

    outcome: Outcome
    reason: str
    t_s: float


@dataclass
class Snapshot:
    """One telemetry sample as the end conditions see it: mission time, and where in the mission's frame."""

    state: VehicleState
    t_s: float
    position: np.ndarray  # NED, the scene's / mission's frame
    where: list[float]  # the same, as a list (math.dist on three floats is ten times numpy's norm's speed)


class EndCondition(Protocol):
    """Looks at each snapshot; returns (outcome, reason) when the flight ends here, else None."""

    def __call__(self, snapshot: Snapshot) -> tuple[Outcome, str] | None: ...


class SceneContact:
    """collision: the vehicle's sphere touches an obstacle. Keeps the smallest gap seen and the last clearance."""

    def __init__(self, scene: Scene, radius: float) -> None:
        self.scene = scene
        self.radius = radius
        self.min_clearance_m = math.inf  # smallest gap between the vehicle's sphere and an obstacle so far
        self._position: np.ndarray | None = None
        self._clearance: float | None = math.inf  # of the last snapshot; None: not computed yet

    @property
    def clearance_m(self) -> float:
        """Obstacle distance (m) of the last snapshot checked."""
        if self._clearance is None:
            self._clearance = float(self.scene.distance(self._position)[0])
        return self._clearance

    def __call__(self, snapshot: Snapshot) -> tuple[Outcome, str] | None:
        self._position = snapshot.position
        # The exact obstacle distance only where it could decide a collision or lower the smallest gap
        # so far: elsewhere a table's lower bound proves it can do neither (a tenth of a trial's time
        # at 100 Hz telemetry went to exact distances in open space).
        floor = self.scene.distance_floor(snapshot.where)
        if floor >= self.radius and floor - self.radius >= self.min_clearance_m:
            self._clearance = None
            return None
        clearance = self._clearance = float(self.scene.distance(snapshot.position)[0])
        self.min_clearance_m = min(self.min_clearance_m, clearance - self.radius)
        if clearance < self.radius:
            return Outcome.COLLISION, (f"obstacle within {clearance:.2f} m of the centre (vehicle radius "
                                       f"{self.radius:.2f} m) at {_fmt(snapshot.position)}")
        return None


class AirspaceLimits:
    """breach: the vehicle left the airspace. The band's floor holds once the vehicle has climbed BAND_ENTRY_M
    (or half the band, if thinner) into it, until it lands or is on its way down."""

    def __init__(self, airspace: Airspace) -> None:
        self.airspace = airspace
        self._entry_alt = airspace.alt_min + min(BAND_ENTRY_M, (airspace.alt_max - airspace.alt_min) / 2)
        self._in_band = False

    def __call__(self, snapshot: Snapshot) -> tuple[Outcome, str] | None:
        s = snapshot.state
        self._in_band = self._in_band or (s.in_air and -snapshot.position[2] >= self._entry_alt)
        floor = self._in_band and s.in_air and s.flight_mode not in LANDING_MODES
        why = self.airspace.violation(snapshot.position, floor=floor)
        if why is None:
            return None
        return Outcome.BREACH, f"left the mission's airspace at {_fmt(snapshot.position)}: expected {why}"


def left_on_its_own(snapshot: Snapshot) -> tuple[Outcome, str] | None:
    """failsafe: disarmed, landed, or in a return/land mode nobody commanded during navigation."""
    s = snapshot.state
    if not s.armed or not s.in_air:
        return Outcome.FAILSAFE, "the vehicle disarmed or landed during navigation"
    if s.flight_mode in FAILSAFE_MODES:
        return Outcome.FAILSAFE, f"the vehicle switched to {s.flight_mode} by itself"
    return None


class GoalHeld:
    """success: within the rule's goal radius, and still there after its hold time. Keeps the goal distance."""

    def __init__(self, goal: np.ndarray, rule: SuccessRule) -> None:
        self.goal = goal.tolist()
        self.rule = rule
        self.distance_m = math.nan  # of the last snapshot checked
        self._inside_since: float | None = None

    def __call__(self, snapshot: Snapshot) -> tuple[Outcome, str] | None:
        self.distance_m = math.dist(snapshot.where, self.goal)
        if self.distance_m > self.rule.goal_radius:
            self._inside_since = None
            return None
        if self._inside_since is None:
            self._inside_since = snapshot.t_s
        return (Outcome.SUCCESS, "") if snapshot.t_s - self._inside_since >= self.rule.hold_s else None


class TimeBudget:
    """timeout: the goal not reached and held within the budget; says how far from it the flight ended."""

    def __init__(self, budget_s: float, goal: GoalHeld) -> None:
        self.budget_s = budget_s
        self.goal = goal

    def __call__(self, snapshot: Snapshot) -> tuple[Outcome, str] | None:
        if snapshot.t_s <= self.budget_s:
            return None
        return Outcome.TIMEOUT, (f"goal not reached and held within {self.budget_s:g} s (ended "
                                 f"{self.goal.distance_m:.1f} m from it)")


class Judge:
    """Feed it telemetry with `update`; it returns a `Verdict` once an end condition decides.

    `offset` maps the vehicle's local NED frame (origin at its home) into the scene's or mission's frame.
    `conditions` are checked in order; `contact` (also among them) tells clearances, for the reports and the
    fault schedule's triggers. Outcomes in `carry_on` are reported to `carried_on` (once per kind) instead
    of deciding: a mission whose termination rule flies on after a collision or breach. `truth`: the target's
    (module docstring), None where it has none.
    """

    def __init__(self, conditions: Sequence[EndCondition], offset: np.ndarray, speed_factor: float = 1.0,
                 contact: SceneContact | None = None, carry_on: frozenset[Outcome] = frozenset(),
                 on_carried_on: Callable[[Outcome, str, VehicleState], None] = lambda outcome, reason, state: None,
                 truth: GroundTruth | None = None):
        self.conditions = tuple(conditions)
        self.truth = truth
        self.on_estimate = 0  # snapshots judged on the estimate because the target's truth was not known yet
        self.offset = np.asarray(offset, dtype=float)
        self.contact = contact
        self._speed_factor = speed_factor
        self._carry_on = carry_on
        self._on_carried_on = on_carried_on
        self.carried_on: tuple[Outcome, str] | None = None  # the first finding flown on after
        self._carried_kinds: set[Outcome] = set()
        self._t0_ns: int | None = None
        self._t0_vehicle_s = math.nan
        self.clock = VEHICLE_CLOCK  # what mission time is measured on (records.clock), fixed at the start
        self.verdict: Verdict | None = None
        self.end_ns: int | None = None  # stamp of the last snapshot checked: the deciding one once decided
        self.elapsed_s = 0.0  # mission time of the last snapshot checked
        self.judged_at: VehicleState | None = None  # the last snapshot checked

    @property
    def t0_ns(self) -> int | None:
        """Telemetry stamp at which the mission clock started."""
        return self._t0_ns

    @property
    def clearance_m(self) -> float:
        """Obstacle distance (m) of the last snapshot checked; infinite without a scene."""
        return self.contact.clearance_m if self.contact is not None else math.inf

    @property
    def min_clearance_m(self) -> float:
        return self.contact.min_clearance_m if self.contact is not None else math.inf

    @property
    def judged_on(self) -> str:
        """TRUTH where the target has one (`on_estimate` counts the snapshots judged before it was known), else
        ESTIMATE."""
        return judged_on(self.truth)

    def start(self, state: VehicleState) -> None:
        """Start the mission clock (the vehicle is at the start point)."""
        self._t0_ns = state.t_ns
        self._t0_vehicle_s = state.t_vehicle_s
        self.clock = stamp_clock(state.t_vehicle_s)

    def update(self, state: VehicleState) -> Verdict | None:
        """Check one snapshot; the first decisive one fixes the verdict."""
        if self.verdict is not None or self._t0_ns is None:
            return self.verdict
        t = seconds_since(self._t0_ns, self._t0_vehicle_s, state.t_ns, state.t_vehicle_s, self._speed_factor)
        self.end_ns, self.elapsed_s, self.judged_at = state.t_ns, t, state
        true = self.truth.position(state) if self.truth is not None else None
        if true is None:
            true = (state.north, state.east, state.down)
            self.on_estimate += self.truth is not None
        position = np.array(true) + self.offset
        snapshot = Snapshot(state, t, position, position.tolist())
        for condition in self.conditions:
            found = condition(snapshot)
            if found is None:
                continue
            if found[0] not in self._carry_on:
                return self._decide(found[0], found[1], t)
            if found[0] not in self._carried_kinds:
                self._carried_kinds.add(found[0])
                self.carried_on = self.carried_on or found
                self._on_carried_on(found[0], found[1], state)
        return None

    def fail(self, reason: str, t_s: float = math.nan) -> Verdict:
        """End the trial as an error (the planner or the link broke), unless it was decided already."""
        return self.verdict or self._decide(Outcome.ERROR, reason, t_s)

    def lost(self, reason: str) -> Verdict:
        """End the trial as onboard_lost (the companion computer running the planner stopped answering).
        It stands over a failsafe or error already decided: the vehicle's offboard-loss failsafe is the loss."""
        if self.verdict is None or self.verdict.outcome in (Outcome.FAILSAFE, Outcome.ERROR):
            return self._decide(Outcome.ONBOARD_LOST, reason, self.elapsed_s if self._t0_ns is not None else math.nan)
        return self.verdict

    async def watch(self, vehicle: Vehicle, stop: asyncio.Event | None = None) -> Verdict:
        """Check every snapshot until decided, then set `stop` (if given) so the planner ends."""
        try:
            await vehicle.each_snapshot(lambda state: self.update(state) is not None)
        finally:
            if stop is not None:
                stop.set()
        return self.verdict

    def _decide(self, outcome: Outcome, reason: str, t_s: float) -> Verdict:
        self.verdict = Verdict(outcome, reason, t_s)
        return self.verdict


class TrialMonitor(Judge):
    """The judge of a planner's navigation: the scene, the airspace (a mission's), then failsafe, goal held
    and time budget, from the start point on (`start`). `goal` (scene frame) is the scene's unless given."""

    def __init__(self, scene: Scene, rule: SuccessRule, vehicle_radius: float, offset: np.ndarray,
                 speed_factor: float = 1.0, goal: np.ndarray | None = None, airspace: Airspace | None = None,
                 truth: GroundTruth | None = None) -> None:
        self.scene = scene
        self.rule = rule
        self.radius = vehicle_radius
        self.goal = np.asarray(scene.goal if goal is None else goal, dtype=float)
        contact = SceneContact(scene, vehicle_radius)
        self._goal_held = GoalHeld(self.goal, rule)
        conditions = [contact, *([AirspaceLimits(airspace)] if airspace is not None else []), left_on_its_own,
                      self._goal_held, TimeBudget(rule.time_budget_s, self._goal_held)]
        super().__init__(conditions, offset, speed_factor, contact=contact, truth=truth)

    @property
    def goal_distance_m(self) -> float:
        """Goal distance of the last snapshot checked."""
        return self._goal_held.distance_m


class RouteJudge(Judge):
    """The judge of a route the autopilot flies (`hil.fly`): its scene and its airspace, from arming on; the
    flight itself decides success (the mission finished). A collision or breach the mission's termination
    lets the flight go on after is recorded once per kind (`recorder`) and kept in `carried_on`."""

    def __init__(self, mission: BenchmarkMission, vehicle_radius: float, recorder, speed_factor: float = 1.0,
                 truth: GroundTruth | None = None):
        scene = mission.scene.load() if mission.scene is not None else None
        contact = SceneContact(scene, vehicle_radius) if scene is not None else None
        carry_on = frozenset(outcome for outcome, stops in ((Outcome.COLLISION, mission.termination.stop_on_collision),
                                                            (Outcome.BREACH, mission.termination.stop_on_geofence))
                             if not stops)

        def record(outcome: Outcome, reason: str, state: VehicleState) -> None:
            recorder.event(str(outcome), reason=reason, north=state.north, east=state.east, altitude=state.altitude,
                           stopped=False)

        super().__init__([*([contact] if contact is not None else []), AirspaceLimits(mission.airspace)],
                         mission.home_in_mission, speed_factor, contact=contact, carry_on=carry_on,
                         on_carried_on=record, truth=truth)

    def judge(self, state: VehicleState) -> Verdict | None:
        """One snapshot judged; the clock starts at the first armed one, and nothing is judged disarmed."""
        if not state.armed:
            return None
        if self.t0_ns is None:
            self.start(state)
        return self.update(state)

    async def watch(self, vehicle: Vehicle, stop: asyncio.Event | None = None) -> Verdict:
        """Judge every snapshot until a finding ends the flight."""
        await vehicle.each_snapshot(lambda state: self.judge(state) is not None)
        if self.verdict is None:
            raise VehicleError("telemetry ended")
        return self.verdict


def judged_on(truth: GroundTruth | None) -> str:
    """What a judge with `truth` (a target's, or None) judges on: records.fidelity_run's TRUTH or ESTIMATE."""
    return TRUTH if truth is not None else ESTIMATE


def _fmt(position: np.ndarray) -> str:
    return "(" + ", ".join(f"{v:.1f}" for v in position) + ") m NED"
