"""The built-in vehicle's MAVLink side: what PX4 v1.16.1 SITL shows a client, spoken for the Autopilot.

One server serves any number of links (PX4 runs one MAVLink instance per port too). Each link
has its own encoder, sequence numbers and message rates, and each protocol its own state per link
(parameter list, mission upload, FTP sessions, log download). Telemetry is scheduled in simulation
time, so a speed factor speeds the streams up exactly as PX4_SIM_SPEED_FACTOR does. The default
streams and rates, the answers to requests and commands, the parameter table, MAVLink FTP over the
vehicle's own files (component metadata, flight logs) and the calibration texts are PX4 v1.16.1's, measured from the
binary (px4/reference/, tests/test_px4_surface.py); deviations are commented where they are.

The server owns the links, dispatches what arrives by message id and schedules what goes out; each
protocol is a member object in a module of its own that owns its state and names the message ids it
handles (mavlink_dispatch), as PX4's mavlink module holds its mission, parameter and FTP managers and
MAVSDK has a plugin per microservice: telemetry (mavlink_telemetry, the messages; the server decides when
each is due at the link's rates), commands (mavlink_commands), offboard setpoints (mavlink_offboard),
missions (mavlink_mission), parameters (mavlink_params), FTP and logs (mavlink_files), status texts
(mavlink_statustext). A part is handed what it needs of the others (an object or a callable) and reads
none of their private names; a link (codec, rates) is mavlink_link's.
"""

from __future__ import annotations

import math
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

from pymavlink.dialects.v20 import common as mavlink

from px4.sim import BUILTIN_AUTOPILOT, PX4_VERSION
from px4.sim.autopilot import Autopilot
from px4.sim.calibration import Calibration
from px4.sim.component_metadata import write_metadata
from px4.sim.flight_log import FlightLogger
from px4.sim.mavlink_commands import CommandProtocol, send_ack
from px4.sim.mavlink_dispatch import handler_table, handles
from px4.sim.mavlink_files import FileProtocols, px4_root_files
from px4.sim.mavlink_link import Link
from px4.sim.mavlink_mission import MissionProtocol
from px4.sim.mavlink_offboard import OffboardSetpoints
from px4.sim.mavlink_params import ParamProtocol
from px4.sim.mavlink_statustext import StatusTexts
from px4.sim.mavlink_telemetry import TelemetryStreams

# Extra HEARTBEATs on a state change come at most this often (vehicle seconds).
STATE_HEARTBEAT_MIN_S = 0.1
# As PX4's mavlink mission manager: the last item reached is sent again at 1 Hz, 10 more times, so a
# client that missed the one message (a lost datagram, a busy subscriber) still hears of it.
REACHED_REPEATS = 10
REACHED_REPEAT_S = 1.0


def flight_logger(autopilot: Autopilot, root: Path) -> FlightLogger:
    """The vehicle's ULog writer under root/log/. Its header names the built-in vehicle and the release it
    imitates, so that its log never passes for one of PX4's own (in an upload to Flight Review, a bug
    report): no PX4 commit, and the release number as a development build (type 0) rather than v1.16.1's
    official one. The hardware stays PX4_SITL, which tells log readers the log is simulated."""
    major, minor, patch = PX4_VERSION
    return FlightLogger(autopilot, root, {
        "sys_name": ("char[]", BUILTIN_AUTOPILOT), "ver_hw": ("char[]", "PX4_SITL"),
        "ver_sw": ("char[]", "quad-hil"), "ver_sw_release": ("uint32_t", (major << 24) | (minor << 16) | (patch << 8)),
        "sys_os_name": ("char[]", platform.system()), "sys_toolchain": ("char[]", "quad-hil built-in vehicle")})


class MavlinkServer:
    """Speaks MAVLink for an Autopilot on any number of links. Call `tick()` after stepping."""

    def __init__(self, autopilot: Autopilot, sysid: int = 1, compid: int = 1,
                 on_message: Callable[[Link, object, int], None] | None = None, root: Path | None = None,
                 component_metadata: bool = True):
        """``root`` is the vehicle's own folder (PX4 SITL's working directory: served over FTP,
        flight logs under log/); None makes a temporary one, removed by :meth:`close`.

        ``component_metadata`` False skips writing the metadata files a ground station fetches over FTP
        (24 ms of compression): for a server that is only listened to through :meth:`speak`, such as
        the lockstep vehicle's telemetry log, whose link nobody requests anything on."""
        self.ap = autopilot
        self.sysid = sysid
        self.compid = compid
        self.links: list[Link] = []
        # Called with every message that arrives, with its arrival time (monotonic ns): the
        # latency benchmark and the recorder hook in here without the server knowing them.
        self.on_message = on_message
        self.time_offset_ns: int | None = None  # client clock minus ours, from TIMESYNC
        self.handler_errors = 0
        self._last_state: tuple | None = None
        self._last_state_heartbeat = -1.0
        # PX4 SITL reports one fixed uid for every instance; each built-in vehicle has its own, so
        # that clients (and harnesses keeping vehicles apart by uid) never mistake one for another.
        self.uid = int.from_bytes(os.urandom(8), "little")
        self._own_root = root is None
        self.root = Path(tempfile.mkdtemp(prefix="quad-hil-vehicle-") if root is None else root)
        self.root.mkdir(parents=True, exist_ok=True)
        if "MAV_SYS_ID" in autopilot.params:
            autopilot.params.set("MAV_SYS_ID", sysid)
        self.metadata = write_metadata(self.root, autopilot.params) if component_metadata else None
        if component_metadata:
            px4_root_files(self.root)
        self.calibration = Calibration()
        self.logger = flight_logger(autopilot, self.root)
        self.texts = StatusTexts(autopilot, self.logger, self.links)
        self.telemetry = TelemetryStreams(autopilot, self.links, self.uid, self.metadata, self.calibration,
                                          lambda: self.logger.logging)
        self.files = FileProtocols(self.root, compid, self.logger)
        self.params = ParamProtocol(autopilot, self.links)
        self.missions = MissionProtocol(autopilot, self.links, self.telemetry.mission_current, self.texts.flush)
        self.commands = CommandProtocol(autopilot, self.calibration, self.telemetry, self.texts.flush)
        self.offboard = OffboardSetpoints(autopilot)
        # The shortest interval any stream gets, in vehicle seconds (run_realtime caps streams in wall time).
        self.min_stream_interval_s = 0.0
        self._last_reached = -1
        self._reached_repeats = 0
        self._next_reached_s = 0.0
        # Message id -> the protocol method that handles it; the server's own are HEARTBEAT, PING and TIMESYNC.
        self._handlers = handler_table(self, *self.protocols)

    @property
    def protocols(self) -> tuple:
        """The member objects that handle MAVLink messages, each owning its own state."""
        return self.params, self.files, self.missions, self.commands, self.offboard

    def close(self) -> None:
        """End the flight log and FTP sessions; remove a temporary root."""
        self.logger.close()
        self.files.close()
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def add_link(self, transport, gcs: bool = False) -> Link:
        link = Link(transport, self.sysid, self.compid, gcs)
        self.links.append(link)
        return link

    def receive(self, link: Link, data: bytes) -> None:
        """Bytes arrived on a link: handle every complete message at once (not at the next tick)."""
        now_ns = time.monotonic_ns()
        for msg in link.parse(data):
            link.received += 1
            if not self.ap.faults.accepts(msg):
                continue  # an injected MAVLink signal loss
            if self.on_message is not None:
                self.on_message(link, msg, now_ns)
            handler = self._handlers.get(msg.get_msgId())
            target = getattr(msg, "target_system", self.sysid)
            if handler is None or target not in (0, self.sysid):
                continue
            link.peer = (msg.get_srcSystem(), msg.get_srcComponent())
            try:
                handler(link, msg)
            except Exception as exc:  # noqa: BLE001 - one bad message must never stop the vehicle
                self.handler_errors += 1
                if self.handler_errors <= 5:  # one line, not a traceback: hostile input is normal input
                    print(f"built-in vehicle: {msg.get_type()} not handled ({type(exc).__name__}: {exc})",
                          file=sys.stderr)
                if msg.get_type() in ("COMMAND_LONG", "COMMAND_INT"):
                    send_ack(link, msg.command, mavlink.MAV_RESULT_FAILED)

    # ---- periodic output
    def tick(self) -> None:
        """Send what is due on every link, plus queued status texts and protocol events."""
        now = self.ap.time_s
        for severity, text in self.calibration.update(now):
            self.ap.say(severity, text)
        self.params.write_back()
        events = self.texts.messages()  # logged before a disarm closes the log: "Disarmed by ..." is in it
        started = self.logger.update()
        if started is not None:
            self.ap.say(mavlink.MAV_SEVERITY_INFO, started)
        reached = list(self.ap.reached_items)
        self.ap.reached_items.clear()
        events += self._announcements(now, reached)
        for link in self.links:
            for msg in events:
                link.send(msg)
            self._send_streams(link, now)
            self.params.pump(link)
            self.missions.pump(link)
            self.files.pump(link)

    def speak(self, link: Link, reached: Sequence[int] = ()) -> None:
        """Send on `link` what the vehicle says unasked at this instant, as `tick` sends it: queued status
        texts, the mission items in `reached` (the caller took them from the autopilot), state heartbeats
        and the streams due at the link's rates. Nothing of the protocols a client drives, no flight log:
        for a link that is only listened to (the lockstep vehicle's telemetry log)."""
        now = self.ap.time_s
        for msg in self.texts.messages() + self._announcements(now, list(reached)):
            link.send(msg)
        self._send_streams(link, now)

    def _announcements(self, now: float, reached: list[int]) -> list:
        """The event messages of this instant besides status texts: each mission item reached (and the
        last one repeated, as PX4 repeats it), a HEARTBEAT and SYS_STATUS when what they report changed,
        and MISSION_CURRENT after an item was reached."""
        events: list = [mavlink.MAVLink_mission_item_reached_message(seq) for seq in reached]
        events += self._repeated_reached(now)
        # Deliberate deviation from PX4 (which beats at a fixed 1 Hz): a HEARTBEAT goes out as soon
        # as what it reports changes, because MAVSDK re-reads health, armed and mode only on
        # heartbeats; without it every "now armable / armed / in mode" waits up to a second.
        state = (self.ap.ready, self.ap.armed, self.ap.mode, self.ap.failsafe, self.ap.prearm_failure() is None)
        if state != self._last_state and now - self._last_state_heartbeat >= STATE_HEARTBEAT_MIN_S:
            self._last_state, self._last_state_heartbeat = state, now
            events += [self.telemetry.build("SYS_STATUS"), self.telemetry.build("HEARTBEAT")]
        if reached:
            events.append(self.telemetry.mission_current())
        return events

    def _send_streams(self, link: Link, now: float) -> None:
        """Every stream due on `link` at vehicle time `now`, at the link's own rates."""
        if now < link.streams_due:
            return
        earliest = math.inf
        shortest = self.min_stream_interval_s
        self.telemetry.read_state()  # once for every message of this instant
        next_due, builders, send = link.next_due, self.telemetry.builders, link.send_args  # some 30 streams a pass
        # Comparisons rather than max(): this loop is most of what a telemetry log costs a lockstep trial.
        for name, interval in link.intervals.items():
            if interval <= 0:
                continue
            due = next_due.get(name, 0.0)
            if now >= due:
                # Keep the phase but never burst to catch up after a stall.
                due += interval if interval > shortest else shortest
                if due < now:
                    due = now
                next_due[name] = due
                made = builders[name]()
                if made is not None:
                    send(*made)
            if due < earliest:
                earliest = due
        link.streams_due = earliest

    def _repeated_reached(self, now: float) -> list:
        """The last MISSION_ITEM_REACHED once more, if one is due (PX4's 1 Hz repetition)."""
        if self.ap.seq_reached != self._last_reached:
            self._last_reached, self._reached_repeats = self.ap.seq_reached, 0
            self._next_reached_s = now + REACHED_REPEAT_S
            return []
        if self._last_reached < 0 or self._reached_repeats >= REACHED_REPEATS or now < self._next_reached_s:
            return []
        self._reached_repeats += 1
        self._next_reached_s = now + REACHED_REPEAT_S
        return [mavlink.MAVLink_mission_item_reached_message(self._last_reached)]

    @handles(mavlink.MAVLINK_MSG_ID_HEARTBEAT)
    def _on_heartbeat(self, link: Link, msg) -> None:
        if msg.type == mavlink.MAV_TYPE_GCS:  # PX4's data-link-loss failsafe watches ground stations only
            self.ap.gcs_heartbeat()

    # ---- time
    @handles(mavlink.MAVLINK_MSG_ID_PING)
    def _on_ping(self, link: Link, msg) -> None:
        if msg.target_system == 0:  # a request: answer it so the client can measure the round trip
            link.send(mavlink.MAVLink_ping_message(msg.time_usec, msg.seq, msg.get_srcSystem(), msg.get_srcComponent()))

    @handles(mavlink.MAVLINK_MSG_ID_TIMESYNC)
    def _on_timesync(self, link: Link, msg) -> None:
        now_ns = self.telemetry.timesync_ns
        if msg.tc1 == 0:
            link.send(mavlink.MAVLink_timesync_message(now_ns, msg.ts1))
        elif msg.ts1 > 0:
            # Our own request came back: the client's clock at the midpoint of the round trip.
            rtt = now_ns - msg.ts1
            if 0 <= rtt < 1e9:
                self.time_offset_ns = msg.tc1 - (msg.ts1 + rtt // 2)
