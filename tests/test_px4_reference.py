"""PX4 v1.16.1 SITL measured again from the binary and held to the facts kept in px4/reference/.

When a later build changes its streams, rates or parameters, this fails and names what moved;
re-measure with `python -m px4.reference.measure --px4-dir ...` and review the diff. The measurement
runs at 4x (rates are counted in PX4's own time, which agrees with 1x within 3 %).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from px4.params import speed_scaled_timeouts
from px4.reference.measure import measure, rate_differences

from .px4_builds import MAIN_BUILD, needs_px4

REFERENCE = Path(__file__).resolve().parents[1] / "px4" / "reference"
SPEED = 4.0
# The reference was read at 1x; PX4's start-up script lengthens the loss timeouts at SPEED (the built-in
# vehicle does the same from px4.params). MAV_SYS_ID is 1 + the instance.
AT_SPEED = speed_scaled_timeouts(SPEED)


@needs_px4
def test_px4_build_matches_its_reference_surface_and_parameters():
    surface, table = asyncio.run(measure(MAIN_BUILD, SPEED, window_s=10.0))
    release = surface["build"]["release"]
    stored_surface = REFERENCE / f"px4_v{release}_sih_mavlink_surface.json"
    assert stored_surface.exists(), f"no reference for PX4 v{release}: measure it into {REFERENCE}"
    reference = json.loads(stored_surface.read_text())
    assert rate_differences(surface["rates_hz"], reference["rates_hz"], 10.0) == []
    stored = json.loads((REFERENCE / f"px4_v{release}_sih_parameters.json").read_text())
    expected = {name: (kind, AT_SPEED.get(name, value)) for name, kind, value in stored["parameters"]}
    got = {name: (kind, value) for name, kind, value in table["parameters"]}
    assert list(got) == list(expected), "parameter names or order changed"
    changed = [f"{name}: {got[name]}, reference {expected[name]}" for name in got
               if name != "MAV_SYS_ID" and (got[name][0] != expected[name][0]
                                                             or got[name][1] != pytest.approx(expected[name][1]))]
    assert changed == []
    assert table["volatile"] == stored["volatile"]
