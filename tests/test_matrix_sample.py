"""The FLYINGTRUST matrix flies the same trials to the same verdicts as the code that wrote tests/matrix_sample.json
(tests/matrix_sample.py): a change made for speed must not change a flight. A change meant to alter flights (a
planner, the autopilot, a scene) rewrites the fixture with `python tests/matrix_sample.py` and says why."""

from __future__ import annotations

import json

import pytest

from tests.matrix_sample import FIGURES, FIXTURE, fly_sample


@pytest.mark.slow  # thirteen lockstep trials: some 20 CPU seconds
def test_the_sample_flies_as_recorded():
    recorded = json.loads(FIXTURE.read_text())
    flown = fly_sample()
    assert [(t["scene"], t["profile"]) for t in flown] == [(t["scene"], t["profile"]) for t in recorded]
    # Successes and collisions both, or the comparison would not tell a judge that never fires.
    assert {"success", "collision"} <= {t["outcome"] for t in recorded}
    for now, then in zip(flown, recorded):
        trial = f"{now['scene']} / {now['profile']}"
        assert (now["outcome"], now["reason"]) == (then["outcome"], then["reason"]), trial
        assert now["end_time_s"] == pytest.approx(then["end_time_s"], abs=1e-9), trial
        for name in FIGURES:
            assert now[name] == pytest.approx(then[name], rel=1e-9, abs=1e-9, nan_ok=True), f"{trial}: {name}"
