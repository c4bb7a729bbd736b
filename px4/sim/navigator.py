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

The arithmetic is compiled with numba (one call per 50 Hz cycle, `smooth_update`, over flat arrays whose
layouts are named below), keeping the operations of the Python code it replaced in the same order, down to
CPython's own hypot and pow: the trajectories are the same numbers (tests/test_autopilot_flight_sample.py).

Constraints (MPC_JERK_AUTO, MPC_ACC_HOR, MPC_XY_CRUISE, MPC_ACC_UP_MAX, MPC_Z_V_AUTO_UP/DN...)
are chosen by the caller per leg, as PX4's FlightTaskAuto chooses them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numba
import numpy as np

from px4.sim.control_kernels import _max, _min

Vec3 = tuple[float, float, float]
# A trajectory this close to its target and this still is done (m, m/s, m/s^2); well below what a
# vehicle's position control can tell apart.
SETTLED_M = 1e-3
SETTLED_V = 1e-3
SETTLED_A = 1e-3

# One axis's row: its state (a, v, x), that state when the phases were last planned, the time since
# then, the phases' jerk sign and durations, the velocity planned for, and its limits.
(A, V, X, START_A, START_V, START_X, T, DIR, T1, T2, T3, TARGET, JERK, ACCEL, VEL, AX_SIZE) = range(16)
# The trajectory's own state and its leg's limits (`Limits`); TWO is 2.0 read at run time (see _square).
(SPEED_BEFORE_TURN, LIM_JERK, LIM_ACC_XY, LIM_CRUISE, LIM_RADIUS, LIM_ALT_RADIUS, LIM_CORNER, LIM_MAX_LAG, TWO,
 AUX_SIZE) = range(10)
# The waypoints and feed-forward `smooth_update` takes, and the setpoint it writes.
W_VEHICLE, W_PREV, W_TARGET, W_NEXT, W_FEEDFORWARD, W_SIZE = 0, 3, 6, 9, 12, 15
O_POS, O_VEL, O_ACC, O_WANT, O_SIZE = 0, 3, 6, 9, 12


@numba.njit(cache=True)
def _sign(x: float) -> int:
    return 1 if x > 0.0 else (-1 if x < 0.0 else 0)


@numba.njit(cache=True, inline="always")
def _two_square(x: float) -> tuple[float, float]:
    # x * x and its rounding error, exactly (Dekker's split).
    p = x * x
    c = 134217729.0 * x
    hi = c - (c - x)
    lo = x - hi
    return p, ((hi * hi - p) + 2.0 * hi * lo) + lo * lo


@numba.njit(cache=True)
def hypot(x: float, y: float) -> float:
    """CPython's math.hypot, to the last bit (its vector_norm: a compensated sum of the scaled squares and
    one correction step); the C library's, which numba calls, differs in the last bit 1 time in 500."""
    x, y = abs(x), abs(y)
    if math.isinf(x) or math.isinf(y):
        return math.inf
    if math.isnan(x) or math.isnan(y):
        return math.nan
    big = x if x > y else y
    if big == 0.0:
        return big
    _, exponent = math.frexp(big)
    if exponent < -1023:  # 2**-exponent would overflow: CPython rescales; no flight's distance is this small
        return math.hypot(x, y)
    scale = math.ldexp(1.0, -exponent)
    csum, frac1, frac2 = 1.0, 0.0, 0.0
    for v in (x * scale, y * scale):
        hi, lo = _two_square(v)
        total = csum + hi
        frac2 += hi - (total - csum)
        csum = total
        frac1 += lo
    h = math.sqrt(csum - 1.0 + (frac1 + frac2))
    hi, lo = _two_square(h)
    total = csum - hi
    frac2 += -hi - (total - csum)
    csum = total
    frac1 -= lo
    h += (csum - 1.0 + (frac1 + frac2)) / (2.0 * h)
    return h / scale


@numba.njit(cache=True)
def _square(x: float, two: float) -> float:
    # Python's x ** 2 is pow(x, 2.0), which rounds differently from x * x now and then; LLVM turns a
    # constant 2.0 into x * x, hence the exponent from an array.
    return x ** two


@numba.njit(cache=True)
def max_speed_from_distance(jerk: float, accel: float, distance: float, final_speed: float) -> float:
    """The fastest speed from which the vehicle can still slow to `final_speed` within `distance`,
    braking at `accel` after the 2 accel / jerk it takes to get the braking going."""
    b = 4.0 * accel * accel / jerk
    c = -2.0 * accel * distance - final_speed * final_speed
    return 0.5 * (-b + math.sqrt(b * b - 4.0 * c))


@numba.njit(cache=True)
def max_speed_in_turn(angle: float, accel: float, room: float) -> float:
    """Speed of a circle tangent to both legs `room` metres from the corner (legs `angle` apart)."""
    return math.sqrt(accel * room * math.tan(0.5 * angle))


@numba.njit(cache=True)
def _angle_between(a0: float, a1: float, b0: float, b1: float) -> float:
    na, nb = hypot(a0, a1), hypot(b0, b1)
    if na < 1e-9 or nb < 1e-9:
        return 0.0  # PX4's unit_or_zero: a zero vector makes the dot product 0, i.e. 90 deg
    return math.acos(_min(_max((a0 * b0 + a1 * b1) / (na * nb), -1.0), 1.0))


# --- one axis ----------------------------------------------------------------------------------------

@numba.njit(cache=True)
def axis_reset(r: np.ndarray, a: float, v: float, x: float) -> None:
    r[A], r[V], r[X] = a, v, x
    r[START_A], r[START_V], r[START_X] = a, v, x
    r[T] = 0.0
    r[T1] = r[T2] = r[T3] = 0.0


@numba.njit(cache=True)
def axis_set_position(r: np.ndarray, x: float) -> None:
    r[START_X] = r[START_X] + (x - r[X])
    r[X] = x


@numba.njit(cache=True)
def _limit_rise(r: np.ndarray, a0: float, jerk: float, t1: float) -> float:
    peak = a0 + jerk * t1
    if peak > r[ACCEL]:
        t1 = (r[ACCEL] - a0) / jerk
    elif peak < -r[ACCEL]:
        t1 = (-r[ACCEL] - a0) / jerk
    return t1


@numba.njit(cache=True)
def _rise_time(r: np.ndarray, a0: float, dv: float, jerk: float) -> float:
    disc = 2.0 * a0 * a0 + 4.0 * jerk * dv
    if disc < 0.0:
        return 0.0
    root = math.sqrt(disc)
    t1 = 0.0
    for cand in ((-a0 + 0.5 * root) / jerk, (-a0 - 0.5 * root) / jerk):
        if cand >= 0.0 and a0 / jerk + cand >= 0.0:
            t1 = cand
            break
    return _max(_limit_rise(r, a0, jerk, t1), 0.0)


@numba.njit(cache=True)
def _hold_time(t1: float, t3: float, a0: float, dv: float, jerk: float) -> float:
    peak = a0 + jerk * t1
    if abs(peak) < 1e-9:
        return 0.0
    t2 = (-0.5 * t1 * t1 * jerk - t1 * t3 * jerk - t1 * a0 + 0.5 * t3 * t3 * jerk - t3 * a0 + dv) / peak
    return _max(t2, 0.0)


@numba.njit(cache=True)
def _direction(r: np.ndarray) -> int:
    # The velocity where the acceleration would be zero if it were cancelled right now.
    a = r[A]
    v_settled = r[V]
    if abs(a) > 1e-9:
        j = -_sign(a) * r[JERK]
        t = -a / j
        v_settled = v_settled + a * t + 0.5 * j * t * t
    direction = _sign(r[TARGET] - v_settled)
    return direction if direction != 0 else _sign(a)


@numba.njit(cache=True)
def axis_plan(r: np.ndarray, vel_sp: float) -> None:
    """Phases that reach `vel_sp` (capped at the axis's VEL) in the least time."""
    a, v = r[A], r[V]
    target = r[TARGET] = _min(_max(vel_sp, -r[VEL]), r[VEL])
    r[START_A], r[START_V], r[START_X] = a, v, r[X]
    r[T] = 0.0
    if a == 0.0 and target == v:  # already there (a hovering axis): nothing to plan
        r[DIR] = 0.0
        r[T1] = r[T2] = r[T3] = 0.0
        return
    direction = _direction(r)
    r[DIR] = direction
    jerk = direction * r[JERK]
    if jerk == 0.0:
        r[T1] = r[T2] = r[T3] = 0.0
        return
    dv = target - v
    t1 = r[T1] = _rise_time(r, a, dv, jerk)
    t3 = r[T3] = _max(a / jerk + t1, 0.0)
    r[T2] = _hold_time(t1, t3, a, dv, jerk)


@numba.njit(cache=True)
def axis_plan_in(r: np.ndarray, total: float) -> None:
    """Re-plan the current target to take `total` seconds (to finish with a slower axis)."""
    jerk = r[DIR] * r[JERK]
    if jerk == 0.0:
        return
    dv = r[TARGET] - r[V]
    a0 = r[A]
    disc = total * total * jerk * jerk + 2.0 * total * a0 * jerk - a0 * a0 - 4.0 * jerk * dv
    t1 = 0.0
    if disc >= 0.0:
        root = math.sqrt(disc)
        b = jerk * total - a0
        for cand in (_max((-b + root) / (-2.0 * jerk), 0.0), _max((-b - root) / (-2.0 * jerk), 0.0)):
            t3 = a0 / jerk + cand
            if t3 >= 0.0 and cand + t3 <= total:
                t1 = cand
                break
    r[T1] = _limit_rise(r, a0, jerk, t1)
    r[T3] = _max(a0 / jerk + r[T1], 0.0)
    r[T2] = _max(total - r[T1] - r[T3], 0.0)


@numba.njit(cache=True)
def axis_advance(r: np.ndarray, dt: float, stretch: float) -> None:
    """Move the state along the planned phases by dt (times `stretch`, 0..1)."""
    r[T] += dt * stretch
    left = r[T]
    a, v, x = r[START_A], r[START_V], r[START_X]
    if r[DIR] == 0.0:  # no phases: coasting at constant velocity
        r[A], r[V], r[X] = 0.0, v, x + v * left
        return
    j = r[DIR] * r[JERK]
    # Three phases: +jerk for t1, none for t2, -jerk for t3; then coasting.
    t = r[T1] if left > r[T1] else left
    t2 = t * t
    a, v, x = a + j * t, v + a * t + 0.5 * j * t2, x + v * t + 0.5 * a * t2 + j * t2 * t / 6.0
    left -= t
    if left > 0.0:
        t = r[T2] if left > r[T2] else left
        v, x = v + a * t, x + v * t + 0.5 * a * t * t
        left -= t
        if left > 0.0:
            t = r[T3] if left > r[T3] else left
            t2 = t * t
            a, v, x = a - j * t, v + a * t - 0.5 * j * t2, x + v * t + 0.5 * a * t2 - j * t2 * t / 6.0
            left -= t
            if left > 0.0:
                a, x = 0.0, x + v * left
    r[A], r[V], r[X] = a, v, x


# --- three axes through waypoints ----------------------------------------------------------------------

@numba.njit(cache=True)
def _settled_at(ax: np.ndarray, w: np.ndarray) -> bool:
    """At rest within SETTLED of a fully given target (snapped onto it): the trajectory is done."""
    f = W_FEEDFORWARD
    if not (math.isnan(w[f]) and math.isnan(w[f + 1]) and math.isnan(w[f + 2])):
        return False
    if abs(ax[0, V]) >= SETTLED_V:  # on the move (the common rejection, checked first)
        return False
    for i in range(3):
        x = w[W_TARGET + i]
        if not (abs(ax[i, X] - x) < SETTLED_M and abs(ax[i, V]) < SETTLED_V and abs(ax[i, A]) < SETTLED_A):
            return False  # also when x is NaN
    for i in range(3):
        axis_reset(ax[i], 0.0, 0.0, w[W_TARGET + i])
    return True


@numba.njit(cache=True)
def _turning(ax: np.ndarray, aux: np.ndarray, tn: float, te: float) -> bool:
    vn, ve = ax[0, V], ax[1, V]
    speed = hypot(vn, ve)
    dn, de = tn - ax[0, X], te - ax[1, X]
    dist = hypot(dn, de)
    if speed <= 0.2 or dist <= aux[LIM_RADIUS]:
        return False
    return (vn * dn + ve * de) / (speed * dist) < 0.98


@numba.njit(cache=True)
def _crossing_point(ax: np.ndarray, aux: np.ndarray, w: np.ndarray) -> tuple[float, float, float]:
    # L1 guidance: the point on the leg prev -> target that is L1 away from the trajectory.
    p, t, two = W_PREV, W_TARGET, aux[TWO]
    d0, d1, d2 = w[t] - w[p], w[t + 1] - w[p + 1], w[t + 2] - w[p + 2]
    # Sums from 0.0 in Python's order (its sum() of floats starts at 0.0).
    length = math.sqrt(0.0 + d0 * d0 + d1 * d1 + d2 * d2)
    u0 = u1 = u2 = 0.0
    if length > 1e-6:
        u0, u1, u2 = d0 / length, d1 / length, d2 / length
    x0, x1, x2 = ax[0, X], ax[1, X], ax[2, X]
    along = 0.0 + (x0 - w[p]) * u0 + (x1 - w[p + 1]) * u1 + (x2 - w[p + 2]) * u2
    c0, c1, c2 = w[p] + u0 * along, w[p + 1] + u1 * along, w[p + 2] + u2 * along
    cross_track = math.sqrt(0.0 + _square(c0 - x0, two) + _square(c1 - x1, two) + _square(c2 - x2, two))
    l1 = _max(aux[LIM_RADIUS], 5.0)
    ahead = math.sqrt(l1 * l1 - cross_track * cross_track) if l1 > cross_track else 0.0
    return c0 + ahead * u0, c1 + ahead * u1, c2 + ahead * u2


@numba.njit(cache=True)
def _xy_leg_speed(aux: np.ndarray, s0: float, s1: float, t0: float, t1: float, n0: float, n1: float,
                  speed: float) -> float:
    # The speed allowed at start s towards target t, given the speed allowed at t and the turn onto t -> n.
    to_next = hypot(t0 - n0, t1 - n1)
    at_target = 0.0
    if to_next > 0.001 and to_next >= aux[LIM_RADIUS]:
        angle = _angle_between(t0 - s0, t1 - s1, t0 - n0, t1 - n1)
        angle = _min(_max(angle, 0.0), math.pi - 1e-6)
        turn = max_speed_in_turn(angle, aux[LIM_CORNER] * aux[LIM_ACC_XY], aux[LIM_RADIUS])
        at_target = _min(_min(turn, speed), aux[LIM_CRUISE])
    dist = hypot(s0 - t0, s1 - t1)
    return _min(aux[LIM_CRUISE], max_speed_from_distance(aux[LIM_JERK], aux[LIM_ACC_XY], dist, at_target))


@numba.njit(cache=True)
def _xy_speed(ax: np.ndarray, aux: np.ndarray, w: np.ndarray) -> float:
    # Backwards from the last point: the speed allowed at each point given what follows.
    t, n = W_TARGET, W_NEXT
    speed = _xy_leg_speed(aux, w[t], w[t + 1], w[n], w[n + 1], w[n], w[n + 1], 0.0)
    return _xy_leg_speed(aux, ax[0, X], ax[1, X], w[t], w[t + 1], w[n], w[n + 1], speed)


@numba.njit(cache=True)
def _z_speed(ax: np.ndarray, aux: np.ndarray, w: np.ndarray) -> float:
    z = ax[2]
    t, n = W_TARGET, W_NEXT
    s0, s1, s2 = ax[0, X], ax[1, X], ax[2, X]
    arrival = 0.0
    if abs(w[t + 2] - w[n + 2]) > 0.001:
        angle = _angle_between(hypot(w[t], w[t + 1]) - hypot(s0, s1), w[t + 2] - s2,
                               hypot(w[t], w[t + 1]) - hypot(w[n], w[n + 1]), w[t + 2] - w[n + 2])
        angle = _min(_max(angle, 0.0), math.pi - 1e-6)
        arrival = _min(max_speed_in_turn(angle, z[ACCEL], aux[LIM_ALT_RADIUS]), z[VEL])
    dist = abs(w[t + 2] - s2)
    return _min(z[VEL], max_speed_from_distance(z[JERK], z[ACCEL], dist, arrival))


@numba.njit(cache=True)
def _velocity_towards(ax: np.ndarray, aux: np.ndarray, w: np.ndarray, single: bool) -> tuple[float, float, float]:
    t = W_TARGET
    out_n, out_e, out_d = w[W_FEEDFORWARD], w[W_FEEDFORWARD + 1], w[W_FEEDFORWARD + 2]
    if math.isfinite(w[t]) and math.isfinite(w[t + 1]):
        turning = not single and _turning(ax, aux, w[t], w[t + 1])
        cross0, cross1 = w[t], w[t + 1]
        if turning:
            cross0, cross1, _ = _crossing_point(ax, aux, w)
        dn, de = cross0 - ax[0, X], cross1 - ax[1, X]
        norm = hypot(dn, de)
        speed = _xy_speed(ax, aux, w)
        if turning:
            speed = _min(aux[SPEED_BEFORE_TURN], speed)
        else:
            aux[SPEED_BEFORE_TURN] = speed
        un = ue = 0.0
        if norm > 1e-6:
            un, ue = dn / norm, de / norm
        vn, ve = un * speed, ue * speed
        out_n = out_n + vn if math.isfinite(out_n) else vn
        out_e = out_e + ve if math.isfinite(out_e) else ve
    if math.isfinite(w[t + 2]):
        vz = _sign(w[t + 2] - ax[2, X]) * _z_speed(ax, aux, w)
        out_d = out_d + vz if math.isfinite(out_d) else vz
    return out_n, out_e, out_d


@numba.njit(cache=True)
def _stretch(ax: np.ndarray, aux: np.ndarray, w: np.ndarray) -> float:
    """Slow the trajectory's clock while the vehicle lags it horizontally (never when ahead)."""
    lag_n, lag_e = ax[0, X] - w[W_VEHICLE], ax[1, X] - w[W_VEHICLE + 1]
    if lag_n * ax[0, V] + lag_e * ax[1, V] < 0.0 or aux[LIM_MAX_LAG] <= 0.0:
        return 1.0
    return 1.0 - _min(_max(hypot(lag_n, lag_e) / aux[LIM_MAX_LAG], 0.0), 1.0)


@numba.njit(cache=True)
def smooth_update(ax: np.ndarray, aux: np.ndarray, w: np.ndarray, dt: float, single: bool, stop: bool,
                  out: np.ndarray) -> bool:
    """One cycle of `PositionSmoothing.update` over its arrays: writes the setpoint into `out` (O_*)
    unless the trajectory is settled on its target, which it returns."""
    if not stop and _settled_at(ax, w):
        return True
    want_n = want_e = want_d = 0.0
    if not stop:
        want_n, want_e, want_d = _velocity_towards(ax, aux, w, single)
    stretch = _stretch(ax, aux, w)
    for i in range(3):
        axis_advance(ax[i], dt, stretch)
        out[O_POS + i], out[O_VEL + i], out[O_ACC + i] = ax[i, X], ax[i, V], ax[i, A]
    out[O_WANT], out[O_WANT + 1], out[O_WANT + 2] = want_n, want_e, want_d
    if want_n == want_n and want_e == want_e and want_d == want_d:  # no NaN
        axis_plan(ax[0], want_n)
        axis_plan(ax[1], want_e)
        axis_plan(ax[2], want_d)
        tx = ax[0, T1] + ax[0, T2] + ax[0, T3]
        ty = ax[1, T1] + ax[1, T2] + ax[1, T3]
        tz = ax[2, T1] + ax[2, T2] + ax[2, T3]
        # The longest axis sets the time; the first of equals counts as the longest.
        total = tx if (tx >= ty and tx >= tz) else (ty if ty >= tz else tz)
        if total > 1e-6:
            longest = 0 if total == tx else (1 if total == ty else 2)
            if longest != 0 and tx < total:
                axis_plan_in(ax[0], total)
            if longest != 1 and ty < total:
                axis_plan_in(ax[1], total)
            if longest != 2 and tz < total:
                axis_plan_in(ax[2], total)
    return False


# --- the Python side --------------------------------------------------------------------------------

def _axis_row() -> np.ndarray:
    row = np.zeros(AX_SIZE)
    row[JERK] = row[ACCEL] = row[VEL] = 1.0
    return row


def _field(index: int, doc: str) -> property:
    """An AxisTrajectory attribute that is an entry of its row."""
    def get(self: AxisTrajectory) -> float:
        return float(self.row[index])

    def set_(self: AxisTrajectory, value: float) -> None:
        self.row[index] = value
    return property(get, set_, doc=doc)


class AxisTrajectory:
    """A jerk-limited velocity profile on one axis: state (a, v, x) and the phases towards a velocity,
    in a row of `AX_SIZE` floats (its own, or one of a `PositionSmoothing`'s).

    Arguments go to the compiled code as floats: an int would make numba compile another version."""

    def __init__(self, row: np.ndarray | None = None) -> None:
        self.row = row if row is not None else _axis_row()

    a = _field(A, "acceleration")
    v = _field(V, "velocity")
    x = _field(X, "position")
    max_jerk = _field(JERK, "jerk limit")
    max_accel = _field(ACCEL, "acceleration limit")
    max_vel = _field(VEL, "velocity limit")

    def reset(self, a: float, v: float, x: float) -> None:
        axis_reset(self.row, float(a), float(v), float(x))

    def set_position(self, x: float) -> None:
        """Move the trajectory to `x`, keeping its velocity and the planned phases."""
        axis_set_position(self.row, float(x))

    @property
    def total_time(self) -> float:
        return float(self.row[T1] + self.row[T2] + self.row[T3])

    def plan(self, vel_sp: float) -> None:
        """Phases that reach `vel_sp` (capped at max_vel) in the least time."""
        axis_plan(self.row, float(vel_sp))

    def plan_in(self, total: float) -> None:
        """Re-plan the current target to take `total` seconds (to finish with a slower axis)."""
        axis_plan_in(self.row, float(total))

    def advance(self, dt: float, stretch: float = 1.0) -> None:
        """Move the state along the planned phases by dt (times `stretch`, 0..1)."""
        axis_advance(self.row, float(dt), float(stretch))


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


ZERO3: Vec3 = (0.0, 0.0, 0.0)


class PositionSmoothing:
    """A trajectory through waypoint triplets (previous, target, next), PX4's PositionSmoothing.

    Its state is in arrays (one `AX_SIZE` row per axis, `AUX_SIZE` for the rest) that one compiled call,
    `smooth_update`, advances each cycle."""

    def __init__(self) -> None:
        self.state = np.stack([_axis_row() for _ in range(3)])
        self.aux = np.zeros(AUX_SIZE)
        self.aux[TWO] = 2.0
        self.axes = [AxisTrajectory(self.state[i]) for i in range(3)]
        self._waypoints = np.empty(W_SIZE)
        self._out = np.empty(O_SIZE)
        self.lim: Limits | None = None
        self.settled = False  # the last update found the trajectory at rest on its target
        # Load the compiled code now (a few tens of ms from numba's cache): in the first auto cycle of a
        # real-time flight it would put the vehicle behind its clock. At rest, a stopping update changes nothing.
        self.reset(ZERO3, ZERO3, ZERO3)
        self.force_position(ZERO3)
        smooth_update(self.state, self.aux, np.zeros(W_SIZE), 0.0, False, True, self._out)

    def reset(self, acc: Vec3, vel: Vec3, pos: Vec3) -> None:
        for i in range(3):
            axis_reset(self.state[i], float(acc[i]), float(vel[i]), float(pos[i]))

    @property
    def position(self) -> Vec3:
        x = self.state[:, X].tolist()
        return (x[0], x[1], x[2])

    @property
    def velocity(self) -> Vec3:
        v = self.state[:, V].tolist()
        return (v[0], v[1], v[2])

    def force_position(self, pos: Vec3) -> None:
        """Move the trajectory to `pos` on every axis given (NaN: leave it)."""
        for i, x in enumerate(pos):
            if not math.isnan(x):
                axis_set_position(self.state[i], float(x))

    def configure(self, lim: Limits) -> None:
        if lim is self.lim:
            return
        s = self.state
        s[:, JERK] = lim.jerk
        s[:, ACCEL] = (lim.acc_xy, lim.acc_xy, lim.acc_z)
        s[:, VEL] = (lim.vel_xy, lim.vel_xy, lim.vel_z)
        self.aux[LIM_JERK:TWO] = (lim.jerk, lim.acc_xy, lim.cruise, lim.acceptance_radius, lim.alt_acceptance,
                                  lim.corner_gain, lim.max_lag)
        self.lim = lim

    def update(self, vehicle: Vec3, waypoints: tuple[Vec3, Vec3, Vec3], feedforward: Vec3, dt: float,
               single_target: bool = False, stop: bool = False) -> Setpoint:
        """Advance by dt towards waypoints[1] (NaN components: not controlled, feed-forward only)."""
        prev, target, nxt = waypoints
        self._waypoints[:] = (*vehicle, *prev, *target, *nxt, *feedforward)
        self.settled = smooth_update(self.state, self.aux, self._waypoints, float(dt), bool(single_target), bool(stop),
                                     self._out)
        if self.settled:
            # Holding still at the target: nothing left to plan (the hover of every auto mode).
            return Setpoint(target, ZERO3, ZERO3, ZERO3)
        o = self._out.tolist()
        return Setpoint((o[0], o[1], o[2]), (o[3], o[4], o[5]), (o[6], o[7], o[8]), (o[9], o[10], o[11]))
