"""What the built-in vehicle shows a MAVLink client, checked against PX4 v1.14 as measured (../shared/reference/)."""

from __future__ import annotations

import json
import struct
import time
from collections import Counter
from pathlib import Path

import pytest
from pymavlink.dialects.v20 import common as mavlink

from bridges.mavsdk_vehicle import connect
from bridges.vehicle import MissionWaypoint
from hil.targets import SimProcessOptions, builtin_vehicle
from px4.params import SPECS

from .conftest import SPEED
from .mavlink_client import Client

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "px4_v1.14_sih_mavlink_surface.json"
# The messages a MAVSDK client relies on (telemetry plugin) must all be there at PX4's rates.
RELIED_ON = ("HEARTBEAT", "SYS_STATUS", "EXTENDED_SYS_STATE", "GPS_RAW_INT", "GLOBAL_POSITION_INT",
             "LOCAL_POSITION_NED", "ATTITUDE", "ATTITUDE_QUATERNION", "ALTITUDE", "VFR_HUD", "ODOMETRY",
             "HIGHRES_IMU", "BATTERY_STATUS", "HOME_POSITION")


@pytest.fixture
async def realtime_client():
    async with builtin_vehicle(SimProcessOptions(speed=1.0)) as sim:
        c = Client(sim.url)
        yield c
        c.close()


@pytest.mark.skipif(not REFERENCE.exists(), reason=f"reference measurements not found at {REFERENCE}")
async def test_message_rates_match_px4_sitl(realtime_client):
    reference = json.loads(REFERENCE.read_text())["rates_hz"]
    counts: Counter = Counter()
    window = 4.0
    end = time.monotonic() + window
    while time.monotonic() < end:
        msg = realtime_client.conn.recv_match(blocking=True, timeout=0.1)
        if msg is not None:
            counts[msg.get_type()] += 1
    for name in RELIED_ON:
        expected = reference[name]
        measured = counts[name] / window
        # Slow streams (0.5 Hz) give 1-3 samples in the window; fast ones must be within 15 %.
        tolerance = max(0.15 * expected, 2.0 / window)
        assert abs(measured - expected) <= tolerance, f"{name}: {measured:.1f} Hz, PX4 SITL {expected} Hz"


async def test_set_message_interval_changes_a_stream(client):
    msg_id = mavlink.MAVLINK_MSG_ID_ALTITUDE
    assert client.command(mavlink.MAV_CMD_SET_MESSAGE_INTERVAL, msg_id, 1e6 / 50.0) == mavlink.MAV_RESULT_ACCEPTED
    client.recv("NONE", 0.3)
    start, n = time.monotonic(), 0
    while time.monotonic() - start < 1.0:
        if client.recv("ALTITUDE", 0.2):
            n += 1
    assert n >= 0.8 * 50.0 * SPEED, f"ALTITUDE at {n} Hz after asking for 50 Hz (vehicle time, speed {SPEED})"
    assert client.command(mavlink.MAV_CMD_SET_MESSAGE_INTERVAL, msg_id, -1) == mavlink.MAV_RESULT_ACCEPTED
    client.recv("NONE", 0.3)
    assert client.recv("ALTITUDE", 1.0) is None, "a stream set to -1 stops"
    assert client.command(mavlink.MAV_CMD_SET_MESSAGE_INTERVAL, 424242, 1000) == mavlink.MAV_RESULT_UNSUPPORTED


async def test_request_message_answers_autopilot_version_as_px4(client):
    assert client.command(mavlink.MAV_CMD_REQUEST_MESSAGE, mavlink.MAVLINK_MSG_ID_AUTOPILOT_VERSION) == \
        mavlink.MAV_RESULT_ACCEPTED
    version = client.recv("AUTOPILOT_VERSION", 2.0)
    assert version is not None
    assert version.capabilities & mavlink.MAV_PROTOCOL_CAPABILITY_MISSION_INT
    assert version.capabilities & mavlink.MAV_PROTOCOL_CAPABILITY_PARAM_ENCODE_BYTEWISE
    assert (version.flight_sw_version >> 24, (version.flight_sw_version >> 16) & 0xFF) == (1, 14)


async def test_timesync_is_answered_in_nanoseconds(client):
    ts1 = time.monotonic_ns()
    client.conn.mav.timesync_send(0, ts1)
    reply = client.recv("TIMESYNC", 2.0, lambda m: m.ts1 == ts1 and m.tc1 != 0)
    assert reply is not None
    assert 0 < reply.tc1 < 3600 * 10**9, "tc1 is the vehicle's boot clock in ns"


async def test_parameter_list_and_int_encoding(client):
    client.conn.mav.param_request_list_send(1, 1)
    seen: dict[str, object] = {}
    deadline = time.monotonic() + 5.0
    while len(seen) < len(SPECS) and time.monotonic() < deadline:
        msg = client.recv("PARAM_VALUE", 1.0)
        if msg is not None:
            seen[msg.param_id] = msg
    assert len(seen) == len(SPECS)
    assert {m.param_count for m in seen.values()} == {len(SPECS)}
    assert sorted(m.param_index for m in seen.values()) == list(range(len(SPECS)))
    # PX4 sends INT32 parameters bytewise in the float field; the bits decode to the integer.
    act = seen["COM_OBL_RC_ACT"]
    assert act.param_type == mavlink.MAV_PARAM_TYPE_INT32
    assert struct.unpack("<i", struct.pack("<f", act.param_value))[0] == 0
    assert seen["MPC_XY_CRUISE"].param_type == mavlink.MAV_PARAM_TYPE_REAL32
    # An out-of-range set is answered with the unchanged value, as PX4 answers every set.
    client.conn.mav.param_set_send(1, 1, b"MPC_TILTMAX_AIR", 500.0, mavlink.MAV_PARAM_TYPE_REAL32)
    echo = client.recv("PARAM_VALUE", 2.0, lambda m: m.param_id == "MPC_TILTMAX_AIR")
    assert echo is not None and echo.param_value == 45.0


async def test_mission_download_and_clear_through_mavsdk(sim):
    vehicle = await connect(sim.url, timeout=10.0, speed_factor=SPEED)
    try:
        await vehicle.wait_armable(10.0)
        await vehicle.upload_mission([MissionWaypoint(5, 0, -4, speed=3.0), MissionWaypoint(5, 5, -4, hold_s=1.0)])
        plan = await vehicle.mission.download_mission()
        items = plan.mission_items
        assert len(items) == 2
        assert items[0].relative_altitude_m == pytest.approx(4.0, abs=0.01)
        assert items[0].speed_m_s == pytest.approx(3.0)
        assert items[1].loiter_time_s == pytest.approx(1.0)
        await vehicle.mission.clear_mission()
        assert (await vehicle.mission.download_mission()).mission_items == []
    finally:
        await vehicle.close()
