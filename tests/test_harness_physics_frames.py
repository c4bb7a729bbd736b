"""The lockstep loop's own MAVLink, without PX4: the frames the harness sends PX4 are pymavlink's `msg.pack`
byte for byte, PX4's HIL_ACTUATOR_CONTROLS read straight from its frame is what pymavlink parses, and
whatever is not such a frame (another message, a bad checksum, a frame split across reads) still reaches
pymavlink's parser."""

from __future__ import annotations

import math
import random
import socket
import threading
import time

import pytest
from pymavlink.dialects.v20 import common as mavlink

from px4.external_physics.hil_messages import (
    SIMULATOR_COMPID,
    SIMULATOR_SYSID,
    ActuatorControls,
    HilEncoder,
    take_actuator_controls,
)
from px4.external_physics.links import SimulatorLinkError, SocketLink
from px4.external_physics.lockstep import PART_SAMPLE_EVERY, SimulatorLoop
from px4.external_physics.simulator import HarnessSimulator, SimulatorOptions
from px4.sim import mavlink_encode


def _f32(rng: random.Random) -> float:
    return rng.choice([0.0, -0.0, math.nan, math.inf, 1e-30, rng.uniform(-2e4, 2e4), rng.gauss(0.0, 1.0)])


def _same(a: ActuatorControls, b: ActuatorControls) -> bool:
    """Equal, NaN outputs (channels PX4 has not set) included."""
    return (a.time_usec, a.armed, a.lockstep) == (b.time_usec, b.armed, b.lockstep) and len(a.controls) == 16 and \
        all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a.controls, b.controls, strict=True))


@pytest.mark.parametrize("checksum", ["fastcrc", "pymavlink's own"])
def test_frames_to_px4_are_pymavlinks_bytes_for_the_same_values(checksum, monkeypatch):
    if checksum != "fastcrc":
        monkeypatch.setattr(mavlink_encode, "_MCRF4XX", None)  # as where fastcrc is not installed
    rng = random.Random(34)
    encoder = HilEncoder()
    mav = mavlink.MAVLink(None, srcSystem=SIMULATOR_SYSID, srcComponent=SIMULATOR_COMPID)
    for i in range(300):
        t = rng.choice([0, 4000, 2**40 + i, 2**64 - 1])
        v3 = [[_f32(rng) for _ in range(3)] for _ in range(4)]
        scalars = [_f32(rng) for _ in range(4)]
        # All-zero trailing fields (fields_updated, id) exercise MAVLink 2's payload truncation.
        fields, sensor_id = rng.choice([(0, 0), (0x1FFF, 0), (7, 2)])
        assert encoder.hil_sensor(t, *v3[:3], *scalars, fields, sensor_id) == mavlink.MAVLink_hil_sensor_message(
            t, *v3[0], *v3[1], *v3[2], *scalars, fields, sensor_id).pack(mav)

        lat, lon, alt = rng.uniform(-90, 90), rng.uniform(-180, 180), rng.uniform(-400, 9000)
        vel = [rng.choice([0.0, 0.1, rng.uniform(-400, 400)]) for _ in range(3)]
        eph, epv, sats, gps_id = rng.uniform(0, 900), rng.uniform(0, 900), rng.randrange(256), rng.choice([0, 1])
        frame = encoder.hil_gps(t, lat, lon, alt, vel, eph, epv, sats, gps_id=gps_id)
        fields_of = mavlink.MAVLink(None).parse_buffer(frame)[0]
        expected = mavlink.MAVLink_hil_gps_message(
            t, 3, fields_of.lat, fields_of.lon, fields_of.alt, fields_of.eph, fields_of.epv, fields_of.vel,
            fields_of.vn, fields_of.ve, fields_of.vd, fields_of.cog, sats, gps_id, 0).pack(mav)
        assert frame == expected and fields_of.lat == round(lat * 1e7) and fields_of.vn == min(32767, max(-32768, round(vel[0] * 100)))

        q = [_f32(rng) for _ in range(4)]
        accel = [rng.uniform(-200, 200) for _ in range(3)]
        frame = encoder.hil_state_quaternion(t, q, v3[3], lat, lon, alt, vel, accel)
        got = mavlink.MAVLink(None).parse_buffer(frame)[0]
        assert frame == mavlink.MAVLink_hil_state_quaternion_message(
            t, q, *v3[3], got.lat, got.lon, got.alt, got.vx, got.vy, got.vz, got.ind_airspeed, got.true_airspeed,
            got.xacc, got.yacc, got.zacc).pack(mav)


def _controls_frame(rng: random.Random, mav: mavlink.MAVLink) -> tuple[bytes, ActuatorControls]:
    """A HIL_ACTUATOR_CONTROLS frame as PX4 would send it, and what pymavlink parses from it."""
    controls = [rng.choice([0.0, math.nan, rng.random()]) for _ in range(16)]
    if rng.random() < 0.2:
        controls = [0.0] * 16  # disarmed: all zeros, the payload truncated down to its time
    msg = mavlink.MAVLink_hil_actuator_controls_message(rng.choice([0, 4000, 2**50]), controls,
                                                        rng.choice([0, 128, 129, 216]), rng.choice([0, 1]))
    frame = msg.pack(mav)
    mav.seq = (mav.seq + 1) % 256
    parsed = mavlink.MAVLink(None).parse_buffer(frame)
    assert len(parsed) == 1
    return frame, ActuatorControls.from_message(parsed[0])


def test_px4s_actuator_controls_read_from_the_frame_are_what_pymavlink_parses():
    rng = random.Random(93)
    mav = mavlink.MAVLink(None, srcSystem=1, srcComponent=1)
    for _ in range(500):
        frame, expected = _controls_frame(rng, mav)
        controls, rest = take_actuator_controls(frame + b"\xfd\x09")
        assert controls is not None and _same(controls, expected) and rest == b"\xfd\x09"
    frame, _ = _controls_frame(rng, mav)
    bad = frame[:-1] + bytes((frame[-1] ^ 1,))
    heartbeat = mavlink.MAVLink_heartbeat_message(1, 12, 0, 0, 0, 3).pack(mav)
    for other in (bad, frame[:-1], frame[:5], heartbeat, b"", b"\xfd"):
        assert take_actuator_controls(other) == (None, other)


class _Silent:
    name = "nowhere"

    def write(self, data: bytes) -> None:
        pass


def test_the_loop_applies_each_answer_however_it_arrives_and_hands_on_everything_else():
    rng = random.Random(7)
    mav = mavlink.MAVLink(None, srcSystem=1, srcComponent=1)
    others: list = []
    sim = HarnessSimulator(SimulatorOptions())
    loop = SimulatorLoop(sim, _Silent(), None, on_message=others.append)
    applied: list[ActuatorControls] = []
    sim.apply = applied.append
    heartbeat = mavlink.MAVLink_heartbeat_message(1, 12, 0, 0, 0, 3).pack(mav)
    frames = [_controls_frame(rng, mav) for _ in range(6)]
    bad = frames[0][0][:-1] + bytes((frames[0][0][-1] ^ 1,))
    # Two answers in one read; a heartbeat before an answer; an answer split across three reads (its first
    # bytes wait in pymavlink's parser); a frame with a bad checksum, which pymavlink reports as bad data.
    stream = [frames[0][0] + frames[1][0], heartbeat + frames[2][0], frames[3][0][:3], frames[3][0][3:20],
              frames[3][0][20:] + frames[4][0], bad, frames[5][0]]
    for data in stream:
        loop._receive(data)
    assert len(applied) == 6 and all(_same(a, e) for a, (_, e) in zip(applied, frames, strict=True))
    assert [m.get_type() for m in others] == ["HEARTBEAT", "BAD_DATA"]
    assert loop.stats.replies == 6 and loop._last_reply_us == frames[5][1].time_usec


def test_the_tcp_link_returns_what_arrives_nothing_on_timeout_and_names_a_closed_connection():
    server = socket.create_server(("127.0.0.1", 0))
    peer = socket.create_connection(server.getsockname())
    link = SocketLink(server.accept()[0], "TCP test")
    server.close()
    try:
        assert link.read(0.0) == b"" and link.read(0.001) == b"" and link.read(0.06) == b""
        peer.sendall(b"now")
        assert link.read(0.5) == b"now"
        late = threading.Timer(0.05, peer.sendall, (b"later",))
        late.start()
        assert link.read(5.0) == b"later"  # a long wait ends when the bytes come
        late.join()
        peer.sendall(b"waiting")
        got = b""
        while len(got) < 7:
            got += link.read(0.0)  # only what is there
        assert got == b"waiting"
        peer.close()
        with pytest.raises(SimulatorLinkError, match="TCP test: PX4 closed the simulator connection"):
            link.read(1.0)
    finally:
        link.close()


def test_the_loop_counts_its_own_cpu_time_as_the_harness_share_and_the_wait_for_px4_as_px4s():
    """A scripted PX4 over real TCP that takes 2 ms of wall time (asleep, no CPU) before each answer: the
    loop's share is its own thread's CPU time (a loop that counted its wait for the answer would be near
    100 %), its parts add up to the wall time per frame, and the whole process's CPU covers the thread's."""
    server = socket.create_server(("127.0.0.1", 0))
    px4 = socket.create_connection(server.getsockname())
    link = SocketLink(server.accept()[0], "TCP test")
    server.close()
    answered = threading.Event()

    def scripted_px4() -> None:
        parser = mavlink.MAVLink(None)
        mav = mavlink.MAVLink(None, srcSystem=1, srcComponent=1)
        while data := px4.recv(65536):
            for msg in parser.parse_buffer(data) or ():
                if msg.get_msgId() == mavlink.MAVLINK_MSG_ID_HIL_SENSOR and msg.id == 0:
                    time.sleep(0.002)
                    px4.sendall(mavlink.MAVLink_hil_actuator_controls_message(
                        msg.time_usec, [0.0] * 16, 0, 1).pack(mav))
                    answered.set()

    peer = threading.Thread(target=scripted_px4, daemon=True)
    peer.start()
    loop = SimulatorLoop(HarnessSimulator(SimulatorOptions(record_rate_hz=250.0)), link, None).start()
    try:
        assert answered.wait(30.0)
        deadline = time.monotonic() + 120.0  # a bound on a stuck loop only: the test counts frames
        while loop.stats.cpu_frames < 10 * PART_SAMPLE_EVERY and loop.error is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        loop.stop()
        link.close()  # the scripted PX4 reads the connection's end and returns: its socket is closed after that
        peer.join(10.0)
        px4.close()
    stats = loop.stats
    assert loop.error is None and stats.cpu_frames >= 10 * PART_SAMPLE_EVERY and stats.missed_replies == 0
    parts = stats.step_parts_us()
    wall_us = (stats.last_wall - stats.first_reply_wall) / (stats.frames - stats.first_reply_frame) * 1e6
    assert sum(parts.values()) == pytest.approx(wall_us, rel=1e-9)
    assert min(parts["build"], parts["socket"], parts["parse"]) > 0.0 and parts["PX4 and waits"] >= 1900.0
    assert 0.0 < stats.harness_share < 0.5 and stats.process_s >= stats.cpu_s
