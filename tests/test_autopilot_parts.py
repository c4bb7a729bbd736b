"""The built-in autopilot's parts exchange data, not private names (issue 35): the navigator and the failsafe
checks read the vehicle's public state and return what they decided (triplets, texts and mode requests;
failsafe actions) for the commander to apply; no module of the autopilot reaches into another object's
`_name`s, and those parts not even into their vehicle's. Also the landing timings measured on PX4 v1.16.1."""

from __future__ import annotations

import ast
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from pymavlink.dialects.v20 import common as mavlink

from missions.geo import GeoOrigin
from physics.faults import VehicleFaults
from profiles.library import load_vehicle_profile
from px4.modes import FlightMode
from px4.params import ParamStore
from px4.sim.autopilot import Autopilot
from px4.sim.control import TrajectorySetpoint
from px4.sim.failsafe_checks import Act, FailsafeChecks
from px4.sim.flight_task import Kind
from px4.sim.manual import ManualControl
from px4.sim.mission_items import MissionItem
from px4.sim.mission_navigator import HoldAt, Navigator, Say, Switch

SIM = Path(__file__).resolve().parent.parent / "px4" / "sim"
AUTOPILOT_FILES = ("autopilot.py", "mission_navigator.py", "auto_modes.py", "landing.py", "takeoff.py", "orbit.py", "manual.py",
                   "flight_task.py", "navigator.py", "failsafe.py", "failsafe_checks.py", "battery.py")
# Parts that are objects of their own, without helper classes: they touch no private name but their own.
PARTS = ("failsafe_checks.py", "failsafe.py", "mission_navigator.py", "landing.py", "auto_modes.py", "flight_task.py",
         "orbit.py", "manual.py")


def _private_reads(path: Path, own_only: bool) -> list[str]:
    """`x._name` on anything but `self` where `_name` is not one this module gives its own objects (a
    module's helper classes may share their internals, another module's may not); with `own_only`, every
    `x._name` on anything but `self`. Dunder names are Python's, not a part's."""
    tree = ast.parse(path.read_text(), str(path))
    own = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
           and isinstance(node.value, ast.Name) and node.value.id == "self"}
    own |= {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        if node.attr in own and not own_only:
            continue
        found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_part_reads_another_objects_private_names():
    found = [hit for name in AUTOPILOT_FILES for hit in _private_reads(SIM / name, own_only=False)]
    assert not found, "\n".join(found)


def test_the_parts_of_their_own_read_only_their_own_private_names():
    found = [hit for name in PARTS for hit in _private_reads(SIM / name, own_only=True)]
    assert not found, "\n".join(found)


def _status(**changes) -> SimpleNamespace:
    """A vehicle's published state as the failsafe checks read it: flying at 5 m over home in Hold."""
    params = ParamStore(overrides={"GF_MAX_HOR_DIST": 15.0, "GF_ACTION": 3})
    state = dict(time_s=10.0, armed=True, landed=False, mode=FlightMode.HOLD, home=(0.0, 0.0, 0.0), params=params,
                 manual=ManualControl(), faults=VehicleFaults(np.ones(4), np.zeros(3)), gcs_heard_s=None,
                 position=(0.0, 0.0, -5.0), rc_available=False, offboard_signal=False)
    state.update(changes)
    return SimpleNamespace(**state)


def test_the_failsafe_checks_return_actions_and_change_nothing():
    checks = FailsafeChecks()
    assert list(checks.decide(_status())) == [], "inside the fence: nothing to do"
    first = list(checks.decide(_status(time_s=10.02, position=(20.0, 0.0, -5.0))))
    assert [a.act for a in first] == [Act.HOLD]
    assert first[0].text == "Failsafe activated: entering Hold for 5 seconds\n- " \
        "Geofence violation: exceeding maximum distance to Home"
    assert first[0].severity == mavlink.MAV_SEVERITY_CRITICAL
    assert list(checks.decide(_status(time_s=12.0, position=(21.0, 0.0, -5.0)))) == [], "one breach, one failsafe"
    later = list(checks.decide(_status(time_s=15.1, position=(21.0, 0.0, -5.0))))
    assert [a.act for a in later] == [Act.RTL] and later[0].text.startswith("Failsafe activated\n")


def test_the_commander_applies_a_failsafe_action():
    ap = Autopilot(load_vehicle_profile("default"), ParamStore())
    ap.run(0.5)
    assert ap.arm().accepted and ap.takeoff(float("nan")).accepted
    ap.run(10.0)
    offboard_lost = [a for a in FailsafeChecks().decide(_status(mode=FlightMode.OFFBOARD))]
    assert [a.act for a in offboard_lost] == [Act.LAND], "without RC, offboard loss lands"
    for action in offboard_lost:
        ap._apply_failsafe(action)
    assert ap.mode == FlightMode.LAND and ap.failsafe
    assert ap.statustexts[-1][1].startswith("Failsafe activated: switching to Land")


def test_a_landing_is_detected_when_px4_v1_16_1_detects_it():
    """PX4 v1.16.1 SIH's ULog of a LAND from 2.5 m (measured): its range finder reads below its minimum at
    touchdown, the setpoint goes from crawl (0.3 m/s) to MPC_LAND_SPEED and the land detector's stages take
    three times LNDMC_TRIG_TIME / 3: ground contact 1.1 s, maybe landed 2.4 s, landed 3.4 s after the truth's
    touchdown (the built-in detected it 1.4-3.1 s after touchdown before)."""
    ap = Autopilot(load_vehicle_profile("default"), ParamStore())
    ap.run(0.5)
    assert ap.arm().accepted and ap.takeoff(float("nan")).accepted
    ap.run(12.0)
    assert ap.land().accepted
    touchdown = landed = None
    descent_after_touchdown = 0.0
    while ap.armed and ap.time_s < 40.0:
        ap.run(0.02)
        if touchdown is None and ap.dyn.on_ground:
            touchdown = ap.time_s
        if touchdown is not None and landed is None:
            vz = getattr(ap.current_setpoint, "velocity", (0.0, 0.0, math.nan))[2]
            descent_after_touchdown = max(descent_after_touchdown, vz if math.isfinite(vz) else 0.0)
        if ap.landed and landed is None:
            landed = ap.time_s
    assert touchdown is not None and landed is not None
    assert 2.9 <= landed - touchdown <= 3.9, f"landed {landed - touchdown:.2f} s after touchdown"
    assert descent_after_touchdown > ap.params["MPC_LAND_CRWL"] + 0.2, "no crawl without a distance to the ground"
    assert ap.distance_valid, "EKF2 takes the range up again once landed"
    assert any(text == "Landing detected" for _, text in ap.statustexts)


def test_an_offboard_descent_onto_the_ground_is_detected_as_late_as_on_px4():
    """PX4 v1.16.1 detects the landing of an offboard descent at 1 m/s 2.5-3 s after touchdown (the conformance
    suite's offboard_velocity_ned case); the built-in took ~1.5 s when its stages ignored the range finder."""
    nan = math.nan
    ap = Autopilot(load_vehicle_profile("default"), ParamStore())
    ap.run(0.5)
    assert ap.arm().accepted and ap.takeoff(nan).accepted
    ap.run(12.0)
    down = TrajectorySetpoint((nan,) * 3, (0.0, 0.0, 1.0), (nan,) * 3, 0.0, nan)
    ap.offboard_setpoint(down)
    assert ap.set_mode(FlightMode.OFFBOARD).accepted
    touchdown = landed = None
    while landed is None and ap.time_s < 40.0:
        ap.offboard_setpoint(down)
        ap.run(0.02)
        touchdown = ap.time_s if touchdown is None and ap.dyn.on_ground else touchdown
        landed = ap.time_s if ap.landed else None
    assert touchdown is not None and landed is not None
    assert 2.5 <= landed - touchdown <= 3.6, f"landed {landed - touchdown:.2f} s after touchdown"


def _nav_status(position: tuple[float, float, float], landed: bool = False, time_s: float = 0.0) -> SimpleNamespace:
    """The vehicle's published state as the navigator reads it."""
    params = ParamStore()
    return SimpleNamespace(time_s=time_s, armed=True, landed=landed, home=(0.0, 0.0, 0.0), params=params,
                           origin=GeoOrigin(params["SIH_LOC_LAT0"], params["SIH_LOC_LON0"], params["SIH_LOC_H0"]),
                           dyn=SimpleNamespace(pos=position, yaw=0.0), position=position)


def test_the_navigator_turns_the_mission_into_triplets_and_asks_the_commander_for_the_rest():
    local = mavlink.MAV_FRAME_LOCAL_NED
    nav = Navigator()
    nav.load([MissionItem(seq=0, frame=local, command=mavlink.MAV_CMD_NAV_TAKEOFF, z=-5.0),
              MissionItem(seq=1, frame=local, command=mavlink.MAV_CMD_NAV_WAYPOINT, x=int(10.0 * 1e4), z=-5.0),
              MissionItem(seq=2, frame=mavlink.MAV_FRAME_MISSION, command=mavlink.MAV_CMD_NAV_RETURN_TO_LAUNCH)])
    assert not nav.mission_valid, "checked on the next cycle, as PX4's navigator does"
    nav.cycle()
    assert nav.mission_valid
    events = nav.activate(FlightMode.MISSION, _nav_status((0.0, 0.0, 0.0), landed=True), FlightMode.HOLD)
    assert events == (Say("Executing Mission"), Say("Climb to 5.0 meters above home"))
    assert nav.triplet.kind == Kind.TAKEOFF and nav.triplet.current == (0.0, 0.0, -5.0)
    assert nav.update(FlightMode.MISSION, _nav_status((0.0, 0.0, -4.9))) == ()
    assert nav.seq_reached == 0 and nav.triplet.kind == Kind.POSITION
    assert nav.triplet.current == pytest.approx((10.0, 0.0, -5.0)) and nav.triplet.previous == (0.0, 0.0, -5.0)
    assert nav.update(FlightMode.MISSION, _nav_status((5.0, 0.0, -5.0))) == (), "on the way"
    events = nav.update(FlightMode.MISSION, _nav_status((10.0, 0.0, -5.0)))
    assert events[0] == Say("Returning to launch") and events[-1] == Switch(FlightMode.RTL)
    assert isinstance(events[1], HoldAt), "the commander holds at the last item until it switches"
    assert nav.mission_finished and list(nav.reached_items) == [0, 1, 2]
    said = nav.activate(FlightMode.RTL, _nav_status((10.0, 0.0, -5.0)), FlightMode.HOLD)
    assert said[0].text.startswith("RTL: start return at") and nav.triplet.kind == Kind.POSITION
