"""Fly a vehicle profile on PX4 SITL SIH so that its log shows the profile's three numbers.

The flight (through the harness's Vehicle API): take off, climb offboard to 12 m, hold; level at
hover thrust, then full collective thrust, long enough for the motors to settle and a few
ground-truth samples to follow; attitude steps about roll, pitch and yaw (EXCITE_PARAMS), each
phase followed by a position hold; land. PX4 logs SIH's ground truth and the allocator's motor outputs at every control
step (px4.sih_check's LOG_PARAMS); :func:`px4.sih_check.check_log` measures the profile from that
log. Durations are vehicle time (the harness divides by the speed factor).
"""

from __future__ import annotations

import math
from pathlib import Path

from bridges.mavsdk_vehicle import MavsdkVehicle, connect_started
from bridges.vehicle import VehicleError
from profiles.airframe import GRAVITY
from profiles.vehicle import VehicleProfile
from px4.sih import sitl_params
from px4.sih_check import LOG_PARAMS, SETTLE_TAUS, SihCheck, check_log
from px4.sitl import SitlOptions, px4_sitl

TAKEOFF_ALTITUDE = 8.0  # m
TAKEOFF_TIMEOUT_S = 40.0
AIRBORNE_ALTITUDE = 3.0  # m: a takeoff that got this far is good enough to go on from
ALTITUDE = 12.0  # m, room for the few metres a low-TWR vehicle sinks in the yaw steps
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
# Attitude steps of up to +-45 deg (yaw +-90 deg), each reversal a 90 deg (180 deg) swing, with
# PX4's attitude gains and rate limits at the top of their ranges for the maneuvers only
# (EXCITE_PARAMS): the rate error at a reversal then reaches ~25 rad/s, which drives the rotor
# differential of every Table I profile to 11 % or more of full (the rate gains stay the
# profile's, px4.sih).
# Attitude steps bound the rotation whatever the timing: rate setpoints would turn the vehicle
# over if the harness were late to reverse them on a loaded machine.
# MPC_THR_MAX just below 1 keeps the position controller (climb, holds) from ever commanding full
# collective, so the log's full-collective samples are those of the level climb step alone.
EXCITE_PARAMS = {"MC_ROLL_P": 12.0, "MC_PITCH_P": 12.0, "MC_YAW_P": 5.0,  # mc_att_control_params.c maxima
                 "MC_ROLLRATE_MAX": 1000.0, "MC_PITCHRATE_MAX": 1000.0, "MC_YAWRATE_MAX": 1000.0,  # deg/s, < 6 pi rad/s
                 "MPC_THR_MAX": 0.99}
TILT_STEP = math.radians(45.0)
# A vehicle with little thrust to spare tilts less, so that it still holds its altitude
# (TWR cos(tilt) >= TILT_THRUST_MARGIN, allowing for the attitude overshoot at saturated torque).
TILT_THRUST_MARGIN = 1.25
TILT_HOLD_S = 0.5
YAW_STEP = math.radians(90.0)
YAW_HOLD_S = 0.7
RECOVER_S = 1.0
SETTLE_S = 2.0
LANDED_TIMEOUT_S = 60.0


def climb_duration(profile: VehicleProfile) -> float:
    """Seconds of full collective thrust for this profile (see CLIMB_SPEED)."""
    accel = (profile.twr_max - 1.0) * GRAVITY
    settle = SETTLE_TAUS * profile.motor_tau + 0.1
    return min(max(CLIMB_SPEED / accel, CLIMB_MIN_S, settle), CLIMB_MAX_S)


async def fly_capability_maneuvers(vehicle: MavsdkVehicle, profile: VehicleProfile) -> None:
    """Excite climb, roll, pitch and yaw at or towards full command, then land and disarm."""
    await vehicle.wait_armable(60.0)
    await vehicle.arm()
    # PX4's takeoff first (an offboard climb from the ground ends in "Landing at current position"
    # on v1.14.0), then offboard up to the working altitude. v1.14.0 now and then ends its takeoff
    # short of MIS_TAKEOFF_ALT (6.3 m of 8 m seen) or off the harness's 0.15 m settling band; the
    # offboard climb takes over from any height in the air.
    try:
        await vehicle.takeoff(TAKEOFF_ALTITUDE, TAKEOFF_TIMEOUT_S)
    except VehicleError:
        if vehicle.state.altitude < AIRBORNE_ALTITUDE:
            raise
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

    async def hold() -> None:
        # Back to position control: regain the altitude an attitude phase may have cost.
        await vehicle.set_position_ned(north, east, -ALTITUDE, yaw)
        await vehicle.sleep(SETTLE_S)

    # The excitation settings for the maneuvers only: PX4's own takeoff and climb keep its defaults.
    async with vehicle.params_changed(EXCITE_PARAMS):
        # PX4 leaves position control for attitude setpoints only once commander has seen a few of
        # them (about 0.2 s): enter attitude control at hover thrust first, then step to full thrust.
        await level(MODE_SWITCH_S)
        await vehicle.set_attitude(0.0, 0.0, yaw, 1.0)
        await vehicle.sleep(climb_duration(profile))
        await level(RECOVER_S)
        await hold()
        tilt = min(TILT_STEP, math.acos(min(TILT_THRUST_MARGIN / profile.twr_max, 1.0)))
        tilted = min(hover / math.cos(tilt), 1.0)  # the collective that holds altitude when tilted
        await level(MODE_SWITCH_S)
        for roll, pitch in ((tilt, 0.0), (-tilt, 0.0), (0.0, 0.0), (0.0, tilt), (0.0, -tilt)):
            await vehicle.set_attitude(roll, pitch, yaw, tilted)
            await vehicle.sleep(TILT_HOLD_S)
        await level(RECOVER_S)
        await hold()
        # With MC_AIRMODE 0 the allocator lowers the collective to make room for a saturated yaw
        # torque: a low-TWR vehicle sinks by a few metres during these steps.
        await level(MODE_SWITCH_S)
        for turn in (YAW_STEP, -YAW_STEP, 0.0):
            await vehicle.set_attitude(0.0, 0.0, yaw + turn, hover)
            await vehicle.sleep(YAW_HOLD_S)
        await hold()
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
        vehicle = await connect_started(sitl.url, sitl, speed)
        try:
            await fly_capability_maneuvers(vehicle, profile)
        finally:
            await vehicle.close()
    logs = sorted((record_dir / "ulog").glob("*.ulg"))
    if not logs:
        raise FileNotFoundError(f"PX4 left no flight log in {record_dir / 'ulog'}")
    return check_log(logs[-1], profile)
