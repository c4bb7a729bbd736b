"""PX4 SITL flying on the harness's physics: the launcher, the simulator endpoint and lockstep together.

    async with px4_on_harness_physics(SimulatorOptions(profile="default", speed=8.0),
                                      SitlOptions(airframe="none_iris"), keep_in=record_dir,
                                      sink=recorder.append) as run:
        vehicle = await connect(run.url, 20.0, run.speed_factor)   # MAVSDK, as for any PX4
        run.simulator.dyn.pos                                        # ground truth
        run.simulator.inject_sim(SimFault.THRUST_LOSS, 1, 0.5)       # a fault in the physics

PX4 is started with an external-physics airframe (10016 `none_iris` by default) and the profile's
control allocation (`px4_params_for`); once it waits on TCP 4560+N the simulator accepts it and
the lockstep loop runs on its own thread until the block ends. PX4's speed factor
(PX4_SIM_SPEED_FACTOR, which lengthens its link-loss timeouts) is the pace asked for, or
`UNPACED_SPEED_HINT` when the pair runs as fast as it can.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import AsyncIterator

from aio.tasks import cancel_and_wait
from px4.external_physics.links import SimulatorLinkError, accept_px4
from px4.external_physics.lockstep import SimulatorLoop
from px4.external_physics.records import RecordSink
from px4.external_physics.simulator import (
    HarnessSimulator,
    SimulatorOptions,
    px4_params_for,
)
from px4.sitl import Px4Build, SitlOptions, SitlProcess, px4_sitl

EXTERNAL_PHYSICS_AIRFRAME = "none_iris"  # autostart 10016
# PX4 lengthens its data-link and RC loss timeouts by its speed factor. Unpaced lockstep runs at
# whatever the machine allows (5-20x here); its clients' heartbeats must not look lost.
UNPACED_SPEED_HINT = 20.0
DRAIN_PERIOD_S = 0.2


@dataclass
class HarnessSitlRun:
    """A running PX4 SITL on the harness's physics."""

    sitl: SitlProcess
    simulator: HarnessSimulator
    loop: SimulatorLoop
    speed_hint: float

    @property
    def url(self) -> str:
        """The MAVSDK connection string of this PX4 (its offboard/API link)."""
        return self.sitl.url

    @property
    def speed_factor(self) -> float:
        """Vehicle seconds per wall second to tell a client: the pace when one was asked for, else
        the real-time factor measured so far (the hint before PX4 first answered)."""
        pace = self.simulator.options.speed
        if pace is not None:
            return pace
        return self.loop.stats.real_time_factor or self.speed_hint

    def check(self) -> None:
        """Raise SimulatorLinkError if the exchange with PX4 has failed (PX4 died, the link broke)."""
        if self.loop.error is not None:
            failure = self.sitl.failure()
            raise SimulatorLinkError(f"{self.loop.error}" + (f"; {failure}" if failure else ""))


@contextlib.asynccontextmanager
async def px4_on_harness_physics(simulator: SimulatorOptions, sitl: SitlOptions | None = None,
                                 keep_in: Path | None = None,
                                 sink: RecordSink | None = None) -> AsyncIterator[HarnessSitlRun]:
    """Run PX4 SITL on the harness's physics for a block (see the module docstring).

    ``sitl.airframe`` must be one with external physics (None: `EXTERNAL_PHYSICS_AIRFRAME`, 10016;
    SitlOptions' own default is PX4's SIH, refused here); ``sitl.params`` are set after the profile's. ``sink(table, row)``
    receives the simulator's records ("sim_truth", "sim_sensors", "sim_gps"), always on the
    caller's event loop. Raises ValueError for an airframe that brings its own physics,
    SimulatorLinkError naming the port when PX4 dies before it connects or is alive but has not
    connected after ``sitl.start_cap_s``, and what `px4_sitl` raises.
    """
    sitl = sitl or SitlOptions(airframe=EXTERNAL_PHYSICS_AIRFRAME)
    frame = Px4Build.locate(sitl.px4_dir).airframe(sitl.airframe)
    if not frame.external_physics:
        raise ValueError(f"PX4 airframe {frame.autostart} ({frame.model}) has physics of its own; the harness's "
                         f"physics needs one that waits for an external simulator, e.g. 10016 "
                         f"({EXTERNAL_PHYSICS_AIRFRAME})")
    sim = HarnessSimulator(simulator)
    hint = simulator.speed if simulator.speed is not None else UNPACED_SPEED_HINT
    options = replace(sitl, speed=hint, params={**px4_params_for(sim.profile), **sitl.params})
    loops: list[SimulatorLoop] = []
    async with contextlib.AsyncExitStack() as stack:
        # Unwound last: PX4 is stopped while the simulator still feeds it, since a PX4 connected to a
        # silent simulator ignores SIGTERM and costs the launcher's whole grace period before SIGKILL.
        stack.push_async_callback(_finish, loops, sim, sink)
        proc = await stack.enter_async_context(px4_sitl(options, keep_in=keep_in))
        port = proc.ports.simulator_tcp
        link = await proc.while_alive(accept_px4(port), SimulatorLinkError,
                                      f"connected to the simulator on TCP 127.0.0.1:{port}", options.start_cap_s)
        loop = SimulatorLoop(sim, link, simulator.speed, lockstep=True, reply_timeout_s=simulator.reply_timeout_s)
        loops.append(loop)
        drainer = asyncio.create_task(_drain(sim, sink))
        stack.push_async_callback(cancel_and_wait, drainer)
        loop.start()
        try:
            yield HarnessSitlRun(proc, sim, loop, hint)
        finally:
            loop.wind_down()


async def _finish(loops: list[SimulatorLoop], sim: HarnessSimulator, sink: RecordSink | None) -> None:
    for loop in loops:
        loop.stop()
        loop.link.close()
    sim.records.drain(sink)


async def _drain(sim: HarnessSimulator, sink: RecordSink | None) -> None:
    while True:
        await asyncio.sleep(DRAIN_PERIOD_S)
        sim.records.drain(sink)
