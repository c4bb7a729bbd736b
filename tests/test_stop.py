"""However `hil fly` is stopped, the vehicle ends safe: a signal at each phase, and kill -9, on a vehicle
reached by its connection string (the hardware path, as a Pixhawk on USB or over a radio): the built-in
vehicle, and PX4 v1.16.1 SITL.

After every stop the vehicle is looked at by an observer of its own (a MAVLink client that beats as an
onboard controller, so it does not keep the vehicle's ground-station link alive): landed and disarmed,
the parameters the run changed read back as before, the record `aborted` with the phase, exit 130.

The whole matrix (3 signals x 7 phases) runs with HIL_STOP_MATRIX=full; by default each phase is hit by one
signal, each signal at two or three phases, and PX4 at the three phases where a stop races a command
(takeoff, mission start) or interrupts a flight (mid-mission).
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
from .px4_builds import MAIN_BUILD, NO_PX4

ROOT = Path(__file__).resolve().parents[1]
MISSION = ROOT / "missions" / "examples" / "demo_square.yaml"
# A parameter the run sets for its flight (journaled on a flight controller) and must leave as it found it.
CRUISE = ("MPC_XY_CRUISE", 4.0)
FENCED = {"GF_MAX_HOR_DIST": 200.0, "GF_MAX_VER_DIST": 60.0}  # the checklist wants the vehicle's own fence on
# The record event each phase begins with (None: the process has only just started, nothing answers yet).
PHASES = {"connecting": None, "checklist": "connected", "arming": "preflight", "takeoff": "armed",
          "mission start": "mission_uploaded", "mid-mission": "mission_item_reached", "landing": "landing"}
ORDER = list(PHASES)
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
if os.environ.get("HIL_STOP_MATRIX") == "full":
    BUILTIN_CASES = list(itertools.product(PHASES, SIGNALS))
else:
    BUILTIN_CASES = [(phase, SIGNALS[i % 3]) for i, phase in enumerate(PHASES)]
PX4_CASES = [("takeoff", signal.SIGHUP), ("mission start", signal.SIGINT), ("mid-mission", signal.SIGTERM)]
# Wall seconds of silence before the vehicle's own data-link-loss failsafe acts, at the vehicle's speed factor:
# long enough that a loaded CI machine's stall of the harness is not taken for its death.
SILENCE_WALL_S = 2.5


@contextlib.contextmanager
def observer(port: int):
    client = Client(f"udpin://127.0.0.1:{port}", beat_type=mavlink.MAV_TYPE_ONBOARD_CONTROLLER)
    try:
        yield client
    finally:
        client.close()


@contextlib.asynccontextmanager
async def builtin(observer_port: int):
    async with builtin_vehicle(SimProcessOptions(speed=BUILTIN_SPEED, params=FENCED,
                                                 extra_links=[f"udpout://127.0.0.1:{observer_port}"])) as sim:
        yield sim.url, BUILTIN_SPEED


@contextlib.asynccontextmanager
async def px4(observer_port: int):
    async with px4_sitl(SitlOptions(speed=SPEED, px4_dir=MAIN_BUILD, params=FENCED,
                                    extra_links=(f"udpout://127.0.0.1:{observer_port}",))) as sitl:
        yield sitl.url, SPEED


def start_fly(url: str, record: Path, speed: float, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "hil", "fly", str(MISSION), "--target", url, "--arm",
                             "--record-dir", str(record), "--param", f"{CRUISE[0]}={CRUISE[1]}",
                             "--link-loss-timeout", f"{SILENCE_WALL_S * speed:g}", "--connect-timeout", "60", *extra],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)  # a signal for the harness only, as systemd or `kill` sends it


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


async def stop_at_each_phase(vehicle, phase: str, sig: signal.Signals, tmp_path: Path) -> None:
    observer_port = free_udp_port()
    record = tmp_path / "r"
    if phase == "connecting":  # nothing answers yet: the harness is still waiting for an autopilot
        harness = start_fly(f"udpin://127.0.0.1:{free_udp_port()}", record, 1.0)
        wait_for_event(record, None, harness)
        time.sleep(0.5)
        harness.send_signal(sig)
        out, _ = harness.communicate(timeout=30)
        assert harness.returncode == 130, out
        manifest = read_manifest(record)
        assert manifest["outcome"] == "aborted" and manifest["summary"]["phase"] == "connecting", manifest
        return
    async with vehicle(observer_port) as (url, speed), contextlib.AsyncExitStack():
        with observer(observer_port) as client:
            client.wait_armable(30.0)
            names = [CRUISE[0], "NAV_DLL_ACT", "MIS_TAKEOFF_ALT"]
            before = {name: read_param(client, name) for name in names}
            harness = start_fly(url, record, speed)
            wait_for_event(record, PHASES[phase], harness)
            harness.send_signal(sig)
            deadline = time.monotonic() + 120
            while harness.poll() is None and time.monotonic() < deadline:
                client.recv("NONE", 0.1)  # keep draining: the vehicle streams at its speed factor
            out, _ = harness.communicate(timeout=5)
            assert harness.returncode == 130, out[-3000:]
            manifest = read_manifest(record)
            summary = manifest["summary"]
            assert manifest["outcome"] == "aborted" and summary["stopped_by"] == sig.name, manifest
            # The phase the signal arrived in: the one aimed at, or the next when the harness had just moved on.
            assert summary["phase"] in ORDER[ORDER.index(phase):ORDER.index(phase) + 2], (phase, summary["phase"])
            assert f"aborted: stopped ({sig.name}) during {summary['phase']}" in out
            assert_landed_and_restored(client, before, timeout=10.0)
            kinds = [e["kind"] for e in read_events(record)]
            assert kinds.count("trial_finished") == 1 and "aborted" in kinds


@pytest.mark.parametrize("phase, sig", BUILTIN_CASES, ids=[f"{p.replace(' ', '-')}-{s.name}" for p, s in BUILTIN_CASES])
async def test_a_signal_at_any_phase_leaves_the_builtin_vehicle_landed_and_restored(tmp_path, phase, sig):
    await stop_at_each_phase(builtin, phase, sig, tmp_path)


@pytest.mark.skipif(MAIN_BUILD is None, reason=NO_PX4)
@pytest.mark.parametrize("phase, sig", PX4_CASES, ids=[f"px4-{p.replace(' ', '-')}-{s.name}" for p, s in PX4_CASES])
async def test_a_signal_at_any_phase_leaves_px4_landed_and_restored(tmp_path, phase, sig):
    await stop_at_each_phase(px4, phase, sig, tmp_path)


async def kill_mid_mission_then_fly_again(vehicle, tmp_path: Path) -> None:
    """kill -9 of the harness mid-mission: the vehicle's own failsafe brings it down (the harness armed it), and
    the next run waits for that, restores the journal, and flies."""
    observer_port = free_udp_port()
    async with vehicle(observer_port) as (url, speed):
        with observer(observer_port) as client:
            client.wait_armable(30.0)
            before = {name: read_param(client, name) for name in (CRUISE[0], "NAV_DLL_ACT")}
            harness = start_fly(url, tmp_path / "first", speed)
            wait_for_event(tmp_path / "first", "mission_item_reached", harness)
            time.sleep(0.3)
            harness.kill()  # nothing of the harness runs now
            harness.wait()
            client.drain()
            hb = client.recv("HEARTBEAT", 2.0)
            assert hb.base_mode & mavlink.MAV_MODE_FLAG_SAFETY_ARMED, "the vehicle was flying when the harness died"
            assert read_param(client, "NAV_DLL_ACT") == 2, "the dead-man's switch (Return on link loss) was armed"
            # The next run starts at once, with the vehicle still in the air: it waits, commanding nothing.
            again = start_fly(url, tmp_path / "second", speed, "--dry-run")
            modes = []
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


async def test_kill_9_mid_mission_the_builtin_vehicle_returns_by_itself_and_the_next_run_restores(tmp_path):
    await kill_mid_mission_then_fly_again(builtin, tmp_path)


@pytest.mark.skipif(MAIN_BUILD is None, reason=NO_PX4)
async def test_kill_9_mid_mission_px4_returns_by_itself_and_the_next_run_restores(tmp_path):
    await kill_mid_mission_then_fly_again(px4, tmp_path)


async def test_sigterm_to_a_campaign_on_a_flight_controller_lands_it_and_says_what_is_left(tmp_path):
    """`hil run` on hardware, stopped as a job scheduler stops it: its worker's trial brings the vehicle down by
    the stop policy before the worker ends, and the campaign says how many trials are left."""
    observer_port = free_udp_port()
    async with builtin(observer_port) as (url, _):
        with observer(observer_port) as client:
            client.wait_armable(30.0)
            before = {name: read_param(client, name) for name in ("NAV_DLL_ACT", "MIS_TAKEOFF_ALT")}
            campaign = tmp_path / "bench.yaml"
            campaign.write_text(f"name: bench\nrepeats: 2\nmissions: [{{mission: {MISSION}}}]\ntargets: [{url}]\n"
                                "profiles: [default]\n")
            run = subprocess.Popen([sys.executable, "-m", "hil", "run", str(campaign), "--out", str(tmp_path / "out"),
                                    "--arm", "--no-progress"], cwd=ROOT, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, start_new_session=True)
            flying = client.recv("LOCAL_POSITION_NED", 90.0, lambda m: -m.z > 2.0)
            assert flying is not None, run.communicate(timeout=5)[0][-3000:] if run.poll() is not None else "no climb"
            run.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 120
            while run.poll() is None and time.monotonic() < deadline:
                client.recv("NONE", 0.1)
            out, _ = run.communicate(timeout=5)
            assert run.returncode == 130, out[-3000:]
            assert "stopped with 2 of 2 trials left" in out and "resumes with the rest" in out, out[-3000:]
            assert_landed_and_restored(client, before, timeout=10.0)


@pytest.mark.parametrize("presses", [2, 3])
async def test_a_second_ctrl_c_while_airborne_only_warns_and_a_third_lets_go(tmp_path, presses):
    observer_port = free_udp_port()
    record = tmp_path / "r"
    async with builtin(observer_port) as (url, speed):
        with observer(observer_port) as client:
            client.wait_armable(30.0)
            harness = start_fly(url, record, speed)
            wait_for_event(record, "mission_item_reached", harness)
            for _ in range(presses):  # a person pressing Ctrl-C again while the vehicle comes down
                harness.send_signal(signal.SIGINT)
                time.sleep(0.01)
            deadline = time.monotonic() + 120
            while harness.poll() is None and time.monotonic() < deadline:
                client.recv("NONE", 0.1)
            out, _ = harness.communicate(timeout=5)
            assert "still airborne" in out and "Once more and the harness lets go" in out, out[-3000:]
            summary = read_manifest(record)["summary"]
            if presses == 2:
                assert harness.returncode == 130 and summary["left"] == "landed", out[-3000:]
            else:
                assert harness.returncode == 4 and summary["left"] == "let_go", out[-3000:]
                assert "letting go" in out and "its own failsafe is in charge" in out
            # Either way the vehicle comes down: by the stop policy, or once let go by its own failsafe.
            disarmed = client.recv("HEARTBEAT", 60.0, lambda m: not m.base_mode & mavlink.MAV_MODE_FLAG_SAFETY_ARMED)
            assert disarmed is not None
