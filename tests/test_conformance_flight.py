"""The conformance suite's flights (tests/conformance/flight_cases.py, issue 35): MAVSDK's do_orbit,
offboard_velocity_ned, manual_control and follow_me examples and a burst of 1e30 offboard setpoints, each
on a fresh PX4 v1.16.1 SITL and a fresh built-in vehicle side by side at 4x, two cases at a time. A case
passes when the built-in vehicle flies within PX4's measured spread, or differs only where the case names
the measured reason."""

from __future__ import annotations

from tests.conformance import flight_cases
from tests.conformance.suite import all_cases, run_cases
from tests.px4_builds import MAIN_BUILD, needs_px4

FLIGHTS = [c for c in all_cases() if c.run in flight_cases.FLIGHT_RUNS]


@needs_px4
async def test_the_built_in_vehicle_flies_the_examples_as_px4_does():
    outcomes = await run_cases(FLIGHTS, MAIN_BUILD, parallel=2)
    flown_otherwise = {o.case.name: o.lines() for o in outcomes if o.verdict not in ("same", "named")}
    assert not flown_otherwise, flown_otherwise
