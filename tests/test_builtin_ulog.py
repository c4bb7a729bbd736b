"""The built-in vehicle's ULog is one Flight Review plots: every topic its multicopter page reads, in PX4
v1.16.1's message formats, with values that follow the flight, and a header that names the built-in vehicle
rather than passing for PX4. A real PX4 v1.16.1 log defines the same topics in the same formats (needs PX4)."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pyulog import ULog

from bridges.lockstep_vehicle import LockstepVehicle
from profiles.library import load_vehicle_profile
from px4.reference.ulog_formats import formats_of
from px4.sim import BUILTIN_AUTOPILOT
from px4.sim.autopilot import Autopilot
from px4.sim.flight_log import FORMATS_FILE, RATES_HZ
from px4.sitl import SitlOptions, px4_sitl
from px4.ulog_writer import flatten

from .px4_builds import MAIN_BUILD, needs_px4

# What Flight Review's log page reads for a multicopter (PX4/flight_review, app/plot_app/configured_plots.py,
# generate_plots: its plots, the GPS map and the flight-mode background), topic by topic, under PX4
# v1.16.1's names where that file still reads older ones: vehicle_gps_position alt/lat/lon are
# altitude_msl_m/latitude_deg/longitude_deg, manual_control_setpoint y/x/r/z are roll/pitch/yaw/throttle.
# Left out: topics PX4 v1.16.1 SITL does not log for a multicopter (actuator_controls_0/1,
# vehicle_angular_acceleration, input_rc, manual_control_switches, tecs_status, airspeed, airspeed_validated,
# vehicle_visual_odometry, sensor_accel_fifo, sensor_gyro_fifo), and fields its formats no longer have
# (estimator_status vibe and innovation_check_flags, battery_status voltage_filtered_v, vehicle_status
# rc_signal_lost). actuator_motors is read by Flight Review's newer pages and logged by PX4 beside actuator_outputs.
XYZ = ["x", "y", "z"]
FLIGHT_REVIEW_MULTICOPTER = {
    "vehicle_local_position": [*XYZ, "vx", "vy", "vz"],
    "vehicle_local_position_setpoint": [*XYZ, "vx", "vy", "vz"],
    "vehicle_local_position_groundtruth": XYZ,
    "vehicle_gps_position": ["altitude_msl_m", "latitude_deg", "longitude_deg", "eph", "epv", "satellites_used",
                             "fix_type", "noise_per_ms", "jamming_indicator"],
    "vehicle_air_data": ["baro_alt_meter"],
    "vehicle_global_position": ["alt", "lat", "lon"],
    "position_setpoint_triplet": ["current.alt", "current.lat", "current.lon"],
    "vehicle_attitude": [f"q[{i}]" for i in range(4)],
    "vehicle_attitude_setpoint": [f"q_d[{i}]" for i in range(4)] + ["yaw_sp_move_rate"],
    "vehicle_attitude_groundtruth": [f"q[{i}]" for i in range(4)],
    "vehicle_angular_velocity": [f"xyz[{i}]" for i in range(3)],
    "vehicle_angular_velocity_groundtruth": [f"xyz[{i}]" for i in range(3)],
    "vehicle_rates_setpoint": ["roll", "pitch", "yaw"],
    "rate_ctrl_status": ["rollspeed_integ", "pitchspeed_integ", "yawspeed_integ"],
    "manual_control_setpoint": ["roll", "pitch", "yaw", "throttle", "aux1", "aux2"],
    "actuator_outputs": ["noutputs"] + [f"output[{i}]" for i in range(16)],
    "actuator_motors": [f"control[{i}]" for i in range(4)],
    "sensor_combined": [f"accelerometer_m_s2[{i}]" for i in range(3)] + [f"gyro_rad[{i}]" for i in range(3)],
    "estimator_status": ["health_flags", "timeout_flags", "time_slip"],
    "vehicle_magnetometer": [f"magnetometer_ga[{i}]" for i in range(3)],
    "distance_sensor": ["current_distance", "variance"],
    "battery_status": ["voltage_v", "current_a", "discharged_mah", "remaining"],
    "system_power": ["voltage5v_v", "sensors3v3[0]"],
    "sensor_baro": ["temperature"],
    "sensor_accel": ["temperature"],
    "vehicle_status": ["nav_state", "arming_state", "is_vtol"],
    "cpuload": ["load", "ram_usage"],
}
ALTITUDE = 3.0
GOAL = (8.0, 0.0, -ALTITUDE)
PX4_HASH = re.compile(r"[0-9a-f]{40}")


@pytest.fixture(scope="module")
def flight(tmp_path_factory) -> tuple[ULog, list]:
    """The built-in vehicle in lockstep, logging as in a trial record: take off to 3 m, fly 8 m north, land;
    its ULog and the telemetry the harness saw."""
    root = tmp_path_factory.mktemp("builtin-ulog")

    async def fly() -> list:
        ap = Autopilot(load_vehicle_profile("default"))
        async with LockstepVehicle(ap, telemetry_hz=50.0, flight_log_root=root) as vehicle:
            seen = []

            async def watch() -> None:
                async for state in vehicle.telemetry():
                    seen.append(state)
            watcher = asyncio.create_task(watch())
            await vehicle.wait_armable(timeout=10.0)
            await vehicle.arm()
            await vehicle.takeoff(ALTITUDE)
            await vehicle.goto(*GOAL)
            await vehicle.wait_until(lambda s: abs(s.north - GOAL[0]) < 0.3, 30.0, "at the goal")
            await vehicle.land()
            await vehicle.wait_until(lambda s: not s.armed, 60.0, "landed and disarmed")
            watcher.cancel()
            return seen

    telemetry = asyncio.run(fly())
    [log] = root.glob("log/*/*.ulg")
    return ULog(str(log)), telemetry


def test_every_topic_flight_review_reads_is_there_in_px4_v1_16_1s_format(flight):
    log, _ = flight
    assert not log.file_corruption
    logged = {d.name: d.data for d in log.data_list if d.multi_id == 0}
    for topic, fields in FLIGHT_REVIEW_MULTICOPTER.items():
        assert topic in logged, f"{topic} is not in the built-in vehicle's log"
        missing = [f for f in fields if f not in logged[topic]]
        assert not missing, f"{topic} lacks {missing}"
    # Field for field as PX4 v1.16.1 defines them (types, arrays, nested position_setpoint, padding).
    reference = json.loads(FORMATS_FILE.read_text())
    assert set(FLIGHT_REVIEW_MULTICOPTER) <= set(reference["topics"])
    assert formats_of(log, sorted(reference["topics"])) == reference


def test_the_values_follow_the_flight(flight):
    log, telemetry = flight

    def topic(name: str) -> dict:
        return log.get_dataset(name).data

    # The estimate is where the harness saw the vehicle (both on the vehicle's clock, in lockstep).
    t = np.array([s.t_ns for s in telemetry]) / 1e3
    position = topic("vehicle_local_position")
    for field, seen in (("x", "north"), ("y", "east"), ("z", "down")):
        logged = np.interp(t, position["timestamp"], position[field])
        assert np.max(np.abs(logged - [getattr(s, seen) for s in telemetry])) < 0.1, field
    assert position["x"].max() > GOAL[0] - 0.5 and position["z"].min() < -ALTITUDE + 0.5
    glob = topic("vehicle_global_position")
    alt = np.interp(t, glob["timestamp"], glob["alt"])
    assert np.max(np.abs(alt - [s.alt_amsl for s in telemetry])) < 0.2
    gps, baro = topic("vehicle_gps_position"), topic("vehicle_air_data")
    assert np.all(gps["fix_type"] == 3) and np.max(np.abs(gps["altitude_msl_m"] - np.interp(
        gps["timestamp"], glob["timestamp"], glob["alt"]))) < 0.3
    assert np.median(np.abs(baro["baro_alt_meter"] - np.interp(baro["timestamp"], glob["timestamp"], glob["alt"]))) < 1.0
    # The battery drains while the motors run: current drawn, discharged amount only growing.
    battery = topic("battery_status")
    assert np.all(np.diff(battery["discharged_mah"]) >= 0) and battery["discharged_mah"][-1] > 10.0
    assert battery["current_a"].max() > 5.0 and np.all(np.diff(battery["remaining"]) <= 0)
    # The motors: PWM between PX4's 1000 and 2000 us while flying, 900 disarmed.
    outputs = topic("actuator_outputs")
    flying = outputs["output[0]"] > 900
    assert flying.any() and np.all((outputs["output[0]"][flying] > 1000) & (outputs["output[0]"][flying] < 2000))
    # Modes as PX4 numbers them: takeoff 17, land 18; armed 2 then disarmed 1.
    status = topic("vehicle_status")
    assert {17, 18} <= set(status["nav_state"]) and list(status["arming_state"][-1:]) == [1]
    assert 2 in status["arming_state"]
    # The takeoff's waypoint is the navigator's triplet, at the height the vehicle climbed to.
    triplet = topic("position_setpoint_triplet")
    takeoff = triplet["current.type"] == 3
    home_alt = glob["alt"][0]
    assert takeoff.any() and np.allclose(triplet["current.alt"][takeoff], home_alt + ALTITUDE, atol=0.3)
    # The accelerometer holds up the weight on average; the process's CPU load is a fraction.
    accel = topic("sensor_combined")["accelerometer_m_s2[2]"]
    assert -10.5 < np.mean(accel) < -9.0 and np.std(accel) > 0.01  # noisy, as a sensor
    load = topic("cpuload")
    assert np.all((load["load"] >= 0) & (load["load"] <= 1)) and np.all(load["ram_usage"] > 0)
    assert topic("estimator_status")["solution_status_flags"][-1] > 0


def test_topics_come_at_their_rates(flight):
    log, _ = flight
    for data in log.data_list:
        stamps = data.data["timestamp"]
        span_s = (stamps[-1] - stamps[0]) / 1e6
        if span_s > 5.0:
            # On-change topics (status, land detector, triplet) come a little more often than their rate.
            assert RATES_HZ[data.name] * 0.95 <= (len(stamps) - 1) / span_s <= RATES_HZ[data.name] * 1.5, data.name


def test_the_header_names_the_built_in_vehicle_not_px4s_release(flight):
    log, _ = flight
    info = log.msg_info_dict
    assert info["sys_name"] == BUILTIN_AUTOPILOT and "built-in" in info["sys_name"] and "v1.16.1" in info["sys_name"]
    assert not PX4_HASH.fullmatch(info["ver_sw"]), "no PX4 commit: the log must not pass for PX4's own build"
    release = info["ver_sw_release"]
    assert release >> 8 == (1 << 16) | (16 << 8) | 1, "the release it imitates, 1.16.1"
    assert release & 0xFF != 0xFF, "not typed as PX4's official release"


def test_what_a_person_reads_names_the_built_in_vehicle():
    result = subprocess.run([sys.executable, "-m", "hil", "sim", "--help"], capture_output=True, text=True, check=True,
                            env={"PATH": "/usr/bin:/bin", "COLUMNS": "400"}, cwd=Path(__file__).resolve().parents[1])
    assert BUILTIN_AUTOPILOT in result.stdout and "1.14" not in result.stdout


@needs_px4
def test_px4_v1_16_1_logs_the_same_topics_in_the_same_formats(tmp_path):
    """PX4 writes every topic's format when its log starts (SDLOG_MODE 1: at boot), so a short run suffices."""

    async def run() -> None:
        async with px4_sitl(SitlOptions(speed=4.0, px4_dir=MAIN_BUILD), keep_in=tmp_path) as sitl:
            while not sitl.ulogs():
                await asyncio.sleep(0.2)
            await asyncio.sleep(1.0)

    asyncio.run(run())
    [path] = (tmp_path / "ulog").glob("*.ulg")
    log = ULog(str(path), ["cpuload"])  # formats are read whole; data of one topic is enough
    if log.msg_info_dict.get("ver_sw_release", 0) >> 8 != (1 << 16) | (16 << 8) | 1:
        pytest.skip(f"PX4_DIR is not v1.16.1 (ver_sw_release {log.msg_info_dict.get('ver_sw_release')})")
    reference = json.loads(FORMATS_FILE.read_text())
    assert formats_of(log, sorted(reference["topics"])) == reference
    for topic, fields in FLIGHT_REVIEW_MULTICOPTER.items():
        px4 = formats_of(log, [topic])
        nested = {name: [tuple(f) for f in spec] for name, spec in px4["formats"].items()}
        names = [name for _, name in flatten([tuple(f) for f in px4["topics"][topic]], nested)]
        assert set(fields) <= set(names), f"PX4's {topic} lacks {set(fields) - set(names)}"
