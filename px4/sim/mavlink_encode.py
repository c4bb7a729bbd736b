"""MAVLink 2 frames of pymavlink message objects, built as pymavlink's own `msg.pack(mav)` builds them, in
fewer steps: the built-in vehicle sends some 500 frames a simulated second, and pymavlink's generic path (a
header object, a bytearray grown piece by piece, a checksum object fed twice) cost more than the payload.

Per message class, once: a generated function packing its fields in wire order with the arrays spread (from
the message, and from its constructor's arguments), whether any field is text (then the class's own pack makes
the frame: each keeps its text its own way), its id and CRC_EXTRA.
Per frame: the payload, its trailing zero bytes cut (MAVLink 2's truncation, down to one byte), the header,
and the X.25 checksum over both and CRC_EXTRA. Signed links are left to pymavlink.
"""

from __future__ import annotations

import struct
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
        # How many constructor arguments encode_args packs itself: all of them, and none of a class with text.
        self.args_packed = -1 if self.text else len(cls.fieldnames)
        # The payload in one generated call per class, as namedtuple makes its methods: the fields in wire order,
        # each array spread in place (a list, tuple, bytes or bytearray: pymavlink's pack indexes any of them),
        # from the message's attributes or from the constructor's arguments (declaration order). Reordering
        # and splicing a list every frame cost as much as the rest of the frame (ODOMETRY carries three arrays).
        spread = [("*" if length else "", name) for name, length in zip(names, cls.array_lengths)]
        scope = {"pack": cls.unpacker.pack}
        self.pack_msg: Callable[[object], bytes] = eval(
            "lambda m: pack(" + ", ".join(f"{star}m.{name}" for star, name in spread) + ")", scope)
        self.pack_args: Callable[[tuple], bytes] = eval(
            "lambda a: pack(" + ", ".join(f"{star}a[{cls.fieldnames.index(name)}]" for star, name in spread) + ")",
            scope)


_LAYOUTS: dict[type, _Layout] = {}


def encode(msg, mav: mavlink.MAVLink) -> bytes:
    """`msg` as the frame `msg.pack(mav)` would make (mav's sequence number and ids, unsigned); mav.seq is
    left as it is, as msg.pack leaves it."""
    layout = _LAYOUTS.get(type(msg))
    if layout is None:
        layout = _LAYOUTS[type(msg)] = _Layout(type(msg))
    if layout.text or mav.signing.sign_outgoing:
        return msg.pack(mav)
    return _frame(layout, layout.pack_msg(msg), mav)


def encode_args(cls: type, args: tuple, mav: mavlink.MAVLink) -> bytes:
    """The frame `encode(cls(*args), mav)` makes, without building the message: for senders whose values are
    at hand every frame (the built-in vehicle's streams, whose builders give a class and its constructor's
    arguments; the harness's frames to PX4), making the message costing as much as encoding it. Arguments
    short of every field (defaults taken), text fields and signing go through the message itself."""
    layout = _LAYOUTS.get(cls)
    if layout is None:
        layout = _LAYOUTS[cls] = _Layout(cls)
    if len(args) != layout.args_packed or mav.signing.sign_outgoing:
        return encode(cls(*args), mav)
    return _frame(layout, layout.pack_args(args), mav)


def _frame(layout: _Layout, payload: bytes, mav: mavlink.MAVLink) -> bytes:
    payload = payload.rstrip(b"\0") or b"\0"
    body = _HEADER.pack(0xFD, len(payload), 0, 0, mav.seq, mav.srcSystem, mav.srcComponent,
                        layout.id_low, layout.id_high) + payload
    checked = body[1:] + layout.crc_extra  # all but the start byte, then CRC_EXTRA
    # fastcrc called here rather than through x25: a call less on every frame.
    return body + _CRC.pack(_MCRF4XX(checked, 0xFFFF) if _MCRF4XX is not None else x25(checked))


def x25(data: bytes) -> int:
    """MAVLink's X.25 checksum of `data`."""
    return _MCRF4XX(data, 0xFFFF) if _MCRF4XX is not None else mavlink.x25crc(data).crc
