"""Flights of the built-in autopilot (no MAVLink, no asyncio) sampled every simulated second: the
vehicle's position, velocity, heading, mode and the setpoint it flies, for a mission (take-off, four
waypoints with corners that climb and descend, a return that lands), a take-off, a reposition, a hold and a LAND, then a take-off,
offboard position and velocity setpoints, an orbit and a LAND.

tests/test_autopilot_flight_sample.py flies them again and compares with tests/autopilot_flight_sample.json,
which this script wrote with the code of its commit: a change made for speed (the compiled trajectory,
issue 34) must fly the same trajectories.

    python tests/autopilot_flight_sample.py   # rewrite tests/autopilot_flight_sample.json (after a change meant to alter flights)
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pymavlink.dialects.v20 import common as mavlink  # noqa: E402

from profiles.library import load_vehicle_profile  # noqa: E402
from px4.modes import FlightMode  # noqa: E402
from px4.params import ParamStore  # noqa: E402
from px4.sim.autopilot import Autopilot  # noqa: E402
from px4.sim.control import TrajectorySetpoint  # noqa: E402
from px4.sim.mission_items import MissionItem  # noqa: E402

FIXTURE = Path(__file__).with_name("autopilot_flight_sample.json")
SAMPLE_S = 1.0


def _sample(ap: Autopilot) -> list:
    sp = ap.current_setpoint
    setpoint = ([*sp.position, *sp.velocity, *sp.acceleration, sp.yaw, sp.yawspeed]
                if isinstance(sp, TrajectorySetpoint) else [])
    # NaN (an uncontrolled axis) as None: JSON has no NaN, and None == None where NaN != NaN.
    return [round(ap.time_s, 6), *ap.dyn.pos, *ap.dyn.vel, ap.dyn.yaw, ap.mode.name, ap.armed,
            [None if math.isnan(x) else x for x in setpoint]]


def _run(ap: Autopilot, seconds: float, samples: list) -> None:
    for _ in range(round(seconds / SAMPLE_S)):
        ap.run(SAMPLE_S)
        samples.append(_sample(ap))


def fly_mission() -> list:
    """Take-off, four waypoints at 6 to 12 m (corners that climb and descend), a return to launch that
    lands; then the take-off, a reposition 30 m away, a hold and a LAND of the lockstep benchmark's flight;
    then offboard and an orbit."""
    ap = Autopilot(load_vehicle_profile("default"), ParamStore())
    samples: list = []
    ap.run(0.5)
    route = [(mavlink.MAV_CMD_NAV_TAKEOFF, 0.0, 0.0, -8.0), (mavlink.MAV_CMD_NAV_WAYPOINT, 25.0, 0.0, -12.0),
             (mavlink.MAV_CMD_NAV_WAYPOINT, 25.0, 15.0, -6.0), (mavlink.MAV_CMD_NAV_WAYPOINT, 0.0, 25.0, -10.0),
             (mavlink.MAV_CMD_NAV_WAYPOINT, 5.0, 5.0, -10.0), (mavlink.MAV_CMD_NAV_RETURN_TO_LAUNCH, 0.0, 0.0, 0.0)]
    items = []
    for seq, (command, north, east, down) in enumerate(route):
        frame = mavlink.MAV_FRAME_MISSION if command == mavlink.MAV_CMD_NAV_RETURN_TO_LAUNCH else mavlink.MAV_FRAME_LOCAL_NED
        items.append(MissionItem(seq=seq, frame=frame, command=command, x=round(north * 1e4), y=round(east * 1e4), z=down))
    ap.set_mission(items)
    ap.run(0.1)
    assert ap.arm().accepted and ap.start_mission().accepted
    while ap.armed and ap.time_s < 200.0:
        _run(ap, SAMPLE_S, samples)
    assert not ap.armed, "the mission did not end in a landing"
    _run(ap, 1.0, samples)
    ap.params.set("MIS_TAKEOFF_ALT", 5.0)
    assert ap.arm().accepted and ap.takeoff(float("nan")).accepted
    _run(ap, 10.0, samples)
    assert ap.reposition(18.0, 24.0, -5.0).accepted
    _run(ap, 20.0, samples)
    assert ap.land().accepted
    while ap.armed and ap.time_s < 400.0:
        _run(ap, SAMPLE_S, samples)
    assert not ap.armed, "the LAND did not end disarmed"
    _run(ap, 1.0, samples)
    assert ap.arm().accepted and ap.takeoff(float("nan")).accepted
    _run(ap, 10.0, samples)
    # Offboard: one setpoint object sent again and again, then another (velocity control at 2 m/s north).
    nan = math.nan
    hold = TrajectorySetpoint((0.0, 0.0, -6.0), (nan, nan, nan), (nan, nan, nan), 0.0, nan)
    north = TrajectorySetpoint((nan, nan, -6.0), (2.0, 0.0, nan), (nan, nan, nan), 0.0, nan)
    ap.offboard_setpoint(hold)
    assert ap.set_mode(FlightMode.OFFBOARD).accepted
    for setpoint in (hold, north):
        for _ in range(round(5.0 / SAMPLE_S)):
            for _ in range(round(SAMPLE_S / 0.05)):
                ap.offboard_setpoint(setpoint)
                ap.run(0.05)
            samples.append(_sample(ap))
    assert ap.orbit(8.0, 3.0, 0.0).accepted
    _run(ap, 15.0, samples)
    assert ap.land().accepted
    while ap.armed and ap.time_s < 600.0:
        _run(ap, SAMPLE_S, samples)
    assert not ap.armed, "the second LAND did not end disarmed"
    return samples


if __name__ == "__main__":
    FIXTURE.write_text(json.dumps({"mission": fly_mission()}) + "\n")
    print(f"wrote {FIXTURE}")
