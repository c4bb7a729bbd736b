"""The harness's own safety net around a flight: its geofence, its altitude band, the pilot, the link.

It runs beside the mission and watches the same telemetry. The first thing that means "stop flying
this mission" ends the watch with a `SafetyStop`; `hil.fly` then acts on it:

- pilot takeover (the vehicle is in a mode only a pilot selects, by switch or by moving the sticks):
  stop commanding at once, send nothing, record it;
- geofence or altitude breach: land (or return, as configured);
- link lost (no telemetry): send nothing; the vehicle's own failsafe is in charge.

The flight controller's own geofence (PX4's GF_*) stays in force; this one is the harness's, set
from the mission so that a wrong waypoint or a runaway planner is caught even where the flight
controller's fence is wider or off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bridges.vehicle import Vehicle, VehicleError, VehicleState
from missions.waypoint import WaypointMission

# Modes a harness never selects: seeing one means a pilot chose it (PX4 switches to Position mode
# when a pilot moves the sticks in an auto or offboard mode).
PILOT_MODES = frozenset({"MANUAL", "ALTCTL", "POSCTL", "STABILIZED", "ACRO", "RATTITUDE"})
BREACH_ACTIONS = ("land", "rtl")
# Room around the mission's own extent before the harness calls it a breach.
DEFAULT_MARGIN_M = 10.0
# No telemetry for this long (vehicle time) is a lost link; MAVSDK itself gives up after 3 s.
LINK_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class SafetyLimits:
    """The harness's fence: a cylinder of `radius_m` around home up to `max_altitude_m`."""

    radius_m: float
    max_altitude_m: float
    breach_action: str = "land"

    def __post_init__(self) -> None:
        if self.breach_action not in BREACH_ACTIONS:
            raise ValueError(f"breach action: expected one of {BREACH_ACTIONS}, got {self.breach_action!r}")
        if not (self.radius_m > 0 and self.max_altitude_m > 0):
            raise ValueError(f"geofence: expected radius and max altitude > 0, got {self.radius_m}, {self.max_altitude_m}")

    @classmethod
    def around(cls, mission: WaypointMission, margin_m: float = DEFAULT_MARGIN_M, breach_action: str = "land",
               radius_m: float | None = None, max_altitude_m: float | None = None) -> SafetyLimits:
        """Limits just around a mission, or the ones a user gave."""
        path = mission.reference_path()
        reach = float(max(math.hypot(n, e) for n, e, _ in path))
        top = float(max(-d for _, _, d in path))
        return cls(radius_m if radius_m is not None else reach + margin_m,
                   max_altitude_m if max_altitude_m is not None else top + margin_m, breach_action)

    def mission_violations(self, mission: WaypointMission) -> list[str]:
        """Waypoints the mission asks for that lie outside these limits (checked before arming)."""
        problems = []
        for i, (n, e, d) in enumerate(mission.reference_path()):
            if math.hypot(n, e) > self.radius_m:
                problems.append(f"point {i} is {math.hypot(n, e):.1f} m from home, the fence radius is {self.radius_m:g} m")
            if -d > self.max_altitude_m:
                problems.append(f"point {i} is at {-d:.1f} m, the altitude limit is {self.max_altitude_m:g} m")
        return problems

    def breach(self, state: VehicleState) -> str | None:
        """Why this snapshot is outside the limits, or None."""
        distance = math.hypot(state.north, state.east)
        if distance > self.radius_m:
            return f"geofence breach: {distance:.1f} m from home (limit {self.radius_m:g} m)"
        if state.altitude > self.max_altitude_m:
            return f"altitude breach: {state.altitude:.1f} m (limit {self.max_altitude_m:g} m)"
        return None


@dataclass(frozen=True)
class SafetyStop:
    """Why the harness stopped flying the mission."""

    kind: str  # pilot_takeover | breach | link_lost
    detail: str
    state: VehicleState


async def watch(vehicle: Vehicle, limits: SafetyLimits) -> SafetyStop:
    """Follow telemetry until something means the harness must stop; return what it was."""
    samples = vehicle.telemetry()
    try:
        while True:
            try:
                async with vehicle.deadline(LINK_TIMEOUT_S):
                    state = await anext(samples)
            except TimeoutError:
                return SafetyStop("link_lost", f"no telemetry for {LINK_TIMEOUT_S:g} s; the vehicle's own failsafe "
                                               "is in charge", vehicle.state)
            if state.flight_mode in PILOT_MODES:
                return SafetyStop("pilot_takeover", f"pilot took over ({state.flight_mode}); the harness stopped "
                                                    "commanding", state)
            why = limits.breach(state) if state.armed else None
            if why is not None:
                return SafetyStop("breach", f"{why}; {limits.breach_action} commanded", state)
    finally:
        await samples.aclose()


# Vehicle seconds of telemetry looked at before deciding a vehicle is on the ground (PX4 sends
# HEARTBEAT at 1 Hz of vehicle time).
STATE_SETTLE_S = 1.5
AIRBORNE_ALTITUDE_M = 1.0


class UnexpectedVehicleState(VehicleError):
    """The vehicle is not disarmed on the ground: the harness commands nothing to it."""


async def require_on_ground(vehicle: Vehicle, timeout: float = 10.0) -> None:
    """Refuse (UnexpectedVehicleState) a vehicle that is armed or flying before the harness has touched it.

    Someone else is flying it (a pilot, a mission, another script): uploading, arming or changing a
    parameter now would take it over in the air. Waits (vehicle time) for the first telemetry and HEARTBEAT.
    """
    # Armed and the mode come from HEARTBEAT, which can be handed over well after the first positions: on PX4 at
    # 4x, a run started as another was killed mid-flight had 0.23 s wall of positions before the first HEARTBEAT
    # said armed, and took the vehicle, returning by its failsafe, for one on the ground (1 run in 3).
    await vehicle.wait_until(lambda s: s.t_ns > 0 and s.flight_mode != "UNKNOWN", timeout,
                             "the vehicle's first telemetry and HEARTBEAT")
    # The snapshot is assembled from streams that arrive apart (armed from HEARTBEAT, in-air from
    # EXTENDED_SYS_STATE): the first may predate them, so look over more than a heartbeat period.
    states = await vehicle.collect(STATE_SETTLE_S)
    # Name the worse of the two: a flying snapshot over one that is only armed.
    state = next((s for s in states if s.in_air), next((s for s in states if s.armed),
                                                      states[-1] if states else vehicle.state))
    if state.armed or state.in_air:
        # Armed and well above home is flying too, whether or not the landed state has arrived yet.
        flying = state.in_air or state.altitude > AIRBORNE_ALTITUDE_M
        raise UnexpectedVehicleState(
            f"refused: the vehicle is already {'flying' if flying else 'armed'} (mode {state.flight_mode}, "
            f"{state.altitude:.1f} m above home); the harness starts only from a vehicle disarmed on the ground")

