"""The small types the built-in flight controller and its parts share: command results, the
landed state, the offboard input and the phases of the multi-stage auto modes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from pymavlink.dialects.v20 import common as mavlink

from px4.modes import FlightMode
from px4.sim.control import AttitudeSetpoint, TrajectorySetpoint


class LandedState(Enum):
    """EXTENDED_SYS_STATE.landed_state values."""

    ON_GROUND = mavlink.MAV_LANDED_STATE_ON_GROUND
    IN_AIR = mavlink.MAV_LANDED_STATE_IN_AIR
    TAKEOFF = mavlink.MAV_LANDED_STATE_TAKEOFF
    LANDING = mavlink.MAV_LANDED_STATE_LANDING


@dataclass(frozen=True)
class CommandResult:
    """The outcome of a command: a MAV_RESULT and, when refused, the reason a pilot would read."""

    result: int
    reason: str = ""

    @property
    def accepted(self) -> bool:
        return self.result == mavlink.MAV_RESULT_ACCEPTED


ACCEPTED = CommandResult(mavlink.MAV_RESULT_ACCEPTED)
# A pre-arm refusal PX4 makes without a word (Offboard without a setpoint stream).
SILENT_REFUSAL = "silent"


def denied(reason: str) -> CommandResult:
    return CommandResult(mavlink.MAV_RESULT_DENIED, reason)


def rejected(reason: str) -> CommandResult:
    return CommandResult(mavlink.MAV_RESULT_TEMPORARILY_REJECTED, reason)


@dataclass
class OffboardInput:
    """The last offboard setpoint and when (sim time) it arrived."""

    setpoint: TrajectorySetpoint | AttitudeSetpoint
    time_s: float


class AutoPhase(Enum):
    """Sub-steps of the multi-stage auto modes."""

    CLIMB = 1
    CRUISE = 2
    DESCEND = 3
    LAND = 4
    HOLD_TIME = 5
    DONE = 6


# The auto modes (FlightMode.is_auto, a property that reads the enum's value: the navigator asks 50
# times a second). A tuple: its members are found by identity, where a set calls Enum's __hash__, a
# Python function.
AUTO_MODES = tuple(mode for mode in FlightMode if mode.is_auto)
# Modes that need a position estimate; without one PX4's commander refuses them and its
# position-loss failsafe descends without horizontal control (nav state Descend, reported as Land).
POSITION_MODES = frozenset({FlightMode.POSCTL, FlightMode.ORBIT, FlightMode.OFFBOARD, FlightMode.TAKEOFF,
                             FlightMode.HOLD, FlightMode.MISSION, FlightMode.RTL})
# Modes PX4's commander never returns to after a disarm (UserModeIntention keeps the last mode the user
# chose that is not one of them): Land, Return and Orbit prevent arming; a Takeoff would climb at the
# next arming (PX4 excludes it since its takeoff-intention check).
NOT_AFTER_DISARM = frozenset({FlightMode.LAND, FlightMode.RTL, FlightMode.ORBIT, FlightMode.TAKEOFF})
