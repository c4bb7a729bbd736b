"""`hil fly` as a person at the field uses it: a terminal, a live status line, the abort key."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from records.record import read_events, read_manifest
from targets.builtin import SimProcessOptions, builtin_vehicle

from .conftest import BUILTIN_SPEED

ROOT = Path(__file__).resolve().parents[1]
MISSION = ROOT / "missions" / "examples" / "offboard_square.yaml"
FENCED = {"GF_MAX_HOR_DIST": 200.0, "GF_MAX_VER_DIST": 60.0}


def read_until(fd: int, needle: bytes, timeout: float, seen: bytearray) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:
                return needle in seen
            if needle in seen:
                return True
    return False


async def test_abort_key_lands_the_vehicle_and_the_status_line_shows_the_flight(tmp_path):
    async with builtin_vehicle(SimProcessOptions(speed=BUILTIN_SPEED, params=FENCED)) as sim:
        controller, terminal = pty.openpty()  # hil fly runs in a real terminal, as at the field
        record = tmp_path / "r"
        harness = subprocess.Popen([sys.executable, "-m", "hil", "fly", str(MISSION), "--target", sim.url, "--arm",
                                    "--record-dir", str(record)], cwd=ROOT, stdin=terminal, stdout=terminal,
                                   stderr=terminal, close_fds=True)
        os.close(terminal)
        seen = bytearray()
        try:
            assert read_until(controller, b"OFFBOARD", 60.0, seen), seen.decode(errors="replace")[-2000:]
            os.write(controller, b"a")  # the abort key
            harness.wait(timeout=90)
            read_until(controller, b"record", 2.0, seen)
        finally:
            if harness.poll() is None:
                harness.kill()
            os.close(controller)
    out = seen.decode(errors="replace")
    assert "pre-flight checklist" in out and "[a: abort]" in out and "alt " in out
    # The live line starts once armed (after the whole checklist) and says where the flight is.
    assert out.index("pre-flight checks passed") < out.index("[a: abort]")
    assert "waypoint 0/4" in out and "/90 s" in out
    assert harness.returncode == 130 and "aborted: stopped (abort key)" in out
    assert read_manifest(record)["outcome"] == "aborted"
    kinds = [e["kind"] for e in read_events(record)]
    assert "aborted" in kinds and "landed" in kinds
    # A stopped run ends once the vehicle is safe: the flight controller keeps its ULog, and the record says so.
    [unavailable] = [e for e in read_events(record) if e["kind"] == "ulog_unavailable"]
    assert unavailable["reason"] == "not downloaded after a stop request" and not (record / "ulog").exists()
    assert "the flight controller keeps its ULog" in out
