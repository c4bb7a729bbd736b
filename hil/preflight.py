"""The pre-flight checklist: what must hold before the harness arms anything, printed as a list.

Each check says what it looked at. A failed required check stops the flight before arming; an
advisory one (the flight controller's own geofence on a simulator, where it is off by default as on
PX4) is shown but does not stop it. On a real aircraft every check is required.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bridges.vehicle import Vehicle, VehicleError
from hil.safety import SafetyLimits
from missions.waypoint import WaypointMission

MIN_SATELLITES = 6


@dataclass(frozen=True)
class Check:
    """One line of the checklist."""

    name: str
    ok: bool
    detail: str
    required: bool = True

    def line(self) -> str:
        mark = "ok" if self.ok else ("FAIL" if self.required else "warn")
        return f"  [{mark:>4}] {self.name}: {self.detail}"


@dataclass(frozen=True)
class Checklist:
    checks: tuple[Check, ...]

    @property
    def passed(self) -> bool:
        return all(c.ok or not c.required for c in self.checks)

    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.ok and c.required]

    def text(self) -> str:
        verdict = "pre-flight checks passed" if self.passed else "pre-flight checks FAILED: not arming"
        return "\n".join(["pre-flight checklist:", *(c.line() for c in self.checks), verdict])


async def run_checklist(vehicle: Vehicle, mission: WaypointMission, limits: SafetyLimits, *, hardware: bool,
                        min_battery_pct: float = 50.0) -> Checklist:
    """Look at the vehicle and the mission; nothing here commands the vehicle."""
    status = await vehicle.preflight_status()
    checks = [
        Check("heartbeat and autopilot", status.autopilot.startswith(("PX4", "built-in")), status.autopilot),
        Check("sensors and estimator", status.sensors_ok,
              "gyro, accelerometer, magnetometer and local position healthy" if status.sensors_ok
              else "not healthy (calibration or position estimate)"),
        Check("GPS fix", status.gps_fix_type >= 3 and status.satellites >= MIN_SATELLITES,
              f"fix type {status.gps_fix_type}, {status.satellites} satellites (need a 3D fix, >= {MIN_SATELLITES})"),
        Check("battery", math.isfinite(status.battery_pct) and status.battery_pct >= min_battery_pct,
              f"{status.battery_pct:.0f} % (need >= {min_battery_pct:g} %)"),
        Check("pre-arm checks", status.armable, "autopilot reports armable" if status.armable
              else "autopilot reports NOT armable (see its messages)"),
        await _fc_geofence(vehicle, limits, required=hardware),
    ]
    violations = limits.mission_violations(mission)
    checks.append(Check("harness limits agree with the mission", not violations,
                        f"fence {limits.radius_m:.1f} m, ceiling {limits.max_altitude_m:.1f} m, breach -> {limits.breach_action}"
                        if not violations else "; ".join(violations)))
    return Checklist(tuple(checks))


async def _fc_geofence(vehicle: Vehicle, limits: SafetyLimits, required: bool) -> Check:
    """The flight controller's own fence (GF_*) is on, and no tighter than the harness's so they agree."""
    try:
        action = await vehicle.get_param("GF_ACTION")
        hor = await vehicle.get_param("GF_MAX_HOR_DIST")
        ver = await vehicle.get_param("GF_MAX_VER_DIST")
    except VehicleError as exc:
        return Check("flight controller geofence", False, f"cannot read GF_* parameters ({exc})", required)
    if action == 0 or hor <= 0 or ver <= 0:
        return Check("flight controller geofence", False,
                     f"off (GF_ACTION {action:g}, GF_MAX_HOR_DIST {hor:g} m, GF_MAX_VER_DIST {ver:g} m): set them so "
                     "the autopilot fences the vehicle even if the harness stops", required)
    if hor < limits.radius_m or ver < limits.max_altitude_m:
        return Check("flight controller geofence", False,
                     f"tighter than the harness's ({hor:g} m / {ver:g} m vs {limits.radius_m:g} m / "
                     f"{limits.max_altitude_m:g} m): the autopilot would cut the mission short", required)
    return Check("flight controller geofence", True, f"GF_ACTION {action:g}, {hor:g} m radius, {ver:g} m ceiling",
                 required)
