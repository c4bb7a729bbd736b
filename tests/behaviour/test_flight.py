"""Flights through the harness's Vehicle API (MAVSDK 4 underneath): takeoff, hold, offboard position,
velocity and attitude, goto, return, land, missions, parameters, refusals and clean-up."""

from __future__ import annotations

import asyncio
import math
import statistics

import pytest

from bridges.mavsdk_vehicle import connect
from bridges.timeout import timeout
from bridges.vehicle import CommandDenied, MissionWaypoint, VehicleError


async def _land(vehicle, mode_after: str = "HOLD") -> None:
    await vehicle.land()
    landed = await vehicle.wait_until(lambda s: not s.armed, 90.0, "landing and auto-disarm")
    assert not landed.in_air and landed.landed_state == "ON_GROUND"
    await _back_in_the_users_mode(vehicle, mode_after)


async def _back_in_the_users_mode(vehicle, mode: str) -> None:
    # Disarmed, PX4 leaves Land and Return (it cannot arm in them) for the last mode the user chose
    # that it can arm in: Hold after a takeoff, a reposition or a finished mission (which ends in
    # Hold), Offboard after Offboard then Land.
    await vehicle.wait_until(lambda s: s.flight_mode == mode, 3.0, f"{mode} after the landing")
    if mode == "HOLD":
        await vehicle.wait_armable(timeout=10.0)  # the next flight arms without a mode change


@pytest.mark.px4_smoke
async def test_takeoff_holds_altitude_offboard_square_then_land(vehicle):
    await vehicle.arm()
    assert vehicle.state.armed
    takeoff_alt_before = await vehicle.get_param("MIS_TAKEOFF_ALT")
    await vehicle.takeoff(5.0)
    assert await vehicle.get_param("MIS_TAKEOFF_ALT") == takeoff_alt_before, "takeoff leaves no parameter changed"
    await vehicle.sleep(3.0)  # let the takeoff transient settle, as a pilot would
    hover = await vehicle.collect(5.0)
    alts = [s.altitude for s in hover]
    assert len(alts) > 20
    # PX4 SIH's altitude estimate wanders with its barometer and GPS: about half a metre.
    assert max(abs(a - 5.0) for a in alts) <= 0.6, f"hover altitude range {min(alts):.2f}..{max(alts):.2f} m"

    await vehicle.start_offboard(rate_hz=20.0)
    await vehicle.wait_until(lambda s: s.flight_mode == "OFFBOARD", 2.0, "offboard mode")
    for north, east in [(8.0, 0.0), (8.0, 8.0), (0.0, 8.0), (0.0, 0.0)]:
        await vehicle.set_position_ned(north, east, -5.0)
        reached = await vehicle.wait_until(lambda s: s.distance_to(north, east, -5.0) < 0.5, 30.0,
                                           f"corner {north},{east}")
        assert reached.distance_to(north, east, -5.0) < 0.5
    await vehicle.stop_offboard()
    await vehicle.wait_until(lambda s: s.flight_mode == "HOLD", 5.0, "hold after offboard")
    await _land(vehicle)


@pytest.mark.px4_smoke
async def test_four_waypoint_mission_reports_each_item_reached(vehicle):
    await vehicle.set_param("MIS_TAKEOFF_ALT", 5.0)
    waypoints = [MissionWaypoint(10, 0, -5, acceptance_radius=1.0), MissionWaypoint(10, 10, -5, acceptance_radius=1.0),
                 MissionWaypoint(0, 10, -5, acceptance_radius=1.0), MissionWaypoint(0, 0, -5, acceptance_radius=1.0)]
    await vehicle.upload_mission(waypoints)
    reached: list[int] = []
    raw: list[int] = []  # every MISSION_ITEM_REACHED as sent, repetitions included

    async def collect() -> None:
        async for seq in vehicle.mission_items_reached():
            reached.append(seq)

    async def collect_raw() -> None:
        async for fields in vehicle.messages("MISSION_ITEM_REACHED"):
            raw.append(int(fields["seq"]))

    collector = asyncio.create_task(collect())
    raw_collector = asyncio.create_task(collect_raw())
    await asyncio.sleep(0.2)  # the subscription must be in place before anything is reached
    await vehicle.arm()
    await vehicle.start_mission()
    progress = []
    async with vehicle.deadline(120.0):
        async for p in vehicle.mission_progress():
            progress.append(p)
            if p.finished:
                break
    await vehicle.sleep(2.6)
    collector.cancel()
    raw_collector.cancel()
    # Every waypoint, in order, reported by the autopilot's own MISSION_ITEM_REACHED (no other items here).
    assert reached == [0, 1, 2, 3]
    # The last one is sent again at 1 Hz (PX4's mission manager, up to 10 more times): a client that
    # missed the first (a lost datagram, a busy subscriber) still hears of it.
    assert 2 <= raw.count(3) <= 11, raw
    assert progress[-1].current == progress[-1].total == 4
    # The vehicle really went round: it ends near the last waypoint at mission altitude, in Hold.
    assert vehicle.state.distance_to(0, 0, -5) < 1.5
    await vehicle.wait_until(lambda s: s.flight_mode == "HOLD", 3.0, "Hold once the mission is finished")
    await _land(vehicle)


async def test_params_changed_restores_originals_even_after_an_error(vehicle):
    original = await vehicle.get_param("MPC_XY_CRUISE")
    original_int = await vehicle.get_param("COM_OBL_RC_ACT")
    with pytest.raises(RuntimeError, match="boom"):
        async with vehicle.params_changed({"MPC_XY_CRUISE": original + 2.5, "COM_OBL_RC_ACT": 4}) as before:
            assert before == {"MPC_XY_CRUISE": original, "COM_OBL_RC_ACT": original_int}
            assert await vehicle.get_param("MPC_XY_CRUISE") == pytest.approx(original + 2.5)
            assert await vehicle.get_param("COM_OBL_RC_ACT") == 4
            raise RuntimeError("boom")
    assert await vehicle.get_param("MPC_XY_CRUISE") == pytest.approx(original)
    assert await vehicle.get_param("COM_OBL_RC_ACT") == original_int


@pytest.mark.boot_params({"SENS_EN_GPSSIM": 0, "COM_ARM_WO_GPS": 0})
async def test_arming_refused_with_the_autopilots_reason_when_a_prearm_check_fails(autopilot):
    """No GPS (SIH's GPS simulator off) and arming without GPS forbidden: PX4 refuses and says why."""
    vehicle = await connect(autopilot.url, timeout=20.0, speed_factor=autopilot.speed)
    try:
        with pytest.raises(VehicleError, match="not armable"):
            await vehicle.wait_armable(timeout=8.0)
        with pytest.raises(CommandDenied) as refused:
            await vehicle.arm()
        assert "global position" in refused.value.reason.lower(), refused.value.reason
        await asyncio.sleep(0.3)
        assert not vehicle.state.armed
    finally:
        await vehicle.close()


async def test_offboard_setpoint_is_what_the_autopilot_flies(vehicle):
    """The autopilot's own setpoint echo equals what was streamed, and the vehicle settles on it."""
    await vehicle.arm()
    await vehicle.takeoff(3.0)
    await vehicle.start_offboard(rate_hz=50.0)
    await vehicle.set_position_ned(2.0, -1.0, -3.0)
    async with timeout(3.0):
        async for _, echoed in vehicle.setpoint_echo():
            if echoed == pytest.approx((2.0, -1.0, -3.0), abs=1e-4):
                break
    await vehicle.wait_until(lambda s: s.distance_to(2.0, -1.0, -3.0) < 0.5, 20.0, "offboard target")
    await vehicle.sleep(8.0)  # a 2 m position step overshoots and settles
    held = await vehicle.collect(4.0)
    assert all(s.flight_mode == "OFFBOARD" for s in held)
    # PX4 SIH's position estimate wanders with its GPS noise: holding is within a metre, not centimetres.
    errors = [s.distance_to(2.0, -1.0, -3.0) for s in held]
    # (PX4 v1.16.1 SIH measured: mean 0.1-0.68 m over runs, max up to 0.78 m.)
    assert statistics.mean(errors) < 0.9 and max(errors) < 1.2, f"mean {statistics.mean(errors):.2f}, max {max(errors):.2f} m"
    # Settled: PX4 SIH's velocity estimate carries its noise too (mean 0.2-0.41 m/s measured while holding
    # on a quiet machine, 0.62 once with the other core loaded).
    assert statistics.mean(s.speed for s in held) < 0.75
    assert math.isfinite(held[-1].lat) and math.isfinite(held[-1].alt_amsl)


@pytest.mark.px4_smoke
async def test_goto_then_return_to_launch(vehicle):
    await vehicle.arm()
    await vehicle.takeoff(4.0)
    await vehicle.goto(12.0, -6.0, -6.0)
    there = await vehicle.wait_until(lambda s: s.distance_to(12.0, -6.0, -6.0) < 0.5, 40.0, "goto target")
    assert there.flight_mode == "HOLD"
    await vehicle.return_to_launch()
    home = await vehicle.wait_until(lambda s: not s.armed, 120.0, "return, land and disarm at home")
    # PX4 SIH lands back within its GPS wander of home: v1.14.0 measured 1.50 and 1.63 m in two of
    # about ten CI runs (v1.16.1 and the built-in well inside 1 m).
    assert math.hypot(home.north, home.east) < 2.0 and home.landed_state == "ON_GROUND"
    await _back_in_the_users_mode(vehicle, "HOLD")


async def test_velocity_and_attitude_offboard_setpoints(vehicle):
    await vehicle.arm()
    await vehicle.takeoff(5.0)
    await vehicle.start_offboard(rate_hz=20.0)
    await vehicle.set_velocity_ned(2.0, 0.0, 0.0)
    moving = await vehicle.wait_until(lambda s: abs(s.vn - 2.0) < 0.2 and abs(s.ve) < 0.2, 15.0, "2 m/s north")
    # A velocity setpoint holds vertical speed, not altitude: PX4 drifts 0.6-1.5 m while it accelerates.
    assert abs(moving.altitude - 5.0) < 2.0
    # SET_ATTITUDE_TARGET: a 10 degree roll at hover thrust tilts the vehicle and it drifts east.
    hover = await vehicle.get_param("MPC_THR_HOVER")
    await vehicle.set_attitude(math.radians(10.0), 0.0, 0.0, hover)
    rolled = await vehicle.wait_until(lambda s: abs(math.degrees(s.roll) - 10.0) < 1.5, 5.0, "10 degree roll")
    assert rolled.flight_mode == "OFFBOARD"
    later = await vehicle.wait_until(lambda s: s.ve > 1.0, 8.0, "drift east under roll")
    assert later.east > rolled.east
    await vehicle.set_velocity_ned(0.0, 0.0, 0.0)
    await vehicle.wait_until(lambda s: s.speed < 0.3, 15.0, "stopped")
    await _land(vehicle, mode_after="OFFBOARD")


async def test_cancelled_flight_cleans_up_and_leaves_the_vehicle_landing(autopilot):
    """A mission task cancelled mid-offboard: close() stops streaming, tells it to land, ends every task."""
    before = {t for t in asyncio.all_tasks() if not t.done()}
    vehicle = await connect(autopilot.url, timeout=20.0, speed_factor=autopilot.speed)
    await vehicle.wait_armable(60.0)

    async def fly() -> None:
        await vehicle.arm()
        await vehicle.takeoff(4.0)
        await vehicle.start_offboard()
        await vehicle.set_position_ned(20.0, 0.0, -4.0)
        await vehicle.sleep(100.0)

    flight = asyncio.create_task(fly())
    await vehicle.wait_until(lambda s: s.flight_mode == "OFFBOARD" and s.vn > 0.5, 40.0, "offboard flight")
    flight.cancel()
    with pytest.raises(asyncio.CancelledError):
        await flight
    await vehicle.close()
    leftovers = {t for t in asyncio.all_tasks() if not t.done()} - before - {asyncio.current_task()}
    assert not leftovers, f"tasks left running: {leftovers}"

    # A second, independent client sees the vehicle landing and then disarmed, not flying on.
    observer = await connect(autopilot.url, timeout=20.0, speed_factor=autopilot.speed)
    try:
        state = await observer.wait_until(lambda s: s.flight_mode != "UNKNOWN", 5.0, "telemetry")
        assert state.flight_mode == "LAND"
        await observer.wait_until(lambda s: not s.armed, 90.0, "landed and disarmed")
    finally:
        await observer.close()
