"""The conformance suite's flights (tests/conformance/flight_cases.py, issue 35): MAVSDK's do_orbit,
offboard_velocity_ned, manual_control and follow_me examples and a burst of 1e30 offboard setpoints, each
on a fresh PX4 v1.16.1 SITL and a fresh built-in vehicle side by side at 4x. A case passes when the
built-in vehicle flies within PX4's measured spread, or differs only where the case names the measured
reason. One test a case, so that a PX4 stalled by a loaded machine reruns its own case only (conftest)."""

from __future__ import annotations

import pytest

from tests.conformance import flight_cases
from tests.conformance.suite import all_cases, run_case
from tests.px4_builds import MAIN_BUILD, needs_px4

FLIGHTS = [c for c in all_cases() if c.run in flight_cases.FLIGHT_RUNS]


@needs_px4
@pytest.mark.parametrize("case", FLIGHTS, ids=[c.run.__name__ for c in FLIGHTS])
async def test_the_built_in_vehicle_flies_the_example_as_px4_does(case):
    outcome = await run_case(case, MAIN_BUILD)
    assert outcome.verdict in ("same", "named"), "\n".join(outcome.lines())
