"""The auto modes of the built-in flight controller as PX4's navigator flies them: takeoff, return
(climb to the return altitude, fly home, descend, land) and missions (items one after another,
DO items applied on the way, loiter at the end), with the mission protocol's side (a complete
upload replaces the mission; the current item can be set).
"""

from __future__ import annotations

import math

from pymavlink.dialects.v20 import common as mavlink

from px4.modes import FlightMode
from px4.sim.autopilot_types import ACCEPTED, AutoPhase, CommandResult, denied
from px4.sim.flight_task import Kind, Triplet
from px4.sim.mission_items import MissionItem

# m: the approach line ends this close to the circle (horizontally; vertically NAV_MC_ALT_RAD)
ORBIT_ENTRY_RADIUS = 1.0


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
            # As PX4: done within NAV_MC_ALT_RAD of the takeoff altitude, then Hold at that altitude.
            self.say(mavlink.MAV_SEVERITY_INFO, "Takeoff complete")
            self._hold_at(self._target, yaw=self._triplet.yaw if self._triplet else math.nan)

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
            self._set_triplet(Triplet(self._target, Kind.TAKEOFF, yaw=self.dyn.yaw))
            return
        if item.command == mavlink.MAV_CMD_NAV_LAND:
            self._phase = AutoPhase.CRUISE
            self._target = (target[0], target[1], pos[2]) if item.has_position() else pos
            self._set_triplet(Triplet(self._target, Kind.POSITION, previous=previous, cruise_speed=self._cruise()))
            return
        if item.command == mavlink.MAV_CMD_NAV_RETURN_TO_LAUNCH:
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
        self.mission_finished = True
        self.mission_current = len(self.mission)
        self._phase = AutoPhase.DONE
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
