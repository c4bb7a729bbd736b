"""The trial monitor's verdicts on hand-made telemetry against a hand-made scene."""

from __future__ import annotations

import numpy as np

from bridges.vehicle import VehicleState
from hil.monitor import TrialMonitor
from hil.rules import RULES
from missions.geometry import Cylinders, Scene

SCENE = Scene("test", 0, np.array([0.0, -10.0, -4.0]), np.array([40.0, 10.0, 0.0]),
              start=np.array([2.0, 0.0, -2.0]), goal=np.array([30.0, 0.0, -2.0]),
              cylinders=Cylinders(np.array([[15.0, 3.0, 0.0]]), np.array([[15.0, 3.0, -4.0]]), np.array([0.5])))
HOME = np.array([2.0, 0.0, 0.0])  # the vehicle's home in the scene


def state(t_s: float, north: float, east: float = 0.0, *, armed: bool = True, mode: str = "HOLD") -> VehicleState:
    # Local frame: scene minus home.
    return VehicleState(int(t_s * 1e9), north - HOME[0], east, -2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                        0.0, 0.0, 0.0, armed, armed, mode, "IN_AIR", 100.0)


def monitor(rule: str = "flyingtrust") -> TrialMonitor:
    m = TrialMonitor(SCENE, RULES[rule], vehicle_radius=0.3, offset=HOME)
    m.start(state(0.0, 2.0))
    return m


def test_collision_ends_the_trial():
    m = monitor()
    assert m.update(state(1.0, 10.0)) is None
    verdict = m.update(state(2.0, 15.0, east=2.3))  # 0.2 m from the trunk's surface, radius 0.3
    assert verdict.outcome == "collision" and verdict.t_s == 2.0


def test_flyingtrust_success_needs_the_goal_held_for_the_hold_time():
    m = monitor("flyingtrust")
    assert m.update(state(10.0, 28.5)) is None  # 1.5 m away: inside 2 m, hold starts
    assert m.update(state(11.0, 29.0)) is None
    assert m.update(state(12.0, 29.5)).outcome == "success"


def test_leaving_the_goal_restarts_the_hold():
    m = monitor("flyingtrust")
    m.update(state(10.0, 29.0))
    m.update(state(11.0, 26.0))  # out again
    assert m.update(state(12.5, 29.0)) is None
    assert m.update(state(14.5, 29.0)).outcome == "success"


def test_flightbench_success_is_reaching_within_1_5_m():
    m = monitor("flightbench")
    assert m.update(state(10.0, 28.0)) is None  # 2 m: not within FlightBench's 1.5 m
    assert m.update(state(10.5, 28.6)).outcome == "success"


def test_timeout_and_failsafe():
    m = monitor()
    assert m.update(state(90.5, 20.0)).outcome == "timeout"
    m = monitor()
    assert m.update(state(3.0, 5.0, mode="RETURN_TO_LAUNCH")).outcome == "failsafe"
    m = monitor()
    assert m.update(state(3.0, 5.0, armed=False)).outcome == "failsafe"


def test_the_first_verdict_sticks():
    m = monitor()
    m.update(state(2.0, 15.0, east=2.3))
    assert m.update(state(3.0, 29.9)).outcome == "collision"
    assert m.fail("later error").outcome == "collision"


def test_the_smallest_gap_and_the_collision_are_exact_where_open_space_skips_the_exact_distance():
    """The monitor asks for the exact obstacle distance only where a lower bound cannot rule out a new
    smallest gap or a collision; along a weaving path past the trunk its smallest gap, the moment of the
    collision and the last clearance it reports are those of the exact distance at every sample."""
    m = monitor()
    t = np.arange(0.01, 20.0, 0.01)  # 100 Hz
    north = 2.0 + 0.9 * t
    east = 2.8 * np.sin(t / 3.0) ** 2
    exact = SCENE.distance(np.column_stack([north, east, np.full_like(t, -2.0)]))
    hit = int(np.argmax(exact < 0.3))
    assert exact[hit] < 0.3 and hit > 100  # the path does hit the trunk, after a stretch in the open
    for i in range(hit + 1):
        verdict = m.update(state(t[i], north[i], east[i]))
        assert (verdict is None) == (i < hit)
        assert m.clearance_m == exact[i]
    assert verdict.outcome == "collision" and verdict.t_s == t[hit]
    assert m.min_clearance_m == exact[: hit + 1].min() - 0.3


def test_open_space_skips_the_exact_distance():
    m = monitor()
    SCENE.distance_floor((0.0, 0.0, 0.0))  # the bound's table is built (from exact distances) beforehand
    calls = []
    exact = SCENE.distance
    object.__setattr__(SCENE, "distance", lambda points: calls.append(1) or exact(points))
    try:
        m.update(state(0.5, 12.0, 3.0))  # 0.5 m from the trunk's surface: exact, the smallest gap so far
        for i in range(50):
            m.update(state(1.0 + i / 100, 4.0 + i / 100, -8.0))  # open space, 15 m from the trunk
    finally:
        object.__delattr__(SCENE, "distance")
    assert len(calls) == 1 and m.min_clearance_m == SCENE.distance(np.array([12.0, 3.0, -2.0]))[0] - 0.3
