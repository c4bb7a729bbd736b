"""What the vehicle itself said during a trial, read back from its record for the trial page.

Two sources, both written on every target:

- ``telemetry.tlog``: every MAVLink frame the harness received, each after a big-endian uint64 stamp
  (microseconds since the Unix epoch). Only the messages a trial page plots are decoded (the vehicle's
  setpoints, attitude rates, outputs, battery and STATUSTEXT); the rest are skipped by their header,
  which keeps a whole campaign's pages cheap. The stamps are put on the telemetry table's clock by
  lining up the first frame with the first telemetry row: both are recorded from the same moment
  (`hil.recording.record_telemetry`), so the offset is right to within one telemetry period.
- the ULog (``ulog/*.ulg``): its parameter table, for the parameters that differ from PX4's defaults.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from pymavlink.dialects.v20 import all as dialect
from pyulog import ULog

from bridges.mavlink_frames import STX_V2
from px4.params import PX4_TABLE

TLOG_NAME = "telemetry.tlog"
_STAMP = struct.Struct(">Q")
# Message id -> the fields kept, as a table per message name.
WANTED = {
    dialect.MAVLINK_MSG_ID_POSITION_TARGET_LOCAL_NED: ("type_mask", "x", "y", "z", "vx", "vy", "vz"),
    dialect.MAVLINK_MSG_ID_ATTITUDE_TARGET: ("type_mask", "q", "body_roll_rate", "body_pitch_rate",
                                             "body_yaw_rate", "thrust"),
    dialect.MAVLINK_MSG_ID_ATTITUDE: ("rollspeed", "pitchspeed", "yawspeed"),
    dialect.MAVLINK_MSG_ID_SERVO_OUTPUT_RAW: tuple(f"servo{i}_raw" for i in range(1, 17)),
    dialect.MAVLINK_MSG_ID_ACTUATOR_OUTPUT_STATUS: ("active", "actuator"),
    dialect.MAVLINK_MSG_ID_BATTERY_STATUS: ("voltages", "current_battery", "battery_remaining"),
    dialect.MAVLINK_MSG_ID_SYS_STATUS: ("voltage_battery", "current_battery", "battery_remaining"),
    dialect.MAVLINK_MSG_ID_STATUSTEXT: ("severity", "text"),
}
# Values this close to PX4's default are its default: float32 storage and a profile's derived values (an
# inertia of 0.025003 for PX4's 0.025) move the fourth digit without anyone having chosen a value.
SAME = 1e-3
SEVERITIES = ("emergency", "alert", "critical", "error", "warning", "notice", "info", "debug")


@dataclass
class VehicleLog:
    """The decoded messages of a telemetry log, one table per message name (column ``t_ns`` on the
    telemetry table's clock, then the kept fields), and whether a log was there at all."""

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    present: bool = False

    def table(self, name: str) -> pd.DataFrame:
        return self.tables.get(name, pd.DataFrame())


def read_tlog(record: Path, telemetry_t0_ns: int | None) -> VehicleLog:
    """The plotted messages of `record`'s telemetry.tlog, its first frame placed at `telemetry_t0_ns`;
    an empty log when there is none. A torn last frame (a killed trial) ends the reading; a frame that
    does not decode is skipped."""
    path = record / TLOG_NAME
    if not path.is_file():
        return VehicleLog()
    data = path.read_bytes()
    parser = dialect.MAVLink(None)
    rows: dict[str, list[dict]] = {}
    at, first_stamp = 0, None
    while at + _STAMP.size < len(data):
        start = at + _STAMP.size
        if data[start] != STX_V2 or start + 3 > len(data):
            break  # the recorder writes MAVLink 2 frames only: anything else is where the log was cut
        end = start + 12 + data[start + 1] + (13 if data[start + 2] & 1 else 0)
        if end > len(data):
            break
        stamp = _STAMP.unpack_from(data, at)[0]
        first_stamp = stamp if first_stamp is None else first_stamp
        msgid = data[start + 7] | data[start + 8] << 8 | data[start + 9] << 16  # as frame_header reads it
        if msgid in WANTED:
            try:
                message = parser.decode(bytearray(data[start:end]))
            except Exception:  # noqa: BLE001 - pymavlink raises its own and struct's errors: one frame lost
                message = None
            if message is not None:
                row = {"t_us": stamp, **{name: getattr(message, name) for name in WANTED[msgid]}}
                rows.setdefault(message.get_type(), []).append(row)
        at = end
    # Without a telemetry table the log keeps its own start as zero.
    offset_ns = 0 if first_stamp is None else (telemetry_t0_ns or 0) - first_stamp * 1000
    tables = {}
    for name, kept in rows.items():
        frame = pd.DataFrame(kept)
        frame.insert(0, "t_ns", frame.pop("t_us").to_numpy(np.int64) * 1000 + offset_ns)
        tables[name] = frame
    return VehicleLog(tables, True)


def changed_parameters(record: Path) -> pd.DataFrame | None:
    """Parameters of the record's ULog whose value differs from PX4's default (the measured table in
    px4/reference/), with both values; None when the record holds no ULog with parameters."""
    logs = sorted((record / "ulog").glob("*.ulg"))
    if not logs:
        return None
    try:
        log = ULog(str(logs[-1]), [], parse_header_only=True)  # the parameters are in the header
    except Exception:  # noqa: BLE001 - pyulog raises anything on a log cut short: no table then
        return None
    if not log.initial_parameters:
        return None
    defaults = {name: value for name, _, value in PX4_TABLE.parameters if name not in PX4_TABLE.volatile}
    rows = [{"parameter": name, "value": value, "PX4 default": defaults.get(name)}
            for name, value in sorted(log.initial_parameters.items())
            if name not in PX4_TABLE.volatile and (name not in defaults or not math.isclose(value, defaults[name],
                                                                                           rel_tol=SAME))]
    return pd.DataFrame(rows, columns=["parameter", "value", "PX4 default"])
