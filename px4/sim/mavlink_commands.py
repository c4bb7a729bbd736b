"""COMMAND_LONG / COMMAND_INT, SET_MODE and MANUAL_CONTROL: what the built-in vehicle is asked to do,
answered with PX4's results (a refusal's reason goes out as a STATUSTEXT first).
"""

from __future__ import annotations

import math
from typing import Callable

from pymavlink.dialects.v20 import common as mavlink

from physics.faults import SIM_FAULT_COMMAND
from px4.modes import mode_from_set_mode
from px4.sim import inputs, mavlink_extra
from px4.sim.autopilot import Autopilot
from px4.sim.autopilot_types import CommandResult
from px4.sim.calibration import NO_ACK, Calibration
from px4.sim.mavlink_dispatch import handles
from px4.sim.mavlink_link import Link
from px4.sim.mavlink_telemetry import TelemetryStreams

MESSAGE_NAMES = {msg_id: cls.msgname for msg_id, cls in mavlink.mavlink_map.items()}
MESSAGE_NAMES.update({cls.id: cls.msgname for cls in mavlink_extra.MESSAGES})


def _int(value: float, default: int = 0) -> int:
    """A command parameter as an int; clients send NaN for "unused" (MAVSDK does)."""
    return int(value) if math.isfinite(value) and abs(value) < 2**31 else default


def _lround(value: float) -> int:
    """C's lroundf, as PX4 reads integral command parameters: halves away from zero."""
    return int(math.copysign(math.floor(abs(value) + 0.5), value)) if math.isfinite(value) else 0


def send_ack(link: Link, command: int, result: CommandResult | int) -> None:
    """COMMAND_ACK to the client last heard on `link`."""
    if isinstance(result, CommandResult):
        result = result.result
    link.send(mavlink.MAVLink_command_ack_message(command, result, 0, 0, link.peer[0], link.peer[1]))


class CommandProtocol:
    """Handles commands and mode changes for the autopilot.

    A member of `MavlinkServer` (px4/sim/mavlink_server.py), as PX4's mavlink receiver hands commands to
    the commander: it is handed the autopilot, the calibration (MAV_CMD_PREFLIGHT_CALIBRATION runs it), the
    telemetry (a requested message is built there, a stream's rate is the link's) and `flush_texts` (sends
    the queued status texts now, so that a refusal's reason arrives before its ack). It keeps no state.
    """

    def __init__(self, autopilot: Autopilot, calibration: Calibration, telemetry: TelemetryStreams,
                 flush_texts: Callable[[], None]) -> None:
        self.ap = autopilot
        self.calibration = calibration
        self.telemetry = telemetry
        self.flush_texts = flush_texts

    @handles(mavlink.MAVLINK_MSG_ID_COMMAND_LONG)
    def _on_command_long(self, link: Link, msg) -> None:
        p = (msg.param1, msg.param2, msg.param3, msg.param4, msg.param5, msg.param6, msg.param7)
        self._command(link, msg.command, p, mavlink.MAV_FRAME_GLOBAL)

    @handles(mavlink.MAVLINK_MSG_ID_COMMAND_INT)
    def _on_command_int(self, link: Link, msg) -> None:
        # COMMAND_INT carries lat/lon as degrees * 1e7 in x/y.
        x = msg.x / 1e7 if msg.frame != mavlink.MAV_FRAME_LOCAL_NED else float(msg.x)
        y = msg.y / 1e7 if msg.frame != mavlink.MAV_FRAME_LOCAL_NED else float(msg.y)
        if msg.x == 0 and msg.y == 0:
            x = y = math.nan
        p = (msg.param1, msg.param2, msg.param3, msg.param4, x, y, msg.z)
        self._command(link, msg.command, p, msg.frame)

    def _command(self, link: Link, command: int, p: tuple, frame: int) -> None:
        ap = self.ap
        C = mavlink
        if command == C.MAV_CMD_COMPONENT_ARM_DISARM:
            result = self._arm_disarm(p)
        elif command == C.MAV_CMD_NAV_TAKEOFF:
            # PX4 v1.16.1 ACCEPTs an altitude of inf or 1e30 (measured); none is flown: the minimum is.
            alt = inputs.altitude(p[6])
            if frame in (C.MAV_FRAME_GLOBAL_RELATIVE_ALT, C.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT) and not math.isnan(alt):
                alt += ap.origin.alt_m
            result = ap.takeoff(alt, *inputs.latitude_longitude(p[4], p[5]))
        elif command == C.MAV_CMD_NAV_LAND:
            result = ap.land()
        elif command == C.MAV_CMD_NAV_RETURN_TO_LAUNCH:
            result = ap.return_to_launch()
        elif command == C.MAV_CMD_DO_SET_MODE:
            main, sub = _int(p[1]), _int(p[2])
            mode = mode_from_set_mode(main, sub)
            # PX4 v1.16.1 ACCEPTs a main mode it does not know and stays in its mode (measured: main 99).
            result = ap.set_mode(mode) if mode is not None else CommandResult(C.MAV_RESULT_ACCEPTED)
        elif command == C.MAV_CMD_DO_REPOSITION:
            result = self._reposition(p, frame)
        elif command == C.MAV_CMD_DO_ORBIT:
            # param7 is AMSL in every frame, as PX4's orbit reads it (see px4.sim.orbit).
            result = ap.orbit(p[0], p[1], p[2], *inputs.latitude_longitude(p[4], p[5]), inputs.altitude(p[6]))
        elif command == C.MAV_CMD_DO_CHANGE_SPEED:
            result = ap.change_speed(p[1])
        elif command == C.MAV_CMD_MISSION_START:
            result = ap.start_mission(_int(p[0]))
        elif command == C.MAV_CMD_DO_SET_MISSION_CURRENT:
            result = ap.set_mission_current(_int(p[0]))
            if result.accepted:
                link.send(self.telemetry.mission_current())
        elif command == C.MAV_CMD_SET_MESSAGE_INTERVAL:
            result = self._set_interval(link, _int(p[0], -1), p[1])
        elif command == C.MAV_CMD_GET_MESSAGE_INTERVAL:
            result = self._get_interval(link, _int(p[0], -1))
        elif command == C.MAV_CMD_REQUEST_MESSAGE:
            result = self._request_message(link, _int(p[0], -1), _int(p[1]))
        elif command == C.MAV_CMD_REQUEST_AUTOPILOT_CAPABILITIES:
            result = self._request_message(link, C.MAVLINK_MSG_ID_AUTOPILOT_VERSION, 0, ack_command=command)
        elif command == C.MAV_CMD_GET_HOME_POSITION:
            result = self._request_message(link, C.MAVLINK_MSG_ID_HOME_POSITION, 0, ack_command=command)
        elif command == C.MAV_CMD_REQUEST_PROTOCOL_VERSION:
            result = self._request_message(link, mavlink_extra.ProtocolVersion.id, 0, ack_command=command)
        elif command == C.MAV_CMD_PREFLIGHT_CALIBRATION:
            code, texts = self.calibration.command(p, ap.time_s, ap.armed)
            for severity, text in texts:
                ap.say(severity, text)
            self.flush_texts()
            result = CommandResult(code)  # NO_ACK (-1): PX4 leaves this one unanswered
        elif command == C.MAV_CMD_PREFLIGHT_REBOOT_SHUTDOWN:
            # Measured on v1.16.1 SITL: param1 0 (nothing to do for the autopilot) ACCEPTED; a reboot (MAVSDK's
            # action.reboot, param1 1) DENIED, disarmed too: SITL does not reboot itself.
            result = CommandResult(C.MAV_RESULT_ACCEPTED if _lround(p[0]) == 0 else C.MAV_RESULT_DENIED)
        elif command == C.MAV_CMD_INJECT_FAILURE:
            result = self._fault_result(ap.faults.inject_failure(_int(p[0], -1), _int(p[1], -1), _int(p[2]),
                                                                 enabled=ap.params["SYS_FAILURE_EN"] != 0))
        elif command == SIM_FAULT_COMMAND:
            result = self._fault_result(ap.faults.inject_sim(_int(p[0], -1), _int(p[1]), p[2], (p[3], p[4], p[5]),
                                                             enabled=ap.params["SYS_FAILURE_EN"] != 0))
        else:
            result = CommandResult(C.MAV_RESULT_UNSUPPORTED)
        if result.reason:
            # The ack has no room for text; PX4 tells the pilot why in a STATUSTEXT first.
            self.flush_texts()
        if result.result >= 0:  # negative: answered already (REQUEST_MESSAGE), or PX4 answers nothing
            send_ack(link, command, result)

    def _arm_disarm(self, p: tuple) -> CommandResult:
        """MAV_CMD_COMPONENT_ARM_DISARM as PX4 v1.16.1 reads it: param1 rounded (lroundf) must be 0 or 1;
        anything else is refused with a critical text and no COMMAND_ACK at all (measured)."""
        ap = self.ap
        action = _lround(p[0])
        if action not in (0, 1):
            ap.say(mavlink.MAV_SEVERITY_CRITICAL, f"Unsupported ARM_DISARM param: {p[0]:.3f}")
            self.flush_texts()
            return CommandResult(NO_ACK)
        force = _lround(p[1]) == 21196
        if action == 1 and self.calibration.active and not ap.armed:
            ap.say(mavlink.MAV_SEVERITY_CRITICAL, "Arming denied: calibrating")
            return CommandResult(mavlink.MAV_RESULT_TEMPORARILY_REJECTED, "Arming denied: calibrating")
        return ap.arm(force) if action == 1 else ap.disarm(force)

    def _fault_result(self, fault) -> CommandResult:
        """A fault command's outcome, told to the pilot as PX4 tells it."""
        if fault.reason:
            self.ap.say(mavlink.MAV_SEVERITY_WARNING, fault.reason)
        return CommandResult(fault.result, fault.reason)

    def _reposition(self, p: tuple, frame: int) -> CommandResult:
        ap = self.ap
        if not _int(p[1]) & mavlink.MAV_DO_REPOSITION_FLAGS_CHANGE_MODE:
            return CommandResult(mavlink.MAV_RESULT_UNSUPPORTED, "DO_REPOSITION without the change-mode flag is not supported")
        # PX4 v1.16.1 ACCEPTs lat/lon 1e30 and altitude inf and stays (measured); it flew 25 m towards an
        # altitude of -1e30. Here a value that is no place keeps the current one, always.
        speed, yaw, alt = p[0], p[3], inputs.altitude(p[6])
        lat, lon = inputs.latitude_longitude(p[4], p[5])
        n, e, d = ap.position
        if not (math.isnan(lat) or math.isnan(lon)):
            n, e, _ = ap.origin.to_local(lat, lon, ap.origin.alt_m)
        if not math.isnan(alt):
            if frame in (mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT, mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT):
                alt += ap.origin.alt_m
            d = ap.origin.alt_m - alt
        return ap.reposition(n, e, d, yaw, -1.0 if math.isnan(speed) else speed)

    def _stream_name(self, msg_id: int) -> str | None:
        """The message this vehicle can send for an id (None if it has none)."""
        name = MESSAGE_NAMES.get(msg_id)
        return name if name is not None and self.telemetry.can_build(name) else None

    def _set_interval(self, link: Link, msg_id: int, interval_us: float) -> CommandResult:
        if not math.isfinite(interval_us):
            return CommandResult(mavlink.MAV_RESULT_FAILED, "message interval is not a number")  # PX4 v1.16.1
        name = self._stream_name(msg_id)
        if name is None:
            return CommandResult(mavlink.MAV_RESULT_FAILED, f"message id {msg_id} is not streamed")  # as PX4
        if interval_us < 0:
            link.intervals[name] = 0.0
        elif interval_us == 0:
            link.intervals[name] = 1.0 / link.mode_hz[name] if name in link.mode_hz else 0.0
        else:
            link.intervals[name] = interval_us / 1e6
        link.next_due[name] = link.streams_due = self.ap.time_s
        return CommandResult(mavlink.MAV_RESULT_ACCEPTED)

    def _get_interval(self, link: Link, msg_id: int) -> CommandResult:
        """MESSAGE_INTERVAL, then the ack: 0 for a message not streamed (PX4 answers every id so)."""
        name = self._stream_name(msg_id)
        interval = link.intervals.get(name, 0.0) if name is not None else 0.0
        link.send(mavlink.MAVLink_message_interval_message(msg_id & 0xFFFF, int(round(interval * 1e6))))
        return CommandResult(mavlink.MAV_RESULT_ACCEPTED)

    def _request_message(self, link: Link, msg_id: int, param: int,
                         ack_command: int = mavlink.MAV_CMD_REQUEST_MESSAGE) -> CommandResult:
        """The message, then the ACK, as PX4 orders them; DENIED when there is nothing to send."""
        if msg_id == mavlink_extra.AvailableModes.id:
            msgs = self.telemetry.available_modes(param)
        else:
            name = self._stream_name(msg_id)
            msg = self.telemetry.build(name) if name is not None else None
            msgs = [msg] if msg is not None else []
        if not msgs:
            return CommandResult(mavlink.MAV_RESULT_DENIED)
        for msg in msgs:
            link.send(msg)
        send_ack(link, ack_command, mavlink.MAV_RESULT_ACCEPTED)
        return CommandResult(NO_ACK)  # acknowledged above

    @handles(mavlink.MAVLINK_MSG_ID_SET_MODE)
    def _on_set_mode(self, link: Link, msg) -> None:
        mode = mode_from_set_mode((msg.custom_mode >> 16) & 0xFF, (msg.custom_mode >> 24) & 0xFF)
        if mode is not None:
            self.ap.set_mode(mode)

    @handles(mavlink.MAVLINK_MSG_ID_MANUAL_CONTROL)
    def _on_manual_control(self, link: Link, msg) -> None:
        # PX4's MANUAL_CONTROL: x pitch, y roll, r yaw in -1000..1000; z throttle 0..1000.
        self.ap.manual_input(msg.x / 1000.0, msg.y / 1000.0, msg.z / 1000.0, msg.r / 1000.0)
