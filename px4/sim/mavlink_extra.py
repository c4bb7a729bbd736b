"""MAVLink messages PX4 v1.16 sends that pymavlink's bundled dialects (2.4.x) lack or know short.

Each is built from its definition in MAVLink's common.xml / development.xml (the field list is the
fact; the class is what pymavlink would generate from it): the wire order sorts the base fields by
type size, extensions follow, and CRC_EXTRA is the X.25 hash of the name and base fields. The
built-in vehicle packs them with its ordinary pymavlink codec; a pymavlink client that wants to
decode them calls :func:`register` on its dialect.
"""

from __future__ import annotations

import struct
from typing import Sequence

from pymavlink.dialects.v20 import all as mavlink_all
from pymavlink.dialects.v20.common import MAVLink_message
from pymavlink.generator.mavcrc import x25crc

_CODES = {"uint64_t": "Q", "int64_t": "q", "double": "d", "uint32_t": "I", "int32_t": "i", "float": "f",
          "uint16_t": "H", "int16_t": "h", "uint8_t": "B", "int8_t": "b", "char": "s"}
_SIZES = {"uint64_t": 8, "int64_t": 8, "double": 8, "uint32_t": 4, "int32_t": 4, "float": 4, "uint16_t": 2,
          "int16_t": 2, "uint8_t": 1, "int8_t": 1, "char": 1}

Field = tuple[str, str, int]  # (C type, name, array length or 0)


def message_class(name: str, msg_id: int, fields: Sequence[Field], extensions: Sequence[Field] = ()) -> type:
    """A pymavlink message class for a definition: constructor arguments in definition order."""
    wire = sorted(fields, key=lambda f: _SIZES[f[0]], reverse=True) + list(extensions)  # sorted() is stable
    crc = x25crc()
    crc.accumulate_str(name + " ")
    for ctype, fname, length in wire[:len(fields)]:
        crc.accumulate_str(ctype + " ")
        crc.accumulate_str(fname + " ")
        if length:
            crc.accumulate([length])
    names = [f[1] for f in list(fields) + list(extensions)]
    wire_names = [f[1] for f in wire]
    layout = "<" + "".join(f"{n}{_CODES[t]}" if n else _CODES[t] for t, _, n in wire)

    def __init__(self, *args, **kwargs):
        MAVLink_message.__init__(self, msg_id, name)
        self._fieldnames = names
        self._instance_field, self._instance_offset = None, -1
        values = dict(zip(names, args), **kwargs)
        for ctype, fname, length in list(fields) + list(extensions):
            value = values.get(fname, "" if ctype == "char" else ([0] * length if length else 0))
            if ctype == "char" and isinstance(value, (bytes, bytearray)):
                value = bytes(value).decode("utf-8", errors="replace")  # as pymavlink gives strings
            setattr(self, fname, value)

    def pack(self, mav, force_mavlink1: bool = False) -> bytes:
        flat: list = []
        for ctype, fname, length in wire:
            value = getattr(self, fname)
            if ctype == "char":
                flat.append(value.encode() if isinstance(value, str) else bytes(value))
            elif length:
                flat.extend(value)
            else:
                flat.append(value)
        return self._pack(mav, self.crc_extra, struct.pack(layout, *flat), force_mavlink1=force_mavlink1)

    return type(f"MAVLink_{name.lower()}_message", (MAVLink_message,), {
        "id": msg_id, "msgname": name, "fieldnames": names, "ordered_fieldnames": wire_names,
        "fieldtypes": [f[0] for f in list(fields) + list(extensions)], "fielddisplays_by_name": {},
        "fieldenums_by_name": {}, "fieldunits_by_name": {}, "native_format": bytearray(layout.encode()),
        "orders": [wire_names.index(n) for n in names],
        "lengths": [1 if (t == "char" or not n) else n for t, _, n in wire],
        "array_lengths": [n for _, _, n in wire], "crc_extra": (crc.crc & 0xFF) ^ (crc.crc >> 8),
        "unpacker": struct.Struct(layout), "instance_field": None, "instance_offset": -1,
        "__init__": __init__, "pack": pack})


ProtocolVersion = message_class("PROTOCOL_VERSION", 300, [
    ("uint16_t", "version", 0), ("uint16_t", "min_version", 0), ("uint16_t", "max_version", 0),
    ("uint8_t", "spec_version_hash", 8), ("uint8_t", "library_version_hash", 8)])
ComponentInformation = message_class("COMPONENT_INFORMATION", 395, [
    ("uint32_t", "time_boot_ms", 0), ("uint32_t", "general_metadata_file_crc", 0),
    ("char", "general_metadata_uri", 100), ("uint32_t", "peripherals_metadata_file_crc", 0),
    ("char", "peripherals_metadata_uri", 100)])
ComponentMetadata = message_class("COMPONENT_METADATA", 397, [
    ("uint32_t", "time_boot_ms", 0), ("uint32_t", "file_crc", 0), ("char", "uri", 100)])
# v1.16 fills the extensions pymavlink 2.4 does not know (mission_id, fence_id, rally_points_id).
MissionCurrent = message_class("MISSION_CURRENT", 42, [("uint16_t", "seq", 0)], [
    ("uint16_t", "total", 0), ("uint8_t", "mission_state", 0), ("uint8_t", "mission_mode", 0),
    ("uint32_t", "mission_id", 0), ("uint32_t", "fence_id", 0), ("uint32_t", "rally_points_id", 0)])
LinkNodeStatus = message_class("LINK_NODE_STATUS", 8, [
    ("uint64_t", "timestamp", 0), ("uint8_t", "tx_buf", 0), ("uint8_t", "rx_buf", 0), ("uint32_t", "tx_rate", 0),
    ("uint32_t", "rx_rate", 0), ("uint16_t", "rx_parse_err", 0), ("uint16_t", "tx_overflows", 0),
    ("uint16_t", "rx_overflows", 0), ("uint32_t", "messages_sent", 0), ("uint32_t", "messages_received", 0),
    ("uint32_t", "messages_lost", 0)])
TimeEstimateToTarget = message_class("TIME_ESTIMATE_TO_TARGET", 380, [
    ("int32_t", "safe_return", 0), ("int32_t", "land", 0), ("int32_t", "mission_next_item", 0),
    ("int32_t", "mission_end", 0), ("int32_t", "commanded_action", 0)])
CurrentEventSequence = message_class("CURRENT_EVENT_SEQUENCE", 411, [("uint16_t", "sequence", 0),
                                                                    ("uint8_t", "flags", 0)])
# These two pymavlink has, in its development-based "all" dialect.
AvailableModes = mavlink_all.MAVLink_available_modes_message
CurrentMode = mavlink_all.MAVLink_current_mode_message

MESSAGES = (ProtocolVersion, ComponentInformation, ComponentMetadata, MissionCurrent, LinkNodeStatus,
            TimeEstimateToTarget, CurrentEventSequence, AvailableModes, CurrentMode)


def register(dialect) -> None:
    """Let a pymavlink dialect module decode these messages too (a client's side; changes it for the process)."""
    for cls in MESSAGES:
        dialect.mavlink_map[cls.id] = cls
