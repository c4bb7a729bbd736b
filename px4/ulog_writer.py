"""Writing ULog files (PX4's flight log format) from the published format specification.

A ULog is a 16-byte header (``ULog`` 0x01 0x12 0x35, version 1, uint64 start time in
microseconds) followed by messages of ``uint16 size, uint8 type`` and ``size`` bytes. The
definitions section carries flag bits ('B'), message formats ('F': ``name:type field;...``),
information ('I') and initial parameter values ('P'); the data section subscriptions ('A':
``uint8 multi_id, uint16 msg_id, name``), samples ('D': ``uint16 msg_id`` and the fields packed
little-endian in format order, with no alignment) and logged strings ('L': level, timestamp, text).
A field's type may be another format by name (PX4's position_setpoint_triplet holds three
position_setpoint); such formats are defined with 'F' and never subscribed. pyulog, Flight Review
and PX4's own tools read what :class:`ULogWriter` writes.
"""

from __future__ import annotations

import re
import struct
from operator import itemgetter
from pathlib import Path
from typing import BinaryIO, Callable, Mapping, Sequence

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


def flatten(fields: Fields, nested: Mapping[str, Fields] = {}, prefix: str = "") -> list[tuple[str, str]]:
    """(struct code, name as pyulog names it: "q[0]", "current.alt") of every value a sample packs;
    a char array is one value (bytes)."""
    out: list[tuple[str, str]] = []
    for ctype, name in fields:
        match = _FIELD.match(ctype)
        base = match.group(1) if match else None
        if base not in _CODES and base not in nested:
            raise ValueError(f"ULog field type {ctype!r}: expected one of {sorted(_CODES)} or a format defined "
                             f"beside it ({sorted(nested)}), optionally [N]")
        count = int(match.group(2)) if match.group(2) else 0
        names = [f"{prefix}{name}[{i}]" for i in range(count)] if count else [f"{prefix}{name}"]
        if base == "char" and count:
            out.append((f"{count}s", f"{prefix}{name}"))
        elif base in _CODES:
            out += [(_CODES[base], n) for n in names]
        else:
            for n in names:
                out += flatten(nested[base], nested, n + ".")
    return out


def _typed(ctype: str, value) -> bytes:
    """An info or parameter value packed as its type says (`char[N]` takes a string)."""
    if ctype.startswith("char["):
        return value.encode() if isinstance(value, str) else bytes(value)
    return struct.pack("<" + _CODES[ctype], value)


class ULogWriter:
    """Write one ULog: definitions first (formats, info, parameters), then samples as they come.

    Topics are declared when it is made; each sample is the field values in format order, the first
    being ``uint64_t timestamp`` (microseconds).
    """

    def __init__(self, path: Path, start_us: int, info: Mapping[str, tuple[str, object]] = {},
                 parameters: Mapping[str, tuple[str, float]] = {}, topics: Mapping[str, Fields] = {},
                 formats: Mapping[str, Fields] = {}):
        """``formats``: the types that topics' fields name (nested formats), defined but not logged."""
        self.path = Path(path)
        self._layouts: dict[str, struct.Struct] = {}
        self._names: dict[str, list[str]] = {}
        self._codes: dict[str, list[str]] = {}
        self._ids: dict[str, int] = {}
        for name, fields in topics.items():
            if not fields or fields[0] != ("uint64_t", "timestamp"):
                raise ValueError(f"ULog topic {name}: the first field must be ('uint64_t', 'timestamp')")
            flat = flatten(fields, formats)
            while flat and flat[-1][1].startswith("_padding"):
                flat.pop()  # as PX4's logger: a sample leaves out its format's trailing padding (pyulog expects so)
            self._layouts[name] = struct.Struct("<" + "".join(code for code, _ in flat))
            self._names[name] = [n for _, n in flat]
            self._codes[name] = [code for code, _ in flat]
        self._file: BinaryIO = open(self.path, "wb")
        self._file.write(MAGIC + bytes([VERSION]) + struct.pack("<Q", start_us))
        self._file.write(_message(b"B", bytes(16) + struct.pack("<3Q", 0, 0, 0)))
        for name, fields in [*formats.items(), *topics.items()]:
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

    def sampler(self, topic: str, fields: Sequence[str], constants: Mapping[str, object] = {}
                ) -> Callable[[Sequence], None]:
        """A writer of `topic`'s samples that takes the values of `fields` (pyulog's names: "q[0]",
        "current.alt"; "timestamp" among them) in that order; every other field holds its value in
        `constants`, or zero (integer fields take ints). For topics of many fields of which a few change."""
        names = self._names[topic]
        unknown = [f for f in [*fields, *constants] if f not in names]
        if unknown:
            raise ValueError(f"ULog topic {topic} has no field {', '.join(unknown)}")
        layout = self._layouts[topic]
        defaults = [constants.get(name, b"" if code.endswith("s") else 0)
                    for name, code in zip(names, self._codes[topic])]
        slot = {names.index(f): i for i, f in enumerate(fields)}
        # The row is picked out of the values followed by the constants: one C call, no Python loop per field.
        others = [j for j in range(len(names)) if j not in slot]
        order = [slot[j] if j in slot else len(fields) + others.index(j) for j in range(len(names))]
        fixed = [defaults[j] for j in others]
        pick = itemgetter(*order) if len(order) > 1 else (lambda row: (row[order[0]],))
        head = struct.pack("<HBH", layout.size + 2, ord("D"), self._ids[topic])
        write, pack = self._file.write, layout.pack
        return lambda values: write(head + pack(*pick([*values, *fixed])))

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
