"""The conformance suite's flights (tests/conformance/flight_cases.py, issue 35): MAVSDK's do_orbit,
offboard_velocity_ned, manual_control and follow_me examples and a burst of 1e30 offboard setpoints, each
on a fresh PX4 v1.16.1 SITL and a fresh built-in vehicle side by side at 4x. A case passes when the
built-in vehicle flies within PX4's measured spread, or differs only where the case names the measured
reason. One test a case, so that a PX4 stalled by a loaded machine reruns its own case only (conftest)."""

from __future__ import annotations

import pytest

from tests.conformance import flight_cases
from tests.conformance.suite import DOES_NOT_APPLY, Outcome, all_cases, run_case
from tests.px4_builds import MAIN_BUILD, needs_px4

FLIGHTS = [c for c in all_cases() if c.run in flight_cases.FLIGHT_RUNS]


@needs_px4
@pytest.mark.parametrize("case", FLIGHTS, ids=[c.run.__name__ for c in FLIGHTS])
async def test_the_built_in_vehicle_flies_the_example_as_px4_does(case):
    outcome = await run_case(case, MAIN_BUILD)
    assert outcome.verdict in ("same", "named"), "\n".join(outcome.lines())


def test_px4_flying_off_after_the_1e30_burst_is_named_and_the_built_in_vehicle_flying_off_is_not():
    [burst] = [c for c in FLIGHTS if c.run is flight_cases.offboard_1e30_burst]
    usual = {"drift during the burst under 2 m": True, "lowest altitude in the burst (m)": 0.25, "armed after": True,
             "back above 3 m 10 s after": True, "flew off after the burst": False,
             "distance from the start 10 s after (m)": 0.8, "disarmed by landing": False}
    # What the case returns on the autopilot that flew off (PX4's distance does not apply; the built-in's does).
    px4_off = {**usual, "flew off after the burst": True, "distance from the start 10 s after (m)": DOES_NOT_APPLY}
    builtin_off = {**usual, "flew off after the burst": True, "distance from the start 10 s after (m)": 92.4}
    assert Outcome(burst, px4=usual, builtin={**usual, "distance from the start 10 s after (m)": 0.2}).verdict == "same"
    assert Outcome(burst, px4=px4_off, builtin=usual).verdict == "named"
    assert Outcome(burst, px4=usual, builtin=builtin_off).verdict == "differs"
