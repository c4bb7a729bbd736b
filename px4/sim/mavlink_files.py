"""Files: MAVLink FTP over the vehicle's own folder, and flight-log download (LOG_REQUEST_*), each
sent in bursts a tick at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from pymavlink.dialects.v20 import common as mavlink

from px4.sim.flight_log import FlightLogger, LogFile
from px4.sim.mavlink_dispatch import handles
from px4.sim.mavlink_ftp import FtpServer
from px4.sim.mavlink_link import Link

# What PX4 SITL's working folder (its FTP root) holds besides log/, as a user lists it (measured on v1.16.1):
# dataman (the mission store), eeprom/ (parameters of an instance) and etc/ with init.d-posix/rcS. The
# built-in vehicle keeps its state in memory, so these say so instead of holding PX4's data.
RCS = "etc/init.d-posix/rcS"
RCS_TEXT = """#!/bin/sh
# quad-hil's built-in vehicle, imitating PX4 v1.16.1 SITL (SIH, airframe 10040). It runs no start script:
# its parameters are set with `hil sim --param NAME=VALUE` and kept in memory, as are its missions.
"""


def px4_root_files(root: Path) -> None:
    """PX4's own names in the vehicle's folder: a user listing or reading them over FTP finds them."""
    (root / RCS).parent.mkdir(parents=True, exist_ok=True)
    (root / RCS).write_text(RCS_TEXT)
    (root / "eeprom").mkdir(exist_ok=True)
    (root / "dataman").touch()


FTP_BURST_PER_TICK = 20
LOG_DATA_PER_TICK = 20
LOG_DATA_LEN = 90


@dataclass
class _LogTransfer:
    """A LOG_REQUEST_DATA being answered: chunks of one log, ``offset`` up to ``end``."""

    log_id: int
    handle: BinaryIO
    offset: int
    end: int



class FileProtocols:
    """Serves FTP sessions over the vehicle's folder and flight-log transfers, each link its own.

    A member of `MavlinkServer` (px4/sim/mavlink_server.py), as PX4's mavlink module holds its FTP and log
    handlers: it is handed the folder, its component id and the flight logger, and keeps its own state.
    """

    def __init__(self, root: Path, compid: int, logger: FlightLogger) -> None:
        self.root = root
        self.compid = compid
        self.logger = logger
        self._ftp_sessions: dict[Link, FtpServer] = {}
        self._log_transfers: dict[Link, _LogTransfer] = {}

    # ---- files: FTP and flight logs
    @handles(mavlink.MAVLINK_MSG_ID_FILE_TRANSFER_PROTOCOL)
    def _on_file_transfer_protocol(self, link: Link, msg) -> None:
        if msg.target_component not in (0, self.compid):
            return
        session = self._ftp_sessions.get(link)
        if session is None:
            session = self._ftp_sessions[link] = FtpServer(self.root)
        for payload in session.handle(bytes(msg.payload)):
            self._send_ftp(link, payload)

    def pump(self, link: Link) -> None:
        """What `link`'s FTP session and log transfer send this tick, a burst of each."""
        session = self._ftp_sessions.get(link)
        if session is not None:
            for payload in session.pending_bursts(FTP_BURST_PER_TICK):
                self._send_ftp(link, payload)
        self._pump_log_data(link)

    def close(self) -> None:
        """End every link's FTP session and log transfer."""
        for session in self._ftp_sessions.values():
            session.close()
        self._ftp_sessions.clear()
        for link in list(self._log_transfers):
            self._end_log_transfer(link)

    def _send_ftp(self, link: Link, payload: bytes) -> None:
        link.send(mavlink.MAVLink_file_transfer_protocol_message(0, link.peer[0], link.peer[1], list(payload)))

    def _logs(self) -> list[LogFile]:
        return self.logger.files()

    @handles(mavlink.MAVLINK_MSG_ID_LOG_REQUEST_LIST)
    def _on_log_request_list(self, link: Link, msg) -> None:
        # v1.16.1 numbers logs from 0, reports last_log_num as the count, and says nothing when there
        # are none (measured).
        logs = self._logs()
        last = min(msg.end, len(logs) - 1)
        for log_id in range(max(0, msg.start), last + 1):
            log = logs[log_id]
            link.send(mavlink.MAVLink_log_entry_message(log_id, len(logs), len(logs), log.time_utc, log.size))

    @handles(mavlink.MAVLINK_MSG_ID_LOG_REQUEST_DATA)
    def _on_log_request_data(self, link: Link, msg) -> None:
        self._end_log_transfer(link)
        logs = self._logs()
        if not 0 <= msg.id < len(logs) or msg.ofs >= logs[msg.id].size:
            return  # PX4 answers an unknown log or an offset past the end with nothing
        log = logs[msg.id]
        end = min(log.size, msg.ofs + msg.count)
        self._log_transfers[link] = _LogTransfer(msg.id, open(log.path, "rb"), msg.ofs, end)

    def _pump_log_data(self, link: Link) -> None:
        transfer = self._log_transfers.get(link)
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
        transfer = self._log_transfers.pop(link, None)
        if transfer is not None:
            transfer.handle.close()

    @handles(mavlink.MAVLINK_MSG_ID_LOG_REQUEST_END)
    def _on_log_request_end(self, link: Link, msg) -> None:
        self._end_log_transfer(link)

    @handles(mavlink.MAVLINK_MSG_ID_LOG_ERASE)
    def _on_log_erase(self, link: Link, msg) -> None:
        for each in list(self._log_transfers):
            self._end_log_transfer(each)
        self.logger.erase()
