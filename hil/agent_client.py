"""The harness's side of an onboard agent: one trial's session (protocol: `onboard.agent.protocol`).

`agent_session` opens it before the vehicle is armed: it connects and presents the token (waiting up to
`CONNECT_WAIT_S` for an agent that is rebooting, or busy: every place taken, by strangers perhaps), measures the board's clock (`onboard.agent.clock`),
sends the job and waits until the board is connected to the flight controller. `AgentSession.run` is
then the navigation phase: ``go``, signs of life every half second, ``stop`` once the judge has
decided, and the board's result, merged into the trial record on the harness's clock:

* the timing, onboard, tracking and resources tables, each row's ``t_ns`` on the harness's clock and
  its board time kept as ``t_ns_board``;
* the board's events (``onboard_started``, ``onboard_finished``), stamped the same way;
* ``onboard_clock``: the offset (before and after the trial), drift and their uncertainty;
* table ``timeline``: per planner cycle, sensing -> plan start -> plan end -> setpoint sent -> echoed.

An agent that goes silent for `LOST_AFTER_S`, closes the connection mid-trial or cannot be reached
raises `OnboardLost`; one that refuses (wrong token, bad job) raises `AgentError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from config.fields import is_number
from onboard.agent.clock import ClockAlignment, OffsetEstimate, estimate_offset
from onboard.agent.protocol import (
    VERSION,
    AgentAddress,
    OnboardEntry,
    ProtocolError,
    open_stream,
    read_message,
    send,
    token_from_env,
)
from onboard.runtime import RuntimeResult
from onboard.task import NavTask
from onboard.timing import cycle_timeline, summarize
from px4.process import free_udp_port
from records.record import TrialRecorder

CONNECT_WAIT_S = 120.0  # wall seconds a trial waits for its agent to be (back) up
LOST_AFTER_S = 5.0  # wall seconds without a sign of life mid-trial: the agent is lost
READY_TIMEOUT_S = 900.0  # a queued job waits for the board's trial in progress, then its connection
REPLY_TIMEOUT_S = 10.0
PINGS = 32  # clock exchanges per burst; the shortest round trip is kept
# The tables a board sends back: the onboard runtime's (onboard.runtime).
BOARD_TABLES = ("timing", "onboard", "tracking", "resources")


class AgentError(Exception):
    """The agent refused (a wrong token, a job it cannot run) or answered outside the protocol."""


class OnboardLost(AgentError):
    """The agent could not be reached, or stopped answering mid-trial."""


@dataclass(frozen=True)
class RemoteOnboard:
    """Where a trial's planner runs: the agent's address, and the flight controller's connection string
    as the board reaches it."""

    address: AgentAddress
    vehicle_url: str
    token: str


def remote_onboard(entry: str) -> tuple[RemoteOnboard, tuple[str, ...]]:
    """The onboard agent of an entry (`OnboardEntry`; the token from HIL_ONBOARD_TOKEN), and the MAVLink link
    the flight controller opens to the board for it: with ``HOST:PORT via URL`` none (the board has its own),
    else a free port, which the board listens on at the address the harness reaches it by. Raises ValueError
    for a malformed entry."""

    board = OnboardEntry.parse(entry)
    where = board.address
    if board.vehicle_url is not None:
        return RemoteOnboard(where, board.vehicle_url, token_from_env() or ""), ()
    port = free_udp_port()
    return (RemoteOnboard(where, f"udpin://{where.host}:{port}", token_from_env() or ""),
            (f"udpout://{where.host}:{port}",))


class AgentSession:
    """One trial on an agent; see the module docstring."""

    def __init__(self, remote: RemoteOnboard, recorder: TrialRecorder) -> None:
        self.remote = remote
        self.recorder = recorder
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._before: OffsetEstimate | None = None
        self._stop_sent = False

    async def open(self, job: dict[str, Any]) -> None:
        """Connect, authenticate, measure the clock, send the job; returns once the board is ready."""
        address = self.remote.address
        hello = await self.connect()
        started = time.monotonic()
        await self._send({"op": "trial", "job": job})
        await self._reply(REPLY_TIMEOUT_S, "queued")
        await self._reply(READY_TIMEOUT_S, "ready")
        self.recorder.event("onboard_agent", address=str(address), agent=hello.get("agent"),
                            python=hello.get("python"), machine=hello.get("machine"),
                            ready_s=time.monotonic() - started)

    async def run(self, stop: asyncio.Event) -> RuntimeResult:
        """The navigation phase on the board: until `stop` is set (the verdict) and the board has reported."""
        self.recorder.event("onboard_go")
        await self._send({"op": "go"})
        stopper = asyncio.create_task(self._stop_on(stop))
        try:
            while True:
                message = await self._next(LOST_AFTER_S, "a sign of life mid-trial")
                if message["op"] == "result":
                    break
                if message["op"] == "error":
                    raise AgentError(f"agent {self.remote.address}: {message.get('error')}")
        finally:
            stopper.cancel()
            await asyncio.gather(stopper, return_exceptions=True)
        if not self._stop_sent:  # the planner said done first; the board waits for the stop all the same
            await self._send({"op": "stop"})
            self._stop_sent = True
        if message.get("error"):
            raise AgentError(f"planner on agent {self.remote.address} failed: {message['error']}")
        alignment = ClockAlignment(self._before, await self._exchange())
        self.recorder.event("onboard_clock", **alignment.as_event())
        try:
            return merge_result(message, alignment, self.recorder)
        except (KeyError, TypeError, ValueError) as exc:
            raise AgentError(f"agent {self.remote.address} sent a result outside the protocol: {exc}") from None

    async def connect(self) -> dict[str, Any]:
        """Connect, present the token and measure the board's clock; the agent's hello. An agent that is not
        up, or answers busy or closes before its hello (a busy agent closes at once, and its answer may be lost
        with the connection), is tried again for `CONNECT_WAIT_S`. Records nothing (`open` does)."""
        address = self.remote.address
        deadline = time.monotonic() + CONNECT_WAIT_S
        while True:
            try:
                self._reader, self._writer = await asyncio.wait_for(open_stream(address.host, address.port),
                                                                    REPLY_TIMEOUT_S)
                await self._send({"op": "hello", "token": self.remote.token, "version": VERSION})
                message = await self._next(REPLY_TIMEOUT_S, "hello answer")
                if message["op"] != "busy":
                    break
                why = message.get("error")
            except (OSError, asyncio.TimeoutError, OnboardLost) as exc:
                why = exc
            await self.close()
            if time.monotonic() > deadline:
                raise OnboardLost(f"agent {address} not reachable for {CONNECT_WAIT_S:g} s: {why}") from None
            await asyncio.sleep(0.5)
        hello = _expected(message, "hello", address)
        self._before = await self._exchange()
        return hello

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await self._writer.wait_closed()

    async def _stop_on(self, stop: asyncio.Event) -> None:
        await stop.wait()
        await self._send({"op": "stop"})
        self._stop_sent = True

    async def _exchange(self) -> OffsetEstimate:
        exchanges = []
        for _ in range(PINGS):
            t1 = time.monotonic_ns()
            await self._send({"op": "ping", "t1": t1})
            pong = await self._reply(REPLY_TIMEOUT_S, "pong")
            t3 = time.monotonic_ns()
            if pong.get("t1") != t1 or not isinstance(pong.get("t2"), int):
                raise AgentError(f"agent {self.remote.address}: expected a pong to t1={t1} with an integer t2, "
                                 f"got {pong!r:.100}")
            exchanges.append((t1, pong["t2"], t3))
        return estimate_offset(exchanges)

    async def _send(self, message: dict[str, Any]) -> None:
        try:
            await send(self._writer, message)
        except (ConnectionError, OSError) as exc:
            raise OnboardLost(f"agent {self.remote.address} went away: {exc}") from None

    async def _next(self, timeout: float, what: str) -> dict[str, Any]:
        try:
            message = await asyncio.wait_for(read_message(self._reader), timeout)
        except asyncio.TimeoutError:
            raise OnboardLost(f"agent {self.remote.address}: no {what} for {timeout:g} s") from None
        except (ConnectionError, OSError) as exc:
            raise OnboardLost(f"agent {self.remote.address} went away: {exc}") from None
        except ProtocolError as exc:
            raise AgentError(f"agent {self.remote.address}: {exc}") from None
        if message is None:
            raise OnboardLost(f"agent {self.remote.address} closed the connection (expected {what})")
        return message

    async def _reply(self, timeout: float, op: str) -> dict[str, Any]:
        return _expected(await self._next(timeout, f"{op} answer"), op, self.remote.address)


def _expected(message: dict[str, Any], op: str, address: AgentAddress) -> dict[str, Any]:
    """`message` if it is the answer `op`; raises AgentError with the agent's error or what came instead."""
    if message["op"] == "error":
        raise AgentError(f"agent {address}: {message.get('error')}")
    if message["op"] != op:
        raise AgentError(f"agent {address}: expected {op}, got {message['op']!r:.40}")
    return message


@contextlib.asynccontextmanager
async def agent_session(remote: RemoteOnboard, job: dict[str, Any],
                        recorder: TrialRecorder) -> AsyncIterator[AgentSession]:
    """A session whose job is sent and whose board is ready; closed after."""
    session = AgentSession(remote, recorder)
    try:
        await session.open(job)
        yield session
    finally:
        await session.close()


def trial_job(trial_id: str, planner: str, sensor: bool, rate_hz: float, compute: str | None, scene: str,
              config: int, task: NavTask, vehicle_url: str, speed: float, connect_timeout_s: float,
              vehicle_lost_s: float) -> dict[str, Any]:
    """The job message's ``job`` (validated on the board by `onboard.agent.server.parse_job`)."""
    return {"trial_id": trial_id, "planner": planner, "sensor": sensor, "rate_hz": rate_hz, "compute": compute,
            "scene": scene, "config": config, "task": asdict(task), "vehicle_url": vehicle_url, "speed": speed,
            "connect_timeout_s": connect_timeout_s, "vehicle_lost_s": vehicle_lost_s}


def merge_result(message: dict[str, Any], alignment: ClockAlignment, recorder: TrialRecorder) -> RuntimeResult:
    """Put the board's tables and events into the record on the harness's clock; the runtime's result."""
    tables = message.get("tables") or {}
    if not isinstance(tables, dict) or not set(tables) <= set(BOARD_TABLES):
        raise ValueError(f"tables: expected some of {', '.join(BOARD_TABLES)}")
    frames = {}
    for name, rows in tables.items():
        frame = pd.DataFrame(rows)
        if not frame.empty:
            frame["t_ns_board"] = frame["t_ns"].astype(np.int64)
            frame["t_ns"] = alignment.to_harness(frame["t_ns_board"].to_numpy())
        for row in frame.to_dict("records"):
            recorder.append(name, row)
        frames[name] = frame
    for event in message.get("events") or ():
        fields = {k: v for k, v in event.items() if k not in ("t_ns", "kind")}
        recorder.event(str(event["kind"]), **fields, t_ns=int(alignment.to_harness(int(event["t_ns"]))),
                       t_ns_board=int(event["t_ns"]))
    spans = frames.get("timing", pd.DataFrame(columns=["t_ns", "cycle", "stage", "dur_ns", "emulated_ns"]))
    for row in cycle_timeline(spans).to_dict("records"):
        recorder.append("timeline", {"t_ns": int(row["plan_start_ns"]), **row})
    summary = message["summary"]
    return RuntimeResult(
        reason=str(summary["reason"]), cycles=int(summary["cycles"]), overruns=int(summary["overruns"]),
        timing=summarize(spans), emulated=summarize(spans, "emulated_ns"),
        compute_profile=summary.get("compute_profile"),
        tracking_error_mean_m=_number(summary.get("tracking_error_mean_m")),
        tracking_error_max_m=_number(summary.get("tracking_error_max_m")),
        latency_mean_s=_number(summary.get("latency_mean_s")), spans=spans)


def _number(value: Any) -> float:
    return float(value) if is_number(value) else math.nan
