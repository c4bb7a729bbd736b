"""Flight behaviour of the built-in vehicle where PX4 v1.16.1 SIH was measured (issue 11).

Against real built-in vehicle processes over MAVLink (MAVSDK 4 or pymavlink), and where it is
cheap the same assertion against PX4 v1.16.1 SITL:

* Position mode holds its altitude while the roll and pitch sticks move with the throttle centred
  (MAVSDK's manual_control example);
* a mission started right after its upload: PX4 v1.16.1 acknowledges a start that comes before its
  navigator has checked the upload but stays in its mode; a MAVSDK client through the harness ends
  up flying the mission on both;
* HIGHRES_IMU and ATTITUDE carry PX4 SIH's sensor noise, not exact values;
* Orbit (MAV_CMD_DO_ORBIT) as PX4 v1.16.1 flies it (measured: 5 m radius, 2 m/s commanded, ~1.4 m/s
  flown, nose to the centre);
* GPS lost (MAV_CMD_INJECT_FAILURE): PX4 v1.16.1 SIH does not simulate it (the command is never
  answered), so the built-in vehicle does what PX4's estimator and commander do when the GPS really
  stops: "GNSS data fusion stopped", dead reckoning for EKF2_NOAID_TOUT, then the position-loss
  failsafe descends.
"""

from __future__ import annotations

import contextlib
import math
import statistics

import pytest
from mavsdk.asyncio.plugins.manual_control import ManualControlAsync
from pymavlink.dialects.v20 import common as mavlink

from bridges.mavsdk_vehicle import connect
from bridges.vehicle import MissionWaypoint, VehicleError
from targets.builtin import SimProcessOptions, builtin_vehicle
from profiles.library import load_vehicle_profile
from px4.modes import FlightMode
from px4.params import ParamStore
from px4.sim.autopilot import Autopilot
from px4.sim.mission_items import MissionItem
from px4.sitl import SitlOptions, px4_sitl

from .conftest import SPEED
from .px4_builds import MAIN_BUILD, needs_px4

TARGETS = [pytest.param("builtin", id="builtin"), pytest.param("px4-sitl", id="px4-sitl", marks=needs_px4)]


@contextlib.asynccontextmanager
async def flying_vehicle(target: str, altitude: float = 5.0):
    """A vehicle of `target` at SPEED, taken off to `altitude` and holding."""
    process = (builtin_vehicle(SimProcessOptions(speed=SPEED)) if target == "builtin"
               else px4_sitl(SitlOptions(speed=SPEED, px4_dir=MAIN_BUILD)))
    async with process as running:
        vehicle = await connect(running.url, timeout=30.0, speed_factor=SPEED)
        try:
            await vehicle.wait_armable(60.0)
            await vehicle.arm()
            with contextlib.suppress(VehicleError):  # PX4's height estimate may sit off the harness's settle
                await vehicle.takeoff(altitude, timeout=30.0)
            yield vehicle
        finally:
            await vehicle.close()


@pytest.mark.parametrize("target", TARGETS)
async def test_position_mode_holds_altitude_while_the_sticks_fly_the_vehicle(target):
    async with flying_vehicle(target) as vehicle:
        sticks = ManualControlAsync(vehicle.system)
        for _ in range(10):  # as MAVSDK's manual_control example: inputs first, then the mode
            await sticks.set_manual_control_input(0.0, 0.0, 0.5, 0.0)
            await vehicle.sleep(0.05)
        await sticks.start_position_control()
        start = vehicle.state
        altitudes = []
        for step in range(120):  # 6 s of pitch and roll, throttle centred
            await sticks.set_manual_control_input(0.5, 0.3 if step < 60 else -0.3, 0.5, 0.0)
            await vehicle.sleep(0.05)
            altitudes.append(vehicle.state.altitude)
        moved = math.hypot(vehicle.state.north - start.north, vehicle.state.east - start.east)
        assert moved > 5.0, "the sticks flew the vehicle"
        assert max(abs(a - start.altitude) for a in altitudes) < 0.8, \
            f"altitude {start.altitude:.2f} m went {min(altitudes):.2f}..{max(altitudes):.2f} m"


@pytest.mark.parametrize("target", TARGETS)
async def test_a_mission_started_right_after_its_upload_is_flown(target):
    async with flying_vehicle(target) as vehicle:
        s = vehicle.state
        await vehicle.upload_mission([MissionWaypoint(s.north + 10.0, s.east, -5.0, acceptance_radius=2.0),
                                      MissionWaypoint(s.north + 10.0, s.east + 10.0, -5.0, acceptance_radius=2.0)])
        await vehicle.start_mission()  # at once: repeated until the vehicle flies it
        assert vehicle.state.flight_mode == "MISSION"


def test_a_start_before_the_navigator_checked_the_upload_is_acknowledged_but_not_flown():
    ap = Autopilot(load_vehicle_profile("default"), ParamStore())
    ap.run(0.5)
    assert ap.arm().accepted
    mission = [MissionItem(seq=i, frame=mavlink.MAV_FRAME_LOCAL_NED, command=mavlink.MAV_CMD_NAV_WAYPOINT,
                           x=int(n * 1e4), y=0, z=-5.0) for i, n in enumerate((5.0, 10.0))]
    ap.set_mission(mission)
    assert ap.start_mission().accepted and ap.mode == FlightMode.HOLD, "PX4 v1.16.1: ACCEPTED, stays in Hold"
    assert ap.set_mode(FlightMode.MISSION).result == mavlink.MAV_RESULT_TEMPORARILY_REJECTED
    ap.run(0.02)  # the navigator's next cycle checks the upload
    assert ap.start_mission().accepted and ap.mode == FlightMode.MISSION
    # Uploaded again (identical) and started at once: the previous check stands, as in PX4.
    ap.set_mission(mission)
    ap.set_mode(FlightMode.HOLD)
    assert ap.start_mission().accepted and ap.mode == FlightMode.MISSION


async def test_sensors_report_px4_sih_noise_not_exact_values(client):
    imu = [client.recv("HIGHRES_IMU", 2.0) for _ in range(60)]
    att = [client.recv("ATTITUDE", 2.0) for _ in range(60)]
    assert None not in imu and None not in att
    for field, low, high in (("xgyro", 0.003, 0.015), ("zgyro", 0.003, 0.015), ("xacc", 0.03, 0.15),
                             ("zacc", 0.03, 0.15)):
        spread = statistics.pstdev(getattr(m, field) for m in imu)
        assert low < spread < high, f"{field}: {spread:.4f} (PX4 v1.16.1 SIH at rest: gyro 0.007, accel 0.07)"
    assert statistics.fmean(m.zacc for m in imu) == pytest.approx(-9.81, abs=0.05)
    for field, low, high in (("roll", 0.0005, 0.005), ("yaw", 0.0005, 0.005), ("rollspeed", 0.002, 0.015)):
        spread = statistics.pstdev(getattr(m, field) for m in att)
        assert low < spread < high, f"{field}: {spread:.4f} (PX4 v1.16.1 SIH at rest: 0.002 rad, 0.006 rad/s)"


async def test_orbit_circles_the_point_where_it_was_commanded_nose_to_the_centre(client):
    client.wait_armable()
    assert client.command(mavlink.MAV_CMD_DO_ORBIT, 5.0, 2.0) == mavlink.MAV_RESULT_TEMPORARILY_REJECTED, \
        "refused on the ground"
    assert client.command(mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 1) == mavlink.MAV_RESULT_ACCEPTED
    nan = float("nan")
    assert client.command(mavlink.MAV_CMD_NAV_TAKEOFF, 0, 0, 0, nan, nan, nan, nan) == mavlink.MAV_RESULT_ACCEPTED
    assert client.wait_mode(FlightMode.HOLD, 20.0 / SPEED + 3)
    centre = client.recv("LOCAL_POSITION_NED", 1.0)
    assert client.command(mavlink.MAV_CMD_DO_ORBIT, 5.0, 2.0, nan, nan, nan, nan, nan) == mavlink.MAV_RESULT_ACCEPTED
    hb = client.recv("HEARTBEAT", 2.0, lambda m: m.custom_mode == FlightMode.ORBIT.custom_mode)
    assert hb is not None, "Position mode, Orbit sub-mode (custom mode 0x01030000), as PX4 reports it"
    client.recv("NONE", 12.0 / SPEED)  # out onto the circle
    radii, speeds, nose = [], [], []
    for _ in range(40):
        pos = client.recv("LOCAL_POSITION_NED", 1.0)
        att = client.recv("ATTITUDE", 1.0)
        radii.append(math.hypot(pos.x - centre.x, pos.y - centre.y))
        speeds.append(math.hypot(pos.vx, pos.vy))
        to_centre = math.atan2(centre.y - pos.y, centre.x - pos.x)
        nose.append(abs(math.remainder(att.yaw - to_centre, math.tau)))
    # PX4 v1.16.1 SIH: radius 5.2-5.5 m, 1.3-1.5 m/s flown for 2 m/s commanded (no drag model).
    assert 4.5 < statistics.fmean(radii) < 6.0
    assert 1.1 < statistics.fmean(speeds) < 2.1
    assert max(nose) < math.radians(15.0)
    assert abs(-pos.z - (-centre.z)) < 0.5, "at the altitude it had"


async def test_losing_gps_in_flight_warns_then_descends_when_the_position_estimate_is_gone(client):
    client.wait_armable()
    assert client.command(mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 1) == mavlink.MAV_RESULT_ACCEPTED
    nan = float("nan")
    assert client.command(mavlink.MAV_CMD_NAV_TAKEOFF, 0, 0, 0, nan, nan, nan, nan) == mavlink.MAV_RESULT_ACCEPTED
    assert client.wait_mode(FlightMode.HOLD, 20.0 / SPEED + 3)
    assert client.command(mavlink.MAV_CMD_INJECT_FAILURE, mavlink.FAILURE_UNIT_SENSOR_GPS,
                          mavlink.FAILURE_TYPE_OFF) == mavlink.MAV_RESULT_ACCEPTED
    lost = client.recv("GPS_RAW_INT", 2.0, lambda m: m.fix_type < mavlink.GPS_FIX_TYPE_3D_FIX)
    assert lost is not None
    warned = client.recv("STATUSTEXT", 3.0 / SPEED + 1, lambda m: "GNSS data fusion stopped" in m.text)
    assert warned is not None and warned.severity == mavlink.MAV_SEVERITY_WARNING
    # EKF2_NOAID_TOUT (5 s) of dead reckoning, then PX4's position-loss failsafe: Descend (reported as Land).
    failsafe = client.recv("STATUSTEXT", 8.0 / SPEED + 1, lambda m: "Failsafe" in m.text)
    assert failsafe is not None and failsafe.severity == mavlink.MAV_SEVERITY_CRITICAL
    assert client.wait_mode(FlightMode.LAND, 2.0)
    assert client.set_mode(FlightMode.HOLD) == mavlink.MAV_RESULT_TEMPORARILY_REJECTED, "Hold needs a position"
    assert client.recv("HEARTBEAT", 30.0 / SPEED + 3,
                       lambda m: not m.base_mode & mavlink.MAV_MODE_FLAG_SAFETY_ARMED) is not None
