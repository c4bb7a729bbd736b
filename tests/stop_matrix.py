"""The stop matrix shared by tests/test_stop.py (the built-in vehicle) and tests/test_stop_px4.py (PX4 SITL):
`hil fly` run as a process against a vehicle reached by its connection string (the hardware path, as a
Pixhawk on USB or over a radio), stopped by a signal at a phase or by kill -9, and the vehicle looked at
afterwards by an observer of its own (a MAVLink client that beats as an onboard controller, so it does not
keep the vehicle's ground-station link alive).

Two files so that pytest-xdist's `--dist loadfile` runs the PX4 cases beside the built-in ones.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pymavlink.dialects.v20 import common as mavlink

from px4.modes import FlightMode, decode_custom_mode
from px4.process import free_udp_port
from px4.sitl import SitlOptions, px4_sitl
from records.record import read_events, read_manifest
from targets.builtin import SimProcessOptions, builtin_vehicle

from .conftest import BUILTIN_SPEED, SPEED
from .mavlink_client import Client
from .px4_builds import MAIN_BUILD

ROOT = Path(__file__).resolve().parents[1]
MISSION = ROOT / "missions" / "examples" / "demo_square.yaml"
# A parameter the run sets for its flight (journaled on a flight controller) and must leave as it found it.
CRUISE = ("MPC_XY_CRUISE", 4.0)
FENCED = {"GF_MAX_HOR_DIST": 200.0, "GF_MAX_VER_DIST": 60.0}  # the checklist wants the vehicle's own fence on
# The record event each phase begins with (None: the record exists, the harness has not yet said "connected"),
# in the order a mission flight goes through them: uploaded and armed on the ground, started, then PX4's climb.
PHASES = {"connecting": None, "checklist": "connected", "arming": "preflight", "mission start": "armed",
          "takeoff": "mission_started", "mid-mission": "takeoff_complete", "landing": "landing"}
ORDER = list(PHASES)
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# Wall seconds of silence before the vehicle's own data-link-loss failsafe acts, at the vehicle's speed factor:
# long enough that a loaded CI machine's stall of the harness is not taken for its death.
SILENCE_WALL_S = 2.5


def phases_a_signal_may_land_in(phase: str) -> list[str]:
    """The phase aimed at, or the next when the harness had just moved on (a loaded machine's test process sees
    the event late); past a mission flight's mission start too, which is over in tens of ms."""
    at = ORDER.index(phase)
    return ORDER[at:at + (3 if ORDER[at + 1:at + 2] == ["mission start"] else 2)]


def cases(first: int) -> list[tuple[str, signal.Signals]]:
    """The (phase, signal) pairs a vehicle is stopped at: every pair with HIL_STOP_MATRIX=full; by default each
    phase once, the signals taking turns from SIGNALS[first], so that each hits two or three phases (and two
    vehicles started at different signals cover 14 of the 21 pairs between them)."""
    if os.environ.get("HIL_STOP_MATRIX") == "full":
        return list(itertools.product(PHASES, SIGNALS))
    return [(phase, SIGNALS[(first + i) % len(SIGNALS)]) for i, phase in enumerate(PHASES)]


def case_ids(prefix: str, pairs: list[tuple[str, signal.Signals]]) -> list[str]:
    return [f"{prefix}{phase.replace(' ', '-')}-{sig.name}" for phase, sig in pairs]


@contextlib.contextmanager
def observer(port: int):
    client = Client(f"udpin://127.0.0.1:{port}", beat_type=mavlink.MAV_TYPE_ONBOARD_CONTROLLER)
    try:
        yield client
    finally:
        client.close()


@contextlib.asynccontextmanager
async def builtin(observer_port: int, speed: float = BUILTIN_SPEED):
    async with builtin_vehicle(SimProcessOptions(speed=speed, params=FENCED,
                                                 extra_links=[f"udpout://127.0.0.1:{observer_port}"])) as sim:
        yield sim.url, speed


@contextlib.asynccontextmanager
async def px4(observer_port: int):
    async with px4_sitl(SitlOptions(speed=SPEED, px4_dir=MAIN_BUILD, params=FENCED,
                                    extra_links=(f"udpout://127.0.0.1:{observer_port}",))) as sitl:
        yield sitl.url, SPEED


@contextlib.contextmanager
def hil_fly(url: str, record: Path, speed: float, *extra: str) -> Iterator[subprocess.Popen]:
    harness = subprocess.Popen([sys.executable, "-m", "hil", "fly", str(MISSION), "--target", url, "--arm",
                                "--record-dir", str(record), "--param", f"{CRUISE[0]}={CRUISE[1]}",
                                "--link-loss-timeout", f"{SILENCE_WALL_S * speed:g}", "--connect-timeout", "60",
                                *extra],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)  # a signal for the harness only, as systemd or `kill` sends it
    try:
        yield harness
    finally:
        # A test that failed before the harness ended must not leave it running on the shared machine's cores.
        if harness.poll() is None:
            harness.kill()
            harness.communicate()


def wait_for_event(record: Path, kind: str | None, harness: subprocess.Popen, timeout: float = 90.0) -> None:
    """Until the record holds an event of `kind` (or, for None, until the record exists)."""
    deadline = time.monotonic() + timeout
    events = record / "events.jsonl"
    while time.monotonic() < deadline:
        assert harness.poll() is None, f"hil fly ended before {kind}: {harness.communicate()[0][-3000:]}"
        if events.exists() and (kind is None or any(json.loads(line).get("kind") == kind
                                                    for line in events.read_text().splitlines() if line.strip())):
            return
        time.sleep(0.02)
    raise AssertionError(f"no {kind} event within {timeout} s")


def wait_for_exit(harness: subprocess.Popen, client: Client, timeout: float = 120.0) -> str:
    """What the stopped harness printed once it has ended."""
    deadline = time.monotonic() + timeout
    while harness.poll() is None and time.monotonic() < deadline:
        client.recv("NONE", 0.1)  # keep draining: the vehicle streams at its speed factor
    return harness.communicate(timeout=5)[0]


def read_param(client: Client, name: str) -> float:
    client.conn.mav.param_request_read_send(*client.target, name.encode(), -1)
    value = client.recv("PARAM_VALUE", 5.0, lambda m: m.param_id == name)
    assert value is not None, f"no PARAM_VALUE for {name}"
    if value.param_type == mavlink.MAV_PARAM_TYPE_INT32:  # PX4 sends an integer's bytes in the float field
        return struct.unpack("<i", struct.pack("<f", value.param_value))[0]
    return value.param_value


def assert_landed_and_restored(client: Client, before: dict[str, float], timeout: float) -> None:
    client.drain()  # what the vehicle says from now on, not what queued while the test looked away
    disarmed = client.recv("HEARTBEAT", timeout, lambda m: not m.base_mode & mavlink.MAV_MODE_FLAG_SAFETY_ARMED)
    assert disarmed is not None, "the vehicle is still armed"
    landed = client.recv("EXTENDED_SYS_STATE", 5.0)
    assert landed is not None and landed.landed_state == mavlink.MAV_LANDED_STATE_ON_GROUND, landed
    after = {name: read_param(client, name) for name in before}
    assert after == pytest.approx(before), "the parameters the run changed were not all restored"


def stop_while_nothing_answers(sig: signal.Signals, tmp_path: Path) -> None:
    """The connecting phase with no autopilot at the connection string (a flight controller not plugged in)."""
    record = tmp_path / "r"
    with hil_fly(f"udpin://127.0.0.1:{free_udp_port()}", record, 1.0) as harness:
        wait_for_event(record, None, harness)
        time.sleep(0.5)
        harness.send_signal(sig)
        out, _ = harness.communicate(timeout=30)
    assert harness.returncode == 130, out
    manifest = read_manifest(record)
    assert manifest["outcome"] == "aborted" and manifest["summary"]["phase"] == "connecting", manifest


async def stop_at_each_phase(vehicle, phase: str, sig: signal.Signals, tmp_path: Path) -> None:
    observer_port = free_udp_port()
    record = tmp_path / "r"
    async with vehicle(observer_port) as (url, speed):
        with observer(observer_port) as client:
            client.wait_armable(30.0)
            names = [CRUISE[0], "NAV_DLL_ACT", "MIS_TAKEOFF_ALT"]
            before = {name: read_param(client, name) for name in names}
            with hil_fly(url, record, speed) as harness:
                wait_for_event(record, PHASES[phase], harness)
                harness.send_signal(sig)
                out = wait_for_exit(harness, client)
            assert harness.returncode == 130, out[-3000:]
            manifest = read_manifest(record)
            summary = manifest["summary"]
            assert manifest["outcome"] == "aborted" and summary["stopped_by"] == sig.name, manifest
            assert summary["phase"] in phases_a_signal_may_land_in(phase), (phase, summary["phase"])
            said = "while connecting" if summary["phase"] == "connecting" else f"during {summary['phase']}"
            assert f"aborted: stopped ({sig.name}) {said}" in out, out[-3000:]
            assert_landed_and_restored(client, before, timeout=10.0)
            kinds = [e["kind"] for e in read_events(record)]
            assert kinds.count("trial_finished") == 1
            # Stopped while connecting, the harness had no vehicle to make safe: its manifest alone says so.
            assert summary["phase"] == "connecting" or "aborted" in kinds, kinds


async def kill_mid_mission_then_fly_again(vehicle, tmp_path: Path) -> None:
    """kill -9 of the harness mid-mission: the vehicle's own failsafe brings it down (the harness armed it), and
    the next run waits for that, restores the journal, and flies."""
    observer_port = free_udp_port()
    async with vehicle(observer_port) as (url, speed):
        with observer(observer_port) as client:
            client.wait_armable(30.0)
            before = {name: read_param(client, name) for name in (CRUISE[0], "NAV_DLL_ACT")}
            with hil_fly(url, tmp_path / "first", speed) as harness:
                wait_for_event(tmp_path / "first", "mission_item_reached", harness)
                time.sleep(0.3)
                harness.kill()  # nothing of the harness runs now
                harness.wait()
            client.drain()
            hb = client.recv("HEARTBEAT", 2.0)
            assert hb.base_mode & mavlink.MAV_MODE_FLAG_SAFETY_ARMED, "the vehicle was flying when the harness died"
            assert read_param(client, "NAV_DLL_ACT") == 2, "the dead-man's switch (Return on link loss) was armed"
            # The next run starts at once, with the vehicle still in the air: it waits, commanding nothing.
            modes = []
            with hil_fly(url, tmp_path / "second", speed, "--dry-run") as again:
                deadline = time.monotonic() + 120
                while again.poll() is None and time.monotonic() < deadline:
                    hb = client.recv("HEARTBEAT", 0.5)
                    if hb is not None and decode_custom_mode(hb.custom_mode) not in modes[-1:]:
                        modes.append(decode_custom_mode(hb.custom_mode))
                out, _ = again.communicate(timeout=5)
            # The failsafe's hold, then Return (PX4 says so only to a link that has heard a ground station).
            assert modes[modes.index(FlightMode.HOLD):][:2] == [FlightMode.HOLD, FlightMode.RTL], modes
            assert again.returncode == 0, out[-3000:]
            assert "waiting" in out and "restored parameters an interrupted run left changed" in out, out[-3000:]
            kinds = [e["kind"] for e in read_events(tmp_path / "second")]
            assert kinds.index("waiting_to_restore") < kinds.index("params_restored_after_crash")
            assert_landed_and_restored(client, before, timeout=5.0)
