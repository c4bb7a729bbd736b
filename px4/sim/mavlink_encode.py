"""MAVLink 2 frames of pymavlink message objects, built as pymavlink's own `msg.pack(mav)` builds them, in
fewer steps: the built-in vehicle sends some 500 frames a simulated second, and pymavlink's generic path (a
header object, a bytearray grown piece by piece, a checksum object fed twice) cost more than the payload.

Per message class, once: the fields in wire order as one C-level getter, whether any is an array (flattened)
or text (then the class's own pack makes the frame: each keeps its text its own way), its id and CRC_EXTRA.
Per frame: the payload, its trailing zero bytes cut (MAVLink 2's truncation, down to one byte), the header,
and the X.25 checksum over both and CRC_EXTRA. Signed links are left to pymavlink.
"""

from __future__ import annotations

import struct
from operator import attrgetter, itemgetter
from typing import Callable

from pymavlink.dialects.v20 import common as mavlink

_HEADER = struct.Struct("<BBBBBBBHB")
_CRC = struct.Struct("<H")
_MCRF4XX: Callable[[bytes, int], int] | None = mavlink.mcrf4xx  # fastcrc's, when installed (pymavlink's choice too)


class _Layout:
    """What encoding a message class takes, worked out once."""

    def __init__(self, cls: type):
        types = dict(zip(cls.fieldnames, cls.fieldtypes))
        names = cls.ordered_fieldnames
        self.id_low, self.id_high = cls.id & 0xFFFF, cls.id >> 16
        self.crc_extra = bytes((cls.crc_extra,))
        # Text fields: the class's own pack, which knows how each keeps its text, makes the whole frame.
        self.text = any(types[name] == "char" for name in names)
        # The array fields' places in wire order, last first, so splicing one in leaves the others' places.
        self.arrays = [i for i, length in enumerate(cls.array_lengths) if length][::-1]
        self.struct = cls.unpacker
        self.values = attrgetter(*names) if len(names) > 1 else (lambda msg, get=attrgetter(names[0]): (get(msg),))
        # The constructor's arguments (declaration order) put in wire order; those of a message declared in wire
        # order without arrays (HIL_SENSOR, sent every lockstep step) are packed as they come.
        self.fields = len(cls.fieldnames)
        places = [cls.fieldnames.index(name) for name in names]
        self.wire = itemgetter(*places) if len(places) > 1 else (lambda args, get=itemgetter(places[0]): (get(args),))
        self.in_order = places == sorted(places) and not self.arrays

    def payload(self, msg) -> bytes:
        return self.pack(self.values(msg))

    def pack(self, values: tuple) -> bytes:
        """The payload of the fields' values in wire order, arrays not yet flattened."""
        if self.arrays:
            flat = list(values)
            for i in self.arrays:  # a list, tuple, bytes or bytearray: pymavlink's pack indexes any of them
                flat[i:i + 1] = flat[i]
            return self.struct.pack(*flat)
        return self.struct.pack(*values)


_LAYOUTS: dict[type, _Layout] = {}


def encode(msg, mav: mavlink.MAVLink) -> bytes:
    """`msg` as the frame `msg.pack(mav)` would make (mav's sequence number and ids, unsigned); mav.seq is
    left as it is, as msg.pack leaves it."""
    layout = _LAYOUTS.get(type(msg))
    if layout is None:
        layout = _LAYOUTS[type(msg)] = _Layout(type(msg))
    if layout.text or mav.signing.sign_outgoing:
        return msg.pack(mav)
    return _frame(layout, layout.payload(msg), mav)


def encode_args(cls: type, args: tuple, mav: mavlink.MAVLink) -> bytes:
    """The frame `encode(cls(*args), mav)` makes, without building the message: for senders whose values are
    at hand every frame (the built-in vehicle's streams, whose builders give a class and its constructor's
    arguments; the harness's frames to PX4), making the message costing as much as encoding it. Arguments
    short of every field (defaults taken), text fields and signing go through the message itself."""
    layout = _LAYOUTS.get(cls)
    if layout is None:
        layout = _LAYOUTS[cls] = _Layout(cls)
    if layout.text or len(args) != layout.fields or mav.signing.sign_outgoing:
        return encode(cls(*args), mav)
    return _frame(layout, layout.struct.pack(*args) if layout.in_order else layout.pack(layout.wire(args)), mav)


def _frame(layout: _Layout, payload: bytes, mav: mavlink.MAVLink) -> bytes:
    payload = payload.rstrip(b"\0") or b"\0"
    body = _HEADER.pack(0xFD, len(payload), 0, 0, mav.seq, mav.srcSystem, mav.srcComponent,
                        layout.id_low, layout.id_high) + payload
    return body + _CRC.pack(x25(body[1:] + layout.crc_extra))  # over all but the start byte, then CRC_EXTRA


def x25(data: bytes) -> int:
    """MAVLink's X.25 checksum of `data`."""
    return _MCRF4XX(data, 0xFFFF) if _MCRF4XX is not None else mavlink.x25crc(data).crc
