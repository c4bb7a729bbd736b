"""Tolerance to link latency: offboard flight through FlightBench's randomized 25-50 ms link."""

import statistics

import pytest

CORNERS = [(6.0, 0.0), (6.0, 6.0), (0.0, 6.0), (0.0, 0.0)]


@pytest.mark.hil(targets=["sim", "lockstep", "px4-sitl"], link="flightbench_25_50ms")
async def test_offboard_square_through_a_25_to_50_ms_link(hil_vehicle, hil_link, hil_expect):
    await hil_vehicle.arm()
    await hil_vehicle.takeoff(4.0)
    await hil_vehicle.start_offboard(rate_hz=20.0)
    worst = 0.0
    for north, east in CORNERS:
        await hil_vehicle.set_position_ned(north, east, -4.0)
        async with hil_vehicle.deadline(30.0):
            async for s in hil_vehicle.telemetry():
                worst = max(worst, abs(s.altitude - 4.0))
                if s.distance_to(north, east, -4.0) < 0.5:
                    break
    await hil_vehicle.stop_offboard()
    hil_expect("altitude_excursion_m", worst, le=1.0)
    for direction in ("to_vehicle", "to_onboard"):
        delays = hil_link.applied_delays_ms(direction)
        assert len(delays) > 50
        # Judged by the median: a stall of the harness's event loop on a busy machine holds the few frames caught in
        # it for its whole length, times the speed factor (PX4 at 4x beside two CPU burners, ~130 frames: means of
        # 54.5 and 56.5 ms in two CI runs; at load 3.7 means of 40-41 ms with the median 2-3 ms over the delay drawn).
        # The mean is recorded beside it.
        hil_expect(f"link_{direction}_median_delay_ms", statistics.median(delays), ge=25.0, le=52.0)
        hil_expect(f"link_{direction}_mean_delay_ms", statistics.fmean(delays))
