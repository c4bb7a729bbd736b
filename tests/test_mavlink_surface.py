"""What the built-in vehicle shows a MAVLink client, checked against PX4 v1.16.1 as measured (px4/reference/)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from pymavlink.dialects.v20 import all as mavlink_all
from pymavlink.dialects.v20 import common as mavlink

from bridges.mavsdk_vehicle import connect
from bridges.vehicle import MissionWaypoint
from targets.builtin import SimProcessOptions, builtin_vehicle
from px4.modes import FlightMode
from px4.params import ParamStore
from px4.process import free_udp_port
from px4.reference.measure import measure_rates, rate_differences, read_parameters
from px4.sim import mavlink_extra
from px4.sim.mavlink_link import DEFAULT_RATES_HZ
from px4.sim.realtime import SimOptions, build_vehicle

from .conftest import SPEED
from .mavlink_client import Client

REFERENCE = Path(__file__).resolve().parents[1] / "px4" / "reference" / "px4_v1.16.1_sih_mavlink_surface.json"


@pytest.mark.parametrize("vehicle_seconds", [4294.968, 4295.0, 50 * 86400.0], ids=["before-wrap", "usec-wrap",
                                                                                   "ms-wrap"])
def test_every_stream_packs_past_the_32_bit_time_boundaries(vehicle_seconds):
    """SERVO_OUTPUT_RAW's time_usec is a uint32 (4294.97 s), time_boot_ms one (49.7 days): past
    either, each stream still packs, its time wrapped as PX4's casts wrap it."""
    autopilot, server = build_vehicle(SimOptions())
    autopilot.time_s = vehicle_seconds
    mav = mavlink.MAVLink(None, srcSystem=1, srcComponent=1)
    built = [server.telemetry.build(name) for name in DEFAULT_RATES_HZ]
    for message in filter(None, built):  # None: a stream with nothing to say yet (no mission, no target)
        message.pack(mav)  # struct.error here is what crashed the vehicle
    servo = server.telemetry.build("SERVO_OUTPUT_RAW")
    assert servo.time_usec == int(vehicle_seconds * 1e6) % 2**32


def test_default_streams_are_px4_v1_16_1s():
    reference = json.loads(REFERENCE.read_text())["rates_hz"]
    configured = {name: hz for name, hz in DEFAULT_RATES_HZ.items() if name != "WIND_COV"}  # sent with wind only
    assert rate_differences(configured, reference, 10.0) == []


# At 1x there is no speed-up to hide behind. At 2x counted as if at 4x, the vehicle is a PX4 that falls
# behind its speed factor on a busy machine: fewer messages per wall second, as many per vehicle second,
# and measure_rates reads the vehicle's clock (a count in wall time would halve every rate).
@pytest.mark.parametrize("runs_at, counted_as", [(1.0, 1.0), (2.0, 4.0)], ids=["1x", "behind-its-speed-factor"])
async def test_message_rates_match_px4_sitl(runs_at, counted_as):
    """The whole v1.16.1 stream set at its rates, counted by a client in vehicle time."""
    mavlink_extra.register(mavlink_all)
    async with builtin_vehicle(SimProcessOptions(speed=runs_at)) as sim:
        client = Client(sim.url, dialect="all")
        client.collect(1.0, set())  # let the streams settle after the first heartbeat
        measured = measure_rates(client.conn, 4.0, speed=counted_as, min_count=1)
        client.close()
    reference = json.loads(REFERENCE.read_text())["rates_hz"]
    # Slow streams (0.4-0.5 Hz) give 1-3 samples in 4 s: rate_differences allows two samples' worth.
    assert rate_differences(measured, reference, 4.0) == []


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
    assert client.command(mavlink.MAV_CMD_SET_MESSAGE_INTERVAL, 424242, 1000) == mavlink.MAV_RESULT_FAILED  # as PX4


async def test_request_message_answers_autopilot_version_as_px4(client):
    client.conn.mav.command_long_send(1, 1, mavlink.MAV_CMD_REQUEST_MESSAGE, 0,
                                      mavlink.MAVLINK_MSG_ID_AUTOPILOT_VERSION, 0, 0, 0, 0, 0, 0)
    replies = [m.get_type() for m in client.collect(1.0, {"AUTOPILOT_VERSION", "COMMAND_ACK"})]
    assert replies == ["AUTOPILOT_VERSION", "COMMAND_ACK"], "PX4 sends the message, then its ACK"
    client.conn.mav.command_long_send(1, 1, mavlink.MAV_CMD_REQUEST_MESSAGE, 0,
                                      mavlink.MAVLINK_MSG_ID_AUTOPILOT_VERSION, 0, 0, 0, 0, 0, 0)
    version = client.recv("AUTOPILOT_VERSION", 2.0)
    assert version is not None
    assert version.capabilities & mavlink.MAV_PROTOCOL_CAPABILITY_MISSION_INT
    assert version.capabilities & mavlink.MAV_PROTOCOL_CAPABILITY_PARAM_ENCODE_BYTEWISE
    assert (version.flight_sw_version >> 24, (version.flight_sw_version >> 16) & 0xFF) == (1, 16)


async def test_timesync_is_answered_in_nanoseconds(client):
    ts1 = time.monotonic_ns()
    client.conn.mav.timesync_send(0, ts1)
    reply = client.recv("TIMESYNC", 2.0, lambda m: m.ts1 == ts1 and m.tc1 != 0)
    assert reply is not None
    assert 0 < reply.tc1 < 3600 * 10**9, "tc1 is the vehicle's boot clock in ns"


async def test_parameter_list_and_int_encoding(client):
    params, hash_check = read_parameters(client.conn, 1, timeout=20.0)
    assert len(params) == len(ParamStore()) and hash_check is not None
    seen = {p.name: p for p in params}
    # PX4 sends INT32 parameters bytewise in the float field; the bits decode to the integer.
    act = seen["COM_OBL_RC_ACT"]
    assert act.param_type == mavlink.MAV_PARAM_TYPE_INT32 and act.value == 0
    assert seen["MPC_XY_CRUISE"].param_type == mavlink.MAV_PARAM_TYPE_REAL32
    # A set outside the documented range is stored and echoed, as PX4 v1.16.1 stores it (issue 35).
    client.conn.mav.param_set_send(1, 1, b"MPC_TILTMAX_AIR", 500.0, mavlink.MAV_PARAM_TYPE_REAL32)
    echo = client.recv("PARAM_VALUE", 2.0, lambda m: m.param_id == "MPC_TILTMAX_AIR")
    assert echo is not None and echo.param_value == 500.0
    # A set of the wrong type is ignored without an answer, as PX4 ignores it.
    client.conn.mav.param_set_send(1, 1, b"MPC_XY_CRUISE", 7.0, mavlink.MAV_PARAM_TYPE_INT32)
    assert client.recv("PARAM_VALUE", 1.0, lambda m: m.param_id == "MPC_XY_CRUISE") is None
    # A parameter the built-in vehicle only stores takes any value of its type and echoes it.
    client.conn.mav.param_set_send(1, 1, b"FLW_TGT_HT", 17.5, mavlink.MAV_PARAM_TYPE_REAL32)
    echo = client.recv("PARAM_VALUE", 2.0, lambda m: m.param_id == "FLW_TGT_HT")
    assert echo is not None and echo.param_value == 17.5


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


class _Wire:
    """One client's end of a link to an in-process vehicle: what it says is handled at once, what the vehicle
    sends is decoded as the client reads it."""

    def __init__(self, server, gcs: bool) -> None:
        self.server = server
        self.sent: list[bytes] = []
        self.link = server.add_link(self, gcs)
        self.mav = mavlink.MAVLink(None, srcSystem=245, srcComponent=190)
        self.reader = mavlink.MAVLink(None)
        self.reader.robust_parsing = True

    def send(self, buf: bytes) -> None:  # the vehicle's side: the link's transport
        self.sent.append(buf)

    def say(self, msg) -> None:
        self.server.receive(self.link, msg.pack(self.mav))

    def heard(self, *kinds: str) -> list:
        """What the vehicle sent since last asked, of these kinds."""
        msgs = [m for buf in self.sent for m in (self.reader.parse_buffer(buf) or [])]
        self.sent.clear()
        return [m for m in msgs if m.get_type() in kinds]


def _ready_vehicle():
    autopilot, server = build_vehicle(SimOptions())
    while not autopilot.global_position_ok:
        autopilot.run(0.5)
    return autopilot, server


def _item(seq: int, int_form: bool = True):
    lat, lon = 47.3977420 + 1e-4 * seq, 8.5455940
    if int_form:
        return mavlink.MAVLink_mission_item_int_message(1, 1, seq, mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT,
                                                        mavlink.MAV_CMD_NAV_WAYPOINT, 0, 1, 0, 0, 0, 0,
                                                        int(lat * 1e7), int(lon * 1e7), 5.0, 0)
    return mavlink.MAVLink_mission_item_message(1, 1, seq, mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT,
                                                mavlink.MAV_CMD_NAV_WAYPOINT, 0, 1, 0, 0, 0, 0, lat, lon, 5.0, 0)


def test_a_mission_started_the_moment_its_upload_is_acknowledged_is_flown():
    """The navigator checks a new plan on its next cycle; the ACK waits for that, so a client that starts
    the mission on the ACK (no pause) finds it flyable. Before, the ACK went out at once and a start that
    came before the navigator's next cycle was ACCEPTED and not flown (the conformance suite waited 0.5 s)."""
    autopilot, server = _ready_vehicle()
    try:
        gcs = _Wire(server, gcs=True)
        gcs.say(mavlink.MAVLink_mission_count_message(1, 1, 2, 0))
        for seq in range(2):
            gcs.say(_item(seq))
        acks = gcs.heard("MISSION_ACK")
        while not acks and autopilot.time_s < 60.0:
            autopilot.step()
            server.tick()
            acks = gcs.heard("MISSION_ACK")
        assert [a.type for a in acks] == [mavlink.MAV_MISSION_ACCEPTED]
        gcs.say(mavlink.MAVLink_command_long_message(1, 1, mavlink.MAV_CMD_MISSION_START, 0, 0, 0, 0, 0, 0, 0, 0))
        assert [a.result for a in gcs.heard("COMMAND_ACK")] == [mavlink.MAV_RESULT_ACCEPTED]
        assert autopilot.mode == FlightMode.MISSION
    finally:
        server.close()


def test_mission_requests_follow_the_forms_the_link_speaks_as_px4s_mission_manager():
    """Measured on PX4 v1.16.1 (pymavlink on its ground-station port): a fresh link's MISSION_COUNT gets
    MISSION_REQUEST; MISSION_ACK UNSUPPORTED (MAVSDK's answer to it) gets the item asked again as
    MISSION_REQUEST_INT; after an upload in MISSION_ITEM_INT the next count gets MISSION_REQUEST_INT, after
    one in MISSION_ITEM a MISSION_REQUEST again; and a MISSION_REQUEST_INT (a download) switches it too."""
    autopilot, server = _ready_vehicle()
    try:
        gcs, api = _Wire(server, gcs=True), _Wire(server, gcs=False)
        requests = ("MISSION_REQUEST", "MISSION_REQUEST_INT")

        def upload(wire: _Wire, int_form: bool | None) -> list[str]:
            """The requests one single-item upload gets; None: answer the first with MISSION_ACK UNSUPPORTED."""
            wire.say(mavlink.MAVLink_mission_count_message(1, 1, 1, 0))
            asked = [m.get_type() for m in wire.heard(*requests)]
            if int_form is None:
                wire.say(mavlink.MAVLink_mission_ack_message(1, 1, mavlink.MAV_MISSION_UNSUPPORTED, 0))
                asked += [m.get_type() for m in wire.heard(*requests)]
                int_form = True
            wire.say(_item(0, int_form))
            for _ in range(10):  # the navigator's next cycle, when the ACK goes out
                autopilot.step()
                server.tick()
            assert [a.type for a in wire.heard("MISSION_ACK")] == [mavlink.MAV_MISSION_ACCEPTED]
            return asked

        assert upload(gcs, None) == ["MISSION_REQUEST", "MISSION_REQUEST_INT"]
        assert upload(gcs, False) == ["MISSION_REQUEST_INT"]
        assert upload(gcs, True) == ["MISSION_REQUEST"]
        assert upload(gcs, True) == ["MISSION_REQUEST_INT"]
        gcs.say(mavlink.MAVLink_mission_request_message(1, 1, 0, 0))
        assert [m.get_type() for m in gcs.heard("MISSION_ITEM", "MISSION_ITEM_INT")] == ["MISSION_ITEM"]
        assert upload(gcs, True) == ["MISSION_REQUEST"]
        # The API port keeps the _INT forms the built-in vehicle always asked in there (a named difference).
        assert upload(api, True) == ["MISSION_REQUEST_INT"]
    finally:
        server.close()


async def test_mavsdk_uploads_a_mission_on_the_ground_station_port():
    """MAVSDK answers MISSION_REQUEST with MISSION_ACK UNSUPPORTED and waits for MISSION_REQUEST_INT, as it
    does with PX4 on a fresh link: its upload, download and start must go through on the port that asks in
    the float forms first."""
    port = free_udp_port()
    async with builtin_vehicle(SimProcessOptions(speed=SPEED, gcs_links=[f"udpin://127.0.0.1:{port}"])):
        vehicle = await connect(f"udpout://127.0.0.1:{port}", timeout=10.0, speed_factor=SPEED)
        try:
            await vehicle.wait_armable(10.0)
            await vehicle.upload_mission([MissionWaypoint(5, 0, -4), MissionWaypoint(5, 5, -4)])
            assert len((await vehicle.mission.download_mission()).mission_items) == 2
        finally:
            await vehicle.close()
