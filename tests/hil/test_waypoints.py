"""Waypoint accuracy: a mission through four corners, flown by the autopilot."""

import pytest

MISSION = "demo_square"  # a mission shipped with quad-hil, by name; a path to your own file works too


@pytest.mark.hil
async def test_waypoint_mission_accuracy(hil_vehicle, hil_mission, hil_expect):
    outcome, reason, summary = await hil_mission(MISSION)
    assert outcome == "success", reason
    hil_expect("max_tracking_error_m", summary.max_tracking_error_m, le=3.0)
    # The goal is the touchdown point below the last corner; PX4 lands where it is once inside the
    # mission's 1 m acceptance radius.
    hil_expect("final_distance_to_goal_m", summary.final_distance_to_goal_m, le=1.5)
    hil_expect("duration_s", summary.duration_s, le=60.0)
