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
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import time
from dataclasses import dataclass
from typing import AsyncIterator

from pymavlink.dialects.v20 import common as mavlink

from bridges.transport import TransportError, parse_url
from px4.external_physics.links import SerialLink
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
                 arm_allowed: bool):
        self.sim_loop = loop
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
                self.sim_loop.send(msg.get_msgbuf())

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
    Raises TransportError for a URL that is not a serial port, HitlModeError when the board is
    not in HITL mode or does not answer.
    """
    endpoint = parse_url(serial_url)
    if endpoint.scheme not in ("serial", "pyserial"):
        raise TransportError(f"connection string {serial_url!r}: a HITL bench needs the board's serial port "
                             "(serial:///dev/DEVICE:BAUD or a pyserial URL)")
    link = SerialLink(endpoint.device, endpoint.baud)
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
        router = _Router(None, port, sysid, compid, arm_allowed)
        loop = SimulatorLoop(sim, link, simulator.speed or 1.0, lockstep=False, on_message=router.to_client)
        router.sim_loop = loop
        router.transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
            lambda: router, sock=router._sock)
        loop.start()
        yield HitlBench(f"udpin://127.0.0.1:{port}", sysid, sim, loop, router)
    finally:
        if loop is not None:
            loop.stop()
        if router is not None:
            router.close()
        link.close()
