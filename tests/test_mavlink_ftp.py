"""MAVLink FTP server answers to requests a client should not send (the happy path is flown by MAVSDK's
ftp plugin in test_px4_surface.py, against the built-in vehicle and PX4 alike)."""

from __future__ import annotations

import struct

from px4.crc32 import crc32part
from px4.sim.mavlink_ftp import (ACK, BURST_READ, CRC32, EOF, FILE_NOT_FOUND, INVALID_SESSION, LIST, NAK, OPEN_RO,
                                 READ, TERMINATE, UNKNOWN_COMMAND, FtpServer, Request)


def ask(server: FtpServer, opcode: int, seq: int, data: bytes = b"", session: int = 0, offset: int = 0,
        size: int = 0) -> list[Request]:
    payload = Request(seq, session, opcode, size or len(data), 0, 0, offset, data).encode()
    return [Request.decode(r) for r in server.handle(payload)]


def test_paths_cannot_leave_the_root(tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "secret.txt").write_text("no")
    server = FtpServer(tmp_path / "root")
    for path in (b"../secret.txt", b"/../secret.txt", b"a/../../secret.txt"):
        reply = ask(server, OPEN_RO, 1, path)[0]
        assert (reply.opcode, reply.data) == (NAK, bytes([FILE_NOT_FOUND])), path


def test_errors_are_answered_with_px4s_codes(tmp_path):
    (tmp_path / "f.bin").write_bytes(bytes(range(256)) * 3)
    server = FtpServer(tmp_path)
    assert ask(server, 99, 1)[0].data == bytes([UNKNOWN_COMMAND])
    assert ask(server, READ, 2, session=3, size=100)[0].data == bytes([INVALID_SESSION])
    listing = ask(server, LIST, 3, b"/")[0]
    assert listing.opcode == ACK and listing.data == b"Ff.bin\t768\0"
    assert ask(server, LIST, 4, b"/", offset=1)[0].data == bytes([EOF])
    opened = ask(server, OPEN_RO, 5, b"f.bin")[0]
    assert opened.opcode == ACK and struct.unpack("<I", opened.data)[0] == 768
    assert ask(server, READ, 6, session=opened.session, offset=768, size=100)[0].data == bytes([EOF])
    crc = ask(server, CRC32, 7, b"f.bin")[0]
    assert struct.unpack("<I", crc.data)[0] == crc32part((tmp_path / "f.bin").read_bytes())
    # A repeated request (our reply was lost) gets the same reply, not a second action.
    assert ask(server, CRC32, 7, b"f.bin")[0].seq == crc.seq == 8


def test_burst_read_comes_in_chunks_and_ends_with_eof(tmp_path):
    data = bytes(range(256)) * 3
    (tmp_path / "f.bin").write_bytes(data)
    server = FtpServer(tmp_path)
    session = ask(server, OPEN_RO, 1, b"f.bin")[0].session
    first = ask(server, BURST_READ, 2, session=session, size=239)
    packets = first + [Request.decode(p) for p in server.pending_bursts(100)]
    chunks = [p for p in packets if p.opcode == ACK]
    assert b"".join(p.data for p in chunks) == data and [p.offset for p in chunks] == [0, 239, 478, 717]
    assert (packets[-1].opcode, packets[-1].data, packets[-1].burst_complete) == (NAK, bytes([EOF]), 1)
    assert ask(server, TERMINATE, 9, session=session)[0].opcode == ACK
