"""Motor thrust-loss response: one rotor down to 70 % thrust in hover; the vehicle must hold on."""

import pytest

from missions.faults import FaultSpec

ALTITUDE = 5.0


@pytest.mark.hil(targets=["sim"])  # a partial thrust loss exists only in the built-in vehicle
async def test_hover_survives_a_30_percent_thrust_loss_on_one_motor(hil_vehicle, hil_faults, hil_expect):
    await hil_vehicle.arm()
    await hil_vehicle.takeoff(ALTITUDE)
    verdict = await hil_faults.inject_and_verify(
        FaultSpec(start_s=0.0, type="degraded", duration_s=None, severity=0.3, target="motor1"), timeout=3.0)
    assert verdict.verdict == "injected and observed", verdict
    worst = 0.0
    try:
        async with hil_vehicle.deadline(8.0):
            async for s in hil_vehicle.telemetry():
                worst = max(worst, abs(s.altitude - ALTITUDE))
    except TimeoutError:
        pass
    hil_expect("altitude_deviation_after_loss_m", worst, le=1.0)
    await hil_vehicle.land()
    await hil_vehicle.wait_until(lambda s: not s.armed, 60.0, "landed on three and a bit motors")
