"""One MAVSDK connection per bench board for the whole pytest session.

A flight controller the harness does not start (a connection string: a board on the bench, a SITL
someone else runs) is a session resource, as labgrid treats a target: it is connected once, and
each test gets a fresh `Vehicle` on that connection and leaves the board in a known state for the
next (landed, disarmed, its parameters restored, its faults cleared; fixtures.py). Reconnecting per
test would reopen the port (a serial board may reset on open) and wait for discovery every time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bridges.mavsdk_vehicle import MavsdkConnection


class BenchConnections:
    """Open connections by connection string; opened on first use, all closed with `close()`."""

    def __init__(self) -> None:
        self._open: dict[str, MavsdkConnection] = {}

    async def get(self, url: str, timeout: float) -> MavsdkConnection:
        """The session's connection on `url`, opened now if this is its first test."""
        from bridges.mavsdk_vehicle import open_connection

        if url not in self._open:
            self._open[url] = await open_connection(url, timeout)
        return self._open[url]

    def close(self) -> None:
        """Close every connection (the end of the session)."""
        while self._open:
            self._open.popitem()[1].close()
