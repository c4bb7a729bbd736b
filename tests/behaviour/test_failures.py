"""Failure injection (MAV_CMD_INJECT_FAILURE) proved in telemetry, as far as each autopilot simulates it."""

from __future__ import annotations


from bridges.failure import FailureInjector
from hil.fault_monitor import OBSERVED, REFUSED, FaultMonitor
from records.record import TrialRecorder, read_table
from missions.faults import FaultSpec


def _fault(kind: str, target: str) -> FaultSpec:
    return FaultSpec(start_s=0.0, type=kind, duration_s=None, severity=1.0, target=target)


async def test_gps_loss_is_observed_and_an_unsupported_fault_is_refused(autopilot, vehicle, tmp_path, request):
    autopilot.xfail_on(request, "px4-sitl", "PX4 SIH (v1.14, v1.16) has no module that takes a GPS failure: "
                                            "MAV_CMD_INJECT_FAILURE for the GPS gets no acknowledgement")
    await vehicle.arm()
    await vehicle.takeoff(5.0)
    with TrialRecorder(tmp_path / "record", config={}, target="test") as recorder:
        async with FailureInjector(vehicle) as injector, FaultMonitor(vehicle, injector, recorder) as monitor:
            await monitor.wait_for_telemetry()
            gps = await monitor.inject_and_verify(_fault("off", "gps"), timeout=3.0)
            refused = await monitor.inject_and_verify(_fault("off", "optical_flow"), timeout=3.0)
        recorder.finish("success")
    assert (gps.verdict, gps.result) == (OBSERVED, "SUCCESS") and "fix_type" in gps.evidence
    assert refused.verdict == REFUSED
    assert list(read_table(tmp_path / "record", "faults").verdict) == [OBSERVED, REFUSED]


async def test_a_motor_failure_is_observed(autopilot, vehicle, request):
    autopilot.xfail_on(request, "px4-sitl", "PX4 SIH accepts a motor failure (ACCEPTED) but its simulator "
                                            "keeps the motor running: no effect in telemetry")
    await vehicle.arm()
    await vehicle.takeoff(5.0)
    async with FailureInjector(vehicle) as injector, FaultMonitor(vehicle, injector) as monitor:
        await monitor.wait_for_telemetry()
        motor = await monitor.inject_and_verify(_fault("off", "motor1"), timeout=3.0)
    assert (motor.verdict, motor.result) == (OBSERVED, "SUCCESS"), motor
