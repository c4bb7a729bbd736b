"""Identity, modes, arming and takeoff as a ground station sees them (plain pymavlink on the GCS link)."""

from __future__ import annotations

import time

import pytest
from pymavlink.dialects.v20 import common as mavlink

from bridges.vehicle import VehicleError
from px4.modes import FlightMode, decode_custom_mode

ARMED = mavlink.MAV_MODE_FLAG_SAFETY_ARMED


@pytest.mark.px4_smoke
async def test_heartbeat_says_px4_quadrotor_in_hold(autopilot, gcs):
    hb = gcs.heartbeat
    assert hb.autopilot == mavlink.MAV_AUTOPILOT_PX4
    assert hb.type == mavlink.MAV_TYPE_QUADROTOR
    assert hb.base_mode & mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED
    assert gcs.target == (autopilot.system_id, 1)
    assert gcs.wait_mode(FlightMode.HOLD, 5.0)


async def test_any_mode_is_selectable_on_the_ground_but_arming_checks_it(gcs):
    # PX4 (v1.14 and v1.16) takes every mode while disarmed; its arming checks refuse a mode the vehicle
    # cannot fly: Position without RC, Offboard without a setpoint stream.
    gcs.wait_armable(30.0)
    for mode in (FlightMode.POSCTL, FlightMode.OFFBOARD):
        assert gcs.set_mode(mode) == mavlink.MAV_RESULT_ACCEPTED, mode
        assert gcs.wait_mode(mode, 2.0), mode
        assert gcs.command(mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 1) == mavlink.MAV_RESULT_TEMPORARILY_REJECTED, mode
        assert gcs.recv("HEARTBEAT", 1.0, lambda m: m.base_mode & ARMED) is None, f"armed in {mode}"
    assert gcs.set_mode(FlightMode.HOLD) == mavlink.MAV_RESULT_ACCEPTED


@pytest.mark.px4_smoke
async def test_arm_then_disarm_on_the_ground(gcs):
    gcs.wait_armable(30.0)
    assert gcs.command(mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 1) == mavlink.MAV_RESULT_ACCEPTED
    hb = gcs.recv("HEARTBEAT", 3.0, lambda m: m.base_mode & ARMED)
    assert hb is not None and hb.system_status == mavlink.MAV_STATE_ACTIVE
    assert gcs.command(mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 0) == mavlink.MAV_RESULT_ACCEPTED
    assert gcs.recv("HEARTBEAT", 3.0, lambda m: not m.base_mode & ARMED) is not None


async def test_an_armed_vehicle_left_on_the_ground_disarms_itself(autopilot, gcs):
    # COM_DISARM_PRFLT: 10 s by default; it disarms with a text saying why. Judged on the vehicle's clock
    # (ATTITUDE's time_boot_ms): a loaded machine slows the vehicle, not its timeout; the wall bound only ends
    # a test whose vehicle never disarms.
    gcs.wait_armable(30.0)
    assert gcs.command(mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 1) == mavlink.MAV_RESULT_ACCEPTED
    armed_ms = gcs.recv("ATTITUDE", 5.0).time_boot_ms
    latest_ms, disarmed_ms = armed_ms, None
    for msg in gcs.stream(60.0, {"ATTITUDE", "HEARTBEAT"}):
        if msg.get_type() == "ATTITUDE":
            latest_ms = msg.time_boot_ms
        elif not msg.base_mode & ARMED:
            disarmed_ms = latest_ms
            break
    assert disarmed_ms is not None, "still armed"
    assert 8.0 <= (disarmed_ms - armed_ms) / 1e3 <= 20.0, (armed_ms, disarmed_ms)
    assert any("disarm" in text.lower() for text in gcs.texts), gcs.texts


async def test_a_takeoff_after_the_vehicle_disarmed_itself_fails_at_once_saying_why(vehicle):
    # The harness sets MIS_TAKEOFF_ALT before arming (hil fly, campaigns) so that nothing outlasts
    # COM_DISARM_PRFLT between arming and the takeoff; where it is outlasted anyway, the takeoff says so at once
    # instead of waiting out its timeout, and sends nothing to a vehicle that is not armed.
    await vehicle.arm()
    await vehicle.wait_until(lambda s: not s.armed, 20.0, "the disarm COM_DISARM_PRFLT makes")
    with pytest.raises(VehicleError, match="disarmed on the ground, so no takeoff"):
        await vehicle.takeoff(5.0, timeout=60.0)
    await vehicle.sleep(1.0)
    assert not vehicle.state.armed and vehicle.state.flight_mode == "HOLD"  # not switched to its takeoff mode


async def test_takeoff_climbs_then_holds_and_land_disarms(autopilot, gcs):
    gcs.wait_armable(30.0)
    assert gcs.command(mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 1) == mavlink.MAV_RESULT_ACCEPTED
    assert gcs.command(mavlink.MAV_CMD_REQUEST_MESSAGE, mavlink.MAVLINK_MSG_ID_HOME_POSITION) == mavlink.MAV_RESULT_ACCEPTED
    home = gcs.recv("HOME_POSITION", 2.0)
    assert home is not None
    assert gcs.command(mavlink.MAV_CMD_NAV_TAKEOFF, 0, 0, 0, float("nan"), float("nan"), float("nan"),
                       home.altitude / 1000.0 + 5.0) == mavlink.MAV_RESULT_ACCEPTED
    assert gcs.wait_mode(FlightMode.TAKEOFF, 2.0)
    assert gcs.recv("EXTENDED_SYS_STATE", 5.0, lambda m: m.landed_state == mavlink.MAV_LANDED_STATE_TAKEOFF)
    assert gcs.wait_mode(FlightMode.HOLD, 30.0 / autopilot.speed + 3), "PX4 switches to Hold once at takeoff altitude"
    # Takeoff is done within NAV_MC_ALT_RAD (0.8 m) of the target; the vehicle then holds where it is.
    time.sleep(6.0 / autopilot.speed)
    settled = gcs.recv("LOCAL_POSITION_NED", 1.0)
    assert settled is not None and 4.0 <= -settled.z <= 5.2, f"settled at {-settled.z:.2f} m"
    assert gcs.recv("EXTENDED_SYS_STATE", 2.0, lambda m: m.landed_state == mavlink.MAV_LANDED_STATE_IN_AIR)

    assert gcs.set_mode(FlightMode.LAND) == mavlink.MAV_RESULT_ACCEPTED
    assert gcs.recv("EXTENDED_SYS_STATE", 5.0, lambda m: m.landed_state == mavlink.MAV_LANDED_STATE_LANDING)
    assert gcs.recv("HEARTBEAT", 60.0 / autopilot.speed + 5, lambda m: not m.base_mode & ARMED) is not None
    # Not the estimated altitude: PX4's drifts 0.3-1 m over a flight (SIH's barometer), on the ground too.
    assert gcs.recv("EXTENDED_SYS_STATE", 2.0, lambda m: m.landed_state == mavlink.MAV_LANDED_STATE_ON_GROUND)


async def test_a_mode_the_vehicle_cannot_fly_is_not_entered_in_the_air(autopilot, gcs):
    gcs.wait_armable(30.0)
    assert gcs.command(mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 1) == mavlink.MAV_RESULT_ACCEPTED
    assert gcs.command(mavlink.MAV_CMD_NAV_TAKEOFF, 0, 0, 0, float("nan"), float("nan"), float("nan"),
                       float("nan")) == mavlink.MAV_RESULT_ACCEPTED
    assert gcs.wait_mode(FlightMode.HOLD, 30.0 / autopilot.speed + 3) and gcs.recv(
        "HEARTBEAT", 1.0, lambda m: m.base_mode & ARMED and decode_custom_mode(m.custom_mode) == FlightMode.HOLD)
    # v1.16 acknowledges the request and stays where it is, saying why (v1.14 refused it outright).
    assert gcs.set_mode(FlightMode.POSCTL) == mavlink.MAV_RESULT_ACCEPTED
    assert not gcs.wait_mode(FlightMode.POSCTL, 2.0)
    assert any("Switching to Position is currently not available" in text for text in gcs.texts), gcs.texts
