"""Sending a `FaultSpec` to a flight controller through the `Vehicle`, with PX4's enabling parameter handled.

- Vehicle-scope faults go as MAV_CMD_INJECT_FAILURE with PX4's unit, type and instance
  (`Vehicle.inject_failure`: MAVSDK's failure plugin on MAVLink targets), the same on the built-in
  vehicle, PX4 SITL and a real PX4.
- Simulator-scope faults go as the built-in vehicle's SIM_FAULT_COMMAND (`Vehicle.inject_sim_fault`);
  PX4 answers UNSUPPORTED, so they come back refused there.
- Onboard faults are not the flight controller's business: `inject` says so (NOT_APPLICABLE).

PX4 drops every failure command while SYS_FAILURE_EN is 0 (DENIED), and MAVSDK's plugin refuses
client-side (DISABLED) when it read 0. `FailureInjector(enable=True)` sets it to 1 for the session
with the Vehicle's `params_changed`, so the original value comes back however the session ends,
and every fault still active is cleared (type OK / severity 0) on the way out. Note for real PX4:
its motor FailureInjector reads SYS_FAILURE_EN when it starts, so on hardware set it and reboot
before a motor test; sensor failures follow the parameter at once.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from pymavlink.dialects.v20 import common as mavlink

from bridges.vehicle import Vehicle, VehicleError
from missions.faults import FaultSpec
from physics.faults import SimFault

ENABLE_PARAM = "SYS_FAILURE_EN"
_MAV_RESULTS = {mavlink.MAV_RESULT_ACCEPTED: "SUCCESS", mavlink.MAV_RESULT_DENIED: "DENIED",
                mavlink.MAV_RESULT_TEMPORARILY_REJECTED: "DENIED", mavlink.MAV_RESULT_UNSUPPORTED: "UNSUPPORTED",
                mavlink.MAV_RESULT_FAILED: "FAILED"}


def failure_result(mav_result: int) -> str:
    """A fault command's MAV_RESULT as MAVSDK's failure plugin names its results."""
    return _MAV_RESULTS.get(mav_result, str(mav_result))

# What each refusal usually means (the flight controller's own words, if any, are in its STATUSTEXT).
_EXPLANATIONS = {
    "DENIED": "the flight controller denied it (SYS_FAILURE_EN is 0, or the value is out of range)",
    "DISABLED": "SYS_FAILURE_EN is 0, so MAVSDK did not send it",
    "UNSUPPORTED": "the flight controller does not implement this fault",
    "TIMEOUT": "no COMMAND_ACK: nothing on the flight controller handles this fault (PX4 v1.14: battery, RC)",
    "NO_SYSTEM": "no flight controller connected",
}


@dataclass(frozen=True)
class InjectionResult:
    """What the flight controller answered. `result` uses MAVSDK's FailureResult names."""

    accepted: bool
    result: str  # SUCCESS | DENIED | DISABLED | UNSUPPORTED | TIMEOUT | FAILED | NOT_APPLICABLE | ...
    reason: str = ""


class FailureInjector:
    """Inject and clear faults on one vehicle. Use as ``async with FailureInjector(vehicle) as inj``."""

    def __init__(self, vehicle: Vehicle, enable: bool = True):
        self.vehicle = vehicle
        self.enable = enable
        self.original_enable: float | None = None
        self._active: list[FaultSpec] = []
        self._stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> "FailureInjector":
        await self._stack.__aenter__()
        try:
            self.original_enable = await self.vehicle.get_param(ENABLE_PARAM)
        except VehicleError:
            self.original_enable = None  # not a PX4 parameter set: the commands will tell
        if self.enable and self.original_enable == 0:
            await self._stack.enter_async_context(self.vehicle.params_changed({ENABLE_PARAM: 1}))
        return self

    async def __aexit__(self, *exc) -> None:
        try:
            for spec in reversed(self._active):
                with contextlib.suppress(Exception):
                    await self.clear(spec)
        finally:
            await self._stack.__aexit__(*exc)

    @property
    def active(self) -> tuple[FaultSpec, ...]:
        """The faults injected and not cleared yet (cleared on leaving the injector)."""
        return tuple(self._active)

    async def inject(self, spec: FaultSpec) -> InjectionResult:
        """Start a fault; the result says whether the flight controller took it."""
        result = await self._send(spec, clear=False)
        if result.accepted:
            self._active.append(spec)
        return result

    async def clear(self, spec: FaultSpec) -> InjectionResult:
        """End a fault (PX4's type OK; severity 0 for simulator faults)."""
        if spec in self._active:
            self._active.remove(spec)
        return await self._send(spec, clear=True)

    async def _send(self, spec: FaultSpec, clear: bool) -> InjectionResult:
        if spec.scope == "onboard":
            return InjectionResult(False, "NOT_APPLICABLE", "onboard faults are applied by the planner runtime")
        if spec.scope == "sim":
            answer = await self.vehicle.inject_sim_fault(int(_sim_kind(spec)), spec.instance,
                                                         0.0 if clear else spec.severity,
                                                         (0.0, 0.0, 0.0) if clear else spec.wind)
        else:
            unit, ftype = spec.px4_unit_type
            answer = await self.vehicle.inject_failure(unit, mavlink.FAILURE_TYPE_OK if clear else ftype, spec.instance)
        return InjectionResult(True, "SUCCESS") if answer == "SUCCESS" else _refused(answer)


def _sim_kind(spec: FaultSpec) -> SimFault:
    """The built-in vehicle's simulator fault for a sim-scope spec."""
    if spec.type == "steady":
        return SimFault.WIND
    if spec.type == "gust":
        return SimFault.GUST
    if spec.target in ("gyro", "accel"):
        return SimFault.SENSOR_NOISE
    if spec.target == "battery":
        return SimFault.BATTERY_SAG
    return SimFault.THRUST_LOSS  # a degraded motor


def _refused(result: str) -> InjectionResult:
    return InjectionResult(False, result, _EXPLANATIONS.get(result, ""))
