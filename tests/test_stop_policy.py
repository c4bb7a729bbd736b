"""The stop policy (hil.stop.make_safe) against a vehicle that does not do as it is told: a command that
arrives late and switches it out of Land, a flight controller that will neither land nor return.

The built-in autopilot flies in lockstep; the late command is a second client's mode change, made on the
autopilot the moment telemetry shows the mode the policy asked for, as a retried MAVSDK command would.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import pytest

from bridges.lockstep_vehicle import LockstepVehicle
from hil.stop import FlightPhase, Interrupts, SafeEnd, make_safe
from profiles.library import load_vehicle_profile
from px4.modes import FlightMode
from px4.sim.autopilot import Autopilot


@contextlib.asynccontextmanager
async def airborne():
    async with LockstepVehicle(Autopilot(load_vehicle_profile("default"))) as vehicle:
        await vehicle.wait_armable()
        await vehicle.arm()
        await vehicle.takeoff(5.0)
        yield vehicle


@contextlib.asynccontextmanager
async def undoing(vehicle: LockstepVehicle, modes: set[str], times: int):
    """Switch the vehicle to Hold, `times` times, whenever it shows one of `modes`."""
    undone = []

    async def undo() -> None:
        async for state in vehicle.telemetry():
            if state.flight_mode in modes and len(undone) < times:
                undone.append(state.flight_mode)
                vehicle.ap.set_mode(FlightMode.HOLD)

    task = asyncio.create_task(undo())
    try:
        yield undone
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def recorder() -> tuple[list[str], Callable[..., None]]:
    kinds: list[str] = []
    return kinds, lambda kind, **fields: kinds.append(kind)


async def test_a_land_undone_by_a_late_command_is_commanded_again_and_lands():
    async with airborne() as vehicle, undoing(vehicle, {"LAND"}, times=1) as undone:
        kinds, event = recorder()
        stopped = await make_safe(vehicle, event=event)
        assert undone == ["LAND"]
        assert stopped.end is SafeEnd.LANDED and not vehicle.state.armed
        assert kinds == ["landing", "land_reissued"]


async def test_a_vehicle_that_will_not_land_is_returned_and_lands_at_home():
    async with airborne() as vehicle:
        await vehicle.goto(8.0, 0.0, -5.0)
        await vehicle.wait_until(lambda s: abs(s.north - 8.0) < 0.5, 30.0, "away from home")
        async with undoing(vehicle, {"LAND"}, times=100):
            kinds, event = recorder()
            stopped = await make_safe(vehicle, event=event)
        assert kinds == ["landing", "land_reissued", "return_commanded"]
        assert stopped.end is SafeEnd.LANDED and stopped.detail == "returned and landed"
        assert abs(vehicle.state.north) < 1.0, "Return brought it home before landing"


async def test_a_vehicle_that_will_neither_land_nor_return_is_held_and_the_person_told():
    async with airborne() as vehicle, undoing(vehicle, {"LAND", "RETURN_TO_LAUNCH"}, times=100):
        kinds, event = recorder()
        said: list[str] = []
        stopped = await make_safe(vehicle, said.append, event)
        assert stopped.end is SafeEnd.HOLDING and not stopped.end.safe
        assert kinds[-2:] == ["return_commanded", "hold_commanded"]
        assert vehicle.state.armed and vehicle.state.flight_mode == "HOLD"
        assert "ARMED in the air" in said[-1] and "Take over" in said[-1]


async def test_a_disarmed_vehicle_gets_no_command():
    async with LockstepVehicle(Autopilot(load_vehicle_profile("default"))) as vehicle:
        await vehicle.wait_armable()
        kinds, event = recorder()
        stopped = await make_safe(vehicle, event=event)
        assert stopped.end is SafeEnd.LANDED and kinds == []


async def test_a_crash_in_a_flight_lands_the_vehicle_before_the_error_goes_on(tmp_path, monkeypatch):
    """A bug of the harness's own mid-flight (here a flight function that raises once airborne: a stand-in for
    one) is not a reason to leave the vehicle in the air: it lands, then the error goes on."""
    import hil.fly
    from hil.fly import FlightOptions, run_trial
    from hil.safety import SafetyLimits
    from missions.load import load
    from records.record import read_events
    from targets import TargetOptions

    flown = {}

    async def crashing(vehicle, mission, recorder, vehicle_radius=0.0, inject_faults=True, simulator=None):
        flown["vehicle"] = vehicle
        await vehicle.arm()
        await vehicle.takeoff(3.0)
        raise RuntimeError("a bug of the harness's own")

    monkeypatch.setattr(hil.fly, "fly_mission", crashing)
    mission = load("demo_square")
    options = FlightOptions(SafetyLimits.around(mission.to_waypoint_mission()))
    with pytest.raises(RuntimeError, match="a bug"):
        await run_trial("lockstep", TargetOptions(), mission, tmp_path / "r", config={}, options=options)
    assert flown["vehicle"].state.altitude < 0.3 and not flown["vehicle"].state.armed
    assert "landing" in [e["kind"] for e in read_events(tmp_path / "r")]


async def test_a_third_interrupt_made_before_the_first_was_taken_still_lets_go():
    """Three Ctrl-C handled in one turn of a busy harness's loop: asyncio merges a cancellation requested before
    the task has taken the one before, so the flight, taking the first as "land", would never let go."""
    taken: list[str] = []

    async def flight() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError as stop:
            taken.append(stop.args[0])
            asyncio.current_task().uncancel()  # as hil.fly does: the stop policy runs on
        try:
            await asyncio.sleep(60)  # bringing the vehicle down
        except asyncio.CancelledError as stop:
            taken.append(stop.args[0])

    task = asyncio.create_task(flight())
    await asyncio.sleep(0)
    interrupts = Interrupts(task, lambda text: None)
    interrupts.airborne = lambda: "ARMED at 5.0 m in MISSION"
    for _ in range(3):
        interrupts.request("SIGINT")
    await asyncio.wait_for(task, 2.0)
    assert taken == ["SIGINT", "SIGINT"]


@pytest.mark.parametrize("events, phases", [
    # hil fly's mission: uploaded and armed on the ground, started, PX4's own climb, the route, the landing.
    (["connected", "preflight", "mission_uploaded", "armed", "mission_started", "mission_progress",
      "takeoff_complete", "mission_item_reached", "landing"],
     ["checklist", "arming", "arming", "mission start", "takeoff", "takeoff", "mid-mission", "mid-mission",
      "landing"]),
    # An offboard route: the harness's takeoff, then its setpoints.
    (["connected", "preflight", "armed", "takeoff_complete", "offboard_started", "waypoint_reached", "landing"],
     ["checklist", "arming", "takeoff", "mission start", "mid-mission", "mid-mission", "landing"]),
    # A campaign's navigation trial.
    (["connected", "armed", "at_start", "navigation_started", "landing"],
     ["checklist", "takeoff", "mission start", "mid-mission", "landing"]),
], ids=["mission", "offboard", "navigation"])
def test_the_phase_follows_the_flights_own_events(events, phases):
    phase = FlightPhase()
    assert phase.current == "connecting"
    seen = []
    for kind in events:
        phase(kind, {})
        seen.append(phase.current)
    assert seen == phases
