"""Quadrotor rigid-body physics at a fixed step, FLYINGTRUST's rotor model (Eqs. 1-9).

Frames: world NED (down is +z, the ground is the plane down = 0), body FRD, attitude a unit
quaternion (w, x, y, z) rotating body vectors into the world. Rotors are numbered as PX4 numbers
them, so that a motor index means the same motor here, in PX4 and on a real vehicle:

* cross (PX4 quad-X): 1 front-right CCW, 2 rear-left CCW, 3 front-left CW, 4 rear-right CW;
* plus (PX4 quad-+):  1 right CCW, 2 left CCW, 3 front CW, 4 rear CW.

Each rotor makes thrust ``c_T w^2`` along body -z and reaction torque ``c_M w^2`` about body z
(positive, i.e. nose-right, for a counter-clockwise rotor). A command ``u`` in [0, 1] is the
fraction of full thrust, so the rotor speed it asks for is ``omega_max * sqrt(u)``; the rotor
approaches that speed with a first-order lag (``motor_tau``). Drag is linear in airspeed (velocity
relative to ``wind_ned``), angular damping is linear in body rates, as in PX4's SIH.

Integration is semi-implicit Euler at ``dt`` (at most 2 ms). The step runs hundreds of thousands of
times per simulated minute, so it is compiled with numba (`physics_step`) over one state array and
one model array, and `px4.sim.inner_loop` runs many steps of it with the controllers in one call.
"""

from __future__ import annotations

import math
from typing import Sequence

import numba
import numpy as np

from profiles.airframe import GRAVITY
from profiles.physical import PhysicalParams

MAX_DT = 0.002  # s; 500 Hz is the slowest rate at which the 30 ms motor lag is well resolved

# Rotor positions per metre of arm (x forward, y right) and spin (+1 counter-clockwise seen from
# above), in PX4's motor order.
_C45 = math.sqrt(2.0) / 2.0
_GEOMETRY = {
    "cross": (((_C45, _C45), (-_C45, -_C45), (_C45, -_C45), (-_C45, _C45)), (1, 1, -1, -1)),
    "plus": (((0.0, 1.0), (0.0, -1.0), (1.0, 0.0), (-1.0, 0.0)), (1, 1, -1, -1)),
}

# The state array: time (s), position and velocity (NED), attitude (w, x, y, z), body rates, rotor
# speeds (rad/s), specific force (body, m/s^2) and ground contact (1.0 or 0.0).
T, POS, VEL, Q, OMEGA, ROTOR, FORCE, GROUND, STATE_SIZE = 0, 1, 4, 7, 11, 14, 18, 21, 22
# The model array: step, rotor limits and lag, thrust coefficient, mass, inertia, damping, and the
# roll, pitch and yaw torque per newton of each rotor's thrust.
(M_DT, M_OMEGA_MAX, M_LAG, M_CT, M_MASS, M_JX, M_JY, M_JZ, M_KDW, M_KDV,
 M_ROLL, M_PITCH, M_YAW, MODEL_SIZE) = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 14, 18, 22


def rotor_geometry(phys: PhysicalParams) -> tuple[tuple[tuple[float, float], ...], tuple[int, ...]]:
    """Rotor (x, y) positions in metres and spin directions (+1 CCW) for this vehicle."""
    unit_positions, spins = _GEOMETRY[phys.layout]
    ratio = phys.pitch_arm_ratio
    positions = tuple((x * phys.arm_length * ratio, y * phys.arm_length) for x, y in unit_positions)
    return positions, spins


@numba.njit(cache=True)
def yaw_of(s: np.ndarray) -> float:
    """Heading (rad, 0 = north, positive towards east) of physics state `s`."""
    w, x, y, z = s[Q], s[Q + 1], s[Q + 2], s[Q + 3]
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def euler_of(w: float, x: float, y: float, z: float) -> tuple[float, float, float]:
    """Roll, pitch, yaw (rad), PX4's ZYX convention, of the unit quaternion (w, x, y, z): in Python, for callers
    holding the state's values already (a compiled call costs more than the arithmetic)."""
    roll = math.atan2(2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y))
    pitch = math.asin(max(-1.0, min(1.0, 2.0 * (w * y - z * x))))
    # yaw_of's formula.
    return roll, pitch, math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


@numba.njit(cache=True)
def rotation_matrix(qw: float, qx: float, qy: float, qz: float) -> tuple[float, ...]:
    """Body-to-world rotation of the unit quaternion (w, x, y, z), row by row (r00, r01, ..., r22)."""
    return (1.0 - 2.0 * (qy * qy + qz * qz), 2.0 * (qx * qy - qw * qz), 2.0 * (qx * qz + qw * qy),
            2.0 * (qx * qy + qw * qz), 1.0 - 2.0 * (qx * qx + qz * qz), 2.0 * (qy * qz - qw * qx),
            2.0 * (qx * qz - qw * qy), 2.0 * (qy * qz + qw * qx), 1.0 - 2.0 * (qx * qx + qy * qy))


@numba.njit(cache=True)
def physics_step(s: np.ndarray, m: np.ndarray, efficiency: np.ndarray, wind: np.ndarray,
                 u0: float, u1: float, u2: float, u3: float) -> None:
    """Advance state `s` one step of model `m` with rotor commands u0..u3 (clipped to [0, 1])."""
    dt = m[M_DT]
    w_max = m[M_OMEGA_MAX]
    lag = m[M_LAG]
    ct = m[M_CT]
    u0 = 0.0 if u0 < 0.0 else (1.0 if u0 > 1.0 else u0)
    u1 = 0.0 if u1 < 0.0 else (1.0 if u1 > 1.0 else u1)
    u2 = 0.0 if u2 < 0.0 else (1.0 if u2 > 1.0 else u2)
    u3 = 0.0 if u3 < 0.0 else (1.0 if u3 > 1.0 else u3)
    w0 = s[ROTOR] + (w_max * math.sqrt(u0) - s[ROTOR]) * lag
    w1 = s[ROTOR + 1] + (w_max * math.sqrt(u1) - s[ROTOR + 1]) * lag
    w2 = s[ROTOR + 2] + (w_max * math.sqrt(u2) - s[ROTOR + 2]) * lag
    w3 = s[ROTOR + 3] + (w_max * math.sqrt(u3) - s[ROTOR + 3]) * lag
    s[ROTOR] = w0
    s[ROTOR + 1] = w1
    s[ROTOR + 2] = w2
    s[ROTOR + 3] = w3
    f0 = ct * efficiency[0] * w0 * w0
    f1 = ct * efficiency[1] * w1 * w1
    f2 = ct * efficiency[2] * w2 * w2
    f3 = ct * efficiency[3] * w3 * w3
    thrust = f0 + f1 + f2 + f3
    s[T] += dt

    mass = m[M_MASS]
    if s[GROUND] != 0.0:
        # Resting on level ground: nothing moves until the thrust lifts the weight.
        if thrust <= mass * GRAVITY:
            return
        s[GROUND] = 0.0

    tx = m[M_ROLL] * f0 + m[M_ROLL + 1] * f1 + m[M_ROLL + 2] * f2 + m[M_ROLL + 3] * f3
    ty = m[M_PITCH] * f0 + m[M_PITCH + 1] * f1 + m[M_PITCH + 2] * f2 + m[M_PITCH + 3] * f3
    tz = m[M_YAW] * f0 + m[M_YAW + 1] * f1 + m[M_YAW + 2] * f2 + m[M_YAW + 3] * f3

    # Euler's equations, J w' = tau - w x (J w) - kdw w, with diagonal J.
    p = s[OMEGA]
    q = s[OMEGA + 1]
    r = s[OMEGA + 2]
    jx, jy, jz, kdw = m[M_JX], m[M_JY], m[M_JZ], m[M_KDW]
    p_new = p + dt * (tx - kdw * p + (jy - jz) * q * r) / jx
    q_new = q + dt * (ty - kdw * q + (jz - jx) * r * p) / jy
    r_new = r + dt * (tz - kdw * r + (jx - jy) * p * q) / jz
    p, q, r = p_new, q_new, r_new
    s[OMEGA] = p
    s[OMEGA + 1] = q
    s[OMEGA + 2] = r

    # Attitude: q' = q (x) (0, w) / 2, renormalized.
    qw, qx, qy, qz = s[Q], s[Q + 1], s[Q + 2], s[Q + 3]
    h = 0.5 * dt
    nw = qw - h * (qx * p + qy * q + qz * r)
    nx = qx + h * (qw * p + qy * r - qz * q)
    ny = qy + h * (qw * q - qx * r + qz * p)
    nz = qz + h * (qw * r + qx * q - qy * p)
    n = 1.0 / math.sqrt(nw * nw + nx * nx + ny * ny + nz * nz)
    qw = nw * n
    qx = nx * n
    qy = ny * n
    qz = nz * n
    s[Q] = qw
    s[Q + 1] = qx
    s[Q + 2] = qy
    s[Q + 3] = qz

    # The thrust acts along body -z, i.e. minus the rotation's third column.
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = rotation_matrix(qw, qx, qy, qz)

    kdv = m[M_KDV]
    inv_m = 1.0 / mass
    dx = -kdv * (s[VEL] - wind[0]) * inv_m
    dy = -kdv * (s[VEL + 1] - wind[1]) * inv_m
    dz = -kdv * (s[VEL + 2] - wind[2]) * inv_m
    t_m = thrust * inv_m
    vx = s[VEL] + dt * (dx - t_m * r02)
    vy = s[VEL + 1] + dt * (dy - t_m * r12)
    vz = s[VEL + 2] + dt * (dz - t_m * r22 + GRAVITY)
    px = s[POS] + dt * vx
    py = s[POS + 1] + dt * vy
    pz = s[POS + 2] + dt * vz

    if pz >= 0.0:
        pz = 0.0
        if thrust * r22 <= mass * GRAVITY:
            # Touched down without the thrust to climb: settle level, static friction holds it.
            yaw = yaw_of(s)  # s holds the attitude just integrated
            s[Q] = math.cos(0.5 * yaw)
            s[Q + 1] = 0.0
            s[Q + 2] = 0.0
            s[Q + 3] = math.sin(0.5 * yaw)
            for i in range(3):
                s[VEL + i] = 0.0
                s[OMEGA + i] = 0.0
                s[FORCE + i] = 0.0
            s[FORCE + 2] = -GRAVITY
            s[GROUND] = 1.0
            s[POS] = px
            s[POS + 1] = py
            s[POS + 2] = 0.0
            return
        if vz > 0.0:
            vz = 0.0
    s[VEL] = vx
    s[VEL + 1] = vy
    s[VEL + 2] = vz
    s[POS] = px
    s[POS + 1] = py
    s[POS + 2] = pz
    # Accelerometer: all non-gravitational force per unit mass, in body axes.
    s[FORCE] = r00 * dx + r10 * dy + r20 * dz
    s[FORCE + 1] = r01 * dx + r11 * dy + r21 * dz
    s[FORCE + 2] = r02 * dx + r12 * dy + r22 * dz - t_m


class QuadrotorDynamics:
    """Six-degree-of-freedom quadrotor with four lagged rotors, drag and ground contact.

    The state is read through attributes that return plain floats: ``t`` (s), ``pos`` and ``vel``
    (NED, m and m/s), ``q`` (w, x, y, z, body to world), ``omega`` (body rates, rad/s),
    ``rotor_speed`` (rad/s), ``specific_force`` (body, m/s^2: what an accelerometer reads) and
    ``on_ground``; the vectors are tuples, set whole (``dyn.vel = (3.0, 0.0, 0.0)``). ``wind_ned``
    (m/s) and ``rotor_efficiency`` (thrust multiplier per rotor, for fault injection) are arrays that
    may be changed in place at any time. ``state`` and ``model`` are the arrays the compiled step
    works on.
    """

    def __init__(self, phys: PhysicalParams, dt: float = MAX_DT):
        if not 0.0 < dt <= MAX_DT + 1e-12:
            raise ValueError(f"dt must be in (0, {MAX_DT}] s (physics at >= 500 Hz), got {dt}")
        self.dt = dt
        self.state = np.zeros(STATE_SIZE)
        self.model = np.zeros(MODEL_SIZE)
        self.wind_ned = np.zeros(3)
        self.rotor_efficiency = np.ones(4)
        self.configure(phys)
        self.reset()

    def configure(self, phys: PhysicalParams) -> None:
        """Adopt new physical parameters (e.g. after SIH_* changes), keeping the current state."""
        self.phys = phys
        positions, spins = rotor_geometry(phys)
        m = self.model
        m[M_DT] = self.dt
        m[M_OMEGA_MAX] = phys.omega_max
        # Exact discretisation of the first-order lag, so any tau is stable at any dt.
        m[M_LAG] = 1.0 - math.exp(-self.dt / phys.motor_tau)
        m[M_CT] = phys.c_t
        m[M_MASS] = phys.mass
        m[M_JX], m[M_JY], m[M_JZ] = phys.ixx, phys.iyy, phys.izz
        m[M_KDW], m[M_KDV] = phys.kdw, phys.kdv
        # Torque per newton of each rotor's thrust: roll = -y * f, pitch = x * f, yaw = +-c_M/c_T * f.
        torque_per_thrust = phys.c_m / phys.c_t
        for i, ((x, y), spin) in enumerate(zip(positions, spins)):
            m[M_ROLL + i] = -y
            m[M_PITCH + i] = x
            m[M_YAW + i] = spin * torque_per_thrust

    def reset(self, pos: Sequence[float] = (0.0, 0.0, 0.0), yaw: float = 0.0) -> None:
        """Place the vehicle at rest, level, heading ``yaw`` (rad), rotors stopped."""
        s = self.state
        s[:] = 0.0
        s[POS:POS + 3] = (float(pos[0]), float(pos[1]), min(float(pos[2]), 0.0))
        s[Q:Q + 4] = (math.cos(0.5 * yaw), 0.0, 0.0, math.sin(0.5 * yaw))
        s[FORCE + 2] = -GRAVITY
        s[GROUND] = s[POS + 2] >= 0.0

    def step(self, u: Sequence[float]) -> None:
        """Advance one ``dt`` with normalized rotor thrust commands ``u`` (4 values, clipped to [0, 1])."""
        u0, u1, u2, u3 = u
        physics_step(self.state, self.model, self.rotor_efficiency, self.wind_ned,
                     float(u0), float(u1), float(u2), float(u3))

    @property
    def t(self) -> float:
        """Simulated time (s) since the last reset."""
        return float(self.state[T])

    @property
    def on_ground(self) -> bool:
        """Resting on the ground (nothing moves until the thrust lifts the weight)."""
        return bool(self.state[GROUND])

    def _vector(self, start: int, size: int) -> tuple[float, ...]:
        return tuple(self.state[start:start + size].tolist())

    def _set(self, start: int, size: int, values: Sequence[float]) -> None:
        if len(values) != size:
            raise ValueError(f"expected {size} values, got {len(values)}")
        self.state[start:start + size] = values

    pos = property(lambda self: self._vector(POS, 3), lambda self, v: self._set(POS, 3, v),
                   doc="Position (NED, m).")
    vel = property(lambda self: self._vector(VEL, 3), lambda self, v: self._set(VEL, 3, v),
                   doc="Velocity (NED, m/s).")
    q = property(lambda self: self._vector(Q, 4), lambda self, v: self._set(Q, 4, v),
                 doc="Attitude quaternion (w, x, y, z), body to world.")
    omega = property(lambda self: self._vector(OMEGA, 3), lambda self, v: self._set(OMEGA, 3, v),
                     doc="Body rates (rad/s).")
    rotor_speed = property(lambda self: self._vector(ROTOR, 4), lambda self, v: self._set(ROTOR, 4, v),
                           doc="Rotor speeds (rad/s), in PX4's motor order.")
    specific_force = property(lambda self: self._vector(FORCE, 3), doc="What an accelerometer reads (body, m/s^2).")

    @property
    def yaw(self) -> float:
        """Heading (rad, 0 = north, positive towards east)."""
        return yaw_of(self.state)

    def euler(self) -> tuple[float, float, float]:
        """Roll, pitch, yaw (rad), PX4's ZYX convention."""
        return euler_of(*self.q)

    def tilt(self) -> float:
        """Angle between body z and the vertical (rad)."""
        w, x, y, z = self.q
        return math.acos(max(-1.0, min(1.0, 1.0 - 2.0 * (x * x + y * y))))
