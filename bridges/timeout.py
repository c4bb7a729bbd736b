"""asyncio's timeout block on every Python the harness runs on, raising the builtin TimeoutError.

Python 3.11 brought `asyncio.timeout`. The companion computers the onboard side runs on ship Python
3.10 (JetPack 6, ROS 2 Humble), so there the same block is built here: it cancels the task that
entered it when its deadline passes and turns that cancellation into TimeoutError. Its deadline can
be moved from any callback (`Vehicle.deadline` follows the vehicle's clock that way), which the
async-timeout package does not allow: its `update` re-targets whichever task is current.
(`asyncio.wait_for` raises `asyncio.TimeoutError` on 3.10, a class of its own there: catch that name
where a wait_for is what times out.)
"""

from __future__ import annotations

import asyncio
import sys

if sys.version_info >= (3, 11):
    timeout = asyncio.timeout
else:
    class _Timeout:
        """The part of `asyncio.Timeout` the harness uses: an async context manager with `reschedule`."""

        def __init__(self, when: float | None) -> None:
            self._when = when
            self._task: asyncio.Task | None = None
            self._handle: asyncio.Handle | None = None
            self._expired = False

        def reschedule(self, when: float | None) -> None:
            """Expire at event-loop time `when` (None: never)."""
            self._when = when
            if self._handle is not None:
                self._handle.cancel()
                self._handle = None
            if self._task is None or when is None or self._expired:
                return
            loop = asyncio.get_running_loop()
            self._handle = loop.call_at(when, self._expire) if when > loop.time() else loop.call_soon(self._expire)

        def expired(self) -> bool:
            return self._expired

        def _expire(self) -> None:
            self._handle = None
            self._expired = True
            assert self._task is not None
            self._task.cancel()

        async def __aenter__(self) -> "_Timeout":
            self._task = asyncio.current_task()
            self.reschedule(self._when)
            return self

        async def __aexit__(self, exc_type, exc, tb) -> None:
            if self._handle is not None:
                self._handle.cancel()
                self._handle = None
            if self._expired and exc_type is asyncio.CancelledError:
                raise TimeoutError from None

    def timeout(delay: float | None) -> _Timeout:
        """`asyncio.timeout(delay)`: a block that can be `reschedule`d; TimeoutError when it expires."""
        return _Timeout(None if delay is None else asyncio.get_running_loop().time() + delay)
