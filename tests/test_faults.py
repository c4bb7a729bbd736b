"""Vehicle faults: the schedule schema, the built-in vehicle's fault state, and injections proved in telemetry."""

from __future__ import annotations

import pytest
from pymavlink.dialects.v20 import common as mavlink

from bridges.failure import FailureInjector
from bridges.mavsdk_vehicle import connect
from config.errors import ConfigError
from hil.fault_monitor import OBSERVED, REFUSED, FaultMonitor
from missions.faults import FaultSpec, load_fault_profile, parse_faults
from physics.faults import SimFault, VehicleFaults
from targets.builtin import SimProcessOptions, builtin_vehicle

from .conftest import SPEED


# ---------------------------------------------------------------------- the schedule
def test_a_schedule_parses_with_every_trigger_and_scope():
    specs = parse_faults([
        {"start_s": 12.0, "type": "off", "target": "motor1", "duration_s": 5},
        {"at_waypoint": 2, "type": "stuck", "target": "gps"},
        {"near_obstacle_m": 1.5, "type": "degraded", "target": "motor3", "severity": 0.3},
        {"start_s": 0, "type": "steady", "target": "wind", "wind": [3, -1, 0]},
        {"start_s": 20, "type": "stall", "target": "planner", "stall_ms": 400},
        {"at_waypoint": 3, "type": "crash", "target": "planner"},
    ])
    by_target = {s.target: s for s in specs}
    assert [s.scope for s in specs] == ["vehicle", "sim", "sim", "onboard", "vehicle", "onboard"]
    motor1, gps, motor3 = by_target["motor1"], by_target["gps"], by_target["motor3"]
    assert motor1.px4_unit_type == (mavlink.FAILURE_UNIT_SYSTEM_MOTOR, mavlink.FAILURE_TYPE_OFF) and motor1.instance == 1
    assert gps.px4_unit_type == (mavlink.FAILURE_UNIT_SENSOR_GPS, mavlink.FAILURE_TYPE_STUCK)
    assert motor1.due(12.0, 0) and not motor1.due(11.9, 5)
    assert gps.due(0.0, 2) and not gps.due(100.0, 1)
    assert motor3.due(0.0, 0, clearance_m=1.2) and not motor3.due(0.0, 0, clearance_m=2.0)
    assert by_target["wind"].wind == (3.0, -1.0, 0.0)
    assert motor1.describe() == "motor1 off at 12 s for 5 s"


def test_a_bad_schedule_lists_every_problem_with_its_place(tmp_path):
    path = tmp_path / "faults.yaml"
    path.write_text("faults:\n"
                    "  - {start_s: 1, type: of, target: gps}\n"
                    "  - {start_s: -1, type: 'off', target: gps}\n"
                    "  - {type: degraded, target: gps, severity: 1.5}\n"
                    "  - {start_s: 3, type: stall, target: planner}\n"
                    "  - {start_s: 0, type: steady, target: wind}\n"
                    "  - {start_s: 0, type: 'off', target: planner}\n")
    with pytest.raises(ConfigError) as err:
        load_fault_profile(path)
    problems = "\n".join(err.value.problems)
    assert f"{path}: faults[0].type: expected one of off, stuck" in problems
    assert "faults[1].start_s: expected a number >= 0" in problems
    assert "faults[2]: missing trigger" in problems
    assert "faults[2].severity: expected a number <= 1" in problems
    assert "faults[2].target: expected one of motor1" in problems
    assert "faults[3].stall_ms: missing required field" in problems
    assert "faults[4].wind" in problems
    assert "faults[5].type: expected one of stall, crash (for target planner)" in problems


# ---------------------------------------------------------------------- the vehicle's fault state
def test_vehicle_faults_follow_px4_rules():
    faults = VehicleFaults([1.0] * 4, [0.0] * 3)
    off, motor = mavlink.FAILURE_TYPE_OFF, mavlink.FAILURE_UNIT_SYSTEM_MOTOR
    assert faults.inject_failure(motor, off, 2, enabled=False).result == mavlink.MAV_RESULT_DENIED
    assert faults.inject_failure(motor, off, 2, enabled=True).result == mavlink.MAV_RESULT_ACCEPTED
    assert faults.motor_outputs([0.5] * 4) == [0.5, 0.0, 0.5, 0.5]
    assert faults.inject_failure(motor, mavlink.FAILURE_TYPE_OK, 0, enabled=True).result == mavlink.MAV_RESULT_ACCEPTED
    assert faults.motor_outputs([0.5] * 4) == [0.5] * 4
    assert faults.inject_failure(mavlink.FAILURE_UNIT_SYSTEM_RC_SIGNAL, off, 0, enabled=True).result == \
        mavlink.MAV_RESULT_ACCEPTED and faults.rc_lost
    for unit, ftype in [(mavlink.FAILURE_UNIT_SENSOR_OPTICAL_FLOW, off),
                        (mavlink.FAILURE_UNIT_SYSTEM_RC_SIGNAL, mavlink.FAILURE_TYPE_SLOW),
                        (mavlink.FAILURE_UNIT_SENSOR_GPS, mavlink.FAILURE_TYPE_SLOW), (motor, off + 100)]:
        assert faults.inject_failure(unit, ftype, 0, enabled=True).result == mavlink.MAV_RESULT_UNSUPPORTED
    assert faults.inject_sim(SimFault.THRUST_LOSS, 3, 0.25, (0, 0, 0), enabled=True).result == mavlink.MAV_RESULT_ACCEPTED
    assert faults.rotor_efficiency == [1.0, 1.0, 0.75, 1.0]
    faults.inject_sim(SimFault.WIND, 0, 1.0, (2.0, 1.0, 0.0), enabled=True)
    assert faults.wind_ned == [2.0, 1.0, 0.0]


# ---------------------------------------------------------------------- proved in telemetry
def _fault(kind: str, target: str) -> FaultSpec:
    return FaultSpec(start_s=0.0, type=kind, duration_s=None, severity=1.0, target=target)


async def test_sys_failure_en_is_enabled_for_the_session_and_restored_or_else_refused():
    async with builtin_vehicle(SimProcessOptions(speed=SPEED, params={"SYS_FAILURE_EN": 0})) as sim:
        vehicle = await connect(sim.url, timeout=10.0)
        try:
            await vehicle.wait_armable(timeout=10.0)
            async with FailureInjector(vehicle, enable=False) as injector, FaultMonitor(vehicle, injector) as monitor:
                await monitor.wait_for_telemetry(("GPS_RAW_INT",))
                refused = await monitor.inject_and_verify(_fault("off", "gps"), timeout=1.0)
            async with FailureInjector(vehicle, enable=True) as injector, FaultMonitor(vehicle, injector) as monitor:
                assert await vehicle.get_param("SYS_FAILURE_EN") == 1
                await monitor.wait_for_telemetry(("GPS_RAW_INT",))
                taken = await monitor.inject_and_verify(_fault("off", "gps"), timeout=2.0)
                noise = await monitor.inject_and_verify(_fault("degraded", "gyro"), timeout=2.0)
            assert await vehicle.get_param("SYS_FAILURE_EN") == 0
        finally:
            await vehicle.close()
    assert refused.verdict == REFUSED and refused.result in ("DISABLED", "DENIED")
    assert taken.verdict == OBSERVED
    assert (noise.verdict, noise.result) == (OBSERVED, "SUCCESS")
    # Seen within the 2 vehicle s watched, counted on the vehicle's clock (a loaded machine's harness clock times
    # the speed factor can run past it).
    assert 0.0 <= taken.observed_after_s <= 2.0 and 0.0 <= noise.observed_after_s <= 2.0


async def test_a_simulator_fault_goes_over_mavlink_as_a_command_the_vehicle_answers(vehicle):
    # SIM_FAULT_COMMAND through MAVSDK's MavlinkDirect (Vehicle.command_long), answered by its ACK.
    assert await vehicle.inject_sim_fault(int(SimFault.WIND), 0, 1.0, (2.0, 1.0, 0.0)) == "SUCCESS"
    assert await vehicle.inject_sim_fault(99, 0, 1.0, (0.0, 0.0, 0.0)) == "UNSUPPORTED"
    assert await vehicle.inject_sim_fault(int(SimFault.WIND), 0, 0.0, (0.0, 0.0, 0.0)) == "SUCCESS"
