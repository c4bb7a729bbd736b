"""The one API through which missions, planners, the monitor and tests talk to a flight controller.

Whatever the target (the built-in vehicle in real time or lockstep, PX4 SITL, a real PX4), the
harness holds a `Vehicle`: an async object with telemetry, actions, offboard setpoints, missions
and parameters. Positions are local NED metres relative to home; angles are radians unless a
name says deg. Durations (timeouts, sleeps, budgets) are in vehicle time, so the same mission
code is right at real time, at a speed factor and in lockstep.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, fields
from operator import attrgetter
from pathlib import Path
from typing import (
    Any,
    AsyncIterator,
    Callable,
    Mapping,
    Protocol,
    Sequence,
)

from missions.geo import GeoOrigin

# A ground station's heartbeat period (vehicle seconds; Vehicle.ground_station_heartbeats): twice PX4's
# 1 Hz, so that one datagram lost on a radio is far from COM_DL_LOSS_T.
GCS_HEARTBEAT_S = 0.5
# Wall seconds a connected vehicle's clock may stand still before the vehicle is lost (VehicleLost), the one
# bound on a trial that is not vehicle time: a vehicle whose clock has stopped (PX4 deadlocked in lockstep, a
# process stopped or hung) measures no budget, so only the wall clock can end the wait. Thirty seconds is
# far beyond a pause a live simulator takes on a loaded machine (tests/test_vehicle_time.py pauses PX4
# 3 x 0.8 s, the built-in vehicle drops stalls beyond 0.25 s) and the onboard agent's idle timeout is the
# same 30 s; a trial on a vehicle that is gone still ends within a minute. TargetOptions.vehicle_lost_s.
VEHICLE_LOST_S = 30.0


class VehicleError(RuntimeError):
    """A flight controller refused or failed a request; the message says what and why."""


class VehicleConnectionError(VehicleError):
    """Nothing answered on a connection string within its timeout."""


class VehicleLost(VehicleError):
    """The vehicle is gone: its clock stood still for the bound (VEHICLE_LOST_S), or the process the harness
    started for it died. Every wait on it ends with this from then on; the message says which and when."""


class CommandDenied(VehicleError):
    """The flight controller refused a command; `reason` is its own words when it gave any."""

    def __init__(self, command: str, result: str, reason: str = ""):
        self.command, self.result, self.reason = command, result, reason
        text = f"{command} refused by the flight controller ({result})"
        super().__init__(f"{text}: {reason}" if reason else text)


@dataclass(frozen=True)
class VehicleState:
    """One telemetry snapshot as the harness saw it."""

    t_ns: int  # harness monotonic clock when this snapshot was assembled
    north: float
    east: float
    down: float
    vn: float
    ve: float
    vd: float
    roll: float
    pitch: float
    yaw: float
    lat: float
    lon: float
    alt_amsl: float
    armed: bool
    in_air: bool
    flight_mode: str
    landed_state: str
    battery_pct: float
    # The vehicle's own clock (s) when the snapshot's position was stamped: the autopilot's time stamp as its
    # messages carry it (time_usec on MAVLink), simulated time in lockstep; NaN before the first. Durations
    # are measured on it, never on t_ns, which a paused or starved simulator does not slow (records.clock).
    t_vehicle_s: float = math.nan

    @property
    def altitude(self) -> float:
        """Height above home (m, up positive)."""
        return -self.down

    @property
    def speed(self) -> float:
        return math.sqrt(self.vn * self.vn + self.ve * self.ve + self.vd * self.vd)

    def distance_to(self, north: float, east: float, down: float) -> float:
        return math.sqrt((self.north - north) ** 2 + (self.east - east) ** 2 + (self.down - down) ** 2)

    def as_row(self) -> dict:
        """A flat record row for the telemetry table."""
        return dict(vars(self))  # dataclasses.asdict deep-copies: 0.2 ms a row, too slow for 50 Hz recording


_STATE_FIELDS = tuple(field.name for field in fields(VehicleState))
_new_object = object.__new__


def state_of(values: Sequence) -> VehicleState:
    """The VehicleState of all its fields' values, in order: equal to VehicleState(*values), in 1.2 µs instead
    of 2.8 (a frozen dataclass's __init__ sets each field through object.__setattr__), for the lockstep
    vehicle's snapshots, 30 to 100 a simulated second."""
    state = _new_object(VehicleState)
    state.__dict__.update(zip(_STATE_FIELDS, values))
    return state


_AFTER_T_NS = attrgetter(*_STATE_FIELDS[1:])  # t_ns is the first field


def restamped(state: VehicleState, t_ns: int) -> VehicleState:
    """`state` assembled at `t_ns`: dataclasses.replace(state, t_ns=t_ns) in a quarter of its 5 µs (it looks the
    fields up on every call), for every snapshot that crosses the lockstep vehicle's simulated link."""
    return state_of((t_ns, *_AFTER_T_NS(state)))


@dataclass(frozen=True)
class PreflightStatus:
    """What a pre-flight checklist needs to know about the flight controller."""

    autopilot: str  # e.g. "PX4 1.14.0"
    sensors_ok: bool  # gyro, accelerometer, magnetometer calibrated; local position estimate valid
    gps_fix_type: int  # GPS_FIX_TYPE: 3 is a 3D fix
    satellites: int
    battery_pct: float
    armable: bool


@dataclass(frozen=True)
class MissionWaypoint:
    """A waypoint as the bridge uploads it (local NED relative to home)."""

    north: float
    east: float
    down: float
    speed: float = math.nan  # m/s; NaN keeps the vehicle's cruise speed
    acceptance_radius: float = math.nan  # m; NaN uses the vehicle's default
    hold_s: float = 0.0
    yaw_deg: float = math.nan


@dataclass(frozen=True)
class MissionProgress:
    """Mission item `current` of `total` (MAVSDK's view: its own item indices)."""

    current: int
    total: int

    @property
    def finished(self) -> bool:
        return self.total > 0 and self.current >= self.total


Position = tuple[float, float, float]  # NED, m


class GroundTruth(Protocol):
    """A target's truth of where its vehicle is, beside the estimate its snapshots carry (bridges.truth has
    each target's)."""

    source: str  # what it is, for the record: "vehicle state", "PX4 SIH", "harness physics"

    def position(self, state: VehicleState) -> Position | None:
        """The true position, in the vehicle's local NED frame (m), as of snapshot `state`; None while unknown."""


class Vehicle(Protocol):
    """What every target offers. Implementations: MavsdkVehicle (any MAVLink target), LockstepVehicle
    (the built-in vehicle in simulated time). Callers use only this; nothing reaches into MAVSDK."""

    url: str
    speed_factor: float  # vehicle seconds per wall second (1 for hardware, inf for lockstep)
    journal: ParamJournal | None  # where params_changed keeps originals first (hardware); None: not kept
    echoes_setpoints: bool  # whether setpoint_echo yields (MAVLink targets stream the setpoint they fly)
    truth: GroundTruth | None  # where the vehicle truly is (bridges.truth), set by its target; None: the estimate alone
    lost: str | None  # why the vehicle is lost (VehicleLost), None while it is not
    lost_after_s: float  # wall seconds its clock may stand still before it is lost (inf: it cannot stand still alone)

    @property
    def home(self) -> GeoOrigin:
        """Where home is (WGS84, AMSL); VehicleError before the flight controller has told."""

    async def identity(self) -> str:
        """A stable name for this flight controller (its hardware uid where it has one): parameter
        journals are kept per flight controller under it."""

    @property
    def state(self) -> VehicleState:
        """The latest telemetry snapshot."""

    @property
    def clock_s(self) -> float:
        """The vehicle's own clock now (s): its latest time stamp, carried forward at the speed factor
        since it arrived; NaN before the first. Marks on it tell what an interval took in vehicle time
        even where a loaded machine kept a simulator below its speed factor (records.clock)."""

    def telemetry(self) -> AsyncIterator[VehicleState]:
        """Every new snapshot, at the position rate."""

    async def each_snapshot(self, callback: Callable[[VehicleState], bool | None]) -> None:
        """Hand every new snapshot to `callback` as it is published, until it returns True."""

    async def wait_armable(self, timeout: float = 30.0) -> None: ...

    async def preflight_status(self) -> PreflightStatus: ...

    async def release(self) -> None:
        """Stop commanding at once (a pilot has taken over): end setpoint streams, send nothing at all."""

    async def wait_until(self, predicate: Callable[[VehicleState], bool], timeout: float, what: str) -> VehicleState:
        """The first snapshot satisfying `predicate`; VehicleError naming `what` after `timeout` vehicle seconds."""

    async def collect(self, seconds: float) -> list[VehicleState]:
        """Every snapshot over the next `seconds` of vehicle time."""

    def deadline(self, seconds: float) -> AbstractAsyncContextManager:
        """A block that raises TimeoutError once `seconds` of vehicle time have passed."""

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds` of vehicle time."""

    async def arm(self) -> None: ...

    async def disarm(self) -> None: ...

    async def takeoff(self, altitude: float) -> None:
        """Climb to `altitude` metres above home and hold; returns once there."""

    def takeoff_params(self, altitude: float) -> dict[str, float]:
        """The parameters `takeoff(altitude)` sets (PX4's MIS_TAKEOFF_ALT), for a caller to hold from before arming
        (`params_changed`): then nothing stands between arming and the takeoff, which PX4 must see within
        COM_DISARM_PRFLT (10 s; 1.25 s of wall time at 8x) or it disarms. Empty where the takeoff command carries
        the altitude."""

    async def goto(self, north: float, east: float, down: float, yaw: float = math.nan) -> None:
        """Fly to a point and hold there; returns at once (watch `state` to know when it arrived)."""

    async def land(self) -> None: ...

    async def return_to_launch(self) -> None: ...

    async def hold(self) -> None: ...

    async def start_offboard(self, rate_hz: float = 20.0) -> None:
        """Begin streaming setpoints (the current position first), then switch to offboard."""

    async def set_position_ned(self, north: float, east: float, down: float, yaw: float = math.nan) -> None: ...

    async def set_velocity_ned(self, vn: float, ve: float, vd: float, yaw: float = math.nan) -> None: ...

    async def set_attitude(self, roll: float, pitch: float, yaw: float, thrust: float) -> None:
        """Attitude setpoint (rad) with normalized collective thrust 0..1 (SET_ATTITUDE_TARGET)."""

    async def stop_offboard(self) -> None: ...

    async def upload_mission(self, waypoints: Sequence[MissionWaypoint]) -> None: ...

    async def start_mission(self) -> None: ...

    def mission_progress(self) -> AsyncIterator[MissionProgress]: ...

    def mission_items_reached(self) -> AsyncIterator[int]:
        """Each mission item the flight controller reports reached (MAVLink item indices), once."""

    def setpoint_echo(self) -> AsyncIterator[tuple[int, tuple[float, float, float]]]:
        """(harness ns, NED position) of each setpoint the flight controller reports flying; nothing
        where `echoes_setpoints` is False."""

    def messages(self, name: str) -> AsyncIterator[dict[str, Any]]:
        """Every MAVLink message `name` from the flight controller, as its fields; VehicleError where
        there is no MAVLink (lockstep)."""

    def mavlink_frames(self) -> AsyncIterator[list[tuple[int, bytes]]]:
        """Every MAVLink message the harness receives from the flight controller from now on, in order, as
        (µs since the Unix epoch, MAVLink frame): a telemetry log's records (hil.recording writes them as
        telemetry.tlog), handed over in batches of as many as have arrived. Over MAVSDK they are the
        frames off the wire, forwarded by MAVSDK; in lockstep they are what the built-in vehicle would send,
        on its simulated clock (each implementation says how)."""

    async def inject_failure(self, unit: int, failure_type: int, instance: int) -> str:
        """MAV_CMD_INJECT_FAILURE (FAILURE_UNIT_*, FAILURE_TYPE_*, instance; PX4 needs SYS_FAILURE_EN 1).
        The answer as MAVSDK's failure plugin names it: SUCCESS, DENIED, DISABLED, UNSUPPORTED, TIMEOUT..."""

    async def inject_sim_fault(self, kind: int, instance: int, severity: float,
                               wind: tuple[float, float, float]) -> str:
        """A fault in the built-in vehicle's simulation (`physics.faults.SimFault`; severity 0 clears),
        answered as `inject_failure` is; PX4 answers UNSUPPORTED."""

    async def ground_station_heartbeats(self) -> None:
        """Beat as a ground station (HEARTBEAT, MAV_TYPE_GCS) twice a vehicle second until cancelled: while it
        runs, the flight controller's data-link-loss failsafe (NAV_DLL_ACT after COM_DL_LOSS_T) watches this
        harness, and brings the vehicle down by itself if the harness falls silent."""
        ...

    async def download_newest_log(self, dest: Path) -> Path | None:
        """The flight controller's newest flight log (ULog), downloaded into `dest`; None where it keeps none;
        VehicleError saying why when it keeps one that does not come."""

    async def get_param(self, name: str) -> float: ...

    async def set_param(self, name: str, value: float) -> None: ...

    def params_changed(self, changes: Mapping[str, float]) -> AbstractAsyncContextManager[dict[str, float]]:
        """Set parameters for the duration of a block and restore the originals however it ends."""

    async def close(self) -> None:
        """Stop streams and tasks; leave the vehicle disarmed or landing, never flying uncommanded."""


class ParamJournal(Protocol):
    """Somewhere durable to keep original parameter values while they are changed (hil.param_journal)."""

    def record(self, name: str, original: float) -> None:
        """Keep `original` (on disk, before the change is made); a name already kept keeps its first value."""

    def forget(self, name: str) -> None:
        """The parameter is back to its original: stop keeping it."""


class VehicleBase:
    """Telemetry fan-out, waiting and parameter restore: the parts every Vehicle shares.

    A subclass publishes snapshots with `_publish` and implements `deadline`, `get_param` and
    `set_param`; everything here is built on those.
    """

    url: str

    def __init__(self) -> None:
        # One future per waiting consumer, woken by the next snapshot: a consumer cancelled while it waits
        # cancels only its own (a Condition cost every consumer a lock round trip per snapshot).
        self._waiters: list[asyncio.Future] = []
        self._observers: list[Callable[[VehicleState], None]] = []
        self._sample_count = 0
        # Where params_changed writes originals before changing them (hil.param_journal.ParamJournal
        # for hardware); None for simulators that die with the run anyway.
        self.journal: ParamJournal | None = None
        # What each open params_changed block holds a parameter at: a block inside one that holds the same value
        # changes nothing (no round trip: a takeoff right after arming must not outlast COM_DISARM_PRFLT), and the
        # journal keeps a parameter an outer block still holds changed.
        self._held_params: dict[str, float] = {}
        self.truth: GroundTruth | None = None  # a target that has one sets it (bridges.truth.truth_of)
        self.lost: str | None = None
        # A vehicle in the harness's own process (lockstep) has no clock of its own to stop; one over a link
        # sets its bound (MavsdkVehicle).
        self.lost_after_s = math.inf
        self._on_loss: set[Callable[[], None]] = set()  # waits that end when the vehicle is lost

    def _lose(self, reason: str) -> None:
        """The vehicle is lost: every wait on its telemetry and clock ends with VehicleLost(`reason`), now and
        from now on."""
        if self.lost is not None:
            return
        self.lost = reason
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_exception(VehicleLost(reason))
        for end in list(self._on_loss):
            end()

    def _raise_if_lost(self) -> None:
        if self.lost is not None:
            raise VehicleLost(self.lost)

    def _publish(self, state: VehicleState) -> None:
        self._last_published = state
        self._sample_count += 1
        for observe in self._observers:  # observers come and go only in their own tasks, never during this loop
            observe(state)
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def telemetry(self) -> AsyncIterator[VehicleState]:
        """Every new snapshot, in order, at the target's position rate."""
        seen = self._sample_count
        loop = asyncio.get_running_loop()  # looked up once: a lockstep reader comes here 30-100 times a simulated second
        while True:
            self._raise_if_lost()
            if self._sample_count == seen:
                waiter = loop.create_future()
                self._waiters.append(waiter)
                await waiter
            seen = self._sample_count
            yield self._last_published

    async def each_snapshot(self, callback: Callable[[VehicleState], bool | None]) -> None:
        """Hand every new snapshot to `callback` as it is published, until it returns True; an exception it
        raises is raised here. Runs until then or until cancelled.

        For consumers that only look at each snapshot (record it, judge it): `callback` runs inside the
        publisher, so no task wakes per snapshot (at 100 Hz in lockstep, the judge and the recorder as
        `telemetry()` readers cost a few percent of a trial), and none is missed, however busy the loop.
        """
        self._raise_if_lost()
        done = asyncio.get_running_loop().create_future()

        def lost() -> None:
            if not done.done():
                done.set_exception(VehicleLost(self.lost))

        def observe(state: VehicleState) -> None:
            if done.done():
                return
            try:
                if callback(state):
                    done.set_result(None)
            except Exception as exc:  # the consumer's error, raised in the consumer, not in the publisher
                done.set_exception(exc)

        self._observers.append(observe)
        self._on_loss.add(lost)
        try:
            await done
        finally:
            self._observers.remove(observe)
            self._on_loss.discard(lost)

    async def collect(self, seconds: float) -> list[VehicleState]:
        """Every snapshot over the next `seconds` of vehicle time (a hover to judge, a step response)."""
        samples: list[VehicleState] = []
        with contextlib.suppress(TimeoutError):
            async with self.deadline(seconds):
                async for state in self.telemetry():
                    samples.append(state)
        return samples

    def takeoff_params(self, altitude: float) -> dict[str, float]:
        return {}

    async def wait_until(self, predicate: Callable[[VehicleState], bool], timeout: float, what: str) -> VehicleState:
        """The first snapshot satisfying `predicate`; VehicleError naming `what` after `timeout` vehicle seconds."""
        try:
            async with self.deadline(timeout):
                async for state in self.telemetry():
                    if predicate(state):
                        return state
        except TimeoutError:
            s = self.state
            raise VehicleError(f"{self.url}: timed out after {timeout:.1f} s waiting for {what} (last state: mode "
                               f"{s.flight_mode}, armed {s.armed}, altitude {s.altitude:.2f} m)") from None
        raise VehicleError(f"{self.url}: telemetry ended while waiting for {what}")

    @contextlib.asynccontextmanager
    async def params_changed(self, changes: Mapping[str, float]):
        """Set parameters for a block; the originals come back on exit, on error and on cancellation. A parameter
        an enclosing block already holds at the same value is left alone (and is not among the originals)."""
        originals: dict[str, float] = {}
        outer: dict[str, float] = {}  # what enclosing blocks held the parameters this one changes at
        try:
            for name, value in changes.items():
                if self._held_params.get(name) == value:
                    continue
                originals[name] = await self.get_param(name)
                if self.journal is not None:
                    self.journal.record(name, originals[name])  # on disk before the change
                if name in self._held_params:
                    outer[name] = self._held_params[name]
                self._held_params[name] = value
                await self.set_param(name, value)
            yield dict(originals)
        finally:
            for name in originals:
                if name in outer:
                    self._held_params[name] = outer[name]
                else:
                    self._held_params.pop(name, None)
            # Shielded so that a cancelled trial still restores the flight controller; not even the shield's
            # loop turns when nothing was changed, during which a lockstep vehicle would fly on.
            if originals:
                await asyncio.shield(self._restore(originals, still_changed=set(outer)))

    # PX4 ends a takeoff up to NAV_MC_ALT_RAD (0.8 m) short, still climbing, and holds where the climb
    # stops; the harness promises the altitude it was asked for, so once the climb has stopped it
    # finishes it with a reposition.
    TAKEOFF_TOLERANCE_M = 0.15

    async def _settle_at_altitude(self, altitude: float, timeout: float) -> None:
        s = await self.wait_until(lambda st: abs(st.vd) < 0.2, timeout, "the climb to stop after takeoff")
        if abs(s.altitude - altitude) > self.TAKEOFF_TOLERANCE_M:
            await self.goto(s.north, s.east, -altitude, s.yaw)
            await self.wait_until(lambda st: abs(st.altitude - altitude) <= self.TAKEOFF_TOLERANCE_M and abs(st.vd) < 0.2,
                                  timeout, f"hold at {altitude:.1f} m after takeoff")

    async def _restore(self, originals: Mapping[str, float], still_changed: set[str]) -> None:
        """Put every original back (one failing does not stop the others); the journal lets go of a
        parameter only once a read-back shows it restored, so a failed restore stays journaled, and never of one
        an enclosing block has `still_changed` from the flight controller's own value."""
        failed: list[Exception] = []
        for name, value in reversed(list(originals.items())):
            try:
                await self.set_param(name, value)
                # PX4 stores float32: compare at that precision.
                if self.journal is not None and name not in still_changed and math.isclose(
                        await self.get_param(name), value, rel_tol=1e-6, abs_tol=1e-9):
                    self.journal.forget(name)
            except Exception as error:  # noqa: BLE001 - the others are still put back; the first is raised
                failed.append(error)
        if failed:
            raise failed[0]
