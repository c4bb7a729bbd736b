"""Vehicle time over MAVLink follows the vehicle's own clock, not the wall clock times the speed factor."""

from __future__ import annotations

import time

from bridges.mavsdk_vehicle import connect
from hil.targets import SimProcessOptions, builtin_vehicle


async def test_a_simulator_that_falls_behind_its_speed_factor_stretches_vehicle_time_waits():
    # Asked for 300x, the built-in vehicle cannot keep up on this machine (it reports falling behind):
    # a wait of 3 vehicle seconds must still be 3 s on the vehicle's clock, not 10 ms of wall time.
    speed = 300.0
    async with builtin_vehicle(SimProcessOptions(speed=speed)) as sim:
        vehicle = await connect(sim.url, timeout=10.0, speed_factor=speed)
        try:
            await vehicle.wait_until(lambda s: s.t_ns > 0, 5.0, "telemetry")
            await vehicle.sleep(0.5)
            start_stamp, start_wall = vehicle._clock.vehicle_s, time.monotonic()
            await vehicle.sleep(3.0)
            waited_vehicle = vehicle._clock.vehicle_s - start_stamp
            waited_wall = time.monotonic() - start_wall
        finally:
            await vehicle.close()
    assert 2.9 <= waited_vehicle <= 3.5, f"{waited_vehicle:.2f} vehicle s"
    assert waited_wall > 1.5 * 3.0 / speed, "the simulator was behind, so the wait took longer than 3 s / 300"
