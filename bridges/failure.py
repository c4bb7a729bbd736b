"""Sending a `FaultSpec` to a flight controller over MAVSDK, with PX4's enabling parameter handled.

- Vehicle-scope faults go through MAVSDK's failure plugin (MAV_CMD_INJECT_FAILURE with PX4's unit,
  type and instance), the same on the built-in vehicle, PX4 SITL and a real PX4.
- Simulator-scope faults go as the built-in vehicle's SIM_FAULT_COMMAND (MAV_CMD_USER_1) through
  MAVSDK's MavlinkDirect; PX4 answers UNSUPPORTED, so they come back refused there.
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
import json
from dataclasses import dataclass

from mavsdk.asyncio.plugins.failure import FailureAsync
from mavsdk.plugins.failure import FailureError, FailureType, FailureUnit
from mavsdk.plugins.mavlink_direct import MavlinkDirectError, MavlinkMessage
from pymavlink.dialects.v20 import common as mavlink

from bridges.vehicle import VehicleError
from missions.faults import FaultSpec
from px4.sim.faults import SIM_FAULT_COMMAND, SimFault

ENABLE_PARAM = "SYS_FAILURE_EN"
_MAV_RESULTS = {mavlink.MAV_RESULT_ACCEPTED: "SUCCESS", mavlink.MAV_RESULT_DENIED: "DENIED",
                mavlink.MAV_RESULT_TEMPORARILY_REJECTED: "DENIED", mavlink.MAV_RESULT_UNSUPPORTED: "UNSUPPORTED",
                mavlink.MAV_RESULT_FAILED: "FAILED"}

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

    def __init__(self, vehicle, enable: bool = True):
        self.vehicle = vehicle
        self.enable = enable
        self.original_enable: float | None = None
        self._active: list[FaultSpec] = []
        self._stack = contextlib.AsyncExitStack()
        self._failure: FailureAsync | None = None

    async def __aenter__(self) -> "FailureInjector":
        await self._stack.__aenter__()
        try:
            self.original_enable = await self.vehicle.get_param(ENABLE_PARAM)
        except VehicleError:
            self.original_enable = None  # not a PX4 parameter set: the commands will tell
        if self.enable and self.original_enable == 0:
            await self._stack.enter_async_context(self.vehicle.params_changed({ENABLE_PARAM: 1}))
        # Created after enabling: MAVSDK's plugin reads SYS_FAILURE_EN once when it is created.
        self._failure = FailureAsync(self.vehicle.system)
        return self

    async def __aexit__(self, *exc) -> None:
        try:
            for spec in reversed(self._active):
                with contextlib.suppress(Exception):
                    await self.clear(spec)
        finally:
            await self._stack.__aexit__(*exc)

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
            return await self._send_sim(spec, clear)
        unit, ftype = spec.px4_unit_type
        assert self._failure is not None, "use FailureInjector as an async context manager"
        try:
            await self._failure.inject(FailureUnit(unit), FailureType(0 if clear else ftype), spec.instance)
        except FailureError as exc:
            return _refused(exc.result.name)
        return InjectionResult(True, "SUCCESS")

    async def _send_sim(self, spec: FaultSpec, clear: bool) -> InjectionResult:
        kind = _sim_kind(spec)
        severity = 0.0 if clear else spec.severity
        wind = (0.0, 0.0, 0.0) if clear else spec.wind
        fields = {"target_system": 1, "target_component": 1, "command": SIM_FAULT_COMMAND, "confirmation": 0,
                  "param1": float(kind), "param2": float(spec.instance), "param3": severity,
                  "param4": wind[0], "param5": wind[1], "param6": wind[2], "param7": 0.0}
        command = MavlinkMessage(message_name="COMMAND_LONG", system_id=0, component_id=0, target_system_id=1,
                                 target_component_id=1, fields_json=json.dumps(fields))
        try:
            ack = await self.vehicle.mavlink.send_command(command)
        except MavlinkDirectError:
            return _refused("TIMEOUT")
        result = int(json.loads(ack.fields_json)["result"])
        if result == mavlink.MAV_RESULT_ACCEPTED:
            return InjectionResult(True, "SUCCESS")
        return _refused(_MAV_RESULTS.get(result, str(result)))


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
