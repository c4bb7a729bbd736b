"""However `hil fly` is stopped, PX4 v1.16.1 SITL reached by its connection string (the hardware path) ends
safe: a signal at each phase, and kill -9 mid-mission (tests/stop_matrix.py; tests/test_stop.py stops the
built-in vehicle the same way, and pytest-xdist's `--dist loadfile` runs the two files side by side).

By default each phase is hit by one signal, the signals in a different turn from the built-in vehicle's, so
that between them 14 of the 21 pairs run; HIL_STOP_MATRIX=full runs all 21 here too. The connecting phase
here is a PX4 that answers: the signal arrives as soon as the record exists, while the harness is still
bringing up its link (or, on a quick machine, just after: then the checklist is what it interrupts).
"""

from __future__ import annotations

import pytest

from .px4_builds import MAIN_BUILD, NO_PX4
from .stop_matrix import (
    case_ids,
    cases,
    kill_mid_mission_then_fly_again,
    px4,
    stop_at_each_phase,
)

pytestmark = pytest.mark.skipif(MAIN_BUILD is None, reason=NO_PX4)
CASES = cases(first=1)


@pytest.mark.parametrize("phase, sig", CASES, ids=case_ids("px4-", CASES))
async def test_a_signal_at_any_phase_leaves_px4_landed_and_restored(tmp_path, phase, sig):
    await stop_at_each_phase(px4, phase, sig, tmp_path)


async def test_kill_9_mid_mission_px4_returns_by_itself_and_the_next_run_restores(tmp_path):
    await kill_mid_mission_then_fly_again(px4, tmp_path)
