"""A multicopter controller shaped like PX4's, for the built-in vehicle.

The cascade and its parameters are PX4's (mc_pos_control, mc_att_control, mc_rate_control and
the control allocator without airmode), so a client that tunes MPC_* or MC_* parameters sees the
effect it would on PX4:

    position P  ->  velocity PID  ->  acceleration  ->  thrust vector (tilt and thrust limits)
    ->  attitude (reduced attitude, yaw weighted)  ->  body rates  ->  torque  ->  4 motors

Three rates, all inside one :meth:`MulticopterController.update` call per physics step:

* position and velocity every 10 ms (100 Hz; PX4 runs it at the estimator rate, 50-250 Hz);
* attitude every 4 ms (250 Hz, as PX4 on most boards);
* body rates and allocation every physics step (500 Hz at the default 2 ms).

Where PX4 relies on hand-tuned gains, this controller uses the vehicle model, which it knows
exactly (``PhysicalParams``), so one design flies every profile from the weakest real platform of
FLYINGTRUST's Table I to the strongest virtual one:

* The roll and pitch rate loop commands angular acceleration and turns it into torque with the
  inertia (plus the gyroscopic and damping torques), so in angular-acceleration units the loop is
  the same for every vehicle: an integrator (the body) behind the motor lag. Its gains are set from
  the motor time constant tau: ``Kp = 3/tau`` with derivative damping on the measured angular
  acceleration, for a closed-loop natural frequency of ``sqrt(3)/tau`` with damping 0.7 (about
  58 rad/s at 30 ms), which keeps PX4's default attitude gains well damped for motor lags up to
  50 ms and stable up to 0.1 s, the longest a profile may declare. Vehicles differ only in where
  their torque saturates.
* The roll and pitch attitude loop keeps PX4's proportional law (MC_ROLL_P, MC_PITCH_P) but never
  asks for a rate the vehicle cannot stop from in time: near large errors the rate follows
  ``sqrt(2 * a * error)`` with ``a`` half the angular acceleration available around hover.
* Yaw is PX4's own, because its slow loop shapes every heading change (PX4 SIH overshoots a 90 deg
  step by 12-17 deg): MC_YAW_P on the yaw-weighted error, then MC_YAWRATE_P/I/D in PX4's
  normalized torque, low-passed at MC_YAW_TQ_CUTOFF. A full normalized yaw command moves all four
  rotors by their full range, twice the saturated yaw acceleration; the gains are scaled as
  px4.sih.controller_params scales MC_YAWRATE_K for PX4, so that every profile gets the loop of
  SIH's default vehicle.
* The hover thrust is ``m g / T_max`` from the model, not MPC_THR_HOVER (PX4 estimates it in
  flight and converges to the same). There is no drag model: the velocity integrator learns drag
  and wind, as PX4's does.

Units: thrusts are normalized, 1 = all rotors at full thrust; motor commands are normalized
per-rotor thrust in [0, 1] (what ``QuadrotorDynamics.step`` takes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from math import isfinite
from typing import Sequence

from profiles.airframe import GRAVITY
from profiles.physical import PhysicalParams
from px4.params import ParamStore
from px4.sih import sih_default_capability
from px4.sim.dynamics import QuadrotorDynamics, rotor_geometry

NAN = math.nan
Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]

POSITION_PERIOD = 0.010  # s
ATTITUDE_PERIOD = 0.004  # s
IDLE_THRUST = 0.05  # normalized per-rotor thrust of an armed vehicle on the ground
YAW_I_FADE_RATE = math.radians(400.0)  # rad/s
_EPS = 1e-9  # tolerance on loop periods accumulated from float dt


@dataclass
class TrajectorySetpoint:
    """PX4's trajectory_setpoint: NED position, velocity and acceleration, NaN = not controlled.

    Per axis: a position makes it position control, with the velocity (if set) as feed-forward; a
    velocity without position makes it velocity control; the acceleration is added as
    feed-forward, or, with neither position nor velocity, is the setpoint itself (all three NaN:
    no acceleration, the vehicle coasts). ``yaw`` NaN
    keeps the heading (turning at ``yawspeed`` if that is set); ``yawspeed`` is a feed-forward.
    """

    position: Vec3 = (NAN, NAN, NAN)
    velocity: Vec3 = (NAN, NAN, NAN)
    acceleration: Vec3 = (NAN, NAN, NAN)
    yaw: float = NAN
    yawspeed: float = NAN


@dataclass
class AttitudeSetpoint:
    """What MAVLink SET_ATTITUDE_TARGET carries: attitude, collective thrust, optional body rates.

    ``q_d`` is (w, x, y, z), body to NED; ``thrust`` the normalized collective (0..1); a finite
    component of ``body_rates`` (rad/s) replaces the attitude loop's output for that axis.
    """

    q_d: Quat = (1.0, 0.0, 0.0, 0.0)
    thrust: float = 0.0
    body_rates: Vec3 = (NAN, NAN, NAN)


# --- small quaternion helpers (w, x, y, z); they run at most at the attitude rate -------------

def quat_normalize(a: Sequence[float]) -> Quat:
    """Unit quaternion with w >= 0 (the same rotation, the short way round)."""
    n = math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2] + a[3] * a[3])
    if n < 1e-12:
        return (1.0, 0.0, 0.0, 0.0)
    if a[0] < 0.0:
        n = -n
    return (a[0] / n, a[1] / n, a[2] / n, a[3] / n)


def quat_from_yaw(yaw: float) -> Quat:
    """Level attitude with heading ``yaw``."""
    return (math.cos(0.5 * yaw), 0.0, 0.0, math.sin(0.5 * yaw))


def quat_from_euler(roll: float, pitch: float, yaw: float) -> Quat:
    """Body-to-world quaternion from ZYX Euler angles (rad), PX4's convention."""
    cr, sr = math.cos(0.5 * roll), math.sin(0.5 * roll)
    cp, sp = math.cos(0.5 * pitch), math.sin(0.5 * pitch)
    cy, sy = math.cos(0.5 * yaw), math.sin(0.5 * yaw)
    return (cr * cp * cy + sr * sp * sy, sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy)


def quat_from_axes(bx: Vec3, by: Vec3, bz: Vec3) -> Quat:
    """Quaternion of the rotation whose matrix has columns bx, by, bz (body axes in world)."""
    r00, r10, r20 = bx
    r01, r11, r21 = by
    r02, r12, r22 = bz
    trace = r00 + r11 + r22
    if trace > 0.0:
        s = 2.0 * math.sqrt(trace + 1.0)
        q = (0.25 * s, (r21 - r12) / s, (r02 - r20) / s, (r10 - r01) / s)
    elif r00 > r11 and r00 > r22:
        s = 2.0 * math.sqrt(1.0 + r00 - r11 - r22)
        q = ((r21 - r12) / s, 0.25 * s, (r01 + r10) / s, (r02 + r20) / s)
    elif r11 > r22:
        s = 2.0 * math.sqrt(1.0 + r11 - r00 - r22)
        q = ((r02 - r20) / s, (r01 + r10) / s, 0.25 * s, (r12 + r21) / s)
    else:
        s = 2.0 * math.sqrt(1.0 + r22 - r00 - r11)
        q = ((r10 - r01) / s, (r02 + r20) / s, (r12 + r21) / s, 0.25 * s)
    return quat_normalize(q)


def attitude_from_thrust(thrust_ned: Vec3, yaw: float) -> Quat:
    """Attitude that points the thrust along ``thrust_ned`` with heading ``yaw`` (PX4's bodyzToAttitude)."""
    tx, ty, tz = thrust_ned
    n = math.sqrt(tx * tx + ty * ty + tz * tz)
    if n < 1e-9:
        return quat_from_yaw(yaw)
    bz = (-tx / n, -ty / n, -tz / n)  # body z points opposite the thrust
    yc = (-math.sin(yaw), math.cos(yaw), 0.0)
    if abs(bz[2]) < 1e-6:
        # Thrust horizontal: heading is undefined; any body x perpendicular to body z will do.
        bx = (0.0, 0.0, 1.0)
    else:
        bx = (yc[1] * bz[2] - yc[2] * bz[1], yc[2] * bz[0] - yc[0] * bz[2], yc[0] * bz[1] - yc[1] * bz[0])
        if bz[2] < 0.0:  # upside down: keep the nose on the commanded heading
            bx = (-bx[0], -bx[1], -bx[2])
        m = math.sqrt(bx[0] ** 2 + bx[1] ** 2 + bx[2] ** 2)
        bx = (bx[0] / m, bx[1] / m, bx[2] / m)
    by = (bz[1] * bx[2] - bz[2] * bx[1], bz[2] * bx[0] - bz[0] * bx[2], bz[0] * bx[1] - bz[1] * bx[0])
    return quat_from_axes(bx, by, bz)


def _sqrt_controller(error: float, gain: float, accel: float) -> float:
    # Proportional near zero, square root far away, so that braking never needs more than
    # `accel`; continuous (value and slope) where the two meet.
    linear = accel / (gain * gain) if gain > 0.0 else math.inf
    if abs(error) <= linear:
        return gain * error
    return math.copysign(math.sqrt(2.0 * accel * (abs(error) - 0.5 * linear)), error)


def _yaw_room(out: float, yaw: float, top: float) -> float:
    # Largest share of `yaw` (0..1) that keeps `out + share * yaw` within [0, top].
    if yaw > 0.0:
        share = (top - out) / yaw
    elif yaw < 0.0:
        share = out / -yaw
    else:
        return 1.0
    return 0.0 if share < 0.0 else (1.0 if share > 1.0 else share)


@dataclass
class _Limits:
    """The MPC_*/MC_* parameters, in SI units, re-read when the parameter store changes."""

    pos_p: Vec3
    vel_p: Vec3
    vel_i: Vec3
    vel_d: Vec3
    vel_xy_max: float
    vel_up_max: float
    vel_dn_max: float
    tilt_max: float  # rad, in the air
    tilt_landed: float  # rad, until the takeoff ramp is done (MPC_TILTMAX_LND)
    thr_min: float
    thr_max: float
    thr_xy_margin: float
    vel_deriv_cutoff: float  # Hz, low-pass on the velocity derivative (MPC_VELD_LP)
    att_p: Vec3
    yaw_weight: float
    rate_max: Vec3  # rad/s
    yaw_rate_pid: Vec3  # MC_YAWRATE_P, _I, _D (normalized torque per rad/s)
    yaw_int_limit: float  # MC_YR_INT_LIM (normalized torque)
    yaw_torque_cutoff: float  # Hz, MC_YAW_TQ_CUTOFF (0: off)

    @classmethod
    def read(cls, s: ParamStore) -> "_Limits":
        """Take the values from the parameter store."""
        d2r = math.radians
        return cls(
            pos_p=(s["MPC_XY_P"], s["MPC_XY_P"], s["MPC_Z_P"]),
            vel_p=(s["MPC_XY_VEL_P_ACC"], s["MPC_XY_VEL_P_ACC"], s["MPC_Z_VEL_P_ACC"]),
            vel_i=(s["MPC_XY_VEL_I_ACC"], s["MPC_XY_VEL_I_ACC"], s["MPC_Z_VEL_I_ACC"]),
            vel_d=(s["MPC_XY_VEL_D_ACC"], s["MPC_XY_VEL_D_ACC"], s["MPC_Z_VEL_D_ACC"]),
            vel_xy_max=s["MPC_XY_VEL_MAX"],
            vel_up_max=s["MPC_Z_VEL_MAX_UP"],
            vel_dn_max=s["MPC_Z_VEL_MAX_DN"],
            tilt_max=d2r(s["MPC_TILTMAX_AIR"]),
            tilt_landed=d2r(min(s["MPC_TILTMAX_LND"], s["MPC_TILTMAX_AIR"])),
            thr_min=s["MPC_THR_MIN"],
            thr_max=s["MPC_THR_MAX"],
            thr_xy_margin=s["MPC_THR_XY_MARG"],
            vel_deriv_cutoff=s["MPC_VELD_LP"],
            att_p=(s["MC_ROLL_P"], s["MC_PITCH_P"], s["MC_YAW_P"]),
            yaw_weight=min(max(s["MC_YAW_WEIGHT"], 0.0), 1.0),
            rate_max=(d2r(s["MC_ROLLRATE_MAX"]), d2r(s["MC_PITCHRATE_MAX"]), d2r(s["MC_YAWRATE_MAX"])),
            yaw_rate_pid=(s["MC_YAWRATE_P"], s["MC_YAWRATE_I"], s["MC_YAWRATE_D"]),
            yaw_int_limit=s["MC_YR_INT_LIM"],
            yaw_torque_cutoff=s["MC_YAW_TQ_CUTOFF"],
        )


def _constrain_xy(v0: tuple[float, float], v1: tuple[float, float], limit: float) -> tuple[float, float]:
    """v0 + v1 within `limit`, giving up v1 (the feed-forward) before v0 (PX4's ControlMath::constrainXY)."""
    sn, se = v0[0] + v1[0], v0[1] + v1[1]
    if math.hypot(sn, se) <= limit:
        return sn, se
    n0 = math.hypot(v0[0], v0[1])
    if n0 >= limit:
        return (v0[0] / n0 * limit, v0[1] / n0 * limit) if n0 > 0.0 else (0.0, 0.0)
    # The largest s in [0, 1] with |v0 + s v1| = limit.
    a = v1[0] * v1[0] + v1[1] * v1[1]
    b = 2.0 * (v0[0] * v1[0] + v0[1] * v1[1])
    c = n0 * n0 - limit * limit
    k = (-b + math.sqrt(max(b * b - 4.0 * a * c, 0.0))) / (2.0 * a)
    return v0[0] + k * v1[0], v0[1] + k * v1[1]


class MulticopterController:
    """Position, velocity, attitude and rate control plus motor allocation for one vehicle.

    Call :meth:`update` once per physics step with the current setpoint. The last setpoints of
    each loop are kept for telemetry: ``attitude_sp`` (w, x, y, z), ``thrust_sp`` (normalized
    collective), ``rate_sp`` (body, rad/s), ``vel_sp`` and ``acc_sp`` (NED; NaN where the
    velocity loop is not in use).
    """

    # Rate loop: proportional gain times the motor time constant, and damping ratio.
    RATE_GAIN_TAU = 3.0
    RATE_DAMPING = 0.7
    # Rate integrator: zero at a tenth of the loop's natural frequency; limited to this fraction
    # of the axis' maximum angular acceleration.
    RATE_INT_LIMIT = 0.3
    # Yaw may push the most loaded motor this far past full thrust before the collective is
    # lowered to make room (PX4's allocator allows 0.15).
    YAW_HEADROOM = 0.15

    def __init__(self, phys: PhysicalParams, params: ParamStore, ground_logic: bool = False):
        self.params = params
        # The caller runs PX4's takeoff and land logic (px4.sim.takeoff), which resets the velocity
        # integrator while the vehicle has not taken off.
        self.ground_logic = ground_logic
        self._params_version = -1
        self._sync_params()
        self.configure(phys)
        self.reset()

    # --- set-up -----------------------------------------------------------------------------

    def configure(self, phys: PhysicalParams) -> None:
        """Adopt new physical parameters (the model the controller is built on)."""
        self.phys = phys
        self.hover_thrust = phys.hover_thrust
        f_max = phys.rotor_thrust_max
        positions, spins = rotor_geometry(phys)
        roll_k = [-y for _, y in positions]
        pitch_k = [x for x, _ in positions]
        yaw_k = [s * phys.c_m / phys.c_t for s in spins]
        # Pseudo-inverse of the (symmetric) allocation: per-rotor normalized thrust per N m.
        self._mix_roll = tuple(k / (f_max * sum(c * c for c in roll_k)) for k in roll_k)
        self._mix_pitch = tuple(k / (f_max * sum(c * c for c in pitch_k)) for k in pitch_k)
        self._mix_yaw = tuple(k / (f_max * sum(c * c for c in yaw_k)) for k in yaw_k)

        # Rate loop in angular-acceleration units: plant 1/(s (tau s + 1)), PD on the measurement
        # gives tau s^2 + (1 + Kd) s + Kp, i.e. wn = sqrt(Kp/tau), 2 zeta wn tau = 1 + Kd.
        tau = phys.motor_tau
        self._kp_rate = self.RATE_GAIN_TAU / tau
        wn = math.sqrt(self._kp_rate / tau)
        self._kd_rate = 2.0 * self.RATE_DAMPING * wn * tau - 1.0
        self._ki_rate = 0.1 * wn * self._kp_rate
        alpha = phys.alpha_max
        self._rate_int_max = tuple(self.RATE_INT_LIMIT * a for a in alpha)
        # Angular acceleration per unit of PX4's normalized yaw torque, with the MC_YAWRATE_K
        # scaling px4.sih.controller_params applies: the SIH default vehicle's for every profile.
        self._yaw_accel_per_unit = 2.0 * sih_default_capability().alpha_z_max
        # Torque margin around hover: the rotors can move by min(h, 1 - h) either way, which
        # is this fraction of the full-authority torque.
        h = self.hover_thrust
        authority = min(1.0, 2.0 * min(h, 1.0 - h))
        self._brake_accel = tuple(0.5 * authority * a for a in alpha)

    def reset(self) -> None:
        """Forget all loop state (integrators, held heading, last setpoints)."""
        self._vel_int = [0.0, 0.0, 0.0]
        self._vel_prev: list[float] | None = None
        self._rate_int = [0.0, 0.0, 0.0]
        self._yaw_torque = 0.0
        self._omega_prev = (0.0, 0.0, 0.0)
        self._yaw_sp = NAN
        self._yawspeed_ff = 0.0
        self._since_pos = math.inf  # run the slow loops on the first call
        self._since_att = math.inf
        self._mode: type | None = None
        self.attitude_sp: Quat = (1.0, 0.0, 0.0, 0.0)
        self.thrust_sp = 0.0
        self.rate_sp = [0.0, 0.0, 0.0]
        self.vel_sp = [NAN, NAN, NAN]
        self.acc_sp = [NAN, NAN, NAN]
        self._body_rates: Vec3 = (NAN, NAN, NAN)
        self._vel_dot = [0.0, 0.0, 0.0]
        self._tilt_limit: float | None = None
        self.flying = True
        self._speed_caps: tuple[float | None, float | None, float | None] = (None, None, None)

    def set_flight_limits(self, speed_xy: float | None = None, speed_up: float | None = None,
                          speed_down: float | None = None, flying: bool = True) -> None:
        """What PX4's position controller takes from the flight task and the takeoff state, each cycle.

        The velocity caps (None: MPC_XY_VEL_MAX, MPC_Z_VEL_MAX_UP, MPC_Z_VEL_MAX_DN); `speed_up` may
        be negative while the takeoff ramp starts (it then pushes down). Until `flying` (the ramp is
        over) there is no minimum thrust and the tilt is limited to MPC_TILTMAX_LND.
        """
        self._speed_caps = (speed_xy, speed_up, speed_down)
        self.flying = flying

    def reset_integral(self) -> None:
        """Forget the velocity integrator (PX4 does while the vehicle has not taken off)."""
        self._vel_int = [0.0, 0.0, 0.0]

    def _sync_params(self) -> None:
        # Cheap enough to call every loop: the store bumps `version` on every change.
        if self.params.version != self._params_version:
            self._params_version = self.params.version
            self.lim = _Limits.read(self.params)

    # --- entry points -------------------------------------------------------------------------

    def update(self, dyn: QuadrotorDynamics,
               setpoint: TrajectorySetpoint | AttitudeSetpoint | None, dt: float | None = None) -> list[float]:
        """Motor commands for the next physics step; ``None`` as setpoint means idle on the ground."""
        if setpoint is None:
            return self.idle()
        if isinstance(setpoint, AttitudeSetpoint):
            return self.update_attitude(dyn, setpoint, dt)
        return self.update_trajectory(dyn, setpoint, dt)

    def update_trajectory(self, dyn: QuadrotorDynamics, sp: TrajectorySetpoint,
                          dt: float | None = None) -> list[float]:
        """One physics step of position/velocity/acceleration control (offboard, auto modes)."""
        if dt is None:
            dt = dyn.dt
        if self._mode is not TrajectorySetpoint:
            self._enter_mode(dyn, TrajectorySetpoint)
        self._since_pos += dt
        if self._since_pos >= POSITION_PERIOD - _EPS:
            self._sync_params()
            self._position_control(dyn, sp, min(self._since_pos, POSITION_PERIOD))
            self._since_pos = 0.0
        self._since_att += dt
        if self._since_att >= ATTITUDE_PERIOD - _EPS:
            self._attitude_control(dyn)
            self._since_att = 0.0
        return self._rate_control(dyn, dt)

    def update_attitude(self, dyn: QuadrotorDynamics, sp: AttitudeSetpoint,
                        dt: float | None = None) -> list[float]:
        """One physics step of attitude (and optionally body-rate) control with a given thrust."""
        if dt is None:
            dt = dyn.dt
        if self._mode is not AttitudeSetpoint:
            self._enter_mode(dyn, AttitudeSetpoint)
        self._since_att += dt
        if self._since_att >= ATTITUDE_PERIOD - _EPS:
            self._sync_params()
            self.attitude_sp = quat_normalize(sp.q_d)
            self.thrust_sp = min(max(float(sp.thrust), 0.0), 1.0)
            self._body_rates = sp.body_rates
            self._attitude_control(dyn)
            self._since_att = 0.0
        return self._rate_control(dyn, dt)

    def idle(self) -> list[float]:
        """Motor commands of an armed vehicle waiting on the ground."""
        return [IDLE_THRUST] * 4

    def _enter_mode(self, dyn: QuadrotorDynamics, mode: type) -> None:
        # A new kind of setpoint starts its loops afresh from the current state.
        self._mode = mode
        self._vel_int = [0.0, 0.0, 0.0]
        self._vel_prev = None
        self._vel_dot = [0.0, 0.0, 0.0]
        self._body_rates = (NAN, NAN, NAN)
        self._yaw_sp = dyn.yaw
        self._since_pos = math.inf
        self._since_att = math.inf
        self.vel_sp = [NAN, NAN, NAN]
        self.acc_sp = [NAN, NAN, NAN]

    # --- position and velocity (PX4 PositionControl) --------------------------------------------

    def _position_control(self, dyn: QuadrotorDynamics, sp: TrajectorySetpoint, dt: float) -> None:
        lim = self.lim
        pos, vel = dyn.pos, dyn.vel
        caps = self._speed_caps
        xy_max = min(caps[0], lim.vel_xy_max) if caps[0] is not None else lim.vel_xy_max
        up_max = min(caps[1], lim.vel_up_max) if caps[1] is not None else lim.vel_up_max
        down_max = max(caps[2], 0.0) if caps[2] is not None else lim.vel_dn_max

        # P on position; the velocity setpoint, if any, is the feed-forward (unrolled: 100 Hz).
        vel_sp = [NAN, NAN, NAN]
        from_pos = [0.0, 0.0, 0.0]
        sp_pos, sp_vel, pos_p = sp.position, sp.velocity, lim.pos_p
        for i in (0, 1, 2):
            p_sp, v_ff = sp_pos[i], sp_vel[i]
            if p_sp == p_sp:  # not NaN (positions are finite or NaN)
                f = from_pos[i] = pos_p[i] * (p_sp - pos[i])
                vel_sp[i] = f + (v_ff if isfinite(v_ff) else 0.0)
            elif isfinite(v_ff):
                vel_sp[i] = v_ff
        if isfinite(vel_sp[0]) and isfinite(vel_sp[1]):
            # The part that closes the position error keeps priority over the feed-forward.
            vel_sp[0], vel_sp[1] = _constrain_xy((from_pos[0], from_pos[1]),
                                                 (vel_sp[0] - from_pos[0], vel_sp[1] - from_pos[1]), xy_max)
        if isfinite(vel_sp[2]):
            # PX4's constrain: a negative upward limit (takeoff ramp) wins over the downward one.
            vel_sp[2] = max(min(vel_sp[2], down_max), -up_max)

        # Velocity derivative for the D term, low-passed as PX4's MPC_VELD_LP does.
        prev = self._vel_prev
        self._vel_prev = [vel[0], vel[1], vel[2]]
        if prev is not None:
            alpha = dt / (dt + 1.0 / (math.tau * lim.vel_deriv_cutoff)) if lim.vel_deriv_cutoff > 0.0 else 1.0
            vd = self._vel_dot
            vd[0] += alpha * ((vel[0] - prev[0]) / dt - vd[0])
            vd[1] += alpha * ((vel[1] - prev[1]) / dt - vd[1])
            vd[2] += alpha * ((vel[2] - prev[2]) / dt - vd[2])

        # Velocity PID -> acceleration, the acceleration setpoint as feed-forward (PX4: no drag
        # model; the integrator learns drag and wind alike).
        acc = [0.0, 0.0, 0.0]
        vel_err = [0.0, 0.0, 0.0]
        sp_acc, vel_p, vel_d, vel_int, vel_dot = sp.acceleration, lim.vel_p, lim.vel_d, self._vel_int, self._vel_dot
        for i in (0, 1, 2):
            a_ff = sp_acc[i]
            v_sp = vel_sp[i]
            if isfinite(v_sp):
                e = vel_err[i] = v_sp - vel[i]
                pid = vel_p[i] * e + vel_int[i] - vel_d[i] * vel_dot[i]
                acc[i] = pid + a_ff if isfinite(a_ff) else pid
            else:
                acc[i] = a_ff if isfinite(a_ff) else 0.0

        thr_min = lim.thr_min if self.flying else 0.0
        tilt_target = lim.tilt_max if self.flying else lim.tilt_landed
        if self._tilt_limit is None:
            self._tilt_limit = tilt_target
        else:  # PX4 slews the tilt limit at 0.2 rad/s
            step = 0.2 * dt
            self._tilt_limit += min(max(tilt_target - self._tilt_limit, -step), step)
        thr = self._thrust_vector(acc, thr_min, self._tilt_limit)

        # Anti-windup, as PX4: vertically no integration against a saturated thrust; vertical
        # thrust first, keeping a horizontal margin; horizontally the integrator is pulled back
        # by what the saturation took away (tracking anti-windup).
        if (thr[2] >= -thr_min and vel_err[2] >= 0.0) or (thr[2] <= -lim.thr_max and vel_err[2] <= 0.0):
            vel_err[2] = 0.0
        xy_norm = math.hypot(thr[0], thr[1])
        thr_max_sq = lim.thr_max * lim.thr_max
        margin = min(xy_norm, lim.thr_xy_margin)
        thr[2] = max(thr[2], -math.sqrt(max(thr_max_sq - margin * margin, 0.0)))
        xy_room = math.sqrt(max(thr_max_sq - thr[2] * thr[2], 0.0))
        if xy_norm > xy_room:
            thr[0] *= xy_room / xy_norm
            thr[1] *= xy_room / xy_norm
        h = self.hover_thrust
        made_x, made_y = thr[0] * GRAVITY / h, thr[1] * GRAVITY / h
        if acc[0] * acc[0] + acc[1] * acc[1] > made_x * made_x + made_y * made_y:
            arw = 2.0 / lim.vel_p[0]
            vel_err[0] -= arw * (acc[0] - made_x)
            vel_err[1] -= arw * (acc[1] - made_y)
        # PX4 integrates on the ground too (that is what delays the liftoff during the takeoff ramp
        # and lowers the thrust after touchdown); its takeoff and land logic resets the integrator.
        # Without that logic (`ground_logic` False) the integrator holds still on the ground.
        if self.ground_logic or not dyn.on_ground:
            for i in range(3):
                if isfinite(vel_sp[i]):
                    self._vel_int[i] += lim.vel_i[i] * vel_err[i] * dt
            self._vel_int[2] = min(max(self._vel_int[2], -GRAVITY), GRAVITY)

        if isfinite(sp.yaw):
            self._yaw_sp = sp.yaw
        elif isfinite(sp.yawspeed):
            self._yaw_sp = math.remainder(self._yaw_sp + sp.yawspeed * dt, math.tau)
        self._yawspeed_ff = sp.yawspeed if isfinite(sp.yawspeed) else 0.0

        self.vel_sp = vel_sp
        self.acc_sp = acc
        self.thrust_sp = math.sqrt(thr[0] ** 2 + thr[1] ** 2 + thr[2] ** 2)
        self.attitude_sp = attitude_from_thrust((thr[0], thr[1], thr[2]), self._yaw_sp)

    def _thrust_vector(self, acc: list[float], thr_min: float, tilt_limit: float) -> list[float]:
        """Normalized NED thrust vector for an acceleration setpoint (PX4's _accelerationControl)."""
        h = self.hover_thrust
        # Tilt from the horizontal acceleration against gravity alone (PX4's default decoupling
        # of horizontal and vertical acceleration); vertical acceleration sets the magnitude.
        bx, by, bz = -acc[0], -acc[1], GRAVITY
        n = math.sqrt(bx * bx + by * by + bz * bz)
        bx, by, bz = bx / n, by / n, bz / n
        if math.acos(min(1.0, bz)) > tilt_limit:
            hor = math.hypot(bx, by)
            s = math.sin(tilt_limit) / hor
            bx, by, bz = bx * s, by * s, math.cos(tilt_limit)
        collective = min((acc[2] * (h / GRAVITY) - h) / bz, -thr_min)  # NED: negative is up
        return [bx * collective, by * collective, bz * collective]

    # --- attitude (PX4 AttitudeControl) ------------------------------------------------------

    def _attitude_control(self, dyn: QuadrotorDynamics) -> None:
        # Quaternion algebra written out in floats: this runs at 250 Hz in every lockstep trial.
        lim = self.lim
        w, x, y, z = dyn.q
        dw, dx, dy, dz = self.attitude_sp
        # Body z axes (current and desired) in the world frame.
        ez0, ez1, ez2 = 2.0 * (x * z + w * y), 2.0 * (y * z - w * x), 1.0 - 2.0 * (x * x + y * y)
        fz0, fz1, fz2 = 2.0 * (dx * dz + dw * dy), 2.0 * (dy * dz - dw * dx), 1.0 - 2.0 * (dx * dx + dy * dy)
        # Reduced attitude: the shortest rotation that aligns the thrust axis, applied to q, so
        # roll/pitch are corrected first and never traded for yaw.
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
        half = lim.yaw_weight * math.atan2(mz, mw)
        c, s = math.cos(half), math.sin(half)
        tw, tx, ty, tz = rw * c - rz * s, rx * c + ry * s, ry * c - rx * s, rw * s + rz * c
        # Attitude error q^-1 * target, as a rotation vector (small-angle: twice the vector part).
        ew = w * tw + x * tx + y * ty + z * tz
        sign = 2.0 if ew >= 0.0 else -2.0
        err_x = sign * (w * tx - x * tw - y * tz + z * ty)
        err_y = sign * (w * ty + x * tz - y * tw - z * tx)
        err_z = sign * (w * tz - x * ty + y * tx - z * tw)
        ff = self._yawspeed_ff  # about the world z axis, seen from the body:
        ff_x, ff_y, ff_z = ff * 2.0 * (x * z - w * y), ff * 2.0 * (y * z + w * x), ff * (1.0 - 2.0 * (x * x + y * y))

        gain_x, gain_y, gain_z = lim.att_p
        if lim.yaw_weight > 1e-4:
            gain_z /= lim.yaw_weight  # as PX4: the weight shapes large errors, not the gain
        brake = self._brake_accel
        rmax = lim.rate_max
        body = self._body_rates
        rates = self.rate_sp
        for i, err, gain, ff_i in ((0, err_x, gain_x, ff_x), (1, err_y, gain_y, ff_y), (2, err_z, gain_z, ff_z)):
            rate = body[i]
            if rate != rate:  # NaN: not overridden by the setpoint
                # Yaw proportional as PX4 (its overshoot is PX4's); roll and pitch brake in time.
                rate = (gain * err if i == 2 else _sqrt_controller(err, gain, brake[i])) + ff_i
            rates[i] = -rmax[i] if rate < -rmax[i] else (rmax[i] if rate > rmax[i] else rate)

    # --- body rates and allocation (PX4 RateControl + allocator without airmode) ---------------
    # Runs every physics step, hence the unrolled float code.

    def _rate_control(self, dyn: QuadrotorDynamics, dt: float) -> list[float]:
        phys = self.phys
        p, q, r = dyn.omega
        pp, pq, pr = self._omega_prev
        self._omega_prev = (p, q, r)
        sp = self.rate_sp
        kp, kd = self._kp_rate, self._kd_rate
        integ = self._rate_int
        ex = sp[0] - p
        ey = sp[1] - q
        ez = sp[2] - r
        inv_dt = 1.0 / dt
        # Angular acceleration wanted; the D term damps with the measured angular acceleration.
        ax = kp * ex - kd * (p - pp) * inv_dt + integ[0]
        ay = kp * ey - kd * (q - pq) * inv_dt + integ[1]
        # Yaw: PX4's PID in normalized torque (integ[2] is in those units), then its low-pass.
        lim = self.lim
        yp, _, yd = lim.yaw_rate_pid
        yaw_torque = yp * ez + integ[2] - yd * (r - pr) * inv_dt
        if lim.yaw_torque_cutoff > 0.0:
            k = dt / (dt + 1.0 / (math.tau * lim.yaw_torque_cutoff))
            yaw_torque = self._yaw_torque + k * (yaw_torque - self._yaw_torque)
        self._yaw_torque = yaw_torque
        jx, jy, jz, kdw = phys.ixx, phys.iyy, phys.izz, phys.kdw
        tx = jx * ax + (jz - jy) * q * r + kdw * p
        ty = jy * ay + (jx - jz) * r * p + kdw * q
        tz = jz * self._yaw_accel_per_unit * yaw_torque

        # Roll and pitch first; the collective may only be lowered to make room (no airmode).
        c = self.thrust_sp
        mr, mp, my = self._mix_roll, self._mix_pitch, self._mix_yaw
        d0 = mr[0] * tx + mp[0] * ty
        d1 = mr[1] * tx + mp[1] * ty
        d2 = mr[2] * tx + mp[2] * ty
        d3 = mr[3] * tx + mp[3] * ty
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
        if c + hi > 1.0:
            c = 1.0 - hi
        if c + lo < 0.0:
            rp_scale *= (c if c > 0.0 else 0.0) / -lo
        o0 = c + rp_scale * d0
        o1 = c + rp_scale * d1
        o2 = c + rp_scale * d2
        o3 = c + rp_scale * d3

        # Yaw with what is left: the largest share that keeps every motor in [0, 1 + headroom].
        y0, y1, y2, y3 = my[0] * tz, my[1] * tz, my[2] * tz, my[3] * tz
        top = 1.0 + self.YAW_HEADROOM
        yaw_scale = 1.0
        if o0 + y0 > top or o1 + y1 > top or o2 + y2 > top or o3 + y3 > top \
                or o0 + y0 < 0.0 or o1 + y1 < 0.0 or o2 + y2 < 0.0 or o3 + y3 < 0.0:
            yaw_scale = min(_yaw_room(o0, y0, top), _yaw_room(o1, y1, top),
                            _yaw_room(o2, y2, top), _yaw_room(o3, y3, top))
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

        if dyn.on_ground:
            integ[0] = integ[1] = integ[2] = 0.0
        else:
            # Integrate only while the allocation delivered the axis in full.
            ki_dt = self._ki_rate * dt
            lim_i = self._rate_int_max
            if rp_scale >= 1.0:
                i0, i1, m0, m1 = integ[0] + ki_dt * ex, integ[1] + ki_dt * ey, lim_i[0], lim_i[1]
                integ[0] = m0 if i0 > m0 else (-m0 if i0 < -m0 else i0)
                integ[1] = m1 if i1 > m1 else (-m1 if i1 < -m1 else i1)
            if yaw_scale >= 1.0:
                fade = ez / YAW_I_FADE_RATE  # PX4 fades the integration out towards large rate errors
                fade = 1.0 - fade * fade
                if fade > 0.0:
                    i2, m2 = integ[2] + lim.yaw_rate_pid[1] * fade * dt * ez, lim.yaw_int_limit
                    integ[2] = m2 if i2 > m2 else (-m2 if i2 < -m2 else i2)

        return [0.0 if o0 < 0.0 else (1.0 if o0 > 1.0 else o0),
                0.0 if o1 < 0.0 else (1.0 if o1 > 1.0 else o1),
                0.0 if o2 < 0.0 else (1.0 if o2 > 1.0 else o2),
                0.0 if o3 < 0.0 else (1.0 if o3 > 1.0 else o3)]
