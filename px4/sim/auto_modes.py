"""The auto modes the built-in flight controller flies without the navigator's triplets (PX4 flies them as
flight tasks): Follow Target, and the orbit with its approach (takeoff, hold, land, return and missions
are px4/sim/mission_navigator.py's). A part of the autopilot of its own: it reads the vehicle's
published state and returns each cycle's `TaskStep` for the commander to fly.

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
from typing import NamedTuple, Protocol

from physics.dynamics import QuadrotorDynamics
from px4.params import ParamStore
from px4.sim.control import TrajectorySetpoint
from px4.sim.flight_task import Kind, Triplet
from px4.sim.mission_navigator import reached
from px4.sim.orbit import Orbit

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


class TaskStep(NamedTuple):
    """One cycle of Orbit or Follow Target, for the commander to fly."""

    setpoint: TrajectorySetpoint | None  # the task's own; None: the auto flight task flies the navigator's triplet
    triplet: Triplet | None = None  # waypoints to hand the navigator first (Orbit's approach)
    loiter_here: bool = False  # (no setpoint) loiter at the braking point unless already loitering
    restart_auto: bool = False  # a later auto flight task starts afresh, not from this task's setpoints


class TaskStatus(Protocol):
    """What Orbit and Follow Target read of the vehicle (the commander's published state)."""

    time_s: float
    home: tuple[float, float, float]
    params: ParamStore
    dyn: QuadrotorDynamics

    @property
    def position(self) -> tuple[float, float, float]: ...


class OrbitAndFollow:
    """PX4's orbit and follow-target flight tasks: the orbit commanded or the target followed, and the
    heading they turn."""

    def __init__(self) -> None:
        self.orbit: Orbit | None = None
        self._follow: FollowTarget | None = None
        self._yaw = NAN  # the last heading setpoint (the heading turns gradually)

    def start_orbit(self, orbit: Orbit, yaw: float) -> None:
        self.orbit = orbit
        self._yaw = yaw

    # --- follow target
    def follow_target(self, position: tuple[float, float, float], velocity: tuple[float, float, float],
                      now_s: float, following: bool) -> None:
        """A FOLLOW_TARGET arrived (local NED; velocity NaN where not given); `following`: in Follow Target."""
        last = self._follow
        course = last.course if last is not None and following else math.nan
        if math.hypot(velocity[0], velocity[1]) > FOLLOW_COURSE_SPEED:  # False for NaN
            course = math.atan2(velocity[1], velocity[0])
        point = last.point if last is not None and following else None
        self._follow = FollowTarget(position, velocity, now_s, course, point)

    def follow_step(self, v: TaskStatus, dt: float) -> TaskStep:
        """The follow point, filtered, with the target's velocity fed forward, nose to the target; Hold
        where it is without a target."""
        target, pos = self._follow, v.position
        if target is None or v.time_s - target.time_s > FOLLOW_TARGET_TIMEOUT_S:
            return TaskStep(None, loiter_here=True)
        age = v.time_s - target.time_s
        vel = tuple(x if math.isfinite(x) else 0.0 for x in target.velocity)
        tn, te, td = (target.position[i] + vel[i] * age for i in range(3))
        if math.isnan(target.course):
            target.course = math.atan2(te - pos[1], tn - pos[0])
        p = v.params
        side = target.course + math.radians(p["FLW_TGT_FA"])
        follow_alt = int(p["FLW_TGT_ALT_M"]) == FOLLOW_ALT_TARGET and math.isfinite(td)
        raw = (tn + p["FLW_TGT_DST"] * math.cos(side), te + p["FLW_TGT_DST"] * math.sin(side),
               (td if follow_alt else v.home[2]) - p["FLW_TGT_HT"])
        vz = vel[2] if follow_alt else 0.0
        point = target.point if target.point is not None else pos
        # Moved with the target, pulled towards the follow point: no lag behind a steady target, and
        # a smooth approach (PX4's follow-position filter, FLW_TGT_RS).
        gain = dt / (FOLLOW_FILTER_S * (1.0 + 10.0 * p["FLW_TGT_RS"]) + dt)
        target.point = tuple(point[i] + (vel[0], vel[1], vz)[i] * dt + (raw[i] - point[i]) * gain for i in range(3))
        want = math.atan2(te - pos[1], tn - pos[0])
        yaw_prev = self._yaw if math.isfinite(self._yaw) else v.dyn.yaw
        step = math.radians(p["MPC_YAWRAUTO_MAX"]) * dt
        self._yaw = math.remainder(yaw_prev + min(max(math.remainder(want - yaw_prev, math.tau), -step), step), math.tau)
        # Hold after it starts its task afresh.
        return TaskStep(TrajectorySetpoint(target.point, (vel[0], vel[1], vz), (NAN, NAN, NAN), self._yaw),
                        restart_auto=True)

    # --- orbit
    def orbit_step(self, v: TaskStatus, dt: float) -> TaskStep:
        """Orbit: the line to the circle as an auto leg at MPC_XY_CRUISE, then round."""
        orbit, pos = self.orbit, v.position
        triplet = None
        if orbit.approaching:
            if orbit.entry is None:
                orbit.entry = orbit.entry_point(pos, v.dyn.yaw)
                triplet = Triplet(orbit.entry, Kind.POSITION, previous=pos, cruise_speed=v.params["MPC_XY_CRUISE"])
            if not reached(pos, orbit.entry, ORBIT_ENTRY_RADIUS, v.params["NAV_MC_ALT_RAD"]):
                return TaskStep(None, triplet)
            orbit.approaching = False
        sp = orbit.setpoint(pos, self._yaw, math.radians(v.params["MPC_YAWRAUTO_MAX"]), dt)
        self._yaw = sp.yaw if math.isfinite(sp.yaw) else v.dyn.yaw
        # A later auto mode starts its task afresh, not from the line's end.
        return TaskStep(sp, triplet, restart_auto=True)
