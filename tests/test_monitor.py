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
