"""Faults of a `FaultSpec` applied in the harness's physics instead of sent to the flight controller.

When PX4 flies on the harness's physics (`px4.external_physics`), a fault is made real where it
happens on a vehicle: a motor stops turning, a sensor reads nothing or garbage, the wind blows.
PX4 is not told; it finds out through its sensors, which is what "injected and observed" then
checks (PX4's estimator and failsafe reacting). `PhysicsFailureInjector` is a
`bridges.failure.FailureInjector` (async context manager, `inject`, `clear`, `InjectionResult`)
whose faults go to the physics, so a fault schedule and the fault monitor use either unchanged.

Vehicle-scope faults map to PX4's FAILURE_UNIT / FAILURE_TYPE as the physics implements them
(motor off, sensor off / stuck / garbage, GPS off / stuck / wrong); simulator-scope faults to the
simulator's (thrust loss, sensor noise, battery sag, wind, gust). What the physics cannot do
(optical flow, VIO, ...) is refused UNSUPPORTED with the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bridges.failure import FailureInjector, InjectionResult, _sim_kind
from missions.faults import FaultSpec
from physics.faults import failure_refusal

if TYPE_CHECKING:  # the simulator's modules take half a second: a schedule is checked before any is needed
    from px4.external_physics.simulator import HarnessSimulator


def physics_refusal(spec: FaultSpec) -> str:
    """Why `spec` cannot act in the harness's physics ("" when it can): a schedule is checked before arming, since
    a fault refused mid-flight would leave the trial flown without it."""
    if spec.scope != "vehicle":  # the simulator's kinds all act on the physics; onboard ones on the planner
        return ""
    unit, ftype = spec.px4_unit_type
    return failure_refusal(unit, ftype, spec.instance)


class PhysicsFailureInjector(FailureInjector):
    """Inject and clear faults in a `HarnessSimulator`. Use as ``async with PhysicsFailureInjector(sim) as inj``."""

    def __init__(self, simulator: HarnessSimulator):
        super().__init__(vehicle=None, enable=False)
        self.simulator = simulator

    async def __aenter__(self) -> "PhysicsFailureInjector":
        # Nothing to enable on the flight controller: it is never asked.
        await self._stack.__aenter__()
        return self

    async def _send(self, spec: FaultSpec, clear: bool) -> InjectionResult:
        if spec.scope == "onboard":
            return InjectionResult(False, "NOT_APPLICABLE", "onboard faults are applied by the planner runtime")
        try:
            if spec.scope == "sim":
                wind = (0.0, 0.0, 0.0) if clear else spec.wind
                self.simulator.inject_sim(_sim_kind(spec), spec.instance, 0.0 if clear else spec.severity, wind)
            else:
                unit, ftype = spec.px4_unit_type
                self.simulator.inject_failure(unit, 0 if clear else ftype, spec.instance)
        except ValueError as exc:
            return InjectionResult(False, "UNSUPPORTED", str(exc))
        return InjectionResult(True, "SUCCESS")
