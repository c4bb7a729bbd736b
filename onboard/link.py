"""The link stage: a setpoint sent by the runtime until the flight controller echoes it back.

Targets that echo what they fly (PX4 and the built-in vehicle stream POSITION_TARGET_LOCAL_NED;
`Vehicle.setpoint_echo` yields it) let the runtime time the way down the link. The echo
carries positions only, so position setpoints are timed and velocity setpoints are not. The echo
is a stream at a fixed rate (10 Hz on PX4 by default), so a span is the true one-way latency plus
up to one stream period: an upper bound, exact to within that period. The lockstep vehicle has no
link and no echo.
"""

from __future__ import annotations

import asyncio
import time

from aio.tasks import cancel_and_wait
from onboard.timing import StageProfiler

# Positions are compared at this resolution (m): MAVLink carries float32, ~1e-6 relative.
MATCH_RESOLUTION = 1e-3
# Sent setpoints not echoed within this many seconds are forgotten (superseded before the stream saw them).
FORGET_AFTER_S = 2.0


def _key(position) -> tuple[int, int, int]:
    return tuple(int(round(v / MATCH_RESOLUTION)) for v in position)


class LinkTimer:
    """Pairs sent position setpoints with their echo and reports each pair as a "link" span."""

    def __init__(self, vehicle, profiler: StageProfiler) -> None:
        self._vehicle = vehicle
        self._profiler = profiler
        self._pending: dict[tuple[int, int, int], int] = {}
        self._task: asyncio.Task | None = None

    @staticmethod
    def supported(vehicle) -> bool:
        """Whether the target echoes setpoints (only MAVLink targets do)."""
        return vehicle.echoes_setpoints

    def start(self) -> None:
        self._task = asyncio.create_task(self._follow())

    def sent(self, position, t_ns: int | None = None) -> None:
        """Note a position setpoint just sent."""
        now = time.monotonic_ns() if t_ns is None else t_ns
        self._pending.setdefault(_key(position), now)
        if len(self._pending) > 64:
            horizon = now - int(FORGET_AFTER_S * 1e9)
            self._pending = {k: t for k, t in self._pending.items() if t >= horizon}

    async def _follow(self) -> None:
        async for t_ns, position in self._vehicle.setpoint_echo():
            if any(v != v for v in position):
                continue  # the echo of a velocity setpoint: no position to match
            sent = self._pending.pop(_key(position), None)
            if sent is not None:
                self._profiler.add("link", sent, t_ns)

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None
