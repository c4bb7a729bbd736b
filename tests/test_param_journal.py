"""Parameters the harness changes are journaled before the change and restored always, even after kill -9."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bridges.mavsdk_vehicle import connect
from hil.param_journal import JournalError, ParamJournal
from records.record import read_events
from targets.builtin import SimProcessOptions, builtin_vehicle

from .conftest import BUILTIN_SPEED

# A flight controller set up for a field trial: its own geofence on (the checklist requires it on hardware).
FENCED = {"GF_MAX_HOR_DIST": 200.0, "GF_MAX_VER_DIST": 60.0}

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "missions" / "examples" / "demo_square.yaml"


def test_journal_keeps_the_first_original_and_survives_reopening(tmp_path):
    journal = ParamJournal(tmp_path / "j.json")
    journal.record("MPC_XY_CRUISE", 5.0)
    journal.record("MPC_XY_CRUISE", 7.0)  # changed twice: the original is still the first value
    journal.record("COM_OBL_RC_ACT", 0)
    assert ParamJournal(tmp_path / "j.json").pending() == {"MPC_XY_CRUISE": 5.0, "COM_OBL_RC_ACT": 0.0}
    journal.forget("MPC_XY_CRUISE")
    journal.forget("COM_OBL_RC_ACT")
    assert not (tmp_path / "j.json").exists(), "an empty journal leaves no file behind"


@pytest.mark.parametrize("content, expected", [
    (b"{ half a journal", "unreadable"),
    (b"\xff\xfe not UTF-8", "unreadable"),
    (b"[1, 2, 3]", "expected a JSON object"),
    (b'{"originals": [1, 2]}', "expected a JSON object"),
    (b'{"originals": {"MPC_XY_CRUISE": "five"}}', "originals.MPC_XY_CRUISE: expected a finite number"),
    (b'{"originals": {"MPC_XY_CRUISE": NaN}}', "originals.MPC_XY_CRUISE: expected a finite number"),
    (b'{"originals": {"MPC_XY_CRUISE": [5]}}', "originals.MPC_XY_CRUISE: expected a finite number"),
    (b'{"originals": {"mpc; reboot": 1}}', "expected a PX4 parameter name"),
], ids=["truncated", "binary", "list", "originals-list", "text-value", "nan", "list-value", "bad-name"])
def test_an_untrustworthy_journal_is_an_error_naming_the_file_and_the_entry(tmp_path, content, expected):
    path = tmp_path / "j.json"
    path.write_bytes(content)
    with pytest.raises(JournalError, match=expected) as error:
        ParamJournal(path)
    assert str(path) in str(error.value) and "restore them by hand" in str(error.value)


@pytest.mark.parametrize("broken", ["unknown-name", "corrupt"])
async def test_a_journal_the_harness_cannot_use_stops_hil_fly_naming_the_journal(tmp_path, monkeypatch, broken):
    monkeypatch.setenv("HIL_STATE_DIR", str(tmp_path))
    async with builtin_vehicle(SimProcessOptions(speed=BUILTIN_SPEED, params=FENCED)) as sim:
        vehicle = await connect(sim.url, timeout=10.0, speed_factor=BUILTIN_SPEED)
        try:
            journal = ParamJournal.for_vehicle(await vehicle.identity())
            if broken == "corrupt":
                journal.path.parent.mkdir(parents=True, exist_ok=True)
                journal.path.write_bytes(b'{"originals": {"NOT_A_PX4_PARAM": "one"}}')
            else:
                journal.record("NOT_A_PX4_PARAM", 1.0)
            result = subprocess.run([sys.executable, "-m", "hil", "fly", str(DEMO), "--target", sim.url, "--arm",
                                     "--record-dir", str(tmp_path / "record")], cwd=ROOT, capture_output=True,
                                    text=True, timeout=120, env={**os.environ, "HIL_STATE_DIR": str(tmp_path)})
        finally:
            await vehicle.close()
    assert result.returncode == (2 if broken == "corrupt" else 3)  # unreadable: a bad file; unusable: refused
    out = result.stdout + result.stderr
    assert "Traceback" not in out and str(journal.path) in out and "NOT_A_PX4_PARAM" in out, out


def test_for_vehicle_names_files_safely(tmp_path, monkeypatch):
    monkeypatch.setenv("HIL_STATE_DIR", str(tmp_path))
    journal = ParamJournal.for_vehicle("serial:///dev/ttyACM0:921600")
    assert journal.path.parent == tmp_path / "param-journals"
    assert "/" not in journal.path.name and journal.path.name.endswith(".json")


CRASHING_HARNESS = textwrap.dedent("""
    import asyncio, os, signal, sys
    sys.path.insert(0, {root!r})
    from bridges.mavsdk_vehicle import connect
    from hil.param_journal import JournalError, ParamJournal

    async def main():
        vehicle = await connect({url!r}, timeout=10.0)
        await vehicle.wait_armable(10.0)
        vehicle.journal = ParamJournal.for_vehicle(await vehicle.identity())
        async with vehicle.params_changed({{"MPC_XY_CRUISE": 9.0, "COM_OBL_RC_ACT": 4}}):
            print("changed", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)  # the harness dies inside the block: no finally runs
    asyncio.run(main())
""")


async def test_params_left_changed_by_a_killed_harness_are_restored_at_the_next_start(tmp_path, monkeypatch):
    monkeypatch.setenv("HIL_STATE_DIR", str(tmp_path / "state"))
    async with builtin_vehicle(SimProcessOptions(speed=BUILTIN_SPEED, params=FENCED)) as sim:
        script = CRASHING_HARNESS.format(root=str(ROOT), url=sim.url)
        crashed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                                 env={**os.environ, "HIL_STATE_DIR": str(tmp_path / "state")})
        assert crashed.returncode == -9 and "changed" in crashed.stdout

        journals = list((tmp_path / "state" / "param-journals").glob("*.json"))
        assert len(journals) == 1
        assert json.loads(journals[0].read_text())["originals"] == {"MPC_XY_CRUISE": 5.0, "COM_OBL_RC_ACT": 0.0}
        probe = await connect(sim.url, timeout=10.0, speed_factor=BUILTIN_SPEED)
        try:
            assert await probe.get_param("MPC_XY_CRUISE") == pytest.approx(9.0), "the crash left it changed"
        finally:
            await probe.close()

        # The next run against the same flight controller puts everything back before it flies.
        record = tmp_path / "next"
        result = subprocess.run([sys.executable, "-m", "hil", "fly", str(DEMO), "--target", sim.url, "--arm",
                                 "--record-dir", str(record)], cwd=ROOT, capture_output=True, text=True, timeout=120,
                                env={**os.environ, "HIL_STATE_DIR": str(tmp_path / "state")})
        assert result.returncode == 0, result.stdout + result.stderr
        restored = [e for e in read_events(record) if e["kind"] == "params_restored_after_crash"]
        assert restored and restored[0]["params"] == {"MPC_XY_CRUISE": 5.0, "COM_OBL_RC_ACT": 0.0}
        assert not journals[0].exists(), "nothing left to restore"
        probe = await connect(sim.url, timeout=10.0, speed_factor=BUILTIN_SPEED)
        try:
            assert await probe.get_param("MPC_XY_CRUISE") == pytest.approx(5.0)
            assert await probe.get_param("COM_OBL_RC_ACT") == 0
            assert await probe.get_param("MIS_TAKEOFF_ALT") == pytest.approx(2.5), "the flight's own change was undone"
        finally:
            await probe.close()
