"""Offboard-loss failsafe: when the companion goes silent the autopilot takes over by itself."""

import pytest

from records.clock import vehicle_seconds


@pytest.mark.hil(targets=["sim", "px4-sitl", "hardware"])
async def test_offboard_loss_triggers_the_failsafe(hil_vehicle, hil_expect):
    await hil_vehicle.arm()
    await hil_vehicle.takeoff(4.0)
    await hil_vehicle.start_offboard(rate_hz=20.0)
    await hil_vehicle.set_position_ned(3.0, 0.0, -4.0)
    await hil_vehicle.wait_until(lambda s: s.distance_to(3.0, 0.0, -4.0) < 0.5, 20.0, "offboard target")
    timeout = await hil_vehicle.get_param("COM_OF_LOSS_T")
    silent_at = hil_vehicle.state.t_ns
    await hil_vehicle.release()  # the companion computer stops sending: no mode change, nothing
    failsafe = await hil_vehicle.wait_until(lambda s: s.flight_mode != "OFFBOARD", timeout + 5.0, "failsafe")
    reaction_s = vehicle_seconds(failsafe.t_ns - silent_at, hil_vehicle.speed_factor)
    # Without RC PX4 lands where it is; its heartbeat shows the Position fallback (COM_OBL_RC_ACT 0) meanwhile.
    assert failsafe.flight_mode in ("RETURN_TO_LAUNCH", "LAND", "HOLD", "POSCTL"), failsafe.flight_mode
    hil_expect("failsafe_reaction_s", reaction_s, le=timeout + 1.0)
    await hil_vehicle.wait_until(lambda s: not s.armed, 120.0, "the failsafe brings it down")
