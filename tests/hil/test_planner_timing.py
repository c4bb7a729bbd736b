"""Planner timing budget: the onboard loop's p99 compute time stays under its bound."""

import pytest

from onboard.planners.straight import StraightLine
from onboard.runtime import run_planner
from onboard.task import NavTask

TASK = NavTask(name="open-field", start=(0.0, 0.0, -4.0), goal=(25.0, 0.0, -4.0),
               bounds_min=(-10.0, -10.0, -10.0), bounds_max=(40.0, 10.0, 0.0))


@pytest.mark.hil(targets=["sim", "lockstep", "px4-sitl"])
async def test_planner_p99_compute_time_within_budget(hil_vehicle, hil_recorder, hil_expect):
    await hil_vehicle.arm()
    await hil_vehicle.takeoff(4.0)
    result = await run_planner(hil_vehicle, StraightLine(), TASK, rate_hz=10.0, recorder=hil_recorder)
    assert result.reason == "done" and result.cycles > 20
    hil_expect("t_tot_p99_ms", result.timing["total"].p99_ms, le=20.0)
    assert hil_vehicle.state.distance_to(*TASK.goal) < TASK.goal_radius
