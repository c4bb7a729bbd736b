"""One MAVLink port of the built-in vehicle: its codec and sequence numbers and its stream rates. The
protocols keep their own state per link (mavlink_params, mavlink_mission, mavlink_files), so a link knows
none of them.
"""

from __future__ import annotations

from pymavlink.dialects.v20 import common as mavlink

from px4.sim.mavlink_encode import encode, encode_args

# Rates (Hz) of the streams PX4 v1.16.1 SITL sends on its offboard link, disarmed on the ground
# (px4/reference/px4_v1.16.1_sih_mavlink_surface.json; a test holds this table to it). WIND_COV is
# configured at 10 Hz too but PX4 sends it only once its estimator has a wind estimate, which SIH's
# never has; here it goes out while the simulation has wind.
DEFAULT_RATES_HZ = {
    "HEARTBEAT": 1.0, "SYS_STATUS": 5.0, "EXTENDED_SYS_STATE": 5.0, "HOME_POSITION": 0.5,
    "GPS_RAW_INT": 8.0, "GLOBAL_POSITION_INT": 50.0, "LOCAL_POSITION_NED": 30.0, "ODOMETRY": 30.0,
    "ATTITUDE": 100.0, "ATTITUDE_QUATERNION": 50.0, "ALTITUDE": 10.0, "BATTERY_STATUS": 0.5,
    "VFR_HUD": 10.0, "HIGHRES_IMU": 50.0, "ATTITUDE_TARGET": 10.0, "POSITION_TARGET_LOCAL_NED": 10.0,
    "SERVO_OUTPUT_RAW": 10.0, "ESTIMATOR_STATUS": 1.0, "SYSTEM_TIME": 1.0, "TIMESYNC": 10.0,
    "MISSION_CURRENT": 1.0, "CURRENT_MODE": 0.5, "DISTANCE_SENSOR": 10.0, "OPEN_DRONE_ID_LOCATION": 1.0,
    "OPEN_DRONE_ID_SYSTEM": 1.0, "PING": 1.0, "SCALED_PRESSURE": 1.0, "VIBRATION": 0.5,
    "LINK_NODE_STATUS": 1.0, "TIME_ESTIMATE_TO_TARGET": 0.5, "CURRENT_EVENT_SEQUENCE": 0.4, "WIND_COV": 10.0,
}
# PX4 v1.16.1 SITL's ground-station port (18570+N) at rest (measured, 10 s at 1x): MAVLink's normal mode, seven
# streams raised to 50 Hz by its start-up script; no HIGHRES_IMU, ODOMETRY, TIMESYNC or SYSTEM_TIME.
GCS_RATES_HZ = {
    "HEARTBEAT": 1.0, "SYS_STATUS": 1.0, "EXTENDED_SYS_STATE": 1.0, "HOME_POSITION": 0.5, "GPS_RAW_INT": 5.0,
    "GLOBAL_POSITION_INT": 50.0, "LOCAL_POSITION_NED": 50.0, "ATTITUDE": 50.0, "ATTITUDE_QUATERNION": 50.0,
    "ATTITUDE_TARGET": 50.0, "POSITION_TARGET_LOCAL_NED": 50.0, "SERVO_OUTPUT_RAW": 50.0, "ALTITUDE": 1.0,
    "BATTERY_STATUS": 0.5, "DISTANCE_SENSOR": 0.5, "ESTIMATOR_STATUS": 0.5, "MISSION_CURRENT": 1.0,
    "OPEN_DRONE_ID_LOCATION": 1.0, "OPEN_DRONE_ID_SYSTEM": 1.0, "PING": 0.1, "SCALED_PRESSURE": 1.0,
    "VFR_HUD": 4.0, "VIBRATION": 0.1,
}
# What SET_MESSAGE_INTERVAL 0 restores there: the normal mode's own rate (measured, after each was set to 0),
# not the start-up script's; a message the mode does not stream stays off.
GCS_MODE_HZ = {**GCS_RATES_HZ, "ATTITUDE": 15.0, "ATTITUDE_QUATERNION": 10.0, "ATTITUDE_TARGET": 2.0,
               "GLOBAL_POSITION_INT": 5.0, "LOCAL_POSITION_NED": 1.0, "POSITION_TARGET_LOCAL_NED": 1.5,
               "SERVO_OUTPUT_RAW": 1.0}


class Link:
    """One MAVLink port of the vehicle: codec, sequence numbers, rates and counters."""

    def __init__(self, transport, sysid: int, compid: int, gcs: bool = False):
        """`gcs`: a ground station's port, with the streams of PX4's (else its API port's, onboard mode)."""
        self.transport = transport
        self.gcs = gcs
        self.mav = mavlink.MAVLink(None, srcSystem=sysid, srcComponent=compid)
        self.mav.robust_parsing = True
        self.intervals = {name: 1.0 / hz for name, hz in (GCS_RATES_HZ if gcs else DEFAULT_RATES_HZ).items()}
        self.mode_hz = GCS_MODE_HZ if gcs else DEFAULT_RATES_HZ  # what SET_MESSAGE_INTERVAL 0 restores
        self.next_due: dict[str, float] = {}
        # The earliest vehicle time any stream is due (min of next_due); whoever changes `intervals` resets
        # it to now, so the table is walked only when something is due, not every tick.
        self.streams_due = 0.0
        self.sent = 0
        self.peer: tuple[int, int] = (255, 190)
        self.received = 0
        self.bad_frames = 0

    def send(self, msg) -> None:
        """Encode with this link's sequence numbers and hand to the transport."""
        buf = encode(msg, self.mav)
        self.mav.seq = (self.mav.seq + 1) % 256
        self.sent += 1
        self.transport.send(buf)

    def send_args(self, cls: type, args: tuple) -> None:
        """`send(cls(*args))` without making the message (what the streams send: telemetry.fields)."""
        buf = encode_args(cls, args, self.mav)
        self.mav.seq = (self.mav.seq + 1) % 256
        self.sent += 1
        self.transport.send(buf)

    def parse(self, data: bytes) -> list:
        if getattr(self.transport, "datagrams", False):
            # Each datagram starts afresh: what a previous one left unfinished (a stray `fd ff`, junk)
            # can never be completed by the next, and must not swallow its frames.
            self.mav.buf, self.mav.buf_index = bytearray(), 0
            self.mav.expected_length = mavlink.HEADER_LEN_V1 + 2
        try:
            msgs = self.mav.parse_buffer(data) or []
        except mavlink.MAVError:
            self.bad_frames += 1
            return []
        good = []
        for m in msgs:
            if m.get_type() == "BAD_DATA":
                self.bad_frames += 1
            else:
                good.append(m)
        return good
