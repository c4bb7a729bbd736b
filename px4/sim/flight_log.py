"""The built-in vehicle's flight logs: a ULog of its own states per flight, kept as PX4 keeps them.

PX4 logs from arming to disarming by default (SDLOG_MODE 0); its SITL start-up script sets
SDLOG_MODE 1, which also logs from boot until the first disarm. Both are honoured here. Logs go to
``<root>/log/YYYY-MM-DD/HH_MM_SS.ulg`` (UTC), where PX4 SITL writes them, so MAVLink FTP, the log
protocol (LOG_REQUEST_LIST / LOG_REQUEST_DATA / LOG_ERASE) and Flight Review-style tools find them.

The topics are those Flight Review plots for a multicopter, each in PX4 v1.16.1's exact message format
(px4/reference/px4_v1.16.1_sih_ulog_formats.json, read from a log of that build), so that a reader of
PX4 logs (Flight Review, pyulog, px4/ulog.py) reads these unchanged. The values come from the
vehicle's state: the simulation's truth for the estimate (the built-in vehicle has no estimator), its
controller's setpoints, noisy sensor readings drawn apart from the MAVLink streams' (so logging never
changes what a client sees), its battery model, its estimator stand-in's flags, and this process's CPU
and memory for cpuload. Timestamps are its clock in microseconds. Fields the built-in vehicle has no
counterpart for stay zero, or hold PX4 SITL's constant (device ids, GPS dilution).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from physics.dynamics import FORCE, OMEGA, POS, VEL, Q, rotation_matrix
from physics.sensor_suite import (
    SEA_LEVEL_PRESSURE_HPA,
    body_from_world,
    pressure_hpa,
)
from physics.sensors import AT_REST, MOTORS_RUNNING
from px4.modes import FlightMode
from px4.sim import control_kernels as kern
from px4.sim.autopilot import Autopilot
from px4.sim.battery import CELLS
from px4.sim.control import TrajectorySetpoint
from px4.sim.flight_task import Kind
from px4.sim.mavlink_telemetry import ESTIMATOR_ACCURACY_M, ESTIMATOR_RATIOS
from px4.ulog_writer import ULogWriter

FORMATS_FILE = Path(__file__).resolve().parents[1] / "reference" / "px4_v1.16.1_sih_ulog_formats.json"
_REFERENCE = json.loads(FORMATS_FILE.read_text())
FORMATS: dict[str, list[tuple[str, str]]] = {k: [tuple(f) for f in v] for k, v in _REFERENCE["formats"].items()}
TOPICS: dict[str, list[tuple[str, str]]] = {k: [tuple(f) for f in v] for k, v in _REFERENCE["topics"].items()}

# Samples per second of vehicle time. PX4's default logger profile (SDLOG_PROFILE bit 0, what a flight
# controller logs) gives each topic a minimum interval; these follow it, with two savings: sensor_combined,
# which PX4 logs at every IMU sample (250 Hz in SITL), is kept to 50 Hz, and the groundtruth topics PX4
# SITL logs at 50-100 Hz to 10 Hz (here they repeat the estimate, which is the truth).
RATES_HZ = {
    "sensor_combined": 50.0, "vehicle_angular_velocity": 50.0, "vehicle_rates_setpoint": 50.0,
    "vehicle_attitude": 20.0, "vehicle_attitude_setpoint": 20.0,
    "vehicle_local_position": 10.0, "vehicle_local_position_setpoint": 10.0, "actuator_outputs": 10.0,
    "actuator_motors": 10.0, "vehicle_local_position_groundtruth": 10.0, "vehicle_attitude_groundtruth": 10.0,
    "vehicle_angular_velocity_groundtruth": 10.0,
    "vehicle_global_position": 5.0, "vehicle_gps_position": 5.0, "vehicle_air_data": 5.0, "vehicle_magnetometer": 5.0,
    "battery_status": 5.0, "estimator_status": 5.0, "rate_ctrl_status": 5.0, "manual_control_setpoint": 5.0,
    "cpuload": 2.0, "system_power": 2.0, "vehicle_status": 2.0,
    "sensor_baro": 1.0, "sensor_accel": 1.0, "distance_sensor": 1.0, "vehicle_land_detected": 1.0,
    "position_setpoint_triplet": 1.0,
}
FLUSH_EVERY_S = 1.0
NOISE_BLOCK = 1024  # standard normal draws numpy makes at a time
GRAVITY = 9.80665
# The Earth's field (NED, gauss) that the magnetometer reads, turned into body axes.
EARTH_FIELD_GA = (0.21, 0.0, 0.42)
# PX4 v1.16.1 SIH's sensor device ids, as its log names them.
DEVICE_IDS = {"accel": 1310988, "baro": 6620172, "mag": 197388, "gps": 11468804, "distance": 10092548}
# The SIH rangefinder's range (m), as the DISTANCE_SENSOR stream reports it.
RANGEFINDER_MAX_M = 100.0
PWM_DISARMED, PWM_MIN, PWM_MAX = 900.0, 1000.0, 2000.0
# vehicle_status.nav_state values of PX4 for the built-in vehicle's modes.
NAV_STATE = {FlightMode.MANUAL: 0, FlightMode.ALTCTL: 1, FlightMode.POSCTL: 2, FlightMode.MISSION: 3,
             FlightMode.HOLD: 4, FlightMode.RTL: 5, FlightMode.ACRO: 10, FlightMode.OFFBOARD: 14,
             FlightMode.STABILIZED: 15, FlightMode.TAKEOFF: 17, FlightMode.LAND: 18, FlightMode.ORBIT: 21,
             FlightMode.READY: 4}
ARMING_STATE_DISARMED, ARMING_STATE_ARMED = 1, 2
# position_setpoint.type of PX4 for the navigator's waypoint kinds.
SETPOINT_TYPE = {Kind.POSITION: 0, Kind.LOITER: 2, Kind.TAKEOFF: 3, Kind.LAND: 4}
NAN = float("nan")
INF = float("inf")
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
_RAM_BYTES = os.sysconf("SC_PHYS_PAGES") * _PAGE_BYTES


@dataclass(frozen=True)
class LogFile:
    """A log on disk as the log protocol lists it."""

    path: Path
    size: int
    time_utc: int  # seconds since 1970 when it was started


def _fields(name: str, count: int) -> list[str]:
    return [f"{name}[{i}]" for i in range(count)]


def _isa_altitude_m(pressure: float) -> float:
    """The altitude (m AMSL) of an ISA static pressure (hPa): pressure_hpa's inverse."""
    return 288.15 / 0.0065 * (1.0 - (pressure / SEA_LEVEL_PRESSURE_HPA) ** (1.0 / 5.25588))


class FlightLogger:
    """Writes a ULog while the vehicle is armed (and from boot with SDLOG_MODE 1). Call `update()` often."""

    def __init__(self, autopilot: Autopilot, root: Path, info: dict[str, tuple[str, object]]):
        self.ap = autopilot
        self.log_dir = Path(root) / "log"
        self.info = info
        self.writer: ULogWriter | None = None
        self._next_flush = 0.0
        self._was_armed = False
        self._boot_log_pending = int(autopilot.params["SDLOG_MODE"]) == 1 if "SDLOG_MODE" in autopilot.params else False
        # Sensor noise of its own, at the MAVLink streams' levels (physics.sensors) but from its own generator,
        # so that what a client sees never depends on logging; drawn by numpy a block at a time (random.gauss
        # per value was half the log's cost).
        self._rng = np.random.default_rng(1)
        self._draws: list[list[float]] = []
        self._groups: list[tuple[float, list[Callable[[int, list, list], None]]]] = []
        self._due: list[float] = []
        self._next_due = 0.0
        self._out: dict[str, Callable] = {}
        self._changes: tuple = ()
        self._armed_us = self._takeoff_us = self._mode_us = 0
        self._cpu = (time.process_time(), time.perf_counter())

    @property
    def logging(self) -> bool:
        return self.writer is not None

    def update(self) -> str | None:
        """Start, sample or end the current log; returns the "[logger] <path>" text when one starts."""
        armed = self.ap.armed
        started = None
        if self.writer is None and (armed and not self._was_armed or self._boot_log_pending):
            started = self._start()
            self._boot_log_pending = False
        elif self.writer is not None and self._was_armed and not armed:
            self._stop()
        self._was_armed = armed
        if self.writer is not None:
            self._sample()
        return started

    def say(self, severity: int, text: str) -> None:
        """Keep a text the pilot was told (PX4 logs its STATUSTEXTs as logged strings)."""
        if self.writer is not None:
            self.writer.log(severity, self._now_us(), text)

    def close(self) -> None:
        if self.writer is not None:
            self._stop()

    def files(self) -> list[LogFile]:
        """The logs on disk, oldest first (the one being written included, as PX4 lists it)."""
        logs = sorted(self.log_dir.glob("*/*.ulg"))
        out = []
        for path in logs:
            try:
                stamp = dt.datetime.strptime(f"{path.parent.name} {path.stem}", "%Y-%m-%d %H_%M_%S")
                started = int(stamp.replace(tzinfo=dt.timezone.utc).timestamp())
                out.append(LogFile(path, path.stat().st_size, started))
            except (ValueError, OSError):
                continue  # not one of ours (an FTP upload, say), or gone meanwhile
        return out

    def erase(self) -> None:
        """LOG_ERASE: remove every finished log (never the one being written)."""
        current = self.writer.path if self.writer is not None else None
        for log in self.files():
            if log.path != current:
                log.path.unlink(missing_ok=True)

    # ------------------------------------------------------------------ internals
    def _now_us(self) -> int:
        return int(self.ap.time_s * 1e6)

    def _start(self) -> str:
        now = dt.datetime.now(dt.timezone.utc)
        folder = self.log_dir / now.strftime("%Y-%m-%d")
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / now.strftime("%H_%M_%S.ulg")
        n = 1
        while path.exists():  # two flights within a second
            path = folder / now.strftime(f"%H_%M_%S_{n}.ulg")
            n += 1
        params = self.ap.params
        values = {name: ("int32_t" if params.spec(name).is_int else "float", params[name]) for name in params}
        info = dict(self.info, time_ref_utc=("int32_t", 0))
        self.writer = ULogWriter(path, self._now_us(), info=info, parameters=values, topics=TOPICS, formats=FORMATS)
        self._open_topics(self.writer)
        self._environment(0, self.ap.dyn.state.tolist(), [])
        self._next_flush = self._next_due = self.ap.time_s
        self._due = [self.ap.time_s] * len(self._groups)
        self._changes = ()
        # PX4 logs the manual control input's first state, there or not (all zero, stamped 0, without one).
        if self.ap.rc_available:
            self._manual_control(self._now_us(), [], [])
        else:
            self._out["manual_control_setpoint"]([0, 0, 0.0, 0.0, 0.0, 0.0, False, False])
        return f"[logger] ./log/{folder.name}/{path.name}"

    def _stop(self) -> None:
        assert self.writer is not None
        self._sample(force=True)
        self.writer.close()
        self.writer = None

    def _sample(self, force: bool = False) -> None:
        ap, now = self.ap, self.ap.time_s
        t = int(now * 1e6)
        state = (ap.armed, ap.mode, ap.failsafe, ap.landed, ap.triplet)
        if state != self._changes:  # what PX4 publishes when it changes, logged at once
            self._note_changes(state, t)
            d, c = ap.dyn.state.tolist(), ap.ctrl.state.tolist()
            for write in (self._vehicle_status, self._land_detected, self._triplet):
                write(t, d, c)
        if force or now >= self._next_due:
            due = self._due
            d, c = ap.dyn.state.tolist(), ap.ctrl.state.tolist()
            for i, (period, writers) in enumerate(self._groups):
                if force or now >= due[i]:
                    due[i] = max(due[i] + period, now)
                    for write in writers:
                        write(t, d, c)
            self._next_due = min(due)
        if now >= self._next_flush:
            self._next_flush = now + FLUSH_EVERY_S
            self.writer.flush()

    def _note_changes(self, state: tuple, t: int) -> None:
        before = self._changes or (False, None, False, True, None)
        if state[0] and not before[0]:
            self._armed_us = t
        if state[1] != before[1]:
            self._mode_us = t
        if before[3] and not state[3]:
            self._takeoff_us = t
        self._changes = state

    def _open_topics(self, w: ULogWriter) -> None:
        """A sampler per topic, set up for the fields this vehicle fills, and the writers grouped by rate; the
        5 Hz group first draws the barometer and magnetometer readings that it and the 1 Hz group log."""
        origin = self.ap.origin
        xyz, q4 = ["x", "y", "z"], _fields("q", 4)
        motors = len(self.ap.motor_commands)
        position = ["timestamp", "timestamp_sample", "ref_timestamp", *xyz, "vx", "vy", "vz", "z_deriv", "ax", "ay",
                    "az", "heading", "dist_bottom", "xy_valid", "z_valid", "v_xy_valid", "v_z_valid",
                    "heading_good_for_control", "xy_global", "z_global", "dist_bottom_valid"]
        reference = {"ref_lat": origin.lat_deg, "ref_lon": origin.lon_deg, "ref_alt": origin.alt_m}
        limits = {name: INF for name in ("vxy_max", "vz_max", "hagl_min", "hagl_max_z", "hagl_max_xy")}
        accuracy = {"eph": ESTIMATOR_ACCURACY_M[0], "epv": ESTIMATOR_ACCURACY_M[1], "evh": 0.1, "evv": 0.1}
        setpoint = [f"{part}.{name}" for part in ("previous", "current", "next")
                    for name in ("timestamp", "lat", "lon", "alt", "yaw", "acceptance_radius", "cruising_speed",
                                 "valid", "type")]
        mag_strength = math.hypot(*EARTH_FIELD_GA)
        spec = {
            "sensor_combined": ([
                "timestamp", *_fields("gyro_rad", 3), "gyro_integral_dt", *_fields("accelerometer_m_s2", 3),
                "accelerometer_integral_dt"], {}),
            "vehicle_angular_velocity": (["timestamp", "timestamp_sample", *_fields("xyz", 3)], {}),
            "vehicle_angular_velocity_groundtruth": (["timestamp", "timestamp_sample", *_fields("xyz", 3)], {}),
            "vehicle_rates_setpoint": (["timestamp", "roll", "pitch", "yaw", *_fields("thrust_body", 3)], {}),
            "vehicle_attitude": (["timestamp", "timestamp_sample", *q4], {"delta_q_reset[0]": 1.0}),
            "vehicle_attitude_groundtruth": (["timestamp", "timestamp_sample", *q4], {"delta_q_reset[0]": 1.0}),
            "vehicle_attitude_setpoint": (["timestamp", "yaw_sp_move_rate", *_fields("q_d", 4), "thrust_body[2]"], {}),
            "vehicle_local_position": (position, {**reference, **limits, **accuracy}),
            "vehicle_local_position_groundtruth": (position, {**reference, **limits}),
            "vehicle_local_position_setpoint": ([
                "timestamp", *xyz, "vx", "vy", "vz", *_fields("acceleration", 3), *_fields("thrust", 3), "yaw",
                "yawspeed"], {}),
            "actuator_outputs": (["timestamp", *_fields("output", motors)],
                                 {"noutputs": 16, **{f"output[{i}]": PWM_DISARMED for i in range(16)}}),
            "actuator_motors": (["timestamp", "timestamp_sample", *_fields("control", motors)],
                                {f"control[{i}]": NAN for i in range(12)}),
            "vehicle_global_position": ([
                "timestamp", "timestamp_sample", "lat", "lon", "alt", "alt_ellipsoid", "lat_lon_valid", "alt_valid"],
                {"eph": ESTIMATOR_ACCURACY_M[0], "epv": ESTIMATOR_ACCURACY_M[1], "terrain_alt": origin.alt_m,
                 "terrain_alt_valid": True}),
            # GPS_RAW_INT's figures: 0.5 m / 0.8 m accuracy, dilution 0.9 / 1.2.
            "vehicle_gps_position": ([
                "timestamp", "timestamp_sample", "latitude_deg", "longitude_deg", "altitude_msl_m",
                "altitude_ellipsoid_m", "vel_m_s", "vel_n_m_s", "vel_e_m_s", "vel_d_m_s", "cog_rad", "fix_type",
                "satellites_used", "vel_ned_valid"],
                {"device_id": DEVICE_IDS["gps"], "eph": 0.5, "epv": 0.8, "hdop": 0.9, "vdop": 1.2,
                 "s_variance_m_s": 0.4, "c_variance_rad": 0.1, "heading": NAN, "heading_offset": NAN}),
            "vehicle_air_data": (["timestamp", "timestamp_sample", "baro_alt_meter", "baro_pressure_pa",
                                  "ambient_temperature", "rho"], {"baro_device_id": DEVICE_IDS["baro"]}),
            "vehicle_magnetometer": (["timestamp", "timestamp_sample", *_fields("magnetometer_ga", 3)],
                                     {"device_id": DEVICE_IDS["mag"]}),
            "battery_status": ([
                "timestamp", "voltage_v", "current_a", "current_average_a", "discharged_mah", "remaining",
                "connected", "warning", *_fields("voltage_cell_v", CELLS)],
                {"cell_count": CELLS, "id": 1, "scale": 1.0, "time_remaining_s": NAN, "temperature": NAN}),
            "estimator_status": ([
                "timestamp", "timestamp_sample", "solution_status_flags", "vel_test_ratio", "pos_test_ratio",
                "hgt_test_ratio", "hdg_test_ratio", "hagl_test_ratio"],
                {"pos_horiz_accuracy": ESTIMATOR_ACCURACY_M[0], "pos_vert_accuracy": ESTIMATOR_ACCURACY_M[1],
                 "tas_test_ratio": NAN, "beta_test_ratio": NAN, "accel_device_id": DEVICE_IDS["accel"],
                 "gyro_device_id": DEVICE_IDS["accel"], "baro_device_id": DEVICE_IDS["baro"],
                 "mag_device_id": DEVICE_IDS["mag"], "mag_strength_gs": mag_strength,
                 "mag_strength_ref_gs": mag_strength,
                 "mag_inclination_deg": math.degrees(math.atan2(EARTH_FIELD_GA[2], EARTH_FIELD_GA[0])),
                 "mag_inclination_ref_deg": math.degrees(math.atan2(EARTH_FIELD_GA[2], EARTH_FIELD_GA[0]))}),
            "rate_ctrl_status": (["timestamp", "rollspeed_integ", "pitchspeed_integ", "yawspeed_integ"], {}),
            # data_source 2: the first MAVLink instance (MANUAL_CONTROL), where this vehicle's sticks come from.
            "manual_control_setpoint": ([
                "timestamp", "timestamp_sample", "roll", "pitch", "yaw", "throttle", "valid", "sticks_moving"],
                {"data_source": 2}),
            "cpuload": (["timestamp", "load", "ram_usage"], {}),
            "system_power": (["timestamp"], {"voltage5v_v": 5.0, "brick_valid": 1}),
            "vehicle_status": ([
                "timestamp", "armed_time", "takeoff_time", "nav_state_timestamp", "arming_state", "nav_state",
                "nav_state_user_intention", "failsafe", "pre_flight_checks_pass"],
                {"vehicle_type": 1, "system_type": 2, "system_id": int(self.ap.params["MAV_SYS_ID"])
                 if "MAV_SYS_ID" in self.ap.params else 1, "component_id": 1, "safety_button_available": True,
                 "safety_off": True, "power_input_valid": True}),
            "sensor_baro": (["timestamp", "timestamp_sample", "pressure", "temperature"],
                            {"device_id": DEVICE_IDS["baro"]}),
            "sensor_accel": (["timestamp", "timestamp_sample", "x", "y", "z", "temperature"],
                             {"device_id": DEVICE_IDS["accel"], "samples": 1}),
            "distance_sensor": (["timestamp", "current_distance"],
                                {"device_id": DEVICE_IDS["distance"], "max_distance": RANGEFINDER_MAX_M,
                                 "signal_quality": -1, "orientation": 25}),
            "vehicle_land_detected": (["timestamp", "ground_contact", "maybe_landed", "landed", "at_rest"], {}),
            "position_setpoint_triplet": (["timestamp", *setpoint], {}),
        }
        self._out = {topic: w.sampler(topic, fields, constants) for topic, (fields, constants) in spec.items()}
        writers = {
            "sensor_combined": self._rates, "vehicle_angular_velocity": None, "vehicle_rates_setpoint": None,
            "vehicle_attitude": self._attitudes, "vehicle_attitude_setpoint": None, "vehicle_local_position": self._local_position,
            "vehicle_local_position_setpoint": self._local_position_setpoint, "actuator_outputs": self._outputs,
            "actuator_motors": None, "vehicle_local_position_groundtruth": None,
            "vehicle_attitude_groundtruth": None, "vehicle_angular_velocity_groundtruth": None,
            "vehicle_global_position": self._global_position, "vehicle_gps_position": self._gps,
            "vehicle_air_data": self._air_data, "vehicle_magnetometer": None, "battery_status": self._battery,
            "estimator_status": self._estimator, "rate_ctrl_status": self._rate_ctrl,
            "manual_control_setpoint": self._manual_control, "cpuload": self._cpuload,
            "system_power": self._system_power, "vehicle_status": self._vehicle_status,
            "sensor_baro": self._sensor_baro, "sensor_accel": None, "distance_sensor": self._distance,
            "vehicle_land_detected": self._land_detected, "position_setpoint_triplet": self._triplet,
        }
        missing = set(TOPICS) ^ set(RATES_HZ) | set(TOPICS) ^ set(writers) | set(TOPICS) ^ set(spec)
        assert not missing, f"topics without a format, rate or writer: {sorted(missing)}"
        groups: dict[float, list] = {}
        for topic, write in writers.items():
            if write is not None:  # None: written by its sibling's writer, which reads the same state
                groups.setdefault(RATES_HZ[topic], []).append(write)
        rates = sorted(groups)
        self._groups = [(1.0 / hz, ([self._environment] if hz == 5.0 else []) + groups[hz]) for hz in rates]

    def _draw(self) -> list[float]:
        """Six standard normal values (three for the accelerometer, three for the gyro or magnetometer and
        barometer)."""
        if not self._draws:
            self._draws = self._rng.standard_normal((NOISE_BLOCK, 6)).tolist()
        return self._draws.pop()

    def _imu(self, d: list) -> None:
        """A noisy accelerometer and gyro reading of the state, at the level of the motors running or not."""
        n = MOTORS_RUNNING if self.ap.armed else AT_REST
        z = self._draw()
        f, w, sa, sg = d[FORCE:FORCE + 3], d[OMEGA:OMEGA + 3], n.accel, n.gyro
        self._accel = [f[0] + sa[0] * z[0], f[1] + sa[1] * z[1], f[2] + sa[2] * z[2]]
        self._gyro = [w[0] + sg[0] * z[3], w[1] + sg[1] * z[4], w[2] + sg[2] * z[5]]

    def _environment(self, t: int, d: list, c: list) -> None:
        """What the sensors read around, with their noise: the Earth's field in body axes and static pressure."""
        self._alt = self.ap.origin.alt_m - d[POS + 2]
        n = MOTORS_RUNNING if self.ap.armed else AT_REST
        z = self._draw()
        mag = body_from_world(d[Q:Q + 4], EARTH_FIELD_GA)
        self._mag = [mag[0] + n.mag[0] * z[0], mag[1] + n.mag[1] * z[1], mag[2] + n.mag[2] * z[2]]
        self._pressure = pressure_hpa(self._alt) + n.pressure * z[3]
        self._imu(d)

    # One method per topic (or per topics that read the same state), called with the time (us) and the
    # dynamics' and controller's state vectors as lists.
    def _rates(self, t: int, d: list, c: list) -> None:
        """The 50 Hz topics: the IMU, the body rates and their setpoint."""
        self._imu(d)
        out, dt_us = self._out, int(1e6 / RATES_HZ["sensor_combined"])
        out["sensor_combined"]([t, *self._gyro, dt_us, *self._accel, dt_us])
        out["vehicle_angular_velocity"]([t, t, *d[OMEGA:OMEGA + 3]])
        out["vehicle_rates_setpoint"]([t, *c[kern.C_RATE_SP:kern.C_RATE_SP + 3], 0.0, 0.0, -c[kern.C_THRUST_SP]])

    def _attitudes(self, t: int, d: list, c: list) -> None:
        self._out["vehicle_attitude"]([t, t, *d[Q:Q + 4]])
        self._out["vehicle_attitude_setpoint"]([t, c[kern.C_YAWSPEED_FF], *c[kern.C_ATT_SP:kern.C_ATT_SP + 4],
                                                -c[kern.C_THRUST_SP]])

    def _position_row(self, t: int, d: list) -> list:
        ap = self.ap
        f0, f1, f2 = d[FORCE:FORCE + 3]
        r00, r01, r02, r10, r11, r12, r20, r21, r22 = rotation_matrix(*d[Q:Q + 4])
        down = d[POS + 2]
        valid, global_ = ap.position_valid, ap.global_position_ok
        return [t, t, 0, *d[POS:POS + 3], *d[VEL:VEL + 3], d[VEL + 2], r00 * f0 + r01 * f1 + r02 * f2,
                r10 * f0 + r11 * f1 + r12 * f2, r20 * f0 + r21 * f1 + r22 * f2 + GRAVITY, ap.dyn.yaw,
                min(max(-down, 0.0), RANGEFINDER_MAX_M), valid, True, valid, True, True, global_, global_,
                -down <= RANGEFINDER_MAX_M]

    def _local_position(self, t: int, d: list, c: list) -> None:
        """The estimate, and the truth that it is (PX4 SITL logs its simulator's truth as *_groundtruth)."""
        row = self._position_row(t, d)
        self._out["vehicle_local_position"](row)
        self._out["vehicle_local_position_groundtruth"](row)
        self._out["vehicle_attitude_groundtruth"]([t, t, *d[Q:Q + 4]])
        self._out["vehicle_angular_velocity_groundtruth"]([t, t, *d[OMEGA:OMEGA + 3]])

    def _local_position_setpoint(self, t: int, d: list, c: list) -> None:
        sp = self.ap.current_setpoint
        position, yaw, yawspeed = ((sp.position, sp.yaw, sp.yawspeed) if isinstance(sp, TrajectorySetpoint)
                                   else ((NAN, NAN, NAN), NAN, NAN))
        # The thrust vector (NED) is the collective along the attitude setpoint's body z axis.
        _, _, r02, _, _, r12, _, _, r22 = rotation_matrix(*c[kern.C_ATT_SP:kern.C_ATT_SP + 4])
        thrust = -c[kern.C_THRUST_SP]
        self._out["vehicle_local_position_setpoint"]([
            t, *position, *c[kern.C_VEL_SP:kern.C_VEL_SP + 3], *c[kern.C_ACC_SP:kern.C_ACC_SP + 3],
            thrust * r02, thrust * r12, thrust * r22, yaw, yawspeed])

    def _outputs(self, t: int, d: list, c: list) -> None:
        motors = self.ap.motor_commands
        pwm = ([PWM_MIN + (PWM_MAX - PWM_MIN) * u for u in motors] if self.ap.armed
               else [PWM_DISARMED] * len(motors))
        self._out["actuator_outputs"]([t, *pwm])
        self._out["actuator_motors"]([t, t, *motors])

    def _global_position(self, t: int, d: list, c: list) -> None:
        lat, lon, alt = self.ap.origin.to_global(*d[POS:POS + 3])
        valid = self.ap.global_position_ok
        self._out["vehicle_global_position"]([t, t, lat, lon, alt, alt, valid, True])

    def _gps(self, t: int, d: list, c: list) -> None:
        ap = self.ap
        reading = ap.faults.gps_reading(*ap.origin.to_global(*d[POS:POS + 3]))
        lat, lon, alt = reading if reading is not None else (0.0, 0.0, 0.0)
        vn, ve, vd = d[VEL:VEL + 3]
        fix = 3 if ap.gps_fix and reading is not None else 0
        sats = int(ap.params["SIM_GPS_USED"]) if reading is not None else 0
        self._out["vehicle_gps_position"]([t, t, lat, lon, alt, alt, math.hypot(vn, ve), vn, ve, vd,
                                           math.atan2(ve, vn), fix, sats, fix == 3])

    def _air_data(self, t: int, d: list, c: list) -> None:
        pressure = self._pressure
        temperature = 15.0 - 0.0065 * self._alt  # ISA, as SIH's barometer
        rho = pressure * 100.0 / (287.1 * (temperature + 273.15))
        self._out["vehicle_air_data"]([t, t, _isa_altitude_m(pressure), pressure * 100.0, temperature, rho])
        self._out["vehicle_magnetometer"]([t, t, *self._mag])

    def _sensor_baro(self, t: int, d: list, c: list) -> None:
        temperature = 15.0 - 0.0065 * self._alt
        self._out["sensor_baro"]([t, t, self._pressure * 100.0, temperature])
        self._out["sensor_accel"]([t, t, *self._accel, temperature])

    def _battery(self, t: int, d: list, c: list) -> None:
        ap = self.ap
        remaining, volts = ap.battery_reading()
        connected = remaining >= 0.0
        current = ap.battery_current_a if connected else -1.0
        warning = (0 if not connected or remaining >= ap.params["BAT_LOW_THR"]
                   else 1 if remaining >= ap.params["BAT_CRIT_THR"] else 2)
        self._out["battery_status"]([t, volts, current, current, ap.battery_discharged_mah, remaining, connected,
                                     warning, *[volts / CELLS] * CELLS])

    def _estimator(self, t: int, d: list, c: list) -> None:
        self._out["estimator_status"]([t, t, self.ap.estimator_flags, *ESTIMATOR_RATIOS[:5]])

    def _rate_ctrl(self, t: int, d: list, c: list) -> None:
        self._out["rate_ctrl_status"]([t, *c[kern.C_RATE_INT:kern.C_RATE_INT + 3]])

    def _manual_control(self, t: int, d: list, c: list) -> None:
        if self.ap.rc_available:  # PX4 publishes the input while there is one
            sticks = self.ap.manual.sticks
            # PX4's throttle stick is -1..1; MANUAL_CONTROL's z (here 0..1) maps onto it.
            self._out["manual_control_setpoint"]([t, int(sticks.time_s * 1e6), sticks.roll, sticks.pitch, sticks.yaw,
                                                  2.0 * sticks.throttle - 1.0, True, False])

    def _cpuload(self, t: int, d: list, c: list) -> None:
        cpu, wall = time.process_time(), time.perf_counter()
        load = (cpu - self._cpu[0]) / max(wall - self._cpu[1], 1e-6)
        self._cpu = (cpu, wall)
        # Peak resident memory (kilobytes on Linux), as a share of the machine's.
        ram = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / _RAM_BYTES
        self._out["cpuload"]([t, min(load, 1.0), ram])

    def _system_power(self, t: int, d: list, c: list) -> None:
        self._out["system_power"]([t])

    def _distance(self, t: int, d: list, c: list) -> None:
        self._out["distance_sensor"]([t, min(max(-d[POS + 2], 0.0), RANGEFINDER_MAX_M)])

    def _vehicle_status(self, t: int, d: list, c: list) -> None:
        ap = self.ap
        nav = NAV_STATE.get(ap.mode, 4)
        self._out["vehicle_status"]([t, self._armed_us, self._takeoff_us, self._mode_us,
                                     ARMING_STATE_ARMED if ap.armed else ARMING_STATE_DISARMED, nav, nav, ap.failsafe,
                                     ap.prearm_failure() is None])

    def _land_detected(self, t: int, d: list, c: list) -> None:
        landed = self.ap.landed
        self._out["vehicle_land_detected"]([t, landed, landed, landed, landed and not self.ap.armed])

    def _triplet(self, t: int, d: list, c: list) -> None:
        ap = self.ap
        triplet = ap.triplet
        row: list = [t]
        points = (None, None, None) if triplet is None else (triplet.previous, triplet.current, triplet.next)
        for i, point in enumerate(points):
            if point is None:
                row += [0, NAN, NAN, NAN, NAN, NAN, -1.0, False, 0]
                continue
            radius = triplet.acceptance_radius
            n, e, down = point
            lat, lon, alt = ap.origin.to_global(n, e, 0.0 if math.isnan(down) else down)
            current = i == 1
            row += [t, lat, lon, NAN if math.isnan(down) else alt, triplet.yaw if current else NAN,
                    ap.params["NAV_ACC_RAD"] if math.isnan(radius) else radius,
                    -1.0 if math.isnan(triplet.cruise_speed) else triplet.cruise_speed,  # PX4: -1, the default
                    True, SETPOINT_TYPE[triplet.kind] if current else SETPOINT_TYPE[Kind.POSITION]]
        self._out["position_setpoint_triplet"](row)
