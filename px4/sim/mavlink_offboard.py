"""Offboard setpoints (SET_POSITION_TARGET_LOCAL_NED / _GLOBAL_INT, SET_ATTITUDE_TARGET) with their
type masks, frames and PX4's rule that a stream must be arriving before offboard is entered, and the
target of Follow Target (FOLLOW_TARGET).
"""

from __future__ import annotations

import math

from pymavlink.dialects.v20 import common as mavlink

from px4.sim import inputs
from px4.sim.autopilot import Autopilot
from px4.sim.control import AttitudeSetpoint, TrajectorySetpoint
from px4.sim.mavlink_dispatch import handles
from px4.sim.mavlink_link import Link

# SET_POSITION_TARGET_* type_mask bits (set = ignore)
POS_IGNORE, VEL_IGNORE, ACC_IGNORE = 0x007, 0x038, 0x1C0
YAW_IGNORE, YAW_RATE_IGNORE = 0x400, 0x800
# SET_ATTITUDE_TARGET type_mask bits
ATT_RATES_IGNORE, ATT_THRUST_IGNORE, ATT_IGNORE = 0x07, 0x40, 0x80
MAX_TARGET_SPEED = 100.0  # m/s: a target faster than this is no person or car to follow
# A velocity or acceleration beyond this overflows PX4's float32 arithmetic (its square exceeds FLT_MAX).
OVERFLOW = 1.8e19
# m/s^2 down: an acceleration setpoint that the thrust limits clip to the minimum (up: the maximum).
CLIPPED_ACCELERATION = 100.0


def _beyond_float32(vel: tuple, acc: tuple) -> tuple[bool, bool]:
    """Whether the (horizontal, vertical) parts of a setpoint overflow PX4's float32 arithmetic."""
    big = [abs(v) > OVERFLOW and math.isfinite(v) for v in (*vel, *acc)]
    return big[0] or big[1] or big[3] or big[4], big[2] or big[5]


def overflowing_setpoint(vel: tuple, acc: tuple, yaw: float, yawspeed: float) -> TrajectorySetpoint | None:
    """The setpoint PX4 v1.16.1 flies for velocities or accelerations of 1e30 (measured: MAVSDK's
    set_velocity_ned and set_acceleration_ned, and one SET_POSITION_TARGET_LOCAL_NED with both, 5 s of
    them in Offboard at 5 m): it does not move horizontally, falls at minimum thrust (about 5 m/s down
    after 1 s) onto the ground, and its land detector says nothing while they last, so it stays armed
    and climbs again on the next valid setpoint. None: the setpoint is within float32's range."""
    horizontal, vertical = _beyond_float32(vel, acc)
    if not (horizontal or vertical):
        return None
    nan = math.nan
    vxy = (0.0, 0.0) if horizontal else (vel[0], vel[1])
    axy = (nan, nan) if horizontal else (acc[0], acc[1])
    vz, az = vel[2], acc[2]
    if vertical:
        # The overflowing part decides the thrust; no vertical speed is commanded, so no descent for
        # the land detector's ground contact either.
        big = acc[2] if abs(acc[2]) > OVERFLOW else vel[2]
        vz, az = nan, math.copysign(CLIPPED_ACCELERATION, big)
    return TrajectorySetpoint((nan, nan, nan), (*vxy, vz), (*axy, az), yaw, yawspeed)


class OffboardSetpoints:
    """Turns offboard setpoint messages into the autopilot's setpoints.

    A member of `MavlinkServer` (px4/sim/mavlink_server.py), as PX4's mavlink receiver publishes what it
    takes as setpoints: it is handed the autopilot and keeps no state (the autopilot keeps the stream's
    signal and its timeout).
    """

    def __init__(self, autopilot: Autopilot) -> None:
        self.ap = autopilot

    # ---- offboard
    @handles(mavlink.MAVLINK_MSG_ID_SET_POSITION_TARGET_LOCAL_NED)
    def _on_set_position_target_local_ned(self, link: Link, msg) -> None:
        mask = msg.type_mask
        pos = (math.nan, math.nan, math.nan) if mask & POS_IGNORE else (msg.x, msg.y, msg.z)
        vel = (math.nan, math.nan, math.nan) if mask & VEL_IGNORE else (msg.vx, msg.vy, msg.vz)
        acc = (math.nan, math.nan, math.nan) if mask & ACC_IGNORE else (msg.afx, msg.afy, msg.afz)
        yaw = math.nan if mask & YAW_IGNORE else msg.yaw
        yawspeed = math.nan if mask & YAW_RATE_IGNORE else msg.yaw_rate
        overflowing = overflowing_setpoint(vel, acc, yaw, yawspeed)
        if overflowing is not None:
            self.ap.offboard_setpoint(overflowing)
            return
        if msg.coordinate_frame in (mavlink.MAV_FRAME_BODY_NED, mavlink.MAV_FRAME_BODY_OFFSET_NED, mavlink.MAV_FRAME_BODY_FRD):
            # Body frames are yaw-rotated local frames for setpoints (PX4 ignores roll/pitch here).
            yaw_now = self.ap.dyn.yaw
            c, s = math.cos(yaw_now), math.sin(yaw_now)

            def rot(v):
                return (c * v[0] - s * v[1], s * v[0] + c * v[1], v[2])
            vel, acc = rot(vel), rot(acc)
            if not math.isnan(pos[0]):
                p0 = self.ap.position
                dp = rot(pos)
                pos = (p0[0] + dp[0], p0[1] + dp[1], p0[2] + dp[2])
        elif msg.coordinate_frame == mavlink.MAV_FRAME_LOCAL_OFFSET_NED and not math.isnan(pos[0]):
            p0 = self.ap.position
            pos = (p0[0] + pos[0], p0[1] + pos[1], p0[2] + pos[2])
        self.ap.offboard_setpoint(TrajectorySetpoint(pos, vel, acc, yaw, yawspeed))

    @handles(mavlink.MAVLINK_MSG_ID_SET_POSITION_TARGET_GLOBAL_INT)
    def _on_set_position_target_global_int(self, link: Link, msg) -> None:
        mask = msg.type_mask
        pos = (math.nan, math.nan, math.nan)
        if not mask & POS_IGNORE:
            lat, lon = inputs.latitude_longitude(msg.lat_int / 1e7, msg.lon_int / 1e7)
            if math.isnan(lat) or not inputs.usable(msg.alt, inputs.MAX_ABS_ALTITUDE_M):
                return  # no place on Earth: not a setpoint (and not a sign of life of the offboard stream)
            alt = msg.alt + (self.ap.origin.alt_m if msg.coordinate_frame in (
                mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT, mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT) else 0.0)
            pos = self.ap.origin.to_local(lat, lon, alt)
        vel = (math.nan, math.nan, math.nan) if mask & VEL_IGNORE else (msg.vx, msg.vy, msg.vz)
        acc = (math.nan, math.nan, math.nan) if mask & ACC_IGNORE else (msg.afx, msg.afy, msg.afz)
        yaw = math.nan if mask & YAW_IGNORE else msg.yaw
        yawspeed = math.nan if mask & YAW_RATE_IGNORE else msg.yaw_rate
        self.ap.offboard_setpoint(overflowing_setpoint(vel, acc, yaw, yawspeed)
                                  or TrajectorySetpoint(pos, vel, acc, yaw, yawspeed))

    @handles(mavlink.MAVLINK_MSG_ID_FOLLOW_TARGET)
    def _on_follow_target(self, link: Link, msg) -> None:
        # PX4 takes the position and velocity whatever est_capabilities says (MAVSDK's follow_me sets
        # only the position bit but sends the velocity too).
        lat, lon = inputs.latitude_longitude(msg.lat / 1e7, msg.lon / 1e7)
        if math.isnan(lat):
            return  # no place on Earth: nothing to follow
        alt = inputs.altitude(msg.alt)
        n, e, d = self.ap.origin.to_local(lat, lon, alt if math.isfinite(alt) else self.ap.origin.alt_m)
        vel = tuple(v if inputs.usable(v, MAX_TARGET_SPEED) else math.nan for v in msg.vel)
        self.ap.follow_target((n, e, d if math.isfinite(alt) else math.nan), vel)

    @handles(mavlink.MAVLINK_MSG_ID_SET_ATTITUDE_TARGET)
    def _on_set_attitude_target(self, link: Link, msg) -> None:
        mask = msg.type_mask
        q = None if mask & ATT_IGNORE else tuple(msg.q)
        rates = (math.nan, math.nan, math.nan) if (mask & ATT_RATES_IGNORE) == ATT_RATES_IGNORE else (
            msg.body_roll_rate, msg.body_pitch_rate, msg.body_yaw_rate)
        # Thrust ignored means "keep the current collective", as PX4 holds its last value.
        thrust = self.ap.ctrl.thrust_sp if mask & ATT_THRUST_IGNORE else msg.thrust
        if not inputs.all_finite(thrust, *(q or ())) or (q is not None and not 0.5 < math.hypot(*q) < 1.5):
            return  # a NaN thrust or quaternion is no attitude: ignored, not flown (it killed the vehicle)
        if q is None:
            q = tuple(self.ap.dyn.q)
        self.ap.offboard_setpoint(AttitudeSetpoint(q_d=q, thrust=thrust, body_rates=rates))
