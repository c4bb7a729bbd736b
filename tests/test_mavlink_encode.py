"""The built-in vehicle's own MAVLink 2 encoder (px4/sim/mavlink_encode.py) makes the very frames pymavlink's
`msg.pack` makes: for every message the vehicle sends, and in a lockstep trial's telemetry.tlog, which
pymavlink's mavutil (what MAVProxy and QGroundControl's users read logs with) reads back with the same
messages and field values as the objects the vehicle built."""

from __future__ import annotations

import asyncio
import contextlib
import math
import sys

import numpy as np
import pytest
from pymavlink import mavutil
from pymavlink.dialects.v20 import common as mavlink

from bridges.lockstep_vehicle import LockstepVehicle
from hil.recording import TLOG_NAME, record_tlog
from profiles.library import load_vehicle_profile
from px4.sim import mavlink_encode, mavlink_extra, mavlink_link
from px4.sim.autopilot import Autopilot
from px4.sim.mavlink_link import DEFAULT_RATES_HZ
from px4.sim.mavlink_server import MavlinkServer
from records.record import TrialRecorder


def every_message(server: MavlinkServer) -> list:
    """Every message the vehicle's telemetry builds as of now, and the event messages it sends."""
    telemetry = server.telemetry
    names = [name[len("_msg_"):].upper() for name in dir(telemetry) if name.startswith("_msg_")]
    messages = [telemetry.build(name) for name in names if name not in ("COMPONENT_METADATA", "COMPONENT_INFORMATION")]
    return [m for m in messages if m is not None] + telemetry.available_modes(0) + [
        mavlink.MAVLink_statustext_message(mavlink.MAV_SEVERITY_INFO, b"Takeoff detected", 0, 0),
        mavlink.MAVLink_mission_item_reached_message(3), mavlink_extra.CurrentEventSequence(0, 0),
        # Byte arrays as lists (as the vehicle's log and file transfers send them) and as bytes.
        mavlink.MAVLink_log_data_message(1, 90, 3, list(b"ulg".ljust(90, b"\0"))),
        mavlink.MAVLink_log_data_message(1, 180, 90, bytes(range(90))),
        mavlink.MAVLink_file_transfer_protocol_message(0, 255, 190, list(range(251)))]


@pytest.mark.parametrize("checksum", ["fastcrc", "pymavlink's own"])
def test_every_message_the_vehicle_sends_encodes_as_pymavlink_encodes_it(checksum, monkeypatch):
    if checksum != "fastcrc":
        monkeypatch.setattr(mavlink_encode, "_MCRF4XX", None)  # as where fastcrc is not installed
    ap = Autopilot(load_vehicle_profile("default"))
    server = MavlinkServer(ap, component_metadata=False)
    ap.run(0.5)
    on_ground = every_message(server)
    ap.dyn.wind_ned[:] = (3.0, -1.0, 0.0)  # WIND_COV goes out only with wind
    assert ap.arm().accepted and ap.takeoff(math.nan).accepted
    ap.run(4.0)
    flying = every_message(server)
    assert {type(m) for m in flying} >= {type(m) for m in on_ground}
    assert {m.get_type() for m in flying} >= set(DEFAULT_RATES_HZ) - {"MISSION_CURRENT"}
    checked = 0
    for sysid, compid, seq in ((1, 1, 0), (1, 1, 255), (42, 190, 17)):
        mav = mavlink.MAVLink(None, srcSystem=sysid, srcComponent=compid)
        mav.seq = seq
        for msg in on_ground + flying:
            assert mavlink_encode.encode(msg, mav) == msg.pack(mav), msg.get_type()
            assert mav.seq == seq
            checked += 1
    # The streams' path: each builder's class and arguments packed straight to the message's frame.
    for name in DEFAULT_RATES_HZ:
        made = server.telemetry.fields(name)
        if made is not None:
            assert mavlink_encode.encode_args(*made, mav) == made[0](*made[1]).pack(mav), name
            checked += 1
    # Arguments short of the extensions (their defaults taken) go through the message.
    assert mavlink_encode.encode_args(mavlink_extra.MissionCurrent, (1, 5, 0, 0), mav) == \
        mavlink_extra.MissionCurrent(1, 5, 0, 0).pack(mav)
    # An all-zero payload is cut to one byte, as MAVLink 2 (and pymavlink) cut it.
    assert len(mavlink_encode.encode(mavlink_extra.CurrentEventSequence(0, 0), mav)) == 10 + 1 + 2
    # A signed link gets pymavlink's own signed frame.
    mav.signing.secret_key, mav.signing.sign_outgoing = bytes(32), True
    mav.signing.timestamp = 1000
    frame = mavlink_encode.encode(on_ground[0], mav)
    assert frame[2] & mavlink.MAVLINK_IFLAG_SIGNED and len(frame) == 10 + len(frame[10:-15]) + 2 + 13
    assert checked > 100


def test_a_lockstep_tlog_reads_back_as_the_messages_pymavlink_would_have_written(tmp_path, monkeypatch):
    built: list[tuple[object, bytes]] = []  # what the vehicle sent, and pymavlink's own frame of it

    def spy(msg, mav):
        built.append((msg, msg.pack(mav)))
        return mavlink_encode.encode(msg, mav)

    def spy_args(cls, args, mav):  # the streams, packed without the message: pymavlink packs the message of them
        msg = cls(*args)
        built.append((msg, msg.pack(mav)))
        return mavlink_encode.encode_args(cls, args, mav)
    monkeypatch.setattr(mavlink_link, "encode", spy)
    monkeypatch.setattr(mavlink_link, "encode_args", spy_args)

    async def trial() -> None:
        ap = Autopilot(load_vehicle_profile("default"))
        with TrialRecorder(tmp_path / "trial", config={}, target="lockstep") as recorder:
            async with LockstepVehicle(ap) as vehicle:
                tlog = asyncio.create_task(record_tlog(vehicle, recorder))
                await vehicle.sleep(0.5)
                await vehicle.arm()
                ap.takeoff(math.nan)
                await vehicle.sleep(6.0)
                tlog.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await tlog
            recorder.finish("done")
    asyncio.run(trial())

    data = (tmp_path / "trial" / TLOG_NAME).read_bytes()
    frames, at = [], 0
    while at < len(data):  # each record: an 8-byte stamp, then the frame
        length = 8 + 12 + data[at + 9]
        frames.append(data[at + 8:at + length])
        at += length
    assert frames == [frame for _, frame in built]  # byte for byte what pymavlink makes

    log = mavutil.mavlink_connection(str(tmp_path / "trial" / TLOG_NAME))
    for cls in mavlink_extra.MESSAGES:  # LINK_NODE_STATUS and the others pymavlink 2.4 lacks, for this test only
        monkeypatch.setitem(sys.modules[type(log.mav).__module__].mavlink_map, cls.id, cls)
    read = []
    while (message := log.recv_match()) is not None:
        read.append(message)
    log.close()
    assert len(read) == len(built)
    for message, (sent, _) in zip(read, built):
        assert message.get_type() == sent.get_type()
        for name in sent.get_fieldnames():
            got, want = getattr(message, name), getattr(sent, name)
            if isinstance(want, (bytes, str)):
                continue  # text: pymavlink decodes it its own way; the bytes are compared above
            # Floats go out as float32: what was sent, rounded to float32, is what is read.
            np.testing.assert_array_equal(np.asarray(got, dtype=float), np.asarray(
                np.asarray(want, dtype=np.float32 if isinstance(np.ravel(want)[0], float) else float), dtype=float),
                err_msg=f"{sent.get_type()}.{name}")
    # Every stream of the vehicle's (WIND_COV needs wind), and the texts of arming and taking off.
    assert set(DEFAULT_RATES_HZ) - {"WIND_COV"} | {"STATUSTEXT"} <= {m.get_type() for m in read}


def test_each_stream_pass_and_each_message_built_read_the_vehicle_as_it_is_then():
    """The builders read the physics state once a stream pass (and once a message built on its own): a pass
    or a message after the vehicle moved, at the same vehicle time, shows where it is now, not the state an
    earlier pass read."""
    ap = Autopilot(load_vehicle_profile("default"))
    server = MavlinkServer(ap, component_metadata=False)
    sent: list[bytes] = []
    link = server.add_link(type("Transport", (), {"send": staticmethod(sent.append)})())
    ap.run(0.5)
    reader = mavlink.MAVLink(None)

    def local_positions() -> list[tuple[float, float, float]]:
        link.next_due.clear()  # every stream due again at this same instant
        link.streams_due = 0.0
        sent.clear()
        server.speak(link)
        messages = [reader.decode(bytearray(frame)) for frame in sent]
        return [(m.x, m.y, m.z) for m in messages if m.get_type() == "LOCAL_POSITION_NED"]

    for position in ((1.0, 2.0, -3.0), (-4.0, 5.0, -6.0)):
        ap.dyn.pos = position
        assert local_positions() == [position]
        message = server.telemetry.build("LOCAL_POSITION_NED")
        assert (message.x, message.y, message.z) == position
        server.telemetry.read_state()
        ap.dyn.pos = (7.0, 7.0, -7.0)
        assert server.telemetry.build("ALTITUDE").altitude_local == 7.0
    server.close()
