"""Takeoff and hover precision: the vehicle reaches its altitude and stays put."""

import math

import pytest

ALTITUDE = 5.0


@pytest.mark.hil
async def test_takeoff_and_hover_precision(hil_vehicle, hil_expect):
    start = hil_vehicle.state
    await hil_vehicle.arm()
    await hil_vehicle.takeoff(ALTITUDE)
    await hil_vehicle.sleep(3.0)  # let the climb settle, as a pilot would before judging a hover
    samples = await hil_vehicle.collect(10.0)
    # PX4 SITL's estimate wanders with its simulated GPS and barometer noise: about half a metre.
    hil_expect("hover_altitude_error_m", max(abs(s.altitude - ALTITUDE) for s in samples), le=0.6)
    hil_expect("hover_drift_m", max(math.hypot(s.north - start.north, s.east - start.east) for s in samples), le=1.0)
    await hil_vehicle.land()
    await hil_vehicle.wait_until(lambda s: not s.armed, 60.0, "landed")
