"""The built-in vehicle's MAVLink side: what PX4 v1.16.1 SITL shows a client, spoken for the Autopilot.

One server serves any number of links (PX4 runs one MAVLink instance per port too). Each link
has its own encoder, sequence numbers, message rates and protocol state (parameter list, mission
upload, FTP sessions, log download). Telemetry is scheduled in simulation time, so a speed factor
speeds the streams up exactly as PX4_SIM_SPEED_FACTOR does. The default streams and rates, the
answers to requests and commands, the parameter table, MAVLink FTP over the vehicle's own files
(component metadata, flight logs) and the calibration texts are PX4 v1.16.1's, measured from the
binary (px4/reference/, tests/test_px4_surface.py); deviations are commented where they are.
"""

from __future__ import annotations

import math
import os
import platform
import re
import shutil
import struct
import tempfile
import time
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable

from pymavlink.dialects.v20 import common as mavlink

from px4 import modes
from px4.modes import FlightMode, mode_from_set_mode
from px4.params import HASH_CHECK, ParamError
from px4.sim import inputs, mavlink_extra
from px4.sim.autopilot import Autopilot, CommandResult
from px4.sim.calibration import NO_ACK, Calibration
from px4.sim.component_metadata import write_metadata
from px4.sim.control import AttitudeSetpoint, TrajectorySetpoint
from px4.sim.faults import SIM_FAULT_COMMAND
from px4.sim.flight_log import FlightLogger, LogFile
from px4.sim.mavlink_ftp import FtpServer
from px4.sim.mission_items import SUPPORTED_FRAMES, MissionItem

NAN = float("nan")
# The release imitated, reported in AUTOPILOT_VERSION. Type OFFICIAL (0xFF) as the v1.16.1 release
# build reports itself: clients (the harness's own version check, MAVSDK's info plugin, QGC) then
# treat the built-in vehicle exactly as that release. It tells itself apart by its uid (random per
# process) and by nothing else a client relies on.
PX4_VERSION = (1, 16, 1)
FIRMWARE_TYPE_OFFICIAL = 0xFF
# The first bytes of v1.16.1's commit (94cb2012...) as its AUTOPILOT_VERSION carries them.
PX4_GIT_HASH = [0, 0, 0, 0x79, 0x12, 0x20, 0xCB, 0x94]
# MAVLink's own library version hash as PX4 v1.16.1 sends it in PROTOCOL_VERSION.
MAVLINK_LIBRARY_HASH = [0x02, 0xF6, 0x81, 0x02, 0xD8, 0x76, 0xFD, 0x5B]
# Rates (Hz) of the streams PX4 v1.16.1 SITL sends on its offboard link, disarmed on the ground
# (px4/reference/px4_v1.16.1_sih_mavlink_surface.json; a test holds this table to it). WIND_COV is
# configured at 10 Hz too but PX4 sends it only once its estimator has a wind estimate, which SIH's
# never has; here it goes out while the simulation has wind.
DEFAULT_RATES_HZ = {
    "HEARTBEAT": 1.0, "SYS_STATUS": 5.0, "EXTENDED_SYS_STATE": 5.0, "HOME_POSITION": 0.5,
    "GPS_RAW_INT": 8.0, "GLOBAL_POSITION_INT": 50.0, "LOCAL_POSITION_NED": 30.0, "ODOMETRY": 30.0,
    "ATTITUDE": 100.0, "ATTITUDE_QUATERNION": 50.0, "ALTITUDE": 10.0, "BATTERY_STATUS": 0.5,
    "VFR_HUD": 10.0, "HIGHRES_IMU": 50.0, "ATTITUDE_TARGET": 10.0, "POSITION_TARGET_LOCAL_NED": 10.0,
    "SERVO_OUTPUT_RAW": 10.0, "ESTIMATOR_STATUS": 1.0, "SYSTEM_TIME": 1.0, "TIMESYNC": 10.0,
    "MISSION_CURRENT": 1.0, "CURRENT_MODE": 0.5, "DISTANCE_SENSOR": 10.0, "OPEN_DRONE_ID_LOCATION": 1.0,
    "OPEN_DRONE_ID_SYSTEM": 1.0, "PING": 1.0, "SCALED_PRESSURE": 1.0, "VIBRATION": 0.5,
    "LINK_NODE_STATUS": 1.0, "TIME_ESTIMATE_TO_TARGET": 0.5, "CURRENT_EVENT_SEQUENCE": 0.4, "WIND_COV": 10.0,
}
S = mavlink
# SYS_STATUS sensor bits as v1.16.1 SITL sets them (measured): present, enabled (present and RC)
# and healthy; LOGGING is present while a log is being written. No geofence bit: PX4 sets none.
SENSORS_PRESENT = (S.MAV_SYS_STATUS_SENSOR_3D_GYRO | S.MAV_SYS_STATUS_SENSOR_3D_ACCEL | S.MAV_SYS_STATUS_SENSOR_3D_MAG
                   | S.MAV_SYS_STATUS_SENSOR_ABSOLUTE_PRESSURE | S.MAV_SYS_STATUS_SENSOR_GPS
                   | S.MAV_SYS_STATUS_SENSOR_XY_POSITION_CONTROL | S.MAV_SYS_STATUS_SENSOR_BATTERY)
SENSORS_HEALTHY = (SENSORS_PRESENT | S.MAV_SYS_STATUS_SENSOR_DIFFERENTIAL_PRESSURE
                   | S.MAV_SYS_STATUS_SENSOR_ATTITUDE_STABILIZATION | S.MAV_SYS_STATUS_SENSOR_MOTOR_OUTPUTS
                   | S.MAV_SYS_STATUS_AHRS | S.MAV_SYS_STATUS_LOGGING | S.MAV_SYS_STATUS_PREARM_CHECK)
# AUTOPILOT_VERSION.capabilities of v1.16.1: 0xE8FF (v1.14: 0xECFF, with the retired bit 10).
CAPABILITIES = (S.MAV_PROTOCOL_CAPABILITY_MISSION_FLOAT | S.MAV_PROTOCOL_CAPABILITY_PARAM_FLOAT
                | S.MAV_PROTOCOL_CAPABILITY_MISSION_INT | S.MAV_PROTOCOL_CAPABILITY_COMMAND_INT
                | S.MAV_PROTOCOL_CAPABILITY_PARAM_ENCODE_BYTEWISE | S.MAV_PROTOCOL_CAPABILITY_FTP
                | S.MAV_PROTOCOL_CAPABILITY_SET_ATTITUDE_TARGET
                | S.MAV_PROTOCOL_CAPABILITY_SET_POSITION_TARGET_LOCAL_NED
                | S.MAV_PROTOCOL_CAPABILITY_FLIGHT_TERMINATION | S.MAV_PROTOCOL_CAPABILITY_MAVLINK2
                | S.MAV_PROTOCOL_CAPABILITY_MISSION_FENCE | S.MAV_PROTOCOL_CAPABILITY_MISSION_RALLY)
# SET_POSITION_TARGET_* type_mask bits (set = ignore)
_POS_IGNORE, _VEL_IGNORE, _ACC_IGNORE = 0x007, 0x038, 0x1C0
_YAW_IGNORE, _YAW_RATE_IGNORE = 0x400, 0x800
# SET_ATTITUDE_TARGET type_mask bits
_ATT_RATES_IGNORE, _ATT_THRUST_IGNORE, _ATT_IGNORE = 0x07, 0x40, 0x80
MISSION_RETRY_S = 0.25
MISSION_RETRIES = 5
PARAMS_PER_TICK = 5  # per 4 ms of vehicle time: the list takes ~0.7 s, as on PX4
FTP_BURST_PER_TICK = 20
LOG_DATA_PER_TICK = 20
LOG_DATA_LEN = 90
HASH_CHECK_INDEX = 65535  # PX4 sends _HASH_CHECK after the list with index -1 as uint16
MESSAGE_NAMES = {msg_id: cls.msgname for msg_id, cls in mavlink.mavlink_map.items()}
MESSAGE_NAMES.update({cls.id: cls.msgname for cls in mavlink_extra.MESSAGES})
# Extra HEARTBEATs on a state change come at most this often (vehicle seconds).
STATE_HEARTBEAT_MIN_S = 0.1


def _int(value: float, default: int = 0) -> int:
    """A command parameter as an int; clients send NaN for "unused" (MAVSDK does)."""
    return int(value) if math.isfinite(value) and abs(value) < 2**31 else default


def _invalid_item_field(msg) -> int | None:
    """The MAV_MISSION_INVALID_PARAMn of a mission item's first unusable field, None if all are usable.
    NaN stays allowed in param1-4 (MAVLink's "unchanged"); inf never is; x, y, z must be finite."""
    params = (msg.param1, msg.param2, msg.param3, msg.param4)
    for index, value in enumerate(params):
        if math.isinf(value):
            return mavlink.MAV_MISSION_INVALID_PARAM1 + index
    x, y = (msg.x / 1e7, msg.y / 1e7) if msg.get_type() == "MISSION_ITEM_INT" else (msg.x, msg.y)
    global_frame = msg.frame not in (mavlink.MAV_FRAME_LOCAL_NED, mavlink.MAV_FRAME_MISSION)
    if not inputs.usable(x, 90.0 if global_frame else math.inf):
        return mavlink.MAV_MISSION_INVALID_PARAM5_X
    if not inputs.usable(y, 180.0 if global_frame else math.inf):
        return mavlink.MAV_MISSION_INVALID_PARAM6_Y
    if not math.isnan(msg.z) and not inputs.usable(msg.z, inputs.MAX_ABS_ALTITUDE_M):
        return mavlink.MAV_MISSION_INVALID_PARAM7
    return None


def _param_wire_value(value: float, is_int: bool) -> float:
    """PX4 sends int32 parameters bytewise inside the float field (PARAM_ENCODE_BYTEWISE)."""
    if is_int:
        return struct.unpack("<f", struct.pack("<i", int(value)))[0]
    return value


def _os_version() -> int:
    """The host kernel's version as PX4 SITL reports it (os_sw_version: major.minor.patch, type OFFICIAL)."""
    numbers = [int(n) for n in re.findall(r"\d+", platform.release())[:3]] + [0, 0, 0]
    return (numbers[0] & 0xFF) << 24 | (numbers[1] & 0xFF) << 16 | (numbers[2] & 0xFF) << 8 | FIRMWARE_TYPE_OFFICIAL


def _lround(value: float) -> int:
    """C's lroundf, as PX4 reads integral command parameters: halves away from zero."""
    return int(math.copysign(math.floor(abs(value) + 0.5), value)) if math.isfinite(value) else 0


def _param_from_wire(value: float, param_type: int) -> float:
    if param_type in (mavlink.MAV_PARAM_TYPE_INT32, mavlink.MAV_PARAM_TYPE_UINT32, mavlink.MAV_PARAM_TYPE_INT16,
                      mavlink.MAV_PARAM_TYPE_UINT16, mavlink.MAV_PARAM_TYPE_INT8, mavlink.MAV_PARAM_TYPE_UINT8):
        return float(struct.unpack("<i", struct.pack("<f", value))[0])
    return value


@dataclass
class _LogTransfer:
    """A LOG_REQUEST_DATA being answered: chunks of one log, ``offset`` up to ``end``."""

    log_id: int
    handle: BinaryIO
    offset: int
    end: int


@dataclass
class _Upload:
    """An upload in progress: the client announced `count` items of one mission type."""

    mission_type: int
    count: int
    peer: tuple[int, int]
    items: list[MissionItem] = field(default_factory=list)
    asked_at: float = 0.0
    retries: int = 0


class Link:
    """One MAVLink port of the vehicle: codec, rates and per-link protocol state."""

    def __init__(self, transport, sysid: int, compid: int):
        self.transport = transport
        self.mav = mavlink.MAVLink(None, srcSystem=sysid, srcComponent=compid)
        self.mav.robust_parsing = True
        self.intervals = {name: 1.0 / hz for name, hz in DEFAULT_RATES_HZ.items()}
        self.next_due: dict[str, float] = {}
        self.param_queue: list[int] = []
        self.upload: _Upload | None = None
        self.ftp: FtpServer | None = None
        self.log_transfer: _LogTransfer | None = None
        self.sent = 0
        self.peer: tuple[int, int] = (255, 190)
        self.received = 0
        self.bad_frames = 0

    def send(self, msg) -> None:
        """Encode with this link's sequence numbers and hand to the transport."""
        buf = msg.pack(self.mav)
        self.mav.seq = (self.mav.seq + 1) % 256
        self.sent += 1
        self.transport.send(buf)

    def parse(self, data: bytes) -> list:
        if getattr(self.transport, "datagrams", False):
            # Each datagram starts afresh: what a previous one left unfinished (a stray `fd ff`, junk)
            # can never be completed by the next, and must not swallow its frames.
            self.mav.buf, self.mav.buf_index = bytearray(), 0
            self.mav.expected_length = mavlink.HEADER_LEN_V1 + 2
        try:
            msgs = self.mav.parse_buffer(data) or []
        except mavlink.MAVError:
            self.bad_frames += 1
            return []
        good = []
        for m in msgs:
            if m.get_type() == "BAD_DATA":
                self.bad_frames += 1
            else:
                good.append(m)
        return good


class MavlinkServer:
    """Speaks MAVLink for an Autopilot on any number of links. Call `tick()` after stepping."""

    def __init__(self, autopilot: Autopilot, sysid: int = 1, compid: int = 1,
                 on_message: Callable[[Link, object, int], None] | None = None, root: Path | None = None):
        """``root`` is the vehicle's own folder (PX4 SITL's working directory: served over FTP,
        flight logs under log/); None makes a temporary one, removed by :meth:`close`."""
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
        self._text_id = 0
        # PX4 SITL reports one fixed uid for every instance; each built-in vehicle has its own, so
        # that clients (and harnesses keeping vehicles apart by uid) never mistake one for another.
        self.uid = int.from_bytes(os.urandom(8), "little")
        self._own_root = root is None
        self.root = Path(tempfile.mkdtemp(prefix="quad-hil-vehicle-") if root is None else root)
        self.root.mkdir(parents=True, exist_ok=True)
        if "MAV_SYS_ID" in autopilot.params:
            autopilot.params.set("MAV_SYS_ID", sysid)
        self.metadata = write_metadata(self.root, autopilot.params)
        self.calibration = Calibration()
        self.logger = FlightLogger(autopilot, self.root, {
            "sys_name": ("char[]", "PX4"), "ver_hw": ("char[]", "PX4_SITL"),
            "ver_sw": ("char[]", "".join(f"{b:02x}" for b in reversed(PX4_GIT_HASH))),
            "ver_sw_release": ("uint32_t", self._version_word()), "sys_os_name": ("char[]", platform.system()),
            "sys_toolchain": ("char[]", "quad-hil built-in vehicle")})
        self._ping_seq = 0

    def close(self) -> None:
        """End the flight log and FTP sessions; remove a temporary root."""
        self.logger.close()
        for link in self.links:
            if link.ftp is not None:
                link.ftp.close()
            self._end_log_transfer(link)
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def add_link(self, transport) -> Link:
        link = Link(transport, self.sysid, self.compid)
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
            handler = getattr(self, "_on_" + msg.get_type().lower(), None)
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
                    self._ack(link, msg.command, mavlink.MAV_RESULT_FAILED)

    # ------------------------------------------------------------------ periodic output
    @property
    def boot_ms(self) -> int:
        # uint32 in every message that carries it: wraps after 49.7 days, as PX4's cast does.
        return int(self.ap.time_s * 1000) & 0xFFFF_FFFF

    @property
    def boot_us(self) -> int:
        return int(self.ap.time_s * 1e6)

    @property
    def timesync_ns(self) -> int:
        """The vehicle's clock for TIMESYNC, from 1 ns: at boot it reads 0, and tc1 == 0 marks a request."""
        return int(self.ap.time_s * 1e9) + 1

    def tick(self) -> None:
        """Send what is due on every link, plus queued status texts and protocol events."""
        now = self.ap.time_s
        for severity, text in self.calibration.update(now):
            self.ap.say(severity, text)
        events = self._statustext_messages()  # logged before a disarm closes the log: "Disarmed by ..." is in it
        started = self.logger.update()
        if started is not None:
            self.ap.say(mavlink.MAV_SEVERITY_INFO, started)
        reached = list(self.ap.reached_items)
        self.ap.reached_items.clear()
        for seq in reached:
            events.append(mavlink.MAVLink_mission_item_reached_message(seq))
        # Deliberate deviation from PX4 (which beats at a fixed 1 Hz): a HEARTBEAT goes out as soon
        # as what it reports changes, because MAVSDK re-reads health, armed and mode only on
        # heartbeats; without it every "now armable / armed / in mode" waits up to a second.
        state = (self.ap.ready, self.ap.armed, self.ap.mode, self.ap.failsafe, self.ap.prearm_failure() is None)
        if state != self._last_state and now - self._last_state_heartbeat >= STATE_HEARTBEAT_MIN_S:
            self._last_state, self._last_state_heartbeat = state, now
            events += [self._msg_sys_status(), self._msg_heartbeat()]
        for link in self.links:
            for msg in events:
                link.send(msg)
            if reached:
                link.send(self._mission_current())
            for name, interval in link.intervals.items():
                if interval <= 0:
                    continue
                due = link.next_due.get(name, 0.0)
                if now >= due:
                    # Keep the phase but never burst to catch up after a stall.
                    link.next_due[name] = max(due + interval, now)
                    msg = self._build(name)
                    if msg is not None:
                        link.send(msg)
            self._pump_params(link)
            self._retry_upload(link)
            if link.ftp is not None:
                for payload in link.ftp.pending_bursts(FTP_BURST_PER_TICK):
                    self._send_ftp(link, payload)
            self._pump_log_data(link)

    def _build(self, name: str):
        return getattr(self, "_msg_" + name.lower())()

    @staticmethod
    def _version_word() -> int:
        major, minor, patch = PX4_VERSION
        return (major << 24) | (minor << 16) | (patch << 8) | FIRMWARE_TYPE_OFFICIAL

    def _msg_heartbeat(self):
        ap = self.ap
        if not ap.ready:
            status = mavlink.MAV_STATE_BOOT
        elif ap.failsafe:
            status = mavlink.MAV_STATE_CRITICAL
        else:
            status = mavlink.MAV_STATE_ACTIVE if ap.armed else mavlink.MAV_STATE_STANDBY
        return mavlink.MAVLink_heartbeat_message(mavlink.MAV_TYPE_QUADROTOR, mavlink.MAV_AUTOPILOT_PX4,
                                                 ap.mode.base_mode(ap.armed), ap.mode.custom_mode, status, 3)

    def _sensor_health(self) -> int:
        ap = self.ap
        health = SENSORS_HEALTHY
        if not ap.ready:
            health &= ~(mavlink.MAV_SYS_STATUS_SENSOR_3D_GYRO | mavlink.MAV_SYS_STATUS_SENSOR_3D_ACCEL
                        | mavlink.MAV_SYS_STATUS_SENSOR_3D_MAG | mavlink.MAV_SYS_STATUS_AHRS)
        if not ap.gps_fix:
            health &= ~mavlink.MAV_SYS_STATUS_SENSOR_GPS
        health &= ~ap.faults.unhealthy_sensors()
        if ap.rc_available:
            health |= mavlink.MAV_SYS_STATUS_SENSOR_RC_RECEIVER
        if (ap.prearm_failure() is not None or self.calibration.active) and not ap.armed:
            health &= ~mavlink.MAV_SYS_STATUS_PREARM_CHECK
        return health

    def _battery(self) -> tuple[float, float]:
        """(remaining fraction or -1 if unknown, volts or NaN) as the battery monitor reports them."""
        cells = 4
        remaining = self.ap.battery_remaining
        return self.ap.faults.battery_reading(remaining, cells * (3.5 + 0.7 * remaining))

    def _msg_sys_status(self):
        ap = self.ap
        remaining, volts = self._battery()
        millivolts = 65535 if math.isnan(volts) else int(volts * 1000)  # UINT16_MAX: unknown
        present = SENSORS_PRESENT | (mavlink.MAV_SYS_STATUS_SENSOR_RC_RECEIVER if ap.rc_available else 0)
        if self.logger.logging:
            present |= mavlink.MAV_SYS_STATUS_LOGGING
        enabled = present | mavlink.MAV_SYS_STATUS_SENSOR_RC_RECEIVER
        return mavlink.MAVLink_sys_status_message(
            present, enabled, self._sensor_health(), 250, millivolts, int(sum(ap.motor_commands) * 500),
            int(remaining * 100) if remaining >= 0 else -1, 0, 0, 0, 0, 0, 0, 0, 0, 1)

    def _msg_extended_sys_state(self):
        return mavlink.MAVLink_extended_sys_state_message(mavlink.MAV_VTOL_STATE_UNDEFINED, self.ap.landed_state.value)

    def _msg_home_position(self):
        h = self.ap.home
        lat, lon, alt = self.ap.origin.to_global(*h)
        return mavlink.MAVLink_home_position_message(int(lat * 1e7), int(lon * 1e7), int(alt * 1000), h[0], h[1], h[2],
                                                     [1.0, 0.0, 0.0, 0.0], 0.0, 0.0, 0.0, self.boot_us)

    def _global(self) -> tuple[float, float, float]:
        return self.ap.origin.to_global(*self.ap.position)

    def _msg_gps_raw_int(self):
        ap = self.ap
        reading = ap.faults.gps_reading(*self._global())
        lat, lon, alt = reading if reading is not None else (0.0, 0.0, 0.0)
        v = ap.dyn.vel
        fix = mavlink.GPS_FIX_TYPE_3D_FIX if ap.gps_fix else mavlink.GPS_FIX_TYPE_NO_FIX
        sats = int(ap.params["SIM_GPS_USED"]) if reading is not None else 0
        cog = (math.degrees(math.atan2(v[1], v[0])) + 360.0) % 360.0
        return mavlink.MAVLink_gps_raw_int_message(self.boot_us, fix, int(lat * 1e7), int(lon * 1e7), int(alt * 1000),
                                                   90, 120, int(math.hypot(v[0], v[1]) * 100), int(cog * 100), sats,
                                                   int(alt * 1000), 500, 800, 150, 0, 0)

    def _msg_global_position_int(self):
        ap = self.ap
        lat, lon, alt = self._global()
        v = ap.dyn.vel
        heading = (math.degrees(ap.dyn.yaw) + 360.0) % 360.0
        return mavlink.MAVLink_global_position_int_message(
            self.boot_ms, int(lat * 1e7), int(lon * 1e7), int(alt * 1000), int(-ap.dyn.pos[2] * 1000),
            int(v[0] * 100), int(v[1] * 100), int(v[2] * 100), int(heading * 100))

    def _msg_local_position_ned(self):
        p, v = self.ap.dyn.pos, self.ap.dyn.vel
        return mavlink.MAVLink_local_position_ned_message(self.boot_ms, p[0], p[1], p[2], v[0], v[1], v[2])

    def _msg_odometry(self):
        d = self.ap.dyn
        nan_cov = [NAN] + [0.0] * 20
        return mavlink.MAVLink_odometry_message(
            self.boot_us, mavlink.MAV_FRAME_LOCAL_NED, mavlink.MAV_FRAME_BODY_FRD, d.pos[0], d.pos[1], d.pos[2],
            list(d.q), d.vel[0], d.vel[1], d.vel[2], d.omega[0], d.omega[1], d.omega[2], nan_cov, nan_cov, 0,
            mavlink.MAV_ESTIMATOR_TYPE_VIO, 100)

    def _msg_attitude(self):
        d = self.ap.dyn
        (r, p, y), w = self.ap.sensors.attitude(d.euler(), d.omega, self.ap.armed)
        return mavlink.MAVLink_attitude_message(self.boot_ms, r, p, y, w[0], w[1], w[2])

    def _msg_attitude_quaternion(self):
        d = self.ap.dyn
        return mavlink.MAVLink_attitude_quaternion_message(self.boot_ms, d.q[0], d.q[1], d.q[2], d.q[3],
                                                           d.omega[0], d.omega[1], d.omega[2], [0.0, 0.0, 0.0, 0.0])

    def _msg_altitude(self):
        ap = self.ap
        alt_local = -ap.dyn.pos[2]
        amsl = ap.origin.alt_m + alt_local
        return mavlink.MAVLink_altitude_message(self.boot_us, amsl, amsl, alt_local, alt_local, NAN, alt_local)

    def _msg_battery_status(self):
        ap = self.ap
        remaining, volts = self._battery()
        cell_mv = 65535 if math.isnan(volts) else int(volts / 4 * 1000)
        return mavlink.MAVLink_battery_status_message(
            0, mavlink.MAV_BATTERY_FUNCTION_ALL, mavlink.MAV_BATTERY_TYPE_LIPO, 32767, [cell_mv] * 4 + [65535] * 6,
            int(sum(ap.motor_commands) * 500), -1, -1, int(remaining * 100) if remaining >= 0 else -1, 0, 0,
            [0, 0, 0, 0], 0, 0)

    def _msg_vfr_hud(self):
        ap = self.ap
        v = ap.dyn.vel
        heading = int((math.degrees(ap.dyn.yaw) + 360.0) % 360.0)
        throttle = int(100 * sum(ap.motor_commands) / 4)
        return mavlink.MAVLink_vfr_hud_message(math.hypot(v[0], v[1]), math.hypot(v[0], v[1]), heading, throttle,
                                               ap.origin.alt_m - ap.dyn.pos[2], -v[2])

    def _msg_highres_imu(self):
        d = self.ap.dyn
        alt = self.ap.origin.alt_m - d.pos[2]
        pressure = 1013.25 * (1.0 - 2.25577e-5 * alt) ** 5.25588
        f, w, mag, pressure = self.ap.sensors.imu(d.specific_force, d.omega, (0.21, 0.0, 0.42), pressure, self.ap.armed)
        f, w, mag, pressure, updated = self.ap.faults.imu_reading(f, w, mag, pressure, 0x1FFF)
        return mavlink.MAVLink_highres_imu_message(self.boot_us, f[0], f[1], f[2], w[0], w[1], w[2], mag[0], mag[1],
                                                   mag[2], pressure, 0.0, alt, 25.0, updated, 0)

    def _msg_attitude_target(self):
        c = self.ap.ctrl
        return mavlink.MAVLink_attitude_target_message(self.boot_ms, 0, list(c.attitude_sp), *c.rate_sp, c.thrust_sp)

    def _msg_position_target_local_ned(self):
        sp = self.ap.current_setpoint
        if not isinstance(sp, TrajectorySetpoint):
            # PX4 streams it all the time; with no position setpoint (on the ground, attitude control)
            # the vehicle's own position stands in.
            sp = TrajectorySetpoint(self.ap.position, (NAN, NAN, NAN), (NAN, NAN, NAN), self.ap.dyn.yaw, NAN)
        mask = 0
        if any(math.isnan(c) for c in sp.position):
            mask |= _POS_IGNORE
        if any(math.isnan(c) for c in sp.velocity):
            mask |= _VEL_IGNORE
        if any(math.isnan(c) for c in sp.acceleration):
            mask |= _ACC_IGNORE
        return mavlink.MAVLink_position_target_local_ned_message(
            self.boot_ms, mavlink.MAV_FRAME_LOCAL_NED, mask, *sp.position, *sp.velocity, *sp.acceleration,
            sp.yaw, sp.yawspeed if not math.isnan(sp.yawspeed) else 0.0)

    def _msg_servo_output_raw(self):
        u = self.ap.motor_commands
        pwm = [int(1000 + 1000 * c) if self.ap.armed else 900 for c in u]
        # time_usec is a uint32 here (unlike every other time_usec): it wraps every 4294.97 s, as on PX4.
        return mavlink.MAVLink_servo_output_raw_message(self.boot_us & 0xFFFF_FFFF, 0, *pwm, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

    def _msg_estimator_status(self):
        ap = self.ap
        flags = 0
        if ap.ready:
            flags = (mavlink.ESTIMATOR_ATTITUDE | mavlink.ESTIMATOR_VELOCITY_HORIZ | mavlink.ESTIMATOR_VELOCITY_VERT
                     | mavlink.ESTIMATOR_POS_HORIZ_REL | mavlink.ESTIMATOR_POS_VERT_ABS
                     | mavlink.ESTIMATOR_PRED_POS_HORIZ_REL)
            if ap.gps_fix:
                flags |= mavlink.ESTIMATOR_POS_HORIZ_ABS | mavlink.ESTIMATOR_PRED_POS_HORIZ_ABS
        return mavlink.MAVLink_estimator_status_message(self.boot_us, flags, 0.1, 0.1, 0.1, 0.1, 0.0, 0.0, 0.5, 0.8)

    def _msg_system_time(self):
        return mavlink.MAVLink_system_time_message(int(time.time() * 1e6), self.boot_ms)

    def _msg_timesync(self):
        # PX4 asks the companion for its clock too; the reply gives the offset we record.
        return mavlink.MAVLink_timesync_message(0, self.timesync_ns)

    def _msg_mission_current(self):
        return self._mission_current()

    def _mission_current(self):
        """MISSION_CURRENT: seq, and total (UINT16_MAX without a mission) as v1.16.1 fills them.

        Measured on its offboard link before a mission flies, v1.16.1 leaves mission_state and
        mission_mode 0; so does this vehicle then. Once a mission runs it reports ACTIVE / COMPLETE
        (a v1.16.1 mission flight was not measured): MAVSDK 4 tells a finished mission by it here.
        v1.16 also fills the plans' ids (CRC-32s) that its MISSION_ACK / MISSION_COUNT carry as
        opaque_id; pymavlink 2.4's mission messages have no opaque_id, and an id the client never saw
        in an ACK would make MAVSDK take the plan for another one, so they stay 0 ("unknown").
        """
        ap = self.ap
        total = len(ap.mission)
        state = 0
        if total and ap.mission_finished:
            state = mavlink.MISSION_STATE_COMPLETE
        elif total and ap.mode == FlightMode.MISSION:
            state = mavlink.MISSION_STATE_ACTIVE
        return mavlink_extra.MissionCurrent(min(ap.mission_current, max(total - 1, 0)), total or 65535, state,
                                            int(ap.mode == FlightMode.MISSION))

    def _msg_autopilot_version(self):
        version = self._version_word()
        return mavlink.MAVLink_autopilot_version_message(
            CAPABILITIES, version, version, _os_version(), 1, PX4_GIT_HASH, PX4_GIT_HASH, [0] * 8, 0, 0, self.uid,
            [0] * 18)

    def _msg_protocol_version(self):
        return mavlink_extra.ProtocolVersion(200, 100, 200, [0] * 8, MAVLINK_LIBRARY_HASH)

    def _msg_component_metadata(self):
        return mavlink_extra.ComponentMetadata(self.boot_ms, self.metadata.crc, self.metadata.uri)

    def _msg_component_information(self):
        return mavlink_extra.ComponentInformation(self.boot_ms, self.metadata.crc, self.metadata.uri, 0, "")

    def _msg_current_mode(self):
        custom = self.ap.mode.custom_mode
        return mavlink_extra.CurrentMode(modes.standard_mode(custom), custom, custom)

    def _msg_scaled_pressure(self):
        alt = self.ap.origin.alt_m - self.ap.dyn.pos[2]
        pressure = 1013.25 * (1.0 - 2.25577e-5 * alt) ** 5.25588
        temperature = 15.0 - 0.0065 * alt  # ISA, as SIH's barometer
        return mavlink.MAVLink_scaled_pressure_message(self.boot_ms, pressure, 0.0, int(temperature * 100), 0)

    def _msg_wind_cov(self):
        wind = self.ap.dyn.wind_ned
        if not any(wind):
            return None  # no wind estimate, no message (PX4's stream sends only an estimate)
        alt = self.ap.origin.alt_m - self.ap.dyn.pos[2]
        return mavlink.MAVLink_wind_cov_message(self.boot_us, wind[0], wind[1], wind[2], 0.1, 0.1, alt, 0.0, 0.0)

    def _msg_vibration(self):
        return mavlink.MAVLink_vibration_message(self.boot_us, 0.0, 0.0, 0.0, 0, 0, 0)

    def _msg_distance_sensor(self):
        # SIH's downward rangefinder (SIH_DISTSNSR_*): 0 to 100 m, in cm, pointing down (PITCH_270).
        height_cm = int(min(max(-self.ap.dyn.pos[2], 0.0), 100.0) * 100)
        return mavlink.MAVLink_distance_sensor_message(self.boot_ms, 0, 10000, height_cm,
                                                       mavlink.MAV_DISTANCE_SENSOR_LASER, 0,
                                                       mavlink.MAV_SENSOR_ROTATION_PITCH_270, 0)

    def _msg_ping(self):
        self._ping_seq = (self._ping_seq + 1) % 2**32
        return mavlink.MAVLink_ping_message(self.boot_us, self._ping_seq, 0, 0)

    def _msg_open_drone_id_location(self):
        ap = self.ap
        lat, lon, alt = self._global()
        v = ap.dyn.vel
        status = mavlink.MAV_ODID_STATUS_GROUND if ap.landed else mavlink.MAV_ODID_STATUS_AIRBORNE
        direction = int((math.degrees(math.atan2(v[1], v[0])) + 360.0) % 360.0 * 100)
        return mavlink.MAVLink_open_drone_id_location_message(
            0, 0, [0] * 20, status, direction, int(math.hypot(v[0], v[1]) * 100), int(-v[2] * 100),
            int(lat * 1e7), int(lon * 1e7), alt, alt, mavlink.MAV_ODID_HEIGHT_REF_OVER_TAKEOFF,
            -ap.dyn.pos[2] + ap.home[2], mavlink.MAV_ODID_HOR_ACC_1_METER, mavlink.MAV_ODID_VER_ACC_1_METER, 0,
            mavlink.MAV_ODID_SPEED_ACC_0_3_METERS_PER_SECOND, 65535.0, 0)

    def _msg_open_drone_id_system(self):
        lat, lon, alt = self.ap.origin.to_global(*self.ap.home)
        since_2019 = int(time.time()) - 1546300800
        return mavlink.MAVLink_open_drone_id_system_message(0, 0, [0] * 20, 0, 0, int(lat * 1e7), int(lon * 1e7), 1, 0,
                                                            -1000.0, -1000.0, 0, 0, alt, since_2019)

    def _msg_link_node_status(self):
        link_sent = sum(link.sent for link in self.links)
        link_received = sum(link.received for link in self.links)
        return mavlink_extra.LinkNodeStatus(self.boot_ms * 1000, 0, 0, 0, 0, sum(lk.bad_frames for lk in self.links),
                                            0, 0, link_sent, link_received, 0)

    def _msg_time_estimate_to_target(self):
        return mavlink_extra.TimeEstimateToTarget(-1, -1, -1, -1, -1)

    def _msg_current_event_sequence(self):
        return mavlink_extra.CurrentEventSequence(0, 0)

    def _available_modes(self, index: int) -> list:
        """AVAILABLE_MODES: every mode (index 0) or the one numbered ``index`` (from 1), as v1.16.1 lists them."""
        total = len(modes.AVAILABLE_MODES)
        chosen = range(1, total + 1) if index == 0 else [index] if 1 <= index <= total else []
        out = []
        for i in chosen:
            standard, custom, properties, name = modes.AVAILABLE_MODES[i - 1]
            out.append(mavlink_extra.AvailableModes(total, i, standard, custom, properties, name.encode()))
        return out

    # ------------------------------------------------------------------ commands
    def _ack(self, link: Link, command: int, result: CommandResult | int) -> None:
        if isinstance(result, CommandResult):
            result = result.result
        link.send(mavlink.MAVLink_command_ack_message(command, result, 0, 0, link.peer[0], link.peer[1]))

    def _on_command_long(self, link: Link, msg) -> None:
        p = (msg.param1, msg.param2, msg.param3, msg.param4, msg.param5, msg.param6, msg.param7)
        self._command(link, msg.command, p, mavlink.MAV_FRAME_GLOBAL)

    def _on_command_int(self, link: Link, msg) -> None:
        # COMMAND_INT carries lat/lon as degrees * 1e7 in x/y.
        x = msg.x / 1e7 if msg.frame != mavlink.MAV_FRAME_LOCAL_NED else float(msg.x)
        y = msg.y / 1e7 if msg.frame != mavlink.MAV_FRAME_LOCAL_NED else float(msg.y)
        if msg.x == 0 and msg.y == 0:
            x = y = NAN
        p = (msg.param1, msg.param2, msg.param3, msg.param4, x, y, msg.z)
        self._command(link, msg.command, p, msg.frame)

    def _command(self, link: Link, command: int, p: tuple, frame: int) -> None:
        ap = self.ap
        C = mavlink
        if command == C.MAV_CMD_COMPONENT_ARM_DISARM:
            result = self._arm_disarm(p)
        elif command == C.MAV_CMD_NAV_TAKEOFF:
            # PX4 v1.16.1 ACCEPTs an altitude of inf or 1e30 (measured); none is flown: the minimum is.
            alt = inputs.altitude(p[6])
            if frame in (C.MAV_FRAME_GLOBAL_RELATIVE_ALT, C.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT) and not math.isnan(alt):
                alt += ap.origin.alt_m
            result = ap.takeoff(alt, *inputs.latitude_longitude(p[4], p[5]))
        elif command == C.MAV_CMD_NAV_LAND:
            result = ap.land()
        elif command == C.MAV_CMD_NAV_RETURN_TO_LAUNCH:
            result = ap.return_to_launch()
        elif command == C.MAV_CMD_DO_SET_MODE:
            main, sub = _int(p[1]), _int(p[2])
            mode = mode_from_set_mode(main, sub)
            result = ap.set_mode(mode) if mode is not None else CommandResult(
                C.MAV_RESULT_UNSUPPORTED, f"unknown PX4 mode main={main} sub={sub}")
        elif command == C.MAV_CMD_DO_REPOSITION:
            result = self._reposition(p, frame)
        elif command == C.MAV_CMD_DO_ORBIT:
            alt = p[6] + (ap.origin.alt_m if frame in (C.MAV_FRAME_GLOBAL_RELATIVE_ALT, C.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT)
                          and not math.isnan(p[6]) else 0.0)
            result = ap.orbit(p[0], p[1], p[2], p[4], p[5], alt)
        elif command == C.MAV_CMD_DO_CHANGE_SPEED:
            result = ap.change_speed(p[1])
        elif command == C.MAV_CMD_MISSION_START:
            result = ap.start_mission(_int(p[0]))
        elif command == C.MAV_CMD_DO_SET_MISSION_CURRENT:
            result = ap.set_mission_current(_int(p[0]))
            if result.accepted:
                link.send(self._mission_current())
        elif command == C.MAV_CMD_SET_MESSAGE_INTERVAL:
            result = self._set_interval(link, _int(p[0], -1), p[1])
        elif command == C.MAV_CMD_GET_MESSAGE_INTERVAL:
            result = self._get_interval(link, _int(p[0], -1))
        elif command == C.MAV_CMD_REQUEST_MESSAGE:
            result = self._request_message(link, _int(p[0], -1), _int(p[1]))
        elif command == C.MAV_CMD_REQUEST_AUTOPILOT_CAPABILITIES:
            result = self._request_message(link, C.MAVLINK_MSG_ID_AUTOPILOT_VERSION, 0, ack_command=command)
        elif command == C.MAV_CMD_GET_HOME_POSITION:
            result = self._request_message(link, C.MAVLINK_MSG_ID_HOME_POSITION, 0, ack_command=command)
        elif command == C.MAV_CMD_REQUEST_PROTOCOL_VERSION:
            result = self._request_message(link, mavlink_extra.ProtocolVersion.id, 0, ack_command=command)
        elif command == C.MAV_CMD_PREFLIGHT_CALIBRATION:
            code, texts = self.calibration.command(p, ap.time_s, ap.armed)
            for severity, text in texts:
                ap.say(severity, text)
            self.tick_statustexts()
            result = CommandResult(code)  # NO_ACK (-1): PX4 leaves this one unanswered
        elif command == C.MAV_CMD_INJECT_FAILURE:
            result = self._fault_result(ap.faults.inject_failure(_int(p[0], -1), _int(p[1], -1), _int(p[2]),
                                                                 enabled=ap.params["SYS_FAILURE_EN"] != 0))
        elif command == SIM_FAULT_COMMAND:
            result = self._fault_result(ap.faults.inject_sim(_int(p[0], -1), _int(p[1]), p[2], (p[3], p[4], p[5]),
                                                             enabled=ap.params["SYS_FAILURE_EN"] != 0))
        else:
            result = CommandResult(C.MAV_RESULT_UNSUPPORTED)
        if result.reason:
            # The ack has no room for text; PX4 tells the pilot why in a STATUSTEXT first.
            self.tick_statustexts()
        if result.result >= 0:  # negative: answered already (REQUEST_MESSAGE), or PX4 answers nothing
            self._ack(link, command, result)

    def _arm_disarm(self, p: tuple) -> CommandResult:
        """MAV_CMD_COMPONENT_ARM_DISARM as PX4 v1.16.1 reads it: param1 rounded (lroundf) must be 0 or 1;
        anything else is refused with a critical text and no COMMAND_ACK at all (measured)."""
        ap = self.ap
        action = _lround(p[0])
        if action not in (0, 1):
            ap.say(mavlink.MAV_SEVERITY_CRITICAL, f"Unsupported ARM_DISARM param: {p[0]:.3f}")
            self.tick_statustexts()
            return CommandResult(NO_ACK)
        force = _lround(p[1]) == 21196
        if action == 1 and self.calibration.active and not ap.armed:
            ap.say(mavlink.MAV_SEVERITY_CRITICAL, "Arming denied: calibrating")
            return CommandResult(mavlink.MAV_RESULT_TEMPORARILY_REJECTED, "Arming denied: calibrating")
        return ap.arm(force) if action == 1 else ap.disarm(force)

    def _fault_result(self, fault) -> CommandResult:
        """A fault command's outcome, told to the pilot as PX4 tells it."""
        if fault.reason:
            self.ap.say(mavlink.MAV_SEVERITY_WARNING, fault.reason)
        return CommandResult(fault.result, fault.reason)

    def _statustext_messages(self) -> list:
        """Queued texts as STATUSTEXT messages; a text over 50 bytes goes in MAVLink 2 chunks."""
        out = []
        while self.ap.statustexts:
            severity, text = self.ap.statustexts.popleft()
            self.logger.say(severity, text)
            data = text.encode()
            if len(data) <= 50:
                out.append(mavlink.MAVLink_statustext_message(severity, data, 0, 0))
                continue
            self._text_id = self._text_id % 65535 + 1
            chunks = [data[i:i + 50] for i in range(0, len(data), 50)]
            if len(chunks[-1]) == 50:
                chunks.append(b"")  # the receiver knows the text ended from a short chunk
            out += [mavlink.MAVLink_statustext_message(severity, c, self._text_id, n) for n, c in enumerate(chunks)]
        return out

    def tick_statustexts(self) -> None:
        """Send queued status texts now (so a refusal's reason arrives before its ack)."""
        for msg in self._statustext_messages():
            for link in self.links:
                link.send(msg)

    def _reposition(self, p: tuple, frame: int) -> CommandResult:
        ap = self.ap
        if not _int(p[1]) & mavlink.MAV_DO_REPOSITION_FLAGS_CHANGE_MODE:
            return CommandResult(mavlink.MAV_RESULT_UNSUPPORTED, "DO_REPOSITION without the change-mode flag is not supported")
        # PX4 v1.16.1 ACCEPTs lat/lon 1e30 and altitude inf and stays (measured); it flew 25 m towards an
        # altitude of -1e30. Here a value that is no place keeps the current one, always.
        speed, yaw, alt = p[0], p[3], inputs.altitude(p[6])
        lat, lon = inputs.latitude_longitude(p[4], p[5])
        n, e, d = ap.position
        if not (math.isnan(lat) or math.isnan(lon)):
            n, e, _ = ap.origin.to_local(lat, lon, ap.origin.alt_m)
        if not math.isnan(alt):
            if frame in (mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT, mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT):
                alt += ap.origin.alt_m
            d = ap.origin.alt_m - alt
        return ap.reposition(n, e, d, yaw, -1.0 if math.isnan(speed) else speed)

    def _stream_name(self, msg_id: int) -> str | None:
        """The message this vehicle can send for an id (None if it has none)."""
        name = MESSAGE_NAMES.get(msg_id)
        return name if name is not None and hasattr(self, "_msg_" + name.lower()) else None

    def _set_interval(self, link: Link, msg_id: int, interval_us: float) -> CommandResult:
        if not math.isfinite(interval_us):
            return CommandResult(mavlink.MAV_RESULT_FAILED, "message interval is not a number")  # PX4 v1.16.1
        name = self._stream_name(msg_id)
        if name is None:
            return CommandResult(mavlink.MAV_RESULT_FAILED, f"message id {msg_id} is not streamed")  # as PX4
        if interval_us < 0:
            link.intervals[name] = 0.0
        elif interval_us == 0:
            link.intervals[name] = 1.0 / DEFAULT_RATES_HZ[name] if name in DEFAULT_RATES_HZ else 0.0
        else:
            link.intervals[name] = interval_us / 1e6
        link.next_due[name] = self.ap.time_s
        return CommandResult(mavlink.MAV_RESULT_ACCEPTED)

    def _get_interval(self, link: Link, msg_id: int) -> CommandResult:
        """MESSAGE_INTERVAL, then the ack: 0 for a message not streamed (PX4 answers every id so)."""
        name = self._stream_name(msg_id)
        interval = link.intervals.get(name, 0.0) if name is not None else 0.0
        link.send(mavlink.MAVLink_message_interval_message(msg_id & 0xFFFF, int(round(interval * 1e6))))
        return CommandResult(mavlink.MAV_RESULT_ACCEPTED)

    def _request_message(self, link: Link, msg_id: int, param: int,
                         ack_command: int = mavlink.MAV_CMD_REQUEST_MESSAGE) -> CommandResult:
        """The message, then the ACK, as PX4 orders them; DENIED when there is nothing to send."""
        if msg_id == mavlink_extra.AvailableModes.id:
            msgs = self._available_modes(param)
        else:
            name = self._stream_name(msg_id)
            msg = self._build(name) if name is not None else None
            msgs = [msg] if msg is not None else []
        if not msgs:
            return CommandResult(mavlink.MAV_RESULT_DENIED)
        for msg in msgs:
            link.send(msg)
        self._ack(link, ack_command, mavlink.MAV_RESULT_ACCEPTED)
        return CommandResult(NO_ACK)  # acknowledged above

    def _on_set_mode(self, link: Link, msg) -> None:
        mode = mode_from_set_mode((msg.custom_mode >> 16) & 0xFF, (msg.custom_mode >> 24) & 0xFF)
        if mode is not None:
            self.ap.set_mode(mode)

    def _on_manual_control(self, link: Link, msg) -> None:
        # PX4's MANUAL_CONTROL: x pitch, y roll, r yaw in -1000..1000; z throttle 0..1000.
        self.ap.manual_input(msg.x / 1000.0, msg.y / 1000.0, msg.z / 1000.0, msg.r / 1000.0)

    # ------------------------------------------------------------------ offboard
    def _on_set_position_target_local_ned(self, link: Link, msg) -> None:
        mask = msg.type_mask
        pos = (NAN, NAN, NAN) if mask & _POS_IGNORE else (msg.x, msg.y, msg.z)
        vel = (NAN, NAN, NAN) if mask & _VEL_IGNORE else (msg.vx, msg.vy, msg.vz)
        acc = (NAN, NAN, NAN) if mask & _ACC_IGNORE else (msg.afx, msg.afy, msg.afz)
        yaw = NAN if mask & _YAW_IGNORE else msg.yaw
        yawspeed = NAN if mask & _YAW_RATE_IGNORE else msg.yaw_rate
        if msg.coordinate_frame in (mavlink.MAV_FRAME_BODY_NED, mavlink.MAV_FRAME_BODY_OFFSET_NED, mavlink.MAV_FRAME_BODY_FRD):
            # Body frames are yaw-rotated local frames for setpoints (PX4 ignores roll/pitch here).
            yaw_now = self.ap.dyn.yaw
            c, s = math.cos(yaw_now), math.sin(yaw_now)

            def rot(v):
                return (c * v[0] - s * v[1], s * v[0] + c * v[1], v[2])
            vel, acc = rot(vel), rot(acc)
            if not math.isnan(pos[0]):
                p0 = self.ap.position
                dp = rot(pos)
                pos = (p0[0] + dp[0], p0[1] + dp[1], p0[2] + dp[2])
        elif msg.coordinate_frame == mavlink.MAV_FRAME_LOCAL_OFFSET_NED and not math.isnan(pos[0]):
            p0 = self.ap.position
            pos = (p0[0] + pos[0], p0[1] + pos[1], p0[2] + pos[2])
        self.ap.offboard_setpoint(TrajectorySetpoint(pos, vel, acc, yaw, yawspeed))

    def _on_set_position_target_global_int(self, link: Link, msg) -> None:
        mask = msg.type_mask
        pos = (NAN, NAN, NAN)
        if not mask & _POS_IGNORE:
            lat, lon = inputs.latitude_longitude(msg.lat_int / 1e7, msg.lon_int / 1e7)
            if math.isnan(lat) or not inputs.usable(msg.alt, inputs.MAX_ABS_ALTITUDE_M):
                return  # no place on Earth: not a setpoint (and not a sign of life of the offboard stream)
            alt = msg.alt + (self.ap.origin.alt_m if msg.coordinate_frame in (
                mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT, mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT) else 0.0)
            pos = self.ap.origin.to_local(lat, lon, alt)
        vel = (NAN, NAN, NAN) if mask & _VEL_IGNORE else (msg.vx, msg.vy, msg.vz)
        acc = (NAN, NAN, NAN) if mask & _ACC_IGNORE else (msg.afx, msg.afy, msg.afz)
        yaw = NAN if mask & _YAW_IGNORE else msg.yaw
        yawspeed = NAN if mask & _YAW_RATE_IGNORE else msg.yaw_rate
        self.ap.offboard_setpoint(TrajectorySetpoint(pos, vel, acc, yaw, yawspeed))

    def _on_set_attitude_target(self, link: Link, msg) -> None:
        mask = msg.type_mask
        q = None if mask & _ATT_IGNORE else tuple(msg.q)
        rates = (NAN, NAN, NAN) if (mask & _ATT_RATES_IGNORE) == _ATT_RATES_IGNORE else (
            msg.body_roll_rate, msg.body_pitch_rate, msg.body_yaw_rate)
        # Thrust ignored means "keep the current collective", as PX4 holds its last value.
        thrust = self.ap.ctrl.thrust_sp if mask & _ATT_THRUST_IGNORE else msg.thrust
        if not inputs.all_finite(thrust, *(q or ())) or (q is not None and not 0.5 < math.hypot(*q) < 1.5):
            return  # a NaN thrust or quaternion is no attitude: ignored, not flown (it killed the vehicle)
        if q is None:
            q = tuple(self.ap.dyn.q)
        self.ap.offboard_setpoint(AttitudeSetpoint(q_d=q, thrust=thrust, body_rates=rates))

    # ------------------------------------------------------------------ parameters
    def _param_value(self, index: int):
        store = self.ap.params
        name = store.name_at(index)
        spec = store.spec(name)
        ptype = mavlink.MAV_PARAM_TYPE_INT32 if spec.is_int else mavlink.MAV_PARAM_TYPE_REAL32
        return mavlink.MAVLink_param_value_message(name.encode(), _param_wire_value(store[name], spec.is_int), ptype,
                                                   len(store), index)

    def _hash_check(self):
        return mavlink.MAVLink_param_value_message(HASH_CHECK.encode(),
                                                   _param_wire_value(self.ap.params.hash_check(), True),
                                                   mavlink.MAV_PARAM_TYPE_UINT32, len(self.ap.params), HASH_CHECK_INDEX)

    def _on_param_request_list(self, link: Link, msg) -> None:
        # PX4 ends the list with _HASH_CHECK (index -1): a client with the same hash may keep its cache.
        link.param_queue = list(range(len(self.ap.params))) + [HASH_CHECK_INDEX]

    def _pump_params(self, link: Link) -> None:
        # Paced so a list request does not flood a slow radio link in one burst.
        batch, link.param_queue = link.param_queue[:PARAMS_PER_TICK], link.param_queue[PARAMS_PER_TICK:]
        for index in batch:
            link.send(self._hash_check() if index == HASH_CHECK_INDEX else self._param_value(index))

    def _param_index(self, param_id: str, param_index: int) -> int | None:
        store = self.ap.params
        if param_index >= 0:
            return param_index if param_index < len(store) else None
        return store.index(param_id) if param_id in store else None

    def _on_param_request_read(self, link: Link, msg) -> None:
        name = msg.param_id.rstrip("\x00") if isinstance(msg.param_id, str) else msg.param_id.decode().rstrip("\x00")
        if name == HASH_CHECK:
            link.send(self._hash_check())
            return
        index = self._param_index(name, msg.param_index)
        if index is None:
            self.ap.say(mavlink.MAV_SEVERITY_WARNING, f"unknown parameter {name}")
            return
        link.send(self._param_value(index))

    def _on_param_set(self, link: Link, msg) -> None:
        name = msg.param_id.rstrip("\x00") if isinstance(msg.param_id, str) else msg.param_id.decode().rstrip("\x00")
        store = self.ap.params
        if name not in store:
            self.ap.say(mavlink.MAV_SEVERITY_WARNING, f"unknown parameter {name}")
            return
        try:
            store.set(name, _param_from_wire(msg.param_value, msg.param_type))
        except ParamError as exc:
            self.ap.say(mavlink.MAV_SEVERITY_WARNING, str(exc))
        self.ap.apply_params()
        # PX4 always answers a set with the value now stored: a client sees a refusal as an unchanged value.
        for each in self.links:
            each.send(self._param_value(store.index(name)))

    # ------------------------------------------------------------------ mission protocol
    def _on_mission_count(self, link: Link, msg) -> None:
        mtype = getattr(msg, "mission_type", 0)
        peer = (msg.get_srcSystem(), msg.get_srcComponent())
        if msg.count == 0:
            self._install(mtype, [])
            link.send(mavlink.MAVLink_mission_ack_message(peer[0], peer[1], mavlink.MAV_MISSION_ACCEPTED, mtype))
            return
        link.upload = _Upload(mtype, msg.count, peer)
        self._request_item(link)

    def _request_item(self, link: Link) -> None:
        up = link.upload
        assert up is not None
        up.asked_at = time.monotonic()
        link.send(mavlink.MAVLink_mission_request_int_message(up.peer[0], up.peer[1], len(up.items), up.mission_type))

    def _retry_upload(self, link: Link) -> None:
        up = link.upload
        if up is None or time.monotonic() - up.asked_at < MISSION_RETRY_S:
            return
        if up.retries >= MISSION_RETRIES:
            link.send(mavlink.MAVLink_mission_ack_message(up.peer[0], up.peer[1], mavlink.MAV_MISSION_OPERATION_CANCELLED,
                                                          up.mission_type))
            link.upload = None
            return
        up.retries += 1
        self._request_item(link)

    def _on_mission_item_int(self, link: Link, msg) -> None:
        up = link.upload
        if up is None or getattr(msg, "mission_type", 0) != up.mission_type:
            return
        if msg.seq != len(up.items):
            self._request_item(link)  # a repeat or a skip: ask again for the one we need
            return
        item = MissionItem.from_message(msg)
        invalid = _invalid_item_field(msg)
        if invalid is not None:
            link.send(mavlink.MAVLink_mission_ack_message(up.peer[0], up.peer[1], invalid, up.mission_type))
            link.upload = None
            return
        if item.mission_type == mavlink.MAV_MISSION_TYPE_MISSION and item.frame not in SUPPORTED_FRAMES:
            link.send(mavlink.MAVLink_mission_ack_message(up.peer[0], up.peer[1], mavlink.MAV_MISSION_UNSUPPORTED_FRAME,
                                                          up.mission_type))
            link.upload = None
            return
        up.items.append(item)
        up.retries = 0
        if len(up.items) < up.count:
            self._request_item(link)
            return
        self._install(up.mission_type, up.items)
        link.send(mavlink.MAVLink_mission_ack_message(up.peer[0], up.peer[1], mavlink.MAV_MISSION_ACCEPTED, up.mission_type))
        link.upload = None

    _on_mission_item = _on_mission_item_int

    def _install(self, mission_type: int, items: list[MissionItem]) -> None:
        if mission_type == mavlink.MAV_MISSION_TYPE_MISSION:
            self.ap.set_mission(items)
        else:
            self.ap.extra_missions[mission_type] = items

    def _items(self, mission_type: int) -> list[MissionItem]:
        if mission_type == mavlink.MAV_MISSION_TYPE_MISSION:
            return self.ap.mission
        return self.ap.extra_missions.get(mission_type, [])

    def _on_mission_request_list(self, link: Link, msg) -> None:
        mtype = getattr(msg, "mission_type", 0)
        link.send(mavlink.MAVLink_mission_count_message(msg.get_srcSystem(), msg.get_srcComponent(),
                                                        len(self._items(mtype)), mtype))

    def _on_mission_request_int(self, link: Link, msg) -> None:
        mtype = getattr(msg, "mission_type", 0)
        items = self._items(mtype)
        if not 0 <= msg.seq < len(items):
            link.send(mavlink.MAVLink_mission_ack_message(msg.get_srcSystem(), msg.get_srcComponent(),
                                                          mavlink.MAV_MISSION_INVALID_SEQUENCE, mtype))
            return
        it = items[msg.seq]
        current = int(mtype == mavlink.MAV_MISSION_TYPE_MISSION and msg.seq == self.ap.mission_current)
        if msg.get_type() == "MISSION_REQUEST":
            scale = 1e7 if it.frame not in (mavlink.MAV_FRAME_LOCAL_NED,) else 1e4
            out = mavlink.MAVLink_mission_item_message(msg.get_srcSystem(), msg.get_srcComponent(), it.seq, it.frame,
                                                       it.command, current, it.autocontinue, it.param1, it.param2,
                                                       it.param3, it.param4, it.x / scale, it.y / scale, it.z, mtype)
        else:
            out = mavlink.MAVLink_mission_item_int_message(msg.get_srcSystem(), msg.get_srcComponent(), it.seq, it.frame,
                                                           it.command, current, it.autocontinue, it.param1, it.param2,
                                                           it.param3, it.param4, it.x, it.y, it.z, mtype)
        link.send(out)

    _on_mission_request = _on_mission_request_int

    def _on_mission_clear_all(self, link: Link, msg) -> None:
        mtype = getattr(msg, "mission_type", 0)
        if mtype == mavlink.MAV_MISSION_TYPE_ALL:
            self._install(mavlink.MAV_MISSION_TYPE_MISSION, [])
            self.ap.extra_missions.clear()
        else:
            self._install(mtype, [])
        link.send(mavlink.MAVLink_mission_ack_message(msg.get_srcSystem(), msg.get_srcComponent(),
                                                      mavlink.MAV_MISSION_ACCEPTED, mtype))

    def _on_mission_set_current(self, link: Link, msg) -> None:
        if self.ap.set_mission_current(msg.seq).accepted:
            for each in self.links:
                each.send(self._mission_current())

    # ------------------------------------------------------------------ files: FTP and flight logs
    def _on_file_transfer_protocol(self, link: Link, msg) -> None:
        if msg.target_component not in (0, self.compid):
            return
        if link.ftp is None:
            link.ftp = FtpServer(self.root)
        for payload in link.ftp.handle(bytes(msg.payload)):
            self._send_ftp(link, payload)

    def _send_ftp(self, link: Link, payload: bytes) -> None:
        link.send(mavlink.MAVLink_file_transfer_protocol_message(0, link.peer[0], link.peer[1], list(payload)))

    def _logs(self) -> list[LogFile]:
        return self.logger.files()

    def _on_log_request_list(self, link: Link, msg) -> None:
        # v1.16.1 numbers logs from 0, reports last_log_num as the count, and says nothing when there
        # are none (measured).
        logs = self._logs()
        last = min(msg.end, len(logs) - 1)
        for log_id in range(max(0, msg.start), last + 1):
            log = logs[log_id]
            link.send(mavlink.MAVLink_log_entry_message(log_id, len(logs), len(logs), log.time_utc, log.size))

    def _on_log_request_data(self, link: Link, msg) -> None:
        self._end_log_transfer(link)
        logs = self._logs()
        if not 0 <= msg.id < len(logs) or msg.ofs >= logs[msg.id].size:
            return  # PX4 answers an unknown log or an offset past the end with nothing
        log = logs[msg.id]
        end = min(log.size, msg.ofs + msg.count)
        link.log_transfer = _LogTransfer(msg.id, open(log.path, "rb"), msg.ofs, end)

    def _pump_log_data(self, link: Link) -> None:
        transfer = link.log_transfer
        for _ in range(LOG_DATA_PER_TICK if transfer is not None else 0):
            transfer.handle.seek(transfer.offset)
            data = transfer.handle.read(min(LOG_DATA_LEN, transfer.end - transfer.offset))
            if not data:
                break
            link.send(mavlink.MAVLink_log_data_message(transfer.log_id, transfer.offset, len(data),
                                                       list(data.ljust(LOG_DATA_LEN, b"\0"))))
            transfer.offset += len(data)
        if transfer is not None and transfer.offset >= transfer.end:
            self._end_log_transfer(link)

    def _end_log_transfer(self, link: Link) -> None:
        if link.log_transfer is not None:
            link.log_transfer.handle.close()
            link.log_transfer = None

    def _on_log_request_end(self, link: Link, msg) -> None:
        self._end_log_transfer(link)

    def _on_log_erase(self, link: Link, msg) -> None:
        for each in self.links:
            self._end_log_transfer(each)
        self.logger.erase()

    # ------------------------------------------------------------------ time
    def _on_ping(self, link: Link, msg) -> None:
        if msg.target_system == 0:  # a request: answer it so the client can measure the round trip
            link.send(mavlink.MAVLink_ping_message(msg.time_usec, msg.seq, msg.get_srcSystem(), msg.get_srcComponent()))

    def _on_timesync(self, link: Link, msg) -> None:
        now_ns = self.timesync_ns
        if msg.tc1 == 0:
            link.send(mavlink.MAVLink_timesync_message(now_ns, msg.ts1))
        elif msg.ts1 > 0:
            # Our own request came back: the client's clock at the midpoint of the round trip.
            rtt = now_ns - msg.ts1
            if 0 <= rtt < 1e9:
                self.time_offset_ns = msg.tc1 - (msg.ts1 + rtt // 2)
