"""`hil agent`: serve trials on the companion computer (protocol: `onboard.agent.protocol`).

Each session is one harness. A trial job names the planner, the task, the scene the virtual depth
camera renders, the compute profile, and where the flight controller is; the agent connects to it
through the same MAVSDK `Vehicle` the harness uses, waits for ``go`` (the harness has flown the vehicle
to the start), runs the onboard runtime (`onboard.runtime.run_planner`) until ``stop`` or until the
planner is done, and answers with what it recorded: the timing spans, the onboard, tracking and
resources tables and its events, stamped on the board's clock. One trial runs at a time, so one
trial's compute time is never another's: a second harness's job waits its turn (``queued``). A flight
controller whose clock stands still for the job's ``vehicle_lost_s`` (the harness's own bound) ends the
planner's loop with the vehicle lost, reported as the trial's error, whether or not the harness says stop.

The harness going away mid-trial stops the planner, which leaves the vehicle in Hold; the agent then
serves the next session. A wrong token or a malformed message is answered with an error and logged,
and the agent goes on serving.

The agent listens on a lab network, so a connection is a stranger until its hello carries the token,
and a stranger gets little: lines of at most `REQUEST_MAX_BYTES`, `Limits.auth_timeout_s` to say hello,
and a place among `Limits.max_connections`, at most half of them per address (beyond them: ``busy``,
closed at once). A harness with the token is dropped once it neither sends nor reads for
`Limits.idle_timeout_s`, and a job without ``go`` within `Limits.go_timeout_s` of ``ready`` gives the
trial slot back. A job names only what the agent was started to serve (`Served`), checked before
anything it names is imported or read.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import platform
import socket
from collections import Counter
from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from bridges.vehicle import VEHICLE_LOST_S
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
    REQUEST_MAX_BYTES,
    VERSION,
    Limits,
    ProtocolError,
    encode,
    read_message,
    send,
    token_matches,
)
from onboard.task import NavTask
from profiles.compute import ComputeProfile, list_compute_profiles, load_compute_profile

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_MAX_S = 120.0  # the longest a job may have the agent wait for its flight controller
LINGER_S = 2.0  # how long a closing session reads what the peer still sends
LINGER_BYTES = 64 * 1024  # and how much: one still flooding is cut off, its place freed at once
REFERENCE_PLANNERS = "onboard.planners"  # the packaged reference planners: every agent serves them


@dataclass(frozen=True)
class Served:
    """What a job may name: a planner class in one of `planner_packages` (or their subpackages) or
    among `planner_classes` (``module:Class``), and a compute profile of `computes` (by its name).
    A job is checked against it before anything it names is imported or read, so a job naming
    anything else learns nothing of it, not even whether it exists."""

    planner_packages: tuple[str, ...]
    planner_classes: tuple[str, ...]
    computes: Mapping[str, ComputeProfile]

    def serves_planner(self, spec: str) -> bool:
        module = spec.partition(":")[0]
        return spec in self.planner_classes or any(module == package or module.startswith(package + ".")
                                                   for package in self.planner_packages)

    def planners_served(self) -> str:
        """For a refusal: the packages and classes a job may name."""
        return ", ".join([*(f"a class in {package}" for package in self.planner_packages), *self.planner_classes])


def is_module_name(text: str) -> bool:
    """A dotted Python module name (``onboard.planners.avoid``): nothing a path could hide in."""
    return all(part.isidentifier() for part in text.split("."))


def is_class_name(text: str) -> bool:
    """``module:Class``, both parts Python names."""
    module, sep, name = text.partition(":")
    return bool(sep) and is_module_name(module) and name.isidentifier()


def served(planner_packages: Iterable[str] = (), planner_classes: Iterable[str] = (),
           compute_dir: Path | None = None) -> Served:
    """What an agent serves: the packaged reference planners and compute profiles, plus these (a
    package or class must be importable on this Python; every ``*.yaml`` of `compute_dir` must be a
    compute profile, served by its ``name``). Raises ValueError (a ConfigError for a bad profile) naming
    what is wrong; nothing a lab names here is imported yet, beyond the parents of a dotted name."""
    for name in [*planner_packages, *(spec.partition(":")[0] for spec in planner_classes)]:
        if not _importable(name):
            raise ValueError(f"{name}: no such module on this board's Python path (sys.path, PYTHONPATH)")
    profiles = [load_compute_profile(name) for name in list_compute_profiles()]
    if compute_dir is not None:
        if not compute_dir.is_dir():
            raise ValueError(f"--compute-dir {compute_dir}: expected a folder of compute profiles (NAME.yaml)")
        profiles += [load_compute_profile(path) for path in sorted(compute_dir.glob("*.yaml"))]
    computes: dict[str, ComputeProfile] = {}
    for profile in profiles:
        if profile.name in computes:
            raise ValueError(f"--compute-dir {compute_dir}: two compute profiles are named {profile.name!r} "
                             "(a job names a profile by its name: one profile per name)")
        computes[profile.name] = profile
    return Served((REFERENCE_PLANNERS, *planner_packages), tuple(planner_classes), computes)


def _importable(module: str) -> bool:
    try:
        return is_module_name(module) and importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that is missing or not a package
        return False


class JobError(ValueError):
    """A trial job that does not validate: every problem, one per line."""


@dataclass(frozen=True)
class TrialJob:
    """What the harness asks the board to fly (`parse_job` validates a job message's ``job``)."""

    trial_id: str
    planner: str  # module:Class, one the agent serves
    sensor: bool  # render the scene's depth for the planner
    rate_hz: float
    compute: ComputeProfile | None  # one the agent serves, or None: as fast as the board
    scene: str
    config: int
    task: NavTask
    vehicle_url: str  # MAVSDK connection string of the flight controller, as seen from the board
    speed: float  # the target's speed factor (1 on hardware)
    connect_timeout_s: float
    # Wall seconds the flight controller's clock may stand still before the board's trial ends with it lost: the
    # harness's own bound (TargetOptions.vehicle_lost_s), so that both give up on a stopped vehicle together.
    vehicle_lost_s: float = VEHICLE_LOST_S


def _triple(value: Any) -> tuple[float, float, float]:
    if not (isinstance(value, list) and len(value) == 3 and all(is_number(v) for v in value)):
        raise Invalid("three finite numbers (north, east, down)")
    return tuple(float(v) for v in value)


def job_fields(serves: Served) -> dict[str, Field]:
    """A job's fields, its planner and compute profile among those `serves` holds."""

    def planner(value: Any) -> str:
        if not isinstance(value, str) or not is_class_name(value):
            raise Invalid("a planner class as module:Class")
        if not serves.serves_planner(value):
            raise Invalid(f"a planner this agent serves ({serves.planners_served()}; hil agent --planner-package "
                          "and --planner add more)")
        return value

    def compute(value: Any) -> ComputeProfile | None:
        if value is None:
            return None
        if not isinstance(value, str) or value not in serves.computes:
            raise Invalid(f"a compute profile this agent serves ({', '.join(sorted(serves.computes))}; hil agent "
                          "--compute-dir adds more) or null")
        return serves.computes[value]

    return {
        "trial_id": text("the trial's id"),
        "planner": Field("a planner class as module:Class", planner),
        "sensor": replace(flag("render the scene's depth for the planner", False), required=True),
        "rate_hz": number("planner rate, Hz", above=0),
        "compute": Field("a compute profile name or null", compute, required=False),
        "scene": text("scene name"),
        "config": integer("the scene's configuration", at_least=0),
        "vehicle_url": text("MAVSDK connection string of the flight controller, as the board sees it"),
        "speed": number("the target's speed factor", above=0),
        "connect_timeout_s": number("seconds", above=0, at_most=CONNECT_TIMEOUT_MAX_S),
        "vehicle_lost_s": number("wall seconds the flight controller's clock may stand still", above=0,
                                 required=False, default=VEHICLE_LOST_S),
    }


TASK_FIELDS = {
    "name": text("task name"),
    **{name: Field("three finite numbers (north, east, down)", _triple)
       for name in ("start", "goal", "bounds_min", "bounds_max", "home_in_scene")},
    "speed_cap": number("m/s", above=0),
    "goal_radius": number("m", above=0),
    "time_budget": number("s", above=0),
}


def parse_job(job: Any, serves: Served) -> TrialJob:
    """Validate a job mapping; raises JobError naming each bad field and what was expected."""
    if not isinstance(job, dict):
        raise JobError(f"job: expected a mapping of trial fields, got {type(job).__name__}")
    problems = Problems("trial job")
    values = read_fields(job, job_fields(serves), "job.", problems, nested=("task",))
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
    """The server: `serve` until cancelled. `token` is the shared secret every harness must present;
    `limits` what a connection gets, `serves` what a job may name (default: the packaged planners and
    compute profiles)."""

    def __init__(self, token: str, clock: BoardClock | None = None, limits: Limits = Limits(),
                 serves: Served | None = None) -> None:
        if not token:
            raise ValueError("an agent needs a token: harnesses must present it")
        self.token = token
        self.clock = clock or BoardClock()
        self.limits = limits
        self.serves = serves or served()
        self._busy = asyncio.Lock()
        self._connections = 0
        self._strangers: Counter[str] = Counter()  # connections before their hello, by address
        self.trials = 0  # trials run to a result

    async def start(self, host: str, port: int) -> asyncio.AbstractServer:
        """Listen on host:port (port 0: a free one; the server's sockets say which)."""
        return await asyncio.start_server(self._session, host, port, limit=REQUEST_MAX_BYTES)

    async def _session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        host = peer[0] if peer else ""  # None: reset before the agent got to it
        if self._connections >= self.limits.max_connections or \
                self._strangers[host] >= self.limits.strangers_per_address:
            log.warning("refused %s: %d connections, %d of them from %s before their hello (--max-connections)",
                        peer, self._connections, self._strangers[host], host)
            # Closed without reading: a flood of these costs the agent nothing but the accept.
            writer.write(encode({"op": "busy", "error": f"busy: this agent serves {self.limits.max_connections} "
                                                        "connections at once; try again"}))
            writer.close()
            return
        self._connections += 1
        self._strangers[host] += 1
        stranger = True
        try:
            if await self._authenticate(peer, reader, writer):
                self._strangers[host] -= 1
                stranger = False
                await self._serve(reader, writer)
        except ProtocolError as exc:
            log.warning("session %s: %s", peer, exc)
            with contextlib.suppress(ConnectionError):
                await self._send(writer, {"op": "error", "error": str(exc)})
        except ConnectionError:
            log.info("session %s: the harness went away", peer)
        except Exception as exc:  # a bug or a broken planner ends this session, never the agent
            log.exception("session %s failed", peer)
            with contextlib.suppress(ConnectionError):
                await self._send(writer, {"op": "error", "error": f"agent failed: {type(exc).__name__}: {exc}"})
        finally:
            await _close(reader, writer)
            self._connections -= 1
            if stranger:
                self._strangers[host] -= 1
            self._strangers += Counter()  # forgets the addresses left at 0: strangers come from anywhere

    async def _authenticate(self, peer: Any, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Whether the connection's first message is a hello with the token (answered either way)."""
        hello = await _within(_request(reader), self.limits.auth_timeout_s, "hello", "--auth-timeout")
        if hello is None:
            return False
        if hello["op"] != "hello" or not token_matches(self.token, hello.get("token")):
            log.warning("refused %s: no hello with the agent's token", peer)
            await self._send(writer, {"op": "error", "error": "refused: expected a hello with the agent's token "
                                                              "(HIL_ONBOARD_TOKEN on the harness)"})
            return False
        await self._send(writer, {"op": "hello", "version": VERSION, "agent": socket.gethostname(),
                                  "python": platform.python_version(), "machine": platform.machine()})
        return True

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """An authenticated harness's session: pings and trials, until it closes or goes idle."""
        while (message := await _within(_request(reader), self.limits.idle_timeout_s, "message",
                                        "--idle-timeout")) is not None:
            if message["op"] == "ping":
                await self._send(writer, {"op": "pong", "t1": message.get("t1"), "t2": self.clock.now_ns()})
            elif message["op"] == "trial":
                await self._trial(message.get("job"), reader, writer)
            elif message["op"] != "stop":  # a stop after a trial's result is the harness being sure
                await self._send(writer, {"op": "error", "error": f"unknown op {message['op']!r:.40}: expected "
                                                                  "ping or trial"})

    async def _send(self, writer: asyncio.StreamWriter, message: dict[str, Any]) -> None:
        """`send`, for a peer that reads: one that stops reading would hold its connection forever."""
        try:
            await asyncio.wait_for(send(writer, message), self.limits.idle_timeout_s)
        except asyncio.TimeoutError:
            raise ConnectionError(f"the peer read nothing for {self.limits.idle_timeout_s:g} s") from None

    async def _trial(self, job: Any, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        from bridges.mavsdk_vehicle import connect
        from bridges.vehicle import VehicleError

        try:
            trial = parse_job(job, self.serves)
        except ValueError as exc:  # JobError: the session goes on
            log.warning("job refused: %s", exc)
            await self._send(writer, {"op": "error", "error": f"job refused: {exc}"})
            return
        # Queued before the planner and its scene are loaded: that takes seconds of CPU (imports, the scene's
        # generation), over the harness's REPLY_TIMEOUT_S for this answer on a loaded board (seen at load 14),
        # and is done in turn, so that it never takes CPU from another harness's trial in flight.
        await self._send(writer, {"op": "queued"})
        async with self._busy:
            try:
                planner, sensor = _load(trial)
            except ValueError as exc:  # a planner that does not load: the session goes on
                log.warning("job refused: %s", exc)
                await self._send(writer, {"op": "error", "error": f"job refused: {exc}"})
                return
            log.info("trial %s: connecting to %s", trial.trial_id, trial.vehicle_url)
            try:
                vehicle = await connect(trial.vehicle_url, trial.connect_timeout_s, trial.speed,
                                        lost_after_s=trial.vehicle_lost_s)
            except VehicleError as exc:
                await self._send(writer, {"op": "error", "error": f"no flight controller: {exc}"})
                return
            try:
                await self._send(writer, {"op": "ready"})
                go = await _within(_request(reader), self.limits.go_timeout_s, "go after ready", "--go-timeout")
                if go is None or go["op"] != "go":
                    return  # the harness gave the trial up before its navigation phase
                await self._run(trial, vehicle, planner, sensor, reader, writer)
            finally:
                await vehicle.close()

    async def _run(self, trial: TrialJob, vehicle, planner, sensor, reader, writer) -> None:
        from onboard.runtime import run_planner

        recorder = BoardRecorder(self.clock)
        stop = asyncio.Event()
        listening = asyncio.create_task(_until_stop(reader, stop))
        run = asyncio.create_task(run_planner(vehicle, planner, trial.task, rate_hz=trial.rate_hz, sensor=sensor,
                                              compute_profile=trial.compute, recorder=recorder, stop=stop))
        try:
            while not run.done():
                await asyncio.wait({run, listening}, timeout=ALIVE_S, return_when=asyncio.FIRST_COMPLETED)
                if listening.done() and listening.exception() is not None:
                    stop.set()  # the harness is gone: end the loop (it holds the vehicle), report to no one
                if not run.done():
                    await self._send(writer, {"op": "alive", "cycles": len(recorder.tables.get("onboard", ()))})
            if run.exception() is not None:
                error = run.exception()
                await self._send(writer, {"op": "result", "error": f"{type(error).__name__}: {error}"})
            else:
                result = run.result()
                self.trials += 1
                await self._send(writer, {"op": "result", "summary": result.summary(), "tables": recorder.tables,
                                          "events": recorder.events})
            # The harness's stop, after which the session goes on (pings); the trial slot is held until then.
            await _within(listening, self.limits.idle_timeout_s, "stop after the result", "--idle-timeout")
        finally:
            stop.set()
            listening.cancel()
            await asyncio.gather(run, listening, return_exceptions=True)


T = TypeVar("T")


async def _within(awaitable: Awaitable[T], timeout_s: float, what: str, option: str) -> T:
    """`awaitable`'s result; after `timeout_s` a ProtocolError saying what did not come (answered, then
    the connection is closed)."""
    try:
        return await asyncio.wait_for(awaitable, timeout_s)
    except asyncio.TimeoutError:
        raise ProtocolError(f"closed: no {what} within {timeout_s:g} s (hil agent {option})") from None


def _request(reader: asyncio.StreamReader) -> Awaitable[dict[str, Any] | None]:
    """The harness's next message (`read_message` on the agent's reader, opened with REQUEST_MAX_BYTES)."""
    return read_message(reader, REQUEST_MAX_BYTES)


async def _until_stop(reader: asyncio.StreamReader, stop: asyncio.Event) -> None:
    """Read the harness's messages during a trial until its stop (raises when it goes away)."""
    while True:
        message = await _request(reader)
        if message is None:
            raise ConnectionError("the harness closed the connection mid-trial")
        if message["op"] == "stop":
            stop.set()
            return


def _load(trial: TrialJob):
    """The planner and the sensor a job names, loaded on the board (the planner served: `parse_job`)."""
    from missions.scenes import scene_for
    from onboard.planner import load_planner
    from onboard.sensing import SceneSensor

    planner = load_planner(trial.planner)
    sensor = SceneSensor(scene_for(trial.scene, trial.config), trial.task.home_in_scene) if trial.sensor else None
    return planner, sensor


async def _close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Close a session so that its last answer arrives.

    Closing a socket with unread input resets the connection, and the peer's kernel may then drop the
    refusal it had not yet read. So: end our side, read (and drop) what the peer still sends, then close.
    A peer that sends on past `LINGER_BYTES`, or reads nothing of what is queued for it, is cut off.
    """
    with contextlib.suppress(OSError, RuntimeError, asyncio.TimeoutError):
        if writer.can_write_eof():
            writer.write_eof()
        await asyncio.wait_for(_discard(reader, LINGER_BYTES), LINGER_S)
    writer.close()
    try:
        await asyncio.wait_for(writer.wait_closed(), LINGER_S)
    except asyncio.TimeoutError:
        writer.transport.abort()
    except ConnectionError:
        pass


async def _discard(reader: asyncio.StreamReader, most: int) -> None:
    while most > 0 and (data := await reader.read(65536)):
        most -= len(data)
