"""MAVLink over a serial line: the vehicle on one end of a real pseudo-terminal pair, MAVSDK on the other."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter

from pymavlink import mavutil

from bridges.mavsdk_vehicle import connect
from bridges.ptypair import PtyPair
from hil.recording import TLOG_NAME, record_tlog
from records.record import TrialRecorder, read_events
from targets.builtin import SimProcessOptions, builtin_vehicle

from .conftest import SPEED


async def test_mavsdk_flies_the_vehicle_over_a_pty_serial_pair(tmp_path):
    with PtyPair() as cable:
        options = SimProcessOptions(speed=SPEED, extra_links=[f"serial://{cable.a}:921600"])
        async with builtin_vehicle(options):
            vehicle = await connect(f"serial://{cable.b}:921600", timeout=10.0, speed_factor=SPEED)
            try:
                # A hardware flight's telemetry log comes off a serial line: MAVSDK forwards it as from UDP.
                with TrialRecorder(tmp_path / "trial", config={}, target="serial") as recorder:
                    tlog = asyncio.create_task(record_tlog(vehicle, recorder))
                    await vehicle.wait_armable(timeout=10.0)
                    await vehicle.arm()
                    await vehicle.takeoff(2.5)
                    assert abs(vehicle.state.altitude - 2.5) < 0.8
                    await vehicle.land()
                    await vehicle.wait_until(lambda s: not s.armed, 40.0, "landing over serial")
                    tlog.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await tlog
                    recorder.finish("done")
            finally:
                await vehicle.close()
        assert cable.bytes_copied > 10_000, "the flight's MAVLink traffic went through the pty pair"
    log = mavutil.mavlink_connection(str(tmp_path / "trial" / TLOG_NAME))
    counts = Counter()
    while (message := log.recv_match()) is not None:
        counts[message.get_type()] += 1
    [closed] = [e for e in read_events(tmp_path / "trial") if e["kind"] == "tlog_closed"]
    assert closed["frames"] == sum(counts.values()) > 100 and "BAD_DATA" not in counts
    assert counts["HEARTBEAT"] == closed["heartbeats"] >= 3 and counts["EXTENDED_SYS_STATE"] > 0
