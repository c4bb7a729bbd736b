"""Where a simulated vehicle truly is, beside the estimate its telemetry reports: what the judge judges on.

A `Vehicle`'s snapshots are what the flight controller reports: on PX4, EKF2's estimate, which on SIH's
ground truth overshoots a 5 m step by 1.15 m where the estimate shows 0.3 m (the fidelity suite's figures),
so a tree can be hit in truth and missed in the estimate, or the reverse. Each target says what truth it has
(`Vehicle.truth`, a `GroundTruth`, or None where nothing but the estimate exists: hardware):

- the built-in vehicle: its state is the truth, the estimate is the truth (`StateIsTruth`; in lockstep
  across a link profile, the state now rather than the snapshot the link delivered late);
- PX4 SIH: HIL_STATE_QUATERNION, which SIH streams when asked (`SihTruth`);
- PX4 on the harness's physics (SITL or a HITL board): the physics' own state (`AlignedTruth` on it).

A simulator's truth has a frame of its own (SIH: WGS84; the physics: NED from where it started), so it is
put in the estimate's local frame by the offset between the two while the vehicle is disarmed on the ground,
frozen once it arms: whatever the estimate gets wrong in flight stays in the difference.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator, Callable

from aio.tasks import cancel_and_wait
from bridges.vehicle import GroundTruth, Position, Vehicle, VehicleLost, VehicleState
from missions.geo import GeoOrigin

# The simulator's ground truth PX4 SIH streams on request: its message id and rate (vehicle Hz) for the fidelity
# suite's traces.
HIL_STATE_QUATERNION = 115
TRUTH_HZ = 50.0
# Its rate for the judge, and how far (vehicle s) a truth is carried forward on its own velocity to the moment it is
# read. Each message crosses MAVSDK's MavlinkDirect as JSON into a Python callback, 200 a wall second at 50 Hz and
# 4x, on a harness whose callbacks already fall behind on a loaded machine; at 10 Hz a truth is up to 0.1 s old,
# 0.5 m at 5 m/s, and carried forward it is off by its acceleration's 0.5 a t^2, centimetres.
JUDGE_TRUTH_HZ = 10.0
CARRY_FORWARD_S = 0.25
SET_MESSAGE_INTERVAL = 511  # MAV_CMD


class StateIsTruth:
    """The built-in vehicle over MAVLink: it reports its exact state, so the estimate is the truth."""

    source = "vehicle state"

    def position(self, state: VehicleState) -> Position | None:
        return state.north, state.east, state.down


class AlignedTruth:
    """A simulator's truth (`read`: its latest raw NED position, None before the first) in the estimate's local
    frame: the offset between the two is taken from each disarmed snapshot seen (`observe`), and frozen from
    the first armed one on."""

    def __init__(self, source: str, read: Callable[[], Position | None]) -> None:
        self.source = source
        self._read = read
        self._offset: Position | None = None

    def observe(self, state: VehicleState) -> None:
        if state.armed:
            return
        raw = self._read()
        if raw is not None and all(math.isfinite(v) for v in (state.north, state.east, state.down)):
            self._offset = (state.north - raw[0], state.east - raw[1], state.down - raw[2])

    def position(self, state: VehicleState) -> Position | None:
        raw, offset = self._read(), self._offset
        if raw is None or offset is None:
            return None
        return raw[0] + offset[0], raw[1] + offset[1], raw[2] + offset[2]


SihState = tuple[float, float, float, float, float, float]  # NED position (m) and velocity (m/s)


async def sih_states(messages: AsyncIterator[dict]) -> AsyncIterator[SihState]:
    """Each HIL_STATE_QUATERNION's position and velocity, NED from where the first one put the vehicle."""
    origin = None
    async for fields in messages:
        lat, lon, alt = fields["lat"] * 1e-7, fields["lon"] * 1e-7, fields["alt"] * 1e-3
        origin = origin or GeoOrigin(lat, lon, alt)
        yield (*origin.to_local(lat, lon, alt), fields["vx"] / 100.0, fields["vy"] / 100.0, fields["vz"] / 100.0)


class SihTruth(AlignedTruth):
    """PX4 SIH's ground truth: HIL_STATE_QUATERNION (`follow` keeps the latest, with the vehicle's `clock` when
    it came), carried forward on its own velocity to the moment it is read (up to CARRY_FORWARD_S; older, it is
    unknown), in the estimate's frame. SIH stamps none of them (time_usec 0)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        super().__init__("PX4 SIH", self._now)
        self._clock = clock
        self._latest: tuple[float, SihState] | None = None

    async def follow(self, messages: AsyncIterator[dict]) -> None:
        async for state in sih_states(messages):
            self._latest = (self._clock(), state)

    def _now(self) -> Position | None:
        if self._latest is None:
            return None
        at, (n, e, d, vn, ve, vd) = self._latest
        age = max(self._clock() - at, 0.0)
        if not math.isfinite(age):  # no vehicle clock yet: as it came
            age = 0.0
        if age > CARRY_FORWARD_S:
            # Stale: a harness that fell behind got its telemetry and SIH's messages in late batches, and a truth
            # held where it last came stood still while the estimate flew on 12 m (the judge cleared a trunk the
            # vehicle went through). Unknown instead, so the snapshot is judged on the estimate and counted.
            return None
        return n + vn * age, e + ve * age, d + vd * age


@contextlib.asynccontextmanager
async def truth_of(vehicle: Vehicle, truth: GroundTruth | None) -> AsyncIterator[GroundTruth | None]:
    """`vehicle.truth` is `truth` for the block; an `AlignedTruth` sees every snapshot (its alignment) and a
    `SihTruth` follows SIH's messages, asked for first. Nothing waits for the first: until it is known (and the
    frame learnt on the ground) a snapshot has no truth and the judge counts it judged on the estimate
    (`hil.monitor.Judge.on_estimate`); the record's truth table has no row for it."""
    tasks: list[asyncio.Task] = []
    try:
        if isinstance(truth, SihTruth):
            await vehicle.command_long(SET_MESSAGE_INTERVAL, HIL_STATE_QUATERNION, 1e6 / JUDGE_TRUTH_HZ)
            tasks.append(asyncio.create_task(truth.follow(vehicle.messages("HIL_STATE_QUATERNION"))))
        if isinstance(truth, AlignedTruth):
            tasks.append(asyncio.create_task(vehicle.each_snapshot(truth.observe)))
        vehicle.truth = truth
        yield truth
    finally:
        vehicle.truth = None
        for task in tasks:
            with contextlib.suppress(VehicleLost):  # a lost vehicle has no more snapshots to align: the trial says so
                await cancel_and_wait(task)
