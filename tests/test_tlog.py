"""Every trial record holds telemetry.tlog, the MAVLink telemetry log QGroundControl and MAVProxy write:
on lockstep, on the built-in vehicle over MAVLink and on PX4 SITL (check_px4_tlog), it opens with pymavlink, holds exactly the
HEARTBEATs the record says the harness received, spans the flight in order, carries the positions of the
telemetry table, and a log cut short by a crash still reads up to the cut. The built-in vehicle's own ULog
is kept beside it, on lockstep as on the sim target."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
import yaml
from pymavlink import mavutil
from pyulog import ULog

from bridges.lockstep_vehicle import LockstepVehicle
from hil.recording import TLOG_NAME, record_telemetry
from profiles.library import load_vehicle_profile
from px4.sim.autopilot import Autopilot
from records.record import TrialRecorder, read_events, read_manifest, read_table
from reports.figures import trial_figures

ROOT = Path(__file__).resolve().parents[1]
# A short hop flown by the autopilot: take off to 3 m, 8 m north, land (a PX4 SITL trial stays short too).
HOP = {"name": "tlog-hop", "type": "multi_waypoint", "mode": "mission", "start": {"north": 0, "east": 0, "alt": 3},
       "speed_cap": 3.0, "success_radius": 1.0, "time_budget": 60, "land": True,
       "waypoints": [{"north": 0, "east": 0, "alt": 3}, {"north": 8, "east": 0, "alt": 3}]}


def hil(*args: str, timeout: float = 300.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hil", *args], check=False, cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def read_tlog(path: Path) -> list:
    """Every message pymavlink reads from a telemetry log, in order (each with its `_timestamp`, epoch s)."""
    log = mavutil.mavlink_connection(str(path))
    messages = []
    while (message := log.recv_match()) is not None:
        messages.append(message)
    log.close()
    return messages


def record_ends(data: bytes) -> list[int]:
    """Where each record of a telemetry log ends: an 8-byte stamp, then a MAVLink 2 frame of its stated length."""
    ends, at = [], 0
    while at + 8 < len(data):
        frame = at + 8
        assert data[frame] == 0xFD, f"record at byte {at} is not a MAVLink 2 frame"
        at = frame + 12 + data[frame + 1] + (13 if data[frame + 2] & 1 else 0)
        if at > len(data):
            break
        ends.append(at)
    return ends


def fly(tmp_path: Path, target: str) -> Path:
    mission = tmp_path / "hop.yaml"
    mission.write_text(yaml.safe_dump(HOP, sort_keys=False))
    record = tmp_path / "trial"
    result = hil("fly", str(mission), "--target", target, "--speed", "4", "--record-dir", str(record))
    assert result.returncode == 0, result.stdout + result.stderr
    return record


def check_tlog(record: Path, *, simulated_clock: bool) -> list:
    """What every target's log must be; returns its messages."""
    messages = read_tlog(record / TLOG_NAME)
    closed = [e for e in read_events(record) if e["kind"] == "tlog_closed"]
    assert len(closed) == 1 and closed[0]["frames"] > 100
    counts = Counter(m.get_type() for m in messages)
    # Every frame the harness received is in the file, whole (pymavlink checks the CRC of each message its
    # dialect knows; a cut or corrupt frame would read as BAD_DATA or shift every later one) ...
    assert "BAD_DATA" not in counts and len(messages) == closed[0]["frames"]
    # ... the HEARTBEATs among them too, and they came at the vehicle's 1 Hz (at least) for the whole flight.
    assert counts["HEARTBEAT"] == closed[0]["heartbeats"]
    flown_s = trial_figures(record)["duration_s"]
    assert counts["HEARTBEAT"] >= 0.9 * flown_s
    # From the vehicle, one system (PX4 SITL instance N is system N + 1; pymavlink leaves the source of a
    # message its dialect lacks, such as LINK_NODE_STATUS, 0).
    assert len({m.get_srcSystem() for m in messages if not m.get_type().startswith("UNKNOWN")}) == 1
    # Time stamps are in order and span the flight: the telemetry table's span (on lockstep its t_ns is
    # simulated time, as the log's stamps are; elsewhere both are the harness's clock).
    stamps = np.array([m._timestamp for m in messages])
    assert np.all(np.diff(stamps) >= 0)
    telemetry = read_table(record, "telemetry")
    table_span = (telemetry["t_ns"].iloc[-1] - telemetry["t_ns"].iloc[0]) / 1e9
    assert stamps[-1] - stamps[0] == pytest.approx(table_span, abs=0.5 if simulated_clock else 1.0)
    if not simulated_clock:
        started = datetime.fromisoformat(read_manifest(record)["started"]["wall_clock"]).timestamp()
        # Stamped on arrival, on the wall clock: the first frame came after the record began, and soon.
        assert 0.0 <= stamps[0] - started < 30.0
    # Its positions are the table's. On lockstep the log is the thinner (5 Hz): each LOCAL_POSITION_NED of the log,
    # in order, is a row of the table. Over MAVLink the log has every frame, and the table the positions the
    # harness took from them (a loaded machine skips some: 85 % of the log's were rows in one clean-clone run,
    # 99.4 % on a quiet one): each row, in order, is a position of the log.
    table = telemetry[["north", "east", "down"]].to_numpy()
    logged = np.array([(m.x, m.y, m.z) for m in messages if m.get_type() == "LOCAL_POSITION_NED"])
    assert len(logged) >= 2 * flown_s  # 5 Hz on lockstep, 30 Hz of vehicle time elsewhere
    needles, haystack, what = (logged, table, "logged positions are rows of the table") if simulated_clock else \
        (table, logged, "table rows are logged positions")
    row, matched = 0, 0
    for position in needles:
        close = np.flatnonzero(np.linalg.norm(haystack[row:] - position, axis=1) < 1e-3)  # float32 in the message
        if len(close):
            row += int(close[0])
            matched += 1
    assert matched >= 0.95 * len(needles), f"{matched} of {len(needles)} {what}, in order"
    assert max(np.hypot(x, y) for x, y, _ in logged) > 7.0  # the flight is in it, not just the ground
    return messages


def check_builtin_ulog(record: Path, method: str) -> None:
    """The built-in vehicle's own ULog of the flight is in the record, opens with pyulog in PX4's topic and
    field names (what Flight Review reads), and was aligned with the record's clock."""
    [log] = (record / "ulog").glob("*.ulg")
    ulog = ULog(str(log))
    position = ulog.get_dataset("vehicle_local_position").data
    assert 7.0 < position["x"].max() < 9.0 and position["z"].min() < -2.5  # the hop: 8 m north at 3 m
    assert ulog.initial_parameters["MIS_TAKEOFF_ALT"] > 0
    [kept] = [e for e in read_events(record) if e["kind"] == "ulog_kept"]
    assert kept["method"] == method and "alignment_error" not in kept
    if method == "given":
        assert kept["offset_ns"] == 0


@pytest.fixture(scope="module")
def lockstep_record(tmp_path_factory) -> Path:
    """One lockstep hop's record, read by the tests below (none of them writes to it)."""
    return fly(tmp_path_factory.mktemp("lockstep"), "lockstep")


def test_a_lockstep_trial_keeps_its_mavlink_telemetry_log(lockstep_record):
    record = lockstep_record
    messages = check_tlog(record, simulated_clock=True)
    counts = Counter(m.get_type() for m in messages)
    # What the vehicle says over MAVLink in sim mode, from the same encoders: its streams and its events.
    assert {"GLOBAL_POSITION_INT", "ATTITUDE", "SYS_STATUS", "GPS_RAW_INT", "HOME_POSITION", "EXTENDED_SYS_STATE",
            "MISSION_ITEM_REACHED", "STATUSTEXT"} <= set(counts)
    # The heartbeats a change of mode sends at once reached the log too: takeoff, mission, land...
    modes = [m.custom_mode for m in messages if m.get_type() == "HEARTBEAT"]
    assert len(set(modes)) >= 3
    check_builtin_ulog(record, method="given")  # the record's clock is the vehicle's: nothing to fit


def test_a_trial_on_the_builtin_vehicle_over_mavlink_keeps_what_mavsdk_received(tmp_path):
    record = fly(tmp_path, "sim")
    messages = check_tlog(record, simulated_clock=False)
    counts = Counter(m.get_type() for m in messages)
    # The stream the vehicle sends the harness, its fast streams at their rates; what MAVLink routing keeps
    # for the harness alone (its COMMAND_ACKs) is not forwarded, and MAVSDK's own HEARTBEATs are not in it.
    assert counts["ATTITUDE"] > 3 * counts["LOCAL_POSITION_NED"] and counts["COMMAND_ACK"] == 0
    assert {(m.get_srcSystem(), m.get_srcComponent()) for m in messages if m.get_type() == "HEARTBEAT"} == {(1, 1)}
    # The frames as they came off the wire: the vehicle's own sequence numbers, consecutive but for the
    # few frames addressed to the harness alone. Read from the frames, as pymavlink does not number a
    # message its dialect lacks.
    data = (record / TLOG_NAME).read_bytes()
    starts = [0] + record_ends(data)[:-1]
    sequence = [data[start + 8 + 4] for start in starts]
    steps = Counter((b - a) % 256 for a, b in zip(sequence, sequence[1:]))
    assert len(sequence) == len(messages) and steps[1] >= 0.99 * len(sequence) and steps[0] == 0
    check_builtin_ulog(record, method="altitude-fit")


def check_px4_tlog(record: Path) -> None:
    """A PX4 SITL trial's log: what check_tlog asks of every target, from PX4 itself (the PX4 plan flight of
    test_mission_model calls this on its record rather than flying once more)."""
    messages = check_tlog(record, simulated_clock=False)
    counts = Counter(m.get_type() for m in messages)
    assert {"HEARTBEAT", "ATTITUDE", "GLOBAL_POSITION_INT", "EXTENDED_SYS_STATE"} <= set(counts)
    assert any(m.get_type() == "HEARTBEAT" and m.autopilot == mavutil.mavlink.MAV_AUTOPILOT_PX4 for m in messages)


def test_a_log_cut_short_by_a_crash_reads_up_to_the_cut(lockstep_record, tmp_path):
    record = lockstep_record
    data = (record / TLOG_NAME).read_bytes()
    ends = record_ends(data)
    assert ends[-1] == len(data)  # a finished trial's log ends on a whole record
    cut_log = tmp_path / "cut.tlog"
    # Cut inside a frame, inside a time stamp, and right after a record.
    for cut in (ends[-40] + 20, ends[-300] + 3, ends[-700] + 8 + 5, ends[-1000]):
        cut_log.write_bytes(data[:cut])
        messages = read_tlog(cut_log)
        whole = sum(1 for end in ends if end <= cut)
        assert len(messages) == whole and "BAD_DATA" not in {m.get_type() for m in messages}, cut


async def test_the_log_reaches_the_disk_while_the_trial_runs(tmp_path):
    """A crash loses at most the last flush interval: read as a crash would leave it, the log on disk
    grows while the trial runs, and reads whole up to its last record."""
    with TrialRecorder(tmp_path / "trial", config={}, target="lockstep", flush_interval_s=0.05) as recorder:
        async with LockstepVehicle(Autopilot(load_vehicle_profile("default")), telemetry_hz=100.0) as vehicle:
            recording = asyncio.create_task(record_telemetry(vehicle, recorder))
            seen = []
            for _ in range(3):
                start = time.monotonic()
                while time.monotonic() - start < 0.15:  # three flush intervals of wall time
                    await vehicle.sleep(0.5)
                await recorder.written()  # the recorder writes on its own thread
                seen.append(read_tlog(recorder.record_dir / TLOG_NAME))
            recording.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await recording
        recorder.finish("done")
    assert 0 < len(seen[0]) < len(seen[1]) < len(seen[2])
    assert len(read_tlog(recorder.record_dir / TLOG_NAME)) == read_events(recorder.record_dir)[-2]["frames"]


def test_a_side_file_is_flushed_with_the_tables_and_closed_with_the_record(tmp_path):
    with TrialRecorder(tmp_path / "trial", config={}, target="t", flush_interval_s=0.1) as recorder:
        side = recorder.side_file("x.tlog")
        side.write(b"abc")
        recorder.flush_if_due()
        assert (tmp_path / "trial" / "x.tlog").read_bytes() == b""  # not due yet: still buffered
        time.sleep(0.12)
        recorder.flush_if_due()
        assert (tmp_path / "trial" / "x.tlog").read_bytes() == b"abc"
        side.write(b"def")
        with pytest.raises(FileExistsError):
            recorder.side_file("x.tlog")
        for bad in ("../x.tlog", "manifest.json", "events.jsonl", "x"):
            with pytest.raises(ValueError):
                recorder.side_file(bad)
        recorder.finish("done")
    assert side.closed and (tmp_path / "trial" / "x.tlog").read_bytes() == b"abcdef"
