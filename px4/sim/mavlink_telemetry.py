"""What the built-in vehicle streams, as PX4 v1.16.1 SITL fills each message: the version the vehicle
reports and one builder per message (`_msg_<name>`, found by name when the server's scheduler finds a
stream due or a client requests it; the links' rates are mavlink_link's). A builder gives the message's class
and its constructor's arguments: `build` makes the message of them, the streams are encoded straight from them.
"""

from __future__ import annotations

import math
import platform
import re
import time
from typing import Callable

from pymavlink.dialects.v20 import common as mavlink

from physics.dynamics import FORCE, OMEGA, POS, VEL, Q, euler_of
from px4 import modes
from px4.modes import FlightMode
from px4.sim import PX4_VERSION, mavlink_extra
from px4.sim.autopilot import Autopilot
from px4.sim.calibration import Calibration
from px4.sim.component_metadata import ComponentMetadata
from px4.sim.control import TrajectorySetpoint
from px4.sim.mavlink_link import Link
from px4.sim.mavlink_offboard import ACC_IGNORE, POS_IGNORE, VEL_IGNORE

NAN = float("nan")
# The estimator stand-in's test ratios (velocity, horizontal position, vertical position, magnetometer,
# height above ground, airspeed) and its horizontal and vertical position accuracy (m).
ESTIMATOR_RATIOS = (0.1, 0.1, 0.1, 0.1, 0.0, 0.0)
ESTIMATOR_ACCURACY_M = (0.5, 0.8)
# AUTOPILOT_VERSION reports the release imitated (PX4_VERSION) with type OFFICIAL (0xFF) as the v1.16.1
# release build reports itself: clients (the harness's own version check, MAVSDK's info plugin, QGC) then
# treat the built-in vehicle exactly as that release. It tells itself apart by its uid (random per
# process) and by nothing else a client relies on; what a person reads names it (BUILTIN_AUTOPILOT).
FIRMWARE_TYPE_OFFICIAL = 0xFF
# The first bytes of v1.16.1's commit (94cb2012...) as its AUTOPILOT_VERSION carries them.
PX4_GIT_HASH = [0, 0, 0, 0x79, 0x12, 0x20, 0xCB, 0x94]
# MAVLink's own library version hash as PX4 v1.16.1 sends it in PROTOCOL_VERSION.
MAVLINK_LIBRARY_HASH = [0x02, 0xF6, 0x81, 0x02, 0xD8, 0x76, 0xFD, 0x5B]


S = mavlink
# SYS_STATUS sensor bits as v1.16.1 SITL sets them (measured): present, enabled (present and RC)
# and healthy; LOGGING is present while a log is being written. No geofence bit: PX4 sets none.
SENSORS_PRESENT = (S.MAV_SYS_STATUS_SENSOR_3D_GYRO | S.MAV_SYS_STATUS_SENSOR_3D_ACCEL | S.MAV_SYS_STATUS_SENSOR_3D_MAG
                   | S.MAV_SYS_STATUS_SENSOR_ABSOLUTE_PRESSURE | S.MAV_SYS_STATUS_SENSOR_GPS
                   | S.MAV_SYS_STATUS_SENSOR_XY_POSITION_CONTROL | S.MAV_SYS_STATUS_SENSOR_BATTERY)
SENSORS_HEALTHY = (SENSORS_PRESENT | S.MAV_SYS_STATUS_SENSOR_DIFFERENTIAL_PRESSURE
                   | S.MAV_SYS_STATUS_SENSOR_ATTITUDE_STABILIZATION | S.MAV_SYS_STATUS_SENSOR_MOTOR_OUTPUTS
                   | S.MAV_SYS_STATUS_AHRS | S.MAV_SYS_STATUS_LOGGING | S.MAV_SYS_STATUS_PREARM_CHECK)
# AUTOPILOT_VERSION.capabilities of v1.16.1: 0xE8FF (v1.14: 0xECFF, with the retired bit 10).
CAPABILITIES = (S.MAV_PROTOCOL_CAPABILITY_MISSION_FLOAT | S.MAV_PROTOCOL_CAPABILITY_PARAM_FLOAT
                | S.MAV_PROTOCOL_CAPABILITY_MISSION_INT | S.MAV_PROTOCOL_CAPABILITY_COMMAND_INT
                | S.MAV_PROTOCOL_CAPABILITY_PARAM_ENCODE_BYTEWISE | S.MAV_PROTOCOL_CAPABILITY_FTP
                | S.MAV_PROTOCOL_CAPABILITY_SET_ATTITUDE_TARGET
                | S.MAV_PROTOCOL_CAPABILITY_SET_POSITION_TARGET_LOCAL_NED
                | S.MAV_PROTOCOL_CAPABILITY_FLIGHT_TERMINATION | S.MAV_PROTOCOL_CAPABILITY_MAVLINK2
                | S.MAV_PROTOCOL_CAPABILITY_MISSION_FENCE | S.MAV_PROTOCOL_CAPABILITY_MISSION_RALLY)


def _any_nan(v: tuple[float, float, float]) -> bool:
    # NaN is the one value unequal to itself; unrolled, as any() over a generator costs three times more.
    return v[0] != v[0] or v[1] != v[1] or v[2] != v[2]


def _os_version() -> int:
    """The host kernel's version as PX4 SITL reports it (os_sw_version: major.minor.patch, type OFFICIAL)."""
    numbers = [int(n) for n in re.findall(r"\d+", platform.release())[:3]] + [0, 0, 0]
    return (numbers[0] & 0xFF) << 24 | (numbers[1] & 0xFF) << 16 | (numbers[2] & 0xFF) << 8 | FIRMWARE_TYPE_OFFICIAL


class TelemetryStreams:
    """Builds every message the vehicle streams or sends on request; the server decides when.

    A member of `MavlinkServer` (px4/sim/mavlink_server.py), as PX4's mavlink module holds one stream
    object per message: it is handed the autopilot, the links (LINK_NODE_STATUS counts their traffic), the
    vehicle's uid, the component metadata a ground station fetches (None: not written), the calibration
    (running, it clears the prearm bit) and `logging` (whether a flight log is written: SYS_STATUS's LOGGING
    bit; the flight log reads this module's estimator figures, so it is asked, not imported).
    It keeps the PING stream's sequence and when the vehicle armed.

    The builders read the vehicle's clock and physics state as `read_state` last took them: `fields` takes them
    for the one message it builds, the server's stream pass once for the twenty or so messages it builds of the
    same instant (a telemetry log's cost is mostly these builders, and each read of the physics state copies a
    slice of it).
    """

    def __init__(self, autopilot: Autopilot, links: list[Link], uid: int, metadata: ComponentMetadata | None,
                 calibration: Calibration, logging: Callable[[], bool]) -> None:
        self.ap = autopilot
        self.links = links
        self.uid = uid
        self.metadata = metadata
        self.calibration = calibration
        self.logging = logging
        self._ping_seq = 0
        # Each message's builder by MAVLink's name, looked up by the scheduler some hundred times a second.
        self.builders: dict[str, Callable[[], tuple[type, tuple] | None]] = {
            attr[len("_msg_"):].upper(): getattr(self, attr) for attr in dir(type(self)) if attr.startswith("_msg_")}
        self.read_state()

    def read_state(self) -> None:
        """Take the vehicle's clock and physics state for the messages built from now on (class docstring)."""
        t = self.ap.time_s
        # uint32 in every message that carries it: wraps after 49.7 days, as PX4's cast does.
        self.boot_ms = int(t * 1000) & 0xFFFF_FFFF
        self.boot_us = int(t * 1e6)
        s = self.ap.dyn.state.tolist()
        self.pos, self.vel, self.q = tuple(s[POS:POS + 3]), tuple(s[VEL:VEL + 3]), tuple(s[Q:Q + 4])
        self.omega, self.specific_force = tuple(s[OMEGA:OMEGA + 3]), tuple(s[FORCE:FORCE + 3])
        self.euler = euler_of(*self.q)
        self._global_position: tuple[float, float, float] | None = None  # _global's, once asked

    def can_build(self, name: str) -> bool:
        """Whether the vehicle sends the message of this name (MAVLink's upper-case name)."""
        return name in self.builders

    def build(self, name: str):
        """The message of this name as of now; None where there is nothing to send (WIND_COV without wind)."""
        made = self.fields(name)
        return None if made is None else made[0](*made[1])

    def fields(self, name: str) -> tuple[type, tuple] | None:
        """What `build` makes of the message of this name as of now, as its class and the constructor's
        arguments: the streams are encoded straight from these (mavlink_encode.encode_args), making the message
        object costs as much as encoding it. None where there is nothing to send."""
        self.read_state()
        return self.builders[name]()

    @property
    def timesync_ns(self) -> int:
        """The vehicle's clock for TIMESYNC, from 1 ns: at boot it reads 0, and tc1 == 0 marks a request."""
        return int(self.ap.time_s * 1e9) + 1

    @staticmethod
    def _version_word() -> int:
        major, minor, patch = PX4_VERSION
        return (major << 24) | (minor << 16) | (patch << 8) | FIRMWARE_TYPE_OFFICIAL

    def _msg_heartbeat(self):
        ap = self.ap
        if not ap.ready:
            status = mavlink.MAV_STATE_BOOT
        elif ap.failsafe:
            status = mavlink.MAV_STATE_CRITICAL
        else:
            status = mavlink.MAV_STATE_ACTIVE if ap.armed else mavlink.MAV_STATE_STANDBY
        return mavlink.MAVLink_heartbeat_message, (mavlink.MAV_TYPE_QUADROTOR, mavlink.MAV_AUTOPILOT_PX4,
                                                   ap.mode.base_mode(ap.armed), ap.mode.custom_mode, status, 3)

    def _sensor_health(self) -> int:
        ap = self.ap
        health = SENSORS_HEALTHY
        if not ap.ready:
            health &= ~(mavlink.MAV_SYS_STATUS_SENSOR_3D_GYRO | mavlink.MAV_SYS_STATUS_SENSOR_3D_ACCEL
                        | mavlink.MAV_SYS_STATUS_SENSOR_3D_MAG | mavlink.MAV_SYS_STATUS_AHRS)
        if not ap.gps_fix:
            health &= ~mavlink.MAV_SYS_STATUS_SENSOR_GPS
        health &= ~ap.faults.unhealthy_sensors()
        if ap.rc_available:
            health |= mavlink.MAV_SYS_STATUS_SENSOR_RC_RECEIVER
        if not ap.armed and (ap.prearm_failure() is not None or self.calibration.active):  # armed: no checks to run
            health &= ~mavlink.MAV_SYS_STATUS_PREARM_CHECK
        return health

    def _msg_sys_status(self):
        ap = self.ap
        remaining, volts = ap.battery_reading()
        millivolts = 65535 if math.isnan(volts) else int(volts * 1000)  # UINT16_MAX: unknown
        present = SENSORS_PRESENT | (mavlink.MAV_SYS_STATUS_SENSOR_RC_RECEIVER if ap.rc_available else 0)
        if self.logging():
            present |= mavlink.MAV_SYS_STATUS_LOGGING
        enabled = present | mavlink.MAV_SYS_STATUS_SENSOR_RC_RECEIVER
        return mavlink.MAVLink_sys_status_message, (
            present, enabled, self._sensor_health(), 250, millivolts, int(ap.battery_current_a * 100),
            int(remaining * 100) if remaining >= 0 else -1, 0, 0, 0, 0, 0, 0, 0, 0, 1)

    def _msg_extended_sys_state(self):
        return mavlink.MAVLink_extended_sys_state_message, (mavlink.MAV_VTOL_STATE_UNDEFINED,
                                                            self.ap.landed_state.value)

    def _msg_home_position(self):
        h = self.ap.home
        lat, lon, alt = self.ap.origin.to_global(*h)
        return mavlink.MAVLink_home_position_message, (int(lat * 1e7), int(lon * 1e7), int(alt * 1000), h[0], h[1],
                                                       h[2], [1.0, 0.0, 0.0, 0.0], 0.0, 0.0, 0.0, self.boot_us)

    def _global(self) -> tuple[float, float, float]:
        """The vehicle's true position as latitude, longitude and altitude (GPS_RAW_INT, GLOBAL_POSITION_INT in
        flight and OPEN_DRONE_ID_LOCATION all report it)."""
        if self._global_position is None:
            self._global_position = self.ap.origin.to_global(*self.pos)
        return self._global_position

    def _msg_gps_raw_int(self):
        ap = self.ap
        reading = ap.faults.gps_reading(*self._global())
        lat, lon, alt = reading if reading is not None else (0.0, 0.0, 0.0)
        v = self.vel
        fix = mavlink.GPS_FIX_TYPE_3D_FIX if ap.gps_fix else mavlink.GPS_FIX_TYPE_NO_FIX
        sats = int(ap.params["SIM_GPS_USED"]) if reading is not None else 0
        cog = (math.degrees(math.atan2(v[1], v[0])) + 360.0) % 360.0
        return mavlink.MAVLink_gps_raw_int_message, (self.boot_us, fix, int(lat * 1e7), int(lon * 1e7), int(alt * 1000),
                                                     90, 120, int(math.hypot(v[0], v[1]) * 100), int(cog * 100), sats,
                                                     int(alt * 1000), 500, 800, 150, 0, 0)

    def _msg_global_position_int(self):
        ap = self.ap
        n, e, d = self.pos
        if ap.landed and not ap.armed:
            # At rest PX4's estimate wanders (sensors.REST_DRIFT_M); in flight the built-in vehicle reports its
            # exact state, which is what it flies on (docs/design.md).
            dn, de, dd = ap.sensors.rest_drift(ap.time_s)
            n, e, d = n + dn, e + de, d + dd
            lat, lon, alt = ap.origin.to_global(n, e, d)
        else:
            lat, lon, alt = self._global()
        v = self.vel
        heading = (math.degrees(self.euler[2]) + 360.0) % 360.0
        return mavlink.MAVLink_global_position_int_message, (
            self.boot_ms, int(lat * 1e7), int(lon * 1e7), int(alt * 1000), int(-d * 1000),
            int(v[0] * 100), int(v[1] * 100), int(v[2] * 100), int(heading * 100))

    def _msg_local_position_ned(self):
        p, v = self.pos, self.vel
        return mavlink.MAVLink_local_position_ned_message, (self.boot_ms, p[0], p[1], p[2], v[0], v[1], v[2])

    def _msg_odometry(self):
        nan_cov = [NAN] + [0.0] * 20
        return mavlink.MAVLink_odometry_message, (
            self.boot_us, mavlink.MAV_FRAME_LOCAL_NED, mavlink.MAV_FRAME_BODY_FRD, *self.pos,
            list(self.q), *self.vel, *self.omega, nan_cov, nan_cov, 0,
            mavlink.MAV_ESTIMATOR_TYPE_VIO, 100)

    def _msg_attitude(self):
        (r, p, y), w = self.ap.sensors.attitude(self.euler, self.omega, self.ap.armed)
        return mavlink.MAVLink_attitude_message, (self.boot_ms, r, p, y, w[0], w[1], w[2])

    def _msg_attitude_quaternion(self):
        return mavlink.MAVLink_attitude_quaternion_message, (self.boot_ms, *self.q, *self.omega,
                                                             [0.0, 0.0, 0.0, 0.0])

    def _msg_altitude(self):
        ap = self.ap
        alt_local = -self.pos[2]
        amsl = ap.origin.alt_m + alt_local
        return mavlink.MAVLink_altitude_message, (self.boot_us, amsl, amsl, alt_local, alt_local, NAN, alt_local)

    def _msg_battery_status(self):
        ap = self.ap
        remaining, volts = ap.battery_reading()
        cell_mv = 65535 if math.isnan(volts) else int(volts / 4 * 1000)
        return mavlink.MAVLink_battery_status_message, (
            0, mavlink.MAV_BATTERY_FUNCTION_ALL, mavlink.MAV_BATTERY_TYPE_LIPO, 32767, [cell_mv] * 4 + [65535] * 6,
            int(ap.battery_current_a * 100), -1, -1, int(remaining * 100) if remaining >= 0 else -1, 0, 0,
            [0, 0, 0, 0], 0, 0)

    def _msg_vfr_hud(self):
        ap = self.ap
        v = self.vel
        heading = int((math.degrees(self.euler[2]) + 360.0) % 360.0)
        throttle = int(100 * sum(ap.motor_commands) / 4)
        return mavlink.MAVLink_vfr_hud_message, (math.hypot(v[0], v[1]), math.hypot(v[0], v[1]), heading, throttle,
                                                 ap.origin.alt_m - self.pos[2], -v[2])

    def _msg_highres_imu(self):
        alt = self.ap.origin.alt_m - self.pos[2]
        pressure = 1013.25 * (1.0 - 2.25577e-5 * alt) ** 5.25588
        f, w, mag, pressure = self.ap.sensors.imu(self.specific_force, self.omega, (0.21, 0.0, 0.42), pressure,
                                                  self.ap.armed)
        f, w, mag, pressure, updated = self.ap.faults.imu_reading(f, w, mag, pressure, 0x1FFF)
        return mavlink.MAVLink_highres_imu_message, (self.boot_us, f[0], f[1], f[2], w[0], w[1], w[2], mag[0], mag[1],
                                                     mag[2], pressure, 0.0, alt, 25.0, updated, 0)

    def _msg_attitude_target(self):
        c = self.ap.ctrl
        return mavlink.MAVLink_attitude_target_message, (self.boot_ms, 0, list(c.attitude_sp), *c.rate_sp, c.thrust_sp)

    def _msg_position_target_local_ned(self):
        sp = self.ap.current_setpoint
        if not isinstance(sp, TrajectorySetpoint):
            # PX4 streams it all the time; with no position setpoint (on the ground, attitude control)
            # the vehicle's own position stands in.
            sp = TrajectorySetpoint(self.pos, (NAN, NAN, NAN), (NAN, NAN, NAN), self.euler[2], NAN)
        mask = 0
        if _any_nan(sp.position):
            mask |= POS_IGNORE
        if _any_nan(sp.velocity):
            mask |= VEL_IGNORE
        if _any_nan(sp.acceleration):
            mask |= ACC_IGNORE
        return mavlink.MAVLink_position_target_local_ned_message, (
            self.boot_ms, mavlink.MAV_FRAME_LOCAL_NED, mask, *sp.position, *sp.velocity, *sp.acceleration,
            sp.yaw, sp.yawspeed if not math.isnan(sp.yawspeed) else 0.0)

    def _msg_servo_output_raw(self):
        u = self.ap.motor_commands
        pwm = [int(1000 + 1000 * c) if self.ap.armed else 900 for c in u]
        # time_usec is a uint32 here (unlike every other time_usec): it wraps every 4294.97 s, as on PX4.
        return mavlink.MAVLink_servo_output_raw_message, (self.boot_us & 0xFFFF_FFFF, 0, *pwm,
                                                          0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

    def _msg_estimator_status(self):
        return mavlink.MAVLink_estimator_status_message, (self.boot_us, self.ap.estimator_flags, *ESTIMATOR_RATIOS,
                                                          *ESTIMATOR_ACCURACY_M)

    def _msg_flight_information(self):
        """FLIGHT_INFORMATION, which MAVSDK's info plugin asks for: PX4 answers it on request (the arming time
        in UTC microseconds while armed, else 0; COM_FLIGHT_UUID as the flight's number). The time armed is
        taken off the wall clock in vehicle seconds: at a speed factor the arming time is that much earlier."""
        ap = self.ap
        armed_utc = int((time.time() - (ap.time_s - ap.armed_at)) * 1e6) if ap.armed_at is not None else 0
        uuid = int(ap.params["COM_FLIGHT_UUID"]) if "COM_FLIGHT_UUID" in ap.params else 0
        return mavlink.MAVLink_flight_information_message, (self.boot_ms, armed_utc, 0, uuid)

    def _msg_system_time(self):
        return mavlink.MAVLink_system_time_message, (int(time.time() * 1e6), self.boot_ms)

    def _msg_timesync(self):
        # PX4 asks the companion for its clock too; the reply gives the offset we record.
        return mavlink.MAVLink_timesync_message, (0, self.timesync_ns)

    def mission_current(self):
        """MISSION_CURRENT as of now (the message)."""
        return self.build("MISSION_CURRENT")

    def _msg_mission_current(self):
        """MISSION_CURRENT: seq, and total (UINT16_MAX without a mission) as v1.16.1 fills them.

        Measured on its offboard link before a mission flies, v1.16.1 leaves mission_state and
        mission_mode 0; so does this vehicle then. Once a mission runs it reports ACTIVE / COMPLETE
        (a v1.16.1 mission flight was not measured): MAVSDK 4 tells a finished mission by it here.
        v1.16 also fills the plans' ids (CRC-32s) that its MISSION_ACK / MISSION_COUNT carry as
        opaque_id; pymavlink 2.4's mission messages have no opaque_id, and an id the client never saw
        in an ACK would make MAVSDK take the plan for another one, so they stay 0 ("unknown").
        """
        ap = self.ap
        total = len(ap.mission)
        state = 0
        if total and ap.mission_finished:
            state = mavlink.MISSION_STATE_COMPLETE
        elif total and ap.mode == FlightMode.MISSION:
            state = mavlink.MISSION_STATE_ACTIVE
        return mavlink_extra.MissionCurrent, (min(ap.mission_current, max(total - 1, 0)), total or 65535, state,
                                              int(ap.mode == FlightMode.MISSION), 0, 0, 0)

    def _msg_autopilot_version(self):
        version = self._version_word()
        return mavlink.MAVLink_autopilot_version_message, (
            CAPABILITIES, version, version, _os_version(), 1, PX4_GIT_HASH, PX4_GIT_HASH, [0] * 8, 0, 0, self.uid,
            # uid2 too, where MAVSDK's info.get_identification reads its hardware_uid (PX4 fills it: non-zero).
            list(self.uid.to_bytes(8, "little")) + [0] * 10)

    def _msg_protocol_version(self):
        return mavlink_extra.ProtocolVersion, (200, 100, 200, [0] * 8, MAVLINK_LIBRARY_HASH)

    def _msg_component_metadata(self):
        return mavlink_extra.ComponentMetadata, (self.boot_ms, self.metadata.crc, self.metadata.uri)

    def _msg_component_information(self):
        return mavlink_extra.ComponentInformation, (self.boot_ms, self.metadata.crc, self.metadata.uri, 0, "")

    def _msg_current_mode(self):
        custom = self.ap.mode.custom_mode
        return mavlink_extra.CurrentMode, (modes.standard_mode(custom), custom, custom)

    def _msg_scaled_pressure(self):
        alt = self.ap.origin.alt_m - self.pos[2]
        pressure = 1013.25 * (1.0 - 2.25577e-5 * alt) ** 5.25588
        temperature = 15.0 - 0.0065 * alt  # ISA, as SIH's barometer
        return mavlink.MAVLink_scaled_pressure_message, (self.boot_ms, pressure, 0.0, int(temperature * 100), 0)

    def _msg_wind_cov(self):
        wind = self.ap.dyn.wind_ned.tolist()  # floats: any() over the array's own scalars costs five times more
        if not any(wind):
            return None  # no wind estimate, no message (PX4's stream sends only an estimate)
        alt = self.ap.origin.alt_m - self.pos[2]
        return mavlink.MAVLink_wind_cov_message, (self.boot_us, wind[0], wind[1], wind[2], 0.1, 0.1, alt, 0.0, 0.0)

    def _msg_vibration(self):
        return mavlink.MAVLink_vibration_message, (self.boot_us, 0.0, 0.0, 0.0, 0, 0, 0)

    def _msg_distance_sensor(self):
        # SIH's downward rangefinder (SIH_DISTSNSR_*): 0 to 100 m, in cm, pointing down (PITCH_270).
        height_cm = int(min(max(-self.pos[2], 0.0), 100.0) * 100)
        # The extensions at pymavlink's defaults, given: a frame of every field is packed without the message.
        return mavlink.MAVLink_distance_sensor_message, (self.boot_ms, 0, 10000, height_cm,
                                                         mavlink.MAV_DISTANCE_SENSOR_LASER, 0,
                                                         mavlink.MAV_SENSOR_ROTATION_PITCH_270, 0,
                                                         0, 0, (0, 0, 0, 0), 0)

    def _msg_ping(self):
        self._ping_seq = (self._ping_seq + 1) % 2**32
        return mavlink.MAVLink_ping_message, (self.boot_us, self._ping_seq, 0, 0)

    def _msg_open_drone_id_location(self):
        ap = self.ap
        lat, lon, alt = self._global()
        v = self.vel
        status = mavlink.MAV_ODID_STATUS_GROUND if ap.landed else mavlink.MAV_ODID_STATUS_AIRBORNE
        direction = int((math.degrees(math.atan2(v[1], v[0])) + 360.0) % 360.0 * 100)
        return mavlink.MAVLink_open_drone_id_location_message, (
            0, 0, [0] * 20, status, direction, int(math.hypot(v[0], v[1]) * 100), int(-v[2] * 100),
            int(lat * 1e7), int(lon * 1e7), alt, alt, mavlink.MAV_ODID_HEIGHT_REF_OVER_TAKEOFF,
            -self.pos[2] + ap.home[2], mavlink.MAV_ODID_HOR_ACC_1_METER, mavlink.MAV_ODID_VER_ACC_1_METER, 0,
            mavlink.MAV_ODID_SPEED_ACC_0_3_METERS_PER_SECOND, 65535.0, 0)

    def _msg_open_drone_id_system(self):
        lat, lon, alt = self.ap.origin.to_global(*self.ap.home)
        since_2019 = int(time.time()) - 1546300800
        return mavlink.MAVLink_open_drone_id_system_message, (0, 0, [0] * 20, 0, 0, int(lat * 1e7), int(lon * 1e7),
                                                              1, 0, -1000.0, -1000.0, 0, 0, alt, since_2019)

    def _msg_link_node_status(self):
        link_sent = sum(link.sent for link in self.links)
        link_received = sum(link.received for link in self.links)
        return mavlink_extra.LinkNodeStatus, (self.boot_ms * 1000, 0, 0, 0, 0, sum(lk.bad_frames for lk in self.links),
                                              0, 0, link_sent, link_received, 0)

    def _msg_time_estimate_to_target(self):
        return mavlink_extra.TimeEstimateToTarget, (-1, -1, -1, -1, -1)

    def _msg_current_event_sequence(self):
        return mavlink_extra.CurrentEventSequence, (0, 0)

    def available_modes(self, index: int) -> list:
        """AVAILABLE_MODES: every mode (index 0) or the one numbered ``index`` (from 1), as v1.16.1 lists them."""
        total = len(modes.AVAILABLE_MODES)
        chosen = range(1, total + 1) if index == 0 else [index] if 1 <= index <= total else []
        out = []
        for i in chosen:
            standard, custom, properties, name = modes.AVAILABLE_MODES[i - 1]
            out.append(mavlink_extra.AvailableModes(total, i, standard, custom, properties, name.encode()))
        return out
