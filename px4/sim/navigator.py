"""Smooth setpoints for auto modes, as PX4's flight tasks make them (lib/motion_planning).

Auto modes (takeoff, hold, goto, mission, return, land) ask for "be at P" or "descend at V";
PX4 turns that into a jerk-limited trajectory that the position controller follows with velocity
and acceleration feed-forward. The same algorithm here, so that the built-in vehicle climbs,
cruises, turns and stops when and where PX4 would:

* per axis, a velocity profile with limited jerk, acceleration and velocity (three phases:
  jerk until the acceleration peaks, constant acceleration, opposite jerk until it is gone), the
  three axes stretched to finish together;
* the velocity each axis aims for comes from the distance left: the fastest speed from which the
  trajectory can still stop, or slow to the speed at which the corner at the next waypoint can be
  flown with the acceptance radius as turning room, capped at the cruise speed;
* in a turn the trajectory steers towards a point on the next leg (an L1 point), which is what
  cuts corners;
* when the vehicle lags the trajectory by more than MPC_XY_ERR_MAX the trajectory's clock slows
  down, so a slow vehicle is never left behind.

Constraints (MPC_JERK_AUTO, MPC_ACC_HOR, MPC_XY_CRUISE, MPC_ACC_UP_MAX, MPC_Z_V_AUTO_UP/DN...)
are chosen by the caller per leg, as PX4's FlightTaskAuto chooses them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

Vec3 = tuple[float, float, float]
# A trajectory this close to its target and this still is done (m, m/s, m/s^2); well below what a
# vehicle's position control can tell apart.
SETTLED_M = 1e-3
SETTLED_V = 1e-3
SETTLED_A = 1e-3


def _sign(x: float) -> int:
    return 1 if x > 0.0 else (-1 if x < 0.0 else 0)


class AxisTrajectory:
    """A jerk-limited velocity profile on one axis: state (a, v, x) and the phases towards a velocity."""

    def __init__(self) -> None:
        self.max_jerk = 1.0
        self.max_accel = 1.0
        self.max_vel = 1.0
        self.a = self.v = self.x = 0.0
        self._start = (0.0, 0.0, 0.0)  # (a, v, x) when the phases were last planned
        self._t = 0.0  # time since then
        self._dir = 0
        self._t1 = self._t2 = self._t3 = 0.0

    def reset(self, a: float, v: float, x: float) -> None:
        self.a, self.v, self.x = a, v, x
        self._start = (a, v, x)
        self._t = 0.0
        self._t1 = self._t2 = self._t3 = 0.0

    def set_position(self, x: float) -> None:
        """Move the trajectory to `x`, keeping its velocity and the planned phases."""
        self._start = (self._start[0], self._start[1], self._start[2] + (x - self.x))
        self.x = x

    @property
    def total_time(self) -> float:
        return self._t1 + self._t2 + self._t3

    def plan(self, vel_sp: float) -> None:
        """Phases that reach `vel_sp` (capped at max_vel) in the least time."""
        # Locals rather than attributes: three axes plan 50 times a second in every auto mode.
        a, v = self.a, self.v
        target = self._target = min(max(vel_sp, -self.max_vel), self.max_vel)
        self._start = (a, v, self.x)
        self._t = 0.0
        if a == 0.0 and target == v:  # already there (a hovering axis): nothing to plan
            self._dir = 0
            self._t1 = self._t2 = self._t3 = 0.0
            return
        direction = self._dir = self._direction()
        jerk = direction * self.max_jerk
        if jerk == 0.0:
            self._t1 = self._t2 = self._t3 = 0.0
            return
        dv = target - v
        t1 = self._t1 = self._rise_time(a, dv, jerk)
        t3 = self._t3 = max(a / jerk + t1, 0.0)
        self._t2 = self._hold_time(t1, t3, a, dv, jerk)

    def plan_in(self, total: float) -> None:
        """Re-plan the current target to take `total` seconds (to finish with a slower axis)."""
        jerk = self._dir * self.max_jerk
        if jerk == 0.0:
            return
        dv = self._target - self.v
        a0 = self.a
        disc = total * total * jerk * jerk + 2.0 * total * a0 * jerk - a0 * a0 - 4.0 * jerk * dv
        t1 = 0.0
        if disc >= 0.0:
            root = math.sqrt(disc)
            b = jerk * total - a0
            for cand in (max((-b + root) / (-2.0 * jerk), 0.0), max((-b - root) / (-2.0 * jerk), 0.0)):
                t3 = a0 / jerk + cand
                if t3 >= 0.0 and cand + t3 <= total:
                    t1 = cand
                    break
        self._t1 = self._limit_rise(a0, jerk, t1)
        self._t3 = max(a0 / jerk + self._t1, 0.0)
        self._t2 = max(total - self._t1 - self._t3, 0.0)

    def advance(self, dt: float, stretch: float = 1.0) -> None:
        """Move the state along the planned phases by dt (times `stretch`, 0..1)."""
        self._t += dt * stretch
        left = self._t
        a, v, x = self._start
        if self._dir == 0:  # no phases: coasting at constant velocity
            self.a, self.v, self.x = 0.0, v, x + v * left
            return
        j = self._dir * self.max_jerk
        # Three phases: +jerk for t1, none for t2, -jerk for t3; then coasting.
        t = self._t1 if left > self._t1 else left
        t2 = t * t
        a, v, x = a + j * t, v + a * t + 0.5 * j * t2, x + v * t + 0.5 * a * t2 + j * t2 * t / 6.0
        left -= t
        if left > 0.0:
            t = self._t2 if left > self._t2 else left
            v, x = v + a * t, x + v * t + 0.5 * a * t * t
            left -= t
            if left > 0.0:
                t = self._t3 if left > self._t3 else left
                t2 = t * t
                a, v, x = a - j * t, v + a * t - 0.5 * j * t2, x + v * t + 0.5 * a * t2 - j * t2 * t / 6.0
                left -= t
                if left > 0.0:
                    a, x = 0.0, x + v * left
        self.a, self.v, self.x = a, v, x

    def _direction(self) -> int:
        # The velocity where the acceleration would be zero if it were cancelled right now.
        a = self.a
        v_settled = self.v
        if abs(a) > 1e-9:
            j = -_sign(a) * self.max_jerk
            t = -a / j
            v_settled = v_settled + a * t + 0.5 * j * t * t
        direction = _sign(self._target - v_settled)
        return direction if direction != 0 else _sign(a)

    def _limit_rise(self, a0: float, jerk: float, t1: float) -> float:
        peak = a0 + jerk * t1
        if peak > self.max_accel:
            t1 = (self.max_accel - a0) / jerk
        elif peak < -self.max_accel:
            t1 = (-self.max_accel - a0) / jerk
        return t1

    def _rise_time(self, a0: float, dv: float, jerk: float) -> float:
        disc = 2.0 * a0 * a0 + 4.0 * jerk * dv
        if disc < 0.0:
            return 0.0
        root = math.sqrt(disc)
        t1 = 0.0
        for cand in ((-a0 + 0.5 * root) / jerk, (-a0 - 0.5 * root) / jerk):
            if cand >= 0.0 and a0 / jerk + cand >= 0.0:
                t1 = cand
                break
        return max(self._limit_rise(a0, jerk, t1), 0.0)

    @staticmethod
    def _hold_time(t1: float, t3: float, a0: float, dv: float, jerk: float) -> float:
        peak = a0 + jerk * t1
        if abs(peak) < 1e-9:
            return 0.0
        t2 = (-0.5 * t1 * t1 * jerk - t1 * t3 * jerk - t1 * a0 + 0.5 * t3 * t3 * jerk - t3 * a0 + dv) / peak
        return max(t2, 0.0)


def max_speed_from_distance(jerk: float, accel: float, distance: float, final_speed: float) -> float:
    """The fastest speed from which the vehicle can still slow to `final_speed` within `distance`,
    braking at `accel` after the 2 accel / jerk it takes to get the braking going."""
    b = 4.0 * accel * accel / jerk
    c = -2.0 * accel * distance - final_speed * final_speed
    return 0.5 * (-b + math.sqrt(b * b - 4.0 * c))


def max_speed_in_turn(angle: float, accel: float, room: float) -> float:
    """Speed of a circle tangent to both legs `room` metres from the corner (legs `angle` apart)."""
    return math.sqrt(accel * room * math.tan(0.5 * angle))


@dataclass
class Limits:
    """The trajectory's constraints for the current leg (PX4's FlightTaskAuto sets them per leg)."""

    jerk: float
    acc_xy: float
    vel_xy: float  # hard cap (MPC_XY_VEL_MAX)
    cruise: float  # planned horizontal speed
    acc_z: float
    vel_z: float
    acceptance_radius: float  # horizontal, of the target waypoint
    alt_acceptance: float  # NAV_MC_ALT_RAD
    corner_gain: float  # MPC_XY_TRAJ_P: share of the acceleration used for turning
    max_lag: float  # MPC_XY_ERR_MAX


class Setpoint(NamedTuple):
    """One cycle of the trajectory (a tuple: built 50 times a second)."""

    position: Vec3
    velocity: Vec3
    acceleration: Vec3
    unsmoothed_velocity: Vec3


class PositionSmoothing:
    """A trajectory through waypoint triplets (previous, target, next), PX4's PositionSmoothing."""

    def __init__(self) -> None:
        self.axes = [AxisTrajectory(), AxisTrajectory(), AxisTrajectory()]
        self._speed_before_turn = 0.0
        self.settled = False  # the last update found the trajectory at rest on its target

    def reset(self, acc: Vec3, vel: Vec3, pos: Vec3) -> None:
        for axis, a, v, x in zip(self.axes, acc, vel, pos):
            axis.reset(a, v, x)

    @property
    def position(self) -> Vec3:
        return (self.axes[0].x, self.axes[1].x, self.axes[2].x)

    @property
    def velocity(self) -> Vec3:
        return (self.axes[0].v, self.axes[1].v, self.axes[2].v)

    def force_position(self, pos: Vec3) -> None:
        """Move the trajectory to `pos` on every axis given (NaN: leave it)."""
        for axis, x in zip(self.axes, pos):
            if not math.isnan(x):
                axis.set_position(x)

    def configure(self, lim: Limits) -> None:
        if lim is getattr(self, "lim", None):
            return
        for i, axis in enumerate(self.axes):
            axis.max_jerk = lim.jerk
            axis.max_accel = lim.acc_xy if i < 2 else lim.acc_z
            axis.max_vel = lim.vel_xy if i < 2 else lim.vel_z
        self.lim = lim

    def update(self, vehicle: Vec3, waypoints: tuple[Vec3, Vec3, Vec3], feedforward: Vec3, dt: float,
               single_target: bool = False, stop: bool = False) -> Setpoint:
        """Advance by dt towards waypoints[1] (NaN components: not controlled, feed-forward only)."""
        target = waypoints[1]
        self.settled = not stop and self._settled_at(target, feedforward)
        if self.settled:
            # Holding still at the target: nothing left to plan (the hover of every auto mode).
            return Setpoint(target, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
        want = (0.0, 0.0, 0.0) if stop else self._velocity_towards(vehicle, waypoints, feedforward, single_target)
        stretch = self._stretch(vehicle)
        for axis in self.axes:
            axis.advance(dt, stretch)
        ax, ay, az = self.axes
        out = Setpoint((ax.x, ay.x, az.x), (ax.v, ay.v, az.v), (ax.a, ay.a, az.a), want)
        if want[0] == want[0] and want[1] == want[1] and want[2] == want[2]:  # no NaN
            ax.plan(want[0])
            ay.plan(want[1])
            az.plan(want[2])
            tx = ax._t1 + ax._t2 + ax._t3
            ty = ay._t1 + ay._t2 + ay._t3
            tz = az._t1 + az._t2 + az._t3
            # The longest axis sets the time; the first of equals counts as the longest.
            total = tx if (tx >= ty and tx >= tz) else (ty if ty >= tz else tz)
            if total > 1e-6:
                longest = ax if total == tx else (ay if total == ty else az)
                if ax is not longest and tx < total:
                    ax.plan_in(total)
                if ay is not longest and ty < total:
                    ay.plan_in(total)
                if az is not longest and tz < total:
                    az.plan_in(total)
        return out

    def _settled_at(self, target: Vec3, feedforward: Vec3) -> bool:
        """At rest within SETTLED of a fully given target (snapped onto it): the trajectory is done."""
        if not (math.isnan(feedforward[0]) and math.isnan(feedforward[1]) and math.isnan(feedforward[2])):
            return False
        if abs(self.axes[0].v) >= SETTLED_V:  # on the move (the common rejection, checked first)
            return False
        for axis, x in zip(self.axes, target):
            if not (abs(axis.x - x) < SETTLED_M and abs(axis.v) < SETTLED_V and abs(axis.a) < SETTLED_A):
                return False  # also when x is NaN
        for axis, x in zip(self.axes, target):
            axis.reset(0.0, 0.0, x)
        return True

    # --- the velocity to aim for ----------------------------------------------------------------

    def _velocity_towards(self, vehicle: Vec3, waypoints: tuple[Vec3, Vec3, Vec3], feedforward: Vec3,
                          single: bool) -> Vec3:
        target = waypoints[1]
        isfinite = math.isfinite
        out_n, out_e, out_d = feedforward
        pos = self.position
        if isfinite(target[0]) and isfinite(target[1]):
            turning = not single and self._turning(target)
            cross = self._crossing_point(waypoints) if turning else target
            dn, de = cross[0] - pos[0], cross[1] - pos[1]
            norm = math.hypot(dn, de)
            speed = self._xy_speed(pos, waypoints)
            if turning:
                speed = min(self._speed_before_turn, speed)
            else:
                self._speed_before_turn = speed
            un, ue = (dn / norm, de / norm) if norm > 1e-6 else (0.0, 0.0)
            vn, ve = un * speed, ue * speed
            out_n = out_n + vn if isfinite(out_n) else vn
            out_e = out_e + ve if isfinite(out_e) else ve
        if isfinite(target[2]):
            vz = _sign(target[2] - pos[2]) * self._z_speed(pos, waypoints)
            out_d = out_d + vz if isfinite(out_d) else vz
        return (out_n, out_e, out_d)

    def _turning(self, target: Vec3) -> bool:
        vn, ve = self.axes[0].v, self.axes[1].v
        speed = math.hypot(vn, ve)
        dn, de = target[0] - self.axes[0].x, target[1] - self.axes[1].x
        dist = math.hypot(dn, de)
        if speed <= 0.2 or dist <= self.lim.acceptance_radius:
            return False
        return (vn * dn + ve * de) / (speed * dist) < 0.98

    def _crossing_point(self, waypoints: tuple[Vec3, Vec3, Vec3]) -> Vec3:
        prev, target, _ = waypoints
        # L1 guidance: the point on the leg prev -> target that is L1 away from the trajectory.
        d = [target[i] - prev[i] for i in range(3)]
        length = math.sqrt(sum(c * c for c in d))
        u = [c / length for c in d] if length > 1e-6 else [0.0, 0.0, 0.0]
        pos = self.position
        along = sum((pos[i] - prev[i]) * u[i] for i in range(3))
        closest = [prev[i] + u[i] * along for i in range(3)]
        cross_track = math.sqrt(sum((closest[i] - pos[i]) ** 2 for i in range(3)))
        l1 = max(self.lim.acceptance_radius, 5.0)
        ahead = math.sqrt(l1 * l1 - cross_track * cross_track) if l1 > cross_track else 0.0
        return (closest[0] + ahead * u[0], closest[1] + ahead * u[1], closest[2] + ahead * u[2])

    def _xy_speed(self, pos: Vec3, waypoints: tuple[Vec3, Vec3, Vec3]) -> float:
        lim = self.lim
        points = (pos, waypoints[1], waypoints[2])
        speed = 0.0
        # Backwards from the last point: the speed allowed at each point given what follows.
        for i in (1, 0):
            start, target, nxt = points[i], points[i + 1], points[min(i + 2, 2)]
            to_next = math.hypot(target[0] - nxt[0], target[1] - nxt[1])
            at_target = 0.0
            if to_next > 0.001 and to_next >= lim.acceptance_radius:
                angle = _angle_between((target[0] - start[0], target[1] - start[1]),
                                       (target[0] - nxt[0], target[1] - nxt[1]))
                angle = min(max(angle, 0.0), math.pi - 1e-6)
                turn = max_speed_in_turn(angle, lim.corner_gain * lim.acc_xy, lim.acceptance_radius)
                at_target = min(turn, speed, lim.cruise)
            dist = math.hypot(start[0] - target[0], start[1] - target[1])
            speed = min(lim.cruise, max_speed_from_distance(lim.jerk, lim.acc_xy, dist, at_target))
        return speed

    def _z_speed(self, start: Vec3, waypoints: tuple[Vec3, Vec3, Vec3]) -> float:
        axis = self.axes[2]
        target, nxt = waypoints[1], waypoints[2]
        arrival = 0.0
        if abs(target[2] - nxt[2]) > 0.001:
            a = (math.hypot(target[0], target[1]) - math.hypot(start[0], start[1]), target[2] - start[2])
            b = (math.hypot(target[0], target[1]) - math.hypot(nxt[0], nxt[1]), target[2] - nxt[2])
            angle = min(max(_angle_between(a, b), 0.0), math.pi - 1e-6)
            arrival = min(max_speed_in_turn(angle, axis.max_accel, self.lim.alt_acceptance), axis.max_vel)
        dist = abs(target[2] - start[2])
        return min(axis.max_vel, max_speed_from_distance(axis.max_jerk, axis.max_accel, dist, arrival))

    def _stretch(self, vehicle: Vec3) -> float:
        """Slow the trajectory's clock while the vehicle lags it horizontally (never when ahead)."""
        lag_n, lag_e = self.axes[0].x - vehicle[0], self.axes[1].x - vehicle[1]
        if lag_n * self.axes[0].v + lag_e * self.axes[1].v < 0.0 or self.lim.max_lag <= 0.0:
            return 1.0
        return 1.0 - min(max(math.hypot(lag_n, lag_e) / self.lim.max_lag, 0.0), 1.0)


def _angle_between(a: tuple[float, float], b: tuple[float, float]) -> float:
    na, nb = math.hypot(*a), math.hypot(*b)
    if na < 1e-9 or nb < 1e-9:
        return 0.0  # PX4's unit_or_zero: a zero vector makes the dot product 0, i.e. 90 deg
    return math.acos(min(max((a[0] * b[0] + a[1] * b[1]) / (na * nb), -1.0), 1.0))
