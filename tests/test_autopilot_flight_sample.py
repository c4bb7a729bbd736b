"""The built-in autopilot flies tests/autopilot_flight_sample.json's trajectories again (issue 34: the
trajectory and the flight task compiled for speed, the flights unchanged): the same modes at the same
simulated seconds, positions and setpoints within floating-point noise."""

from __future__ import annotations

import json

import pytest

from tests.autopilot_flight_sample import FIXTURE, fly_mission

TOLERANCE = 1e-9  # m, m/s, rad: rounding, not a different flight (a flight that differs is off by mm or more)


def _flat(sample: list) -> list:
    return [*sample[:10], *sample[10]]


def test_the_mission_and_the_lockstep_flight_fly_as_recorded():
    recorded = json.loads(FIXTURE.read_text())["mission"]
    flown = fly_mission()
    assert len(flown) == len(recorded)
    for now, then in zip(flown, recorded):
        now, then = _flat(now), _flat(then)
        assert len(now) == len(then) and now[8:10] == then[8:10], f"t={then[0]}: mode or arming differs"
        for a, b in zip(now, then):
            if isinstance(b, float):
                assert a == pytest.approx(b, abs=TOLERANCE), f"t={then[0]}: {now} != {then}"
            else:
                assert a == b, f"t={then[0]}: {now} != {then}"
