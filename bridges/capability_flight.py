"""Fly a vehicle profile on PX4 SITL SIH so that its log shows the profile's three numbers.

The flight (all offboard, through the harness's Vehicle API): climb to 10 m, hold; level at hover
thrust, then full collective thrust, long enough for the motors to settle and a few ground-truth
samples to follow; body-rate doublets about roll, pitch and yaw, each followed by a level
recovery; land. PX4 logs SIH's ground truth and the allocator's motor outputs at every control
step (px4.sih_check's LOG_PARAMS); :func:`px4.sih_check.check_log` measures the profile from that
log. Durations are vehicle time (the harness divides by the speed factor).
"""

from __future__ import annotations

import math
from pathlib import Path

from bridges.mavsdk_vehicle import MavsdkVehicle, connect
from profiles.airframe import GRAVITY
from profiles.vehicle import VehicleProfile
from px4.sih import sitl_params
from px4.sih_check import LOG_PARAMS, SETTLE_TAUS, SihCheck, check_log
from px4.sitl import SitlOptions, px4_sitl

ALTITUDE = 10.0  # m
CLIMB_TIMEOUT_S = 30.0
HOLD_S = 1.0
# PX4 needs about 0.2 s to leave one offboard control level for another (commander has to see
# the new offboard_control_mode); five times that, for a loaded machine running PX4 below speed.
MODE_SWITCH_S = 1.0
# Full thrust until about 2.5 m/s of climb, within these bounds: long enough for the motors to
# settle and several 50 Hz ground-truth samples, short enough that drag stays a small correction.
CLIMB_SPEED = 2.5  # m/s
CLIMB_MIN_S = 0.4
CLIMB_MAX_S = 0.6
# Rate doublets (+r then -r): the rate error at the reversal is 2 r, which with PX4's rate gains
# scaled to the profile (px4.sih) drives the rotor differential towards saturation; each half
# turns the vehicle by at most r t (0.6 rad), and the doublet brings it back. 15 rad/s stays
# below SIH's 6 pi rad/s clamp.
TILT_RATE = 15.0  # rad/s
TILT_DOUBLET_S = 0.04
YAW_RATE = 8.0  # rad/s
YAW_DOUBLET_S = 0.15
RECOVER_S = 1.0
SETTLE_S = 2.0
LANDED_TIMEOUT_S = 60.0
CONNECT_TIMEOUT_S = 20.0


def climb_duration(profile: VehicleProfile) -> float:
    """Seconds of full collective thrust for this profile (see CLIMB_SPEED)."""
    accel = (profile.twr_max - 1.0) * GRAVITY
    settle = SETTLE_TAUS * profile.motor_tau + 0.1
    return min(max(CLIMB_SPEED / accel, CLIMB_MIN_S, settle), CLIMB_MAX_S)


async def fly_capability_maneuvers(vehicle: MavsdkVehicle, profile: VehicleProfile) -> None:
    """Excite climb, roll, pitch and yaw at or towards full command, then land and disarm."""
    await vehicle.wait_armable(60.0)
    await vehicle.arm()
    # Climb in offboard position control: the measurement needs height, not an exact altitude.
    await vehicle.start_offboard()
    state = vehicle.state
    north, east, yaw = state.north, state.east, state.yaw
    await vehicle.set_position_ned(north, east, -ALTITUDE, yaw)
    await vehicle.wait_until(lambda s: s.altitude > ALTITUDE - 1.0, CLIMB_TIMEOUT_S, f"climb to {ALTITUDE:g} m")
    await vehicle.sleep(HOLD_S)
    hover = 1.0 / profile.twr_max

    async def level(seconds: float) -> None:
        await vehicle.set_attitude(0.0, 0.0, yaw, hover)
        await vehicle.sleep(seconds)

    # PX4 leaves position control for attitude setpoints only once commander has seen a few of
    # them (about 0.2 s): enter attitude control at hover thrust first, then step to full thrust.
    await level(MODE_SWITCH_S)
    await vehicle.set_attitude(0.0, 0.0, yaw, 1.0)
    await vehicle.sleep(climb_duration(profile))
    await level(RECOVER_S)
    for rates, seconds in (((TILT_RATE, 0.0, 0.0), TILT_DOUBLET_S), ((0.0, TILT_RATE, 0.0), TILT_DOUBLET_S),
                           ((0.0, 0.0, YAW_RATE), YAW_DOUBLET_S)):
        # Rate control first (same switch delay as above), holding the level attitude.
        await vehicle.set_attitude_rate(0.0, 0.0, 0.0, hover)
        await vehicle.sleep(MODE_SWITCH_S)
        for sign in (1.0, -1.0):
            await vehicle.set_attitude_rate(*(sign * r for r in rates), hover)
            await vehicle.sleep(seconds)
        await vehicle.set_attitude_rate(0.0, 0.0, 0.0, hover)
        await level(RECOVER_S)
    await vehicle.set_position_ned(north, east, -ALTITUDE, yaw)
    await vehicle.sleep(SETTLE_S)
    # Land straight from offboard (commander accepts NAV_LAND in any mode); the setpoint stream
    # ends when the vehicle is closed.
    await vehicle.land()
    await vehicle.wait_until(lambda s: not s.armed, LANDED_TIMEOUT_S, "landed and disarmed")


async def measure_on_px4(profile: VehicleProfile, record_dir: Path, px4_dir: str | None = None,
                         speed: float = 4.0) -> SihCheck:
    """Fly ``profile`` on PX4 SITL SIH (its parameters from px4.sih.sitl_params) and measure it.

    PX4's console and ULog are kept in ``record_dir``. ValueError if SIH cannot reproduce the
    profile (px4.sih says why); MeasurementError if the log cannot answer.
    """
    params = {**sitl_params(profile), **LOG_PARAMS}
    options = SitlOptions(speed=speed, params=params, px4_dir=px4_dir)
    async with px4_sitl(options, keep_in=record_dir) as sitl:
        vehicle = await connect(sitl.url, CONNECT_TIMEOUT_S, speed)
        try:
            await fly_capability_maneuvers(vehicle, profile)
        finally:
            await vehicle.close()
    logs = sorted((record_dir / "ulog").glob("*.ulg"))
    if not logs:
        raise FileNotFoundError(f"PX4 left no flight log in {record_dir / 'ulog'}")
    return check_log(logs[-1], profile)
