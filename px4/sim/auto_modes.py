"""The auto modes of the built-in flight controller as PX4's navigator flies them: takeoff, return
(climb to the return altitude, fly home, descend, land), missions (items one after another, DO items
applied on the way, loiter at the end), with the mission protocol's side (a complete upload replaces
the mission; the current item can be set), Follow Target, and the orbit's approach.

Follow Target (PX4's FlightTaskAutoFollowTarget, as a MAVSDK follow_me client drives it with
FOLLOW_TARGET messages): the vehicle keeps FLW_TGT_DST from the target, at FLW_TGT_FA from the
target's course (180: behind), FLW_TGT_HT above home (FLW_TGT_ALT_M 2: above the target), nose to the
target. Before the target has moved, its course is taken as the bearing from the vehicle to it, so the
vehicle does not circle round it at the start. Measured on PX4 v1.16.1 SIH (MAVSDK follow_me, height
8 m, distance 5 m, angle 180, a target 10 m north, still for 5 s, then north at 1 m/s): 7 m up within
2 s, 4.6 m behind the target after 4 s, then 4.5-4.6 m behind at 0.8-1.0 m/s, 8.0-8.9 m high; Hold
after stop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pymavlink.dialects.v20 import common as mavlink

from px4.modes import FlightMode
from px4.sim.autopilot_types import ACCEPTED, AutoPhase, CommandResult, denied
from px4.sim.control import TrajectorySetpoint
from px4.sim.flight_task import Kind, Triplet
from px4.sim.mission_items import MissionItem

# m: the approach line ends this close to the circle (horizontally; vertically NAV_MC_ALT_RAD)
ORBIT_ENTRY_RADIUS = 1.0
# A target slower than this keeps the course it had (PX4's minimum speed for a heading change).
FOLLOW_COURSE_SPEED = 0.1  # m/s
# Without a FOLLOW_TARGET for this long the target is lost and the vehicle holds where it is.
FOLLOW_TARGET_TIMEOUT_S = 3.0
FOLLOW_ALT_TARGET = 2  # FLW_TGT_ALT_M: follow the target's altitude
# s: the follow point's filter at FLW_TGT_RS 0 (the approach from 10 m away took PX4 about 4 s)
FOLLOW_FILTER_S = 0.5
NAN = math.nan


@dataclass
class FollowTarget:
    """The last FOLLOW_TARGET: local NED position and velocity (NaN: not given), and when it came."""

    position: tuple[float, float, float]
    velocity: tuple[float, float, float]
    time_s: float
    course: float = math.nan  # rad; NaN: not known yet
    point: tuple[float, float, float] | None = None  # the filtered follow point flown to


class AutoModes:
    """Takeoff, return and mission navigation.

    A mixin of `Autopilot` (px4/sim/autopilot.py), whose state it reads and sets.
    """

    # ------------------------------------------------------------------ mission protocol side
    def set_mission(self, items: list[MissionItem]) -> None:
        """A complete upload replaces the mission and restarts it from the first item; the navigator
        checks it on its next cycle."""
        self.mission = list(items)
        self.mission_current = 0
        self.seq_reached = -1
        self.mission_finished = False
        self._mission_check_due = True
        if self.mode == FlightMode.MISSION:
            self._enter_mode(FlightMode.MISSION)

    def set_mission_current(self, seq: int) -> CommandResult:
        """MAV_CMD_DO_SET_MISSION_CURRENT / MISSION_SET_CURRENT."""
        if not 0 <= seq < max(1, len(self.mission)):
            return denied(f"Mission item {seq} does not exist ({len(self.mission)} items)")
        self.mission_current = seq
        self.mission_finished = False
        if self.mode == FlightMode.MISSION:
            self._start_mission_item()
        return ACCEPTED


    # --- follow target
    def follow_target(self, position: tuple[float, float, float], velocity: tuple[float, float, float]) -> None:
        """A FOLLOW_TARGET arrived (local NED; velocity NaN where not given)."""
        last = self._follow
        course = last.course if last is not None and self.mode == FlightMode.FOLLOW_TARGET else math.nan
        if math.hypot(velocity[0], velocity[1]) > FOLLOW_COURSE_SPEED:  # False for NaN
            course = math.atan2(velocity[1], velocity[0])
        point = last.point if last is not None and self.mode == FlightMode.FOLLOW_TARGET else None
        self._follow = FollowTarget(position, velocity, self.time_s, course, point)

    def _navigate_follow(self, dt: float) -> tuple[float | None, float | None, float | None]:
        """The follow point, filtered, with the target's velocity fed forward, nose to the target; Hold
        where it is without a target. Returns the controller's caps."""
        target, pos = self._follow, self.position
        if target is None or self.time_s - target.time_s > FOLLOW_TARGET_TIMEOUT_S:
            if self._triplet is None or self._triplet.kind != Kind.LOITER:
                self._set_triplet(Triplet(self._braking_point(), Kind.LOITER))
            out = self._auto_setpoint(dt)
            return None, out.speed_up, out.speed_down
        self._auto_active = False  # Hold after it starts its task afresh
        age = self.time_s - target.time_s
        vel = tuple(v if math.isfinite(v) else 0.0 for v in target.velocity)
        tn, te, td = (target.position[i] + vel[i] * age for i in range(3))
        if math.isnan(target.course):
            target.course = math.atan2(te - pos[1], tn - pos[0])
        p = self.params
        side = target.course + math.radians(p["FLW_TGT_FA"])
        follow_alt = int(p["FLW_TGT_ALT_M"]) == FOLLOW_ALT_TARGET and math.isfinite(td)
        raw = (tn + p["FLW_TGT_DST"] * math.cos(side), te + p["FLW_TGT_DST"] * math.sin(side),
               (td if follow_alt else self.home[2]) - p["FLW_TGT_HT"])
        vz = vel[2] if follow_alt else 0.0
        point = target.point if target.point is not None else pos
        # Moved with the target, pulled towards the follow point: no lag behind a steady target, and
        # a smooth approach (PX4's follow-position filter, FLW_TGT_RS).
        gain = dt / (FOLLOW_FILTER_S * (1.0 + 10.0 * p["FLW_TGT_RS"]) + dt)
        target.point = tuple(point[i] + (vel[0], vel[1], vz)[i] * dt + (raw[i] - point[i]) * gain for i in range(3))
        want = math.atan2(te - pos[1], tn - pos[0])
        yaw_prev = self._orbit_yaw if math.isfinite(self._orbit_yaw) else self.dyn.yaw
        step = math.radians(p["MPC_YAWRAUTO_MAX"]) * dt
        self._orbit_yaw = math.remainder(yaw_prev + min(max(math.remainder(want - yaw_prev, math.tau), -step), step),
                                         math.tau)
        self.current_setpoint = TrajectorySetpoint(target.point, (vel[0], vel[1], vz), (NAN, NAN, NAN), self._orbit_yaw)
        return None, None, None

    # --- orbit
    def _navigate_orbit(self, dt: float) -> tuple[float | None, float | None, float | None]:
        """Orbit: the line to the circle as an auto leg at MPC_XY_CRUISE, then round; the controller's caps."""
        orbit, pos = self._orbit, self.position
        if orbit.approaching:
            if orbit.entry is None:
                orbit.entry = orbit.entry_point(pos, self.dyn.yaw)
                self._set_triplet(Triplet(orbit.entry, Kind.POSITION, previous=pos,
                                          cruise_speed=self.params["MPC_XY_CRUISE"]))
            if not self._reached(orbit.entry, ORBIT_ENTRY_RADIUS):
                out = self._auto_setpoint(dt)
                return None, out.speed_up, out.speed_down
            orbit.approaching = False
            self._auto_active = False  # a later auto mode starts its task afresh, not from the line's end
        sp = orbit.setpoint(pos, self._orbit_yaw, math.radians(self.params["MPC_YAWRAUTO_MAX"]), dt)
        self._orbit_yaw = sp.yaw if math.isfinite(sp.yaw) else self.dyn.yaw
        self.current_setpoint = sp
        return None, None, None

    # --- takeoff and return
    def _navigate_takeoff(self) -> None:
        if self._reached(self._target, self.params["NAV_ACC_RAD"]):
            # As PX4: done within NAV_MC_ALT_RAD of the takeoff altitude, then Hold at that altitude
            # (v1.16.1 says nothing then: its "Takeoff detected" came at lift-off).
            self._hold_at(self._target, yaw=self._triplet.yaw if self._triplet else math.nan)

    def _start_return(self) -> None:
        """Return: climb to the return altitude where the vehicle is, saying where it returns at."""
        pos = self.position
        self._rtl_alt = self._return_altitude()
        self._phase = AutoPhase.CLIMB
        self._target = (pos[0], pos[1], -self._rtl_alt)
        self._set_triplet(Triplet(self._target, Kind.POSITION, previous=pos))
        above = self._rtl_alt + self.home[2]
        self.say(mavlink.MAV_SEVERITY_INFO, f"RTL: start return at {self.origin.alt_m + self._rtl_alt:.0f} m "
                                            f"({above:.0f} m above destination)")

    def _return_altitude(self) -> float:
        """PX4 v1.16's return altitude (RTL::computeReturnAltitude), up from the local origin: within
        NAV_ACC_RAD of home twice the distance, within RTL_MIN_DIST the RTL_CONE_ANG cone's surface, else
        RTL_RETURN_ALT, outside NAV_ACC_RAD at least twice NAV_ACC_RAD; never below the vehicle.
        Measured: RC lost in Position mode at 1.2 m over home returns at that altitude and lands."""
        p, pos, home = self.params, self.position, self.home
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

    def _navigate_rtl(self) -> None:
        home = self.home
        pos = self.position
        if self._phase == AutoPhase.CLIMB:
            if abs(self.dyn.pos[2] - self._target[2]) < self.params["NAV_MC_ALT_RAD"]:
                self._phase = AutoPhase.CRUISE
                previous = self._target
                self._target = (home[0], home[1], -self._rtl_alt)
                self._set_triplet(Triplet(self._target, Kind.POSITION, previous=previous))
        elif self._phase == AutoPhase.CRUISE:
            if self._reached(self._target, self.params["NAV_ACC_RAD"]):
                self._phase = AutoPhase.DESCEND
                self._target = (home[0], home[1], -min(self._rtl_alt, self.params["RTL_DESCEND_ALT"]))
                self._set_triplet(Triplet(self._target, Kind.POSITION, previous=pos))
        elif self._phase == AutoPhase.DESCEND:
            if self._reached(self._target, self.params["NAV_ACC_RAD"]):
                self._phase = AutoPhase.LAND
                self.say(mavlink.MAV_SEVERITY_INFO, "RTL: land at destination")
                self._target = (home[0], home[1], 0.0)
                self._set_triplet(Triplet((home[0], home[1], math.nan), Kind.LAND))

    # --- mission
    def _nav_item_after(self, index: int) -> MissionItem | None:
        for item in self.mission[index + 1:]:
            if item.is_nav:
                return item
        return None

    def _start_mission_item(self) -> None:
        """Set up the current item: DO items apply at once; nav items set the triplet."""
        while self.mission_current < len(self.mission) and not self.mission[self.mission_current].is_nav:
            self._apply_do_item(self.mission[self.mission_current])
            self.mission_current += 1
        if self.mission_current >= len(self.mission):
            self._finish_mission()
            return
        item = self.mission[self.mission_current]
        pos = self.position
        previous = self._target if self._phase != AutoPhase.DONE else pos
        target = item.target_local(self.origin, pos)
        yaw = math.radians(item.param4) if item.command in (mavlink.MAV_CMD_NAV_WAYPOINT, mavlink.MAV_CMD_NAV_TAKEOFF) \
            and math.isfinite(item.param4) else math.nan
        radius = item.param2 if item.command == mavlink.MAV_CMD_NAV_WAYPOINT and item.param2 > 0 else math.nan
        if item.command == mavlink.MAV_CMD_NAV_TAKEOFF or (self.landed and item.command != mavlink.MAV_CMD_NAV_LAND):
            # PX4's mission takeoff: climb vertically first when the mission starts on the ground.
            climb = min(target[2], -self.params["MIS_TAKEOFF_ALT"]) if item.command != mavlink.MAV_CMD_NAV_TAKEOFF else target[2]
            self._phase = AutoPhase.CLIMB
            self._target = (pos[0], pos[1], climb)
            if item.command == mavlink.MAV_CMD_NAV_TAKEOFF and item.has_position():
                self._target = (target[0], target[1], target[2])
            if item.command == mavlink.MAV_CMD_NAV_TAKEOFF:  # PX4 v1.16.1's words (measured)
                self.say(mavlink.MAV_SEVERITY_INFO, f"Climb to {self.home[2] - self._target[2]:.1f} meters above home")
            self._set_triplet(Triplet(self._target, Kind.TAKEOFF, yaw=self.dyn.yaw))
            return
        if item.command == mavlink.MAV_CMD_NAV_LAND:
            self._phase = AutoPhase.CRUISE
            self._target = (target[0], target[1], pos[2]) if item.has_position() else pos
            self._set_triplet(Triplet(self._target, Kind.POSITION, previous=previous, cruise_speed=self._cruise()))
            return
        if item.command == mavlink.MAV_CMD_NAV_RETURN_TO_LAUNCH:
            # PX4 v1.16.1 (measured): "Returning to launch", Return mode, and no "Mission finished".
            self.say(mavlink.MAV_SEVERITY_INFO, "Returning to launch")
            self._advance_mission(report=True)
            self._enter_mode(FlightMode.RTL)
            return
        self._phase = AutoPhase.CRUISE
        self._target = target
        hold = item.param1 if item.command in (mavlink.MAV_CMD_NAV_WAYPOINT, mavlink.MAV_CMD_NAV_LOITER_TIME) else 0.0
        following = self._nav_item_after(self.mission_current)
        nxt = None
        if following is not None and hold <= 0.0 and item.command == mavlink.MAV_CMD_NAV_WAYPOINT \
                and following.command in (mavlink.MAV_CMD_NAV_WAYPOINT, mavlink.MAV_CMD_NAV_LOITER_TIME,
                                          mavlink.MAV_CMD_NAV_LOITER_UNLIM, mavlink.MAV_CMD_NAV_LAND):
            nxt = following.target_local(self.origin, target)
        kind = Kind.LOITER if item.command in (mavlink.MAV_CMD_NAV_LOITER_UNLIM, mavlink.MAV_CMD_NAV_DELAY) else Kind.POSITION
        self._set_triplet(Triplet(target, kind, previous=previous, next=nxt, acceptance_radius=radius, yaw=yaw,
                                  cruise_speed=self._cruise()))

    def _apply_do_item(self, item: MissionItem) -> None:
        if item.command == mavlink.MAV_CMD_DO_CHANGE_SPEED and item.param2 > 0:
            self._speed_override = item.param2

    def _navigate_mission(self) -> None:
        if self.mission_finished or self.mission_current >= len(self.mission):
            return
        item = self.mission[self.mission_current]
        radius = item.param2 if item.command == mavlink.MAV_CMD_NAV_WAYPOINT and item.param2 > 0 else self.params["NAV_ACC_RAD"]
        if self._phase == AutoPhase.CLIMB:
            if abs(self.dyn.pos[2] - self._target[2]) < self.params["NAV_MC_ALT_RAD"]:
                if item.command == mavlink.MAV_CMD_NAV_TAKEOFF:
                    self._advance_mission(report=True)
                else:
                    self._phase = AutoPhase.DONE  # the leg to the item starts where the climb ended
                    self._start_mission_item()
        elif self._phase == AutoPhase.CRUISE:
            if self._reached(self._target, radius):
                if item.command == mavlink.MAV_CMD_NAV_LAND:
                    self._phase = AutoPhase.LAND
                    self._set_triplet(Triplet((self._target[0], self._target[1], math.nan), Kind.LAND))
                    self._target = (self._target[0], self._target[1], 0.0)
                elif item.command == mavlink.MAV_CMD_NAV_DELAY:
                    self._phase = AutoPhase.HOLD_TIME
                    self._phase_until = self.time_s + max(0.0, item.param1)
                elif item.command == mavlink.MAV_CMD_NAV_LOITER_UNLIM:
                    self._phase = AutoPhase.HOLD_TIME
                    self._phase_until = math.inf
                else:
                    hold = item.param1 if item.command in (mavlink.MAV_CMD_NAV_WAYPOINT, mavlink.MAV_CMD_NAV_LOITER_TIME) else 0.0
                    if hold > 0.0:
                        self._phase = AutoPhase.HOLD_TIME
                        self._phase_until = self.time_s + hold
                    else:
                        self._advance_mission(report=True)
        elif self._phase == AutoPhase.HOLD_TIME:
            if self.time_s >= self._phase_until:
                self._advance_mission(report=True)
        elif self._phase == AutoPhase.LAND:
            if self.landed:
                self._advance_mission(report=True)

    def _advance_mission(self, report: bool) -> None:
        if report:
            self.reached_items.append(self.mission_current)
            self.seq_reached = self.mission_current
        self.mission_current += 1
        self._start_mission_item()

    def _finish_mission(self) -> None:
        returning = 0 <= self.seq_reached < len(self.mission) \
            and self.mission[self.seq_reached].command == mavlink.MAV_CMD_NAV_RETURN_TO_LAUNCH
        self.mission_finished = True
        self.mission_current = len(self.mission)
        self._phase = AutoPhase.DONE
        if not returning:  # one that ends in a return says only "Returning to launch" (PX4 v1.16.1, measured)
            self.say(mavlink.MAV_SEVERITY_INFO, "Mission finished, loitering")
        if not self.landed and self._triplet is not None:
            # PX4 loiters at the last item (where the trajectory is heading anyway), and its commander
            # switches to Hold (v1.14.0 and v1.16.1, measured).
            self._hold_at(self._target, yaw=math.nan)

    def _hold_at(self, target: tuple[float, float, float], yaw: float) -> None:
        """Hold, loitering at `target` rather than at the braking point: how PX4's commander ends a
        takeoff or a mission (a mode the user chose, so the one the vehicle returns to after a disarm)."""
        self._user_mode(FlightMode.HOLD)
        self._target = target
        self._set_triplet(Triplet(target, Kind.LOITER, yaw=yaw))
