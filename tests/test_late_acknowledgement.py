"""A command whose acknowledgement MAVSDK gave up on is judged by what the vehicle then does.

MAVSDK resends a command a few times and gives up within about two wall seconds; a vehicle process held that long
(a loaded machine's scheduler, here SIGSTOP) still takes the command once it runs again. The built-in vehicle
process is real, the stop is a real signal: leaving offboard must not fail a flight that left it."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
from mavsdk.plugins.action import ActionError
from mavsdk.plugins.offboard import OffboardError

from bridges.vehicle import CommandDenied

# Wall seconds the vehicle process is held: past MAVSDK's retries of a command (measured here: it gave up after
# about 2.0 s), short of the harness's own wait for the mode to show (from MAVSDK's giving up, MODE_CONFIRM_S of
# vehicle time at 4x plus the clock's 1 s of grace once the vehicle's stamps stop: about 3.6 s after the hold).
HELD_S = 2.6


async def _held_while(pid: int, request) -> None:
    os.kill(pid, signal.SIGSTOP)
    asyncio.get_running_loop().call_later(HELD_S, os.kill, pid, signal.SIGCONT)
    try:
        await request
    finally:
        await asyncio.sleep(HELD_S)  # resumed in any case before the next step
        os.kill(pid, signal.SIGCONT)


async def test_leaving_offboard_whose_acknowledgement_came_too_late_is_judged_by_the_mode(sim, vehicle):
    await vehicle.arm()
    await vehicle.takeoff(3.0)
    await vehicle.start_offboard()
    # The premise: MAVSDK itself reports the request timed out when the vehicle is held that long.
    with pytest.raises(OffboardError) as raw:
        await _held_while(sim.proc.pid, vehicle.offboard.stop())
    assert getattr(raw.value.result, "name", str(raw.value.result)) == "TIMEOUT"
    await vehicle.wait_until(lambda s: s.flight_mode == "HOLD", 5.0, "hold after the late stop")

    await vehicle.start_offboard()
    await vehicle.wait_until(lambda s: s.flight_mode == "OFFBOARD", 5.0, "offboard again")
    await _held_while(sim.proc.pid, vehicle.stop_offboard())  # no CommandDenied: the vehicle left offboard
    assert vehicle.state.flight_mode == "HOLD"


async def test_a_vehicle_that_stays_in_offboard_is_still_refused(sim, vehicle):
    await vehicle.arm()
    await vehicle.takeoff(3.0)
    await vehicle.start_offboard()
    # Held for longer than the harness waits for the mode: the vehicle has not left offboard when it looks.
    os.kill(sim.proc.pid, signal.SIGSTOP)
    try:
        with pytest.raises(CommandDenied, match="stop offboard.*TIMEOUT"):
            await vehicle.stop_offboard()
    finally:
        os.kill(sim.proc.pid, signal.SIGCONT)


async def test_land_and_return_whose_acknowledgement_came_too_late_are_judged_by_the_mode(sim, vehicle):
    await vehicle.arm()
    await vehicle.takeoff(3.0)
    # The premise, for the action plugin's commands: MAVSDK reports a timeout when the vehicle is held that long.
    with pytest.raises(ActionError) as raw:
        await _held_while(sim.proc.pid, vehicle.action.return_to_launch())
    assert getattr(raw.value.result, "name", str(raw.value.result)) == "TIMEOUT"
    await vehicle.wait_until(lambda s: s.flight_mode == "RETURN_TO_LAUNCH", 5.0, "return after the late command")
    await _held_while(sim.proc.pid, vehicle.hold())  # no CommandDenied: the vehicle holds
    assert vehicle.state.flight_mode == "HOLD"
    await _held_while(sim.proc.pid, vehicle.land())
    assert vehicle.state.flight_mode == "LAND" or not vehicle.state.armed
