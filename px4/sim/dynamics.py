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

Integration is semi-implicit Euler at ``dt`` (at most 2 ms). The step is written with plain floats
and locals because it runs hundreds of thousands of times per simulated minute: one numpy
operation on a 3-vector costs about as much as this whole step.
"""

from __future__ import annotations

import math
from typing import Sequence

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


def rotor_geometry(phys: PhysicalParams) -> tuple[tuple[tuple[float, float], ...], tuple[int, ...]]:
    """Rotor (x, y) positions in metres and spin directions (+1 CCW) for this vehicle."""
    unit_positions, spins = _GEOMETRY[phys.layout]
    ratio = phys.pitch_arm_ratio
    positions = tuple((x * phys.arm_length * ratio, y * phys.arm_length) for x, y in unit_positions)
    return positions, spins


class QuadrotorDynamics:
    """Six-degree-of-freedom quadrotor with four lagged rotors, drag and ground contact.

    State is kept in plain attributes so that readers pay nothing: ``t`` (s), ``pos`` and ``vel``
    (NED, m and m/s), ``q`` (w, x, y, z, body to world), ``omega`` (body rates, rad/s),
    ``rotor_speed`` (rad/s), ``specific_force`` (body, m/s^2: what an accelerometer reads) and
    ``on_ground``. ``wind_ned`` (m/s) and ``rotor_efficiency`` (thrust multiplier per rotor, for
    fault injection) may be changed at any time.
    """

    def __init__(self, phys: PhysicalParams, dt: float = MAX_DT):
        if not 0.0 < dt <= MAX_DT + 1e-12:
            raise ValueError(f"dt must be in (0, {MAX_DT}] s (physics at >= 500 Hz), got {dt}")
        self.dt = dt
        self.wind_ned = [0.0, 0.0, 0.0]
        self.rotor_efficiency = [1.0, 1.0, 1.0, 1.0]
        self.configure(phys)
        self.reset()

    def configure(self, phys: PhysicalParams) -> None:
        """Adopt new physical parameters (e.g. after SIH_* changes), keeping the current state."""
        self.phys = phys
        positions, spins = rotor_geometry(phys)
        # Torque per newton of each rotor's thrust: roll = -y * f, pitch = x * f, yaw = +-c_M/c_T * f.
        self._roll_k = tuple(-y for _, y in positions)
        self._pitch_k = tuple(x for x, _ in positions)
        torque_per_thrust = phys.c_m / phys.c_t
        self._yaw_k = tuple(s * torque_per_thrust for s in spins)
        # Exact discretisation of the first-order lag, so any tau is stable at any dt.
        self._lag = 1.0 - math.exp(-self.dt / phys.motor_tau)

    def reset(self, pos: Sequence[float] = (0.0, 0.0, 0.0), yaw: float = 0.0) -> None:
        """Place the vehicle at rest, level, heading ``yaw`` (rad), rotors stopped."""
        self.t = 0.0
        self.pos = [float(pos[0]), float(pos[1]), min(float(pos[2]), 0.0)]
        self.vel = [0.0, 0.0, 0.0]
        self.q = [math.cos(0.5 * yaw), 0.0, 0.0, math.sin(0.5 * yaw)]
        self.omega = [0.0, 0.0, 0.0]
        self.rotor_speed = [0.0, 0.0, 0.0, 0.0]
        self.specific_force = [0.0, 0.0, -GRAVITY]
        self.on_ground = self.pos[2] >= 0.0

    def step(self, u: Sequence[float]) -> None:
        """Advance one ``dt`` with normalized rotor thrust commands ``u`` (4 values, clipped to [0, 1])."""
        phys = self.phys
        dt = self.dt
        sqrt = math.sqrt
        w_max = phys.omega_max
        lag = self._lag
        rs = self.rotor_speed
        eff = self.rotor_efficiency
        ct = phys.c_t

        u0, u1, u2, u3 = u
        u0 = 0.0 if u0 < 0.0 else (1.0 if u0 > 1.0 else u0)
        u1 = 0.0 if u1 < 0.0 else (1.0 if u1 > 1.0 else u1)
        u2 = 0.0 if u2 < 0.0 else (1.0 if u2 > 1.0 else u2)
        u3 = 0.0 if u3 < 0.0 else (1.0 if u3 > 1.0 else u3)
        w0 = rs[0] + (w_max * sqrt(u0) - rs[0]) * lag
        w1 = rs[1] + (w_max * sqrt(u1) - rs[1]) * lag
        w2 = rs[2] + (w_max * sqrt(u2) - rs[2]) * lag
        w3 = rs[3] + (w_max * sqrt(u3) - rs[3]) * lag
        rs[0] = w0
        rs[1] = w1
        rs[2] = w2
        rs[3] = w3
        f0 = ct * eff[0] * w0 * w0
        f1 = ct * eff[1] * w1 * w1
        f2 = ct * eff[2] * w2 * w2
        f3 = ct * eff[3] * w3 * w3
        thrust = f0 + f1 + f2 + f3
        self.t += dt

        mass = phys.mass
        if self.on_ground:
            # Resting on level ground: nothing moves until the thrust lifts the weight.
            if thrust <= mass * GRAVITY:
                return
            self.on_ground = False

        k = self._roll_k
        tx = k[0] * f0 + k[1] * f1 + k[2] * f2 + k[3] * f3
        k = self._pitch_k
        ty = k[0] * f0 + k[1] * f1 + k[2] * f2 + k[3] * f3
        k = self._yaw_k
        tz = k[0] * f0 + k[1] * f1 + k[2] * f2 + k[3] * f3

        # Euler's equations, J w' = tau - w x (J w) - kdw w, with diagonal J.
        om = self.omega
        p, q, r = om
        jx, jy, jz, kdw = phys.ixx, phys.iyy, phys.izz, phys.kdw
        p_new = p + dt * (tx - kdw * p + (jy - jz) * q * r) / jx
        q_new = q + dt * (ty - kdw * q + (jz - jx) * r * p) / jy
        r_new = r + dt * (tz - kdw * r + (jx - jy) * p * q) / jz
        p, q, r = p_new, q_new, r_new
        om[0] = p
        om[1] = q
        om[2] = r

        # Attitude: q' = q (x) (0, w) / 2, renormalized.
        a = self.q
        qw, qx, qy, qz = a
        h = 0.5 * dt
        nw = qw - h * (qx * p + qy * q + qz * r)
        nx = qx + h * (qw * p + qy * r - qz * q)
        ny = qy + h * (qw * q - qx * r + qz * p)
        nz = qz + h * (qw * r + qx * q - qy * p)
        n = 1.0 / sqrt(nw * nw + nx * nx + ny * ny + nz * nz)
        qw = nw * n
        qx = nx * n
        qy = ny * n
        qz = nz * n
        a[0] = qw
        a[1] = qx
        a[2] = qy
        a[3] = qz

        # Body-to-world rotation; the thrust acts along body -z, i.e. minus the third column.
        r00 = 1.0 - 2.0 * (qy * qy + qz * qz)
        r01 = 2.0 * (qx * qy - qw * qz)
        r02 = 2.0 * (qx * qz + qw * qy)
        r10 = 2.0 * (qx * qy + qw * qz)
        r11 = 1.0 - 2.0 * (qx * qx + qz * qz)
        r12 = 2.0 * (qy * qz - qw * qx)
        r20 = 2.0 * (qx * qz - qw * qy)
        r21 = 2.0 * (qy * qz + qw * qx)
        r22 = 1.0 - 2.0 * (qx * qx + qy * qy)

        v = self.vel
        wind = self.wind_ned
        kdv = phys.kdv
        inv_m = 1.0 / mass
        dx = -kdv * (v[0] - wind[0]) * inv_m
        dy = -kdv * (v[1] - wind[1]) * inv_m
        dz = -kdv * (v[2] - wind[2]) * inv_m
        t_m = thrust * inv_m
        vx = v[0] + dt * (dx - t_m * r02)
        vy = v[1] + dt * (dy - t_m * r12)
        vz = v[2] + dt * (dz - t_m * r22 + GRAVITY)
        pos = self.pos
        px = pos[0] + dt * vx
        py = pos[1] + dt * vy
        pz = pos[2] + dt * vz

        sf = self.specific_force
        if pz >= 0.0:
            pz = 0.0
            if thrust * r22 <= mass * GRAVITY:
                # Touched down without the thrust to climb: settle level, static friction holds it.
                self._settle()
                pos[0] = px
                pos[1] = py
                pos[2] = 0.0
                return
            if vz > 0.0:
                vz = 0.0
        v[0] = vx
        v[1] = vy
        v[2] = vz
        pos[0] = px
        pos[1] = py
        pos[2] = pz
        # Accelerometer: all non-gravitational force per unit mass, in body axes.
        sf[0] = r00 * dx + r10 * dy + r20 * dz
        sf[1] = r01 * dx + r11 * dy + r21 * dz
        sf[2] = r02 * dx + r12 * dy + r22 * dz - t_m

    def _settle(self) -> None:
        yaw = self.yaw
        self.q[:] = [math.cos(0.5 * yaw), 0.0, 0.0, math.sin(0.5 * yaw)]
        self.vel[:] = [0.0, 0.0, 0.0]
        self.omega[:] = [0.0, 0.0, 0.0]
        self.specific_force[:] = [0.0, 0.0, -GRAVITY]
        self.on_ground = True

    @property
    def yaw(self) -> float:
        """Heading (rad, 0 = north, positive towards east)."""
        w, x, y, z = self.q
        return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))

    def euler(self) -> tuple[float, float, float]:
        """Roll, pitch, yaw (rad), PX4's ZYX convention."""
        w, x, y, z = self.q
        roll = math.atan2(2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y))
        pitch = math.asin(max(-1.0, min(1.0, 2.0 * (w * y - z * x))))
        return roll, pitch, self.yaw

    def tilt(self) -> float:
        """Angle between body z and the vertical (rad)."""
        w, x, y, z = self.q
        return math.acos(max(-1.0, min(1.0, 1.0 - 2.0 * (x * x + y * y))))
