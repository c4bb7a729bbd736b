"""A flight controller that is already running, on its connection string: a real aircraft (every
safety gate applies), a SITL someone else started, or, with `physics="harness"`, a board on the bench
in HITL mode whose physics the harness closes over its serial port.

Nothing is reconfigured here: the trial sets, journals and restores what it changes, and nothing
arms without the trial's own explicit option (a HITL board refuses arming unless
``options.allow_arming``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from bridges.hitl_bench import hitl_bench
from bridges.truth import truth_of
from px4.external_physics.simulator import SimulatorOptions
from targets.connection import connected
from targets.px4_sitl import physics_truth
from targets.spec import OpenTarget, TargetOptions, TargetSpec


@contextlib.asynccontextmanager
async def open_target(spec: TargetSpec, options: TargetOptions) -> AsyncIterator[OpenTarget]:
    """The flight controller on ``spec.url``, in real time."""
    if options.physics == "harness":
        simulator = SimulatorOptions(profile=options.profile, speed=1.0, seed=options.seed,
                                     perturbation=options.perturbation)
        async with hitl_bench(spec.url, simulator, arm_allowed=options.allow_arming) as bench:
            async with connected(bench.url, options, speed=1.0) as (vehicle, proxy), \
                    truth_of(vehicle, physics_truth(bench.simulator)):
                yield OpenTarget(vehicle, spec.name, hardware=True, simulator=bench.simulator, link=proxy)
        return
    async with connected(spec.url, options, speed=1.0) as (vehicle, proxy):
        yield OpenTarget(vehicle, spec.name, hardware=True, link=proxy)
