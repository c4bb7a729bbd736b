"""Smooth position setpoints for auto modes, the role PX4's trajectory generator plays.

Auto modes (takeoff, land, hold, goto, mission, return) ask for "be at P"; jumping the position
setpoint there would saturate the controller and overshoot, so a moving setpoint travels to P
with capped speed and acceleration and brakes in time, and the controller follows it with a
velocity feed-forward. Horizontal and vertical motion are limited separately, as PX4's are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class MotionLimits:
    """Speed and acceleration caps for one leg of auto flight."""

    speed_xy: float
    speed_up: float
    speed_down: float
    acc_xy: float
    acc_z: float


class SetpointGenerator:
    """A point that moves towards a target under speed/acceleration caps (NED)."""

    # How far the setpoint may run ahead of a vehicle that cannot keep up (a weak profile, wind,
    # rotors still spooling up on the ground) before it slows down and waits: an unbounded lead
    # would turn into a large position step and an overshoot.
    LEASH_M = 0.5

    def __init__(self) -> None:
        self.pos = [0.0, 0.0, 0.0]
        self.vel = [0.0, 0.0, 0.0]
        # The acceleration of the last update, fed forward so the controller does not lag the setpoint.
        self.acc = [0.0, 0.0, 0.0]

    def reset(self, pos: tuple[float, float, float] | list[float], vel=(0.0, 0.0, 0.0)) -> None:
        """Start from the vehicle's current position and velocity (no step in the setpoint)."""
        self.pos = [float(pos[0]), float(pos[1]), float(pos[2])]
        self.vel = [float(vel[0]), float(vel[1]), float(vel[2])]
        self.acc = [0.0, 0.0, 0.0]

    def update(self, target: tuple[float, float, float], lim: MotionLimits, dt: float,
               vehicle_pos: list[float] | None = None) -> None:
        """Advance the setpoint by dt towards target."""
        dn, de = target[0] - self.pos[0], target[1] - self.pos[1]
        dist_xy = math.hypot(dn, de)
        leash = 1.0
        if vehicle_pos is not None:
            lag = math.dist(vehicle_pos, self.pos)
            if lag > self.LEASH_M:
                leash = max(0.0, 1.0 - (lag - self.LEASH_M) / (2.0 * self.LEASH_M))
        # Desired horizontal velocity: cruise, reduced so that the setpoint can stop at the target.
        speed = min(lim.speed_xy, math.sqrt(2.0 * lim.acc_xy * dist_xy)) * leash
        if dist_xy > 1e-6:
            want_n, want_e = dn / dist_xy * speed, de / dist_xy * speed
        else:
            want_n = want_e = 0.0
        dvn, dve = want_n - self.vel[0], want_e - self.vel[1]
        dv = math.hypot(dvn, dve)
        max_dv = lim.acc_xy * dt
        if dv > max_dv:
            dvn, dve = dvn / dv * max_dv, dve / dv * max_dv
        self.vel[0] += dvn
        self.vel[1] += dve
        self.acc[0], self.acc[1] = dvn / dt, dve / dt
        step_n, step_e = self.vel[0] * dt, self.vel[1] * dt
        # Never overshoot the target through discretisation.
        if math.hypot(step_n, step_e) >= dist_xy:
            self.pos[0], self.pos[1] = target[0], target[1]
            if speed < lim.acc_xy * dt * 2:
                self.vel[0] = self.vel[1] = 0.0
                self.acc[0] = self.acc[1] = 0.0
        else:
            self.pos[0] += step_n
            self.pos[1] += step_e

        dz = target[2] - self.pos[2]
        vmax = lim.speed_down if dz > 0 else lim.speed_up
        want_z = math.copysign(min(vmax, math.sqrt(2.0 * lim.acc_z * abs(dz))), dz) * leash
        dvz = max(-lim.acc_z * dt, min(lim.acc_z * dt, want_z - self.vel[2]))
        self.vel[2] += dvz
        self.acc[2] = dvz / dt
        step_z = self.vel[2] * dt
        if abs(step_z) >= abs(dz):
            self.pos[2] = target[2]
            if abs(want_z) < lim.acc_z * dt * 2:
                self.vel[2] = 0.0
                self.acc[2] = 0.0
        else:
            self.pos[2] += step_z
