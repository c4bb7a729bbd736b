"""Measure what PX4 SITL shows a MAVLink client, to keep the facts in this folder up to date.

Run against a PX4 build (it is started through px4.sitl, on a free instance):

    python -m px4.reference.measure --px4-dir ../shared/px4/v1.16.1 --out px4/reference

writes `px4_<version>_sih_mavlink_surface.json` (messages and rates on the offboard link, disarmed on
the ground) and `px4_<version>_sih_parameters.json` (every parameter: name, MAVLink type, value
right after boot). tests/test_px4_reference.py measures the same way and compares with the files.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import struct
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from pymavlink import mavutil
from pymavlink.dialects.v20 import common as mavlink

# Replies and one-off notices, not streams: they depend on what the client asked and when.
NOT_STREAMS = frozenset({"COMMAND_ACK", "PARAM_VALUE", "STATUSTEXT", "EVENT", "MISSION_ACK", "MISSION_COUNT",
                         "BAD_DATA", "GPS_GLOBAL_ORIGIN", "AUTOPILOT_VERSION", "PROTOCOL_VERSION",
                         "AVAILABLE_MODES", "LOG_ENTRY", "UNKNOWN_410"})
HASH_CHECK = "_HASH_CHECK"
# The stream whose time_boot_ms is the vehicle's clock in rate counts: sent at 100 Hz by PX4 and the built-in
# vehicle, stamped when sent (other streams carry their sample's stamp, which may be older).
CLOCK_MESSAGE = "ATTITUDE"
INT_TYPES = (mavlink.MAV_PARAM_TYPE_INT32, mavlink.MAV_PARAM_TYPE_UINT32)
# Messages PX4 v1.16 streams that pymavlink's bundled dialects do not know yet (MAVLink development.xml).
NEWER_MESSAGES = {"UNKNOWN_8": "LINK_NODE_STATUS", "UNKNOWN_380": "TIME_ESTIMATE_TO_TARGET",
                  "UNKNOWN_411": "CURRENT_EVENT_SEQUENCE"}


@dataclass(frozen=True)
class Parameter:
    """One parameter as PX4 lists it: its index, MAVLink type and value (ints decoded bytewise)."""

    index: int
    name: str
    param_type: int
    value: float


def connect(url: str, timeout: float = 20.0):
    """A pymavlink connection (as a ground station, system 245) that has seen the vehicle's heartbeat."""
    conn = mavutil.mavlink_connection(url.replace("udpin://", "udpin:"), source_system=245,
                                      source_component=190, dialect="all")
    conn.mav.heartbeat_send(mavlink.MAV_TYPE_GCS, mavlink.MAV_AUTOPILOT_INVALID, 0, 0, 0)
    if conn.wait_heartbeat(timeout=timeout) is None:
        raise TimeoutError(f"no HEARTBEAT from {url} within {timeout:g} s")
    return conn


def wire_value(value: float, param_type: int) -> float:
    """A PARAM_VALUE's number: int types are the float field's bits (PX4 encodes bytewise)."""
    if param_type in INT_TYPES:
        return float(struct.unpack("<i" if param_type == mavlink.MAV_PARAM_TYPE_INT32 else "<I",
                                   struct.pack("<f", value))[0])
    return value


def read_parameters(conn, target_system: int, timeout: float = 30.0) -> tuple[list[Parameter], int | None]:
    """Every parameter through PARAM_REQUEST_LIST (missing indices read one by one), and _HASH_CHECK."""
    conn.mav.param_request_list_send(target_system, 1)
    found: dict[int, Parameter] = {}
    count, hash_check = None, None
    deadline = time.monotonic() + timeout
    quiet_since = time.monotonic()
    while time.monotonic() < deadline:
        msg = conn.recv_match(type="PARAM_VALUE", blocking=True, timeout=0.2)
        if msg is None:
            if count is not None and time.monotonic() - quiet_since > 1.0:
                missing = [i for i in range(count) if i not in found]
                if not missing and hash_check is not None:
                    break
                for index in missing[:20]:
                    conn.mav.param_request_read_send(target_system, 1, b"", index)
                quiet_since = time.monotonic()
            continue
        quiet_since = time.monotonic()
        if msg.param_id == HASH_CHECK:
            if msg.param_index != 65535 or msg.param_type != mavlink.MAV_PARAM_TYPE_UINT32:
                raise ValueError(f"_HASH_CHECK with index {msg.param_index} and type {msg.param_type}, "
                                 "expected 65535 and UINT32 as PX4 sends it")
            hash_check = int(wire_value(msg.param_value, mavlink.MAV_PARAM_TYPE_UINT32))
            continue
        count = msg.param_count
        found[msg.param_index] = Parameter(msg.param_index, msg.param_id, msg.param_type,
                                           wire_value(msg.param_value, msg.param_type))
    if count is None or len(found) != count:
        raise TimeoutError(f"read {len(found)} of {count} parameters within {timeout:g} s")
    return [found[i] for i in range(count)], hash_check


def measure_rates(conn, window_s: float, speed: float = 1.0, min_count: int = 3) -> dict[str, float]:
    """Messages streamed on this link and their rates (Hz of vehicle time) over ``window_s`` vehicle
    seconds, while this client beats at 1 Hz; one-off replies and rarer messages are left out.

    Vehicle time is read from ATTITUDE's ``time_boot_ms``, not from the wall clock times ``speed``:
    on a busy machine PX4 SITL falls behind its speed factor (1.7-2.2x measured when 4x was asked),
    and every stream slows with its clock. ``speed`` only bounds the wait, at four times the nominal."""
    counts: Counter = Counter()
    start = end = time.monotonic()
    give_up = start + 4.0 * window_s / speed + 5.0
    first = last = None
    beat = 0.0
    while (last is None or last - first < window_s) and end < give_up:
        if end - beat > 1.0 / speed:
            conn.mav.heartbeat_send(mavlink.MAV_TYPE_GCS, mavlink.MAV_AUTOPILOT_INVALID, 0, 0, 0)
            beat = end
        msg = conn.recv_match(blocking=True, timeout=0.05)
        end = time.monotonic()
        if msg is None or msg.get_type() in NOT_STREAMS:
            continue
        if msg.get_type() == CLOCK_MESSAGE:
            last = msg.time_boot_ms / 1000.0
            first = last if first is None else first
        if first is not None:
            counts[NEWER_MESSAGES.get(msg.get_type(), msg.get_type())] += 1
    if last is None or last - first < 0.5 * window_s:
        seen = 0.0 if last is None else last - first
        raise TimeoutError(f"the vehicle's clock ({CLOCK_MESSAGE}.time_boot_ms) moved {seen:.1f} s in "
                           f"{end - start:.1f} s of wall time; {window_s:g} s were wanted")
    span = last - first
    return {name: round(n / span, 1) for name, n in sorted(counts.items()) if n >= min_count}


def volatile_parameters(px4_dir: str, params: list[Parameter]) -> list[str]:
    """The listed parameters the build's metadata (etc/extras/parameters.json.xz) marks volatile:
    PX4 leaves them out of _HASH_CHECK."""
    import lzma

    from px4.sitl import Px4Build

    metadata = Px4Build.locate(px4_dir).etc / "extras" / "parameters.json.xz"
    marked = {p["name"] for p in json.loads(lzma.decompress(metadata.read_bytes()))["parameters"] if p.get("volatile")}
    return [p.name for p in params if p.name in marked]


def rate_differences(measured: dict[str, float], reference: dict[str, float], window_s: float) -> list[str]:
    """What differs between two surfaces: messages only in one, and rates off by more than 15 %
    (or two samples in the window, for the slow streams)."""
    problems = [f"{name}: streamed, not in the reference" for name in sorted(set(measured) - set(reference))]
    problems += [f"{name}: in the reference ({reference[name]} Hz), not streamed" for name in
                 sorted(set(reference) - set(measured))]
    for name in sorted(set(measured) & set(reference)):
        if abs(measured[name] - reference[name]) > max(0.15 * reference[name], 2.0 / window_s):
            problems.append(f"{name}: {measured[name]} Hz, reference {reference[name]} Hz")
    return problems


def drain(conn, seconds: float) -> None:
    """Read and drop what arrives for a while (an unread socket buffer overflows and drops replies)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        conn.recv_match(blocking=True, timeout=0.05)


async def measure(px4_dir: str, speed: float, window_s: float) -> tuple[dict, dict]:
    """Start PX4 SITL (SIH, airframe 10040), wait until it is ready, and measure surface and parameters."""
    from px4.sitl import SitlOptions, px4_sitl

    async with px4_sitl(SitlOptions(speed=speed, px4_dir=px4_dir)) as sitl:
        conn = connect(sitl.url)
        target = conn.target_system
        drain(conn, 8.0 / speed)  # boot notices, "Ready for takeoff!" (~4 s of vehicle time on v1.16)
        version = conn.mav.command_long_send(target, 1, mavlink.MAV_CMD_REQUEST_MESSAGE, 0,
                                             mavlink.MAVLINK_MSG_ID_AUTOPILOT_VERSION, 0, 0, 0, 0, 0, 0)
        version = conn.recv_match(type="AUTOPILOT_VERSION", blocking=True, timeout=5.0)
        sw = version.flight_sw_version
        release = f"{sw >> 24}.{(sw >> 16) & 0xFF}.{(sw >> 8) & 0xFF}"
        params, hash_check = read_parameters(conn, target)
        drain(conn, 1.0)
        rates = measure_rates(conn, window_s, speed)
        conn.close()
    build = {"release": release, "airframe": 10040, "model": "sihsim_quadx", "instance": sitl.instance,
             "speed_factor": speed}
    surface = {"build": build, "link": "offboard (PX4 sends to UDP 14540+instance)", "window_s": window_s,
               "rates_hz": rates}
    table = {"build": build, "hash_check": hash_check, "volatile": volatile_parameters(px4_dir, params),
             "parameters": [[p.name, p.param_type, int(p.value) if p.param_type in INT_TYPES else p.value]
                            for p in params]}
    return surface, table


def parameters_json(table: dict) -> str:
    """The parameter table as JSON with one parameter per line (diffs of a new build stay readable)."""
    head = {k: v for k, v in table.items() if k != "parameters"}
    lines = [json.dumps(p) for p in table["parameters"]]
    return json.dumps(head, indent=1)[:-2] + ',\n "parameters": [\n  ' + ",\n  ".join(lines) + "\n ]\n}\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--px4-dir", required=True)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    parser.add_argument("--speed", type=float, default=1.0)
    parser.add_argument("--window", type=float, default=10.0, help="vehicle seconds of rate measurement")
    args = parser.parse_args(argv)
    surface, table = asyncio.run(measure(args.px4_dir, args.speed, args.window))
    release = surface["build"]["release"]
    (args.out / f"px4_v{release}_sih_mavlink_surface.json").write_text(json.dumps(surface, indent=1) + "\n")
    (args.out / f"px4_v{release}_sih_parameters.json").write_text(parameters_json(table))
    print(f"PX4 v{release}: {len(table['parameters'])} parameters, {len(surface['rates_hz'])} streamed messages")


if __name__ == "__main__":
    main()
