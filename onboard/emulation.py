"""Compute-profile emulation: make the closed loop feel a slower onboard computer.

The planner's measured stage times are stretched by the profile's per-stage factors; its command
is then held back until the emulated time has passed in vehicle time, so the vehicle flies on the
previous command meanwhile, as it would while a Jetson was still computing.

What the vehicle has already felt is subtracted: at a speed factor s the measured time m has
already cost s * m of vehicle time; in lockstep (s = inf) the vehicle stood still while the
planner ran, so it has felt nothing and the whole emulated time is held. This also makes the
``desktop`` profile (factor 1) meaningful in lockstep: the planner's own time is felt, exactly
once. When the vehicle already felt more than the emulated time (a slow host at a high speed
factor), nothing can be taken back; `EmulatedCompute.excess_s` records by how much.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from onboard.timing import COMPUTE_STAGES
from profiles.compute import ComputeProfile


@dataclass(frozen=True)
class EmulatedCompute:
    """One planner step's measured and emulated time, and the hold that makes up the difference."""

    measured_s: float  # wall seconds the planner took (map + plan + control)
    emulated_s: float  # what it would take on the profile's board
    hold_s: float  # vehicle seconds to hold the command back
    excess_s: float  # vehicle seconds already felt beyond the emulated time (cannot be undone)


def emulate(profile: ComputeProfile | None, stage_ns: Mapping[str, int], speed_factor: float) -> EmulatedCompute:
    """The hold for one step whose compute stages took `stage_ns` (wall ns); no profile: no hold."""
    measured = sum(stage_ns.get(s, 0) for s in COMPUTE_STAGES) / 1e9
    if profile is None:
        return EmulatedCompute(measured, measured, 0.0, 0.0)
    emulated = sum(stage_ns.get(s, 0) * profile.factor(s) for s in COMPUTE_STAGES) / 1e9
    felt = 0.0 if math.isinf(speed_factor) else measured * speed_factor
    return EmulatedCompute(measured, emulated, max(0.0, emulated - felt), max(0.0, felt - emulated))
