"""A Vehicle's params_changed: parameters set for a block, restored however it ends, journaled on the way.

The vehicle here is a parameter table behind the Vehicle parameter API (VehicleBase), standing in
for what no real flight controller does on demand: a link that drops during one restore.
"""

import asyncio

import pytest

from bridges.vehicle import VehicleBase
from profiles.library import load_vehicle_profile
from px4.limits import CAP_PARAMS, cap_plan
from px4.params import ParamStore

DEFAULTS = ParamStore().as_dict()
STRONG, WEAK = load_vehicle_profile("0.75kg-Quadrotor-2"), load_vehicle_profile("2.00kg-T-MOTOR")


class ParamVehicle(VehicleBase):
    """Just a parameter table behind the Vehicle parameter API; `fail_on` makes one set fail once."""

    url = "fake://params"

    def __init__(self, fail_on: str | None = None):
        super().__init__()
        self.params = dict(DEFAULTS)
        self.fail_on = fail_on
        self.round_trips = 0

    async def get_param(self, name):
        self.round_trips += 1
        return self.params[name]

    async def set_param(self, name, value):
        self.round_trips += 1
        if name == self.fail_on:
            self.fail_on = None
            raise RuntimeError(f"{name}: link lost")
        self.params[name] = value


class Journal:
    """In memory, with the interface of hil.param_journal.ParamJournal."""

    def __init__(self):
        self.held = {}

    def record(self, name, original):
        self.held.setdefault(name, original)

    def forget(self, name):
        self.held.pop(name, None)


async def test_caps_are_set_for_a_block_then_restored_and_journaled():
    vehicle, journal = ParamVehicle(), Journal()
    vehicle.journal = journal
    plan = cap_plan(WEAK, STRONG, {name: await vehicle.get_param(name) for name in CAP_PARAMS})
    async with vehicle.params_changed(plan.params) as originals:
        assert vehicle.params["MPC_THR_MAX"] == pytest.approx(1 / 3)
        assert journal.held == originals == {name: DEFAULTS[name] for name in plan.params}
    assert vehicle.params == DEFAULTS and journal.held == {}


async def test_caps_are_restored_after_an_error_and_on_cancellation():
    vehicle = ParamVehicle()
    plan = cap_plan(WEAK, STRONG, DEFAULTS)
    with pytest.raises(ZeroDivisionError):
        async with vehicle.params_changed(plan.params):
            1 / 0
    assert vehicle.params == DEFAULTS

    async def trial():
        async with vehicle.params_changed(plan.params):
            await asyncio.sleep(10)

    task = asyncio.create_task(trial())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert vehicle.params == DEFAULTS


async def test_journal_keeps_originals_when_the_restore_fails():
    vehicle, journal = ParamVehicle(), Journal()
    vehicle.journal = journal
    plan = cap_plan(WEAK, STRONG, DEFAULTS)
    with pytest.raises(RuntimeError, match="link lost"):
        async with vehicle.params_changed(plan.params):
            vehicle.fail_on = "MPC_THR_MAX"  # the restore of MPC_THR_MAX will fail
    assert journal.held == {"MPC_THR_MAX": 1.0}  # the others were restored


async def test_a_block_inside_one_holding_the_same_value_changes_nothing_and_a_different_value_stays_journaled():
    vehicle, journal = ParamVehicle(), Journal()
    vehicle.journal = journal
    original = DEFAULTS["MIS_TAKEOFF_ALT"]
    async with vehicle.params_changed({"MIS_TAKEOFF_ALT": 7.0}):
        trips = vehicle.round_trips
        # What a takeoff right after arming does: no round trip may stand between the arming and the takeoff.
        async with vehicle.params_changed({"MIS_TAKEOFF_ALT": 7.0}) as originals:
            assert originals == {} and vehicle.round_trips == trips
        assert vehicle.params["MIS_TAKEOFF_ALT"] == 7.0  # the inner block put nothing back
        async with vehicle.params_changed({"MIS_TAKEOFF_ALT": 3.0}) as originals:
            assert originals == {"MIS_TAKEOFF_ALT": 7.0} and vehicle.params["MIS_TAKEOFF_ALT"] == 3.0
        # Back at the outer block's value, and still journaled with the flight controller's own.
        assert vehicle.params["MIS_TAKEOFF_ALT"] == 7.0 and journal.held == {"MIS_TAKEOFF_ALT": original}
        trips = vehicle.round_trips
        async with vehicle.params_changed({"MIS_TAKEOFF_ALT": 7.0}):
            assert vehicle.round_trips == trips  # the outer block holds 7 again
    assert vehicle.params["MIS_TAKEOFF_ALT"] == original and journal.held == {}
