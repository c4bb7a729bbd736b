"""The controller's loops, compiled with numba: position and velocity, attitude, body rates and allocation.

`px4.sim.control` explains the design and holds the Python side (parameters, setpoints, the public
attributes); this module is its arithmetic, over flat float arrays whose layouts are named below, so
that `px4.sim.inner_loop` can run hundreds of physics steps of controller and physics without
returning to Python. The loops keep the operations of the Python code they replaced in the same
order (numba keeps IEEE order without fastmath).

Arrays: ``s`` the physics state and ``m`` its model (`physics.dynamics`), ``c`` the controller's
state, ``k`` its constants from the vehicle model, ``lim`` the MPC_*/MC_* parameters in SI units, and
``sp`` the setpoint (`SP_*`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from physics.dynamics import GROUND, OMEGA, POS, VEL, Q, yaw_of
from profiles.airframe import GRAVITY

POSITION_PERIOD = 0.010  # s
ATTITUDE_PERIOD = 0.004  # s
IDLE_THRUST = 0.05  # normalized per-rotor thrust of an armed vehicle on the ground
YAW_I_FADE_RATE = math.radians(400.0)  # rad/s
_EPS = 1e-9  # tolerance on loop periods accumulated from float dt
# Yaw may push the most loaded motor this far past full thrust before the collective is lowered to
# make room (PX4's allocator allows 0.15).
YAW_HEADROOM = 0.15

# Setpoint kinds, and the setpoint array: a TrajectorySetpoint (NED position, velocity, acceleration,
# yaw, yaw speed; NaN = not controlled) or an AttitudeSetpoint (quaternion, thrust, body rates).
NO_SETPOINT, TRAJECTORY, ATTITUDE = 0, 1, 2
SP_POS, SP_VEL, SP_ACC, SP_YAW, SP_YAWSPEED, SP_SIZE = 0, 3, 6, 9, 10, 11
SP_Q, SP_THRUST, SP_BODY_RATES = 0, 4, 5

# Controller state. NaN in C_TILT_LIMIT and the speed caps means "none"; C_HAS_VEL_PREV, C_FLYING and
# C_GROUND_LOGIC are 0.0 or 1.0; C_MODE is the setpoint kind the loops were last started for.
(C_VEL_INT, C_VEL_PREV, C_HAS_VEL_PREV, C_RATE_INT, C_YAW_TORQUE, C_OMEGA_PREV, C_YAW_SP, C_YAWSPEED_FF,
 C_SINCE_POS, C_SINCE_ATT, C_MODE, C_ATT_SP, C_THRUST_SP, C_RATE_SP, C_VEL_SP, C_ACC_SP, C_BODY_RATES,
 C_VEL_DOT, C_TILT_LIMIT, C_FLYING, C_CAPS, C_GROUND_LOGIC, C_SIZE) = (
    0, 3, 6, 7, 10, 11, 14, 15, 16, 17, 18, 19, 23, 24, 27, 30, 33, 36, 39, 40, 41, 44, 45)

# Constants from the vehicle model (MulticopterController.configure).
(K_HOVER, K_MIX_ROLL, K_MIX_PITCH, K_MIX_YAW, K_KP_RATE, K_KD_RATE, K_KI_RATE, K_RATE_INT_MAX,
 K_YAW_ACCEL, K_BRAKE, K_JX, K_JY, K_JZ, K_KDW, K_SIZE) = 0, 1, 5, 9, 13, 14, 15, 16, 19, 20, 23, 24, 25, 26, 27

# The parameters (MulticopterController._read_limits).
(L_POS_P, L_VEL_P, L_VEL_I, L_VEL_D, L_VEL_XY_MAX, L_VEL_UP_MAX, L_VEL_DN_MAX, L_TILT_MAX, L_TILT_LANDED,
 L_THR_MIN, L_THR_MAX, L_THR_XY_MARGIN, L_VELD_CUTOFF, L_ATT_P, L_YAW_WEIGHT, L_RATE_MAX, L_YAW_PID,
 L_YAW_INT_LIM, L_YAW_TQ_CUTOFF, L_SIZE) = 0, 3, 6, 9, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 24, 25, 28, 31, 32, 33


@numba.njit(cache=True, inline="always")
def _min(a: float, b: float) -> float:
    # Python's min(a, b), NaN included: a unless b is smaller.
    return b if b < a else a


@numba.njit(cache=True, inline="always")
def _max(a: float, b: float) -> float:
    return b if b > a else a


@numba.njit(cache=True)
def quat_normalize(w: float, x: float, y: float, z: float) -> tuple[float, float, float, float]:
    """Unit quaternion with w >= 0 (the same rotation, the short way round)."""
    n = math.sqrt(w * w + x * x + y * y + z * z)
    if n < 1e-12:
        return 1.0, 0.0, 0.0, 0.0
    if w < 0.0:
        n = -n
    return w / n, x / n, y / n, z / n


@numba.njit(cache=True)
def _quat_from_axes(r00: float, r10: float, r20: float, r01: float, r11: float, r21: float,
                    r02: float, r12: float, r22: float) -> tuple[float, float, float, float]:
    # The rotation whose matrix has columns (r00, r10, r20), (r01, r11, r21), (r02, r12, r22).
    trace = r00 + r11 + r22
    if trace > 0.0:
        s = 2.0 * math.sqrt(trace + 1.0)
        return quat_normalize(0.25 * s, (r21 - r12) / s, (r02 - r20) / s, (r10 - r01) / s)
    if r00 > r11 and r00 > r22:
        s = 2.0 * math.sqrt(1.0 + r00 - r11 - r22)
        return quat_normalize((r21 - r12) / s, 0.25 * s, (r01 + r10) / s, (r02 + r20) / s)
    if r11 > r22:
        s = 2.0 * math.sqrt(1.0 + r11 - r00 - r22)
        return quat_normalize((r02 - r20) / s, (r01 + r10) / s, 0.25 * s, (r12 + r21) / s)
    s = 2.0 * math.sqrt(1.0 + r22 - r00 - r11)
    return quat_normalize((r10 - r01) / s, (r02 + r20) / s, (r12 + r21) / s, 0.25 * s)


@numba.njit(cache=True)
def attitude_from_thrust(tx: float, ty: float, tz: float, yaw: float) -> tuple[float, float, float, float]:
    """Attitude that points the thrust along NED (tx, ty, tz) with heading `yaw` (PX4's bodyzToAttitude)."""
    n = math.sqrt(tx * tx + ty * ty + tz * tz)
    if n < 1e-9:
        return math.cos(0.5 * yaw), 0.0, 0.0, math.sin(0.5 * yaw)
    bz0, bz1, bz2 = -tx / n, -ty / n, -tz / n  # body z points opposite the thrust
    yc0, yc1, yc2 = -math.sin(yaw), math.cos(yaw), 0.0
    if abs(bz2) < 1e-6:
        # Thrust horizontal: heading is undefined; any body x perpendicular to body z will do.
        bx0, bx1, bx2 = 0.0, 0.0, 1.0
    else:
        bx0, bx1, bx2 = yc1 * bz2 - yc2 * bz1, yc2 * bz0 - yc0 * bz2, yc0 * bz1 - yc1 * bz0
        if bz2 < 0.0:  # upside down: keep the nose on the commanded heading
            bx0, bx1, bx2 = -bx0, -bx1, -bx2
        mag = math.sqrt(bx0 ** 2 + bx1 ** 2 + bx2 ** 2)
        bx0, bx1, bx2 = bx0 / mag, bx1 / mag, bx2 / mag
    by0, by1, by2 = bz1 * bx2 - bz2 * bx1, bz2 * bx0 - bz0 * bx2, bz0 * bx1 - bz1 * bx0
    return _quat_from_axes(bx0, bx1, bx2, by0, by1, by2, bz0, bz1, bz2)


@numba.njit(cache=True)
def _sqrt_controller(error: float, gain: float, accel: float) -> float:
    # Proportional near zero, square root far away, so that braking never needs more than
    # `accel`; continuous (value and slope) where the two meet.
    linear = accel / (gain * gain) if gain > 0.0 else math.inf
    if abs(error) <= linear:
        return gain * error
    return math.copysign(math.sqrt(2.0 * accel * (abs(error) - 0.5 * linear)), error)


@numba.njit(cache=True)
def _yaw_room(out: float, yaw: float, top: float) -> float:
    # Largest share of `yaw` (0..1) that keeps `out + share * yaw` within [0, top].
    if yaw > 0.0:
        share = (top - out) / yaw
    elif yaw < 0.0:
        share = out / -yaw
    else:
        return 1.0
    return 0.0 if share < 0.0 else (1.0 if share > 1.0 else share)


@numba.njit(cache=True)
def _constrain_xy(a0: float, a1: float, b0: float, b1: float, limit: float) -> tuple[float, float]:
    # a + b within `limit`, giving up b (the feed-forward) before a (PX4's ControlMath::constrainXY).
    sn, se = a0 + b0, a1 + b1
    if math.hypot(sn, se) <= limit:
        return sn, se
    n0 = math.hypot(a0, a1)
    if n0 >= limit:
        return (a0 / n0 * limit, a1 / n0 * limit) if n0 > 0.0 else (0.0, 0.0)
    # The largest k in [0, 1] with |a + k b| = limit.
    qa = b0 * b0 + b1 * b1
    qb = 2.0 * (a0 * b0 + a1 * b1)
    qc = n0 * n0 - limit * limit
    k = (-qb + math.sqrt(_max(qb * qb - 4.0 * qa * qc, 0.0))) / (2.0 * qa)
    return a0 + k * b0, a1 + k * b1


@numba.njit(cache=True)
def enter_mode(c: np.ndarray, s: np.ndarray, mode: int) -> None:
    """A new kind of setpoint starts its loops afresh from the current state."""
    c[C_MODE] = mode
    for i in range(3):
        c[C_VEL_INT + i] = 0.0
        c[C_VEL_DOT + i] = 0.0
        c[C_BODY_RATES + i] = np.nan
        c[C_VEL_SP + i] = np.nan
        c[C_ACC_SP + i] = np.nan
    c[C_HAS_VEL_PREV] = 0.0
    c[C_YAW_SP] = yaw_of(s)
    c[C_SINCE_POS] = math.inf
    c[C_SINCE_ATT] = math.inf


@numba.njit(cache=True)
def _thrust_vector(k: np.ndarray, ax: float, ay: float, az: float,
                   thr_min: float, tilt_limit: float) -> tuple[float, float, float]:
    # Normalized NED thrust vector for an acceleration setpoint (PX4's _accelerationControl). The tilt
    # comes from the horizontal acceleration against gravity alone (PX4's default decoupling of
    # horizontal and vertical acceleration); the vertical acceleration sets the magnitude.
    h = k[K_HOVER]
    bx, by, bz = -ax, -ay, GRAVITY
    n = math.sqrt(bx * bx + by * by + bz * bz)
    bx, by, bz = bx / n, by / n, bz / n
    if math.acos(_min(1.0, bz)) > tilt_limit:
        hor = math.hypot(bx, by)
        f = math.sin(tilt_limit) / hor
        bx, by, bz = bx * f, by * f, math.cos(tilt_limit)
    collective = _min((az * (h / GRAVITY) - h) / bz, -thr_min)  # NED: negative is up
    return bx * collective, by * collective, bz * collective


@numba.njit(cache=True)
def position_control(c: np.ndarray, k: np.ndarray, lim: np.ndarray, s: np.ndarray,
                     sp: np.ndarray, dt: float) -> None:
    """PX4's PositionControl: position P, velocity PID, thrust vector, then the attitude setpoint."""
    cap_xy, cap_up, cap_dn = c[C_CAPS], c[C_CAPS + 1], c[C_CAPS + 2]
    xy_max = _min(cap_xy, lim[L_VEL_XY_MAX]) if cap_xy == cap_xy else lim[L_VEL_XY_MAX]
    up_max = _min(cap_up, lim[L_VEL_UP_MAX]) if cap_up == cap_up else lim[L_VEL_UP_MAX]
    down_max = _max(cap_dn, 0.0) if cap_dn == cap_dn else lim[L_VEL_DN_MAX]

    # P on position; the velocity setpoint, if any, is the feed-forward.
    vel_sp = np.full(3, np.nan)
    from_pos = np.zeros(3)
    for i in range(3):
        p_sp, v_ff = sp[SP_POS + i], sp[SP_VEL + i]
        if p_sp == p_sp:  # not NaN (positions are finite or NaN)
            f = lim[L_POS_P + i] * (p_sp - s[POS + i])
            from_pos[i] = f
            vel_sp[i] = f + (v_ff if math.isfinite(v_ff) else 0.0)
        elif math.isfinite(v_ff):
            vel_sp[i] = v_ff
    if math.isfinite(vel_sp[0]) and math.isfinite(vel_sp[1]):
        # The part that closes the position error keeps priority over the feed-forward.
        vel_sp[0], vel_sp[1] = _constrain_xy(from_pos[0], from_pos[1],
                                             vel_sp[0] - from_pos[0], vel_sp[1] - from_pos[1], xy_max)
    if math.isfinite(vel_sp[2]):
        # PX4's constrain: a negative upward limit (takeoff ramp) wins over the downward one.
        vel_sp[2] = _max(_min(vel_sp[2], down_max), -up_max)

    # Velocity derivative for the D term, low-passed as PX4's MPC_VELD_LP does.
    if c[C_HAS_VEL_PREV] != 0.0:
        cutoff = lim[L_VELD_CUTOFF]
        alpha = dt / (dt + 1.0 / (math.tau * cutoff)) if cutoff > 0.0 else 1.0
        for i in range(3):
            c[C_VEL_DOT + i] += alpha * ((s[VEL + i] - c[C_VEL_PREV + i]) / dt - c[C_VEL_DOT + i])
    for i in range(3):
        c[C_VEL_PREV + i] = s[VEL + i]
    c[C_HAS_VEL_PREV] = 1.0

    # Velocity PID -> acceleration, the acceleration setpoint as feed-forward (PX4: no drag model;
    # the integrator learns drag and wind alike).
    acc = np.zeros(3)
    vel_err = np.zeros(3)
    for i in range(3):
        a_ff = sp[SP_ACC + i]
        v_sp = vel_sp[i]
        if math.isfinite(v_sp):
            e = v_sp - s[VEL + i]
            vel_err[i] = e
            pid = lim[L_VEL_P + i] * e + c[C_VEL_INT + i] - lim[L_VEL_D + i] * c[C_VEL_DOT + i]
            acc[i] = pid + a_ff if math.isfinite(a_ff) else pid
        else:
            acc[i] = a_ff if math.isfinite(a_ff) else 0.0

    flying = c[C_FLYING] != 0.0
    thr_min = lim[L_THR_MIN] if flying else 0.0
    tilt_target = lim[L_TILT_MAX] if flying else lim[L_TILT_LANDED]
    if c[C_TILT_LIMIT] != c[C_TILT_LIMIT]:
        c[C_TILT_LIMIT] = tilt_target
    else:  # PX4 slews the tilt limit at 0.2 rad/s
        step = 0.2 * dt
        c[C_TILT_LIMIT] += _min(_max(tilt_target - c[C_TILT_LIMIT], -step), step)
    t0, t1, t2 = _thrust_vector(k, acc[0], acc[1], acc[2], thr_min, c[C_TILT_LIMIT])

    # Anti-windup, as PX4: vertically no integration against a saturated thrust; vertical thrust
    # first, keeping a horizontal margin; horizontally the integrator is pulled back by what the
    # saturation took away (tracking anti-windup).
    thr_max = lim[L_THR_MAX]
    if (t2 >= -thr_min and vel_err[2] >= 0.0) or (t2 <= -thr_max and vel_err[2] <= 0.0):
        vel_err[2] = 0.0
    xy_norm = math.hypot(t0, t1)
    thr_max_sq = thr_max * thr_max
    margin = _min(xy_norm, lim[L_THR_XY_MARGIN])
    t2 = _max(t2, -math.sqrt(_max(thr_max_sq - margin * margin, 0.0)))
    xy_room = math.sqrt(_max(thr_max_sq - t2 * t2, 0.0))
    if xy_norm > xy_room:
        t0 *= xy_room / xy_norm
        t1 *= xy_room / xy_norm
    h = k[K_HOVER]
    made_x, made_y = t0 * GRAVITY / h, t1 * GRAVITY / h
    if acc[0] * acc[0] + acc[1] * acc[1] > made_x * made_x + made_y * made_y:
        arw = 2.0 / lim[L_VEL_P]
        vel_err[0] -= arw * (acc[0] - made_x)
        vel_err[1] -= arw * (acc[1] - made_y)
    # PX4 integrates on the ground too (that is what delays the liftoff during the takeoff ramp and
    # lowers the thrust after touchdown); its takeoff and land logic resets the integrator. Without
    # that logic (C_GROUND_LOGIC 0) the integrator holds still on the ground.
    if c[C_GROUND_LOGIC] != 0.0 or s[GROUND] == 0.0:
        for i in range(3):
            if math.isfinite(vel_sp[i]):
                c[C_VEL_INT + i] += lim[L_VEL_I + i] * vel_err[i] * dt
        c[C_VEL_INT + 2] = _min(_max(c[C_VEL_INT + 2], -GRAVITY), GRAVITY)

    yaw, yawspeed = sp[SP_YAW], sp[SP_YAWSPEED]
    if math.isfinite(yaw):
        c[C_YAW_SP] = yaw
    elif math.isfinite(yawspeed):
        turned = c[C_YAW_SP] + yawspeed * dt
        c[C_YAW_SP] = turned - math.tau * np.rint(turned / math.tau)  # within [-pi, pi]
    c[C_YAWSPEED_FF] = yawspeed if math.isfinite(yawspeed) else 0.0

    for i in range(3):
        c[C_VEL_SP + i] = vel_sp[i]
        c[C_ACC_SP + i] = acc[i]
    c[C_THRUST_SP] = math.sqrt(t0 ** 2 + t1 ** 2 + t2 ** 2)
    c[C_ATT_SP], c[C_ATT_SP + 1], c[C_ATT_SP + 2], c[C_ATT_SP + 3] = attitude_from_thrust(t0, t1, t2, c[C_YAW_SP])


@numba.njit(cache=True)
def attitude_control(c: np.ndarray, k: np.ndarray, lim: np.ndarray, s: np.ndarray) -> None:
    """PX4's AttitudeControl: the body-rate setpoint for the attitude setpoint."""
    w, x, y, z = s[Q], s[Q + 1], s[Q + 2], s[Q + 3]
    dw, dx, dy, dz = c[C_ATT_SP], c[C_ATT_SP + 1], c[C_ATT_SP + 2], c[C_ATT_SP + 3]
    # Body z axes (current and desired) in the world frame.
    ez0, ez1, ez2 = 2.0 * (x * z + w * y), 2.0 * (y * z - w * x), 1.0 - 2.0 * (x * x + y * y)
    fz0, fz1, fz2 = 2.0 * (dx * dz + dw * dy), 2.0 * (dy * dz - dw * dx), 1.0 - 2.0 * (dx * dx + dy * dy)
    # Reduced attitude: the shortest rotation that aligns the thrust axis, applied to q, so roll and
    # pitch are corrected first and never traded for yaw.
    dot = ez0 * fz0 + ez1 * fz1 + ez2 * fz2
    if dot < -1.0 + 1e-6:
        rw, rx, ry, rz = dw, dx, dy, dz  # upside down: the shortest rotation is ill-defined
    else:
        bw = 1.0 + dot
        bx = ez1 * fz2 - ez2 * fz1
        by = ez2 * fz0 - ez0 * fz2
        bz = ez0 * fz1 - ez1 * fz0
        n = 1.0 / math.sqrt(bw * bw + bx * bx + by * by + bz * bz)
        bw, bx, by, bz = bw * n, bx * n, by * n, bz * n
        rw = bw * w - bx * x - by * y - bz * z
        rx = bw * x + bx * w + by * z - bz * y
        ry = bw * y - bx * z + by * w + bz * x
        rz = bw * z + bx * y - by * x + bz * w
    # The heading still missing, (reduced)^-1 * desired, is a rotation about z; add only
    # MC_YAW_WEIGHT of it.
    mw = rw * dw + rx * dx + ry * dy + rz * dz
    mz = rw * dz - rx * dy + ry * dx - rz * dw
    if mw < 0.0:
        mw, mz = -mw, -mz
    yaw_weight = lim[L_YAW_WEIGHT]
    half = yaw_weight * math.atan2(mz, mw)
    ch, sh = math.cos(half), math.sin(half)
    tw, tx, ty, tz = rw * ch - rz * sh, rx * ch + ry * sh, ry * ch - rx * sh, rw * sh + rz * ch
    # Attitude error q^-1 * target, as a rotation vector (small-angle: twice the vector part).
    ew = w * tw + x * tx + y * ty + z * tz
    sign = 2.0 if ew >= 0.0 else -2.0
    err = (sign * (w * tx - x * tw - y * tz + z * ty),
           sign * (w * ty + x * tz - y * tw - z * tx),
           sign * (w * tz - x * ty + y * tx - z * tw))
    ff = c[C_YAWSPEED_FF]  # about the world z axis, seen from the body:
    ffs = (ff * 2.0 * (x * z - w * y), ff * 2.0 * (y * z + w * x), ff * (1.0 - 2.0 * (x * x + y * y)))

    gain_z = lim[L_ATT_P + 2]
    if yaw_weight > 1e-4:
        gain_z /= yaw_weight  # as PX4: the weight shapes large errors, not the gain
    for i in range(3):
        rate = c[C_BODY_RATES + i]
        if rate != rate:  # NaN: not overridden by the setpoint
            # Yaw proportional as PX4 (its overshoot is PX4's); roll and pitch brake in time.
            if i == 2:
                rate = gain_z * err[2] + ffs[2]
            else:
                rate = _sqrt_controller(err[i], lim[L_ATT_P + i], k[K_BRAKE + i]) + ffs[i]
        rmax = lim[L_RATE_MAX + i]
        c[C_RATE_SP + i] = -rmax if rate < -rmax else (rmax if rate > rmax else rate)


@numba.njit(cache=True)
def rate_control(c: np.ndarray, k: np.ndarray, lim: np.ndarray, s: np.ndarray, dt: float,
                 out: np.ndarray) -> None:
    """PX4's RateControl and its allocator without airmode: the four motor commands into `out`."""
    p, q, r = s[OMEGA], s[OMEGA + 1], s[OMEGA + 2]
    pp, pq, pr = c[C_OMEGA_PREV], c[C_OMEGA_PREV + 1], c[C_OMEGA_PREV + 2]
    c[C_OMEGA_PREV], c[C_OMEGA_PREV + 1], c[C_OMEGA_PREV + 2] = p, q, r
    kp, kd = k[K_KP_RATE], k[K_KD_RATE]
    ex = c[C_RATE_SP] - p
    ey = c[C_RATE_SP + 1] - q
    ez = c[C_RATE_SP + 2] - r
    inv_dt = 1.0 / dt
    # Angular acceleration wanted; the D term damps with the measured angular acceleration.
    ax = kp * ex - kd * (p - pp) * inv_dt + c[C_RATE_INT]
    ay = kp * ey - kd * (q - pq) * inv_dt + c[C_RATE_INT + 1]
    # Yaw: PX4's PID in normalized torque (the integral is in those units), then its low-pass.
    yp, yi, yd = lim[L_YAW_PID], lim[L_YAW_PID + 1], lim[L_YAW_PID + 2]
    yaw_torque = yp * ez + c[C_RATE_INT + 2] - yd * (r - pr) * inv_dt
    cutoff = lim[L_YAW_TQ_CUTOFF]
    if cutoff > 0.0:
        f = dt / (dt + 1.0 / (math.tau * cutoff))
        yaw_torque = c[C_YAW_TORQUE] + f * (yaw_torque - c[C_YAW_TORQUE])
    c[C_YAW_TORQUE] = yaw_torque
    jx, jy, jz, kdw = k[K_JX], k[K_JY], k[K_JZ], k[K_KDW]
    tx = jx * ax + (jz - jy) * q * r + kdw * p
    ty = jy * ay + (jx - jz) * r * p + kdw * q
    tz = jz * k[K_YAW_ACCEL] * yaw_torque

    # Roll and pitch first; the collective may only be lowered to make room (no airmode). Unrolled:
    # numba would allocate arrays for these on every physics step.
    thrust = c[C_THRUST_SP]
    d0 = k[K_MIX_ROLL] * tx + k[K_MIX_PITCH] * ty
    d1 = k[K_MIX_ROLL + 1] * tx + k[K_MIX_PITCH + 1] * ty
    d2 = k[K_MIX_ROLL + 2] * tx + k[K_MIX_PITCH + 2] * ty
    d3 = k[K_MIX_ROLL + 3] * tx + k[K_MIX_PITCH + 3] * ty
    # The d_i sum to zero, so hi >= 0 >= lo.
    hi = d0 if d0 > d1 else d1
    hi = hi if hi > d2 else d2
    hi = hi if hi > d3 else d3
    lo = d0 if d0 < d1 else d1
    lo = lo if lo < d2 else d2
    lo = lo if lo < d3 else d3
    rp_scale = 1.0
    if hi - lo > 1.0:
        rp_scale = 1.0 / (hi - lo)
        hi *= rp_scale
        lo *= rp_scale
    if thrust + hi > 1.0:
        thrust = 1.0 - hi
    if thrust + lo < 0.0:
        rp_scale *= (thrust if thrust > 0.0 else 0.0) / -lo
    o0 = thrust + rp_scale * d0
    o1 = thrust + rp_scale * d1
    o2 = thrust + rp_scale * d2
    o3 = thrust + rp_scale * d3

    # Yaw with what is left: the largest share that keeps every motor in [0, 1 + headroom].
    y0, y1, y2, y3 = k[K_MIX_YAW] * tz, k[K_MIX_YAW + 1] * tz, k[K_MIX_YAW + 2] * tz, k[K_MIX_YAW + 3] * tz
    top = 1.0 + YAW_HEADROOM
    yaw_scale = 1.0
    if o0 + y0 > top or o1 + y1 > top or o2 + y2 > top or o3 + y3 > top \
            or o0 + y0 < 0.0 or o1 + y1 < 0.0 or o2 + y2 < 0.0 or o3 + y3 < 0.0:
        yaw_scale = _min(_min(_yaw_room(o0, y0, top), _yaw_room(o1, y1, top)),
                         _min(_yaw_room(o2, y2, top), _yaw_room(o3, y3, top)))
        y0, y1, y2, y3 = y0 * yaw_scale, y1 * yaw_scale, y2 * yaw_scale, y3 * yaw_scale
    o0 += y0
    o1 += y1
    o2 += y2
    o3 += y3
    top = o0 if o0 > o1 else o1
    top = top if top > o2 else o2
    top = top if top > o3 else o3
    if top > 1.0:
        excess = top - 1.0
        o0 -= excess
        o1 -= excess
        o2 -= excess
        o3 -= excess

    if s[GROUND] != 0.0:
        c[C_RATE_INT] = c[C_RATE_INT + 1] = c[C_RATE_INT + 2] = 0.0
    else:
        # Integrate only while the allocation delivered the axis in full.
        ki_dt = k[K_KI_RATE] * dt
        if rp_scale >= 1.0:
            i0, i1, m0, m1 = c[C_RATE_INT] + ki_dt * ex, c[C_RATE_INT + 1] + ki_dt * ey, k[K_RATE_INT_MAX], k[K_RATE_INT_MAX + 1]
            c[C_RATE_INT] = m0 if i0 > m0 else (-m0 if i0 < -m0 else i0)
            c[C_RATE_INT + 1] = m1 if i1 > m1 else (-m1 if i1 < -m1 else i1)
        if yaw_scale >= 1.0:
            fade = ez / YAW_I_FADE_RATE  # PX4 fades the integration out towards large rate errors
            fade = 1.0 - fade * fade
            if fade > 0.0:
                i2, m2 = c[C_RATE_INT + 2] + yi * fade * dt * ez, lim[L_YAW_INT_LIM]
                c[C_RATE_INT + 2] = m2 if i2 > m2 else (-m2 if i2 < -m2 else i2)

    out[0] = 0.0 if o0 < 0.0 else (1.0 if o0 > 1.0 else o0)
    out[1] = 0.0 if o1 < 0.0 else (1.0 if o1 > 1.0 else o1)
    out[2] = 0.0 if o2 < 0.0 else (1.0 if o2 > 1.0 else o2)
    out[3] = 0.0 if o3 < 0.0 else (1.0 if o3 > 1.0 else o3)


@numba.njit(cache=True)
def control_step(c: np.ndarray, k: np.ndarray, lim: np.ndarray, s: np.ndarray, kind: int, sp: np.ndarray,
                 dt: float, out: np.ndarray) -> None:
    """One physics step of control for a setpoint of `kind` (TRAJECTORY or ATTITUDE): motor commands into `out`."""
    if c[C_MODE] != kind:
        enter_mode(c, s, kind)
    if kind == TRAJECTORY:
        c[C_SINCE_POS] += dt
        if c[C_SINCE_POS] >= POSITION_PERIOD - _EPS:
            position_control(c, k, lim, s, sp, _min(c[C_SINCE_POS], POSITION_PERIOD))
            c[C_SINCE_POS] = 0.0
        c[C_SINCE_ATT] += dt
        if c[C_SINCE_ATT] >= ATTITUDE_PERIOD - _EPS:
            attitude_control(c, k, lim, s)
            c[C_SINCE_ATT] = 0.0
    else:
        c[C_SINCE_ATT] += dt
        if c[C_SINCE_ATT] >= ATTITUDE_PERIOD - _EPS:
            qw, qx, qy, qz = quat_normalize(sp[SP_Q], sp[SP_Q + 1], sp[SP_Q + 2], sp[SP_Q + 3])
            c[C_ATT_SP], c[C_ATT_SP + 1], c[C_ATT_SP + 2], c[C_ATT_SP + 3] = qw, qx, qy, qz
            c[C_THRUST_SP] = _min(_max(sp[SP_THRUST], 0.0), 1.0)
            for i in range(3):
                c[C_BODY_RATES + i] = sp[SP_BODY_RATES + i]
            attitude_control(c, k, lim, s)
            c[C_SINCE_ATT] = 0.0
    rate_control(c, k, lim, s, dt, out)
