"""Each safety gate, shown holding: a real `hil fly` process against a real vehicle process, with a pilot.

The vehicle stands in for a real aircraft (a connection-string target, so every hardware rule
applies). The "pilot" is a second MAVLink client on its own link sending MANUAL_CONTROL, the way a
ground-station joystick is RC to PX4. The harness is reached over UDP and over a pty serial pair.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pymavlink.dialects.v20 import common as mavlink

from bridges.ptypair import PtyPair
from records.record import read_events, read_manifest, read_table
from targets.builtin import SimProcessOptions, builtin_vehicle
from px4.process import free_udp_port
from px4.modes import FlightMode

from .conftest import BUILTIN_SPEED
from .mavlink_client import Client

ROOT = Path(__file__).resolve().parents[1]
MISSIONS = ROOT / "missions" / "examples"
FENCED = {"GF_MAX_HOR_DIST": 200.0, "GF_MAX_VER_DIST": 60.0}
CENTRED = (0.0, 0.0, 0.5, 0.0)


@contextlib.asynccontextmanager
async def field(transport: str = "udp", **params):
    """A fenced vehicle process; yields (the harness's connection string, a pilot client on its own link)."""
    pilot_port = free_udp_port()
    with contextlib.ExitStack() as stack:
        extra = [f"udpout://127.0.0.1:{pilot_port}"]
        if transport == "serial":
            cable = stack.enter_context(PtyPair())
            extra.append(f"serial://{cable.a}:921600")
        async with builtin_vehicle(SimProcessOptions(speed=BUILTIN_SPEED, params={**FENCED, **params}, extra_links=extra)) as sim:
            pilot = Client(f"udpin://127.0.0.1:{pilot_port}")
            try:
                yield (f"serial://{cable.b}:921600" if transport == "serial" else sim.url), pilot
            finally:
                pilot.close()


def start_harness(url: str, mission: str, record: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "hil", "fly", str(MISSIONS / mission), "--target", url, "--arm",
                             "--record-dir", str(record), *extra], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def finish(harness: subprocess.Popen, pilot: Client, timeout: float = 60.0) -> tuple[int, str]:
    """Wait for the harness to exit while the pilot keeps listening (and holding the sticks, if any)."""
    deadline = time.monotonic() + timeout
    while harness.poll() is None and time.monotonic() < deadline:
        pilot.recv("NONE", 0.1)
    out, _ = harness.communicate(timeout=5)
    return harness.returncode, out


@pytest.mark.parametrize("transport", ["udp", "serial"])
async def test_pilot_switching_to_position_mode_stops_the_harness_at_once(tmp_path, transport):
    async with field(transport) as (url, pilot):
        pilot.sticks = CENTRED  # RC present from the start, as on a real field
        harness = start_harness(url, "offboard_square.yaml", tmp_path / "r")
        assert pilot.wait_mode(FlightMode.OFFBOARD, 30.0), "the harness never got to offboard"
        assert pilot.set_mode(FlightMode.POSCTL) == mavlink.MAV_RESULT_ACCEPTED  # the pilot flips the switch
        code, out = finish(harness, pilot)
        assert code == 1 and "pilot took over" in out
        manifest = read_manifest(tmp_path / "r")
        assert manifest["outcome"] == "pilot_takeover"
        # The harness sent nothing after the takeover: the vehicle is still flying in the pilot's mode.
        hb = pilot.recv("HEARTBEAT", 2.0)
        assert hb.base_mode & mavlink.MAV_MODE_FLAG_SAFETY_ARMED
        assert pilot.wait_mode(FlightMode.POSCTL, 1.0), f"not in Position; the vehicle said {pilot.texts[-5:]}"
        pos = pilot.recv("LOCAL_POSITION_NED", 1.0)
        assert -pos.z > 2.0, "still airborne: nobody told it to land"
        assert any(e["kind"] == "pilot_takeover" for e in read_events(tmp_path / "r"))
        pilot.set_mode(FlightMode.LAND)


async def test_pilot_moving_the_sticks_takes_over_from_offboard(tmp_path):
    async with field(COM_RC_OVERRIDE=3) as (url, pilot):
        pilot.sticks = CENTRED
        harness = start_harness(url, "offboard_square.yaml", tmp_path / "r")
        assert pilot.wait_mode(FlightMode.OFFBOARD, 30.0)
        pilot.sticks = (0.0, -0.6, 0.5, 0.0)  # roll hard left
        assert pilot.wait_mode(FlightMode.POSCTL, 3.0)
        assert any("took over" in t for t in pilot.texts)
        pilot.sticks = CENTRED
        code, out = finish(harness, pilot)
        assert code == 1 and read_manifest(tmp_path / "r")["outcome"] == "pilot_takeover"


async def test_leaving_the_harness_fence_makes_it_land(tmp_path):
    async with field() as (url, pilot):
        harness = start_harness(url, "demo_square.yaml", tmp_path / "r", "--geofence-radius", "18")
        assert pilot.wait_mode(FlightMode.MISSION, 30.0)
        # Once it flies: PX4 v1.16.1 SIH, repositioned while still on the ground, tilts towards the
        # target but stays put (measured; the built-in vehicle does the same), so no breach would come.
        assert pilot.recv("LOCAL_POSITION_NED", 30.0, lambda m: m.z < -2.0) is not None, "the mission never climbed"
        home = pilot.recv("HOME_POSITION", 5.0)
        # Someone else (a second ground station) sends the vehicle 40 m away: inside the autopilot's
        # 200 m fence, outside the harness's 18 m one.
        target_lat = home.latitude + int(40.0 / 111_320.0 * 1e7)
        pilot.conn.mav.command_int_send(1, 1, mavlink.MAV_FRAME_GLOBAL_INT, mavlink.MAV_CMD_DO_REPOSITION, 0, 0,
                                        -1, mavlink.MAV_DO_REPOSITION_FLAGS_CHANGE_MODE, 0, float("nan"),
                                        target_lat, home.longitude, home.altitude / 1000.0 + 5.0)
        code, out = finish(harness, pilot, timeout=90)
        assert code == 1 and "geofence breach" in out
        assert read_manifest(tmp_path / "r")["outcome"] == "breach"
        telemetry = read_table(tmp_path / "r", "telemetry")
        assert (telemetry["north"] ** 2 + telemetry["east"] ** 2).max() ** 0.5 < 30.0, "landed soon after the breach"
        assert not telemetry["armed"].iloc[-1]


async def test_losing_the_harness_leaves_the_vehicle_to_its_own_failsafe(tmp_path):
    async with field() as (url, pilot):
        harness = start_harness(url, "offboard_square.yaml", tmp_path / "r")
        assert pilot.wait_mode(FlightMode.OFFBOARD, 30.0)
        pilot.recv("NONE", 1.0)
        harness.kill()  # the harness (or its laptop, or its link) is gone
        harness.wait()
        # PX4 v1.14/v1.16 without RC (COM_OBL_RC_ACT 0, Position needs a pilot): it lands where it is.
        assert pilot.wait_mode(FlightMode.LAND, 3.0), "PX4 without RC lands on offboard loss"
        said = "".join(pilot.texts)  # a long STATUSTEXT arrives in 50-character chunks
        assert "Failsafe activated" in said and "offboard" in said, pilot.texts


async def test_dry_run_goes_through_everything_but_arming(tmp_path):
    async with field() as (url, pilot):
        harness = start_harness(url, "demo_square.yaml", tmp_path / "r", "--dry-run")
        armed = pilot.recv("HEARTBEAT", 8.0, lambda m: m.base_mode & mavlink.MAV_MODE_FLAG_SAFETY_ARMED)
        code, out = finish(harness, pilot)
        assert code == 0 and armed is None
        assert "pre-flight checks passed" in out and "dry_run" in out
        kinds = [e["kind"] for e in read_events(tmp_path / "r")]
        assert "mission_uploaded" in kinds and "armed" not in kinds


@pytest.mark.parametrize("setup, failing", [
    ({"SIM_GPS_USED": 3}, "GPS fix"),
    ({"GF_MAX_HOR_DIST": 0.0}, "flight controller geofence"),
])
async def test_a_failed_preflight_check_stops_before_arming(tmp_path, setup, failing):
    async with field(**setup) as (url, pilot):
        harness = start_harness(url, "demo_square.yaml", tmp_path / "r")
        armed = pilot.recv("HEARTBEAT", 6.0, lambda m: m.base_mode & mavlink.MAV_MODE_FLAG_SAFETY_ARMED)
        code, out = finish(harness, pilot)
        assert code == 3 and armed is None  # refused by a safety gate
        assert f"[FAIL] {failing}" in out
        assert read_manifest(tmp_path / "r")["outcome"] == "preflight_failed"


async def test_a_mission_outside_the_harness_limits_is_refused(tmp_path):
    async with field() as (url, pilot):
        code, out = finish(start_harness(url, "demo_square.yaml", tmp_path / "r", "--max-altitude", "3"), pilot)
        assert code == 3 and "[FAIL] harness limits agree with the mission" in out and "altitude limit is 3" in out


async def test_ctrl_c_aborts_lands_and_restores(tmp_path):
    async with field() as (url, pilot):
        harness = start_harness(url, "demo_square.yaml", tmp_path / "r")
        assert pilot.wait_mode(FlightMode.MISSION, 30.0)
        pilot.recv("NONE", 1.0)
        harness.send_signal(signal.SIGINT)
        code, out = finish(harness, pilot, timeout=90)
        assert code == 130 and "aborted: stopped (SIGINT) during" in out  # interrupted, and the vehicle safe
        assert read_manifest(tmp_path / "r")["outcome"] == "aborted"
        assert pilot.recv("HEARTBEAT", 3.0, lambda m: not m.base_mode & mavlink.MAV_MODE_FLAG_SAFETY_ARMED)
        pilot.conn.mav.param_request_read_send(1, 1, b"MIS_TAKEOFF_ALT", -1)
        value = pilot.recv("PARAM_VALUE", 3.0, lambda m: m.param_id == "MIS_TAKEOFF_ALT")
        assert value.param_value == pytest.approx(2.5), "the mission's parameter change was undone"


@pytest.mark.parametrize("extra", [("--dry-run",), ()], ids=["dry-run", "arm"])
async def test_a_vehicle_someone_else_is_flying_gets_no_command_at_all(tmp_path, extra):
    async with field() as (url, pilot):
        pilot.wait_armable(30.0)
        # The pilot takes off in Takeoff mode: up to MIS_TAKEOFF_ALT (2.5 m), then Hold.
        assert pilot.set_mode(FlightMode.TAKEOFF) == mavlink.MAV_RESULT_ACCEPTED
        assert pilot.command(mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 1) == mavlink.MAV_RESULT_ACCEPTED
        assert pilot.wait_altitude(2.5, 0.5, 30.0 / BUILTIN_SPEED + 5), "the pilot's takeoff"
        assert pilot.wait_mode(FlightMode.HOLD, 20.0 / BUILTIN_SPEED + 3)
        record = tmp_path / "record"
        code, out = finish(start_harness(url, "demo_square.yaml", record, *extra), pilot)
        assert code == 3 and "already flying" in out, out
        assert read_manifest(record)["outcome"] == "refused"
        kinds = [e["kind"] for e in read_events(record)]
        assert not {"mission_uploaded", "armed", "params_set", "landing"} & set(kinds), kinds
        # Nothing was uploaded or commanded: the vehicle holds where the pilot left it, with no mission.
        assert pilot.wait_mode(FlightMode.HOLD, 1.0)
        pilot.conn.mav.mission_request_list_send(*pilot.target)
        count = pilot.recv("MISSION_COUNT", 5.0)
        assert count is not None and count.count == 0
