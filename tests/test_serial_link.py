"""MAVLink over a serial line: the vehicle on one end of a real pseudo-terminal pair, MAVSDK on the other."""

from __future__ import annotations

from bridges.mavsdk_vehicle import connect
from bridges.ptypair import PtyPair
from targets.builtin import SimProcessOptions, builtin_vehicle

from .conftest import SPEED


async def test_mavsdk_flies_the_vehicle_over_a_pty_serial_pair():
    with PtyPair() as cable:
        options = SimProcessOptions(speed=SPEED, extra_links=[f"serial://{cable.a}:921600"])
        async with builtin_vehicle(options):
            vehicle = await connect(f"serial://{cable.b}:921600", timeout=10.0, speed_factor=SPEED)
            try:
                await vehicle.wait_armable(timeout=10.0)
                await vehicle.arm()
                await vehicle.takeoff(2.5)
                assert abs(vehicle.state.altitude - 2.5) < 0.8
                await vehicle.land()
                await vehicle.wait_until(lambda s: not s.armed, 40.0, "landing over serial")
            finally:
                await vehicle.close()
        assert cable.bytes_copied > 10_000, "the flight's MAVLink traffic went through the pty pair"
