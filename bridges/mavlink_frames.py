"""Split a MAVLink byte stream into frames, without decoding payloads.

The link proxy must know where one message ends and the next begins (to delay, drop or corrupt
whole messages, and to impair per message id), but it must never depend on understanding the
payload: it sits between a flight controller and a companion computer whose dialects it may not
know, and it must survive whatever arrives. So this module does framing only:

- MAVLink 1: ``0xFE len seq sys comp msgid payload crc16``;
- MAVLink 2: ``0xFD len incompat compat seq sys comp msgid(3) payload crc16 [signature(13)]``.

Anything that is not a frame (noise, a frame cut short, a frame with a bad checksum) comes out as
a *malformed chunk* (`Frame.msgid == MALFORMED`) holding those bytes, and counts in
`SplitterStats`; the splitter then resynchronises on the next start byte. It never raises on
input.

The checksum (X.25 over the frame plus the message's CRC_EXTRA byte) is checked with pymavlink's
tables when `check_crc` is on. Checking is what makes resynchronisation reliable: without it a
stray 0xFD in noise would be taken as a frame header and could swallow the real frames after it.
With it on, a frame whose message id pymavlink does not know cannot be verified and is treated
as malformed, so leave it off on a link that carries private dialects.
"""

from __future__ import annotations

from dataclasses import dataclass

from pymavlink.dialects.v20 import all as dialect

STX_V1 = 0xFE
STX_V2 = 0xFD
MALFORMED = -1
_HEADER_V1 = 6  # STX, len, seq, sysid, compid, msgid
_HEADER_V2 = 10  # STX, len, incompat, compat, seq, sysid, compid, msgid x3
_CRC_LEN = 2
_SIGNATURE_LEN = 13
_IFLAG_SIGNED = 0x01
_STX = (STX_V1, STX_V2)


@dataclass(frozen=True, slots=True)
class Frame:
    """One MAVLink frame as it came off the wire, or a malformed chunk (`msgid == MALFORMED`)."""

    data: bytes
    msgid: int
    version: int = 0  # 1 or 2; 0 for a malformed chunk
    seq: int = 0
    sysid: int = 0
    compid: int = 0
    crc_ok: bool | None = None  # None: not checked

    @property
    def malformed(self) -> bool:
        return self.msgid == MALFORMED


@dataclass
class SplitterStats:
    """What a splitter has seen so far."""

    frames: int = 0
    malformed_chunks: int = 0
    malformed_bytes: int = 0
    bad_crc: int = 0  # candidate frames rejected by their checksum
    unknown_msgid: int = 0  # candidate frames rejected because their checksum could not be verified


def _crc_extra(msgid: int) -> int | None:
    cls = dialect.mavlink_map.get(msgid)
    return None if cls is None else cls.crc_extra


def _frame_size(buf: bytes | bytearray, pos: int) -> int | None:
    """Total frame length from its header; None while the header is incomplete, -1 when it is invalid."""
    avail = len(buf) - pos
    if buf[pos] == STX_V1:
        return _HEADER_V1 + buf[pos + 1] + _CRC_LEN if avail >= 2 else None
    if avail < 3:
        return None
    incompat = buf[pos + 2]
    if incompat & ~_IFLAG_SIGNED:
        # MAVLink 2 says: drop a frame with incompatibility flags you do not understand.
        return -1
    return _HEADER_V2 + buf[pos + 1] + _CRC_LEN + (_SIGNATURE_LEN if incompat & _IFLAG_SIGNED else 0)


def frame_header(raw: bytes) -> tuple[int, int, int, int, int]:
    """(version, seq, sysid, compid, msgid) from the header of a whole frame."""
    if raw[0] == STX_V1:
        return 1, raw[2], raw[3], raw[4], raw[5]
    return 2, raw[4], raw[5], raw[6], raw[7] | (raw[8] << 8) | (raw[9] << 16)


def checksum_ok(raw: bytes) -> bool | None:
    """Whether a whole frame's checksum holds; None when pymavlink does not know its message (no CRC_EXTRA)."""
    version, _, _, _, msgid = frame_header(raw)
    extra = _crc_extra(msgid)
    if extra is None:
        return None
    end = (_HEADER_V1 if version == 1 else _HEADER_V2) + raw[1]
    crc = dialect.x25crc(raw[1:end])
    crc.accumulate(bytes((extra,)))
    return crc.crc == raw[end] | (raw[end + 1] << 8)


def whole_frame(data: bytes) -> Frame | None:
    """`data` as a Frame if it is exactly one MAVLink frame by its header's length, else None; `crc_ok` says
    whether its checksum holds where pymavlink knows the message. A peer that forwards frames (MAVSDK) checks
    the ones it knows, and passes on the others unchecked, line noise from a lossy serial link included."""
    if not data or data[0] not in _STX or _frame_size(data, 0) != len(data):
        return None
    version, seq, sysid, compid, msgid = frame_header(data)
    return Frame(data, msgid, version, seq, sysid, compid, checksum_ok(data))


class FrameSplitter:
    """Incremental splitter: `feed()` bytes as they arrive, get back complete frames.

    For a byte stream (serial), call `feed()` with each read: a frame split across reads is held
    until it is complete. For datagrams (UDP), call `feed()` then `flush()` for each datagram: a
    datagram boundary is also a frame boundary, so what is left over is truncated and comes out
    as malformed instead of waiting for bytes that will never come.
    """

    def __init__(self, check_crc: bool = True):
        self.check_crc = check_crc
        self.stats = SplitterStats()
        self._buf = bytearray()
        self._junk = bytearray()  # malformed bytes found in this scan, emitted as one chunk

    def feed(self, data: bytes) -> list[Frame]:
        """Frames completed by `data` (plus malformed chunks that precede them)."""
        self._buf += data
        return self._scan(final=False)

    def flush(self) -> list[Frame]:
        """End of input (or of a datagram): whatever is still buffered is resolved now."""
        return self._scan(final=True)

    def _scan(self, final: bool) -> list[Frame]:
        out: list[Frame] = []
        buf = self._buf
        pos = 0
        while True:
            start = self._next_stx(buf, pos)
            if start < 0:
                self._junk += buf[pos:]
                pos = len(buf)
                break
            if start > pos:
                self._junk += buf[pos:start]
            pos = start
            size = _frame_size(buf, pos)
            incomplete = size is None or pos + size > len(buf)
            if incomplete and size != -1 and not final:
                break  # wait for the rest of this frame
            if incomplete or size == -1:
                # Not a frame after all (bad flags, or cut short): skip its start byte and rescan.
                self._junk.append(buf[pos])
                pos += 1
                continue
            frame = self._make_frame(bytes(buf[pos:pos + size]))
            if frame is None:
                self._junk.append(buf[pos])
                pos += 1
                continue
            self._emit_junk(out)
            out.append(frame)
            self.stats.frames += 1
            pos += size
        del buf[:pos]
        # Junk is only ever collected once it is certainly junk, so it can go out now.
        self._emit_junk(out)
        return out

    @staticmethod
    def _next_stx(buf: bytearray, pos: int) -> int:
        v1 = buf.find(STX_V1, pos)
        v2 = buf.find(STX_V2, pos)
        if v1 < 0:
            return v2
        return v1 if v2 < 0 else min(v1, v2)

    def _make_frame(self, raw: bytes) -> Frame | None:
        version, seq, sysid, compid, msgid = frame_header(raw)
        crc_ok = None
        if self.check_crc:
            crc_ok = checksum_ok(raw)
            if crc_ok is None:
                self.stats.unknown_msgid += 1
                return None
            if not crc_ok:
                self.stats.bad_crc += 1
                return None
        return Frame(raw, msgid, version, seq, sysid, compid, crc_ok)

    def _emit_junk(self, out: list[Frame]) -> None:
        if self._junk:
            out.append(Frame(bytes(self._junk), MALFORMED))
            self.stats.malformed_chunks += 1
            self.stats.malformed_bytes += len(self._junk)
            self._junk.clear()
