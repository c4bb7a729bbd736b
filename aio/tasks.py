"""Stopping a helper task without hiding a cancellation of the task that stops it."""

from __future__ import annotations

import asyncio


async def cancel_and_wait(task: asyncio.Future) -> None:
    """Cancel `task` and wait until it has finished; an exception it ended with other than its
    cancellation is raised here.

    The idiom ``task.cancel(); with suppress(CancelledError): await task`` also swallows a cancellation
    of the caller that arrives while it waits, and a caller that then goes on to wait for a simulator
    that is being shut down waits forever (a campaign worker stopped by SIGTERM hung that way in CI).
    Here the caller's own cancellation propagates.
    """
    task.cancel()
    await asyncio.wait([task])
    if not task.cancelled():
        task.result()
