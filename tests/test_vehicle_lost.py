"""A vehicle that stops for good ends its trial (CI: PX4 SIH deadlocked after "Takeoff detected", and a campaign
trial and its onboard agent waited in idle event loops for ever, the vehicle's clock stopped with it).

Every budget is vehicle time, so a vehicle whose clock stands still would stretch them for ever: the one wall bound
(`TargetOptions.vehicle_lost_s`, bridges.vehicle.VEHICLE_LOST_S) ends the trial as an error naming the bound and the
vehicle's last time, and a process the harness started that dies ends it at once, naming its exit code. Here a
navigation flight (the campaign's trial loop, `hil.navigation.fly_scene`, in a `TrialSession` as `hil.trial` runs
it) has its vehicle process, PX4 SITL or the built-in vehicle, stopped (SIGSTOP) for STOP_S or killed once the
planner flies it; the stop policy and the target's teardown run, and the record is finished.

The test's bound is BOUND_S: well above a scheduling stall of a live vehicle on a loaded machine (the pauses of
tests/test_vehicle_time.py, 0.8 s, fly on), well below STOP_S, so the trial ends while the vehicle is still stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bridges.mavsdk_vehicle import connect
from hil.campaign import planner_choice
from hil.navigation import Navigation, fly_scene
from hil.rules import RULES
from hil.session import TrialSession
from missions.scenes import scene_for
from onboard.planner import load_planner
from px4.process import free_udp_port
from records.record import read_events, read_manifest, read_table
from targets import TargetOptions
from targets.builtin import SimProcessOptions, builtin_vehicle

from .agent_process import hello, running_agent
from .conftest import BUILTIN_SPEED, SPEED
from .px4_builds import MAIN_BUILD, needs_px4
from .test_vehicle_time import MISSION, ROOT, vehicle_pid, wait_for_event

BOUND_S = 3.0  # wall seconds of a clock standing still that lose the vehicle, for this test
STOP_S = 8.0  # wall seconds the vehicle process is held stopped
# Wall seconds from the stop to the trial's end, teardown and finished record included: the bound, the stop
# policy and the restore of the flight's parameters (refused at once on a lost vehicle), the target's SIGTERM
# grace (3 s, px4.process.STOP_GRACE_S) and a loaded machine's slowness.
ENDED_WITHIN_S = 45.0
# Wall seconds from a kill to the vehicle lost: its process is polled every 0.1 s; a loaded machine's event loop
# is late by some of this, and it must stay below the clock's bound to show the death was seen, not the stillness.
DEATH_SEEN_S = BOUND_S - 0.5


async def fly_and_signal(record: Path, target: str, sig: signal.Signals) -> tuple[float, float]:
    """A straight-line navigation flight on `target` whose vehicle process gets `sig` once the planner flies it
    (in offboard; SIGSTOP: SIGCONT after STOP_S, if the harness has not stopped it by then); the record finished as the campaign
    finishes it. Returns (monotonic time of the signal, monotonic time the record was finished)."""
    loop = asyncio.get_running_loop()
    options = TargetOptions(speed=BUILTIN_SPEED if target == "sim" else SPEED, px4_dir=MAIN_BUILD,
                            vehicle_lost_s=BOUND_S)
    choice = planner_choice("straight")
    navigation = Navigation(load_planner(choice.spec), "straight", sensor=choice.sensor)
    scene = scene_for("forest", 1)
    signalled: list[float] = []
    signalling: list[asyncio.Task] = []
    with TrialSession(record, config={}, target=target) as session:
        async with session.target(target, options, record=False) as opened:
            def resume() -> None:
                if opened.failure() is None:  # still the process the harness started, not stopped by it yet
                    os.kill(opened.pid, signal.SIGCONT)

            async def signal_once_offboard() -> None:
                # Once the planner flies it: a stop before that fails the offboard start (MAVSDK's own timeout).
                await opened.vehicle.wait_until(lambda s: s.flight_mode == "OFFBOARD", 60.0, "offboard")
                os.kill(opened.pid, sig)
                signalled.append(time.monotonic())
                if sig == signal.SIGSTOP:
                    loop.call_later(STOP_S, resume)

            def on_event(kind: str, fields: dict) -> None:
                if kind == "navigation_started":
                    signalling.append(asyncio.create_task(signal_once_offboard()))

            session.recorder.listeners.append(on_event)
            try:
                flight = await fly_scene(opened.vehicle, navigation, scene, RULES["flyingtrust"], 0.25,
                                         session.recorder, land=True)
            finally:
                for task in signalling:
                    task.cancel()
                with contextlib.suppress(ProcessLookupError):
                    resume()
        session.finish(flight.verdict.outcome, flight.ending())
    assert signalled, f"the navigation never started: {flight.verdict}"
    return signalled[0], time.monotonic()


async def lost_trial(record: Path, target: str, sig: signal.Signals) -> tuple[dict, float, float]:
    """`fly_and_signal`, then the record's summary, and the wall seconds from the signal to the vehicle lost (the
    record's one `vehicle_lost` event) and to the record finished."""
    signalled_at, ended_at = await fly_and_signal(record, target, sig)
    [lost] = [e for e in read_events(record) if e["kind"] == "vehicle_lost"]
    return read_manifest(record)["summary"], lost["t_ns"] / 1e9 - signalled_at, ended_at - signalled_at


TARGETS = ["sim", pytest.param("px4-sitl", marks=needs_px4)]


@pytest.mark.parametrize("target", TARGETS)
async def test_a_vehicle_stopped_longer_than_the_bound_ends_the_trial_as_lost(tmp_path, target):
    record = tmp_path / "trial"
    summary, lost_after, ended_after = await lost_trial(record, target, signal.SIGSTOP)
    assert summary["outcome"] == "error", summary
    assert f"for {BOUND_S:g} wall seconds" in summary["reason"], summary
    # The reason names the vehicle's last time: the last telemetry row's stamp (LOCAL_POSITION_NED's, the clock's).
    last_stamp = read_table(record, "telemetry")["t_vehicle_s"].dropna().max()
    stood_at = re.search(r"its clock stood at ([0-9.]+) s", summary["reason"])
    assert stood_at and abs(float(stood_at[1]) - last_stamp) < 0.1, (summary["reason"], last_stamp)
    # Not before the bound (a vehicle stands still from the stop on, give or take its last 20 ms of telemetry),
    # and while it is still stopped.
    assert BOUND_S - 0.1 <= lost_after < STOP_S, lost_after
    assert ended_after < ENDED_WITHIN_S, ended_after


@pytest.mark.parametrize("target", TARGETS)
async def test_a_vehicle_process_killed_mid_flight_ends_the_trial_at_once_with_its_exit_code(tmp_path, target):
    summary, lost_after, ended_after = await lost_trial(tmp_path / "trial", target, signal.SIGKILL)
    assert summary["outcome"] == "error", summary
    assert "vehicle lost" in summary["reason"] and "exited with code -9" in summary["reason"], summary
    assert lost_after < DEATH_SEEN_S, lost_after
    assert ended_after < ENDED_WITHIN_S, ended_after


@needs_px4
@pytest.mark.parametrize("sig", [signal.SIGSTOP, signal.SIGKILL], ids=["stopped", "killed"])
def test_hil_fly_whose_px4_stops_or_dies_mid_mission_ends_and_exits(tmp_path, sig):
    """`hil fly` as a process, a mission route on PX4: its safety watch takes a stopped vehicle for a lost link
    (link_lost, exit 1), a dead one is lost at once (error, exit 4); either way the record is finished and the
    process exits within ENDED_WITHIN_S, PX4 never resumed (it once finished its record and then never exited: a
    parameter restore still with MAVSDK when MAVSDK was destroyed)."""
    record = tmp_path / "trial"
    harness = subprocess.Popen([sys.executable, "-m", "hil", "fly", str(MISSION), "--target", "px4-sitl", "--speed",
                                str(SPEED), "--record-dir", str(record), "--vehicle-lost-after", str(BOUND_S)],
                               cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    pid = None
    try:
        pid = vehicle_pid(harness, "px4-sitl")
        wait_for_event(record, "takeoff_complete", harness)
        os.kill(pid, sig)
        output, _ = harness.communicate(timeout=ENDED_WITHIN_S)
    finally:
        if pid is not None and sig == signal.SIGSTOP and harness.poll() is None:
            os.kill(pid, signal.SIGCONT)  # the harness, which started it, has not stopped it yet
        if harness.poll() is None:
            harness.kill()
            harness.wait()
    summary = read_manifest(record)["summary"]
    if sig == signal.SIGKILL:
        assert (harness.returncode, summary["outcome"]) == (4, "error"), output
        assert "vehicle lost: PX4 SITL instance" in summary["reason"] and "exited with code -9" in summary["reason"]
    else:
        assert (harness.returncode, summary["outcome"]) == (1, "link_lost"), output


async def test_an_onboard_agent_ends_its_trial_when_its_vehicle_stands_still_without_a_word_from_the_harness():
    """The board's side of the CI hang: after ``go``, a flight controller whose clock stops ends the planner's
    loop on the board at the job's bound (the harness's own), reported as the trial's error, and the agent goes on
    serving, though the harness never says stop."""
    from .test_agent_hostile import trial

    board = free_udp_port()
    options = SimProcessOptions(speed=BUILTIN_SPEED, extra_links=[f"udpout://127.0.0.1:{board}"])
    async with builtin_vehicle(options) as sim:
        harness = await connect(sim.url, speed_factor=BUILTIN_SPEED)
        try:
            await harness.wait_armable()
            await harness.arm()
            await harness.takeoff(2.0)
            with running_agent() as (_, port):
                reader, writer = await asyncio.open_connection("127.0.0.1", port)

                async def answer(timeout: float = 30.0) -> dict:
                    return json.loads(await asyncio.wait_for(reader.readline(), timeout))

                writer.write(hello() + trial(vehicle_url=f"udpin://127.0.0.1:{board}", speed=BUILTIN_SPEED,
                                             connect_timeout_s=20, vehicle_lost_s=BOUND_S))
                assert [(await answer())["op"] for _ in range(3)] == ["hello", "queued", "ready"]
                writer.write(b'{"op": "go"}\n')
                while (await answer())["cycles"] < 5:  # the planner flies it
                    pass
                os.kill(sim.proc.pid, signal.SIGSTOP)
                stopped = time.monotonic()
                try:
                    while (message := await answer(STOP_S))["op"] == "alive":
                        pass
                    lost_after = time.monotonic() - stopped
                finally:
                    os.kill(sim.proc.pid, signal.SIGCONT)
                assert message["op"] == "result", message
                assert "VehicleLost: vehicle lost: its clock stood at" in message["error"], message
                assert f"for {BOUND_S:g} wall seconds" in message["error"], message
                assert BOUND_S - 0.1 <= lost_after < STOP_S, lost_after
                writer.write(b'{"op": "stop"}\n{"op": "ping", "t1": 7}\n')
                assert (await answer())["op"] == "pong"  # the session goes on
                writer.close()
        finally:
            await harness.close()
