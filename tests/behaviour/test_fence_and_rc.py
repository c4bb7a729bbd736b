"""The flight controller's own geofence, and a pilot's joystick (MANUAL_CONTROL from a ground station)."""

from __future__ import annotations

import math
import time

import pytest
from pymavlink.dialects.v20 import common as mavlink

from px4.modes import FlightMode, decode_custom_mode

FENCE_M = 15.0


def _texts(vehicle) -> str:
    return "\n".join(text for _, text in vehicle._status_texts)


@pytest.mark.boot_params({"GF_MAX_HOR_DIST": FENCE_M, "GF_ACTION": 3})
async def test_a_reposition_outside_the_fence_is_not_flown(vehicle):
    await vehicle.arm()
    await vehicle.takeoff(5.0)
    start = vehicle.state
    await vehicle.goto(2 * FENCE_M, 0.0, -5.0)
    await vehicle.sleep(4.0)
    assert vehicle.state.flight_mode == "HOLD"
    assert math.hypot(vehicle.state.north - start.north, vehicle.state.east - start.east) < 1.5
    assert "Reposition is outside geofence" in _texts(vehicle)


@pytest.mark.boot_params({"GF_MAX_HOR_DIST": FENCE_M, "GF_ACTION": 3})
async def test_crossing_the_fence_holds_then_returns_home(vehicle):
    await vehicle.arm()
    await vehicle.takeoff(5.0)
    await vehicle.start_offboard()
    await vehicle.set_velocity_ned(3.0, 0.0, 0.0)
    await vehicle.wait_until(lambda s: s.flight_mode == "OFFBOARD" and s.vn > 1.0, 10.0, "offboard flight north")
    breach = await vehicle.wait_until(lambda s: s.flight_mode != "OFFBOARD", 30.0, "the fence to act")
    assert FENCE_M <= math.hypot(breach.north, breach.east) <= FENCE_M + 3.0
    # PX4 holds for COM_FAIL_ACT_T (5 s) before the fence's action, then returns.
    assert breach.flight_mode == "HOLD"
    await vehicle.wait_until(lambda s: s.flight_mode == "RETURN_TO_LAUNCH", 10.0, "return after the hold")
    assert "Geofence violation" in _texts(vehicle)
    home = await vehicle.wait_until(lambda s: not s.armed, 120.0, "return, land and disarm")
    assert math.hypot(home.north, home.east) < 1.5


def _watch_mode(gcs, mode: FlightMode, timeout: float) -> float | None:
    """Wall seconds until the heartbeat shows `mode`, None if it never does within `timeout`."""
    start = time.monotonic()
    hb = gcs.recv("HEARTBEAT", timeout, lambda m: decode_custom_mode(m.custom_mode) == mode)
    return None if hb is None else time.monotonic() - start


def _take_off(gcs, speed: float) -> None:
    gcs.wait_armable(30.0)
    assert gcs.command(mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 1) == mavlink.MAV_RESULT_ACCEPTED
    assert gcs.command(mavlink.MAV_CMD_NAV_TAKEOFF, 0, 0, 0, math.nan, math.nan, math.nan, math.nan) == \
        mavlink.MAV_RESULT_ACCEPTED
    assert gcs.wait_mode(FlightMode.TAKEOFF, 3.0)
    assert gcs.wait_mode(FlightMode.HOLD, 30.0 / speed + 3.0)


@pytest.mark.px4_smoke
async def test_moving_the_sticks_takes_over_from_an_auto_mode(autopilot, gcs):
    gcs.sticks = (0.0, 0.0, 0.5, 0.0)  # a joystick with its sticks centred: RC is there
    _take_off(gcs, autopilot.speed)
    gcs.sticks = (0.0, 0.6, 0.5, 0.0)
    # PX4 takes over within 0.25 s of vehicle time; the window is wide for a machine loaded beyond
    # the speed factor.
    took_over = _watch_mode(gcs, FlightMode.POSCTL, 5.0)
    assert took_over is not None and took_over * autopilot.speed < 4.0, "the pilot's sticks took over"
    assert any("Pilot took over using sticks" in text for text in gcs.texts), gcs.texts
    # Sticks back to centre and left there (moving them again would take over from Land too).
    gcs.sticks = (0.0, 0.0, 0.5, 0.0)
    gcs.recv("NONE", 1.0)
    assert gcs.set_mode(FlightMode.LAND) == mavlink.MAV_RESULT_ACCEPTED
    assert gcs.recv("HEARTBEAT", 60.0 / autopilot.speed + 5,
                    lambda m: not m.base_mode & mavlink.MAV_MODE_FLAG_SAFETY_ARMED) is not None


async def test_losing_the_joystick_in_the_air_holds_then_returns(autopilot, gcs):
    gcs.sticks = (0.0, 0.0, 0.5, 0.0)
    _take_off(gcs, autopilot.speed)
    gcs.sticks = None  # the joystick goes silent
    lost_at = time.monotonic()
    returned = _watch_mode(gcs, FlightMode.RTL, 30.0 / autopilot.speed)
    assert returned is not None, "RC loss (NAV_RCL_ACT 2) returns home"
    # COM_RC_LOSS_T (lengthened by the speed factor) and the COM_FAIL_ACT_T hold (5 s) come first.
    assert (time.monotonic() - lost_at) * autopilot.speed >= 5.0
    assert any("Failsafe activated" in text for text in gcs.texts), gcs.texts
