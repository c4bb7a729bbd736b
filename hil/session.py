"""One trial session: the record, the target, the telemetry and the finish, for every entry point.

Every way the harness flies a trial (`hil fly`, a campaign's mission and navigation trials, the pytest
plugin's tests, `hil onboard`, the fidelity flights) and `hil link`'s record is this session plus a flight
function of its own (labgrid's strategy is the model: one object brings the target to a known state):

- `TrialSession(record_dir, config=..., target=...)`, a `with` block, opens the trial record;
- `session.target(spec, options)` brings the target up through `targets.open_target` (the harness's only
  call of it), then goes on as `session.attach`;
- `session.attach(vehicle, name)`, for a vehicle connected elsewhere (the pytest session's connection to a
  flight controller, `hil onboard`'s), records "connected", tells the stop requests which vehicle to watch,
  records its telemetry into the record and `session.rows`, stamps the record's rows and events with the
  vehicle's clock (`t_vehicle_s`), and measures its speed (`session.speed`);
- `session.finish(outcome, summary)` finishes the record (the harness's only call of `TrialRecorder.finish`)
  with its typed summary (`records.summary`: what the trial knows of how it ran; reports compute the figures
  from the record).

The stop policy (`hil.stop`) runs inside the flight function, while the flight's parameters are still set.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from aio.tasks import cancel_and_wait
from bridges.vehicle import Vehicle
from hil.recording import record_telemetry
from hil.stop import FlightPhase, Interrupts
from records.clock import STAMP, ClockMark, mark, speed_between
from records.record import FLUSH_INTERVAL_S, TrialRecorder
from records.summary import Summary
from targets import OpenTarget, TargetOptions, TargetSpec, open_target


class TrialSession:
    """One trial from first contact to its finished record (module docstring)."""

    def __init__(self, record_dir: Path, *, config: Mapping[str, Any], target: str, seed: int | None = None,
                 interrupts: Interrupts | None = None, flush_interval_s: float = FLUSH_INTERVAL_S) -> None:
        self.recorder = TrialRecorder(record_dir, config=config, target=target, seed=seed,
                                      flush_interval_s=flush_interval_s)
        self.record_dir = Path(record_dir)
        self.interrupts = interrupts
        self.phase = FlightPhase()  # what an interrupted record names
        self.rows: list[dict] = []  # the telemetry snapshots recorded, to align the target's own logs with
        self.speed = 1.0  # the vehicle's speed factor as measured over the session (records.clock)
        self.vehicle: Vehicle | None = None

    def __enter__(self) -> TrialSession:
        self.recorder.__enter__()
        self.recorder.listeners.append(self.phase)
        return self

    def __exit__(self, *exc_info) -> bool | None:
        return self.recorder.__exit__(*exc_info)

    @contextlib.asynccontextmanager
    async def target(self, target: str | TargetSpec, options: TargetOptions,
                     record: bool = True) -> AsyncIterator[OpenTarget]:
        """The trial's target up, its PX4 console, logs and link rows into this record unless `options` says
        where they go; attached as `attach` says; closed after."""
        options = replace(options, keep_in=options.keep_in or self.record_dir,
                          sink=options.sink or self.recorder.append)
        async with open_target(target, options) as opened, self.attach(opened.vehicle, opened.name, record=record):
            yield opened

    @contextlib.asynccontextmanager
    async def attach(self, vehicle: Vehicle, name: str, record: bool = True) -> AsyncIterator[Vehicle]:
        """`vehicle` is this trial's from now on: "connected" recorded, the stop requests told, its telemetry
        recorded (unless `record` is False) and its speed measured until the block ends."""
        self.vehicle = vehicle
        if self.interrupts is not None:
            self.interrupts.watch(vehicle)
        self.recorder.vehicle_clock = lambda: vehicle.state.t_vehicle_s
        self.recorder.event("connected", url=vehicle.url, target=name)
        telemetry = asyncio.create_task(record_telemetry(vehicle, self.recorder, self.rows)) if record else None
        start = mark(vehicle.clock_s)
        try:
            yield vehicle
        finally:
            if telemetry is not None:
                await cancel_and_wait(telemetry)
            if not math.isfinite(start.vehicle_s):  # attached before the vehicle first told its clock
                start = next((ClockMark(row["t_ns"], row[STAMP]) for row in self.rows
                              if math.isfinite(row.get(STAMP, math.nan))), start)
            self.speed = speed_between(start, mark(vehicle.clock_s), vehicle.speed_factor)
            self.recorder.vehicle_clock = None

    def finish(self, outcome: str, summary: Summary) -> None:
        """The record finished with `outcome` and its summary, whose outcome it is."""
        if summary.outcome != outcome:
            raise ValueError(f"a record finished as {outcome} with the summary of a {summary.outcome}")
        self.recorder.finish(str(outcome), summary.to_manifest())
