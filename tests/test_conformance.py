"""The quick subset of the differential conformance suite (tests/conformance, issue 35): each quick case on a
fresh PX4 v1.16.1 SITL and a fresh built-in vehicle side by side. A case passes when the built-in vehicle
shows what PX4 shows, or differs only where the case names the measured reason. One test a case, so that a
PX4 stalled by a loaded machine reruns its own case only (conftest). `benchmarks/conformance.py` runs the
whole suite."""

from __future__ import annotations

import pytest

from tests.conformance.suite import all_cases, run_case
from tests.px4_builds import MAIN_BUILD, needs_px4

QUICK = [c for c in all_cases() if c.quick]


@needs_px4
@pytest.mark.parametrize("case", QUICK, ids=[f"{c.client}:{c.run.__name__}" for c in QUICK])
async def test_the_quick_case_shows_what_px4_shows(case):
    outcome = await run_case(case, MAIN_BUILD)
    assert outcome.verdict in ("same", "named"), f"{case.client} {case.name}: {outcome.verdict}\n" + \
        "\n".join(outcome.lines())
