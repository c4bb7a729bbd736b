"""The pieces of the link proxy without sockets: frame splitting, the impairment model, link profiles."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pymavlink.dialects.v10 import common as mavlink_v1
from pymavlink.dialects.v20 import all as every_dialect
from pymavlink.dialects.v20 import common as mavlink
from scipy import stats

from bridges.impairment import DirectionModel, ImpairedChannel, direction_seed
from bridges.mavlink_frames import FrameSplitter, whole_frame
from config.errors import ConfigError
from profiles.link import (LINKS_DIR, DirectionSpec, FrameImpairment, Latency, Loss, load_link_profile,
                           parse_link_profile)


def _frames(count: int, seed: int = 0, v1: bool = False, signed: bool = False) -> list[bytes]:
    """Real MAVLink frames of a few kinds and sizes, as pymavlink encodes them."""
    dialect = mavlink_v1 if v1 else mavlink
    mav = dialect.MAVLink(None, srcSystem=1, srcComponent=1)
    if signed:
        mav.signing.secret_key = bytes(32)
        mav.signing.sign_outgoing = True
    rng = random.Random(seed)
    out = []
    for i in range(count):
        kind = i % 3
        if kind == 0:
            msg = dialect.MAVLink_heartbeat_message(2, 12, 0, 0, 3, 3)
        elif kind == 1:
            msg = dialect.MAVLink_attitude_message(i, rng.random(), rng.random(), rng.random(), 0.0, 0.0, 0.0)
        else:
            msg = dialect.MAVLink_statustext_message(6, b"x" * rng.randrange(1, 50), *(() if v1 else (0, 0)))
        out.append(msg.pack(mav))
    return out


# ---------------------------------------------------------------------- framing
@pytest.mark.parametrize("v1,signed", [(False, False), (True, False), (False, True)])
def test_splitter_recovers_frames_fed_one_byte_at_a_time(v1, signed):
    frames = _frames(30, v1=v1, signed=signed)
    splitter = FrameSplitter()
    out = []
    for byte in b"".join(frames):
        out += splitter.feed(bytes((byte,)))
    out += splitter.flush()
    assert [f.data for f in out] == frames
    assert all(f.crc_ok for f in out)
    assert out[1].msgid == mavlink.MAVLINK_MSG_ID_ATTITUDE and out[1].version == (1 if v1 else 2)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 29), st.binary(min_size=1, max_size=40)), max_size=25),
       st.integers(1, 64))
def test_splitter_conserves_bytes_and_finds_every_frame_among_garbage(pieces, chunk):
    frames = _frames(30)
    stream = b"".join(frames[p] if isinstance(p, int) else p for p in pieces)
    splitter = FrameSplitter()
    out = []
    for i in range(0, len(stream), chunk):
        out += splitter.feed(stream[i:i + chunk])
    out += splitter.flush()
    assert b"".join(f.data for f in out) == stream, "every byte comes out exactly once, in order"
    # Garbage without a start byte cannot be mistaken for a frame header: every frame is found.
    if not any(isinstance(p, bytes) and (0xFD in p or 0xFE in p) for p in pieces):
        assert [f.data for f in out if not f.malformed] == [frames[p] for p in pieces if isinstance(p, int)]


def test_splitter_marks_a_truncated_datagram_and_a_bad_checksum_malformed():
    good = _frames(2)
    bad_crc = bytearray(good[1])
    bad_crc[-1] ^= 0xFF
    splitter = FrameSplitter()
    out = splitter.feed(good[0][:-3]) + splitter.flush() + splitter.feed(bytes(bad_crc)) + splitter.flush()
    assert [f.malformed for f in out] == [True, True]
    assert splitter.stats.bad_crc >= 1 and splitter.stats.frames == 0


# ---------------------------------------------------------------------- the model
def _run(spec: DirectionSpec, n: int, seed: int = 1, rate_hz: float = 100.0, size: int = 40):
    model = DirectionModel(spec, seed)
    return [(i / rate_hz, model.decide(i / rate_hz, bytes(size), 30)) for i in range(n)]


def test_same_seed_same_fates_different_seed_different_fates():
    spec = DirectionSpec(FrameImpairment(Latency("normal", ms=20, std_ms=5), Loss(rate=0.1), duplicate=0.05,
                                         corrupt=0.05))
    a, b, c = _run(spec, 500, seed=7), _run(spec, 500, seed=7), _run(spec, 500, seed=8)
    assert repr(a) == repr(b)  # repr: NaN (no delay drawn for a dropped frame) is not == NaN
    assert repr(a) != repr(c)


def test_latency_distributions_match_their_configuration():
    n = 4000
    for latency, dist in [(Latency("uniform", min_ms=25, max_ms=50), stats.uniform(25, 25)),
                          (Latency("fixed", ms=40, jitter_ms=10), stats.uniform(30, 20)),
                          (Latency("normal", ms=40, std_ms=5), stats.norm(40, 5))]:
        drawn = [d.drawn_ms for _, d in _run(DirectionSpec(FrameImpairment(latency)), n)]
        assert stats.kstest(drawn, dist.cdf).pvalue > 0.001, latency
    trace = [d.drawn_ms for _, d in _run(DirectionSpec(FrameImpairment(Latency("trace", trace_ms=(5, 10, 20)))), 7)]
    assert trace == [5, 10, 20, 5, 10, 20, 5]


def test_bernoulli_and_gilbert_elliott_loss_rates():
    n = 20000
    lost = sum(d.fate == "dropped" for _, d in _run(DirectionSpec(FrameImpairment(loss=Loss(rate=0.05))), n))
    assert abs(lost / n - 0.05) < 4 * math.sqrt(0.05 * 0.95 / n)
    ge = Loss("gilbert_elliott", p_good_bad=0.02, p_bad_good=0.2, loss_good=0.0, loss_bad=0.8)
    fates = [d.fate == "dropped" for _, d in _run(DirectionSpec(FrameImpairment(loss=ge)), n)]
    assert abs(sum(fates) / n - ge.mean_rate) < 0.02
    # Bursty: a loss is followed by another far more often than the mean rate.
    after_loss = [b for a, b in zip(fates, fates[1:]) if a]
    assert sum(after_loss) / len(after_loss) > 3 * ge.mean_rate


def test_bandwidth_cap_serializes_at_the_baud_rate_and_drops_when_the_queue_is_full():
    spec = DirectionSpec(bandwidth_bps=57600, bits_per_byte=10, queue_limit_ms=100, preserve_order=True)
    model = DirectionModel(spec, 0)
    burst = [model.decide(0.0, bytes(72), 0) for _ in range(12)]  # 12.5 ms each on the wire
    released = [d for d in burst if d.releases]
    assert [round(d.planned_ms, 3) for d in released[:3]] == [12.5, 25.0, 37.5]
    assert burst[-1].reason == "queue" and len(released) == 9


def test_outage_reorder_duplicate_corrupt():
    spec = DirectionSpec(FrameImpairment(Latency("fixed", ms=10), reorder=0.2, reorder_ms=50, duplicate=0.1,
                                         corrupt=0.1), outages=((1.0, 2.0),))
    decisions = _run(spec, 300)
    assert all(d.reason == "outage" for t, d in decisions if 1.0 <= t < 2.0)
    assert not any(d.reason == "outage" for t, d in decisions if not 1.0 <= t < 2.0)
    late = [d for _, d in decisions if d.releases and d.planned_ms > 55]
    assert 20 < len(late) < 70
    assert any(len(d.releases) == 2 for _, d in decisions)
    corrupted = [d for _, d in decisions if d.fate == "corrupted"]
    assert corrupted and all(d.releases[0][1] != bytes(40) for d in corrupted)


def test_impaired_channel_in_simulated_time_matches_the_model():
    spec = DirectionSpec(FrameImpairment(Latency("uniform", min_ms=25, max_ms=50), Loss(rate=0.1)))
    channel = ImpairedChannel(spec, direction_seed(3, "to_vehicle"))
    reference = DirectionModel(spec, direction_seed(3, "to_vehicle"))
    delivered = []
    for step in range(2000):  # 2 ms steps of simulated time
        t = step * 0.002
        if step % 10 == 0:
            payload = step.to_bytes(4, "little")
            assert repr(channel.send(t, payload, 84)) == repr(reference.decide(t, payload, 84))
        delivered += [(t, int.from_bytes(p, "little") * 0.002) for p in channel.deliver(t)]
    delays = [t - sent for t, sent in delivered]
    assert all(0.025 <= d <= 0.052 for d in delays)
    assert 160 < len(delivered) < 195


# ---------------------------------------------------------------------- profiles
def test_every_bundled_link_profile_loads():
    names = sorted(p.stem for p in LINKS_DIR.glob("*.yaml"))
    assert {"wifi", "telemetry_radio_57600", "serial_921600", "flightbench_25_50ms"} <= set(names)
    radio = load_link_profile("telemetry_radio_57600")
    assert radio.to_vehicle.bandwidth_bps == 57600 and radio.to_onboard.preserve_order
    fb = load_link_profile(LINKS_DIR / "flightbench_25_50ms.yaml")
    assert fb.to_onboard.frames.latency.mean_ms == 37.5


def test_a_bad_profile_names_file_field_and_expectation(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("both:\n  latency: {kind: uniform, min_ms: 50, max_ms: 25}\n  loss: {rate: 1.5}\n"
                    "  corrupt: 0.1\n  corrupt_bytes: 1000000000\n"
                    "to_vehicle:\n  mesages: {}\n  messages: {NOT_A_MESSAGE: {loss: {rate: 0.1}}}\n")
    with pytest.raises(ConfigError) as err:
        load_link_profile(path)
    text = str(err.value)
    assert f"{path}: both.latency.max_ms: expected a number >= min_ms" in text
    assert f"{path}: both.loss.rate: expected a number in [0, 1], got 1.5" in text
    assert f"{path}: both.corrupt_bytes: expected an integer" in text and "280" in text  # a frame's most bytes
    assert "to_vehicle.mesages" in text and "did you mean 'messages'" in text
    assert "to_vehicle.messages.NOT_A_MESSAGE: expected a MAVLink message name or id" in text


def test_per_message_rules_inherit_and_override_the_direction():
    spec = parse_link_profile({"both": {"latency": {"kind": "fixed", "ms": 10}},
                               "to_vehicle": {"messages": {"SET_POSITION_TARGET_LOCAL_NED": {"loss": {"rate": 0.5}}}}})
    rule = spec.to_vehicle.by_message[mavlink.MAVLINK_MSG_ID_SET_POSITION_TARGET_LOCAL_NED]
    assert rule.latency.ms == 10 and rule.loss.rate == 0.5
    assert spec.to_onboard.by_message == {}


def test_a_whole_frame_says_whether_its_checksum_holds_where_pymavlink_knows_the_message():
    """What a MAVSDK tap logs: line noise inside a forwarded frame is found when the message is known."""
    good = _frames(1)[0]
    noisy = good[:12] + bytes((good[12] ^ 0x55,)) + good[13:]
    unknown = bytearray(good)
    undefined = next(i for i in range(2**23, 2**24) if i not in every_dialect.mavlink_map)
    unknown[7:10] = undefined.to_bytes(3, "little")  # a message id no dialect pymavlink has defines
    assert whole_frame(good).crc_ok is True
    assert whole_frame(noisy).crc_ok is False
    assert whole_frame(bytes(unknown)).crc_ok is None
