"""A pilot's sticks: RC input as PX4 gets it from MANUAL_CONTROL, and Position mode flown from it.

The built-in vehicle has no radio, but a ground station joystick (QGroundControl) or a test client
sends MANUAL_CONTROL, which PX4 treats as its RC input. With it present the vehicle accepts
Position mode, lets a pilot take over from auto and offboard modes by moving the sticks (PX4's
COM_RC_OVERRIDE / COM_RC_STICK_OV), and falls back to Return when the sticks go silent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

NAN = float("nan")
# Stick travel that counts as "centred" (PX4's manual deadzone is of this order).
DEADBAND = 0.1


@dataclass(frozen=True)
class Sticks:
    """Normalized stick positions: pitch forward +1, roll right +1, throttle 0..1 (0.5 holds), yaw right +1."""

    pitch: float
    roll: float
    throttle: float
    yaw: float
    time_s: float

    def deflection(self) -> float:
        """The largest deflection from centre of any stick, 0..1."""
        return max(abs(self.pitch), abs(self.roll), abs(self.yaw), abs(self.throttle - 0.5) * 2.0)


def ground_slowdown(vd: float, height: float, p) -> float:
    """A stick's vertical speed (down positive) limited near the ground, as PX4's manual altitude task
    does (FlightTaskManualAltitude::_respectGroundSlowdown, with SIH's distance sensor): climbs at most
    MPC_TKO_SPEED and descends at most MPC_LAND_SPEED below MPC_LAND_ALT2, the full speeds above
    MPC_LAND_ALT1, interpolated between. Measured on PX4 v1.16.1: Position mode from the ground, full
    throttle for 3 s, is 2.0 m up 4 s later."""
    low, high = p["MPC_LAND_ALT2"], p["MPC_LAND_ALT1"]
    share = 0.0 if height <= low else 1.0 if height >= high or high <= low else (height - low) / (high - low)
    up = p["MPC_TKO_SPEED"] + share * (p["MPC_Z_VEL_MAX_UP"] - p["MPC_TKO_SPEED"])
    down = p["MPC_LAND_SPEED"] + share * (p["MPC_Z_VEL_MAX_DN"] - p["MPC_LAND_SPEED"])
    return min(max(vd, -up), down)


def _deadband(value: float) -> float:
    if abs(value) <= DEADBAND:
        return 0.0
    return math.copysign((abs(value) - DEADBAND) / (1.0 - DEADBAND), value)


class ManualControl:
    """The latest sticks and whether RC counts as present."""

    def __init__(self) -> None:
        self.sticks: Sticks | None = None

    def update(self, pitch: float, roll: float, throttle: float, yaw: float, time_s: float) -> None:
        clamp = lambda v, lo, hi: max(lo, min(hi, v))  # noqa: E731
        self.sticks = Sticks(clamp(pitch, -1, 1), clamp(roll, -1, 1), clamp(throttle, 0, 1), clamp(yaw, -1, 1), time_s)

    def available(self, now_s: float, loss_timeout_s: float) -> bool:
        """RC is present while MANUAL_CONTROL keeps arriving."""
        return self.sticks is not None and now_s - self.sticks.time_s <= loss_timeout_s

    def horizontal_centred(self) -> bool:
        """Roll and pitch sticks centred: Position mode brakes and holds the position."""
        s = self.sticks
        return s is None or (abs(s.pitch) <= DEADBAND and abs(s.roll) <= DEADBAND)

    def velocity_setpoint(self, heading: float, max_xy: float, max_up: float, max_down: float
                          ) -> tuple[float, float, float, float]:
        """Position mode: (vn, ve, vd, yaw-rate fraction) commanded by the sticks, body axes turned by heading."""
        s = self.sticks
        fwd, right = _deadband(s.pitch) * max_xy, _deadband(s.roll) * max_xy
        c, si = math.cos(heading), math.sin(heading)
        climb = _deadband((s.throttle - 0.5) * 2.0)
        vd = -climb * (max_up if climb > 0 else max_down)
        return c * fwd - si * right, si * fwd + c * right, vd, _deadband(s.yaw)
