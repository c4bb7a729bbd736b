"""The one API through which missions, planners, the monitor and tests talk to a flight controller.

Whatever the target (the built-in vehicle in real time or lockstep, PX4 SITL, a real PX4), the
harness holds a `Vehicle`: an async object with telemetry, actions, offboard setpoints, missions
and parameters. Positions are local NED metres relative to home; angles are radians unless a
name says deg.
"""

from __future__ import annotations

import math
from contextlib import AbstractAsyncContextManager
from dataclasses import asdict, dataclass
from typing import AsyncIterator, Mapping, Protocol, Sequence


class VehicleError(RuntimeError):
    """A flight controller refused or failed a request; the message says what and why."""


class VehicleConnectionError(VehicleError):
    """Nothing answered on a connection string within its timeout."""


class CommandDenied(VehicleError):
    """The flight controller refused a command; `reason` is its own words when it gave any."""

    def __init__(self, command: str, result: str, reason: str = ""):
        self.command, self.result, self.reason = command, result, reason
        text = f"{command} refused by the flight controller ({result})"
        super().__init__(f"{text}: {reason}" if reason else text)


@dataclass(frozen=True)
class VehicleState:
    """One telemetry snapshot as the harness saw it."""

    t_ns: int  # harness monotonic clock when this snapshot was assembled
    north: float
    east: float
    down: float
    vn: float
    ve: float
    vd: float
    roll: float
    pitch: float
    yaw: float
    lat: float
    lon: float
    alt_amsl: float
    armed: bool
    in_air: bool
    flight_mode: str
    landed_state: str
    battery_pct: float

    @property
    def altitude(self) -> float:
        """Height above home (m, up positive)."""
        return -self.down

    @property
    def speed(self) -> float:
        return math.sqrt(self.vn * self.vn + self.ve * self.ve + self.vd * self.vd)

    def distance_to(self, north: float, east: float, down: float) -> float:
        return math.sqrt((self.north - north) ** 2 + (self.east - east) ** 2 + (self.down - down) ** 2)

    def as_row(self) -> dict:
        """A flat record row for the telemetry table."""
        return asdict(self)


@dataclass(frozen=True)
class MissionWaypoint:
    """A waypoint as the bridge uploads it (local NED relative to home)."""

    north: float
    east: float
    down: float
    speed: float = math.nan  # m/s; NaN keeps the vehicle's cruise speed
    acceptance_radius: float = math.nan  # m; NaN uses the vehicle's default
    hold_s: float = 0.0
    yaw_deg: float = math.nan


@dataclass(frozen=True)
class MissionProgress:
    """Mission item `current` of `total` (MAVSDK's view: its own item indices)."""

    current: int
    total: int

    @property
    def finished(self) -> bool:
        return self.total > 0 and self.current >= self.total


class Vehicle(Protocol):
    """What every target offers. Implementations: MavsdkVehicle (any MAVLink target)."""

    url: str

    @property
    def state(self) -> VehicleState:
        """The latest telemetry snapshot."""

    def telemetry(self) -> AsyncIterator[VehicleState]:
        """Every new snapshot, at the position rate."""

    async def wait_armable(self, timeout: float = 30.0) -> None: ...

    async def arm(self) -> None: ...

    async def disarm(self) -> None: ...

    async def takeoff(self, altitude: float) -> None:
        """Climb to `altitude` metres above home and hold; returns once there."""

    async def goto(self, north: float, east: float, down: float, yaw: float = math.nan) -> None:
        """Fly to a point and hold there; returns at once (watch `state` to know when it arrived)."""

    async def land(self) -> None: ...

    async def return_to_launch(self) -> None: ...

    async def hold(self) -> None: ...

    async def start_offboard(self, rate_hz: float = 20.0) -> None:
        """Begin streaming setpoints (the current position first), then switch to offboard."""

    async def set_position_ned(self, north: float, east: float, down: float, yaw: float = math.nan) -> None: ...

    async def set_velocity_ned(self, vn: float, ve: float, vd: float, yaw: float = math.nan) -> None: ...

    async def stop_offboard(self) -> None: ...

    async def upload_mission(self, waypoints: Sequence[MissionWaypoint]) -> None: ...

    async def start_mission(self) -> None: ...

    def mission_progress(self) -> AsyncIterator[MissionProgress]: ...

    async def get_param(self, name: str) -> float: ...

    async def set_param(self, name: str, value: float) -> None: ...

    def params_changed(self, changes: Mapping[str, float]) -> AbstractAsyncContextManager[dict[str, float]]:
        """Set parameters for the duration of a block and restore the originals however it ends."""

    async def close(self) -> None:
        """Stop streams and tasks; leave the vehicle disarmed or landing, never flying uncommanded."""
