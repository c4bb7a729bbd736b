"""The built-in vehicle's navigator: PX4's navigator module for takeoff, hold, land, return and missions.

As in PX4, where the navigator publishes a position_setpoint_triplet and the commander and flight-mode
manager take it from there, this part keeps the mission and the progress through it, and turns them
into a `Triplet` (previous, current and next waypoint, what the current one is, its acceptance radius,
heading and speed: px4.sim.flight_task) that the flight task flies. It reads the vehicle's published
state (`NavStatus`: the autopilot's public attributes) and asks the commander for what is the
commander's to do by returning events: a text to say (`Say`), a Hold the user would have chosen,
loitering at a point (`HoldAt`: the end of a take-off or a mission), another mode (`Switch`: a
mission's RTL item). The commander applies them in order.

Takeoff: climb to the target, then Hold there. Return: climb to the return altitude where the vehicle
is, fly home, descend to RTL_DESCEND_ALT, land. Mission: items one after another, DO items applied on
the way, loiter at the end (or return, for an RTL item).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Protocol, Union

from pymavlink.dialects.v20 import common as mavlink

from missions.geo import GeoOrigin
from physics.dynamics import QuadrotorDynamics
from px4.modes import FlightMode
from px4.params import ParamStore
from px4.sim.autopilot_types import ACCEPTED, AutoPhase, CommandResult, denied
from px4.sim.flight_task import Kind, Triplet
from px4.sim.mission_items import MissionItem

Vec3 = tuple[float, float, float]
NAN = math.nan


@dataclass(frozen=True)
class Say:
    """A text for the pilot."""

    text: str
    severity: int = mavlink.MAV_SEVERITY_INFO


@dataclass(frozen=True)
class HoldAt:
    """Hold, as the user's mode, loitering at `target` rather than at the braking point."""

    target: Vec3
    yaw: float


@dataclass(frozen=True)
class Switch:
    """Enter `mode` (not as the user's choice)."""

    mode: FlightMode


NavEvent = Union[Say, HoldAt, Switch]
NONE: tuple[NavEvent, ...] = ()
# The modes `update` tells apart every cycle, bound once: in Python 3.11 a member looked up on its Enum class
# goes through EnumType's __getattr__ hook (about 0.1 us, four times a plain attribute).
_TAKEOFF, _RTL, _MISSION = FlightMode.TAKEOFF, FlightMode.RTL, FlightMode.MISSION


class NavStatus(Protocol):
    """What the navigator reads of the vehicle (the commander's published state)."""

    time_s: float
    armed: bool
    landed: bool
    home: Vec3
    params: ParamStore
    origin: GeoOrigin
    dyn: QuadrotorDynamics

    @property
    def position(self) -> Vec3: ...


def reached(pos: Vec3, target: Vec3, radius: float, alt_radius: float) -> bool:
    """Within `radius` of `target` horizontally and `alt_radius` vertically."""
    return math.hypot(pos[0] - target[0], pos[1] - target[1]) <= radius and abs(pos[2] - target[2]) <= alt_radius


class Navigator:
    """The mission, the auto modes' progress, and the triplet they make."""

    def __init__(self) -> None:
        self.mission: list[MissionItem] = []
        # PX4's navigator checks an upload on its next cycle; until then the previous mission's
        # verdict stands (so a start right after the first upload finds no valid mission).
        self.mission_valid = False
        self._check_due = False
        self.mission_current = 0
        self.mission_finished = False
        self.seq_reached = -1  # PX4's mission_result.seq_reached: the last item reached, -1 for none yet
        self.reached_items: deque[int] = deque(maxlen=64)
        self.triplet: Triplet | None = None  # None before any auto flight
        self.phase = AutoPhase.DONE
        self.target: Vec3 = (0.0, 0.0, 0.0)
        self.speed_override: float | None = None  # DO_CHANGE_SPEED / a reposition's speed
        self._phase_until = 0.0
        self._rtl_alt = 0.0

    # ------------------------------------------------------------------ the mission protocol's side
    def load(self, items: list[MissionItem]) -> None:
        """A complete upload replaces the mission and restarts it from the first item; it is checked on
        the next cycle."""
        self.mission = list(items)
        self.mission_current = 0
        self.seq_reached = -1
        self.mission_finished = False
        self._check_due = True

    def set_current(self, seq: int) -> CommandResult:
        """MAV_CMD_DO_SET_MISSION_CURRENT / MISSION_SET_CURRENT (the commander restarts the item in Mission)."""
        if not 0 <= seq < max(1, len(self.mission)):
            return denied(f"Mission item {seq} does not exist ({len(self.mission)} items)")
        self.mission_current = seq
        self.mission_finished = False
        return ACCEPTED

    def cycle(self) -> None:
        """Every navigator cycle, before the mode's progress: an upload is checked."""
        if self._check_due:
            self._check_due = False
            self.mission_valid = any(item.is_nav for item in self.mission)

    # ------------------------------------------------------------------ speed
    def cruise(self) -> float:
        return self.speed_override if self.speed_override else NAN

    def change_speed(self, speed: float | None) -> None:
        """A new cruise speed (None: the default): the same waypoints at the new speed."""
        self.speed_override = speed
        t = self.triplet
        if t is not None and t.kind != Kind.LOITER:
            self.triplet = Triplet(t.current, t.kind, t.previous, t.next, t.acceptance_radius, t.yaw, self.cruise())

    # ------------------------------------------------------------------ modes
    def activate(self, mode: FlightMode, v: NavStatus, previous: FlightMode, target: Vec3 | None = None,
                 yaw: float = NAN, reposition: bool = False) -> tuple[NavEvent, ...]:
        """The mode was entered: its first triplet. `target`: Hold's (the braking point, or with
        `reposition` a point to fly to), Takeoff's (None: the one set before arming)."""
        pos = v.position
        self.phase = AutoPhase.CRUISE
        if mode == FlightMode.HOLD:
            self.target = target
            if reposition:  # a leg from here, at its own speed
                self.triplet = Triplet(target, Kind.POSITION, previous=pos, yaw=yaw, cruise_speed=self.cruise())
            else:
                self.triplet = Triplet(target, Kind.LOITER, yaw=yaw)
        elif mode == FlightMode.TAKEOFF:
            if target is not None:
                self.target = target
            self.triplet = Triplet(self.target, Kind.TAKEOFF, yaw=v.dyn.yaw)
        elif mode == FlightMode.LAND:
            self.target = (pos[0], pos[1], 0.0)
            self.phase = AutoPhase.LAND
            self.triplet = Triplet((pos[0], pos[1], NAN), Kind.LAND)
        elif mode == FlightMode.RTL:
            return self._start_return(v)
        elif mode == FlightMode.MISSION:
            if previous != FlightMode.MISSION or self.mission_finished:
                self.mission_finished = False
            # PX4 v1.16.1's navigator (measured), not when a disarm returns to Mission
            said = (Say("Executing Mission"),) if v.armed else NONE
            self.phase = AutoPhase.DONE  # the first leg starts where the vehicle is
            return said + self.start_item(v)
        return NONE

    def fly(self, triplet: Triplet) -> None:
        """Waypoints of a mode the navigator does not run (Orbit's approach, Follow Target's loiter)."""
        self.triplet = triplet

    def loiter_at(self, target: Vec3, yaw: float) -> None:
        """Hold at `target` (the commander's HoldAt, after entering Hold)."""
        self.target = target
        self.triplet = Triplet(target, Kind.LOITER, yaw=yaw)

    def update(self, mode: FlightMode, v: NavStatus) -> tuple[NavEvent, ...]:
        """One navigator cycle of the mode's progress."""
        if mode is _TAKEOFF:
            return self._update_takeoff(v)
        if mode is _RTL:
            return self._update_rtl(v)
        if mode is _MISSION:
            return self._update_mission(v)
        return NONE

    # --- takeoff and return
    def _update_takeoff(self, v: NavStatus) -> tuple[NavEvent, ...]:
        if reached(v.position, self.target, v.params["NAV_ACC_RAD"], v.params["NAV_MC_ALT_RAD"]):
            # As PX4: done within NAV_MC_ALT_RAD of the takeoff altitude, then Hold at that altitude
            # (v1.16.1 says nothing then: its "Takeoff detected" came at lift-off).
            return (HoldAt(self.target, self.triplet.yaw if self.triplet else NAN),)
        return NONE

    def _start_return(self, v: NavStatus) -> tuple[NavEvent, ...]:
        """Return: climb to the return altitude where the vehicle is, saying where it returns at."""
        pos = v.position
        self._rtl_alt = self._return_altitude(v)
        self.phase = AutoPhase.CLIMB
        self.target = (pos[0], pos[1], -self._rtl_alt)
        self.triplet = Triplet(self.target, Kind.POSITION, previous=pos)
        above = self._rtl_alt + v.home[2]
        return (Say(f"RTL: start return at {v.origin.alt_m + self._rtl_alt:.0f} m ({above:.0f} m above destination)"),)

    @staticmethod
    def _return_altitude(v: NavStatus) -> float:
        """PX4 v1.16's return altitude (RTL::computeReturnAltitude), up from the local origin: within
        NAV_ACC_RAD of home twice the distance, within RTL_MIN_DIST the RTL_CONE_ANG cone's surface, else
        RTL_RETURN_ALT, outside NAV_ACC_RAD at least twice NAV_ACC_RAD; never below the vehicle.
        Measured: RC lost in Position mode at 1.2 m over home returns at that altitude and lands."""
        p, pos, home = v.params, v.position, v.home
        home_up = -home[2]
        dist = math.hypot(pos[0] - home[0], pos[1] - home[1])
        alt = home_up + p["RTL_RETURN_ALT"]
        if p["RTL_CONE_ANG"] > 0:
            acceptance = p["NAV_ACC_RAD"]
            if dist <= acceptance:
                alt = home_up + 2.0 * dist
            else:
                if dist <= p["RTL_MIN_DIST"]:
                    cone = math.radians(min(max(p["RTL_CONE_ANG"], 1.0), 89.0))
                    alt = min(home_up + dist / math.tan(cone), alt)
                alt = max(alt, home_up + 2.0 * acceptance)
        return max(alt, -pos[2])

    def _update_rtl(self, v: NavStatus) -> tuple[NavEvent, ...]:
        home, pos, p = v.home, v.position, v.params
        if self.phase == AutoPhase.CLIMB:
            if abs(v.dyn.pos[2] - self.target[2]) < p["NAV_MC_ALT_RAD"]:
                self.phase = AutoPhase.CRUISE
                previous = self.target
                self.target = (home[0], home[1], -self._rtl_alt)
                self.triplet = Triplet(self.target, Kind.POSITION, previous=previous)
        elif self.phase == AutoPhase.CRUISE:
            if reached(pos, self.target, p["NAV_ACC_RAD"], p["NAV_MC_ALT_RAD"]):
                self.phase = AutoPhase.DESCEND
                self.target = (home[0], home[1], -min(self._rtl_alt, p["RTL_DESCEND_ALT"]))
                self.triplet = Triplet(self.target, Kind.POSITION, previous=pos)
        elif self.phase == AutoPhase.DESCEND:
            if reached(pos, self.target, p["NAV_ACC_RAD"], p["NAV_MC_ALT_RAD"]):
                self.phase = AutoPhase.LAND
                self.target = (home[0], home[1], 0.0)
                self.triplet = Triplet((home[0], home[1], NAN), Kind.LAND)
                return (Say("RTL: land at destination"),)
        return NONE

    # --- mission
    def _nav_item_after(self, index: int) -> MissionItem | None:
        for item in self.mission[index + 1:]:
            if item.is_nav:
                return item
        return None

    def start_item(self, v: NavStatus) -> tuple[NavEvent, ...]:
        """Set up the current item: DO items apply at once; nav items set the triplet."""
        while self.mission_current < len(self.mission) and not self.mission[self.mission_current].is_nav:
            self._apply_do_item(self.mission[self.mission_current])
            self.mission_current += 1
        if self.mission_current >= len(self.mission):
            return self._finish(v)
        item = self.mission[self.mission_current]
        pos = v.position
        previous = self.target if self.phase != AutoPhase.DONE else pos
        target = item.target_local(v.origin, pos)
        yaw = math.radians(item.param4) if item.command in (mavlink.MAV_CMD_NAV_WAYPOINT, mavlink.MAV_CMD_NAV_TAKEOFF) \
            and math.isfinite(item.param4) else NAN
        radius = item.param2 if item.command == mavlink.MAV_CMD_NAV_WAYPOINT and item.param2 > 0 else NAN
        if item.command == mavlink.MAV_CMD_NAV_TAKEOFF or (v.landed and item.command != mavlink.MAV_CMD_NAV_LAND):
            # PX4's mission takeoff: climb vertically first when the mission starts on the ground.
            climb = min(target[2], -v.params["MIS_TAKEOFF_ALT"]) if item.command != mavlink.MAV_CMD_NAV_TAKEOFF else target[2]
            self.phase = AutoPhase.CLIMB
            self.target = (pos[0], pos[1], climb)
            if item.command == mavlink.MAV_CMD_NAV_TAKEOFF and item.has_position():
                self.target = (target[0], target[1], target[2])
            self.triplet = Triplet(self.target, Kind.TAKEOFF, yaw=v.dyn.yaw)
            if item.command == mavlink.MAV_CMD_NAV_TAKEOFF:  # PX4 v1.16.1's words (measured)
                return (Say(f"Climb to {v.home[2] - self.target[2]:.1f} meters above home"),)
            return NONE
        if item.command == mavlink.MAV_CMD_NAV_LAND:
            self.phase = AutoPhase.CRUISE
            self.target = (target[0], target[1], pos[2]) if item.has_position() else pos
            self.triplet = Triplet(self.target, Kind.POSITION, previous=previous, cruise_speed=self.cruise())
            return NONE
        if item.command == mavlink.MAV_CMD_NAV_RETURN_TO_LAUNCH:
            # PX4 v1.16.1 (measured): "Returning to launch", Return mode, and no "Mission finished".
            return (Say("Returning to launch"),) + self._advance(v) + (Switch(FlightMode.RTL),)
        self.phase = AutoPhase.CRUISE
        self.target = target
        hold = item.param1 if item.command in (mavlink.MAV_CMD_NAV_WAYPOINT, mavlink.MAV_CMD_NAV_LOITER_TIME) else 0.0
        following = self._nav_item_after(self.mission_current)
        nxt = None
        if following is not None and hold <= 0.0 and item.command == mavlink.MAV_CMD_NAV_WAYPOINT \
                and following.command in (mavlink.MAV_CMD_NAV_WAYPOINT, mavlink.MAV_CMD_NAV_LOITER_TIME,
                                          mavlink.MAV_CMD_NAV_LOITER_UNLIM, mavlink.MAV_CMD_NAV_LAND):
            nxt = following.target_local(v.origin, target)
        kind = Kind.LOITER if item.command in (mavlink.MAV_CMD_NAV_LOITER_UNLIM, mavlink.MAV_CMD_NAV_DELAY) else Kind.POSITION
        self.triplet = Triplet(target, kind, previous=previous, next=nxt, acceptance_radius=radius, yaw=yaw,
                               cruise_speed=self.cruise())
        return NONE

    def _apply_do_item(self, item: MissionItem) -> None:
        if item.command == mavlink.MAV_CMD_DO_CHANGE_SPEED and item.param2 > 0:
            self.speed_override = item.param2

    def _update_mission(self, v: NavStatus) -> tuple[NavEvent, ...]:
        if self.mission_finished or self.mission_current >= len(self.mission):
            return NONE
        p = v.params
        item = self.mission[self.mission_current]
        radius = item.param2 if item.command == mavlink.MAV_CMD_NAV_WAYPOINT and item.param2 > 0 else p["NAV_ACC_RAD"]
        if self.phase == AutoPhase.CLIMB:
            if abs(v.dyn.pos[2] - self.target[2]) < p["NAV_MC_ALT_RAD"]:
                if item.command == mavlink.MAV_CMD_NAV_TAKEOFF:
                    return self._advance(v)
                self.phase = AutoPhase.DONE  # the leg to the item starts where the climb ended
                return self.start_item(v)
        elif self.phase == AutoPhase.CRUISE:
            if reached(v.position, self.target, radius, p["NAV_MC_ALT_RAD"]):
                if item.command == mavlink.MAV_CMD_NAV_LAND:
                    self.phase = AutoPhase.LAND
                    self.triplet = Triplet((self.target[0], self.target[1], NAN), Kind.LAND)
                    self.target = (self.target[0], self.target[1], 0.0)
                elif item.command == mavlink.MAV_CMD_NAV_DELAY:
                    self.phase = AutoPhase.HOLD_TIME
                    self._phase_until = v.time_s + max(0.0, item.param1)
                elif item.command == mavlink.MAV_CMD_NAV_LOITER_UNLIM:
                    self.phase = AutoPhase.HOLD_TIME
                    self._phase_until = math.inf
                else:
                    hold = item.param1 if item.command in (mavlink.MAV_CMD_NAV_WAYPOINT, mavlink.MAV_CMD_NAV_LOITER_TIME) else 0.0
                    if hold > 0.0:
                        self.phase = AutoPhase.HOLD_TIME
                        self._phase_until = v.time_s + hold
                    else:
                        return self._advance(v)
        elif self.phase == AutoPhase.HOLD_TIME:
            if v.time_s >= self._phase_until:
                return self._advance(v)
        elif self.phase == AutoPhase.LAND:
            if v.landed:
                return self._advance(v)
        return NONE

    def _advance(self, v: NavStatus) -> tuple[NavEvent, ...]:
        self.reached_items.append(self.mission_current)
        self.seq_reached = self.mission_current
        self.mission_current += 1
        return self.start_item(v)

    def _finish(self, v: NavStatus) -> tuple[NavEvent, ...]:
        returning = 0 <= self.seq_reached < len(self.mission) \
            and self.mission[self.seq_reached].command == mavlink.MAV_CMD_NAV_RETURN_TO_LAUNCH
        self.mission_finished = True
        self.mission_current = len(self.mission)
        self.phase = AutoPhase.DONE
        # One that ends in a return says only "Returning to launch" (PX4 v1.16.1, measured).
        out = NONE if returning else (Say("Mission finished, loitering"),)
        if not v.landed and self.triplet is not None:
            # PX4 loiters at the last item (where the trajectory is heading anyway), and its commander
            # switches to Hold (v1.14.0 and v1.16.1, measured).
            out += (HoldAt(self.target, NAN),)
        return out
