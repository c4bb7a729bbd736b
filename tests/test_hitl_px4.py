"""PX4 as a HITL board (px4.hitl_board, target `px4-hitl`): the stock PX4 binary with its one MAVLink link on a
baud-limited serial cable, SYS_HITL = 1, flown by the HITL bench (bridges.hitl_bench) exactly as a board on the
desk is.

The board runs in real time (it has no lockstep), so every wait here is on the board's own clock or bounded by
its process, and flights are short. `test_the_board_runs_one_serial_link_and_no_simulator_of_sensors` also runs
on every PX4_SMOKE_DIRS build.
"""

from __future__ import annotations

import asyncio
import math
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pymavlink import mavutil
from pymavlink.dialects.v20 import common as mavlink

from bridges import hitl_bench as bench_module
from bridges import mavsdk_vehicle
from bridges.hitl_bench import LineNeed, LineTooSlow, hitl_bench
from bridges.mavsdk_vehicle import connect_started
from bridges.physics_faults import physics_refusal
from bridges.vehicle import VehicleError
from config.errors import ConfigError
from hil.campaign import parse_campaign
from missions.faults import FaultSpec
from physics.faults import SimFault
from profiles.library import load_vehicle_profile
from px4.external_physics.links import SerialLink
from px4.external_physics.simulator import (
    HarnessSimulator,
    SimulatorOptions,
    px4_params_for,
)
from px4.hitl_board import BoardOptions, px4_hitl_board
from records.record import read_events
from targets.spec import PX4_HITL, TargetSpec

from .px4_builds import MAIN_BUILD, SMOKE_BUILDS, needs_px4

ALL_BUILDS = [MAIN_BUILD, *SMOKE_BUILDS]
ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "missions" / "examples" / "demo_square.yaml"
# Board seconds (its own clock, in its telemetry) its estimator gets to report a position from the bench's sensors.
SETTLE_S = 120.0


async def _position(board, bench):
    vehicle = await connect_started(bench.url, board)
    await board.while_alive(_gps(vehicle, lambda g: g.gps_fix_type >= 3, SETTLE_S), AssertionError,
                            "reported a 3D fix")
    return vehicle


async def _gps(vehicle, predicate, seconds: float):
    """The first pre-flight status whose GPS satisfies `predicate`, within `seconds` of the board's clock."""
    await vehicle.wait_until(lambda s: s.t_ns > 0, seconds, "the board's first position")
    async with vehicle.deadline(seconds):
        while True:
            status = await vehicle.preflight_status()
            if predicate(status):
                return status
            await vehicle.collect(0.5)


@needs_px4
@pytest.mark.parametrize("build", ALL_BUILDS)
async def test_the_board_runs_one_serial_link_and_no_simulator_of_sensors(build):
    """PX4's own console and module list: one MAVLink instance, on the serial device; no SIH and no simulated
    sensor modules; the voter selects the IMU MavlinkReceiver publishes from the line's HIL_SENSOR, not the
    instances the clock module (simulator_mavlink) claims; and PX4 sent nothing but its hello and the outputs'
    echo on the clock module's link."""
    async with px4_hitl_board(BoardOptions(px4_dir=build)) as board:
        async with hitl_bench(board.url, SimulatorOptions()) as bench:
            vehicle = await _position(board, bench)
            try:
                answer = await board.shell("mavlink", "status")
                # `mavlink status` prints on PX4's console, where its last line may come a moment later.
                await board.while_alive(board.console.first(r"transport protocol|Forwarding"), AssertionError,
                                        "printed its MAVLink status", 60.0)
                console = answer + Path(board.console.path).read_text()
                assert re.findall(r"instance #(\d+)", console) == ["0"], "one MAVLink instance, no second link"
                assert re.search(r"transport protocol: serial \(/dev/pts/\d+ @921600\)", console)
                assert "UDP" not in console.split("instance #0")[-1]
                for module in ("simulator_sih", "sensor_baro_sim", "sensor_mag_sim", "sensor_gps_sim", "gz_bridge"):
                    if not (board.workdir / "bin" / f"px4-{module}").exists():
                        continue  # not in this build at all
                    out = await board.shell(module, "status")
                    assert "not running" in out or "not found" in out or "Unknown" in out, (module, out)
                sensors = await board.shell("sensors", "status")
                selected = re.search(r"selected accel: (\d+) \((\d+)\)", sensors)
                assert selected and int(selected.group(2)) >= 3, sensors  # 0-2: the clock module's
                assert bench.line.summary()["hil_sensor_sent_hz"] > 50
            finally:
                await vehicle.close()
    final = board.hardware.final
    assert final["clock_ticks"] > 1000 and final["mirrored"] > 100
    assert set(final["clock_received"]) <= {"HEARTBEAT", "COMMAND_LONG", "HIL_ACTUATOR_CONTROLS"}
    assert sum(final["dropped"].values()) == 0 and min(final["carried"].values()) > 10_000


@needs_px4
async def test_without_hil_sensor_on_the_line_px4_refuses_to_arm():
    """The board reads its sensors from the line: with HIL_GPS but no HIL_SENSOR on it, PX4 refuses to arm with
    its own preflight failure (quoted in the assertion message)."""
    async with px4_hitl_board(BoardOptions(px4_dir=MAIN_BUILD)) as board:
        texts, result, armed = await asyncio.to_thread(_arm_without_imu, board.url)
        console = Path(board.console.path).read_text()
    # PX4 says why on the line (STATUSTEXT) and on its console (health_and_arming_checks).
    failures = texts + re.findall(r"Preflight Fail: [^\n]*", console)
    # Its COMMAND_ACK can be late on a loaded machine; its HEARTBEAT says it never armed.
    assert not armed and result != mavlink.MAV_RESULT_ACCEPTED, failures
    assert any(re.search(r"barometer|compass|ekf2|Accel|Gyro", text) for text in failures), failures


def _arm_without_imu(url: str) -> tuple[list[str], int | None, bool]:
    device, baud = url[len("serial://"):].rsplit(":", 1)
    link = SerialLink(device, int(baud))
    sim = HarnessSimulator(SimulatorOptions())
    parser = mavlink.MAVLink(None)
    parser.robust_parsing = True
    packer = mavlink.MAVLink(None, srcSystem=255, srcComponent=190)
    failures: list[str] = []
    result = None
    armed = False
    started = time.monotonic()
    next_arm = started + 10.0
    try:
        # Bounded on the wall clock only as a net: PX4 answers an arm command within a second of getting it.
        while time.monotonic() - started < 60.0 and result is None:
            data = sim.frame()
            link.write(data[data[1] + 12:])  # the frame without its HIL_SENSOR
            for msg in parser.parse_buffer(link.read(sim.frame_us * 1e-6)) or ():
                if msg.get_type() == "STATUSTEXT":
                    failures.append(msg.text)
                elif msg.get_type() == "HEARTBEAT" and msg.autopilot == mavlink.MAV_AUTOPILOT_PX4:
                    armed = armed or bool(msg.base_mode & mavlink.MAV_MODE_FLAG_SAFETY_ARMED)
                elif msg.get_type() == "COMMAND_ACK" and msg.command == mavlink.MAV_CMD_COMPONENT_ARM_DISARM:
                    result = msg.result
            if time.monotonic() >= next_arm:
                link.write(mavlink.MAVLink_command_long_message(
                    1, 1, mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 0, 1, 0, 0, 0, 0, 0, 0).pack(packer))
                next_arm += 2.0
    finally:
        link.close()
    return failures, result, armed


async def test_a_baud_rate_that_cannot_carry_the_sensors_is_refused_before_the_port_is_opened():
    need = LineNeed.of(SimulatorOptions())
    assert need.up == pytest.approx(250 * need.sensor_frame + 10 * need.gps_frame)
    with pytest.raises(LineTooSlow, match=rf"needs {need.up:.0f} B/s to the board .* a 57600 baud line carries "
                                          r"5760 B/s .* at least 460800 baud"):
        async with hitl_bench("serial:///nonexistent/tty:57600", SimulatorOptions()):
            pass
    need.check(921600, "a USB port")  # carried: no error


@needs_px4
async def test_gps_loss_in_the_physics_is_what_the_firmware_reads():
    async with px4_hitl_board(BoardOptions(px4_dir=MAIN_BUILD)) as board:
        async with hitl_bench(board.url, SimulatorOptions()) as bench:
            vehicle = await _position(board, bench)
            try:
                bench.simulator.inject_failure(mavlink.FAILURE_UNIT_SENSOR_GPS, mavlink.FAILURE_TYPE_OFF)
                lost = await _gps(vehicle, lambda g: g.gps_fix_type < 3 or g.satellites == 0, 30.0)
                assert lost.gps_fix_type < 3 or lost.satellites == 0
            finally:
                await vehicle.close()



@needs_px4
@pytest.mark.parametrize("unit, bit, name", [
    (mavlink.FAILURE_UNIT_SENSOR_BARO, mavlink.MAV_SYS_STATUS_SENSOR_ABSOLUTE_PRESSURE, "Baro"),
    (mavlink.FAILURE_UNIT_SENSOR_MAG, mavlink.MAV_SYS_STATUS_SENSOR_3D_MAG, "Compass"),
], ids=["baro", "mag"])
async def test_a_sensor_the_physics_stops_is_what_the_firmware_reads(unit, bit, name):
    """The sensor's fields leave the line's HIL_SENSOR: PX4 clears its own health bit for it in SYS_STATUS and says
    why on its console (v1.16.1: `Preflight Fail: No valid data from Baro 0` / `... from Compass 0`)."""
    async with px4_hitl_board(BoardOptions(px4_dir=MAIN_BUILD)) as board:
        async with hitl_bench(board.url, SimulatorOptions()) as bench:
            vehicle = await _position(board, bench)
            try:
                assert (await _sys_status(vehicle, lambda health: health & bit, 30.0)) & bit
                bench.simulator.inject_failure(unit, mavlink.FAILURE_TYPE_OFF)
                assert not (await _sys_status(vehicle, lambda health: not health & bit, 30.0)) & bit
                said = await board.while_alive(board.console.first(rf"Preflight Fail: No valid data from {name} 0"),
                                               AssertionError, f"said its {name} had no data", 60.0)
                assert said.endswith(f"{name} 0")
            finally:
                await vehicle.close()


@needs_px4
async def test_sensor_noise_in_the_physics_is_what_the_firmware_reads():
    """Gyro and accelerometer noise raised in the physics (severity 0.2: 0.1 rad/s and 1 m/s^2) shows in the IMU
    samples PX4 itself reports (SCALED_IMU, each sample it integrates), tens of times their noise at rest."""
    async with px4_hitl_board(BoardOptions(px4_dir=MAIN_BUILD)) as board:
        async with hitl_bench(board.url, SimulatorOptions()) as bench:
            vehicle = await _position(board, bench)
            try:
                gyro, accel = await _imu_spread(vehicle)
                bench.simulator.inject_sim(SimFault.SENSOR_NOISE, 0, 0.2)
                noisy_gyro, noisy_accel = await _imu_spread(vehicle)
                assert noisy_gyro > max(10 * gyro, 20.0) and noisy_accel > max(10 * accel, 20.0), \
                    (gyro, accel, noisy_gyro, noisy_accel)
            finally:
                await vehicle.close()


async def _imu_spread(vehicle, samples: int = 200) -> tuple[float, float]:
    """Standard deviations of PX4's reported x gyro (mrad/s) and z acceleration (mG) over its next `samples`."""
    gyro, accel = [], []
    async with vehicle.deadline(30.0):
        async for imu in vehicle.messages("SCALED_IMU"):
            gyro.append(imu["xgyro"])
            accel.append(imu["zacc"])
            if len(gyro) == samples:
                return statistics.pstdev(gyro), statistics.pstdev(accel)


async def _sys_status(vehicle, predicate, seconds: float) -> int:
    """PX4's SYS_STATUS sensor health bits, the first that satisfy `predicate` within `seconds` of its clock."""
    async with vehicle.deadline(seconds):
        async for status in vehicle.messages("SYS_STATUS"):
            if predicate(status["onboard_control_sensors_health"]):
                return status["onboard_control_sensors_health"]


@needs_px4
async def test_a_motor_the_physics_stops_in_a_hover_is_what_the_firmware_flies_on():
    """Motor 1 stops in the physics during a 3 m hover: PX4's own attitude and altitude (its telemetry, not the
    physics) roll past 30 degrees and fall, and its failure detector reports the attitude failure."""
    params = px4_params_for(load_vehicle_profile("default"))
    async with px4_hitl_board(BoardOptions(px4_dir=MAIN_BUILD, params=params)) as board:
        async with hitl_bench(board.url, SimulatorOptions(), arm_allowed=True) as bench:
            vehicle = await _position(board, bench)
            try:
                await vehicle.wait_armable(timeout=SETTLE_S)
                await vehicle.arm()
                await vehicle.takeoff(3.0)
                hover = await vehicle.collect(2.0)
                assert max(abs(s.roll) for s in hover) < math.radians(10) and min(s.altitude for s in hover) > 2.0
                bench.simulator.inject_failure(mavlink.FAILURE_UNIT_SYSTEM_MOTOR, mavlink.FAILURE_TYPE_OFF, 1)
                after = await vehicle.collect(4.0)
                assert max(abs(s.roll) for s in after) > math.radians(30), [round(s.roll, 2) for s in after]
                assert min(s.altitude for s in after) < min(s.altitude for s in hover) - 1.5
                said = await board.while_alive(board.console.first(r"Attitude failure"), AssertionError,
                                               "reported the attitude failure", 60.0)
                assert "Fail" in said
            finally:
                await vehicle.close()


def test_a_fault_the_physics_cannot_make_real_is_refused_before_the_board_starts(tmp_path):
    """Battery off, RC and MAVLink signal loss are the built-in vehicle's own MAVLink, which no HIL frame carries:
    `hil fly` on the bench names each with why, exit 2, before anything starts, as a campaign file flying them on
    the bench is refused; the injector refuses them too."""
    mission = tmp_path / "faulted.yaml"
    mission.write_text(DEMO.read_text() + "faults:\n"
                       "  - {start_s: 5, type: 'off', target: gps, duration_s: 3}\n"
                       "  - {start_s: 6, type: 'off', target: battery}\n"
                       "  - {start_s: 7, type: 'off', target: rc_signal}\n")
    done = subprocess.run([sys.executable, "-m", "hil", "fly", str(mission), "--target", "px4-hitl", "--arm",
                           "--px4-dir", "/nonexistent"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "faults[0]" not in done.stderr  # a GPS loss the physics can make
    assert re.search(r"faults\[1\] \(battery off at 6 s\): battery off: PX4 measures its battery itself", done.stderr)
    assert re.search(r"faults\[2\] \(rc_signal off at 7 s\): RC signal loss", done.stderr)
    for target in ("battery", "rc_signal", "mavlink_signal", "optical_flow"):
        assert physics_refusal(FaultSpec(0.0, "off", None, 1.0, target)), target
    for target in ("gps", "baro", "mag", "motor2"):
        assert physics_refusal(FaultSpec(0.0, "off", None, 1.0, target)) == "", target
    assert physics_refusal(FaultSpec(0.0, "degraded", None, 0.5, "battery")) == ""  # the sag acts on the thrust
    with pytest.raises(ValueError, match="PX4 measures its battery itself"):
        HarnessSimulator(SimulatorOptions()).inject_failure(mavlink.FAILURE_UNIT_SYSTEM_BATTERY,
                                                            mavlink.FAILURE_TYPE_OFF)
    profile = tmp_path / "radio.yaml"
    profile.write_text("faults:\n  - {start_s: 1, type: 'off', target: mag}\n"
                       "  - {start_s: 2, type: 'off', target: mavlink_signal}\n")
    campaign = {"name": "c", "missions": [{"scene": "forest"}], "targets": ["sim", "px4-hitl"],
                "faults": [str(profile)]}
    with pytest.raises(ConfigError, match=r"c.yaml: faults\[0\]: .*radio.yaml: faults\[1\] \(mavlink_signal off "
                                          r"at 2 s\) cannot reach PX4 on the harness's physics \(px4-hitl\): "
                                          r"MAVLink signal"):
        parse_campaign(campaign, "c.yaml")
    parse_campaign({**campaign, "targets": ["sim"]}, "c.yaml")  # the built-in vehicle acts it out itself


@needs_px4
@pytest.mark.slow
def test_hil_fly_applies_a_missions_fault_schedule_in_the_physics_the_board_reads(tmp_path):
    """`hil fly` on the bench puts a mission's barometer loss into the physics (PX4's own failure injection
    answers SUCCESS on a HITL board and changes nothing it reads): PX4's SYS_STATUS, in the trial's telemetry log,
    has its barometer healthy and then not, and its console says so."""
    mission = tmp_path / "hop.yaml"
    mission.write_text("name: hop-baro-off\ntype: multi_waypoint\nmode: mission\nstart: {north: 0, east: 0, alt: 3}\n"
                       "speed_cap: 3.0\nsuccess_radius: 1.0\ntime_budget: 60\nland: true\n"
                       "waypoints:\n  - {north: 5, east: 0, alt: 3}\n"
                       "faults:\n  - {start_s: 2, type: 'off', target: baro}\n")
    record = tmp_path / "record"
    # The timeout is a net for a hung harness only: the board's clock stretches with a slow machine.
    subprocess.run([sys.executable, "-m", "hil", "fly", str(mission), "--target", "px4-hitl", "--arm",
                    "--px4-dir", MAIN_BUILD, "--record-dir", str(record)], cwd=ROOT, capture_output=True, timeout=1800)
    events = read_events(record)
    injected = [e for e in events if e["kind"] == "fault_injected"]
    assert [(e["fault"], e["accepted"], e["result"]) for e in injected] == [("baro off at 2 s", True, "SUCCESS")], \
        events[-3:]
    log = mavutil.mavlink_connection(str(record / "telemetry.tlog"))
    baro = []
    while (status := log.recv_match(type="SYS_STATUS")) is not None:
        baro.append(bool(status.onboard_control_sensors_health & mavlink.MAV_SYS_STATUS_SENSOR_ABSOLUTE_PRESSURE))
    assert True in baro and False in baro[baro.index(True):], baro
    assert "BARO #0 failed" in (record / "px4-console.log").read_text()

def test_px4_hitl_names_a_board_the_harness_starts_and_flies_as_hardware():
    spec = TargetSpec.parse("px4-hitl:57600")
    assert (spec.kind, spec.baud, spec.simulated) == (PX4_HITL, 57600, False)  # --arm and the journal apply
    assert TargetSpec.parse("px4-hitl").baud is None
    for bad in ("px4-hitl:fast", "px4-hitl:12"):
        with pytest.raises(ValueError, match="px4-hitl:BAUD with a baud rate of 1200-4000000"):
            TargetSpec.parse(bad)


@needs_px4
async def test_a_log_download_that_stops_coming_ends_naming_how_far_it_got(tmp_path, monkeypatch):
    """The board logs from boot here, and the bench passes no LOG_DATA: the download is given up after LOG_STALL_S
    board seconds without any of it (MAVSDK alone asks again for ever), saying so, and the vehicle is still there
    to use (MAVSDK's download cancelled, its plugin closed)."""
    monkeypatch.setattr(mavsdk_vehicle, "LOG_STALL_S", 3.0)
    forward = bench_module._Router.to_client
    monkeypatch.setattr(bench_module._Router, "to_client",
                        lambda router, msg: None if msg.get_type() == "LOG_DATA" else forward(router, msg))
    async with px4_hitl_board(BoardOptions(px4_dir=MAIN_BUILD, params={"SDLOG_MODE": 1})) as board:
        async with hitl_bench(board.url, SimulatorOptions()) as bench:
            vehicle = await connect_started(bench.url, board)
            try:
                with pytest.raises(VehicleError, match=r"not downloaded: nothing of it came for 3 vehicle s at 0% "
                                                       r"of [1-9]\d* B"):
                    await vehicle.download_newest_log(tmp_path)
                assert len(await vehicle.collect(1.0)) > 5
            finally:
                await vehicle.close()
