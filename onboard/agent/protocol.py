"""The agent's wire format: one JSON object per line over TCP; the harness reads lines of up to
`MAX_MESSAGE_BYTES` (a result), the agent of up to `REQUEST_MAX_BYTES` (a hello, a ping, a job).

A session, harness -> agent (every message has an ``op``)::

    {"op": "hello", "token": T, "version": 1}       -> {"op": "hello", "agent": HOST, "python": "3.10.12", ...}
    {"op": "ping", "t1": NS}                         -> {"op": "pong", "t1": NS, "t2": BOARD_NS}   (any number)
    {"op": "trial", "job": {...}}                    -> {"op": "queued"}, then {"op": "ready"} once its turn
                                                        came, its planner loaded and the agent connected
                                                        to the flight controller (an error instead if not)
    {"op": "go"}                                     -> {"op": "alive", "cycles": N} every ALIVE_S while the
                                                        planner runs, then {"op": "result", ...}
    {"op": "stop"}                                   the verdict is in: the planner stops, holds, reports

Anything else, a wrong token or a job that does not validate is answered with ``{"op": "error",
"error": TEXT}``; after a refused hello the agent closes the connection and keeps serving others. A
connection beyond the agent's cap is answered ``{"op": "busy", "error": TEXT}`` and closed at once: the
harness connects again (so is one from an address already holding half the places before its hello). The
agent's deadlines (`Limits`), each answered with an error, then closed: the
hello within a few seconds of connecting, something (a message, or reading what the agent sends) at
least every idle timeout, ``go`` within the go timeout of ``ready``, ``stop`` within the idle timeout of
the result.
Times are the agent's monotonic clock in nanoseconds (the board's clock), never the harness's.
"""

from __future__ import annotations

import hmac
import json
import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:  # asyncio itself is imported where it is used: `hil agent --help` needs only the constants
    import asyncio

VERSION = 1
DEFAULT_PORT = 7780
MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # a long trial's timing spans are a few MB
# What the agent reads per line, the hello included: a job is under 1 KiB. The hello is read before its
# token is checked, so this (twice over, asyncio's read-ahead) is what a stranger can make the agent hold.
REQUEST_MAX_BYTES = 8 * 1024
ALIVE_S = 0.5  # wall seconds between the agent's signs of life during a trial
MAX_CONNECTIONS = 8  # at once, strangers included: each campaign worker on the board holds one
AUTH_TIMEOUT_S = 3.0  # a harness sends its hello as it connects; a stranger gets this long
IDLE_TIMEOUT_S = 30.0  # a harness's messages come a round trip apart, a trial's run aside
GO_TIMEOUT_S = 120.0  # between ready and go the harness arms (30 s to armable at most), takes off and climbs
TOKEN_ENV = "HIL_ONBOARD_TOKEN"


class ProtocolError(Exception):
    """A message that is not what the protocol says: its text says what was expected."""


@dataclass(frozen=True)
class Limits:
    """What the agent gives a connection, in wall seconds (`hil agent` options change them)."""

    max_connections: int = MAX_CONNECTIONS
    auth_timeout_s: float = AUTH_TIMEOUT_S
    idle_timeout_s: float = IDLE_TIMEOUT_S
    go_timeout_s: float = GO_TIMEOUT_S

    @property
    def strangers_per_address(self) -> int:
        """Places one address may hold before its hello: half of them, so that strangers on one machine
        always leave a harness on another room to present its token."""
        return max(1, self.max_connections // 2)


@dataclass(frozen=True)
class AgentAddress:
    """Where an agent listens: ``HOST:PORT``."""

    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> AgentAddress:
        """``HOST:PORT`` (an IPv6 host in brackets); raises ValueError saying what was expected."""
        host, sep, port = str(text).rpartition(":")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
            raise ValueError(f"agent address {text!r}: expected HOST:PORT with a port 0-65535, e.g. "
                             f"127.0.0.1:{DEFAULT_PORT}")
        return cls(host, int(port))

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


VIA = " via "  # in an onboard entry: the agent, then the flight controller's connection string as the board reaches it


@dataclass(frozen=True)
class OnboardEntry:
    """Where a planner runs, as a campaign or ``--hil-onboard`` names a board: ``HOST:PORT`` (the harness gives
    the board a MAVLink link of its own: simulated targets) or ``HOST:PORT via URL`` (the board's own link to
    the flight controller, e.g. its serial port: hardware, where the harness cannot add one)."""

    address: AgentAddress
    vehicle_url: str | None = None

    @classmethod
    def parse(cls, text: str) -> OnboardEntry:
        """Raises ValueError saying what was expected."""
        from bridges.transport import parse_url

        address, via, vehicle = str(text).partition(VIA)
        where, vehicle = AgentAddress.parse(address.strip()), vehicle.strip()
        if not via:
            return cls(where)
        try:
            parse_url(vehicle)
        except ValueError as exc:
            raise ValueError(f"after 'via': the flight controller as the board reaches it: {exc}") from None
        return cls(where, vehicle)

    def target_problem(self, kinds: Mapping[str, str], boarded: tuple[str, ...]) -> str | None:
        """Why the board cannot reach the flight controller of these targets (name -> kind: sim, lockstep,
        px4-sitl, hardware), or None. `boarded`: the kinds on which the harness opens the board a link."""
        if self.vehicle_url is None:
            others = [name for name, kind in kinds.items() if kind not in boarded]
            if others:
                return (f"expected {' or '.join(boarded)} targets for HOST:PORT (the harness opens the board's own "
                        f"MAVLink link on them; on hardware name the board's own: HOST:PORT via URL), got "
                        f"{', '.join(others)}")
            return None
        others = [name for name, kind in kinds.items() if kind != "hardware"]
        if others:
            return ("expected hardware targets for HOST:PORT via URL (simulated targets give the board a link of "
                    f"their own: HOST:PORT), got {', '.join(others)}")
        return None


def token_from_env() -> str | None:
    """The shared token, from HIL_ONBOARD_TOKEN; None when unset or empty."""
    return os.environ.get(TOKEN_ENV) or None


def token_matches(expected: str, given: Any) -> bool:
    """Constant-time comparison, so the answer's timing tells nothing of the token."""
    return isinstance(given, str) and hmac.compare_digest(expected.encode(), given.encode())


async def read_message(reader: asyncio.StreamReader, limit: int = MAX_MESSAGE_BYTES) -> dict[str, Any] | None:
    """The next message, or None at the end of the stream; raises ProtocolError for a line that is too
    long, not UTF-8, not JSON, or not an object with a string ``op``. `limit`: the line limit `reader` was
    opened with (`open_stream`'s, or the agent's `REQUEST_MAX_BYTES`), for the error to name."""
    import asyncio

    try:
        line = await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial.strip():
            raise ProtocolError("connection closed in the middle of a message") from None
        return None
    except asyncio.LimitOverrunError:
        raise ProtocolError(f"message longer than {limit} bytes") from None
    try:
        message = json.loads(line.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ProtocolError(f"expected one JSON object per line (UTF-8), got {_excerpt(line)}: {exc}") from None
    if not isinstance(message, dict) or not isinstance(message.get("op"), str):
        raise ProtocolError(f"expected a JSON object with a string 'op', got {_excerpt(line)}")
    return message


def encode(message: dict[str, Any]) -> bytes:
    """One message as a line; NaN and infinities travel as null (JSON has none)."""
    return json.dumps(_finite(message), separators=(",", ":")).encode() + b"\n"


async def send(writer: asyncio.StreamWriter, message: dict[str, Any]) -> None:
    """Write one message and wait until the transport has taken it."""
    writer.write(encode(message))
    await writer.drain()


def open_stream(host: str, port: int) -> Any:
    """asyncio.open_connection with the protocol's line limit."""
    import asyncio

    return asyncio.open_connection(host, port, limit=MAX_MESSAGE_BYTES)


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _excerpt(line: bytes) -> str:
    text = line[:80].decode("utf-8", errors="replace").strip()
    return repr(text + ("..." if len(line) > 80 else ""))
