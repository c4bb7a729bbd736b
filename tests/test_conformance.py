"""The quick subset of the differential conformance suite (tests/conformance, issue 35): each quick case on a
fresh PX4 v1.16.1 SITL and a fresh built-in vehicle side by side, two cases at a time. A case passes when
the built-in vehicle shows what PX4 shows, or differs only where the case names the measured reason.
`benchmarks/conformance.py` runs the whole suite."""

from __future__ import annotations

from tests.conformance.suite import all_cases, run_cases
from tests.px4_builds import MAIN_BUILD, needs_px4

QUICK = [c for c in all_cases() if c.quick]


@needs_px4
async def test_the_quick_cases_show_what_px4_shows():
    outcomes = await run_cases(QUICK, MAIN_BUILD, parallel=2)
    unexplained = [f"{o.case.client} {o.case.name}: {o.verdict}\n" + "\n".join(o.lines())
                   for o in outcomes if o.verdict not in ("same", "named")]
    assert not unexplained, "\n".join(unexplained)

