"""The auto modes the built-in flight controller flies without the navigator's triplets (PX4 flies them as
flight tasks): Follow Target, and the orbit with its approach (takeoff, hold, land, return and missions
are px4/sim/mission_navigator.py's).

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

from px4.modes import FlightMode
from px4.sim.control import TrajectorySetpoint
from px4.sim.flight_task import Kind, Triplet
from px4.sim.mission_navigator import reached

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
    """Follow Target and Orbit.

    A mixin of `Autopilot` (px4/sim/autopilot.py), whose state it reads and sets.
    """

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
            if self._navigator.triplet is None or self._navigator.triplet.kind != Kind.LOITER:
                self._navigator.fly(Triplet(self._braking_point(), Kind.LOITER))
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
                self._navigator.fly(Triplet(orbit.entry, Kind.POSITION, previous=pos,
                                            cruise_speed=self.params["MPC_XY_CRUISE"]))
            if not reached(pos, orbit.entry, ORBIT_ENTRY_RADIUS, self.params["NAV_MC_ALT_RAD"]):
                out = self._auto_setpoint(dt)
                return None, out.speed_up, out.speed_down
            orbit.approaching = False
            self._auto_active = False  # a later auto mode starts its task afresh, not from the line's end
        sp = orbit.setpoint(pos, self._orbit_yaw, math.radians(self.params["MPC_YAWRAUTO_MAX"]), dt)
        self._orbit_yaw = sp.yaw if math.isfinite(sp.yaw) else self.dyn.yaw
        self.current_setpoint = sp
        return None, None, None
