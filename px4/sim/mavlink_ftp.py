"""MAVLink FTP (FILE_TRANSFER_PROTOCOL) over a directory, as PX4 serves its working directory.

Each request is the 251-byte payload of a FILE_TRANSFER_PROTOCOL message: ``uint16 seq, uint8
session, uint8 opcode, uint8 size, uint8 req_opcode, uint8 burst_complete, uint8 padding, uint32
offset, uint8 data[239]``. Replies carry seq + 1, ACK (128) or NAK (129) with the request's opcode
in req_opcode and, for a NAK, the error code in data[0] (and errno in data[1] for FailErrno).
Paths are relative to the root (a leading "/" too, as on PX4 SITL, whose root is its working
directory); nothing outside the root can be named. A burst read is answered chunk by chunk over
the following ticks and ends with NAK EOF, burst_complete set, as PX4 ends it (measured on v1.16.1).
"""

from __future__ import annotations

import errno
import os
import shutil
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Iterator

from px4.crc32 import crc32part

HEADER = struct.Struct("<HBBBBBBI")
DATA_MAX = 239
PAYLOAD_LEN = 251

# opcodes
NONE, TERMINATE, RESET, LIST, OPEN_RO, READ, CREATE, WRITE, REMOVE_FILE, MKDIR, RMDIR, OPEN_WO, TRUNCATE, \
    RENAME, CRC32, BURST_READ = range(16)
ACK, NAK = 128, 129
# NAK error codes
FAIL, FAIL_ERRNO, INVALID_DATA_SIZE, INVALID_SESSION, NO_SESSIONS, EOF, UNKNOWN_COMMAND, FILE_EXISTS, \
    FILE_PROTECTED, FILE_NOT_FOUND = range(1, 11)
MAX_SESSIONS = 4


@dataclass
class Request:
    """A decoded request (or reply) payload."""

    seq: int
    session: int
    opcode: int
    size: int
    req_opcode: int
    burst_complete: int
    offset: int
    data: bytes

    @classmethod
    def decode(cls, payload: bytes) -> "Request":
        seq, session, opcode, size, req, burst, _, offset = HEADER.unpack_from(bytes(payload).ljust(PAYLOAD_LEN, b"\0"))
        size = min(size, DATA_MAX)
        return cls(seq, session, opcode, size, req, burst, offset, bytes(payload[12:12 + size]))

    def encode(self) -> bytes:
        head = HEADER.pack(self.seq, self.session, self.opcode, len(self.data), self.req_opcode,
                           self.burst_complete, 0, self.offset)
        return (head + self.data).ljust(PAYLOAD_LEN, b"\0")


@dataclass
class _Session:
    handle: BinaryIO
    path: Path
    writable: bool
    burst: Iterator[Request] | None = field(default=None)


class FtpServer:
    """Answers MAVLink FTP requests for files under ``root``."""

    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        self._sessions: dict[int, _Session] = {}
        self._last: tuple[int, list[bytes]] | None = None

    def handle(self, payload: bytes) -> list[bytes]:
        """Reply payloads to one request (a repeated request gets the same replies again)."""
        req = Request.decode(payload)
        if self._last is not None and self._last[0] == req.seq and req.opcode != BURST_READ:
            return self._last[1]  # the client missed our reply and asked again
        replies = [r.encode() for r in self._dispatch(req)]
        self._last = (req.seq, replies)
        return replies

    def pending_bursts(self, limit: int) -> list[bytes]:
        """Up to ``limit`` further packets of running burst reads (sent over the following ticks)."""
        out = []
        for session in self._sessions.values():
            while session.burst is not None and len(out) < limit:
                packet = next(session.burst, None)
                if packet is None:
                    session.burst = None
                    break
                out.append(packet.encode())
        return out

    def close(self) -> None:
        for session in self._sessions.values():
            session.handle.close()
        self._sessions.clear()

    # ------------------------------------------------------------------ internals
    def _dispatch(self, req: Request) -> list[Request]:
        handler = {TERMINATE: self._terminate, RESET: self._reset, LIST: self._list, OPEN_RO: self._open_ro,
                   READ: self._read, CREATE: self._create, WRITE: self._write, REMOVE_FILE: self._remove_file,
                   MKDIR: self._mkdir, RMDIR: self._rmdir, OPEN_WO: self._open_wo, TRUNCATE: self._truncate,
                   RENAME: self._rename, CRC32: self._crc32, BURST_READ: self._burst}.get(req.opcode)
        if handler is None:
            return [self._nak(req, UNKNOWN_COMMAND)]
        try:
            return handler(req)
        except FileNotFoundError:
            return [self._nak(req, FILE_NOT_FOUND)]
        except FileExistsError:
            return [self._nak(req, FILE_EXISTS)]
        except PermissionError:
            return [self._nak(req, FILE_PROTECTED)]
        except OSError as exc:
            return [self._nak(req, FAIL_ERRNO, exc.errno or errno.EIO)]

    @staticmethod
    def _reply(req: Request, data: bytes = b"", session: int | None = None, offset: int | None = None,
               opcode: int = ACK, burst_complete: int = 0) -> Request:
        return Request((req.seq + 1) % 65536, req.session if session is None else session, opcode, len(data),
                       req.opcode, burst_complete, req.offset if offset is None else offset, data)

    def _nak(self, req: Request, code: int, err: int | None = None, burst_complete: int = 0) -> Request:
        data = bytes([code]) + (bytes([err & 0xFF]) if code == FAIL_ERRNO and err is not None else b"")
        return self._reply(req, data, opcode=NAK, burst_complete=burst_complete)

    def _path(self, req: Request) -> Path:
        """The request's path inside the root; FileNotFoundError for anything that would leave it."""
        text = req.data.split(b"\0", 1)[0].decode("utf-8", errors="replace").strip()
        path = (self.root / text.lstrip("/")).resolve()
        if path != self.root and self.root not in path.parents:
            raise FileNotFoundError(text)
        return path

    def _session(self, req: Request) -> _Session | None:
        return self._sessions.get(req.session)

    def _new_session(self, req: Request, handle: BinaryIO, path: Path, writable: bool) -> Request:
        free = next((n for n in range(MAX_SESSIONS) if n not in self._sessions), None)
        if free is None:
            handle.close()
            return self._nak(req, NO_SESSIONS)
        self._sessions[free] = _Session(handle, path, writable)
        size = path.stat().st_size
        return self._reply(req, struct.pack("<I", size), session=free)

    def _terminate(self, req: Request) -> list[Request]:
        session = self._sessions.pop(req.session, None)
        if session is None:
            return [self._nak(req, INVALID_SESSION)]
        session.handle.close()
        return [self._reply(req)]

    def _reset(self, req: Request) -> list[Request]:
        self.close()
        return [self._reply(req)]

    def _list(self, req: Request) -> list[Request]:
        directory = self._path(req)
        if not directory.is_dir():
            return [self._nak(req, FILE_NOT_FOUND)]
        entries = []
        for entry in sorted(directory.iterdir()):
            if entry.is_file():
                entries.append(f"F{entry.name}\t{entry.stat().st_size}".encode())
            elif entry.is_dir():
                entries.append(f"D{entry.name}".encode())
        chosen, used = [], 0
        for entry in entries[req.offset:]:
            if used + len(entry) + 1 > DATA_MAX:
                break
            chosen.append(entry)
            used += len(entry) + 1
        if not chosen:
            return [self._nak(req, EOF)]
        return [self._reply(req, b"\0".join(chosen) + b"\0")]

    def _open_ro(self, req: Request) -> list[Request]:
        path = self._path(req)
        if not path.is_file():
            return [self._nak(req, FILE_NOT_FOUND)]
        return [self._new_session(req, open(path, "rb"), path, writable=False)]

    def _chunk(self, session: _Session, offset: int, size: int) -> bytes:
        session.handle.seek(offset)
        return session.handle.read(max(1, min(size or DATA_MAX, DATA_MAX)))

    def _read(self, req: Request) -> list[Request]:
        session = self._session(req)
        if session is None:
            return [self._nak(req, INVALID_SESSION)]
        data = self._chunk(session, req.offset, req.size)
        if not data:
            return [self._nak(req, EOF)]
        return [self._reply(req, data)]

    def _burst(self, req: Request) -> list[Request]:
        session = self._session(req)
        if session is None:
            return [self._nak(req, INVALID_SESSION)]
        session.burst = self._burst_packets(req, session)
        first = next(session.burst, None)
        return [first] if first is not None else []

    def _burst_packets(self, req: Request, session: _Session) -> Iterator[Request]:
        offset, seq = req.offset, req.seq
        while True:
            data = self._chunk(session, offset, req.size)
            reply = Request(seq, req.session, ACK, 0, req.opcode, 0, offset, data) if data else None
            if reply is None:
                yield Request((seq + 1) % 65536, req.session, NAK, 1, req.opcode, 1, offset, bytes([EOF]))
                return
            reply.seq = (seq + 1) % 65536
            seq = reply.seq
            offset += len(data)
            yield reply

    def _create(self, req: Request) -> list[Request]:
        path = self._path(req)
        return [self._new_session(req, open(path, "w+b"), path, writable=True)]

    def _open_wo(self, req: Request) -> list[Request]:
        path = self._path(req)
        return [self._new_session(req, open(path, "r+b" if path.exists() else "w+b"), path, writable=True)]

    def _write(self, req: Request) -> list[Request]:
        session = self._session(req)
        if session is None or not session.writable:
            return [self._nak(req, INVALID_SESSION)]
        session.handle.seek(req.offset)
        session.handle.write(req.data)
        session.handle.flush()
        return [self._reply(req, struct.pack("<I", len(req.data)))]

    def _remove_file(self, req: Request) -> list[Request]:
        path = self._path(req)
        if not path.is_file():
            return [self._nak(req, FILE_NOT_FOUND)]
        path.unlink()
        return [self._reply(req)]

    def _mkdir(self, req: Request) -> list[Request]:
        self._path(req).mkdir()
        return [self._reply(req)]

    def _rmdir(self, req: Request) -> list[Request]:
        path = self._path(req)
        if path == self.root:
            return [self._nak(req, FILE_PROTECTED)]
        path.rmdir()
        return [self._reply(req)]

    def _truncate(self, req: Request) -> list[Request]:
        path = self._path(req)
        if not path.is_file():
            return [self._nak(req, FILE_NOT_FOUND)]
        os.truncate(path, req.offset)
        return [self._reply(req)]

    def _rename(self, req: Request) -> list[Request]:
        parts = req.data.split(b"\0")
        if len(parts) < 2:
            return [self._nak(req, INVALID_DATA_SIZE)]
        old = self._path(Request(0, 0, 0, 0, 0, 0, 0, parts[0]))
        new = self._path(Request(0, 0, 0, 0, 0, 0, 0, parts[1]))
        shutil.move(old, new)
        return [self._reply(req)]

    def _crc32(self, req: Request) -> list[Request]:
        path = self._path(req)
        if not path.is_file():
            return [self._nak(req, FILE_NOT_FOUND)]
        crc = 0
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(65536), b""):
                crc = crc32part(block, crc)
        return [self._reply(req, struct.pack("<I", crc))]
