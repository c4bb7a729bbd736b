"""A minimal ULog writer for tests, following PX4's published ULog file format.

File: a 16-byte header (magic ``ULog`` 0x01 0x12 0x35, version 1, uint64 start time in us), then
messages of ``uint16 size, uint8 type`` plus ``size`` bytes: flag bits ('B'), formats ('F':
``name:type field;type field;``), info ('I'), then in the data section subscriptions ('A':
``uint8 multi_id, uint16 msg_id, name``), data ('D': ``uint16 msg_id`` and the packed fields in
format order, little-endian) and log strings ('L'). Enough for pyulog to read topics back.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Mapping, Sequence

_TYPES = {"uint64_t": "Q", "int64_t": "q", "uint32_t": "I", "int32_t": "i", "uint16_t": "H", "int16_t": "h",
          "uint8_t": "B", "int8_t": "b", "float": "f", "double": "d", "bool": "?"}


def _message(kind: bytes, payload: bytes) -> bytes:
    return struct.pack("<HB", len(payload), kind[0]) + payload


def write_ulog(path: Path, topics: Mapping[str, tuple[Sequence[tuple[str, str]], Sequence[Sequence[float]]]],
               start_us: int = 0, sys_name: str = "PX4") -> Path:
    """Write ``topics``: name -> (fields as (type, name) starting with uint64_t timestamp, rows)."""
    out = bytearray(b"ULog\x01\x12\x35" + bytes([1]) + struct.pack("<Q", start_us))
    out += _message(b"B", bytes(16) + struct.pack("<3Q", 0, 0, 0))
    for name, (fields, _) in topics.items():
        spec = "".join(f"{t} {f};" for t, f in fields)
        out += _message(b"F", f"{name}:{spec}".encode())
    key = f"char[{len(sys_name)}] sys_name".encode()
    out += _message(b"I", bytes([len(key)]) + key + sys_name.encode())
    for msg_id, (name, (fields, rows)) in enumerate(topics.items()):
        out += _message(b"A", struct.pack("<BH", 0, msg_id) + name.encode())
        layout = "<" + "".join(_TYPES[t] for t, _ in fields)
        for row in rows:
            values = [int(v) if _TYPES[t] in "QqIiHhBb" else v for (t, _), v in zip(fields, row)]
            out += _message(b"D", struct.pack("<H", msg_id) + struct.pack(layout, *values))
    out += _message(b"L", struct.pack("<BQ", ord("6"), start_us) + b"test log written by tests/ulog_writer.py")
    path.write_bytes(bytes(out))
    return path


LOCAL_POSITION_FIELDS = [("uint64_t", "timestamp"), ("float", "x"), ("float", "y"), ("float", "z"),
                         ("float", "vz")]


def flight_profile(t_s: float) -> float:
    """Down (m) of a test flight: 2 s on the ground, climb at 1.5 m/s to 5 m, hover, descend."""
    if t_s < 2.0:
        return 0.0
    if t_s < 2.0 + 5.0 / 1.5:
        return -1.5 * (t_s - 2.0)
    if t_s < 12.0:
        return -5.0
    return min(0.0, -5.0 + 0.7 * (t_s - 12.0))
