"""The `Vehicle` over MAVSDK 4 (the native binding), for any MAVLink flight controller.

MAVSDK does the protocols (commands with retries, mission transfer, parameters); this module adds
what a harness needs on top: one telemetry snapshot assembled from MAVSDK's streams, setpoint
streaming at a fixed rate, refusals that carry the autopilot's own reason (its STATUSTEXT),
parameters restored however a block ends, and clean-up that leaves no task behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import math
import socket
import struct
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Coroutine, Sequence

from mavsdk import ForwardingOption
from mavsdk.asyncio import ComponentType, Configuration, Mavsdk, MavsdkConnectionError
from mavsdk.asyncio.plugins.action import ActionAsync
from mavsdk.asyncio.plugins.events import EventsAsync
from mavsdk.asyncio.plugins.failure import FailureAsync
from mavsdk.asyncio.plugins.info import InfoAsync
from mavsdk.asyncio.plugins.log_files import LogFilesAsync
from mavsdk.asyncio.plugins.mavlink_direct import MavlinkDirectAsync
from mavsdk.asyncio.plugins.mission import MissionAsync
from mavsdk.asyncio.plugins.offboard import OffboardAsync
from mavsdk.asyncio.plugins.param import ParamAsync
from mavsdk.asyncio.plugins.telemetry import TelemetryAsync
from mavsdk.exceptions import MavsdkError
from mavsdk.logging import LogLevel, log_subscribe
from mavsdk.plugins.action import ActionError
from mavsdk.plugins.failure import FailureError, FailureType, FailureUnit
from mavsdk.plugins.log_files import LogFilesError, LogFilesResult
from mavsdk.plugins.mavlink_direct import (
    MavlinkDirect,
    MavlinkDirectError,
    MavlinkMessage,
)
from mavsdk.plugins.mission import MissionItem, MissionPlan
from mavsdk.plugins.offboard import (
    Attitude,
    OffboardError,
    PositionNedYaw,
    VelocityNedYaw,
)
from mavsdk.plugins.param import ParamError, ParamResult
from mavsdk.plugins.telemetry import Telemetry
from pymavlink.dialects.v20 import common as mavlink

from aio.tasks import cancel_and_wait
from bridges.failure import failure_result
from bridges.mavlink_frames import whole_frame
from bridges.timeout import timeout
from bridges.transport import loopback_by_default
from bridges.vehicle import (
    GCS_HEARTBEAT_S,
    VEHICLE_LOST_S,
    CommandDenied,
    MissionProgress,
    MissionWaypoint,
    PreflightStatus,
    VehicleBase,
    VehicleConnectionError,
    VehicleError,
    VehicleLost,
    VehicleState,
)
from missions.geo import GeoOrigin
from physics.faults import SIM_FAULT_COMMAND
from px4.process import ALIVE_POLL_S, LAST_WORDS_S, START_CAP_S, ChildProcess

NAN = float("nan")
# Vehicle seconds a log download may go without any part of it arriving before it is given up.
LOG_STALL_S = 15.0
# Wall seconds MAVSDK gets to cancel a download and to drop its log files plugin (both take milliseconds).
LOG_PLUGIN_CLOSE_S = 5.0
# A refusal's reason arrives as a STATUSTEXT just before the ack; texts older than this are not it.
REASON_WINDOW_S = 2.0
# PX4 sends HEARTBEAT at 1 Hz, so an accepted arm shows in telemetry within about a second; a harness starved
# of CPU (MAVSDK drops callbacks it cannot deliver in time) may miss a few of them.
ARM_CONFIRM_S = 6.0
# Wall seconds past its estimate that a vehicle-time deadline waits for the vehicle's clock before it
# trusts the wall clock alone (the stamps stopped: link lost).
CLOCK_GRACE_S = 1.0
# A grace timer firing this late (wall s) means the harness itself was held, not the link (_WallGrace); its
# queued stamps get HELD_RECHECKS more looks, HELD_RECHECK_S apart, before the block ends. Beside two CPU
# burners the harness was held 1.2-1.8 s at a time (ci50), past the grace of a 3 vehicle s wait at 4x.
HELD_S = 0.1
HELD_RECHECKS = 3
HELD_RECHECK_S = 0.1
# The most one look at the vehicle's clock adds to how long it has stood still (wall s): a harness that was itself
# held (a blocked event loop, a stopped or starved process) has the vehicle's stamps waiting in its socket, and
# must not take its own pause for the vehicle's.
STILL_STEP_MAX_S = 1.0
# Wall seconds closing waits for requests still with MAVSDK (_Requests): against a stopped PX4 it resent a
# parameter five times and gave up after 3.0 s.
REQUESTS_WAIT_S = 10.0
# Wall seconds between looks at ATTITUDE's stamp, the vehicle's clock while LOCAL_POSITION_NED is silent (_FastStreams).
LONE_CLOCK_POLL_S = 0.05
# Vehicle seconds a time stamp must fall behind the vehicle's clock to be taken for a rebooted vehicle's.
REBOOT_S = 1.0
# Vehicle seconds: how long a mission start may be repeated while PX4 still checks a new upload,
# how long an accepted start gets to show as MISSION mode (heartbeats come at 1 Hz), and the pause
# between tries.
MISSION_START_WINDOW_S = 3.0
MISSION_MODE_CONFIRM_S = 1.5
MISSION_START_RETRY_S = 0.1
# Vehicle seconds a mode change whose acknowledgement MAVSDK gave up on gets to show in HEARTBEAT (1 Hz).
MODE_CONFIRM_S = 2.5
# The telemetry-log tap (MavsdkVehicle.mavlink_frames): read every TAP_POLL_S wall seconds, at most
# TAP_MAX_BATCH frames a read, from a socket buffer of TAP_BUFFER_BYTES (~2 s of a vehicle at 4x).
TAP_POLL_S = 0.02
TAP_MAX_BATCH = 10_000
TAP_BUFFER_BYTES = 4 << 20
# Linux's SO_TIMESTAMPNS (asm-generic/socket.h, the same on x86_64 and aarch64; Python's socket module
# does not name it): the kernel stamps each datagram on arrival, as a struct timespec.
_SO_TIMESTAMPNS = 35
_TIMESPEC = struct.Struct("@qq")
_ANCILLARY_SIZE = socket.CMSG_SPACE(_TIMESPEC.size)
_MAX_FRAME = 280  # MAVLink 2: 10-byte header, 255-byte payload, CRC, 13-byte signature


_LOG = logging.getLogger("mavsdk")  # MAVSDK's own log lines, routed (route_mavsdk_logs)
_OWN_LOG = logging.getLogger(__name__)  # this module's errors
_LOG_LEVELS = {LogLevel.DEBUG: logging.DEBUG, LogLevel.INFO: logging.INFO, LogLevel.WARN: logging.WARNING,
               LogLevel.ERROR: logging.ERROR}
_logs_routed = False


def route_mavsdk_logs() -> None:
    """Send MAVSDK's own log (C++ side, otherwise printed to stderr) to the Python logger "mavsdk"."""
    global _logs_routed
    if not _logs_routed:
        log_subscribe(lambda level, message, file, line: (_LOG.log(_LOG_LEVELS.get(level, logging.INFO), message), True)[1])
        _logs_routed = True


# VehicleState's fields from LOCAL_POSITION_NED's.
_POSITION_FIELDS = (("north", "x"), ("east", "y"), ("down", "z"), ("vn", "vx"), ("ve", "vy"), ("vd", "vz"))


def _name(enum_value) -> str:
    return getattr(enum_value, "name", str(enum_value))


@dataclass
class _VehicleClock:
    """The vehicle's latest time stamp (vehicle seconds) and when it arrived (event-loop time)."""

    vehicle_s: float | None = None
    at: float = 0.0
    watchers: set = field(default_factory=set)  # called on every new stamp


class _WallGrace:
    """Ends a vehicle-time block when the wall clock says its stamp is overdue (CLOCK_GRACE_S past the
    estimate), judged on this process's own turns. A timer that fires more than HELD_S late found a harness
    that was itself held (a collection, a slow fsync of a record, a starved process) while the vehicle's
    stamps waited in MAVSDK's queue behind this very callback: the stamps get their turn first (up to
    HELD_RECHECKS looks HELD_RECHECK_S apart), so the harness does not take its own pause for a lost link."""

    def __init__(self, block) -> None:
        self._block = block
        self._loop = asyncio.get_running_loop()
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0
        self._rechecks = 0

    def arm(self, when: float) -> None:
        """Expire the block at event-loop time `when` unless re-armed first (a stamp came)."""
        self.cancel()
        self._rechecks = 0
        self._set(when)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _set(self, when: float) -> None:
        self._due = when
        self._handle = self._loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._handle = None
        if self._block.expired():
            return
        now = self._loop.time()
        if now - self._due > HELD_S and self._rechecks < HELD_RECHECKS:
            self._rechecks += 1
            self._set(now + HELD_RECHECK_S)
            return
        self._block.reschedule(now)


class MavsdkVehicle(VehicleBase):
    """A connected flight controller. Create with `await connect(url)`; close with `await close()`.

    `speed_factor` is how much faster than real time the target runs (a simulator's speed factor;
    1 for hardware): vehicle-time durations are divided by it to get wall-clock ones.
    """

    echoes_setpoints = True  # PX4 and the built-in vehicle stream POSITION_TARGET_LOCAL_NED

    def __init__(self, connection: MavsdkConnection, speed_factor: float = 1.0, owns_connection: bool = True,
                 lost_after_s: float = VEHICLE_LOST_S, process: ChildProcess | None = None):
        """A Vehicle over `connection`; closing it closes the connection only if `owns_connection`
        (a connection shared by a session's tests stays open, and only this Vehicle's plugins end).

        It is lost (`_watch_alive`) once its clock has stood still for `lost_after_s` wall seconds, or at
        once when `process` (the flight controller's, if the harness started it) dies."""
        super().__init__()
        self.lost_after_s = lost_after_s
        self._process = process
        self.url = connection.url
        self.speed_factor = speed_factor
        self._connection = connection
        self._owns_connection = owns_connection
        system = self._system = connection.system
        self._requests = _Requests()
        track = self._requests.plugin
        self.action = track(ActionAsync(system))
        self.telemetry_plugin = track(TelemetryAsync(system))
        self.offboard = track(OffboardAsync(system))
        self.mission = track(MissionAsync(system))
        self.param = track(ParamAsync(system))
        self.mavlink = track(MavlinkDirectAsync(system))
        self.info = track(InfoAsync(system))
        self.events = track(EventsAsync(system))
        self._health_report = None
        self._state = VehicleState(0, NAN, NAN, NAN, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, NAN, NAN, NAN, False, False,
                                   "UNKNOWN", "UNKNOWN", NAN)
        self._status_texts: deque[tuple[float, str]] = deque(maxlen=32)
        self._home: GeoOrigin | None = None
        self._armable = False
        self._tasks: list[asyncio.Task] = []
        self._param_is_int: dict[str, bool] = {}
        self._offboard_task: asyncio.Task | None = None
        self._offboard_setpoint: Callable[[], Awaitable[None]] | None = None
        self._closed = False
        self._clock = _VehicleClock()

    @property
    def system(self):
        """The MAVSDK System, for plugins this Vehicle does not wrap (failure injection, FTP, log files, follow-me)."""
        return self._system

    # ------------------------------------------------------------------ telemetry
    def _start_streams(self) -> None:
        t = self.telemetry_plugin
        self._fast = _FastStreams(self._system, self._on_local_position)
        self._spawn(self._keep_clock())
        self._spawn(self._follow(t.subscribe_armed(), lambda v: self._update(armed=bool(v))))
        self._spawn(self._follow(t.subscribe_in_air(), lambda v: self._update(in_air=bool(v))))
        self._spawn(self._follow(t.subscribe_flight_mode(), lambda m: self._update(flight_mode=_name(m))))
        self._spawn(self._follow(t.subscribe_landed_state(), lambda s: self._update(landed_state=_name(s))))
        self._spawn(self._follow(t.subscribe_battery(), lambda b: self._update(battery_pct=b.remaining_percent)))
        # What the autopilot says: STATUSTEXT, and PX4's events (its only voice on the API link, where
        # PX4 >= 1.14 sends no STATUSTEXT at all).
        self._spawn(self._follow(t.subscribe_status_text(), lambda s: self._status_texts.append((time.monotonic(), s.text))))
        self._spawn(self._follow(self.events.subscribe_events(),
                                 lambda e: self._status_texts.append((time.monotonic(), e.message))))
        self._spawn(self._follow(t.subscribe_health(), self._on_health))
        self._spawn(self._follow(t.subscribe_home(), self._on_home))
        self._spawn(self._follow(self.events.subscribe_health_and_arming_checks(),
                                 lambda report: setattr(self, "_health_report", report)))
        self._spawn(self._watch_alive())

    async def _watch_alive(self) -> None:
        """Lose the vehicle (`_lose`) when its process dies, or when its clock, once it has told it, stands
        still for `lost_after_s` wall seconds (bridges.vehicle.VEHICLE_LOST_S says why wall time)."""
        loop = asyncio.get_running_loop()
        clock = self._clock
        seen, still_s, looked = clock.vehicle_s, 0.0, loop.time()
        while True:
            await asyncio.sleep(ALIVE_POLL_S)
            if self._process is not None and self._process.proc.poll() is not None:
                await asyncio.sleep(LAST_WORDS_S)
                self._lose(f"vehicle lost: {self._process.failure()}")
                return
            now = loop.time()
            if clock.vehicle_s != seen:
                seen, still_s = clock.vehicle_s, 0.0
            elif seen is not None:
                still_s += min(now - looked, STILL_STEP_MAX_S)
            looked = now
            if still_s >= self.lost_after_s:
                self._lose(f"vehicle lost: its clock stood at {seen:.2f} s for {self.lost_after_s:g} wall seconds "
                           f"(the bound on a vehicle that stands still, TargetOptions.vehicle_lost_s; last position "
                           f"{self._state.north:.1f}, {self._state.east:.1f}, {self._state.down:.1f} m NED, mode "
                           f"{self._state.flight_mode}, armed {self._state.armed})")
                return

    def _spawn(self, coro) -> None:
        self._tasks.append(asyncio.create_task(coro))

    async def _follow(self, stream, handle) -> None:
        async for value in stream:
            # A handler's error costs one message, not the stream: a stream that ended here would leave
            # its part of the state (or the vehicle's clock) frozen for the rest of the connection.
            try:
                pending = handle(value)
                if pending is not None:
                    await pending
            except Exception:
                _OWN_LOG.exception("%s: handling %s failed", self.url, type(value).__name__)

    def _update(self, **fields) -> None:
        self._state = replace(self._state, **fields)

    async def _keep_clock(self) -> None:
        """While LOCAL_POSITION_NED is silent (no position estimate yet), move the vehicle's clock on ATTITUDE's stamps,
        looked at every LONE_CLOCK_POLL_S."""
        fast = self._fast
        while True:
            await asyncio.sleep(LONE_CLOCK_POLL_S)
            if fast.local_seen():
                continue
            try:
                stamp_s = fast.attitude_stamp_s()
                if stamp_s is not None:
                    self._state = replace(self._state, **self._newest_attitude_and_position())
                    self._tick(stamp_s)
            except Exception:  # as `_follow`: one look lost, not the clock
                _OWN_LOG.exception("%s: handling ATTITUDE failed", self.url)

    def _newest_attitude_and_position(self) -> dict[str, float]:
        (roll, pitch, yaw), (lat, lon, alt_amsl) = self._fast.attitude(), self._fast.position()
        return {"roll": roll, "pitch": pitch, "yaw": yaw, "lat": lat, "lon": lon, "alt_amsl": alt_amsl}

    def _tick(self, stamp_s: float) -> None:
        """A new time stamp of the vehicle's: its clock moves on. Two streams feed it, a stamp apart: one a little
        behind the clock is the other's; one far behind is a rebooted vehicle's new clock."""
        clock = self._clock
        if clock.vehicle_s is not None and clock.vehicle_s - REBOOT_S < stamp_s <= clock.vehicle_s:
            return
        clock.vehicle_s, clock.at = stamp_s, asyncio.get_running_loop().time()
        for follow in list(clock.watchers):
            follow()

    def _on_local_position(self, f: dict[str, Any]) -> None:
        if self._fast.closed:  # handed over just before they closed: MAVSDK's telemetry plugin is gone
            return
        try:
            stamp = f["time_boot_ms"] / 1e3
            # A field PX4 sends as NaN arrives as null in JSON.
            self._state = replace(self._state, t_ns=time.monotonic_ns(), t_vehicle_s=stamp,
                                  **self._newest_attitude_and_position(),
                                  **{name: NAN if f[key] is None else float(f[key]) for name, key in _POSITION_FIELDS})
            self._tick(stamp)
            self._publish(self._state)
        except Exception:  # as `_follow`: one message lost, not the stream
            _OWN_LOG.exception("%s: handling LOCAL_POSITION_NED failed", self.url)

    def _on_health(self, health) -> None:
        self._armable = bool(health.is_armable)

    def _on_home(self, home) -> None:
        if not math.isnan(home.latitude_deg):
            self._home = GeoOrigin(home.latitude_deg, home.longitude_deg, home.absolute_altitude_m)

    @property
    def state(self) -> VehicleState:
        return self._state

    @property
    def clock_s(self) -> float:
        clock = self._clock
        if clock.vehicle_s is None:
            return NAN
        # Carried forward from its arrival: the event loop may not have turned since (pytest's
        # synchronous fixture set-up holds it for over a second).
        return clock.vehicle_s + (asyncio.get_running_loop().time() - clock.at) * self.speed_factor

    @contextlib.asynccontextmanager
    async def deadline(self, seconds: float):
        """A block that times out after `seconds` of vehicle time, on the vehicle's own clock.

        It ends at the first stamp (`_FastStreams`) `seconds` after the start, so a simulator that falls
        behind its speed factor (a loaded machine) stretches the wait instead of cutting a flight
        short. If the stamps stop (link lost), it ends CLOCK_GRACE_S after the wall-clock estimate; if the
        vehicle is lost, at once, with VehicleLost.
        """
        self._raise_if_lost()
        loop = asyncio.get_running_loop()
        clock = self._clock
        try:
            async with timeout(seconds / self.speed_factor) as block:
                def lost() -> None:
                    if not block.expired():
                        block.reschedule(loop.time())

                self._on_loss.add(lost)
                try:
                    if clock.vehicle_s is None:
                        yield
                        return
                    target = clock.vehicle_s + seconds
                    grace = _WallGrace(block)
                    block.reschedule(None)
                    grace.arm(loop.time() + seconds / self.speed_factor + CLOCK_GRACE_S)

                    def follow() -> None:
                        # An expired block (its stamp came, or the grace ran out) ends at the task's next turn; a
                        # stamp that arrives before that turn must leave it alone (asyncio refuses to move it then).
                        if block.expired():
                            return
                        remaining = target - clock.vehicle_s
                        if remaining > 0:
                            grace.arm(loop.time() + remaining / self.speed_factor + CLOCK_GRACE_S)
                        else:
                            grace.cancel()
                            block.reschedule(loop.time())

                    clock.watchers.add(follow)
                    try:
                        yield
                    finally:
                        clock.watchers.discard(follow)
                        grace.cancel()
                finally:
                    self._on_loss.discard(lost)
        except TimeoutError:
            self._raise_if_lost()
            raise

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds` of vehicle time (on the vehicle's clock, as `deadline`)."""
        with contextlib.suppress(TimeoutError):
            async with self.deadline(seconds):
                await asyncio.Event().wait()

    async def identity(self) -> str:
        """A stable name for this flight controller: its hardware uid, else the connection string."""
        with contextlib.suppress(MavsdkError):
            ident = await self.info.get_identification()
            if ident.hardware_uid.strip("0"):
                return f"uid-{ident.hardware_uid}"
            if ident.legacy_uid:
                return f"uid-{ident.legacy_uid:016x}"
        return self.url

    async def preflight_status(self) -> PreflightStatus:
        t = self.telemetry_plugin
        version = await self.info.get_version()
        health = await t.health()
        gps = await t.gps_info()
        battery = await t.battery()
        return PreflightStatus(
            autopilot=f"PX4 {version.flight_sw_major}.{version.flight_sw_minor}.{version.flight_sw_patch}",
            sensors_ok=bool(health.is_gyrometer_calibration_ok and health.is_accelerometer_calibration_ok
                            and health.is_magnetometer_calibration_ok and health.is_local_position_ok),
            gps_fix_type=int(gps.fix_type), satellites=int(gps.num_satellites),
            battery_pct=battery.remaining_percent, armable=bool(health.is_armable))

    async def release(self) -> None:
        """Stop every setpoint stream without a word to the vehicle.

        MAVSDK's offboard plugin repeats the last setpoint at 20 Hz, and its stop() switches the
        vehicle to Hold; destroying the plugin instance ends the repeats silently, so the vehicle
        sees exactly what it would see if the companion computer died.
        """
        await self._stop_stream()
        self.offboard.destroy()
        self.offboard = self._requests.plugin(OffboardAsync(self._system))

    async def wait_armable(self, timeout: float = 30.0) -> None:
        """Wait until the autopilot reports it passes its pre-arm checks and knows where home is, for up to
        `timeout` seconds of vehicle time (a simulator that falls behind gets its own seconds to settle)."""
        try:
            async with self.deadline(timeout):
                while not (self._armable and self._home is not None):
                    if self._home is None:
                        # MAVSDK may have received HOME_POSITION before our subscription existed; it caches it.
                        self._on_home(await self.telemetry_plugin.home())
                    await asyncio.sleep(0.05)
        except TimeoutError:
            reason = self._recent_reason() or "no reason given"
            raise VehicleError(f"{self.url}: not armable after {timeout:.1f} s ({reason})") from None

    @property
    def home(self) -> GeoOrigin:
        if self._home is None:
            raise VehicleError(f"{self.url}: home position not known yet (wait_armable first)")
        return self._home

    # ------------------------------------------------------------------ actions
    def _recent_reason(self) -> str:
        now = time.monotonic()
        texts = [text for t, text in self._status_texts if now - t <= REASON_WINDOW_S]
        return texts[-1] if texts else ""

    async def _act(self, what: str, call: Coroutine, shows: Callable[[VehicleState], bool] | None = None,
                   showing: str = "") -> None:
        """Send `call`; a refusal is CommandDenied. A command with `shows` (what telemetry shows once it is carried
        out: `showing`) whose acknowledgement MAVSDK gave up on is judged by that (`_judge_unacknowledged`)."""
        if self.lost is not None:  # a command to a vehicle that is gone would only wait for MAVSDK's retries
            call.close()
            raise VehicleLost(self.lost)
        try:
            await call
        except ActionError as exc:
            if shows is not None and _name(exc.result) == "TIMEOUT":
                await self._judge_unacknowledged(what, exc, shows, showing)
                return
            await asyncio.sleep(0.05)  # the STATUSTEXT with the reason may trail the ack slightly
            raise CommandDenied(what, _name(exc.result), self._recent_reason()) from exc

    async def _judge_unacknowledged(self, what: str, exc: Exception, shows: Callable[[VehicleState], bool],
                                    showing: str) -> None:
        """MAVSDK gives up on an acknowledgement after its retries in wall time (a lossy radio, or a loaded machine
        where it came late) while the vehicle may well have carried the command out: only a vehicle that does not
        show it within MODE_CONFIRM_S is refused (CommandDenied, TIMEOUT)."""
        try:
            await self.wait_until(shows, MODE_CONFIRM_S, showing)
        except VehicleLost:
            raise
        except VehicleError:
            raise CommandDenied(what, "TIMEOUT", f"no {showing} {MODE_CONFIRM_S:g} s after the request, "
                                                 f"mode {self._state.flight_mode}") from exc

    def _arming_problems(self) -> str:
        """The errors of PX4's latest health and arming checks report for the current mode.

        PX4 (>= 1.14, events protocol) refuses to arm with a generic text at most; the particular
        failures are in this report. Empty when the autopilot sends none (PX4 v1.14 without its
        component metadata, the built-in vehicle).
        """
        report = self._health_report
        if report is None:
            return ""
        return "; ".join(p.message for p in report.current_mode_intention.problems
                         if _name(p.log_level) in ("EMERGENCY", "ALERT", "CRITICAL", "ERROR"))

    async def arm(self) -> None:
        """Arm and return once telemetry shows it (MAVSDK learns it from the next HEARTBEAT).

        A refusal carries the autopilot's words: its STATUSTEXT and the failing arming checks.
        """
        try:
            await self._act("arm", self.action.arm())
        except CommandDenied as denied:
            problems = self._arming_problems()
            if problems:
                reason = "; ".join(r for r in (denied.reason, problems) if r)
                raise CommandDenied(denied.command, denied.result, reason) from denied.__cause__
            raise
        await self.wait_until(lambda s: s.armed, ARM_CONFIRM_S, "armed state in telemetry")

    async def disarm(self) -> None:
        await self._act("disarm", self.action.disarm())
        await self.wait_until(lambda s: not s.armed, ARM_CONFIRM_S, "disarmed state in telemetry")

    def takeoff_params(self, altitude: float) -> dict[str, float]:
        return {"MIS_TAKEOFF_ALT": altitude}

    async def takeoff(self, altitude: float, timeout: float = 60.0) -> None:
        """Take off to `altitude` m above home and hold there.

        PX4 climbs to MIS_TAKEOFF_ALT; it is set for the takeoff only and restored (journaled on
        hardware) once airborne. NAV_TAKEOFF's own altitude cannot be used: MAVSDK's raw command
        path cannot send the NaN that PX4 needs in its lat/lon fields, and 0 there is a position.
        """
        # PX4 takes NAV_TAKEOFF disarmed too (it switches to its takeoff mode and waits): a vehicle that is not armed,
        # or that disarms before it leaves the ground, will not climb, and is said to at once, not after `timeout`.
        disarmed = (f"{self.url}: disarmed on the ground, so no takeoff to {altitude:.1f} m (arm first; PX4 disarms a "
                    f"vehicle armed without taking off after COM_DISARM_PRFLT)")
        if not self._state.armed:
            raise VehicleError(disarmed)

        def climbed(s: VehicleState) -> bool:
            if not s.armed and not s.in_air:
                raise VehicleError(disarmed)
            # Done when PX4 holds after the climb: at the altitude, or (seen once on v1.14 under load,
            # at its old MIS_TAKEOFF_ALT) level below it, when the rest is climbed by a reposition.
            return s.flight_mode == "HOLD" and s.in_air and (s.altitude >= altitude - 0.8 or abs(s.vd) < 0.1)

        async with self.params_changed(self.takeoff_params(altitude)):
            await self._act("takeoff", self.action.takeoff())
            done = await self.wait_until(climbed, timeout, f"takeoff to {altitude:.1f} m")
        if done.altitude < altitude - 0.8:
            await self.goto(done.north, done.east, -altitude)
            await self.wait_until(lambda s: s.altitude >= altitude - 0.8, timeout, f"takeoff to {altitude:.1f} m")
        await self._settle_at_altitude(altitude, timeout)

    async def goto(self, north: float, east: float, down: float, yaw: float = NAN) -> None:
        """Reposition to a local NED point, sent as the global point that far from where the vehicle is.

        Relative to the current global position, not to home: PX4's local frame (its estimator's
        origin, drifting with the barometer) and its global altitude part by up to a metre in SIH.
        """
        s = self._state
        here = GeoOrigin(s.lat, s.lon, s.alt_amsl)
        if all(math.isfinite(v) for v in (s.lat, s.lon, s.alt_amsl, s.north, s.east, s.down)):
            lat, lon, alt = here.to_global(north - s.north, east - s.east, down - s.down)
        else:
            lat, lon, alt = self.home.to_global(north, east, down)
        yaw_deg = math.degrees(yaw) if not math.isnan(yaw) else NAN
        await self._act("goto", self.action.goto_location(lat, lon, alt, yaw_deg))

    async def land(self) -> None:
        await self._act("land", self.action.land(), lambda s: s.flight_mode == "LAND" or not s.armed, "landing")

    async def return_to_launch(self) -> None:
        # PX4's return ends in its LAND mode, and disarmed.
        await self._act("return to launch", self.action.return_to_launch(),
                        lambda s: s.flight_mode in ("RETURN_TO_LAUNCH", "LAND") or not s.armed, "return")

    async def hold(self) -> None:
        await self._act("hold", self.action.hold(), lambda s: s.flight_mode == "HOLD", "hold")

    # ------------------------------------------------------------------ offboard
    async def start_offboard(self, rate_hz: float = 20.0) -> None:
        """Stream setpoints at `rate_hz` (the current position first, as PX4 requires), then switch."""
        s = self._state
        await self.set_position_ned(s.north, s.east, s.down, s.yaw)
        if self._offboard_task is None:
            self._offboard_task = asyncio.create_task(self._stream_setpoints(1.0 / rate_hz))
        await asyncio.sleep(0.1)
        try:
            await self.offboard.start()
        except OffboardError as exc:
            await self._stop_stream()
            raise CommandDenied("start offboard", _name(exc.result), self._recent_reason()) from exc

    async def _stream_setpoints(self, period: float) -> None:
        next_t = time.monotonic()
        while True:
            if self._offboard_setpoint is not None:
                await self._offboard_setpoint()
            next_t += period
            await asyncio.sleep(max(0.0, next_t - time.monotonic()))

    async def set_position_ned(self, north: float, east: float, down: float, yaw: float = NAN) -> None:
        yaw_deg = math.degrees(yaw) if not math.isnan(yaw) else math.degrees(self._state.yaw)
        sp = PositionNedYaw(north, east, down, yaw_deg)
        self._offboard_setpoint = lambda: self.offboard.set_position_ned(sp)
        await self._offboard_setpoint()

    async def set_velocity_ned(self, vn: float, ve: float, vd: float, yaw: float = NAN) -> None:
        yaw_deg = math.degrees(yaw) if not math.isnan(yaw) else math.degrees(self._state.yaw)
        sp = VelocityNedYaw(vn, ve, vd, yaw_deg)
        self._offboard_setpoint = lambda: self.offboard.set_velocity_ned(sp)
        await self._offboard_setpoint()

    async def set_attitude(self, roll: float, pitch: float, yaw: float, thrust: float) -> None:
        """Attitude (rad) and normalized collective thrust (0..1), as SET_ATTITUDE_TARGET."""
        sp = Attitude(math.degrees(roll), math.degrees(pitch), math.degrees(yaw), thrust)
        self._offboard_setpoint = lambda: self.offboard.set_attitude(sp)
        await self._offboard_setpoint()

    async def _stop_stream(self) -> None:
        if self._offboard_task is not None:
            await cancel_and_wait(self._offboard_task)
            self._offboard_task = None
        self._offboard_setpoint = None

    async def stop_offboard(self) -> None:
        """Leave offboard (the autopilot switches to Hold) and stop streaming; an acknowledgement that never came
        is judged by the mode (`_judge_unacknowledged`)."""
        try:
            await self.offboard.stop()
        except OffboardError as exc:
            if _name(exc.result) != "TIMEOUT":
                raise CommandDenied("stop offboard", _name(exc.result), self._recent_reason()) from exc
            await self._judge_unacknowledged("stop offboard", exc, lambda s: s.flight_mode != "OFFBOARD",
                                             "mode other than offboard")
        finally:
            await self._stop_stream()

    # ------------------------------------------------------------------ missions
    async def upload_mission(self, waypoints: Sequence[MissionWaypoint]) -> None:
        """Upload waypoints (local NED) as a MAVSDK mission, converted with the vehicle's own home."""
        home = self.home
        items = []
        for wp in waypoints:
            lat, lon, _ = home.to_global(wp.north, wp.east, wp.down)
            items.append(MissionItem(latitude_deg=lat, longitude_deg=lon, relative_altitude_m=-wp.down,
                                     speed_m_s=wp.speed, is_fly_through=wp.hold_s <= 0, loiter_time_s=wp.hold_s,
                                     acceptance_radius_m=wp.acceptance_radius, yaw_deg=wp.yaw_deg,
                                     camera_action=MissionItem.CameraAction.NONE,
                                     vehicle_action=MissionItem.VehicleAction.NONE))
        try:
            await self.mission.upload_mission(MissionPlan(items))
        except MavsdkError as exc:
            raise VehicleError(f"{self.url}: mission upload of {len(items)} items failed: {exc}") from exc

    async def start_mission(self) -> None:
        """Start the uploaded mission; returns once the vehicle flies it (mode MISSION).

        PX4 checks a new mission in its navigator a few milliseconds after the upload ends; a
        start that arrives first is refused by v1.14 (DENIED, "No valid mission") and acknowledged
        but not carried out by v1.16 (the vehicle stays in its mode). So a refused or ignored start
        is repeated until the vehicle is in MISSION mode or MISSION_START_WINDOW_S has passed.
        """
        refused = ""  # the last refusal's result; "" while starts were accepted but not carried out
        try:
            # A start sent as the window closes still gets its confirmation time, as every start before it.
            async with self.deadline(MISSION_START_WINDOW_S + MISSION_MODE_CONFIRM_S):
                while True:
                    try:
                        await self.mission.start_mission()
                        refused = ""
                    except MavsdkError as exc:
                        refused = _name(getattr(exc, "result", ""))
                    else:
                        with contextlib.suppress(VehicleError):
                            await self.wait_until(lambda s: s.flight_mode == "MISSION", MISSION_MODE_CONFIRM_S,
                                                  "mission mode")
                            return
                    await self.sleep(MISSION_START_RETRY_S)
        except TimeoutError:
            await asyncio.sleep(0.05)  # the STATUSTEXT with the reason may trail the ack slightly
            raise CommandDenied("start mission", refused or "IGNORED", self._recent_reason()
                                or ("" if refused else f"accepted, but still in {self._state.flight_mode} mode")) from None

    async def mission_progress(self) -> AsyncIterator[MissionProgress]:
        async for p in self.mission.subscribe_mission_progress():
            yield MissionProgress(p.current, p.total)

    async def mission_items_reached(self) -> AsyncIterator[int]:
        """Each item the autopilot reports reached (MISSION_ITEM_REACHED, MAVLink item indices), once.

        PX4 v1.16 keeps repeating the message for the last item reached; a repetition is not a new event.
        """
        last = None
        async for msg in self.mavlink.subscribe_message("MISSION_ITEM_REACHED"):
            seq = int(json.loads(msg.fields_json)["seq"])
            if seq != last:
                last = seq
                yield seq

    async def messages(self, name: str) -> AsyncIterator[dict[str, Any]]:
        """Every MAVLink message `name` from the autopilot, as its fields (MAVSDK's MavlinkDirect)."""
        async for msg in self.mavlink.subscribe_message(name):
            yield json.loads(msg.fields_json)

    async def mavlink_frames(self) -> AsyncIterator[list[tuple[int, bytes]]]:
        """(µs since the Unix epoch on arrival here, frame) of every MAVLink frame MAVSDK receives from the
        vehicle's link, as it came off the wire (its own sequence numbers and signature), from now on, in
        batches of what has arrived.

        MAVSDK hands over no bytes, but it forwards: the vehicle's connection is opened with forwarding on
        (`open_connection`), and this adds a second forwarding connection to a UDP socket of its own on
        127.0.0.1 for as long as it is listened to, so MAVSDK's I/O thread copies each frame there as it
        routes it. MAVLink routing leaves out what is addressed to the harness alone (COMMAND_ACK, the
        mission and parameter protocols' answers to it); MAVSDK's own frames to that socket (its
        HEARTBEAT) are dropped here, as is a datagram that is not one whole frame.
        """
        tap = _FrameTap(self._connection.source)
        mavsdk = self._connection.mavsdk
        try:
            handle = await mavsdk.add_any_connection(f"udpout://127.0.0.1:{tap.port}", ForwardingOption.ON)
        except BaseException:
            tap.close()
            raise
        try:
            while True:
                yield await tap.batch()
        finally:
            with contextlib.suppress(Exception):  # a connection already destroyed took the tap with it
                await mavsdk.remove_connection(handle)
            tap.close()

    async def inject_failure(self, unit: int, failure_type: int, instance: int) -> str:
        """MAV_CMD_INJECT_FAILURE through MAVSDK's failure plugin; its result's name."""
        # A plugin per command: it reads SYS_FAILURE_EN when made and refuses client-side (DISABLED)
        # while it read 0, and it does not see a change made since through the param plugin.
        plugin = FailureAsync(self._system)
        try:
            await plugin.inject(FailureUnit(unit), FailureType(failure_type), instance)
        except FailureError as exc:
            return exc.result.name
        finally:
            plugin.destroy()
        return "SUCCESS"

    async def inject_sim_fault(self, kind: int, instance: int, severity: float,
                               wind: tuple[float, float, float]) -> str:
        """SIM_FAULT_COMMAND (MAV_CMD_USER_1) as a COMMAND_LONG through MAVSDK's MavlinkDirect."""
        result = await self.command_long(SIM_FAULT_COMMAND, float(kind), float(instance), severity, *wind)
        return "TIMEOUT" if result is None else failure_result(result)

    async def command_long(self, command: int, *params: float) -> int | None:
        """A COMMAND_LONG addressed to the autopilot (1/1: PX4 ignores some broadcast ones, such as
        SET_MESSAGE_INTERVAL), through MAVSDK's MavlinkDirect; its ACK's MAV_RESULT, None if none came."""
        values = [*params, *[0.0] * (7 - len(params))]
        fields = {"target_system": 1, "target_component": 1, "command": command, "confirmation": 0,
                  **{f"param{i + 1}": float(v) for i, v in enumerate(values)}}
        message = MavlinkMessage(message_name="COMMAND_LONG", system_id=0, component_id=0, target_system_id=1,
                                 target_component_id=1, fields_json=json.dumps(fields))
        try:
            ack = await self.mavlink.send_command(message)
        except MavlinkDirectError:
            return None
        return int(json.loads(ack.fields_json)["result"])

    async def ground_station_heartbeats(self) -> None:
        """HEARTBEATs of a ground station (the protocol's docstring), through MAVSDK's MavlinkDirect.

        MAVSDK itself beats as a companion computer, which PX4 does not count as a ground station: its
        data-link-loss failsafe watches GCS heartbeats only (measured on v1.16.1 SIH: with NAV_DLL_ACT set,
        stopping these landed it; tests/test_stop_px4.py). Another ground station on the vehicle
        (QGroundControl) keeps the link alive after the harness is gone, and its operator is then in charge.
        """
        fields = {"type": mavlink.MAV_TYPE_GCS, "autopilot": mavlink.MAV_AUTOPILOT_INVALID, "base_mode": 0,
                  "custom_mode": 0, "system_status": mavlink.MAV_STATE_ACTIVE, "mavlink_version": 3}
        message = MavlinkMessage(message_name="HEARTBEAT", system_id=0, component_id=0, target_system_id=0,
                                 target_component_id=0, fields_json=json.dumps(fields))
        while True:
            with contextlib.suppress(MavlinkDirectError):  # a lost link: the next beat tries again
                await self.mavlink.send_message(message)
            await self.sleep(GCS_HEARTBEAT_S)

    async def download_newest_log(self, dest: Path) -> Path | None:
        """The newest ULog the autopilot lists (MAVSDK's log files plugin), into `dest`; None if it lists none.
        VehicleError saying why and how far it got when the list or the log does not come: a download is given up
        once no part of it arrived for LOG_STALL_S vehicle seconds (MAVSDK alone asks again for ever)."""
        plugin = LogFilesAsync(self._system)
        downloading = False
        try:
            try:
                entries = await asyncio.wait_for(plugin.get_entries(), 10.0)
            except LogFilesError as exc:
                if exc.result == LogFilesResult.NO_LOGFILES:
                    return None
                raise VehicleError(f"{self.url}: no list of its logs ({_name(exc.result)})") from None
            except asyncio.TimeoutError:  # wait_for's: a class of its own on Python 3.10
                raise VehicleError(f"{self.url}: no list of its logs within 10 s") from None
            if not entries:
                return None
            newest = max(entries, key=lambda e: e.id)
            dest.mkdir(parents=True, exist_ok=True)
            path = dest / f"log_{newest.id}_{newest.date.replace(':', '-') or 'undated'}.ulg"
            chunks = plugin.download_log_file(newest, str(path))
            downloading = True
            done = 0.0
            while True:
                try:
                    async with self.deadline(LOG_STALL_S):
                        result, progress = await anext(chunks)
                except TimeoutError:
                    raise VehicleError(f"{self.url}: log {newest.id} not downloaded: nothing of it came for "
                                       f"{LOG_STALL_S:g} vehicle s at {done:.0%} of {newest.size_bytes} B") from None
                except LogFilesError as exc:
                    downloading = False  # MAVSDK ended it
                    raise VehicleError(f"{self.url}: log {newest.id} not downloaded: {_name(exc.result)} at "
                                       f"{done:.0%} of {newest.size_bytes} B") from None
                done = progress.progress
                if result == LogFilesResult.SUCCESS:
                    downloading = False
                    return path
        finally:
            await _drop_log_plugin(plugin, downloading)

    async def setpoint_echo(self) -> AsyncIterator[tuple[int, tuple[float, float, float]]]:
        """(harness ns, NED position) of the setpoint the autopilot reports it is flying (POSITION_TARGET_LOCAL_NED)."""
        async for msg in self.mavlink.subscribe_message("POSITION_TARGET_LOCAL_NED"):
            f = json.loads(msg.fields_json)
            # A velocity setpoint's ignored position arrives as NaN, which JSON carries as null.
            yield time.monotonic_ns(), tuple(NAN if f[k] is None else float(f[k]) for k in ("x", "y", "z"))

    # ------------------------------------------------------------------ parameters
    async def get_param(self, name: str) -> float:
        self._raise_if_lost()
        if not self._param_is_int.get(name, False):
            try:
                value = await self.param.get_param_float(name)
                self._param_is_int[name] = False
                return value
            except ParamError as exc:
                if exc.result != ParamResult.WRONG_TYPE:
                    raise VehicleError(f"{self.url}: cannot read parameter {name}: {_name(exc.result)}") from exc
        try:
            value = await self.param.get_param_int(name)
        except ParamError as exc:
            raise VehicleError(f"{self.url}: cannot read parameter {name}: {_name(exc.result)}") from exc
        self._param_is_int[name] = True
        return float(value)

    async def set_param(self, name: str, value: float) -> None:
        self._raise_if_lost()
        if name not in self._param_is_int:
            await self.get_param(name)
        try:
            if self._param_is_int[name]:
                await self.param.set_param_int(name, int(round(value)))
            else:
                await self.param.set_param_float(name, float(value))
        except ParamError as exc:
            raise VehicleError(f"{self.url}: cannot set parameter {name} to {value}: {_name(exc.result)}") from exc

    # ------------------------------------------------------------------ clean-up
    async def close(self) -> None:
        """Stop offboard streaming (land first if still flying offboard), end every task, drop MAVSDK."""
        if self._closed:
            return
        self._closed = True
        if self._offboard_task is not None:
            if self._state.in_air and self.lost is None:
                # Never leave a vehicle in offboard with nobody streaming: tell it to land instead
                # of waiting for its own failsafe.
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self.action.land(), 3.0)
            await self._stop_stream()
        self._fast.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        await self._requests.settled(REQUESTS_WAIT_S)
        if self._owns_connection:
            self._connection.close()
            return
        for plugin in (self.action, self.telemetry_plugin, self.offboard, self.mission, self.param, self.mavlink,
                       self.info, self.events):
            plugin.destroy()

    async def __aenter__(self) -> "MavsdkVehicle":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()


class _FastStreams:
    """The vehicle's fast streams without MAVSDK's asyncio streams. MAVSDK calls every subscriber from one thread of
    its own, which must take Python's GIL for each message: while the event loop holds it (a busy harness), each
    waits up to the interpreter's switch interval, the queue behind them fills, and MAVSDK drops callbacks, the
    armed state's among them (waits for it ran out beside two CPU burners). The asyncio streams also woke the event
    loop for each message and passed it through a queue and a generator. At 8x the built-in vehicle sends 1,280 of
    these messages a wall second; only LOCAL_POSITION_NED's 240 now cross into Python as they come.

    - LOCAL_POSITION_NED (MAVSDK's MavlinkDirect: its telemetry plugin leaves `time_boot_ms` out): each is a
      snapshot, stamped with the vehicle's clock, parsed on MAVSDK's thread and handed to the event loop
      (`on_local_position`) as its fields.
    - ATTITUDE and GLOBAL_POSITION_INT: only the newest counts, which MAVSDK's telemetry plugin keeps whether or not
      anything subscribes; read when a snapshot is made (`attitude`, `position`).
    - ATTITUDE's stamp (`attitude_stamp_s`) is the vehicle's clock while LOCAL_POSITION_NED is silent (no position
      estimate yet; every PX4 MAVLink mode streams ATTITUDE, where ODOMETRY, once that clock, is not in "normal").
    """

    def __init__(self, system, on_local_position: Callable[[dict[str, Any]], None]) -> None:
        self._loop = asyncio.get_running_loop()
        self._on_local_position = on_local_position
        self._local_seen = False
        self.closed = False
        # MAVSDK's synchronous plugins on the system its asyncio wrapper holds, as its own asyncio plugins make them.
        self._telemetry, self._direct = Telemetry(system._system), MavlinkDirect(system._system)
        self._handle = self._direct.subscribe_message("LOCAL_POSITION_NED", self._on_local)

    def close(self) -> None:
        self.closed = True
        self._direct.unsubscribe_message(self._handle)
        self._telemetry.destroy()
        self._direct.destroy()

    def attitude(self) -> tuple[float, float, float]:
        """Roll, pitch, yaw (rad) of the newest ATTITUDE; NaN before the first."""
        euler = self._telemetry.attitude_euler()
        return math.radians(euler.roll_deg), math.radians(euler.pitch_deg), math.radians(euler.yaw_deg)

    def position(self) -> tuple[float, float, float]:
        """Latitude, longitude (deg) and altitude (m AMSL) of the newest GLOBAL_POSITION_INT; NaN before the first."""
        p = self._telemetry.position()
        return p.latitude_deg, p.longitude_deg, p.absolute_altitude_m

    def attitude_stamp_s(self) -> float | None:
        """The newest ATTITUDE's time stamp (vehicle seconds); None before the first."""
        stamp_us = self._telemetry.attitude_euler().timestamp_us
        return stamp_us / 1e6 if stamp_us else None

    def local_seen(self) -> bool:
        """Whether a LOCAL_POSITION_NED came since the last call."""
        seen, self._local_seen = self._local_seen, False
        return seen

    def _on_local(self, message: MavlinkMessage, _user_data) -> None:  # on MAVSDK's thread
        self._local_seen = True
        if self.closed:
            return
        with contextlib.suppress(RuntimeError):  # the loop closed under a message in flight
            self._loop.call_soon_threadsafe(self._on_local_position, json.loads(message.fields_json))


class _Requests:
    """The requests this Vehicle has with MAVSDK, each left to run to its own end when its caller is cancelled.

    A request blocks one of the event loop's executor threads until MAVSDK answers or gives up, and MAVSDK
    destroyed under it never does: the process could then not exit (seen twice on a PX4 stopped or killed
    mid-flight: a parameter restore, and the onboard runtime's offboard stop, both shielded, still waiting when
    the Vehicle closed). So closing waits for them first (`settled`)."""

    def __init__(self) -> None:
        self.pending: set[asyncio.Future] = set()

    def plugin(self, plugin: Any) -> Any:
        """`plugin` (a MAVSDK asyncio plugin) with its requests tracked; its streams and `destroy` as they are."""
        return _TrackedPlugin(plugin, self)

    async def run(self, request: Coroutine) -> Any:
        task = asyncio.ensure_future(request)

        def finished(done: asyncio.Future) -> None:
            self.pending.discard(done)
            if not done.cancelled():
                done.exception()  # read here: a caller cancelled meanwhile never reads it

        self.pending.add(task)
        task.add_done_callback(finished)
        return await asyncio.shield(task)

    async def settled(self, timeout_s: float) -> None:
        """Once every request has its answer or MAVSDK's time-out, at most `timeout_s` wall seconds."""
        if self.pending:
            await asyncio.wait(self.pending, timeout=timeout_s)


class _TrackedPlugin:
    """A MAVSDK asyncio plugin whose requests (its coroutine methods) go through `_Requests.run`."""

    def __init__(self, plugin: Any, requests: _Requests) -> None:
        self._plugin = plugin
        self._requests = requests

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._plugin, name)
        # An offboard setpoint is stale once the next is due: one its caller gave up on must leave MAVSDK's
        # queue (run_in_executor drops a call not yet started when cancelled), or on a loaded machine a backlog
        # of old setpoints holds the executor and the vehicle flies none of the new ones in time.
        if not inspect.iscoroutinefunction(attribute) or (isinstance(self._plugin, OffboardAsync)
                                                          and name.startswith("set_")):
            return attribute

        async def request(*args, **kwargs):
            return await self._requests.run(attribute(*args, **kwargs))

        return request


class _FrameTap:
    """The loopback socket MAVSDK forwards the vehicle's frames to, one frame a datagram.

    Read in batches every TAP_POLL_S instead of waking the event loop for each frame (1,500 a second from
    a vehicle at 4x, on the loop that also keeps the offboard stream and the link proxy on time: with a
    wake-up per frame, a full test run saw a 20 Hz setpoint stream through the proxy miss the vehicle's
    offboard-loss timeout). Each frame keeps the kernel's arrival time where the system gives one (Linux's
    SO_TIMESTAMPNS), else the time it was read. A datagram that is not one whole frame is not MAVSDK's.
    """

    def __init__(self, own_source: tuple[int, int]):
        self.own = own_source
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setblocking(False)
        with contextlib.suppress(OSError):  # the kernel caps it at net.core.rmem_max; the default holds ~0.1 s
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, TAP_BUFFER_BYTES)
        self.stamped = sys.platform == "linux"
        if self.stamped:
            try:
                self.sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
            except OSError:
                self.stamped = False
        self.sock.bind(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        self._last_us = 0

    def close(self) -> None:
        self.sock.close()

    async def batch(self) -> list[tuple[int, bytes]]:
        """(µs since the Unix epoch, frame) of what has arrived since the last batch, once there is something."""
        while True:
            await asyncio.sleep(TAP_POLL_S)
            frames = self._drain()
            if frames:
                return frames

    def _drain(self) -> list[tuple[int, bytes]]:
        frames = []
        for _ in range(TAP_MAX_BATCH):  # bounded: a flood on the port must not hold the event loop
            try:
                if self.stamped:
                    data, ancillary, _, _ = self.sock.recvmsg(_MAX_FRAME, _ANCILLARY_SIZE)
                    stamp_us = _kernel_stamp_us(ancillary)
                else:
                    data, stamp_us = self.sock.recv(_MAX_FRAME), time.time_ns() // 1000
            except (BlockingIOError, InterruptedError):
                break
            frame = whole_frame(data)
            # A frame whose checksum fails is line noise MAVSDK forwarded because it does not know the message
            # (a lossy serial link, seen in CI over a pty pair): no log reader could decode it.
            if frame is not None and frame.crc_ok is not False and (frame.sysid, frame.compid) != self.own:
                # Never earlier than the frame before: kernel stamps of loopback datagrams handled on two CPUs
                # can come out of order by microseconds (seen in CI under load), and a log is replayed in order.
                self._last_us = max(stamp_us, self._last_us)
                frames.append((self._last_us, data))
        return frames


def _kernel_stamp_us(ancillary: list[tuple[int, int, bytes]]) -> int:
    """The arrival time SO_TIMESTAMPNS attached to a datagram (a struct timespec), else now."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
            seconds, nanoseconds = _TIMESPEC.unpack_from(data)
            return seconds * 1_000_000 + nanoseconds // 1000
    return time.time_ns() // 1000


@dataclass
class MavsdkConnection:
    """A MAVSDK instance and the autopilot it found on a connection string. It outlives the Vehicles
    made on it when it is shared: a bench board keeps one connection for a whole pytest session."""

    url: str
    mavsdk: Mavsdk
    system: Any
    source: tuple[int, int]  # MAVSDK's own (system id, component id) on the link

    def close(self) -> None:
        """Drop MAVSDK: the port closes and every plugin on the system ends."""
        self.mavsdk.destroy()


async def open_connection(url: str, timeout: float = 10.0) -> MavsdkConnection:
    """MAVSDK on a connection string, once an autopilot answers on it, or raise naming the string.

    `timeout` is wall-clock seconds.
    """
    route_mavsdk_logs()
    url = loopback_by_default(url)
    configuration = Configuration.create_with_component_type(ComponentType.COMPANION_COMPUTER)
    source = (configuration.system_id, configuration.component_id)
    mavsdk = Mavsdk(configuration)
    try:
        # Forwarding on, so that a telemetry log can be tapped (MavsdkVehicle.mavlink_frames); MAVSDK
        # forwards nothing while this is its only connection.
        await mavsdk.add_any_connection(url, ForwardingOption.ON)
    except MavsdkConnectionError as exc:
        mavsdk.destroy()
        raise VehicleConnectionError(f"{url}: cannot open connection: {exc}") from exc
    system = None
    try:
        system = await mavsdk.first_autopilot(timeout_s=timeout)
    finally:
        if system is None:  # also when cancelled (the vehicle's process died): the port is not left bound
            mavsdk.destroy()
    if system is None:
        raise VehicleConnectionError(f"{url}: no autopilot answered within {timeout:.1f} s "
                                     "(is the vehicle running, and sending to this address and port?)")
    return MavsdkConnection(url, mavsdk, system, source)


async def connect(url: str, timeout: float = 10.0, speed_factor: float = 1.0,
                  connection: MavsdkConnection | None = None, lost_after_s: float = VEHICLE_LOST_S,
                  process: ChildProcess | None = None) -> MavsdkVehicle:
    """A Vehicle on a MAVSDK connection string, or raise naming the string.

    `timeout` is wall-clock seconds; `speed_factor` is the target's simulation speed (1 for hardware).
    With `connection` (open on `url`), the Vehicle uses it and leaves it open when it closes. The vehicle is
    lost after `lost_after_s` wall seconds of a clock standing still, or when `process` dies (MavsdkVehicle).
    """
    owned = connection is None
    if connection is None:
        connection = await open_connection(url, timeout)
    vehicle = MavsdkVehicle(connection, speed_factor, owns_connection=owned, lost_after_s=lost_after_s,
                            process=process)
    vehicle._start_streams()
    return vehicle


async def _drop_log_plugin(plugin: LogFilesAsync, downloading: bool) -> None:
    """End an unfinished download (MAVSDK would go on asking for it), then the plugin, off the event loop and
    bounded: a plugin destroyed with its download running was seen never to return (`hil fly --target px4-hitl`
    hung in LogFiles.destroy after a stop request), holding the loop and the run with it."""
    if downloading:
        with contextlib.suppress(MavsdkError, asyncio.TimeoutError):
            await asyncio.wait_for(plugin.cancel_download_log_file(), LOG_PLUGIN_CLOSE_S)
    loop = asyncio.get_running_loop()
    destroyed = loop.create_future()

    def destroy() -> None:
        plugin.destroy()
        with contextlib.suppress(RuntimeError):  # the loop already closed
            loop.call_soon_threadsafe(lambda: destroyed.done() or destroyed.set_result(None))

    # A daemon thread, not the executor: a destroy that never returns must not hold the interpreter's exit.
    threading.Thread(target=destroy, name="log plugin destroy", daemon=True).start()
    try:
        await asyncio.wait_for(destroyed, LOG_PLUGIN_CLOSE_S)
    except asyncio.TimeoutError:
        _OWN_LOG.warning("MAVSDK's log files plugin did not close within %g s; left behind", LOG_PLUGIN_CLOSE_S)


async def connect_started(url: str, process: ChildProcess, speed_factor: float = 1.0,
                          lost_after_s: float = VEHICLE_LOST_S) -> MavsdkVehicle:
    """A Vehicle on `url`, where the flight controller of a `process` the harness started answers: waited for
    while the process is alive (up to START_CAP_S), not on a stopwatch, and given up the moment it dies,
    with its exit code and last console lines (VehicleConnectionError); lost the moment it dies after that."""
    return await process.while_alive(connect(url, START_CAP_S, speed_factor, lost_after_s=lost_after_s,
                                             process=process),
                                     VehicleConnectionError, f"answered on {url}")
