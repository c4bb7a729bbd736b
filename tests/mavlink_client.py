"""A blocking pymavlink client with the few helpers the MAVLink-level tests need (a ground station's view)."""

from __future__ import annotations

import socket
import time

from pymavlink import mavutil
from pymavlink.dialects.v20 import common as mavlink

from px4.modes import FlightMode, decode_custom_mode

# A ground station beats at 1 Hz; faster here, for vehicles at a speed factor (PX4 stops sending
# STATUSTEXT to a link whose GCS heartbeat it has not seen for a while, in its own clock).
BEAT_S = 0.2


class Client:
    """A blocking pymavlink connection with the few helpers these tests need."""

    def __init__(self, url: str, dialect: str = "common", beat_type: int = mavlink.MAV_TYPE_GCS):
        """`url`: udpin://HOST:PORT (listen; the vehicle sends here) or udpout:HOST:PORT (the vehicle listens).
        `beat_type`: what this client's HEARTBEATs say it is; a ground station (the default) keeps the
        vehicle's data link alive for its data-link-loss failsafe, an onboard controller does not."""
        self.beat_type = beat_type
        self.conn = mavutil.mavlink_connection(url.replace("udpin://", "udpin:").replace("udpout://", "udpout:"),
                                               source_system=245, source_component=190, dialect=dialect)
        self.texts: list[str] = []
        # Sticks (pitch, roll, throttle, yaw: -1..1, throttle 0..1) sent as MANUAL_CONTROL at 20 Hz while
        # this client waits, as a ground-station joystick does; None sends nothing (no RC).
        self.sticks: tuple[float, float, float, float] | None = None
        self._sticks_sent = 0.0
        self._beat_sent = 0.0
        # A vehicle at 4x streams ~2000 messages a second (PX4 v1.16's default set): a roomy buffer keeps
        # a test that looks away for a moment from losing the replies that follow.
        self.conn.port.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        # The vehicle may not listen yet, and a udpout peer learns of us only from what we send.
        self.heartbeat = None
        deadline = time.monotonic() + 10.0
        while self.heartbeat is None and time.monotonic() < deadline:
            self._beat()
            self.heartbeat = self.conn.recv_match(type="HEARTBEAT", blocking=True, timeout=0.2)
        assert self.heartbeat is not None, "no HEARTBEAT from the vehicle"
        self.target = (self.heartbeat.get_srcSystem(), self.heartbeat.get_srcComponent())

    def recv(self, kind: str, timeout: float, condition=lambda m: True):
        """The first message of this kind that meets ``condition`` within ``timeout`` s, else None."""
        for msg in self.stream(timeout, {kind}):
            if condition(msg):
                return msg
        return None

    def stream(self, seconds: float, kinds: set[str]):
        """Yield every message of these kinds as it arrives, for at most ``seconds`` (stop early by breaking)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self._beat()
            self._send_sticks()
            msg = self.conn.recv_match(blocking=True, timeout=0.05)
            if msg is None:
                continue
            if msg.get_type() == "STATUSTEXT":
                self.texts.append(msg.text)
            if msg.get_type() in kinds:
                yield msg

    def collect(self, seconds: float, kinds: set[str]) -> list:
        """Every message of these kinds that arrives within ``seconds``, in arrival order."""
        return list(self.stream(seconds, kinds))

    def drain(self) -> None:
        """Drop what is waiting (keeping its texts): what comes next answers what the test sends next."""
        while (msg := self.conn.recv_match(blocking=False)) is not None:
            # A full buffer takes a loaded machine long enough to parse that a joystick left unsent
            # meanwhile reads as lost RC to the vehicle (and Position is then not available).
            self._send_sticks()
            if msg.get_type() == "STATUSTEXT":
                self.texts.append(msg.text)

    def wait_armable(self, timeout: float = 5.0) -> None:
        """Wait for SYS_STATUS to report the pre-arm checks passing, as a ground station does."""
        armable = self.recv("SYS_STATUS", timeout,
                            lambda m: m.onboard_control_sensors_health & mavlink.MAV_SYS_STATUS_PREARM_CHECK)
        assert armable is not None, "vehicle never reported its pre-arm checks passing"

    def _beat(self) -> None:
        if time.monotonic() - self._beat_sent > BEAT_S:
            self.conn.mav.heartbeat_send(self.beat_type, mavlink.MAV_AUTOPILOT_INVALID, 0, 0, 0)
            self._beat_sent = time.monotonic()

    def _send_sticks(self) -> None:
        # Every 20 wall ms: at 4x that is 12.5 Hz of vehicle time, well inside PX4's RC loss timeout
        # (COM_RC_LOSS_T 0.5 s) even when a loaded machine delays a send; at 50 ms a late send could
        # read as a lost and regained joystick and PX4 then ignored the stick movement.
        if self.sticks is None or time.monotonic() - self._sticks_sent < 0.02:
            return
        pitch, roll, throttle, yaw = self.sticks
        self.conn.mav.manual_control_send(self.target[0], int(pitch * 1000), int(roll * 1000), int(throttle * 1000),
                                          int(yaw * 1000), 0)
        self._sticks_sent = time.monotonic()

    def command(self, command: int, *params: float) -> int:
        p = list(params) + [0.0] * (7 - len(params))
        self.drain()
        self.conn.mav.command_long_send(*self.target, command, 0, *p)
        ack = self.recv("COMMAND_ACK", 3.0, lambda m: m.command == command)
        assert ack is not None, f"no COMMAND_ACK for command {command}"
        return ack.result

    def set_mode(self, mode: FlightMode) -> int:
        main, sub = mode.value
        return self.command(mavlink.MAV_CMD_DO_SET_MODE, mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, main, sub)

    def wait_mode(self, mode: FlightMode, timeout: float) -> bool:
        return self.recv("HEARTBEAT", timeout, lambda m: decode_custom_mode(m.custom_mode) == mode) is not None

    def wait_altitude(self, alt: float, tolerance: float, timeout: float):
        return self.recv("LOCAL_POSITION_NED", timeout, lambda m: abs(-m.z - alt) <= tolerance)

    def position_setpoint(self, north: float, east: float, down: float) -> None:
        self.conn.mav.set_position_target_local_ned_send(0, *self.target, mavlink.MAV_FRAME_LOCAL_NED, 0x09F8,
                                                         north, east, down, 0, 0, 0, 0, 0, 0, 0, 0)

    def close(self) -> None:
        self.conn.close()
