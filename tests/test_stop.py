"""However `hil fly` is stopped, the built-in vehicle reached by its connection string (the hardware path, as
a Pixhawk on USB or over a radio) ends safe: a signal at each phase, kill -9 mid-mission, SIGTERM to a
campaign, a second and a third Ctrl-C. tests/test_stop_px4.py stops PX4 v1.16.1 SITL the same way; the
matrix itself is tests/stop_matrix.py.

After every stop the vehicle is looked at by an observer of its own: landed and disarmed, the parameters
the run changed read back as before, the record `aborted` with the phase, exit 130. By default each phase is
hit by one signal, each signal at two or three phases; HIL_STOP_MATRIX=full runs all 21 pairs. The connecting
phase here has nothing at the connection string (a flight controller not plugged in).
"""

from __future__ import annotations

import functools
import signal
import subprocess
import sys
import time

import pytest
from pymavlink.dialects.v20 import common as mavlink

from px4.process import free_udp_port
from records.record import read_manifest

from .stop_matrix import (
    MISSION,
    ROOT,
    assert_landed_and_restored,
    builtin,
    case_ids,
    cases,
    hil_fly,
    kill_mid_mission_then_fly_again,
    observer,
    read_param,
    stop_at_each_phase,
    stop_while_nothing_answers,
    wait_for_event,
    wait_for_exit,
)

CASES = cases(first=0)


@pytest.mark.parametrize("phase, sig", CASES, ids=case_ids("", CASES))
async def test_a_signal_at_any_phase_leaves_the_builtin_vehicle_landed_and_restored(tmp_path, phase, sig):
    if phase == "connecting":
        stop_while_nothing_answers(sig, tmp_path)
    else:
        await stop_at_each_phase(builtin, phase, sig, tmp_path)


async def test_kill_9_mid_mission_the_builtin_vehicle_returns_by_itself_and_the_next_run_restores(tmp_path):
    # The next run must start and connect while the vehicle's own return is still in the air: at 8x, a `hil fly`
    # starting beside two CPU burners outlasted it (it found the vehicle landed, so it did not wait); 2x gives it
    # four times the wall time.
    await kill_mid_mission_then_fly_again(functools.partial(builtin, speed=2.0), tmp_path)


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
            with hil_fly(url, record, speed) as harness:
                wait_for_event(record, "mission_item_reached", harness)
                # A person pressing Ctrl-C again while the vehicle comes down. Each press waits until the one
                # before was taken (the landing it commanded, then a moment): the kernel keeps one pending SIGINT,
                # so presses 10 ms apart to a process a loaded machine has not scheduled arrive as one.
                harness.send_signal(signal.SIGINT)
                wait_for_event(record, "landing", harness)
                for _ in range(presses - 1):
                    harness.send_signal(signal.SIGINT)
                    time.sleep(0.2)
                out = wait_for_exit(harness, client)
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
