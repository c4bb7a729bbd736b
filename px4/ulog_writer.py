"""Writing ULog files (PX4's flight log format) from the published format specification.

A ULog is a 16-byte header (``ULog`` 0x01 0x12 0x35, version 1, uint64 start time in
microseconds) followed by messages of ``uint16 size, uint8 type`` and ``size`` bytes. The
definitions section carries flag bits ('B'), message formats ('F': ``name:type field;...``),
information ('I') and initial parameter values ('P'); the data section subscriptions ('A':
``uint8 multi_id, uint16 msg_id, name``), samples ('D': ``uint16 msg_id`` and the fields packed
little-endian in format order) and logged strings ('L': level, timestamp, text). pyulog, Flight
Review and PX4's own tools read what :class:`ULogWriter` writes.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import BinaryIO, Mapping, Sequence

MAGIC = b"ULog\x01\x12\x35"
VERSION = 1
_CODES = {"uint64_t": "Q", "int64_t": "q", "uint32_t": "I", "int32_t": "i", "uint16_t": "H", "int16_t": "h",
          "uint8_t": "B", "int8_t": "b", "float": "f", "double": "d", "bool": "?", "char": "c"}
_FIELD = re.compile(r"^([a-z0-9_]+)(?:\[(\d+)\])?$")
# 'L' message levels are the ASCII digits of syslog severities, as MAVLink's MAV_SEVERITY.
LOG_LEVELS = "01234567"

Fields = Sequence[tuple[str, str]]  # (type, name): "float[4]" types are arrays


def _message(kind: bytes, payload: bytes) -> bytes:
    return struct.pack("<HB", len(payload), kind[0]) + payload


def _layout(fields: Fields) -> str:
    codes = []
    for ctype, _ in fields:
        match = _FIELD.match(ctype)
        if match is None or match.group(1) not in _CODES:
            raise ValueError(f"ULog field type {ctype!r}: expected one of {sorted(_CODES)}, optionally [N]")
        codes.append(f"{match.group(2)}{_CODES[match.group(1)]}" if match.group(2) else _CODES[match.group(1)])
    return "<" + "".join(codes)


def _typed(ctype: str, value) -> bytes:
    """An info or parameter value packed as its type says (`char[N]` takes a string)."""
    if ctype.startswith("char["):
        return value.encode() if isinstance(value, str) else bytes(value)
    return struct.pack("<" + _CODES[ctype], value)


class ULogWriter:
    """Write one ULog: definitions first (formats, info, parameters), then samples as they come.

    Topics are declared with :meth:`add_topic` before the first :meth:`write`; each sample is the
    field values in format order, the first being ``uint64_t timestamp`` (microseconds).
    """

    def __init__(self, path: Path, start_us: int, info: Mapping[str, tuple[str, object]] = {},
                 parameters: Mapping[str, tuple[str, float]] = {}, topics: Mapping[str, Fields] = {}):
        self.path = Path(path)
        self._file: BinaryIO = open(self.path, "wb")
        self._layouts: dict[str, struct.Struct] = {}
        self._ids: dict[str, int] = {}
        self._file.write(MAGIC + bytes([VERSION]) + struct.pack("<Q", start_us))
        self._file.write(_message(b"B", bytes(16) + struct.pack("<3Q", 0, 0, 0)))
        for name, fields in topics.items():
            if not fields or fields[0] != ("uint64_t", "timestamp"):
                raise ValueError(f"ULog topic {name}: the first field must be ('uint64_t', 'timestamp')")
            self._layouts[name] = struct.Struct(_layout(fields))
            spec = "".join(f"{t} {f};" for t, f in fields)
            self._file.write(_message(b"F", f"{name}:{spec}".encode()))
        for key, (ctype, value) in info.items():
            self._write_keyed(b"I", ctype, key, value)
        for key, (ctype, value) in parameters.items():
            self._write_keyed(b"P", ctype, key, int(value) if ctype == "int32_t" else value)
        for msg_id, name in enumerate(self._layouts):
            self._ids[name] = msg_id
            self._file.write(_message(b"A", struct.pack("<BH", 0, msg_id) + name.encode()))

    def _write_keyed(self, kind: bytes, ctype: str, key: str, value) -> None:
        raw = _typed(ctype, value)
        if ctype.startswith("char["):
            ctype = f"char[{len(raw)}]"
        name = f"{ctype} {key}".encode()
        self._file.write(_message(kind, bytes([len(name)]) + name + raw))

    def write(self, topic: str, values: Sequence) -> None:
        """One sample of a declared topic (integers are truncated to their field's type)."""
        layout = self._layouts[topic]
        self._file.write(_message(b"D", struct.pack("<H", self._ids[topic]) + layout.pack(*values)))

    def log(self, level: int, timestamp_us: int, text: str) -> None:
        """A logged string (PX4 logs its console and STATUSTEXT messages so), level 0-7 as MAV_SEVERITY."""
        payload = struct.pack("<BQ", ord(LOG_LEVELS[max(0, min(7, level))]), timestamp_us) + text.encode()
        self._file.write(_message(b"L", payload))

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def write_ulog(path: Path, topics: Mapping[str, tuple[Fields, Sequence[Sequence[float]]]],
               start_us: int = 0, sys_name: str = "PX4") -> Path:
    """Write a whole log at once: ``topics`` maps name -> (fields starting with uint64_t timestamp, rows)."""
    writer = ULogWriter(path, start_us, info={"sys_name": ("char[]", sys_name)},
                        topics={name: fields for name, (fields, _) in topics.items()})
    for name, (fields, rows) in topics.items():
        integer = [_CODES[t] in "QqIiHhBb" for t, _ in fields]  # scalar fields only here
        for row in rows:
            writer.write(name, [int(v) if i else v for i, v in zip(integer, row)])
    writer.log(6, start_us, f"log written by {__name__}")
    writer.close()
    return Path(path)
