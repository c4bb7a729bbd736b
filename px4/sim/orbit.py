"""Orbit (MAV_CMD_DO_ORBIT) as PX4's multicopter flies it (FlightTaskOrbit).

PX4 v1.16.1 SIH, measured: DO_ORBIT with radius 5 m and 2 m/s, no centre and no altitude, is
ACCEPTED; the vehicle reports Position mode with the Orbit sub-mode (custom mode 0x01030000),
spirals out from where it was to a circle around that point at the same altitude, clockwise, nose
towards the centre, and goes round at ~1.4 m/s (a lap in ~23 s): its velocity loop has no drag
model, so it stays below the commanded speed on a circle.

PX4 first flies to the circle: a straight line from where the vehicle is to the nearest point of the
circle at the commanded altitude, at MPC_XY_CRUISE with the climb stretched over the same time, nose
along the line; measured on v1.16.1 (MAVSDK's do_orbit example, 10 m radius 45 m away, 7.5 m above):
4.3-4.5 m/s and 0.6-0.9 m/s up, on the circle at 10 m after ~12 s. The built-in flies that line as an
auto leg (`entry`), then circles.

The law on the circle, PX4's: the velocity setpoint is the tangent at the commanded speed plus the radial
error (so the vehicle converges onto the circle from inside or out), with the centripetal
acceleration v^2 / r as feed-forward; the altitude is held; the heading (MC_ORBIT_YAW_MOD or the
command's param3) turns at most MPC_YAWRAUTO_MAX.

Command parameters: param1 radius (m; negative: counter-clockwise; NaN: 1 m), param2 speed
(m/s; NaN: 1 m/s), param3 yaw behaviour (0 front to centre, 1 initial heading, 2 uncontrolled,
3 front tangent to the circle; NaN: MC_ORBIT_YAW_MOD), param5/6 centre (NaN: where the vehicle
is), param7 altitude (NaN: the current one). The speed is capped so that v^2 / r stays within
MPC_ACC_HOR, the radius within [1 m, MC_ORBIT_RAD_MAX].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from px4.sim.control import TrajectorySetpoint

NAN = math.nan
RADIUS_MIN = 1.0  # m
DEFAULT_SPEED = 1.0  # m/s

YAW_TO_CENTER, YAW_INITIAL, YAW_UNCONTROLLED, YAW_TANGENT = 0, 1, 2, 3


@dataclass
class Orbit:
    """One orbit: centre (N, E), signed speed (positive clockwise), radius, altitude (down) and heading rule."""

    center: tuple[float, float]
    radius: float
    speed: float
    down: float
    yaw_mode: int
    initial_yaw: float
    entry: tuple[float, float, float] | None = None  # where the approach line ends; None: not planned yet
    approaching: bool = True

    @classmethod
    def from_command(cls, radius: float, speed: float, yaw_mode: float, center: tuple[float, float],
                     down: float, yaw: float, radius_max: float, accel_max: float, default_yaw_mode: int) -> "Orbit":
        """The orbit a DO_ORBIT asks for, with PX4's defaults and limits (NaN: use the default)."""
        clockwise = not (math.isfinite(radius) and radius < 0.0)
        r = min(max(abs(radius) if math.isfinite(radius) else RADIUS_MIN, RADIUS_MIN), radius_max)
        v = abs(speed) if math.isfinite(speed) else DEFAULT_SPEED
        v = min(v, math.sqrt(accel_max * r))  # a tight circle matters more than speed
        mode = int(yaw_mode) if math.isfinite(yaw_mode) else default_yaw_mode
        return cls(center, r, v if clockwise else -v, down, mode, yaw)

    def entry_point(self, pos: tuple[float, float, float], yaw: float) -> tuple[float, float, float]:
        """The nearest point of the circle, at the orbit's altitude (from the centre: along the heading)."""
        dn, de = pos[0] - self.center[0], pos[1] - self.center[1]
        dist = math.hypot(dn, de)
        if dist < 1e-3:
            dn, de, dist = math.cos(yaw), math.sin(yaw), 1.0
        return (self.center[0] + dn / dist * self.radius, self.center[1] + de / dist * self.radius, self.down)

    def setpoint(self, pos: tuple[float, float, float], yaw_prev: float, yaw_rate_max: float, dt: float
                 ) -> TrajectorySetpoint:
        """This cycle's setpoint; `yaw_prev` is the last yaw setpoint (the heading turns gradually)."""
        dn, de = pos[0] - self.center[0], pos[1] - self.center[1]
        dist = math.hypot(dn, de)
        if dist < 1e-3:
            # On the centre: leave along the current heading (PX4's unit vector of zero is zero).
            dn, de, dist = math.cos(yaw_prev) * 1e-3, math.sin(yaw_prev) * 1e-3, 1e-3
        un, ue = dn / dist, de / dist
        v, r = self.speed, self.radius
        vn = -ue * v + (r - dist) * un
        ve = un * v + (r - dist) * ue
        centripetal = v * v / r
        yaw_sp, yawspeed = NAN, NAN
        if self.yaw_mode == YAW_INITIAL:
            yaw_sp = self.initial_yaw
        elif self.yaw_mode == YAW_TANGENT:
            yaw_sp, yawspeed = math.atan2(math.copysign(1.0, v) * un, -math.copysign(1.0, v) * ue), v / r
        elif self.yaw_mode != YAW_UNCONTROLLED:
            yaw_sp, yawspeed = math.atan2(-ue, -un), v / r
        if math.isfinite(yaw_sp):
            step = min(max(math.remainder(yaw_sp - yaw_prev, math.tau), -yaw_rate_max * dt), yaw_rate_max * dt)
            yaw_sp = math.remainder(yaw_prev + step, math.tau)
        return TrajectorySetpoint((NAN, NAN, self.down), (vn, ve, NAN), (-un * centripetal, -ue * centripetal, NAN),
                                  yaw_sp, yawspeed)
