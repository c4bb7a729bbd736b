"""The CRC-32 PX4 uses for MAVLink FTP (CalcFileCRC32), component metadata and _HASH_CHECK.

It is the common reflected CRC-32 (polynomial 0xEDB88320) without its initial and final
inversion, continued from ``crc`` (0 to start): PX4's `crc32part`. zlib computes the inverted
variant, so inverting around it gives PX4's.
"""

from __future__ import annotations

import zlib

_MASK = 0xFFFFFFFF


def crc32part(data: bytes, crc: int = 0) -> int:
    """PX4's crc32part: CRC-32 of ``data`` continued from ``crc``, no inversion."""
    return zlib.crc32(data, crc ^ _MASK) ^ _MASK
