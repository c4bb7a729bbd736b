"""The built-in vehicle's pilot side and geofence, as PX4 does them (stepped in-process, fast)."""

from __future__ import annotations

import math

import pytest
from pymavlink.dialects.v20 import common as mavlink

from profiles.library import load_vehicle_profile
from px4.modes import FlightMode
from px4.params import ParamStore
from px4.sim.autopilot import Autopilot

CENTRED = (0.0, 0.0, 0.5, 0.0)


def hovering(**params) -> Autopilot:
    ap = Autopilot(load_vehicle_profile("default"), ParamStore(overrides=params))
    ap.run(0.5)
    assert ap.arm().accepted
    ap.takeoff(ap.origin.alt_m + 5.0)
    # Until the takeoff is complete (Hold), as PX4 v1.16.1 SIH takes 8-9 s to 4.5 m, then settled.
    for _ in range(200):
        if ap.mode == FlightMode.HOLD:
            break
        ap.run(0.1)
    assert ap.mode == FlightMode.HOLD, f"still in {ap.mode.name} 20 s after the takeoff command"
    ap.run(2.0)
    return ap


def fly_sticks(ap: Autopilot, sticks, seconds: float) -> None:
    for _ in range(int(seconds / 0.05)):
        ap.manual_input(*sticks)
        ap.run(0.05)


def test_position_mode_needs_rc_and_flies_the_sticks():
    ap = hovering()
    # PX4 v1.16 acknowledges Position without RC in the air, stays where it is and says why.
    assert ap.set_mode(FlightMode.POSCTL).accepted and ap.mode == FlightMode.HOLD, "no RC yet"
    assert any("Switching to Position is currently not available" in text for _, text in ap.statustexts)
    ap.manual_input(*CENTRED)
    assert ap.set_mode(FlightMode.POSCTL).accepted
    fly_sticks(ap, (1.0, 0.0, 0.5, 0.0), 3.0)  # full pitch forward: north at up to MPC_VEL_MANUAL
    assert ap.dyn.vel[0] > 5.0 and abs(ap.dyn.vel[1]) < 0.5
    # Braking leaves PX4's velocity integrator holding the drag of the fast flight: the vehicle
    # creeps on for seconds until it has unwound (PX4 v1.16.1 SIH after an offboard stop: still
    # 0.3-0.45 m/s 3-5 s later, benchmarks/fidelity.py), then holds.
    fly_sticks(ap, CENTRED, 10.0)
    held = ap.position
    fly_sticks(ap, CENTRED, 3.0)
    assert math.dist(held, ap.position) < 0.3, "centred sticks hold the position"
    assert abs(-ap.dyn.pos[2] - 5.0) < 0.5


def test_moving_the_sticks_takes_over_from_an_auto_mode():
    ap = hovering()
    ap.reposition(40.0, 0.0, -5.0)
    fly_sticks(ap, CENTRED, 1.0)
    assert ap.mode == FlightMode.HOLD, "centred sticks do not take over"
    fly_sticks(ap, (0.0, 0.5, 0.5, 0.0), 0.2)
    assert ap.mode == FlightMode.POSCTL
    assert any("took over" in text for _, text in ap.statustexts)


def test_sticks_do_not_take_over_offboard_unless_configured():
    from px4.sim.control import TrajectorySetpoint
    nan = float("nan")
    for override, expected in ((1, FlightMode.OFFBOARD), (3, FlightMode.POSCTL)):
        ap = hovering(COM_RC_OVERRIDE=override)
        sp = TrajectorySetpoint((0.0, 0.0, -5.0), (nan,) * 3, (nan,) * 3, 0.0, nan)
        ap.offboard_setpoint(sp)
        assert ap.set_mode(FlightMode.OFFBOARD).accepted
        for _ in range(10):
            ap.offboard_setpoint(sp)
            ap.manual_input(0.0, -0.8, 0.5, 0.0)
            ap.run(0.05)
        assert ap.mode == expected, f"COM_RC_OVERRIDE={override}"


@pytest.mark.parametrize("lose", ["silence", "fault"])
def test_losing_rc_in_position_mode_holds_then_returns_home(lose):
    ap = hovering()
    ap.manual_input(*CENTRED)
    assert ap.set_mode(FlightMode.POSCTL).accepted
    if lose == "fault":
        result = ap.faults.inject_failure(mavlink.FAILURE_UNIT_SYSTEM_RC_SIGNAL, mavlink.FAILURE_TYPE_OFF, 0, enabled=True)
        assert result.result == mavlink.MAV_RESULT_ACCEPTED
        fly_sticks(ap, CENTRED, 1.0)  # the sticks keep coming, but RC counts as lost
    else:
        ap.run(1.0)
    # PX4's failsafe framework: Hold for COM_FAIL_ACT_T (5 s), then NAV_RCL_ACT (2: Return).
    assert ap.mode == FlightMode.HOLD and ap.failsafe
    # PX4 v1.16.1's STATUSTEXT, measured (RC lost in Position mode, NAV_RCL_ACT 2): the action follows as its event.
    assert any(text == "Failsafe activated: entering Hold for 5 seconds" for _, text in ap.statustexts)
    ap.run(5.0)
    assert ap.mode == FlightMode.RTL


@pytest.mark.parametrize("action, mode", [(2, FlightMode.HOLD), (3, FlightMode.RTL), (5, FlightMode.LAND)])
def test_the_flight_controllers_geofence_holds_then_acts_once_per_breach(action, mode):
    from px4.sim.control import TrajectorySetpoint

    nan = float("nan")
    ap = hovering(GF_MAX_HOR_DIST=15.0, GF_MAX_VER_DIST=30.0, GF_ACTION=action)
    north = TrajectorySetpoint((nan, nan, -5.0), (3.0, 0.0, nan), (nan,) * 3, 0.0, nan)
    ap.offboard_setpoint(north)
    assert ap.set_mode(FlightMode.OFFBOARD).accepted
    for _ in range(200):  # offboard north at 3 m/s until the fence acts
        ap.offboard_setpoint(north)
        ap.run(0.1)
        if ap.mode != FlightMode.OFFBOARD:
            break
    assert ap.mode == FlightMode.HOLD, "the breach holds first"
    assert 15.0 <= math.hypot(*ap.position[:2]) < 20.0, "stopped soon after crossing the fence"
    ap.run(5.5)  # COM_FAIL_ACT_T
    assert ap.mode == mode
    # One breach, one failsafe: its announcement (and, after the hold, the action's) name the fence.
    said = [text for _, text in ap.statustexts if "Geofence violation" in text]
    assert len(said) == (1 if action == 2 else 2), said


def test_a_reposition_outside_the_fence_is_not_flown():
    ap = hovering(GF_MAX_HOR_DIST=15.0, GF_ACTION=3)
    start = ap.position
    assert ap.reposition(40.0, 0.0, -5.0).accepted  # PX4 acknowledges it and stays
    ap.run(3.0)
    assert ap.mode == FlightMode.HOLD and math.dist(start, ap.position) < 0.5
    assert any(text == "Reposition is outside geofence" for _, text in ap.statustexts)
