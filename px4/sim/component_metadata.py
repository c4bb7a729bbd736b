"""Component metadata files for ground stations, in PX4's layout: ``etc/extras/*.json.xz`` served over FTP.

PX4 v1.16.1 answers REQUEST_MESSAGE(COMPONENT_METADATA) with ``mftp://etc/extras/component_general.json.xz``
and the CRC-32 of that JSON uncompressed; the general file lists the other metadata files with
their CRC-32 as served (compressed). QGroundControl and MAVSDK's component_metadata plugin fetch
them to label and bound parameters. The built-in vehicle writes its own: the parameter metadata of
its table (units, ranges and meaning for the parameters it implements; the rest marked as stored
only). It has no events or actuator metadata to offer, so the general file lists parameters alone.
"""

from __future__ import annotations

import json
import lzma
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from px4.crc32 import crc32part
from px4.params import ParamStore

EXTRAS = Path("etc") / "extras"
GENERAL_URI = "mftp://etc/extras/component_general.json.xz"
COMP_METADATA_TYPE_PARAMETER = 1


@dataclass(frozen=True)
class ComponentMetadata:
    """What COMPONENT_METADATA / COMPONENT_INFORMATION announce."""

    uri: str
    crc: int


def parameter_metadata(params: ParamStore) -> dict:
    """PX4's parameters.json shape for every parameter of the store."""
    entries = []
    for name in params:
        spec = params.spec(name)
        entry: dict = {"name": name, "type": "Int32" if spec.is_int else "Float", "default": spec.default,
                       "group": name.split("_", 1)[0], "category": "Standard",
                       "shortDesc": spec.doc if params.implemented(name) else
                       "Stored and echoed as PX4 v1.16.1 has it; the built-in vehicle does not use it"}
        if spec.unit:
            entry["units"] = spec.unit
        if math.isfinite(spec.min):
            entry["min"] = spec.min
        if math.isfinite(spec.max):
            entry["max"] = spec.max
        if name in params.volatile:
            entry["volatile"] = True
        entries.append(entry)
    return {"version": 1, "parameters": entries}


def write_metadata(root: Path, params: ParamStore) -> ComponentMetadata:
    """Write ``etc/extras/`` under ``root``; returns the general file's URI and CRC for the messages."""
    extras = Path(root) / EXTRAS
    extras.mkdir(parents=True, exist_ok=True)
    packed, general, packed_general = _compressed(json.dumps(parameter_metadata(params)))
    (extras / "parameters.json.xz").write_bytes(packed)
    (extras / "component_general.json.xz").write_bytes(packed_general)
    return ComponentMetadata(GENERAL_URI, crc32part(general))


@lru_cache(maxsize=4)
def _compressed(parameters: str) -> tuple[bytes, bytes, bytes]:
    """The parameter file compressed, the general file, and the general file compressed.

    Kept per process: compressing 180 kB of parameter metadata takes 16 ms, and a campaign's vehicles,
    one per trial, mostly share their table.
    """
    packed = lzma.compress(parameters.encode())
    general = json.dumps({"version": 1, "metadataTypes": [
        {"type": COMP_METADATA_TYPE_PARAMETER, "uri": "mftp://etc/extras/parameters.json.xz",
         "fileCrc": crc32part(packed)}]}).encode()
    return packed, general, lzma.compress(general)
