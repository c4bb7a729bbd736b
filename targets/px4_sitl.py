"""PX4 SITL as a target: PX4's own SIH physics (default), or the harness's physics as PX4's external
simulator in lockstep (`physics="harness"`, airframe none_iris), where profiles, sensor noise and
faults act in the physics and PX4 sees them through its sensors.

The profile becomes PX4 parameters (px4/sih.py for SIH; the allocation for the harness's physics),
the options' parameters come after; PX4's console and ULogs, and the physics' truth tables, go into
``options.keep_in`` / ``options.sink``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from bridges.truth import AlignedTruth, SihTruth, truth_of
from profiles.library import load_vehicle_profile
from px4.external_physics.simulator import SimulatorOptions
from px4.external_physics.sitl_run import (
    EXTERNAL_PHYSICS_AIRFRAME,
    px4_on_harness_physics,
)
from px4.sih import sitl_params
from px4.sitl import DEFAULT_AIRFRAME, SitlOptions, px4_sitl
from targets.connection import connected
from targets.spec import OpenTarget, TargetOptions, TargetSpec


@contextlib.asynccontextmanager
async def open_target(spec: TargetSpec, options: TargetOptions) -> AsyncIterator[OpenTarget]:
    """PX4 SITL with the profile applied, connected on its API link."""
    if (spec.physics or options.physics) == "harness":  # px4-sitl+harness names it whatever the options say
        sitl = SitlOptions(instance=spec.instance, speed=options.speed, px4_dir=options.px4_dir,
                           airframe=options.px4_airframe or EXTERNAL_PHYSICS_AIRFRAME, params=dict(options.params))
        simulator = SimulatorOptions(profile=options.profile, speed=options.speed, seed=options.seed,
                                     perturbation=options.perturbation)
        async with px4_on_harness_physics(simulator, sitl, keep_in=options.keep_in, sink=options.sink) as run:
            async with connected(run.url, options, run.sitl) as (vehicle, proxy), \
                    truth_of(vehicle, physics_truth(run.simulator)):
                yield OpenTarget(vehicle, f"{spec.kind}:{run.sitl.instance}", hardware=False,
                                 failure=run.sitl.failure, pid=run.sitl.proc.pid, simulator=run.simulator,
                                 link=proxy)
        return
    params = {**sitl_params(load_vehicle_profile(options.profile)), **options.params}
    sitl = SitlOptions(instance=spec.instance, speed=options.speed, px4_dir=options.px4_dir, params=params,
                       airframe=options.px4_airframe or DEFAULT_AIRFRAME, extra_links=options.extra_links)
    async with px4_sitl(sitl, keep_in=options.keep_in) as process:
        async with connected(process.url, options, process) as (vehicle, proxy), \
                truth_of(vehicle, SihTruth(lambda: vehicle.clock_s)):
            yield OpenTarget(vehicle, f"{spec.kind}:{process.instance}", hardware=False, failure=process.failure,
                             pid=process.proc.pid, link=proxy)


def physics_truth(simulator) -> AlignedTruth:
    """The harness's physics' own state (a `HarnessSimulator`, stepped on its thread), as PX4's truth."""
    return AlignedTruth("harness physics", lambda: tuple(simulator.dyn.pos))
