"""The in-process lockstep vehicle: same Autopilot, simulated time, same Vehicle API as over MAVLink."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from bridges.lockstep_vehicle import LockstepVehicle, mission_items
from bridges.mavsdk_vehicle import connect
from bridges.vehicle import CommandDenied, MissionWaypoint
from missions.geo import GeoOrigin
from profiles.library import load_vehicle_profile
from px4.params import ParamStore
from px4.sim.autopilot import Autopilot
from records.clock import vehicle_time
from reports.trial_summary import summarize_trial
from targets.builtin import SimProcessOptions, builtin_vehicle

from .conftest import SPEED

SQUARE = [MissionWaypoint(10, 0, -5, acceptance_radius=1.0), MissionWaypoint(10, 10, -5, acceptance_radius=1.0),
          MissionWaypoint(0, 10, -5, acceptance_radius=1.0), MissionWaypoint(0, 0, -5, acceptance_radius=1.0)]
REFERENCE = [(0, 0, 0), (0, 0, -5), (10, 0, -5), (10, 10, -5), (0, 10, -5), (0, 0, -5)]


def lockstep(**params) -> LockstepVehicle:
    return LockstepVehicle(Autopilot(load_vehicle_profile("default"), ParamStore(overrides=params)))


async def fly_square(vehicle) -> pd.DataFrame:
    """Take off by mission, fly the square, land; the telemetry as a table."""
    rows = []

    async def record():
        async for state in vehicle.telemetry():
            rows.append(state.as_row())

    import asyncio
    recorder = asyncio.create_task(record())
    await vehicle.wait_armable(timeout=10.0)
    await vehicle.set_param("MIS_TAKEOFF_ALT", 5.0)
    await vehicle.upload_mission(SQUARE)
    await vehicle.arm()
    await vehicle.start_mission()
    async with vehicle.deadline(120.0):
        async for p in vehicle.mission_progress():
            if p.finished:
                break
    await vehicle.land()
    await vehicle.wait_until(lambda s: not s.armed, 60.0, "landed")
    recorder.cancel()
    return vehicle_time(pd.DataFrame(rows), vehicle.speed_factor)


async def test_lockstep_never_waits_on_the_wall_clock():
    """With the event loop's clock standing still, any wait on wall time (a sleep, a timeout, a pace)
    would never end: the square is flown anyway, so lockstep runs as fast as the CPU allows. How fast
    that is belongs to benchmarks/lockstep_rtf.py, not to a test on a busy machine."""
    import asyncio
    import threading

    loop = asyncio.get_running_loop()
    frozen = loop.time()
    loop.time = lambda: frozen
    # A lockstep that waited on wall time would spin forever: after a bound far beyond the flight's CPU
    # time the clock runs again, so such a failure ends as a failure instead of a hung suite.
    thawed = threading.Event()

    def thaw() -> None:
        thawed.set()
        del loop.time

    watchdog = threading.Timer(300.0, thaw)
    watchdog.start()
    try:
        async with lockstep() as vehicle:
            table = await fly_square(vehicle)
    finally:
        watchdog.cancel()
        if not thawed.is_set():
            del loop.time
    assert not thawed.is_set(), "lockstep waited on the wall clock"
    flown = (table["t_ns"].iloc[-1] - table["t_ns"].iloc[0]) / 1e9
    assert flown > 20.0, "the square takes tens of seconds of flight"


async def test_lockstep_deadline_and_sleep_are_in_simulated_time():
    async with lockstep() as vehicle:
        t0 = vehicle.ap.time_s
        await vehicle.sleep(2.5)
        assert vehicle.ap.time_s - t0 == pytest.approx(2.5, abs=0.05)
        with pytest.raises(TimeoutError):
            async with vehicle.deadline(1.0):
                await vehicle.sleep(10.0)
        assert vehicle.ap.time_s - t0 == pytest.approx(3.5, abs=0.05)


async def test_each_snapshot_hands_over_every_snapshot_until_the_consumer_is_done_and_raises_its_error():
    import asyncio

    async with lockstep() as vehicle:
        times: list[int] = []

        def until_100(state) -> bool:
            times.append(state.t_ns)
            return len(times) == 100

        await vehicle.each_snapshot(until_100)
        # Every snapshot, none twice and none skipped: one telemetry period (whole 2 ms steps) apart.
        gaps = {round(gap / 1e6) for gap in (b - a for a, b in zip(times, times[1:]))}
        assert len(times) == 100 and gaps <= {32, 34}, gaps
        assert not vehicle._observers, "a consumer that is done is no longer called"

        def broken(state) -> None:
            raise ValueError(f"no use for {state.t_ns}")

        with pytest.raises(ValueError, match="no use for"):
            await vehicle.each_snapshot(broken)
        # The publisher carried on: the vehicle still hands over snapshots, and a cancelled consumer leaves.
        seen: list[int] = []
        consumer = asyncio.create_task(vehicle.each_snapshot(lambda state: seen.append(state.t_ns)))
        await vehicle.sleep(1.0)
        consumer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await consumer
        assert 28 <= len(seen) <= 32 and not vehicle._observers


async def test_lockstep_refusals_carry_the_reason():
    async with lockstep(SIM_GPS_USED=0, COM_ARM_WO_GPS=0) as vehicle:
        await vehicle.sleep(1.0)
        with pytest.raises(CommandDenied) as refused:
            await vehicle.arm()
        assert "GPS" in refused.value.reason


def test_mission_items_follow_mavsdks_mapping():
    home = GeoOrigin(47.0, 8.0, 500.0)
    items, owner = mission_items([MissionWaypoint(10, 0, -5, speed=3.0), MissionWaypoint(0, 10, -6, hold_s=2.0)], home)
    commands = [i.command for i in items]
    assert commands == [16, 178, 16, 93]  # waypoint, change speed, waypoint, delay
    assert owner == [0, 0, 1, 1]
    assert items[0].param2 == 3.0 and items[0].param1 == 0.0  # fly-through: 3 m radius, no hold
    assert items[2].param2 == 1.0 and items[2].param1 == 0.5  # stop: 1 m radius, 0.5 s hold
    assert items[3].param1 == 2.0
    north, east, down = items[2].target_local(home, (0.0, 0.0, 0.0))
    assert (north, east, down) == pytest.approx((0.0, 10.0, -6.0), abs=0.01)


async def test_lockstep_and_mavlink_clocks_fly_the_same_mission_alike():
    """docs/design.md: both ways of running the built-in vehicle agree; the same mission, both clocks."""
    async with lockstep() as vehicle:
        fast = summarize_trial(await fly_square(vehicle), REFERENCE)
    async with builtin_vehicle(SimProcessOptions(speed=SPEED)) as sim:
        vehicle = await connect(sim.url, timeout=10.0, speed_factor=SPEED)
        try:
            real = summarize_trial(await fly_square(vehicle), REFERENCE)
        finally:
            await vehicle.close()
    assert real.path_length_m == pytest.approx(fast.path_length_m, rel=0.05)
    assert real.duration_s == pytest.approx(fast.duration_s, rel=0.10)
    assert real.max_tracking_error_m == pytest.approx(fast.max_tracking_error_m, abs=0.3)
    assert math.isclose(real.final_distance_to_goal_m, fast.final_distance_to_goal_m, abs_tol=0.3)


async def test_a_link_profile_runs_in_simulated_time_with_the_proxys_model():
    """Issue 5: a campaign in fast time sees the same latency as a real-time run through the proxy."""
    from profiles.link import load_link_profile

    link = load_link_profile("flightbench_25_50ms")
    async with LockstepVehicle(Autopilot(load_vehicle_profile("default")), link=link) as vehicle:
        await vehicle.wait_armable(5.0)
        await vehicle.arm()
        await vehicle.takeoff(4.0)
        await vehicle.start_offboard()
        await vehicle.set_position_ned(6.0, 0.0, -4.0)
        await vehicle.wait_until(lambda s: s.distance_to(6.0, 0.0, -4.0) < 0.5, 30.0, "target across the link")
        lag = vehicle.ap.position[0] - vehicle.state.north  # the harness sees where it was, not where it is
        rows = vehicle.link.rows
    for direction in ("to_vehicle", "to_onboard"):
        delays = [r["applied_ms"] for r in rows if r["direction"] == direction and r["fate"] != "dropped"]
        assert len(delays) > 40
        assert 25.0 <= min(delays) and max(delays) <= 50.0
        assert 33.0 < sum(delays) / len(delays) < 42.0  # uniform 25-50: mean 37.5
    assert lag != 0.0
