"""One MAVLink port of the built-in vehicle: its codec and sequence numbers, its stream rates and
the protocol state kept per link (parameter list, mission upload, FTP, log transfer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pymavlink.dialects.v20 import common as mavlink

from px4.sim.mavlink_ftp import FtpServer
from px4.sim.mavlink_telemetry import DEFAULT_RATES_HZ

if TYPE_CHECKING:  # annotations only
    from px4.sim.mavlink_files import _LogTransfer
    from px4.sim.mavlink_mission import _Upload


class Link:
    """One MAVLink port of the vehicle: codec, rates and per-link protocol state."""

    def __init__(self, transport, sysid: int, compid: int):
        self.transport = transport
        self.mav = mavlink.MAVLink(None, srcSystem=sysid, srcComponent=compid)
        self.mav.robust_parsing = True
        self.intervals = {name: 1.0 / hz for name, hz in DEFAULT_RATES_HZ.items()}
        self.next_due: dict[str, float] = {}
        # The earliest vehicle time any stream is due (min of next_due); whoever changes `intervals` resets
        # it to now, so the table is walked only when something is due, not every tick.
        self.streams_due = 0.0
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
