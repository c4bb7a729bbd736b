"""The built-in vehicle under hostile MAVLink, as robust as PX4: a real vehicle process over UDP, a
pymavlink client sending what no ground station should. Result codes are PX4 v1.16.1's, measured
on the shipped SITL build (speed 4, GCS link): NAV_TAKEOFF with altitude inf or 1e30 ACCEPTED;
SET_MESSAGE_INTERVAL(HEARTBEAT, NaN) FAILED with heartbeats going on; DO_REPOSITION with altitude
inf or lat/lon 1e30 ACCEPTED and not flown."""

from __future__ import annotations

import contextlib
import math

import pytest
from pymavlink.dialects.v20 import common as mavlink

from px4.modes import FlightMode
from px4.process import free_udp_port
from targets.builtin import SimProcessOptions, builtin_vehicle

from .conftest import SPEED
from .mavlink_client import Client

NAN, INF = math.nan, math.inf


@contextlib.asynccontextmanager
async def vehicle_and_client():
    port = free_udp_port()
    async with builtin_vehicle(SimProcessOptions(speed=SPEED, extra_links=[f"udpin://127.0.0.1:{port}"])) as sim:
        client = Client(f"udpout:127.0.0.1:{port}")
        try:
            client.wait_armable(30.0)
            yield sim, client
        finally:
            client.close()


def _hovering(client: Client) -> mavlink.MAVLink_local_position_ned_message:
    assert client.command(mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 1) == mavlink.MAV_RESULT_ACCEPTED
    assert client.command(mavlink.MAV_CMD_NAV_TAKEOFF, 0, 0, 0, NAN, NAN, NAN, NAN) == mavlink.MAV_RESULT_ACCEPTED
    assert client.wait_mode(FlightMode.HOLD, 30.0 / SPEED + 3)
    client.recv("NONE", 3.0 / SPEED)
    return client.recv("LOCAL_POSITION_NED", 1.0)


def _answers(client: Client) -> bool:
    """A plain request is answered at the first try."""
    client.drain()
    client.conn.mav.param_request_read_send(*client.target, b"MIS_TAKEOFF_ALT", -1)
    return client.recv("PARAM_VALUE", 1.0, lambda m: m.param_id == "MIS_TAKEOFF_ALT") is not None


def _moved(client: Client, start) -> float:
    client.recv("NONE", 2.0 / SPEED)
    now = client.recv("LOCAL_POSITION_NED", 1.0)
    return math.dist((start.x, start.y, start.z), (now.x, now.y, now.z))


async def test_absurd_commands_get_px4s_answer_and_are_never_flown():
    async with vehicle_and_client() as (sim, client):
        start = _hovering(client)
        for params in ((-1, 1, 0, NAN, NAN, NAN, INF), (-1, 1, 0, NAN, 1e30, 1e30, NAN),
                       (-1, 1, 0, NAN, NAN, NAN, -1e30), (-1, 1, 0, NAN, INF, -INF, 1e30)):
            assert client.command(mavlink.MAV_CMD_DO_REPOSITION, *params) == mavlink.MAV_RESULT_ACCEPTED
            assert _moved(client, start) < 1.0, f"flew towards DO_REPOSITION {params}"
        for altitude in (INF, 1e30):
            assert client.command(mavlink.MAV_CMD_NAV_TAKEOFF, 0, 0, 0, NAN, NAN, NAN, altitude) == \
                mavlink.MAV_RESULT_ACCEPTED
            assert _moved(client, start) < 1.0, f"flew towards a takeoff altitude of {altitude}"
        assert client.command(mavlink.MAV_CMD_SET_MESSAGE_INTERVAL, 0, NAN) == mavlink.MAV_RESULT_FAILED
        client.drain()
        assert client.recv("HEARTBEAT", 2.0) is not None, "heartbeats go on"
        # Failure injection with NaN/inf: an answer (not a crash), and the vehicle flies on.
        result = client.command(mavlink.MAV_CMD_INJECT_FAILURE, INF, NAN, -INF)
        assert result != mavlink.MAV_RESULT_ACCEPTED
        assert sim.failure() is None and _answers(client)


async def test_nan_setpoints_in_offboard_are_ignored_not_flown():
    async with vehicle_and_client() as (sim, client):
        start = _hovering(client)
        hold = (start.x, start.y, start.z)
        client.position_setpoint(*hold)
        assert client.set_mode(FlightMode.OFFBOARD) == mavlink.MAV_RESULT_ACCEPTED
        for _ in range(int(20 / SPEED)):  # 5 vehicle seconds of hostile setpoints between good ones
            client.position_setpoint(*hold)
            client.conn.mav.set_attitude_target_send(0, *client.target, 0, [NAN, 0, 0, 0], 0, 0, 0, NAN)
            client.conn.mav.set_attitude_target_send(0, *client.target, 0, [1, 0, 0, 0], 0, 0, 0, INF)
            client.conn.mav.set_position_target_global_int_send(
                0, *client.target, mavlink.MAV_FRAME_GLOBAL_INT, 0x0DF8, 2**31 - 1, 2**31 - 1, INF,
                0, 0, 0, 0, 0, 0, 0, 0)
            client.recv("NONE", 0.05)
        assert sim.failure() is None, sim.failure()
        assert client.wait_mode(FlightMode.OFFBOARD, 1.0)
        assert _moved(client, start) < 1.0
        assert _answers(client)


async def test_a_mission_item_with_an_unusable_field_is_rejected_naming_it():
    async with vehicle_and_client() as (sim, client):
        client.drain()
        client.conn.mav.mission_count_send(*client.target, 2, mavlink.MAV_MISSION_TYPE_MISSION)
        request = client.recv("MISSION_REQUEST_INT", 2.0)
        assert request is not None and request.seq == 0
        client.conn.mav.mission_item_int_send(*client.target, 0, mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT,
                                              mavlink.MAV_CMD_NAV_WAYPOINT, 0, 1, 0, 1, 0, NAN, 473977420,
                                              85455940, INF, mavlink.MAV_MISSION_TYPE_MISSION)
        ack = client.recv("MISSION_ACK", 2.0)
        assert ack is not None and ack.type == mavlink.MAV_MISSION_INVALID_PARAM7
        assert sim.failure() is None and _answers(client)


@pytest.mark.parametrize("junk", [b"\xfd\xff", b"\xfe\x21\x00", bytes(range(256)) * 2], ids=["fd-ff", "v1-start",
                                                                                            "random"])
async def test_a_broken_datagram_does_not_swallow_the_requests_after_it(junk):
    async with vehicle_and_client() as (sim, client):
        # The junk comes from the client's own socket, as a broken ground station would send it.
        client.conn.port.sendto(junk, client.conn.destination_addr)
        answered = sum(_answers(client) for _ in range(10))
        assert answered == 10, f"{answered}/10 requests answered at the first try after {junk[:8]!r}"
