"""`hil agent`: serve trials on the companion computer (protocol: `onboard.agent.protocol`).

Each session is one harness. A trial job names the planner, the task, the scene the virtual depth
camera renders, the compute profile, and where the flight controller is; the agent connects to it
through the same MAVSDK `Vehicle` the harness uses, waits for ``go`` (the harness has flown the vehicle
to the start), runs the onboard runtime (`onboard.runtime.run_planner`) until ``stop`` or until the
planner is done, and answers with what it recorded: the timing spans, the onboard, tracking and
resources tables and its events, stamped on the board's clock. One trial runs at a time, so one
trial's compute time is never another's: a second harness's job waits its turn (``queued``).

The harness going away mid-trial stops the planner, which leaves the vehicle in Hold; the agent then
serves the next session. A wrong token or a malformed message is answered with an error and logged,
and the agent goes on serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import platform
import socket
from dataclasses import dataclass, replace
from typing import Any

from config.fields import (
    Field,
    Invalid,
    Problems,
    flag,
    integer,
    is_number,
    number,
    read_fields,
    text,
)
from onboard.agent.clock import BoardClock
from onboard.agent.protocol import (
    ALIVE_S,
    MAX_MESSAGE_BYTES,
    VERSION,
    ProtocolError,
    read_message,
    send,
    token_matches,
)
from onboard.task import NavTask

log = logging.getLogger(__name__)

HELLO_TIMEOUT_S = 10.0  # a connection that says nothing is dropped
GO_TIMEOUT_S = 600.0  # the harness arms and takes off between ready and go
LINGER_S = 2.0  # how long a closing session reads what the peer still sends


class JobError(ValueError):
    """A trial job that does not validate: every problem, one per line."""


@dataclass(frozen=True)
class TrialJob:
    """What the harness asks the board to fly (`parse_job` validates a job message's ``job``)."""

    trial_id: str
    planner: str  # module:Class
    sensor: bool  # render the scene's depth for the planner
    rate_hz: float
    compute: str | None  # a compute profile, or None: as fast as the board
    scene: str
    config: int
    task: NavTask
    vehicle_url: str  # MAVSDK connection string of the flight controller, as seen from the board
    speed: float  # the target's speed factor (1 on hardware)
    connect_timeout_s: float


def _planner_class(value: Any) -> str:
    if not isinstance(value, str) or ":" not in value:
        raise Invalid("a planner class as module:Class")
    return value


def _optional_name(value: Any) -> str | None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise Invalid("a compute profile name or null")
    return value


def _triple(value: Any) -> tuple[float, float, float]:
    if not (isinstance(value, list) and len(value) == 3 and all(is_number(v) for v in value)):
        raise Invalid("three finite numbers (north, east, down)")
    return tuple(float(v) for v in value)


JOB_FIELDS = {
    "trial_id": text("the trial's id"),
    "planner": Field("a planner class as module:Class", _planner_class),
    "sensor": replace(flag("render the scene's depth for the planner", False), required=True),
    "rate_hz": number("planner rate, Hz", above=0),
    "compute": Field("a compute profile name or null", _optional_name, required=False),
    "scene": text("scene name"),
    "config": integer("the scene's configuration", at_least=0),
    "vehicle_url": text("MAVSDK connection string of the flight controller, as the board sees it"),
    "speed": number("the target's speed factor", above=0),
    "connect_timeout_s": number("seconds", above=0),
}
TASK_FIELDS = {
    "name": text("task name"),
    **{name: Field("three finite numbers (north, east, down)", _triple)
       for name in ("start", "goal", "bounds_min", "bounds_max", "home_in_scene")},
    "speed_cap": number("m/s", above=0),
    "goal_radius": number("m", above=0),
    "time_budget": number("s", above=0),
}


def parse_job(job: Any) -> TrialJob:
    """Validate a job mapping; raises JobError naming each bad field and what was expected."""
    if not isinstance(job, dict):
        raise JobError(f"job: expected a mapping of trial fields, got {type(job).__name__}")
    problems = Problems("trial job")
    values = read_fields(job, JOB_FIELDS, "job.", problems, nested=("task",))
    task = job.get("task")
    if isinstance(task, dict):
        task = read_fields(task, TASK_FIELDS, "job.task.", problems)
    else:
        problems.invalid("job.task", "a navigation task (name, start, goal, bounds, home_in_scene, ...)", task)
    if problems.lines:
        raise JobError("\n".join(problems.lines))
    return TrialJob(**values, task=NavTask(**task))


class BoardRecorder:
    """What the runtime records on the board, kept in memory for the result: rows stamped (and span
    starts shifted) onto the board's clock."""

    def __init__(self, clock: BoardClock) -> None:
        self.clock = clock
        self.tables: dict[str, list[dict[str, Any]]] = {}
        self.events: list[dict[str, Any]] = []

    def append(self, table: str, row: dict[str, Any]) -> None:
        row = dict(row)
        row["t_ns"] = row["t_ns"] + self.clock.offset_ns if "t_ns" in row else self.clock.now_ns()
        self.tables.setdefault(table, []).append(row)

    def event(self, kind: str, **fields: Any) -> None:
        self.events.append({"t_ns": self.clock.now_ns(), "kind": kind, **fields})


class Agent:
    """The server: `serve` until cancelled. `token` is the shared secret every harness must present."""

    def __init__(self, token: str, clock: BoardClock | None = None) -> None:
        if not token:
            raise ValueError("an agent needs a token: harnesses must present it")
        self.token = token
        self.clock = clock or BoardClock()
        self._busy = asyncio.Lock()
        self.trials = 0  # trials run to a result

    async def start(self, host: str, port: int) -> asyncio.AbstractServer:
        """Listen on host:port (port 0: a free one; the server's sockets say which)."""
        return await asyncio.start_server(self._session, host, port, limit=MAX_MESSAGE_BYTES)

    async def _session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        try:
            hello = await asyncio.wait_for(read_message(reader), HELLO_TIMEOUT_S)
            if hello is None:
                return
            if hello["op"] != "hello" or not token_matches(self.token, hello.get("token")):
                log.warning("refused %s: no hello with the agent's token", peer)
                await send(writer, {"op": "error", "error": "refused: expected a hello with the agent's token "
                                                            "(HIL_ONBOARD_TOKEN on the harness)"})
                return
            await send(writer, {"op": "hello", "version": VERSION, "agent": socket.gethostname(),
                                "python": platform.python_version(), "machine": platform.machine()})
            while (message := await read_message(reader)) is not None:
                if message["op"] == "ping":
                    await send(writer, {"op": "pong", "t1": message.get("t1"), "t2": self.clock.now_ns()})
                elif message["op"] == "trial":
                    await self._trial(message.get("job"), reader, writer)
                elif message["op"] != "stop":  # a stop after a trial's result is the harness being sure
                    await send(writer, {"op": "error", "error": f"unknown op {message['op']!r:.40}: expected "
                                                                "ping or trial"})
        except ProtocolError as exc:
            log.warning("session %s: %s", peer, exc)
            with contextlib.suppress(ConnectionError):
                await send(writer, {"op": "error", "error": str(exc)})
        except (ConnectionError, asyncio.TimeoutError):
            log.info("session %s: the harness went away", peer)
        except Exception as exc:  # a bug or a broken planner ends this session, never the agent
            log.exception("session %s failed", peer)
            with contextlib.suppress(ConnectionError):
                await send(writer, {"op": "error", "error": f"agent failed: {type(exc).__name__}: {exc}"})
        finally:
            await _close(reader, writer)

    async def _trial(self, job: Any, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        from bridges.mavsdk_vehicle import connect
        from bridges.vehicle import VehicleError

        try:
            trial = parse_job(job)
            planner, sensor, compute = _load(trial)
        except ValueError as exc:  # JobError, a planner or profile that does not load: the session goes on
            log.warning("job refused: %s", exc)
            await send(writer, {"op": "error", "error": f"job refused: {exc}"})
            return
        await send(writer, {"op": "queued"})
        async with self._busy:
            log.info("trial %s: connecting to %s", trial.trial_id, trial.vehicle_url)
            try:
                vehicle = await connect(trial.vehicle_url, trial.connect_timeout_s, trial.speed)
            except VehicleError as exc:
                await send(writer, {"op": "error", "error": f"no flight controller: {exc}"})
                return
            try:
                await send(writer, {"op": "ready"})
                go = await asyncio.wait_for(read_message(reader), GO_TIMEOUT_S)
                if go is None or go["op"] != "go":
                    return  # the harness gave the trial up before its navigation phase
                await self._run(trial, vehicle, planner, sensor, compute, reader, writer)
            finally:
                await vehicle.close()

    async def _run(self, trial: TrialJob, vehicle, planner, sensor, compute, reader, writer) -> None:
        from onboard.runtime import run_planner

        recorder = BoardRecorder(self.clock)
        stop = asyncio.Event()
        listening = asyncio.create_task(_until_stop(reader, stop))
        run = asyncio.create_task(run_planner(vehicle, planner, trial.task, rate_hz=trial.rate_hz, sensor=sensor,
                                              compute_profile=compute, recorder=recorder, stop=stop))
        try:
            while not run.done():
                await asyncio.wait({run, listening}, timeout=ALIVE_S, return_when=asyncio.FIRST_COMPLETED)
                if listening.done() and listening.exception() is not None:
                    stop.set()  # the harness is gone: end the loop (it holds the vehicle), report to no one
                if not run.done():
                    await send(writer, {"op": "alive", "cycles": len(recorder.tables.get("onboard", ()))})
            if run.exception() is not None:
                error = run.exception()
                await send(writer, {"op": "result", "error": f"{type(error).__name__}: {error}"})
            else:
                result = run.result()
                self.trials += 1
                await send(writer, {"op": "result", "summary": result.summary(), "tables": recorder.tables,
                                    "events": recorder.events})
            await listening  # the harness's stop, after which the session goes on (pings)
        finally:
            stop.set()
            listening.cancel()
            await asyncio.gather(run, listening, return_exceptions=True)


async def _until_stop(reader: asyncio.StreamReader, stop: asyncio.Event) -> None:
    """Read the harness's messages during a trial until its stop (raises when it goes away)."""
    while True:
        message = await read_message(reader)
        if message is None:
            raise ConnectionError("the harness closed the connection mid-trial")
        if message["op"] == "stop":
            stop.set()
            return


def _load(trial: TrialJob):
    """The planner, the sensor and the compute profile a job names, loaded on the board."""
    from missions.scenes import scene_for
    from onboard.planner import load_planner
    from onboard.sensing import SceneSensor
    from profiles.compute import load_compute_profile

    planner = load_planner(trial.planner)
    sensor = SceneSensor(scene_for(trial.scene, trial.config), trial.task.home_in_scene) if trial.sensor else None
    compute = load_compute_profile(trial.compute) if trial.compute else None
    return planner, sensor, compute


async def _close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Close a session so that its last answer arrives.

    Closing a socket with unread input resets the connection, and the peer's kernel may then drop the
    refusal it had not yet read. So: end our side, read (and drop) what the peer still sends, then close.
    """
    with contextlib.suppress(OSError, RuntimeError, asyncio.TimeoutError):
        if writer.can_write_eof():
            writer.write_eof()
        await asyncio.wait_for(_discard(reader), LINGER_S)
    writer.close()
    with contextlib.suppress(ConnectionError):
        await writer.wait_closed()


async def _discard(reader: asyncio.StreamReader) -> None:
    while await reader.read(65536):
        pass
