"""ULog reading (pyulog) and alignment of PX4's clock with the harness clock, on generated logs."""

import json

import numpy as np
import pandas as pd
import pytest
from pyulog import ULog

from px4.ulog import ClockAlignment, fit_offset, keep_in_record, read_topic
from px4.ulog_writer import ULogWriter
from tests.ulog_writer import LOCAL_POSITION_FIELDS, flight_profile, write_ulog

BOOT_TO_HARNESS_S = 1234.567  # harness monotonic time when PX4's clock read 0


def px4_log(tmp_path, speed=1.0, seconds=20.0, rate_hz=50.0):
    """A log as PX4 at `speed` would write it: its clock runs `speed` times faster than the harness's."""
    t_px4_us = np.arange(0.0, seconds * speed, speed / rate_hz) * 1e6
    rows = [(t, 0.0, 0.0, flight_profile(t * 1e-6 / speed), 0.0) for t in t_px4_us]
    angular = [(t, 0.1, 0.0, -0.2) for t in t_px4_us[::5]]
    return write_ulog(tmp_path / "flight.ulg", {
        "vehicle_local_position": (LOCAL_POSITION_FIELDS, rows),
        "vehicle_angular_velocity": ([("uint64_t", "timestamp"), ("float", "xyz[0]"), ("float", "xyz[1]"),
                                      ("float", "xyz[2]")], angular),
    })


def harness_telemetry(seconds=20.0, rate_hz=10.0, start_s=3.0):
    """What the harness recorded: altitude on its own clock, starting a little after PX4 booted."""
    t = np.arange(start_s, seconds - 1.0, 1.0 / rate_hz)
    return pd.DataFrame({"t_ns": ((BOOT_TO_HARNESS_S + t) * 1e9).astype(np.int64),
                         "down": [flight_profile(x) for x in t]})


def test_writer_keeps_arrays_info_parameters_and_texts(tmp_path):
    writer = ULogWriter(tmp_path / "w.ulg", 1000,
                        info={"sys_name": ("char[]", "PX4"), "ver_sw_release": ("uint32_t", 7)},
                        parameters={"SYS_AUTOSTART": ("int32_t", 10040), "MPC_XY_CRUISE": ("float", 5.0)},
                        topics={"vehicle_attitude": [("uint64_t", "timestamp"), ("float[4]", "q")]})
    writer.write("vehicle_attitude", [2000, 1.0, 0.0, 0.0, 0.5])
    writer.log(6, 2500, "Disarmed by landing")
    writer.close()
    log = ULog(str(tmp_path / "w.ulg"))
    attitude = log.get_dataset("vehicle_attitude").data
    assert list(attitude["timestamp"]) == [2000] and attitude["q[3]"][0] == 0.5
    assert log.msg_info_dict["sys_name"] == "PX4" and log.msg_info_dict["ver_sw_release"] == 7
    assert log.initial_parameters == {"SYS_AUTOSTART": 10040, "MPC_XY_CRUISE": 5.0}
    assert [(m.timestamp, m.message) for m in log.logged_messages] == [(2500, "Disarmed by landing")]


def test_generated_log_reads_back_with_pyulog(tmp_path):
    path = px4_log(tmp_path)
    frame = read_topic(path, "vehicle_local_position")
    assert len(frame) == 1000 and frame["timestamp"].iloc[1] == 20000
    assert frame["z"].min() == pytest.approx(-5.0)
    with pytest.raises(KeyError, match="battery_status"):
        read_topic(path, "battery_status")


@pytest.mark.parametrize("speed", [1.0, 4.0])
def test_altitude_fit_recovers_the_clock_offset(tmp_path, speed):
    frame = read_topic(px4_log(tmp_path, speed=speed), "vehicle_local_position")
    telemetry = harness_telemetry()
    alignment = fit_offset(frame["timestamp"], frame["z"], telemetry["t_ns"], telemetry["down"], scale=1 / speed)
    assert alignment.offset_ns * 1e-9 == pytest.approx(BOOT_TO_HARNESS_S, abs=0.005)
    assert alignment.rms_m < 0.01 and alignment.method == "altitude-fit"


def test_fit_refuses_a_vehicle_that_never_moved():
    t = np.arange(0, 10, 0.1)
    with pytest.raises(ValueError, match="hardly changes"):
        fit_offset(t * 1e6, np.zeros_like(t), (t * 1e9).astype(np.int64), np.zeros_like(t))


def test_keep_in_record_writes_aligned_tables(tmp_path):
    path = px4_log(tmp_path, speed=2.0)
    alignment = keep_in_record(path, harness_telemetry(), scale=0.5)
    position = pd.read_parquet(tmp_path / "flight.vehicle_local_position.parquet")
    # On the harness clock the logged altitude matches what the harness saw at the same instant.
    t_s = position["t_ns"].to_numpy() * 1e-9 - BOOT_TO_HARNESS_S
    expected = np.array([flight_profile(x) for x in t_s])
    assert np.max(np.abs(position["z"].to_numpy() - expected)) < 0.05
    assert (tmp_path / "flight.vehicle_angular_velocity.parquet").exists()
    assert not (tmp_path / "flight.vehicle_attitude.parquet").exists()  # not in this log: skipped
    saved = json.loads((tmp_path / "flight.alignment.json").read_text())
    assert saved["method"] == "altitude-fit" and saved["offset_ns"] == alignment.offset_ns


def test_given_offset_is_used_as_is(tmp_path):
    path = px4_log(tmp_path)
    alignment = keep_in_record(path, harness_telemetry(), offset_ns=42_000_000_000)
    assert alignment == ClockAlignment(42_000_000_000, 1.0, "given", alignment.rms_m)
    position = pd.read_parquet(tmp_path / "flight.vehicle_local_position.parquet")
    assert position["t_ns"].iloc[0] == 42_000_000_000
