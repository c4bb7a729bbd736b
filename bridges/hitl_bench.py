"""A flight controller on the desk in HITL mode, flown by the harness's physics over its serial port.

    async with hitl_bench("serial:///dev/ttyACM0:921600", SimulatorOptions(profile="default")) as bench:
        vehicle = await connect(bench.url)      # MAVSDK reaches the board through the bench
        bench.simulator.dyn.pos                 # ground truth of the simulated vehicle

On a board with SYS_HITL = 1 PX4 ignores its own sensors, reads HIL_SENSOR / HIL_GPS from the
link and reports its outputs as HIL_ACTUATOR_CONTROLS instead of driving its motors. The bench:

1. opens the serial URL (`bridges.transport.parse_url`: ``serial:///dev/DEV:BAUD`` or any pyserial
   URL), waits for the board's HEARTBEAT and reads SYS_HITL. Nothing but that parameter request
   goes to the board before the answer; a board not in HITL mode is refused (`HitlModeError`,
   naming SYS_HITL), since its real motors would follow the harness's commands;
2. runs the simulator against the board at ``speed`` (1 unless given; a board has no lockstep);
3. routes the board's other MAVLink to a client (MAVSDK) on loopback UDP, and the client's back,
   as jMAVSim does in HITL. Arming is refused at the bench (COMMAND_ACK DENIED with a STATUSTEXT
   saying why) unless ``arm_allowed``: the same explicit flag as every other piece of hardware.
   MANUAL_CONTROL is dropped too then, since PX4 arms on a stick gesture.

Before anything is sent the bench weighs the line: HIL_SENSOR at the profile's IMU rate and HIL_GPS at its
GPS rate one way, PX4's HIL_ACTUATOR_CONTROLS (one per sensor frame) the other, against BAUD/10 bytes a
second (8N1). A line that cannot carry them within LINE_HEADROOM is refused (`LineTooSlow`) with both
figures. While it runs the bench measures the line (`HitlBench.line`): bytes a second each way, the
HIL_SENSOR frames it sent, the IMU rate the firmware integrated from them (PX4's SCALED_IMU, asked for at
IMU_REPORT_HZ and counted on the board's own clock, time_boot_ms) and the board's frames lost on the way
(gaps in its MAVLink sequence numbers).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import socket
import struct
import time
from dataclasses import dataclass
from typing import AsyncIterator

from pymavlink.dialects.v20 import common as mavlink

from bridges.transport import TransportError, parse_url
from px4.external_physics.hil_messages import HilEncoder
from px4.external_physics.links import SerialLink, SimulatorLinkError
from px4.external_physics.lockstep import SimulatorLoop
from px4.external_physics.simulator import HarnessSimulator, SimulatorOptions
from px4.process import free_udp_port

HITL_PARAM = "SYS_HITL"
HEARTBEAT_TIMEOUT_S = 10.0
PARAM_TIMEOUT_S = 5.0
PARAM_RETRY_S = 1.0
ARM_REFUSAL = "arming blocked: HITL bench arm_allowed off"  # STATUSTEXT holds 50 characters
# The bench speaks to the board as a ground station would.
BENCH_SYSID = 255
BENCH_COMPID = 190
BITS_PER_BYTE = 10  # 8N1: a start bit, 8 data bits, a stop bit
# The share of the line HITL may take: the rest carries the ground station's commands, parameters and missions.
LINE_HEADROOM = 0.8
IMU_REPORT_HZ = 500.0  # above the IMU rate, so that every sample PX4 integrates is reported
SERIAL_LINK_TABLE = "serial_link"  # the record's table of the line's figures
MAVLINK2_OVERHEAD = 12  # header and checksum around a MAVLink 2 frame's payload (unsigned)


class LineTooSlow(SimulatorLinkError):
    """The serial line cannot carry what HITL needs; the message has both figures."""


@dataclass(frozen=True)
class LineNeed:
    """Bytes a second HITL needs each way for a simulator's rates."""

    imu_hz: float
    gps_hz: float
    sensor_frame: int  # bytes of one HIL_SENSOR
    gps_frame: int
    controls_frame: int  # bytes of one HIL_ACTUATOR_CONTROLS

    @classmethod
    def of(cls, simulator: SimulatorOptions) -> "LineNeed":
        sensors = simulator.sensors or simulator.vehicle_profile().sensors
        encoder = HilEncoder()
        # Every field set, as in flight: MAVLink 2 trims only trailing zero bytes.
        sensor = encoder.hil_sensor(1 << 40, (0.1, 0.1, -9.8), (0.1, 0.1, 0.1), (0.2, 0.1, 0.4), 950.0, 0.1, 500.0,
                                    25.0, 0x1FFF)
        gps = encoder.hil_gps(1 << 40, 47.4, 8.5, 500.0, (1.0, 1.0, 0.1), 0.5, 0.8, 12)
        controls = mavlink.MAVLink_hil_actuator_controls_message(1 << 40, [0.5] * 16, 129, 1).pack(
            mavlink.MAVLink(None, srcSystem=1, srcComponent=1))
        return cls(sensors.imu_rate_hz, sensors.gps_rate_hz, len(sensor), len(gps), len(controls))

    @property
    def up(self) -> float:
        """To the board: the sensors."""
        return self.imu_hz * self.sensor_frame + self.gps_hz * self.gps_frame

    @property
    def down(self) -> float:
        """From the board: one HIL_ACTUATOR_CONTROLS per sensor frame."""
        return self.imu_hz * self.controls_frame

    def check(self, baud: int, name: str) -> None:
        """LineTooSlow when a `baud` line cannot carry this within LINE_HEADROOM."""
        capacity = baud / BITS_PER_BYTE
        if max(self.up, self.down) <= LINE_HEADROOM * capacity:
            return
        raise LineTooSlow(
            f"{name}: HITL needs {self.up:.0f} B/s to the board (HIL_SENSOR {self.imu_hz:g} Hz x {self.sensor_frame} B "
            f"+ HIL_GPS {self.gps_hz:g} Hz x {self.gps_frame} B) and {self.down:.0f} B/s back (HIL_ACTUATOR_CONTROLS "
            f"{self.imu_hz:g} Hz x {self.controls_frame} B); a {baud} baud line carries {capacity:.0f} B/s (8N1), of "
            f"which HITL may take {LINE_HEADROOM:.0%} ({LINE_HEADROOM * capacity:.0f} B/s). Use the board's USB port "
            f"at 921600 baud, or at least {_baud_for(max(self.up, self.down))} baud")


def _baud_for(bytes_per_s: float) -> int:
    """The smallest standard baud rate that carries `bytes_per_s` within LINE_HEADROOM."""
    for baud in (57600, 115200, 230400, 460800, 500000, 921600, 1500000, 2000000, 3000000):
        if bytes_per_s <= LINE_HEADROOM * baud / BITS_PER_BYTE:
            return baud
    return 4000000


class _WallClockLoop(SimulatorLoop):
    """The exchange with a board, which runs on its own clock: the physics is kept on the wall clock. When the
    host falls behind (a loaded machine), the physics steps through every frame that is due and only the
    newest reading goes out, with any GPS fix among the skipped ones, as a board's sensors read the vehicle as
    it is now. Sending every late frame in a burst instead would hand PX4 samples it stamps with one time
    (its MavlinkReceiver stamps each on arrival) while the physics fell behind the board's clock."""

    skipped = 0  # frames the physics stepped whose IMU reading never went out

    def _exchange(self) -> None:
        # A bench's simulator keeps its pace ahead of the host's other work where it may (real-time scheduling of
        # this thread); the board is not waiting for a busy desktop either.
        with contextlib.suppress(OSError, AttributeError):
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(5))
        sim, link, stats = self.simulator, self.link, self.stats
        start, start_us = time.monotonic(), sim.time_us
        while not self._stop.is_set():
            now = time.monotonic()
            due = int((now - start) * 1e6) // sim.frame_us - (sim.time_us - start_us) // sim.frame_us
            if due <= 0:
                next_at = start + (sim.time_us - start_us + sim.frame_us) * 1e-6
                self._receive(link.read(max(0.0, next_at - now)))
                continue
            out = bytearray()
            for k in range(due):
                gps_due = sim.sensors.gps_due()
                data = sim.frame()
                if k == due - 1:
                    out += data
                elif gps_due:
                    out += data[data[1] + MAVLINK2_OVERHEAD:]  # the fix, after this frame's HIL_SENSOR
            self.skipped += due - 1
            link.write(bytes(out))
            stats.frames += 1
            self._receive(link.read(0.0))
            stats.last_wall, stats.last_us = time.monotonic(), sim.time_us


class _MeteredLink:
    """A ByteLink that counts the bytes each way."""

    def __init__(self, link: SerialLink):
        self._link = link
        self.name = link.name
        self.written = self.read_bytes = 0

    def write(self, data: bytes) -> None:
        self._link.write(data)
        self.written += len(data)

    def read(self, timeout_s: float) -> bytes:
        data = self._link.read(timeout_s)
        self.read_bytes += len(data)
        return data

    def close(self) -> None:
        self._link.close()


class LineMeter:
    """What the serial line carried (see the module docstring); `summary()` is one row of SERIAL_LINK_TABLE."""

    def __init__(self, link: _MeteredLink, baud: int | None, need: LineNeed, board: tuple[int, int]):
        self.link = link
        self.baud = baud
        self.need = need
        self.board = board
        self.loop: SimulatorLoop | None = None
        self.started = time.monotonic()
        self.received = 0  # the board's own frames other than HIL_ACTUATOR_CONTROLS
        self.expected = 0  # frames its sequence numbers say it sent since the first one seen
        self._last_seq: int | None = None
        self._imu_first_ms: int | None = None
        self._imu_last_ms = 0
        self._imu_samples = 0

    def saw(self, msg) -> None:
        """A frame from the board (on the simulator's thread)."""
        if (msg.get_srcSystem(), msg.get_srcComponent()) != self.board:
            return
        seq = msg.get_seq()
        if self._last_seq is not None:
            self.expected += (seq - self._last_seq) % 256
        self._last_seq = seq
        self.received += 1
        if msg.get_msgId() == mavlink.MAVLINK_MSG_ID_SCALED_IMU and msg.time_boot_ms != self._imu_last_ms:
            if self._imu_first_ms is None:
                self._imu_first_ms = msg.time_boot_ms
            else:
                self._imu_samples += 1
            self._imu_last_ms = msg.time_boot_ms

    @property
    def imu_consumed_hz(self) -> float:
        """IMU samples a second the firmware integrated, on its own clock (NaN before two reports)."""
        if self._imu_first_ms is None or self._imu_last_ms <= self._imu_first_ms:
            return math.nan
        return self._imu_samples * 1000.0 / (self._imu_last_ms - self._imu_first_ms)

    def summary(self) -> dict[str, float | int | None]:
        wall = max(1e-9, time.monotonic() - self.started)
        stats = self.loop.stats if self.loop is not None else None
        replies = stats.replies if stats is not None else 0
        capacity = self.baud / BITS_PER_BYTE if self.baud else math.nan
        return {
            "baud": self.baud, "capacity_B_s": capacity, "wall_s": wall,
            "up_B_s": self.link.written / wall, "down_B_s": self.link.read_bytes / wall,
            "needed_up_B_s": self.need.up, "needed_down_B_s": self.need.down,
            "hil_sensor_sent_hz": (stats.frames if stats is not None else 0) / wall,
            "hil_sensor_skipped": getattr(self.loop, "skipped", 0),
            "imu_consumed_hz": self.imu_consumed_hz,
            "frames_received": self.received + replies,
            # The board's HIL_ACTUATOR_CONTROLS are applied, not routed: they count as received here.
            "frames_dropped": max(0, self.expected + 1 - self.received - replies) if self.received else 0,
        }


class HitlModeError(RuntimeError):
    """The board is not in HITL mode, or did not say; nothing was sent to its actuators."""


@dataclass
class HitlBench:
    """A board in HITL mode on the harness's physics."""

    url: str  # MAVSDK connection string of the routed board
    board_sysid: int
    simulator: HarnessSimulator
    loop: SimulatorLoop
    router: "_Router"
    line: LineMeter

    @property
    def blocked_commands(self) -> int:
        """Arm commands and stick inputs the bench kept from the board."""
        return self.router.blocked


async def read_hitl_mode(link: SerialLink, heartbeat_timeout_s: float = HEARTBEAT_TIMEOUT_S,
                         param_timeout_s: float = PARAM_TIMEOUT_S) -> tuple[int, int, int]:
    """(SYS_HITL, system id, component id) of the autopilot on ``link``; HitlModeError when it does not
    answer. Sends nothing but SYS_HITL requests."""
    return await asyncio.to_thread(_read_hitl_mode, link, heartbeat_timeout_s, param_timeout_s)


def _read_hitl_mode(link: SerialLink, heartbeat_timeout_s: float, param_timeout_s: float) -> tuple[int, int, int]:
    parser = mavlink.MAVLink(None)
    parser.robust_parsing = True
    deadline = time.monotonic() + heartbeat_timeout_s
    board = None
    while board is None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise HitlModeError(f"{link.name}: no autopilot HEARTBEAT within {heartbeat_timeout_s:g} s "
                                "(is the board powered, and is this its MAVLink port and baud rate?)")
        for msg in parser.parse_buffer(link.read(min(left, 0.2))) or ():
            if msg.get_type() == "HEARTBEAT" and msg.autopilot != mavlink.MAV_AUTOPILOT_INVALID:
                board = (msg.get_srcSystem(), msg.get_srcComponent())
    request = mavlink.MAVLink(None, srcSystem=BENCH_SYSID, srcComponent=BENCH_COMPID)
    deadline = time.monotonic() + param_timeout_s
    next_request = 0.0
    while True:
        now = time.monotonic()
        if now > deadline:
            raise HitlModeError(f"{link.name}: the board (system {board[0]}) did not report {HITL_PARAM} within "
                                f"{param_timeout_s:g} s; not starting HITL without knowing it is in HITL mode")
        if now >= next_request:
            link.write(mavlink.MAVLink_param_request_read_message(board[0], board[1], HITL_PARAM.encode(),
                                                                  -1).pack(request))
            next_request = now + PARAM_RETRY_S
        for msg in parser.parse_buffer(link.read(0.1)) or ():
            if msg.get_type() == "PARAM_VALUE" and msg.param_id == HITL_PARAM and msg.get_srcSystem() == board[0]:
                return _param_int(msg), board[0], board[1]


def _param_int(msg) -> int:
    """An integer parameter from PARAM_VALUE: PX4 sends its bytes in the float field (bytewise encoding)."""
    if msg.param_type in (mavlink.MAV_PARAM_TYPE_REAL32, mavlink.MAV_PARAM_TYPE_REAL64):
        return int(round(msg.param_value))
    return struct.unpack("<i", struct.pack("<f", msg.param_value))[0]


class _Router(asyncio.DatagramProtocol):
    """The board's MAVLink (other than the HIL messages) to a UDP client and back, arming gated."""

    def __init__(self, loop: SimulatorLoop | None, client_port: int, board_sysid: int, board_compid: int,
                 arm_allowed: bool, meter: LineMeter):
        self.sim_loop = loop
        self.meter = meter
        self.client = ("127.0.0.1", client_port)
        self.board = (board_sysid, board_compid)
        self.arm_allowed = arm_allowed
        self.blocked = 0
        self._parser = mavlink.MAVLink(None)
        self._parser.robust_parsing = True
        self._replies = mavlink.MAVLink(None, srcSystem=board_sysid, srcComponent=board_compid)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind(("127.0.0.1", 0))
        self.transport: asyncio.DatagramTransport | None = None

    def to_client(self, msg) -> None:
        """From the board (called on the simulator's thread)."""
        self.meter.saw(msg)
        with contextlib.suppress(OSError):
            self._sock.sendto(msg.get_msgbuf(), self.client)

    def datagram_received(self, data: bytes, addr) -> None:
        self.client = addr
        for msg in self._parser.parse_buffer(data) or ():
            if not self.arm_allowed and self._arms(msg):
                self.blocked += 1
                self._refuse(msg)
                continue
            if self.sim_loop is not None:
                try:
                    self.sim_loop.send(msg.get_msgbuf())
                except SimulatorLinkError:
                    # The board is gone (unplugged, or stopped as a run ends): the loop reading it reports that;
                    # a client's late datagram has nowhere to go.
                    return

    @staticmethod
    def _arms(msg) -> bool:
        kind = msg.get_type()
        if kind == "MANUAL_CONTROL":
            return True
        return (kind in ("COMMAND_LONG", "COMMAND_INT") and msg.command == mavlink.MAV_CMD_COMPONENT_ARM_DISARM
                and msg.param1 == 1.0)

    def _refuse(self, msg) -> None:
        if msg.get_type() == "MANUAL_CONTROL":
            return
        text = mavlink.MAVLink_statustext_message(mavlink.MAV_SEVERITY_WARNING, ARM_REFUSAL.encode())
        ack = mavlink.MAVLink_command_ack_message(msg.command, mavlink.MAV_RESULT_DENIED, 0, 0,
                                                  msg.get_srcSystem(), msg.get_srcComponent())
        with contextlib.suppress(OSError):
            self._sock.sendto(text.pack(self._replies) + ack.pack(self._replies), self.client)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self._sock.close()


@contextlib.asynccontextmanager
async def hitl_bench(serial_url: str, simulator: SimulatorOptions, arm_allowed: bool = False,
                     client_port: int | None = None,
                     heartbeat_timeout_s: float = HEARTBEAT_TIMEOUT_S) -> AsyncIterator[HitlBench]:
    """Run a board in HITL mode on the harness's physics for a block (see the module docstring).

    ``client_port``: the UDP port the client listens on (MAVSDK ``udpin``); a free one by default.
    Raises TransportError for a URL that is not a serial port, LineTooSlow for a baud rate that cannot carry
    HITL (before the port is opened), HitlModeError when the board is not in HITL mode or does not answer.
    """
    endpoint = parse_url(serial_url)
    if endpoint.scheme not in ("serial", "pyserial"):
        raise TransportError(f"connection string {serial_url!r}: a HITL bench needs the board's serial port "
                             "(serial:///dev/DEVICE:BAUD or a pyserial URL)")
    need = LineNeed.of(simulator)
    if endpoint.baud:
        need.check(endpoint.baud, f"{endpoint.device} at {endpoint.baud} baud")
    link = _MeteredLink(SerialLink(endpoint.device, endpoint.baud))
    router = None
    loop = None
    try:
        hitl, sysid, compid = await read_hitl_mode(link, heartbeat_timeout_s)
        if hitl != 1:
            raise HitlModeError(f"{link.name}: the board (system {sysid}) has {HITL_PARAM} = {hitl}, not 1: it is "
                                f"not in HITL mode and would drive its real motors. Set {HITL_PARAM} to 1 and "
                                "reboot it (props off) to use it on the bench")
        sim = HarnessSimulator(simulator)
        port = client_port or free_udp_port()
        meter = LineMeter(link, endpoint.baud, need, (sysid, compid))
        router = _Router(None, port, sysid, compid, arm_allowed, meter)
        loop = _WallClockLoop(sim, link, simulator.speed or 1.0, lockstep=False, on_message=router.to_client)
        router.sim_loop = meter.loop = loop
        # PX4 reports each IMU sample it integrates as SCALED_IMU when asked at least as often as they come.
        link.write(mavlink.MAVLink_command_long_message(
            sysid, compid, mavlink.MAV_CMD_SET_MESSAGE_INTERVAL, 0, mavlink.MAVLINK_MSG_ID_SCALED_IMU,
            1e6 / IMU_REPORT_HZ, 0, 0, 0, 0, 0).pack(mavlink.MAVLink(None, srcSystem=BENCH_SYSID,
                                                                     srcComponent=BENCH_COMPID)))
        router.transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
            lambda: router, sock=router._sock)
        loop.start()
        yield HitlBench(f"udpin://127.0.0.1:{port}", sysid, sim, loop, router, meter)
    finally:
        if loop is not None:
            loop.stop()
        if router is not None:
            router.close()
        link.close()
