"""The built-in vehicle in-process, in simulated time: no sockets, as fast as the CPU allows.

A link profile applies the same impairment model as the proxy, in simulated time; its frame rows go
to ``options.sink("link", row)`` as they happen.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from bridges.lockstep_vehicle import LockstepVehicle
from bridges.truth import AlignedTruth, StateIsTruth, truth_of
from profiles.link import link_for_trial
from px4.sim.perturbation import perturb
from px4.sim.realtime import SimOptions, build_vehicle
from targets.builtin import keep_ulogs
from targets.spec import LOCKSTEP, OpenTarget, TargetOptions, TargetSpec

# Snapshots per vehicle second; lockstep sleeps resolve at this period, so the onboard runtime's
# 10-30 Hz loops need it well above their rate.
TELEMETRY_HZ = 100.0


@contextlib.asynccontextmanager
async def open_target(spec: TargetSpec, options: TargetOptions) -> AsyncIterator[OpenTarget]:
    """The built-in vehicle with the profile and parameters, stepped in simulated time."""
    autopilot, _ = build_vehicle(SimOptions(profile=options.profile, params=dict(options.params)))
    perturb(autopilot, options.perturbation)
    link = link_for_trial(options.link, options.seed, options.outages, options.perturbation.link_jitter_ms)
    sink = (lambda row: options.sink("link", row)) if options.sink is not None else None
    with tempfile.TemporaryDirectory(prefix="quad-hil-lockstep-") as root:
        # A trial record gets the vehicle's ULog as the sim target's does (record ulog/).
        log_root = Path(root) if options.keep_in is not None else None
        try:
            async with LockstepVehicle(autopilot, telemetry_hz=TELEMETRY_HZ, link=link, link_sink=sink,
                                       flight_log_root=log_root) as vehicle, \
                    truth_of(vehicle, StateIsTruth() if link is None else
                             AlignedTruth(StateIsTruth.source, lambda: tuple(autopilot.dyn.pos))):
                # Across a link profile a snapshot is what arrived late; the physics' state is the truth now.
                yield OpenTarget(vehicle, LOCKSTEP, hardware=False, link=vehicle.link)
        finally:
            if options.keep_in is not None:
                keep_ulogs(Path(root), options.keep_in)
