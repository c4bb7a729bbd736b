"""The built-in vehicle in-process and in simulated time: the `Vehicle` for fast campaigns.

No sockets and no wall clock: a driver task steps the very Autopilot that `hil sim` serves over
MAVLink, publishes a telemetry snapshot every 1/telemetry_hz of vehicle time, and yields to the
event loop so mission code, recorders and monitors see every snapshot in order. Timeouts and sleeps
are in simulated time, so a mission that takes 90 s of flight finishes in a fraction of a second
and behaves as it does in real time. Missions are uploaded as the same MAVLink items MAVSDK would
send, so both clocks fly the same item list.

Given a link profile, the setpoint stream and the telemetry cross the proxy's impairment model in
simulated time (bridges.sim_link), delivered at physics-step resolution; `state` is then what has
arrived at the harness, not the truth. Commands (arm, mode changes) are not impaired: MAVLink
retries them until acknowledged, so a link delays them but does not lose them.

Its MAVLink frames (`mavlink_frames`, for the trial record's telemetry.tlog) are what the vehicle
says over MAVLink in `sim` mode, made by the same encoders (`MavlinkServer.speak`) once someone
listens, on a link serviced TLOG_MAX_HZ times a vehicle second whose faster streams are thinned to that.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import math
import time
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Sequence

from pymavlink.dialects.v20 import common as mavlink

from aio.tasks import cancel_and_wait
from bridges.failure import failure_result
from bridges.sim_link import (
    LOCAL_POSITION_NED,
    SET_ATTITUDE_TARGET,
    SET_POSITION_TARGET_LOCAL_NED,
    SimulatedLink,
)
from bridges.timeout import timeout
from bridges.vehicle import (
    GCS_HEARTBEAT_S,
    CommandDenied,
    MissionProgress,
    MissionWaypoint,
    PreflightStatus,
    VehicleBase,
    VehicleError,
    VehicleState,
    restamped,
    state_of,
)
from missions.geo import GeoOrigin
from physics.dynamics import POS, VEL, Q, euler_of
from profiles.link import LinkSpec
from px4.modes import FlightMode
from px4.params import ParamError
from px4.sim import BUILTIN_AUTOPILOT
from px4.sim.autopilot import Autopilot
from px4.sim.autopilot_types import CommandResult, LandedState
from px4.sim.control import AttitudeSetpoint, TrajectorySetpoint, quat_from_euler
from px4.sim.mavlink_link import Link
from px4.sim.mavlink_server import MavlinkServer, flight_logger
from px4.sim.mission_items import MissionItem

NAN = float("nan")
# The physics state's position, velocity and attitude quaternion, read by a snapshot in one slice.
assert (VEL, Q) == (POS + 3, VEL + 3), "physics.dynamics' state layout changed: LockstepVehicle._truth reads it"
# MAVSDK's names for what telemetry reports, so snapshots read the same on every target (for every
# member, so that a snapshot reads no enum `name`, a Python-level property).
MODE_NAMES = {mode: "RETURN_TO_LAUNCH" if mode == FlightMode.RTL else mode.name for mode in FlightMode}
LANDED_NAMES = {state: "TAKING_OFF" if state == LandedState.TAKEOFF else state.name for state in LandedState}
_RESULT_NAMES = {mavlink.MAV_RESULT_DENIED: "COMMAND_DENIED", mavlink.MAV_RESULT_TEMPORARILY_REJECTED: "COMMAND_DENIED",
                 mavlink.MAV_RESULT_UNSUPPORTED: "UNSUPPORTED", mavlink.MAV_RESULT_FAILED: "FAILED"}
# MAVSDK's mission mapping defaults (mission_impl.cpp): acceptance radius and hold when not given.
FLY_THROUGH_RADIUS_M = 3.0
STOP_RADIUS_M = 1.0
STOP_HOLD_S = 0.5
# A mission start refused because the upload is not checked yet is tried again (vehicle seconds).
MISSION_START_RETRY_S = 0.1
MISSION_START_TRIES = 30
# The fastest stream in a lockstep telemetry log (Hz of vehicle time), and how often it is serviced. The
# vehicle's own rates (ATTITUDE at 100 Hz, GLOBAL_POSITION_INT at 50: ~470 frames a second) would cost
# ~6 ms of encoding per simulated second, as much as the physics and autopilot; thinned to 5 Hz (~90
# frames a second) the log costs ~0.65-0.85 ms per simulated second on a busy machine (benchmarks/tlog_overhead.py).
# py-spy finds some 60 % of that in the log's own code, four fifths of it the stream pass (the builders, the
# encoder and the scheduling loop, in Python, per frame: MavlinkServer._send_streams), the rest record_tlog; the
# other 40 % is the flight's own code running slower after each pass. With the ULog, about 9 % of the demo
# campaign's time. Slower streams keep their rates; events (state heartbeats, texts, mission items) wait for the
# next service.
TLOG_MAX_HZ = 5.0
# The most event-loop turns a snapshot's hand-over gives other tasks (module docstring: they see
# every snapshot in order).
HAND_OVER_YIELDS = 4


def mission_items(waypoints: Sequence[MissionWaypoint], home: GeoOrigin) -> tuple[list[MissionItem], list[int]]:
    """The MAVLink items MAVSDK's mission plugin makes of these waypoints, and each item's waypoint index."""
    items: list[MissionItem] = []
    owner: list[int] = []

    def add(index: int, **fields) -> None:
        items.append(MissionItem(seq=len(items), **fields))
        owner.append(index)

    for index, wp in enumerate(waypoints):
        lat, lon, _ = home.to_global(wp.north, wp.east, wp.down)
        fly_through = wp.hold_s <= 0
        radius = wp.acceptance_radius if math.isfinite(wp.acceptance_radius) else (
            FLY_THROUGH_RADIUS_M if fly_through else STOP_RADIUS_M)
        add(index, frame=mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT, command=mavlink.MAV_CMD_NAV_WAYPOINT,
            param1=0.0 if fly_through else STOP_HOLD_S, param2=radius, param4=wp.yaw_deg,
            x=int(round(lat * 1e7)), y=int(round(lon * 1e7)), z=-wp.down)
        if math.isfinite(wp.speed):
            add(index, frame=mavlink.MAV_FRAME_MISSION, command=mavlink.MAV_CMD_DO_CHANGE_SPEED, param1=1.0,
                param2=wp.speed, param3=-1.0, z=NAN)
        if wp.hold_s > 0:
            add(index, frame=mavlink.MAV_FRAME_MISSION, command=mavlink.MAV_CMD_NAV_DELAY, param1=wp.hold_s,
                param2=-1.0, param3=-1.0, param4=-1.0)
    return items, owner


class LockstepVehicle(VehicleBase):
    """An Autopilot stepped as fast as the CPU allows. Use `async with LockstepVehicle(ap) as v:`."""

    echoes_setpoints = False

    def __init__(self, autopilot: Autopilot, telemetry_hz: float = 30.0, link: LinkSpec | None = None,
                 link_sink: Callable[[dict], None] | None = None, flight_log_root: Path | None = None):
        """`link_sink` receives the link's frame rows as they happen (else they stay in `link.rows`). With
        `flight_log_root`, the vehicle writes its ULogs under root/log/ as it does in `sim` mode (from
        arming to disarming), closed when the vehicle closes."""
        super().__init__()
        self._logger = flight_logger(autopilot, flight_log_root) if flight_log_root is not None else None
        self.link = SimulatedLink(link, autopilot.time_s, link_sink) if link is not None else None
        self._received: VehicleState | None = None  # the last snapshot across the link
        self._truth_key: tuple | None = None
        self._truth_state: VehicleState | None = None
        self.ap = autopilot
        self.url = f"lockstep://{autopilot.profile.name}"
        self.speed_factor = math.inf
        self._period = 1.0 / telemetry_hz
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._timer_ids = itertools.count()
        self._driver: asyncio.Task | None = None
        self._offboard_sp: TrajectorySetpoint | AttitudeSetpoint | None = None
        self._offboard_timer: list[bool] | None = None
        self._waypoint_of_item: list[int] = []
        self._reached: list[int] = []
        self._home: GeoOrigin | None = None
        self._speaker: _Speaker | None = None  # made when someone first listens to mavlink_frames
        self._loop_ready: Any = None  # the driver's event loop's ready queue (_hand_over)

    # ------------------------------------------------------------------ the clock
    async def __aenter__(self) -> "LockstepVehicle":
        self._driver = asyncio.create_task(self._drive())
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def _drive(self) -> None:
        self._loop_ready = getattr(asyncio.get_running_loop(), "_ready", None)
        ap = self.ap
        advance = ap.advance
        half = ap.dt * 0.5
        link = self.link
        timers = self._timers
        while True:
            target = ap.time_s + self._period
            # Between events the loop only steps: timers and the link are looked at once the time
            # has come for the earliest of them (other tasks, which may add some, run only at the
            # hand-overs, after which it is looked up again).
            due = self._next_event()
            while ap.time_s + half < target:
                advance(target, due)
                if ap.time_s < due:
                    continue
                while timers and timers[0][0] <= ap.time_s:
                    heapq.heappop(timers)[2]()
                if link is not None and link.next_due() <= ap.time_s:
                    for setpoint in link.deliver("to_vehicle", ap.time_s):
                        ap.offboard_setpoint(setpoint)
                    for state in link.deliver("to_onboard", ap.time_s):
                        self._received = restamped(state, int(ap.time_s * 1e9))  # stamped on arrival
                        await self._hand_over(self._received)
                due = self._next_event()
            if self._logger is not None:
                self._logger.update()
            reached = list(ap.reached_items)
            if reached:
                ap.reached_items.clear()
                self._reached.extend(reached)
            if self._speaker is not None and self._speaker.listeners:
                self._speaker.speak(reached)
            if link is None:
                await self._hand_over(self.state)
            else:
                link.send("to_onboard", ap.time_s, self._truth(), LOCAL_POSITION_NED)

    def _next_event(self) -> float:
        """When the step loop next has more to do than step: the earliest timer or link delivery."""
        due = self._timers[0][0] if self._timers else math.inf
        return min(self.link.next_due(), due) if self.link is not None else due

    async def _hand_over(self, state: VehicleState) -> None:
        self._publish(state)
        # Up to HAND_OVER_YIELDS yields: a consumer woken by this snapshot may hop through a queue
        # or two before it is idle again, and it must see this snapshot before the next one. Once
        # no other callback is ready (asyncio's ready queue; an event loop without one gets every
        # yield), further yields would find nothing to run: the hand-over ends there.
        ready = self._loop_ready
        for _ in range(HAND_OVER_YIELDS):
            await asyncio.sleep(0)
            if ready is not None and not ready:
                break

    def _to_vehicle(self, setpoint) -> None:
        """A setpoint sent by the harness: straight in, or across the link."""
        if self.link is None:
            self.ap.offboard_setpoint(setpoint)
        else:
            frame = SET_ATTITUDE_TARGET if isinstance(setpoint, AttitudeSetpoint) else SET_POSITION_TARGET_LOCAL_NED
            self.link.send("to_vehicle", self.ap.time_s, setpoint, frame)

    def _at(self, delay: float, callback: Callable[[], None]) -> None:
        heapq.heappush(self._timers, (self.ap.time_s + delay, next(self._timer_ids), callback))

    @contextlib.asynccontextmanager
    async def deadline(self, seconds: float):
        """A block that raises TimeoutError after `seconds` of simulated time."""
        loop = asyncio.get_running_loop()
        async with timeout(None) as block:
            active = [True]
            self._at(seconds, lambda: active[0] and block.reschedule(loop.time()))
            try:
                yield
            finally:
                active[0] = False

    async def sleep(self, seconds: float) -> None:
        done = asyncio.get_running_loop().create_future()
        self._at(seconds, lambda: done.done() or done.set_result(None))
        await done

    # ------------------------------------------------------------------ telemetry
    @property
    def clock_s(self) -> float:
        return self.ap.time_s

    @property
    def state(self) -> VehicleState:
        """What the harness knows: the truth, or across a link the last snapshot that arrived."""
        if self.link is not None and self._received is not None:
            return self._received
        return self._truth()

    def _truth(self) -> VehicleState:
        ap = self.ap
        physics = ap.dyn.state
        # Read many times a step (the onboard loop's clock, its sensing, the monitor): built once per
        # step and state. The physics state's bytes are in the key, so a state set in place of
        # stepping (a reset) is seen too.
        key = (ap.time_s, ap.armed, ap.mode, ap.landed, ap.landed_state, ap.battery_remaining, physics.tobytes())
        if self._truth_key == key:
            return self._truth_state
        # The physics state's values read once (its position, velocity and attitude properties each slice
        # and copy it), unpacked by name (no slices spread into calls), the snapshot made of them in one piece.
        north, east, down, vn, ve, vd, qw, qx, qy, qz = physics.tolist()[POS:Q + 4]
        roll, pitch, yaw = euler_of(qw, qx, qy, qz)
        lat, lon, alt = ap.origin.to_global(north, east, down)
        self._truth_key = key
        self._truth_state = state_of((int(ap.time_s * 1e9), north, east, down, vn, ve, vd, roll, pitch, yaw,
                                      lat, lon, alt, ap.armed, not ap.landed, MODE_NAMES[ap.mode],
                                      LANDED_NAMES[ap.landed_state], 100.0 * ap.battery_remaining, ap.time_s))
        return self._truth_state

    @property
    def home(self) -> GeoOrigin:
        lat, lon, alt = self.ap.origin.to_global(*self.ap.home)
        return GeoOrigin(lat, lon, alt)

    async def wait_armable(self, timeout: float = 30.0) -> None:
        try:
            await self.wait_until(lambda s: self.ap.prearm_failure() is None, timeout, "armable")
        except VehicleError:
            raise VehicleError(f"{self.url}: not armable after {timeout:.1f} s ({self.ap.prearm_failure()})") from None

    async def preflight_status(self) -> PreflightStatus:
        ap = self.ap
        return PreflightStatus(BUILTIN_AUTOPILOT, ap.ready, 3 if ap.gps_fix else 1,
                               int(ap.params["SIM_GPS_USED"]), 100.0 * ap.battery_remaining, ap.prearm_failure() is None)

    async def release(self) -> None:
        if self._offboard_timer is not None:
            self._offboard_timer[0] = False
        self._offboard_sp = None

    # ------------------------------------------------------------------ actions
    def _check(self, what: str, result: CommandResult) -> None:
        if not result.accepted:
            raise CommandDenied(what, _RESULT_NAMES.get(result.result, str(result.result)), result.reason)

    async def arm(self) -> None:
        self._check("arm", self.ap.arm())

    async def disarm(self) -> None:
        self._check("disarm", self.ap.disarm())

    async def takeoff(self, altitude: float, timeout: float = 60.0) -> None:
        self._check("takeoff", self.ap.takeoff(self.home.alt_m + altitude))
        await self.wait_until(lambda s: s.altitude >= altitude - 0.8 and s.flight_mode == "HOLD", timeout,
                              f"takeoff to {altitude:.1f} m")
        await self._settle_at_altitude(altitude, timeout)

    async def goto(self, north: float, east: float, down: float, yaw: float = NAN) -> None:
        self._check("goto", self.ap.reposition(north, east, down, yaw))

    async def land(self) -> None:
        self._check("land", self.ap.land())

    async def return_to_launch(self) -> None:
        self._check("return to launch", self.ap.return_to_launch())

    async def hold(self) -> None:
        self._check("hold", self.ap.set_mode(FlightMode.HOLD))

    # ------------------------------------------------------------------ offboard
    async def start_offboard(self, rate_hz: float = 20.0) -> None:
        s = self.state
        await self.set_position_ned(s.north, s.east, s.down, s.yaw)
        running = [True]
        self._offboard_timer = running

        def resend() -> None:
            if running[0] and self._offboard_sp is not None:
                self._to_vehicle(self._offboard_sp)
                self._at(1.0 / rate_hz, resend)
        self._at(1.0 / rate_hz, resend)
        if self.link is not None:
            # Across a link the first setpoint is still on its way; PX4 refuses offboard until it lands.
            with contextlib.suppress(TimeoutError):
                async with self.deadline(1.0):
                    while not self.ap.offboard_signal:
                        await self.sleep(self.ap.dt)
        result = self.ap.set_mode(FlightMode.OFFBOARD)
        if not result.accepted:
            running[0] = False
            self._check("start offboard", result)

    async def set_position_ned(self, north: float, east: float, down: float, yaw: float = NAN) -> None:
        yaw = yaw if not math.isnan(yaw) else self.ap.dyn.yaw
        self._offboard_sp = TrajectorySetpoint((north, east, down), (NAN, NAN, NAN), (NAN, NAN, NAN), yaw, NAN)
        self._to_vehicle(self._offboard_sp)

    async def set_velocity_ned(self, vn: float, ve: float, vd: float, yaw: float = NAN) -> None:
        yaw = yaw if not math.isnan(yaw) else self.ap.dyn.yaw
        self._offboard_sp = TrajectorySetpoint((NAN, NAN, NAN), (vn, ve, vd), (NAN, NAN, NAN), yaw, NAN)
        self._to_vehicle(self._offboard_sp)

    async def set_attitude(self, roll: float, pitch: float, yaw: float, thrust: float) -> None:
        self._offboard_sp = AttitudeSetpoint(quat_from_euler(roll, pitch, yaw), thrust, (NAN, NAN, NAN))
        self._to_vehicle(self._offboard_sp)

    async def stop_offboard(self) -> None:
        await self.release()
        self._check("stop offboard", self.ap.set_mode(FlightMode.HOLD))

    # ------------------------------------------------------------------ missions
    async def upload_mission(self, waypoints: Sequence[MissionWaypoint]) -> None:
        items, self._waypoint_of_item = mission_items(waypoints, self.home)
        self.ap.set_mission(items)
        self._reached.clear()

    async def start_mission(self) -> None:
        """As over MAVLink: the navigator checks a new upload on its next cycle, so a start that
        comes first is tried again (MavsdkVehicle.start_mission does the same with PX4)."""
        for _ in range(MISSION_START_TRIES - 1):
            if self.ap.set_mode(FlightMode.MISSION).accepted:
                return
            await self.sleep(MISSION_START_RETRY_S)
        self._check("start mission", self.ap.set_mode(FlightMode.MISSION))

    def _progress(self) -> MissionProgress:
        total = (self._waypoint_of_item[-1] + 1) if self._waypoint_of_item else 0
        if self.ap.mission_finished:
            return MissionProgress(total, total)
        seq = min(self.ap.mission_current, len(self._waypoint_of_item) - 1)
        return MissionProgress(self._waypoint_of_item[seq] if seq >= 0 else 0, total)

    async def mission_progress(self) -> AsyncIterator[MissionProgress]:
        last = None
        async for _ in self.telemetry():
            progress = self._progress()
            if progress != last:
                last = progress
                yield progress

    async def mission_items_reached(self) -> AsyncIterator[int]:
        seen = len(self._reached)
        async for _ in self.telemetry():
            while seen < len(self._reached):
                seen += 1
                yield self._reached[seen - 1]

    async def setpoint_echo(self) -> AsyncIterator[tuple[int, tuple[float, float, float]]]:
        """Nothing: setpoints reach the autopilot within the step, there is no link to time."""
        return
        yield  # unreachable; makes this an async generator that ends at once

    async def messages(self, name: str) -> AsyncIterator[dict[str, Any]]:
        raise VehicleError(f"{self.url}: no MAVLink in lockstep, so no {name} messages")
        yield  # unreachable; makes this an async generator

    async def mavlink_frames(self) -> AsyncIterator[list[tuple[int, bytes]]]:
        """(µs since the Unix epoch, frame) of every MAVLink frame the vehicle would send a client in `sim`
        mode, from its own encoders, from now on, a batch per TLOG_MAX_HZ period (module docstring: faster
        streams thinned to that rate).

        Time stamps are simulated time, placed on the wall clock at the first listener's start (the
        trial's start): frames of one instant share its stamp. No frame crosses the simulated link: they
        are what the vehicle sends, whatever a link profile would lose (the link table says what it lost).
        """
        if self._speaker is None:
            self._speaker = _Speaker(self.ap)
        queue: asyncio.Queue[list[tuple[int, bytes]]] = asyncio.Queue()
        self._speaker.listeners.append(queue)
        try:
            while True:
                yield await queue.get()
        finally:
            self._speaker.listeners.remove(queue)

    # ------------------------------------------------------------------ faults and logs
    async def inject_failure(self, unit: int, failure_type: int, instance: int) -> str:
        """As the built-in vehicle answers MAV_CMD_INJECT_FAILURE over MAVLink."""
        answer = self.ap.faults.inject_failure(unit, failure_type, instance, enabled=self.ap.params["SYS_FAILURE_EN"] != 0)
        return failure_result(answer.result)

    async def inject_sim_fault(self, kind: int, instance: int, severity: float,
                               wind: tuple[float, float, float]) -> str:
        answer = self.ap.faults.inject_sim(kind, instance, severity, wind, enabled=self.ap.params["SYS_FAILURE_EN"] != 0)
        return failure_result(answer.result)

    async def ground_station_heartbeats(self) -> None:
        """The built-in autopilot hears a ground station every GCS_HEARTBEAT_S of simulated time."""
        while True:
            self.ap.gcs_heartbeat()
            await self.sleep(GCS_HEARTBEAT_S)

    async def download_newest_log(self, dest: Path) -> Path | None:
        """None: a lockstep run keeps its telemetry in the trial record, not as a flight log."""
        return None

    async def identity(self) -> str:
        return self.url

    # ------------------------------------------------------------------ parameters
    async def get_param(self, name: str) -> float:
        if name not in self.ap.params:
            raise VehicleError(f"{self.url}: cannot read parameter {name}: DOES_NOT_EXIST")
        return self.ap.params[name]

    async def set_param(self, name: str, value: float) -> None:
        try:
            self.ap.params.set(name, value)
        except ParamError as exc:
            raise VehicleError(f"{self.url}: cannot set parameter {name} to {value}: {exc}") from None
        self.ap.apply_params()

    async def close(self) -> None:
        if self._driver is not None:
            await cancel_and_wait(self._driver)
            self._driver = None
        if self._speaker is not None:
            self._speaker.server.close()
        if self._logger is not None:
            self._logger.close()


class _Speaker:
    """The built-in vehicle's MAVLink server on one link nobody talks back on, serviced every 1/TLOG_MAX_HZ
    of vehicle time: its frames, stamped, go to every listener of `mavlink_frames` in one batch."""

    def __init__(self, autopilot: Autopilot):
        self.ap = autopilot
        # No component metadata: nobody asks for it on this link, and writing it costs 24 ms a trial.
        self.server = MavlinkServer(autopilot, component_metadata=False)
        self.frames: list[bytes] = []
        # The link's transport: each frame kept until the batch is handed over (a C-level append: the log's
        # ~90 frames a simulated second each pass through it).
        self.send = self.frames.append
        self.link: Link = self.server.add_link(self)
        self.period = 1.0 / TLOG_MAX_HZ
        self.server.min_stream_interval_s = self.period
        self.listeners: list[asyncio.Queue[list[tuple[int, bytes]]]] = []
        self._reached: list[int] = []
        self._next_s = autopilot.time_s
        # Simulated time is placed on the wall clock where the listening started.
        self._epoch_us = time.time_ns() // 1000 - int(autopilot.time_s * 1e6)

    def speak(self, reached: list[int]) -> None:
        """Called with every snapshot: once a period has passed, what the vehicle says, to every listener.
        Serviced at its fastest stream's rate rather than with every snapshot (100 Hz on the lockstep
        target), the link's bookkeeping and the listeners' wake-ups come twenty times less often."""
        self._reached += reached
        now = self.ap.time_s
        if now + self.ap.dt * 0.5 < self._next_s:
            return
        self._next_s = max(self._next_s + self.period, now)
        self.server.speak(self.link, self._reached)
        self._reached = []
        if self.frames:
            stamp = self._epoch_us + int(now * 1e6)
            batch = [(stamp, frame) for frame in self.frames]
            self.frames.clear()
            for queue in self.listeners:
                queue.put_nowait(batch)
