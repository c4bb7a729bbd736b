"""The MAVLink HIL simulator protocol, as PX4's `simulator_mavlink` module (SITL) and its MAVLink
receiver on a board in HITL mode read it.

Simulator to PX4:

* HIL_SENSOR: accelerometer (m/s^2, body FRD), gyroscope (rad/s), magnetometer (gauss), absolute
  and differential pressure (hPa), temperature (degC). `fields_updated` says which groups are new:
  PX4 takes a group only when *all* of its bits are set (accel 0x007, gyro 0x038, mag 0x1C0, baro
  0x1A00 = pressure, pressure altitude and temperature, differential pressure 0x400). `id` is the
  sensor instance; instance 0 is the primary IMU, and its `time_usec` *is* PX4's clock in SITL
  lockstep (each one sets the clock and lets every module run once).
* HIL_GPS: lat/lon in degE7, altitude in mm AMSL, eph/epv in cm, velocities in cm/s, course in
  cdeg (65535 unknown), `id` the receiver instance.
* HIL_STATE_QUATERNION (optional): the true state, which PX4 logs as its *_groundtruth topics.

PX4 to simulator: HIL_ACTUATOR_CONTROLS, one after every actuator update (in SITL lockstep: one
per primary HIL_SENSOR), `time_usec` the PX4 time it was computed at, `mode` with the armed flag
(128), `flags` bit 0 set in lockstep. A multicopter's motors are in [0, 1] (PX4's pwm_out_sim scales
PWM_MAIN_MIN..MAX to 0..1), all zero while disarmed; channel i is the output whose function is
PWM_MAIN_FUNC(i+1) (SITL) or HIL_ACT_FUNC(i+1) (HITL), which airframe 10016 and PX4's quad-x
defaults set to Motor i+1, so channel i drives PX4's motor i+1 (front-right, rear-left, front-left,
rear-right), the order `physics.dynamics` numbers its rotors in.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from pymavlink.dialects.v20 import common as mavlink

from px4.sim.mavlink_encode import encode_args, x25

ACCEL_BITS = 0x007
GYRO_BITS = 0x038
MAG_BITS = 0x1C0
BARO_BITS = 0x200 | 0x800 | 0x1000  # absolute pressure, pressure altitude, temperature
DIFF_PRESSURE_BITS = 0x400
ARMED_FLAG = mavlink.MAV_MODE_FLAG_SAFETY_ARMED
LOCKSTEP_FLAG = 1
UNKNOWN_COURSE = 65535
# The simulator speaks as a component of its own, never as the autopilot (PX4 ignores its own echo).
SIMULATOR_SYSID = 1
SIMULATOR_COMPID = 51
MOTORS = 4
_SENSOR = mavlink.MAVLink_hil_sensor_message
_GPS = mavlink.MAVLink_hil_gps_message
_STATE = mavlink.MAVLink_hil_state_quaternion_message
_CONTROLS = mavlink.MAVLink_hil_actuator_controls_message
_HEAD = 10  # a MAVLink 2 frame's header, with its start byte
_CONTROLS_CRC_EXTRA = bytes((_CONTROLS.crc_extra,))
_CONTROLS_LAYOUT = _CONTROLS.unpacker  # wire order: time_usec, flags, controls[16], mode
_CONTROLS_FULL = _CONTROLS_LAYOUT.size  # its payload's length when the last byte (mode) is not zero


class ActuatorControls(NamedTuple):
    """One HIL_ACTUATOR_CONTROLS: PX4's time (us), its armed flag, and its 16 normalized outputs (a named
    tuple: one is made every lockstep step, in half the time of a frozen dataclass)."""

    time_usec: int
    armed: bool
    lockstep: bool
    controls: tuple[float, ...]

    @classmethod
    def from_message(cls, msg) -> "ActuatorControls":
        return cls(int(msg.time_usec), bool(msg.mode & ARMED_FLAG), bool(msg.flags & LOCKSTEP_FLAG),
                   tuple(msg.controls))

    def motors(self, channels: tuple[int, ...]) -> list[float]:
        """Each motor's command (fraction of full thrust, 0..1) read from its output channel; all zero
        while disarmed. A NaN (an output PX4 has not set) counts as stopped."""
        if not self.armed:
            return [0.0] * len(channels)
        # (v != v: NaN; conditional expressions rather than min/max calls, once every lockstep step)
        return [0.0 if v != v or v <= 0.0 else (1.0 if v > 1.0 else v) for v in map(self.controls.__getitem__, channels)]


class HilEncoder:
    """Packs the simulator's messages (one MAVLink sequence counter for the whole link) as pymavlink's
    `msg.pack` packs them, straight from the values (`px4.sim.mavlink_encode.encode_args`): a frame goes
    out every IMU period of a lockstep loop that waits on nothing else."""

    def __init__(self, sysid: int = SIMULATOR_SYSID, compid: int = SIMULATOR_COMPID):
        self._mav = mavlink.MAVLink(None, srcSystem=sysid, srcComponent=compid)

    def hil_sensor(self, time_usec: int, accel, gyro, mag, pressure_hpa: float, diff_pressure_hpa: float,
                   pressure_alt_m: float, temperature_c: float, fields_updated: int, sensor_id: int = 0) -> bytes:
        return encode_args(_SENSOR, (
            time_usec, accel[0], accel[1], accel[2], gyro[0], gyro[1], gyro[2], mag[0], mag[1], mag[2],
            pressure_hpa, diff_pressure_hpa, pressure_alt_m, temperature_c, fields_updated, sensor_id), self._mav)

    def hil_gps(self, time_usec: int, lat_deg: float, lon_deg: float, alt_m: float, vel_ned, eph_m: float,
                epv_m: float, satellites: int, fix_type: int = mavlink.GPS_FIX_TYPE_3D_FIX, gps_id: int = 0) -> bytes:
        vn, ve, vd = vel_ned
        ground = math.hypot(vn, ve)
        # Below walking pace the course is noise; say "unknown" as a receiver does.
        course = UNKNOWN_COURSE if ground < 0.5 else int(round(math.degrees(math.atan2(ve, vn)) % 360.0 * 100)) % 36000
        return encode_args(_GPS, (
            time_usec, fix_type, int(round(lat_deg * 1e7)), int(round(lon_deg * 1e7)), int(round(alt_m * 1000)),
            _centi(eph_m), _centi(epv_m), _centi(ground), _cm_s(vn), _cm_s(ve), _cm_s(vd), course, satellites,
            gps_id, 0), self._mav)

    def hil_state_quaternion(self, time_usec: int, q, omega, lat_deg: float, lon_deg: float, alt_m: float, vel_ned,
                             accel_body) -> bytes:
        airspeed = _centi(math.sqrt(sum(v * v for v in vel_ned)))
        return encode_args(_STATE, (
            time_usec, q, omega[0], omega[1], omega[2], int(round(lat_deg * 1e7)),
            int(round(lon_deg * 1e7)), int(round(alt_m * 1000)), _cm_s(vel_ned[0]), _cm_s(vel_ned[1]),
            _cm_s(vel_ned[2]), airspeed, airspeed, *(_milli_g(a) for a in accel_body)), self._mav)


def take_actuator_controls(data: bytes) -> tuple[ActuatorControls | None, bytes]:
    """The HIL_ACTUATOR_CONTROLS that `data` starts with and the bytes after it, read straight from the
    frame (PX4 answers every lockstep step with one, and pymavlink's generic parser cost as much as the
    rest of the harness's step); (None, data) unless `data` starts with a whole unsigned MAVLink 2 frame
    of that message with a good checksum, for a general parser to take."""
    if len(data) <= _HEAD:
        return None, data
    length = data[1]
    end = _HEAD + length + 2
    if (end > len(data) or data[0] != mavlink.PROTOCOL_MARKER_V2 or data[2] != 0
            or data[7] | data[8] << 8 | data[9] << 16 != _CONTROLS.id or length > _CONTROLS_FULL):
        return None, data
    if x25(data[1:end - 2] + _CONTROLS_CRC_EXTRA) != data[end - 2] | data[end - 1] << 8:
        return None, data
    # MAVLink 2 cuts trailing zero bytes off a payload: they come back as zeros. The last byte is the mode (PX4's
    # MAV_MODE_FLAGs, not zero once it runs), so an answer mostly comes whole and is read in place.
    values = (_CONTROLS_LAYOUT.unpack_from(data, _HEAD) if length == _CONTROLS_FULL
              else _CONTROLS_LAYOUT.unpack(data[_HEAD:end - 2].ljust(_CONTROLS_FULL, b"\0")))
    controls = ActuatorControls(values[0], bool(values[18] & ARMED_FLAG), bool(values[1] & LOCKSTEP_FLAG),
                                values[2:18])
    return controls, data[end:]


def _centi(value: float) -> int:
    """Metres (or m/s) as the unsigned centi-units HIL_GPS carries, clamped to its uint16 field."""
    return max(0, min(65534, int(round(value * 100))))


def _cm_s(value: float) -> int:
    return max(-32768, min(32767, int(round(value * 100))))


def _milli_g(value: float) -> int:
    return max(-32768, min(32767, int(round(value / 9.80665 * 1000))))
