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

The loops are compiled with numba (`px4.sim.control_kernels`), over flat arrays: at 500 Hz they are most of
a lockstep trial's arithmetic, and `px4.sim.inner_loop` runs them with the physics for many steps in
one call.

Units: thrusts are normalized, 1 = all rotors at full thrust; motor commands are normalized
per-rotor thrust in [0, 1] (what ``QuadrotorDynamics.step`` takes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from physics.dynamics import QuadrotorDynamics, rotor_geometry
from profiles.physical import PhysicalParams
from px4.params import ParamStore
from px4.sih import sih_default_capability
from px4.sim import control_kernels as kern
from px4.sim.control_kernels import IDLE_THRUST

NAN = math.nan
Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]


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


def quat_from_euler(roll: float, pitch: float, yaw: float) -> Quat:
    """Body-to-world quaternion from ZYX Euler angles (rad), PX4's convention."""
    cr, sr = math.cos(0.5 * roll), math.sin(0.5 * roll)
    cp, sp = math.cos(0.5 * pitch), math.sin(0.5 * pitch)
    cy, sy = math.cos(0.5 * yaw), math.sin(0.5 * yaw)
    return (cr * cp * cy + sr * sp * sy, sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy)


def setpoint_array(setpoint: TrajectorySetpoint | AttitudeSetpoint) -> tuple[int, np.ndarray]:
    """The kind (`control_kernels.TRAJECTORY` or `ATTITUDE`) and array the compiled loops take for a setpoint."""
    if isinstance(setpoint, AttitudeSetpoint):
        kind, values = kern.ATTITUDE, (*setpoint.q_d, setpoint.thrust, *setpoint.body_rates, NAN, NAN, NAN)
    else:
        kind, values = kern.TRAJECTORY, (*setpoint.position, *setpoint.velocity, *setpoint.acceleration,
                                         setpoint.yaw, setpoint.yawspeed)
    if len(values) != kern.SP_SIZE:
        raise ValueError(f"{setpoint!r}: a quaternion of 4 and vectors of 3 expected")
    return kind, np.array(values, dtype=np.float64)


def read_limits(store: ParamStore) -> np.ndarray:
    """The MPC_*/MC_* parameters the loops use, in SI units, laid out as `control_kernels.L_*` says."""
    s, d2r = store, math.radians
    lim = np.empty(kern.L_SIZE)
    lim[kern.L_POS_P:kern.L_POS_P + 3] = (s["MPC_XY_P"], s["MPC_XY_P"], s["MPC_Z_P"])
    lim[kern.L_VEL_P:kern.L_VEL_P + 3] = (s["MPC_XY_VEL_P_ACC"], s["MPC_XY_VEL_P_ACC"], s["MPC_Z_VEL_P_ACC"])
    lim[kern.L_VEL_I:kern.L_VEL_I + 3] = (s["MPC_XY_VEL_I_ACC"], s["MPC_XY_VEL_I_ACC"], s["MPC_Z_VEL_I_ACC"])
    lim[kern.L_VEL_D:kern.L_VEL_D + 3] = (s["MPC_XY_VEL_D_ACC"], s["MPC_XY_VEL_D_ACC"], s["MPC_Z_VEL_D_ACC"])
    lim[kern.L_VEL_XY_MAX] = s["MPC_XY_VEL_MAX"]
    lim[kern.L_VEL_UP_MAX] = s["MPC_Z_VEL_MAX_UP"]
    lim[kern.L_VEL_DN_MAX] = s["MPC_Z_VEL_MAX_DN"]
    lim[kern.L_TILT_MAX] = d2r(s["MPC_TILTMAX_AIR"])  # in the air
    lim[kern.L_TILT_LANDED] = d2r(min(s["MPC_TILTMAX_LND"], s["MPC_TILTMAX_AIR"]))  # until the ramp is done
    lim[kern.L_THR_MIN] = s["MPC_THR_MIN"]
    lim[kern.L_THR_MAX] = s["MPC_THR_MAX"]
    lim[kern.L_THR_XY_MARGIN] = s["MPC_THR_XY_MARG"]
    lim[kern.L_VELD_CUTOFF] = s["MPC_VELD_LP"]  # Hz, low-pass on the velocity derivative
    lim[kern.L_ATT_P:kern.L_ATT_P + 3] = (s["MC_ROLL_P"], s["MC_PITCH_P"], s["MC_YAW_P"])
    lim[kern.L_YAW_WEIGHT] = min(max(s["MC_YAW_WEIGHT"], 0.0), 1.0)
    lim[kern.L_RATE_MAX:kern.L_RATE_MAX + 3] = (d2r(s["MC_ROLLRATE_MAX"]), d2r(s["MC_PITCHRATE_MAX"]),
                                                d2r(s["MC_YAWRATE_MAX"]))
    # Normalized torque per rad/s, its integral's limit, and the low-pass (Hz, 0: off).
    lim[kern.L_YAW_PID:kern.L_YAW_PID + 3] = (s["MC_YAWRATE_P"], s["MC_YAWRATE_I"], s["MC_YAWRATE_D"])
    lim[kern.L_YAW_INT_LIM] = s["MC_YR_INT_LIM"]
    lim[kern.L_YAW_TQ_CUTOFF] = s["MC_YAW_TQ_CUTOFF"]
    return lim


def _none_if_nan(value: float) -> float | None:
    return None if math.isnan(value) else value


class MulticopterController:
    """Position, velocity, attitude and rate control plus motor allocation for one vehicle.

    Call :meth:`update` once per physics step with the current setpoint (or let
    `px4.sim.inner_loop` run many steps). The last setpoints of each loop are kept for telemetry:
    ``attitude_sp`` (w, x, y, z), ``thrust_sp`` (normalized collective), ``rate_sp`` (body, rad/s),
    ``vel_sp`` and ``acc_sp`` (NED; NaN where the velocity loop is not in use). ``state``,
    ``constants`` and ``limits`` are the arrays the compiled loops work on.
    """

    # Rate loop: proportional gain times the motor time constant, and damping ratio.
    RATE_GAIN_TAU = 3.0
    RATE_DAMPING = 0.7
    # Rate integrator: zero at a tenth of the loop's natural frequency; limited to this fraction
    # of the axis' maximum angular acceleration.
    RATE_INT_LIMIT = 0.3

    def __init__(self, phys: PhysicalParams, params: ParamStore, ground_logic: bool = False):
        self.params = params
        self.state = np.zeros(kern.C_SIZE)
        self.constants = np.zeros(kern.K_SIZE)
        # The caller runs PX4's takeoff and land logic (px4.sim.takeoff), which resets the velocity
        # integrator while the vehicle has not taken off.
        self.ground_logic = ground_logic
        self._params_version = -1
        self.sync_params()
        self.configure(phys)
        self.reset()
        self._motors = np.zeros(4)

    # --- set-up -----------------------------------------------------------------------------

    def configure(self, phys: PhysicalParams) -> None:
        """Adopt new physical parameters (the model the controller is built on)."""
        self.phys = phys
        k = self.constants
        h = k[kern.K_HOVER] = phys.hover_thrust
        f_max = phys.rotor_thrust_max
        positions, spins = rotor_geometry(phys)
        roll_k = [-y for _, y in positions]
        pitch_k = [x for x, _ in positions]
        yaw_k = [s * phys.c_m / phys.c_t for s in spins]
        # Pseudo-inverse of the (symmetric) allocation: per-rotor normalized thrust per N m.
        for start, column in ((kern.K_MIX_ROLL, roll_k), (kern.K_MIX_PITCH, pitch_k), (kern.K_MIX_YAW, yaw_k)):
            k[start:start + 4] = [c / (f_max * sum(v * v for v in column)) for c in column]

        # Rate loop in angular-acceleration units: plant 1/(s (tau s + 1)), PD on the measurement
        # gives tau s^2 + (1 + Kd) s + Kp, i.e. wn = sqrt(Kp/tau), 2 zeta wn tau = 1 + Kd.
        tau = phys.motor_tau
        kp = k[kern.K_KP_RATE] = self.RATE_GAIN_TAU / tau
        wn = math.sqrt(kp / tau)
        k[kern.K_KD_RATE] = 2.0 * self.RATE_DAMPING * wn * tau - 1.0
        k[kern.K_KI_RATE] = 0.1 * wn * kp
        alpha = phys.alpha_max
        k[kern.K_RATE_INT_MAX:kern.K_RATE_INT_MAX + 3] = [self.RATE_INT_LIMIT * a for a in alpha]
        # Angular acceleration per unit of PX4's normalized yaw torque, with the MC_YAWRATE_K
        # scaling px4.sih.controller_params applies: the SIH default vehicle's for every profile.
        k[kern.K_YAW_ACCEL] = 2.0 * sih_default_capability().alpha_z_max
        # Torque margin around hover: the rotors can move by min(h, 1 - h) either way, which
        # is this fraction of the full-authority torque.
        authority = min(1.0, 2.0 * min(h, 1.0 - h))
        k[kern.K_BRAKE:kern.K_BRAKE + 3] = [0.5 * authority * a for a in alpha]
        k[kern.K_JX], k[kern.K_JY], k[kern.K_JZ], k[kern.K_KDW] = phys.ixx, phys.iyy, phys.izz, phys.kdw

    def reset(self) -> None:
        """Forget all loop state (integrators, held heading, last setpoints)."""
        c = self.state
        c[:] = 0.0
        for start in (kern.C_VEL_SP, kern.C_ACC_SP, kern.C_BODY_RATES, kern.C_CAPS):
            c[start:start + 3] = NAN
        c[kern.C_YAW_SP] = c[kern.C_TILT_LIMIT] = NAN
        c[kern.C_SINCE_POS] = c[kern.C_SINCE_ATT] = math.inf  # run the slow loops on the first call
        c[kern.C_MODE] = kern.NO_SETPOINT
        c[kern.C_ATT_SP] = 1.0
        c[kern.C_FLYING] = 1.0
        c[kern.C_GROUND_LOGIC] = float(self.ground_logic)
        self._flight_limits: tuple | None = None  # set_flight_limits' last arguments (None: overwritten since)

    def set_flight_limits(self, speed_xy: float | None = None, speed_up: float | None = None,
                          speed_down: float | None = None, flying: bool = True) -> None:
        """What PX4's position controller takes from the flight task and the takeoff state, each cycle.

        The velocity caps (None: MPC_XY_VEL_MAX, MPC_Z_VEL_MAX_UP, MPC_Z_VEL_MAX_DN); `speed_up` may
        be negative while the takeoff ramp starts (it then pushes down). Until `flying` (the ramp is
        over) there is no minimum thrust and the tilt is limited to MPC_TILTMAX_LND.
        """
        given = (speed_xy, speed_up, speed_down, flying)
        if given == self._flight_limits:
            return  # in the array already (the same every cycle of a flight; only `reset` writes them too)
        self._flight_limits = given
        c = self.state
        c[kern.C_CAPS] = NAN if speed_xy is None else speed_xy
        c[kern.C_CAPS + 1] = NAN if speed_up is None else speed_up
        c[kern.C_CAPS + 2] = NAN if speed_down is None else speed_down
        c[kern.C_FLYING] = float(flying)

    def reset_integral(self) -> None:
        """Forget the velocity integrator (PX4 does while the vehicle has not taken off)."""
        self.state[kern.C_VEL_INT:kern.C_VEL_INT + 3] = 0.0

    def sync_params(self) -> None:
        """Take up parameter changes; cheap enough to call before every run of the loops."""
        if self.params.version != self._params_version:
            self._params_version = self.params.version
            self.limits = read_limits(self.params)

    # --- what the loops last asked for ---------------------------------------------------------

    @property
    def hover_thrust(self) -> float:
        """Normalized collective that holds the vehicle's weight, from the model."""
        return self.constants.item(kern.K_HOVER)

    @property
    def flying(self) -> bool:
        """The takeoff ramp is over (minimum thrust and the full tilt apply)."""
        return bool(self.state[kern.C_FLYING])

    @property
    def attitude_sp(self) -> Quat:
        """The attitude setpoint (w, x, y, z)."""
        return tuple(self.state[kern.C_ATT_SP:kern.C_ATT_SP + 4].tolist())

    @property
    def thrust_sp(self) -> float:
        """The normalized collective thrust setpoint."""
        return self.state.item(kern.C_THRUST_SP)

    @property
    def rate_sp(self) -> Vec3:
        """The body-rate setpoint (rad/s)."""
        return tuple(self.state[kern.C_RATE_SP:kern.C_RATE_SP + 3].tolist())

    @property
    def vel_sp(self) -> Vec3:
        """The velocity setpoint (NED, m/s; NaN where the velocity loop is not in use)."""
        return tuple(self.state[kern.C_VEL_SP:kern.C_VEL_SP + 3].tolist())

    @property
    def acc_sp(self) -> Vec3:
        """The acceleration setpoint (NED, m/s^2)."""
        return tuple(self.state[kern.C_ACC_SP:kern.C_ACC_SP + 3].tolist())

    # --- entry points -------------------------------------------------------------------------

    def update(self, dyn: QuadrotorDynamics,
               setpoint: TrajectorySetpoint | AttitudeSetpoint | None, dt: float | None = None) -> list[float]:
        """Motor commands for the next physics step; ``None`` as setpoint means idle on the ground."""
        if setpoint is None:
            return self.idle()
        self.sync_params()
        kind, sp = setpoint_array(setpoint)
        kern.control_step(self.state, self.constants, self.limits, dyn.state, kind, sp,
                          dyn.dt if dt is None else dt, self._motors)
        return self._motors.tolist()

    def idle(self) -> list[float]:
        """Motor commands of an armed vehicle waiting on the ground."""
        return [IDLE_THRUST] * 4
