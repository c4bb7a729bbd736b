"""Stopping a helper task (aio.tasks.cancel_and_wait), with real asyncio tasks."""

from __future__ import annotations

import asyncio

import pytest

from aio.tasks import cancel_and_wait


async def test_a_caller_cancelled_while_it_stops_a_helper_stays_cancelled():
    # The idiom this replaces (cancel, then await under suppress(CancelledError)) lets the caller go on
    # after its own cancellation: a campaign worker went on to wait for a stopped simulator, forever.
    release = asyncio.Event()

    async def slow_to_stop() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            await release.wait()  # cleaning up
            raise

    helper = asyncio.create_task(slow_to_stop())
    went_on = []

    async def caller() -> None:
        await cancel_and_wait(helper)
        went_on.append(True)

    await asyncio.sleep(0)
    stopping = asyncio.create_task(caller())
    await asyncio.sleep(0)
    stopping.cancel()
    await asyncio.sleep(0)
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await stopping
    assert not went_on
    await asyncio.wait([helper])
    assert helper.cancelled()


async def test_a_helper_that_fails_as_it_stops_raises_its_error_and_one_that_finished_is_left_alone():
    async def fails_when_stopped() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            raise ValueError("cleanup failed") from None

    helper = asyncio.create_task(fails_when_stopped())
    await asyncio.sleep(0)
    with pytest.raises(ValueError, match="cleanup failed"):
        await cancel_and_wait(helper)

    async def done() -> int:
        return 7

    finished = asyncio.create_task(done())
    await asyncio.sleep(0)
    await cancel_and_wait(finished)
    assert finished.result() == 7
