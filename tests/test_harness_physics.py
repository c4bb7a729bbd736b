"""Real PX4 SITL flying on the harness's physics (px4/external_physics) over the MAVLink HIL simulator
protocol, in lockstep; the serial path; the HITL bench's refusal of a board not in HITL mode.

Every test runs the real `px4` binary (airframe 10016 none_iris) from PX4_DIR, and the first also on
every PX4_SMOKE_DIRS build; MAVSDK 4 talks to PX4 over real UDP as it would to any PX4.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from pymavlink.dialects.v20 import common as mavlink

from bridges.hitl_bench import HITL_PARAM, HitlModeError, hitl_bench
from bridges.link_proxy import LinkProxy
from bridges.mavsdk_vehicle import connect
from bridges.physics_faults import PhysicsFailureInjector
from bridges.ptypair import PtyPair
from bridges.vehicle import CommandDenied, MissionWaypoint
from hil.fault_monitor import OBSERVED, FaultMonitor
from missions.faults import FaultSpec
from profiles.airframe import GRAVITY
from profiles.link import LinkSpec
from profiles.vehicle import VehicleProfile
from px4.external_physics import (
    SimulatorOptions,
    px4_on_harness_physics,
    px4_params_for,
)
from px4.external_physics.hil_messages import ActuatorControls
from px4.external_physics.links import SerialLink
from px4.external_physics.lockstep import SimulatorLoop
from px4.external_physics.simulator import TRUTH_TABLE, HarnessSimulator
from px4.sitl import Px4Build, SitlError, SitlOptions, px4_sitl
from records.record import read_table
from reports.figures import trial_figures
from reports.render import write_report
from reports.results import load_results

from .px4_builds import MAIN_BUILD, SMOKE_BUILDS, needs_px4

FULL_THROTTLE = 0.95
SPEED = 4.0  # paced lockstep
# The Vehicle API turns vehicle-time deadlines into wall-clock ones with the speed factor it is given;
# telling it half the pace keeps them generous when a machine loaded by others cannot hold the pace.
VEHICLE_SPEED = SPEED / 2
SQUARE = [MissionWaypoint(10, 0, -5, acceptance_radius=1.0), MissionWaypoint(10, 10, -5, acceptance_radius=1.0),
          MissionWaypoint(0, 10, -5, acceptance_radius=1.0), MissionWaypoint(0, 0, -5, acceptance_radius=1.0)]
def _sitl(build: str, **options) -> SitlOptions:
    return SitlOptions(px4_dir=build, airframe="none_iris", **options)


BUILDS = [pytest.param(b, id=Path(b).name) for b in ([MAIN_BUILD] if MAIN_BUILD else []) + SMOKE_BUILDS]


async def _airborne(run, altitude: float):
    """A MAVSDK Vehicle on this run's PX4, armed and holding ``altitude`` metres."""
    vehicle = await connect(run.url, 20.0, VEHICLE_SPEED)
    try:
        await vehicle.wait_armable(60.0)
        await vehicle.arm()
        await vehicle.takeoff(altitude)
    except BaseException:
        await vehicle.close()
        raise
    return vehicle


@needs_px4
@pytest.mark.parametrize("build", BUILDS)
async def test_px4_flies_takeoff_hold_mission_and_landing_on_the_harness_physics(build, tmp_path):
    rows: dict[str, list] = {}
    sink = lambda table, row: rows.setdefault(table, []).append(row)  # noqa: E731
    async with px4_on_harness_physics(SimulatorOptions(speed=SPEED), _sitl(build),
                                      keep_in=tmp_path / "record", sink=sink) as run:
        vehicle = await connect(run.url, 20.0, VEHICLE_SPEED)
        try:
            await vehicle.wait_armable(60.0)
            await vehicle.arm()
            await vehicle.takeoff(5.0)
            hover = await vehicle.collect(4.0)
            truth_alt = -run.simulator.dyn.pos[2]
            alts = [s.altitude for s in hover]
            assert len(alts) > 20 and max(abs(a - 5.0) for a in alts) <= 0.5, f"hover {min(alts):.2f}..{max(alts):.2f} m"
            assert abs(truth_alt - 5.0) <= 0.5, f"true altitude {truth_alt:.2f} m while PX4 holds 5 m"

            await vehicle.upload_mission(SQUARE)
            reached: list[int] = []

            async def collect() -> None:
                async for seq in vehicle.mission_items_reached():
                    reached.append(seq)

            collector = asyncio.create_task(collect())
            await asyncio.sleep(0.2)
            await vehicle.start_mission()
            async with vehicle.deadline(90.0):
                async for progress in vehicle.mission_progress():
                    if progress.finished:
                        break
            await asyncio.sleep(0.3)
            collector.cancel()
            # PX4 repeats each MISSION_ITEM_REACHED a few times; every item, in order, is what counts.
            assert list(dict.fromkeys(reached)) == [0, 1, 2, 3]
            # The physics really went round the square: the true position ends at the last corner.
            north, east, down = run.simulator.dyn.pos
            assert math.dist((north, east, down), (0, 0, -5)) < 2.0

            await vehicle.land()
            await vehicle.wait_until(lambda s: not s.armed, 60.0, "landing and auto-disarm")
            assert run.simulator.dyn.on_ground and not run.simulator.armed
            stats = run.loop.stats
            assert stats.replies > 0.95 * stats.frames and stats.missed_replies == 0, stats
        finally:
            await vehicle.close()
    truth = rows[TRUTH_TABLE]
    assert max(-r["down"] for r in truth) > 4.5 and truth[-1]["on_ground"]
    assert len(rows["sim_gps"]) > 50 and len(rows["sim_sensors"]) > 100
    assert sorted((tmp_path / "record" / "ulog").glob("*.ulg")), "PX4's own log kept next to the truth"


@needs_px4
async def test_full_throttle_climb_acceleration_matches_the_profiles_thrust_to_weight():
    """(TWR - 1) g within 10 %, measured on the true vehicle while PX4 commands full collective thrust.

    From a 5 m hover PX4 is sent offboard attitude setpoints (level, thrust 1). The simulator's
    truth table (every frame, 250 Hz) has PX4's motor commands and the true velocity. Full
    throttle is where PX4's collective (the mean of its four motor outputs) exceeds 0.95: its
    allocator keeps some margin for attitude, mostly yaw. The acceleration is the slope of the true
    vertical velocity over the full-throttle frames from 5 motor time constants after the burst
    began (spin-up done) to 0.5 s, plus the profile's linear drag at the mean climb speed, which the
    physics applies.
    """
    profile = VehicleProfile(name="twr-3", mass=1.2, twr_max=3.0, alpha_xy_max=60.0, alpha_z_max=6.0)
    truth: list[dict] = []
    sink = lambda table, row: truth.append(row) if table == TRUTH_TABLE else None  # noqa: E731
    options = SimulatorOptions(profile=profile, speed=SPEED, record_rate_hz=250.0)
    async with px4_on_harness_physics(options, _sitl(MAIN_BUILD), sink=sink) as run:
        phys = run.simulator.dyn.phys
        vehicle = await _airborne(run, 5.0)
        try:
            await vehicle.start_offboard()
            commanded_us = run.simulator.time_us
            await vehicle.set_attitude(0.0, 0.0, vehicle.state.yaw, 1.0)
            await vehicle.sleep(1.5)
        finally:
            await vehicle.close()
        stats = run.loop.stats
        # The loop's wall time since PX4 first answered, split into the harness's parts and PX4's (the
        # benchmark's share figure): each took some, and they add up to the wall time.
        parts_us = stats.step_parts_us()
        wall_us = (stats.last_wall - stats.first_reply_wall) / (stats.frames - stats.first_reply_frame) * 1e6
        assert sum(parts_us.values()) == pytest.approx(wall_us, rel=0.01) and min(parts_us.values()) > 0.0
        assert 0.0 < stats.harness_share < 1.0
    frames = [(r["time_us"] * 1e-6, r["vd"], sum(r[f"cmd{i}"] for i in range(1, 5)) / 4) for r in truth
              if r["time_us"] >= commanded_us]
    # The burst starts at the first frame of 0.2 s of full throttle (a blip while offboard mode
    # takes over is not it).
    full = [collective > FULL_THROTTLE for _, _, collective in frames]
    onset = next(frames[i][0] for i in range(len(frames)) if all(full[i:i + 50]) and len(full) > i + 50)
    window = [(t, vd) for t, vd, collective in frames
              if 5 * phys.motor_tau + 0.05 <= t - onset <= 0.5 and collective > FULL_THROTTLE]
    assert len(window) > 30, f"only {len(window)} full-throttle frames"
    t, vd = np.array(window).T
    climb_accel = -np.polyfit(t, vd, 1)[0]
    drag = phys.kdv * -vd.mean() / phys.mass
    expected = (profile.twr_max - 1.0) * GRAVITY
    assert climb_accel + drag == pytest.approx(expected, rel=0.10), \
        f"climb {climb_accel:.2f} m/s^2 (+{drag:.2f} drag), expected (TWR-1)g = {expected:.2f}"


@needs_px4
async def test_faults_in_the_physics_are_injected_and_observed_in_px4s_telemetry():
    """PX4 is never told: each fault acts in the physics or the sensors, and the harness's own fault
    monitor (hil.fault_monitor, as for MAVLink-injected faults) finds PX4's reaction in its telemetry."""
    expected = [(FaultSpec(0.0, "degraded", None, 0.4, "motor2"), "SERVO_OUTPUT_RAW servo2_raw"),  # PX4 compensates
                (FaultSpec(0.0, "off", None, 1.0, "gps"), "GPS_RAW_INT fix_type"),  # PX4 reports the fix lost
                (FaultSpec(0.0, "off", None, 1.0, "baro"), "baro"),  # PX4 no longer has a barometer
                (FaultSpec(0.0, "off", None, 1.0, "motor1"), "ATTITUDE tilt")]  # PX4's attitude estimate tips over
    async with px4_on_harness_physics(SimulatorOptions(speed=SPEED), _sitl(MAIN_BUILD)) as run:
        vehicle = await _airborne(run, 8.0)
        try:
            async with PhysicsFailureInjector(run.simulator) as injector, FaultMonitor(vehicle, injector) as monitor:
                await monitor.wait_for_telemetry(timeout=10.0)
                for spec, evidence in expected:
                    verdict = await monitor.inject_and_verify(spec, timeout=10.0)
                    assert verdict.verdict == OBSERVED and evidence in verdict.evidence, verdict
                    if spec.target != "motor1":
                        await injector.clear(spec)
                        await vehicle.sleep(2.0)
                # PX4 still drives the motor the physics has stopped: it was never told.
                assert run.simulator.motor_inputs()[0] == 0.0 and run.simulator.commands[0] > 0.0
        finally:
            await vehicle.close()


class _SerialRelay:
    """PX4 SITL's simulator TCP connection relayed byte for byte to one end of a pseudo-terminal pair:
    the simulator on the other end talks to PX4 across a real serial line (what a board's USB is)."""

    def __init__(self, port: int, device: str):
        self.port, self.device = port, device
        self.bytes = 0

    async def run(self) -> None:
        connected = asyncio.get_running_loop().create_future()
        server = await asyncio.start_server(lambda r, w: connected.set_result((r, w)), "127.0.0.1", self.port)
        serial = SerialLink(self.device, 921600)
        try:
            reader, writer = await connected
            server.close()

            async def tcp_to_serial() -> None:
                while data := await reader.read(65536):
                    self.bytes += len(data)
                    serial.write(data)

            async def serial_to_tcp() -> None:
                while True:
                    data = await asyncio.to_thread(serial.read, 0.05)
                    if data:
                        self.bytes += len(data)
                        writer.write(data)
                        await writer.drain()

            await asyncio.gather(tcp_to_serial(), serial_to_tcp())
        except ConnectionError:
            pass  # PX4 has gone: the end of the relay
        finally:
            server.close()
            serial.close()


@needs_px4
async def test_simulator_over_a_serial_line_flies_px4():
    with PtyPair() as cable:
        async with px4_sitl(_sitl(MAIN_BUILD, speed=SPEED)) as sitl:
            relay = _SerialRelay(sitl.ports.simulator_tcp, cable.a)
            relaying = asyncio.create_task(relay.run())
            sim = HarnessSimulator(SimulatorOptions())
            loop = SimulatorLoop(sim, SerialLink(cable.b, 921600), speed=SPEED, lockstep=True).start()
            try:
                vehicle = await connect(sitl.url, 20.0, VEHICLE_SPEED)
                try:
                    await vehicle.wait_armable(60.0)
                    await vehicle.arm()
                    await vehicle.takeoff(3.0)
                    assert abs(-sim.dyn.pos[2] - 3.0) < 0.5
                    await vehicle.land()
                    await vehicle.wait_until(lambda s: not s.armed, 60.0, "landing and auto-disarm")
                finally:
                    await vehicle.close()
                assert loop.error is None and loop.stats.replies > 1000
                assert relay.bytes > 100_000 and cable.bytes_copied >= relay.bytes * 0.9
            finally:
                loop.wind_down()  # PX4 stops quickly only while its simulator still feeds it
        relaying.cancel()
        loop.stop()
        loop.link.close()
        with contextlib.suppress(asyncio.CancelledError):
            await relaying


def _build_that_connects_elsewhere(tmp_path: Path) -> str:
    """The real binary with a copy of its etc/ in which px4-rc.mavlinksim has PX4 connect to TCP port 1
    instead of 4560+N (a misconfigured simulator address), so that it never reaches the harness."""
    real = Px4Build.locate(MAIN_BUILD)
    root = tmp_path / "px4"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "px4").symlink_to(real.binary.resolve())
    for name in real.clients() + ["px4-alias.sh"]:
        if (real.binary.parent / name).exists():
            (root / "bin" / name).symlink_to((real.binary.parent / name).resolve())
    shutil.copytree(real.etc, root / "etc", symlinks=True)
    script = root / "etc" / "init.d-posix" / "px4-rc.mavlinksim"
    script.chmod(script.stat().st_mode | stat.S_IWUSR)
    script.write_text(script.read_text().replace("simulator_mavlink start -c $simulator_tcp_port",
                                                 "simulator_mavlink start -c 1"))
    return str(root)


@needs_px4
async def test_px4_that_would_never_connect_is_reported_at_once_naming_both_ports(tmp_path):
    build = _build_that_connects_elsewhere(tmp_path)
    started = time.monotonic()
    with pytest.raises(SitlError, match=r"PX4 SITL instance \d waits for its simulator on TCP port 1, not on its own "
                                        r"45[6-9]\d"):
        async with px4_on_harness_physics(SimulatorOptions(), _sitl(build)):
            pass
    assert time.monotonic() - started < 15, "said as soon as PX4 named the port, not after the start-up cap"


@needs_px4
async def test_sih_airframe_is_refused_before_px4_starts():
    with pytest.raises(ValueError, match="has physics of its own.*10016"):
        async with px4_on_harness_physics(SimulatorOptions(), SitlOptions(px4_dir=MAIN_BUILD, airframe="sihsim_quadx")):
            pass


@needs_px4
@pytest.mark.parametrize("hitl", [0, 1])
async def test_hitl_bench_checks_sys_hitl_before_anything_reaches_the_board(hitl, tmp_path):
    """The closest real thing to a board on the desk: PX4 SITL running on its own sensors (the harness's
    physics over its simulator socket, like a board's IMU) with its MAVLink link relayed across a
    pseudo-terminal pair, so the bench meets it on a serial port exactly as it would meet a board's USB.
    SYS_HITL 0: refused, naming the parameter, with nothing but the parameter request sent. SYS_HITL 1:
    the bench routes the board to MAVSDK and still refuses to arm it without the explicit flag."""
    frames: list[dict] = []
    params = {HITL_PARAM: hitl}
    async with px4_on_harness_physics(SimulatorOptions(speed=2.0), _sitl(MAIN_BUILD, params=params)) as run:
        with PtyPair() as cable:
            fc_url = f"udpin://127.0.0.1:{run.sitl.ports.offboard_remote}"
            async with LinkProxy(fc_url, f"serial://{cable.a}:921600", LinkSpec(), sink=frames.append):
                if hitl == 0:
                    with pytest.raises(HitlModeError, match=f"{HITL_PARAM} = 0, not 1.*not in HITL mode"):
                        async with hitl_bench(f"serial://{cable.b}:921600", SimulatorOptions()):
                            pass
                    sent = {f["msgid"] for f in frames if f["direction"] == "to_vehicle"}
                    assert sent == {mavlink.MAVLINK_MSG_ID_PARAM_REQUEST_READ}
                    assert not run.simulator.armed
                    return
                async with hitl_bench(f"serial://{cable.b}:921600", SimulatorOptions()) as bench:
                    assert bench.board_sysid == run.sitl.ports.system_id
                    vehicle = await connect(bench.url, 20.0, 1.0)
                    try:
                        assert await vehicle.get_param(HITL_PARAM) == 1
                        with pytest.raises(CommandDenied, match="arm_allowed off"):
                            await vehicle.arm()
                    finally:
                        await vehicle.close()
                    assert bench.blocked_commands >= 1 and bench.loop.stats.frames > 0
                    sent = {f["msgid"] for f in frames if f["direction"] == "to_vehicle"}
                    assert mavlink.MAVLINK_MSG_ID_HIL_SENSOR in sent
                    assert not run.simulator.armed


# --- the simulator itself, without PX4 ------------------------------------------------------------

def _parse(data: bytes) -> list:
    parser = mavlink.MAVLink(None)
    return parser.parse_buffer(data) or []


def test_frames_carry_what_px4_reads_at_its_rates():
    sim = HarnessSimulator(SimulatorOptions(seed=3, ground_truth_rate_hz=50.0))
    messages = [m for _ in range(250) for m in _parse(sim.frame())]
    sensors = [m for m in messages if m.get_type() == "HIL_SENSOR"]
    gps = [m for m in messages if m.get_type() == "HIL_GPS"]
    states = [m for m in messages if m.get_type() == "HIL_STATE_QUATERNION"]
    assert len(sensors) == 250 and len(gps) == 10  # IMU 250 Hz, GPS 10 Hz over one vehicle second
    assert len(states) == 50 and states[-1].lat == 473977420 and states[-1].attitude_quaternion[0] == 1.0
    assert [m.time_usec for m in sensors[:3]] == [4000, 8000, 12000]  # PX4's lockstep clock
    # PX4 takes a group only with all its bits: mag at 100 Hz, baro (pressure, altitude, temperature) at 50 Hz.
    assert sum(m.fields_updated & 0x1C0 == 0x1C0 for m in sensors) == 100
    assert sum(m.fields_updated & 0x1A00 == 0x1A00 for m in sensors) == 50
    at_rest = sensors[-1]
    assert at_rest.zacc == pytest.approx(-GRAVITY, abs=0.3) and abs(at_rest.xgyro) < 0.02
    assert math.hypot(at_rest.xmag, at_rest.ymag, at_rest.zmag) == pytest.approx(0.48, abs=0.02)
    assert gps[-1].fix_type == 3 and gps[-1].lat == pytest.approx(473977420, abs=30)
    assert gps[-1].alt == pytest.approx(488000, abs=1000) and gps[-1].satellites_visible == 10


def test_actuator_outputs_drive_the_rotors_in_px4s_motor_order():
    sim = HarnessSimulator(SimulatorOptions())
    controls = [0.0] * 16
    controls[:4] = [1.0, 1.0, 0.3, 0.3]  # motors 1, 2 (counter-clockwise) fast: it lifts off and yaws right
    msg = _parse(mavlink.MAVLink_hil_actuator_controls_message(4000, controls, 129, 1).pack(mavlink.MAVLink(None)))[0]
    sim.apply(ActuatorControls.from_message(msg))
    assert sim.armed and sim.commands == pytest.approx([1.0, 1.0, 0.3, 0.3])
    disarmed = ActuatorControls(8000, False, True, tuple(controls))
    assert disarmed.motors((0, 1, 2, 3)) == [0.0] * 4
    sim.apply(ActuatorControls.from_message(msg))
    for _ in range(100):
        sim.frame()
    assert not sim.dyn.on_ground and sim.dyn.omega[2] > 0.0
    # PX4's allocation is told the same rotors: motor 1 front-right counter-clockwise, motor 3 front-left.
    params = px4_params_for(sim.profile)
    assert params["CA_ROTOR0_PX"] > 0 and params["CA_ROTOR0_PY"] > 0 and params["CA_ROTOR0_KM"] > 0
    assert params["CA_ROTOR2_PX"] > 0 and params["CA_ROTOR2_PY"] < 0 and params["CA_ROTOR2_KM"] < 0
    assert params["MPC_THR_HOVER"] == pytest.approx(sim.dyn.phys.hover_thrust, abs=1e-3)  # reaction torque of the counter-clockwise pair: nose right


async def test_fault_specs_act_in_the_physics_and_unsupported_ones_are_refused_with_a_reason():
    sim = HarnessSimulator(SimulatorOptions())
    sim.commands = [0.6] * 4
    async with PhysicsFailureInjector(sim) as faults:
        motor_off = FaultSpec(0.0, "off", None, 1.0, "motor3")
        assert (await faults.inject(motor_off)).accepted
        assert sim.motor_inputs() == [0.6, 0.6, 0.0, 0.6]
        weak = FaultSpec(0.0, "degraded", None, 0.4, "motor1")
        assert (await faults.inject(weak)).accepted and sim.dyn.rotor_efficiency[0] == pytest.approx(0.6)
        refused = await faults.inject(FaultSpec(0.0, "off", None, 1.0, "optical_flow"))
        assert not refused.accepted and refused.result == "UNSUPPORTED" and "not simulated" in refused.reason
    assert sim.motor_inputs() == [0.6] * 4 and sim.dyn.rotor_efficiency.tolist() == [1.0] * 4  # cleared on the way out


def test_a_profiles_sensors_block_sets_what_px4_reads_and_bad_ones_are_named(tmp_path):
    from profiles.library import load_vehicle_profile
    from profiles.vehicle import ProfileError

    path = tmp_path / "noisy.yaml"
    path.write_text("mass: 1.0\ntwr_max: 2.0\nalpha_xy_max: 80\nalpha_z_max: 6\n"
                    "sensors: {gps_rate_hz: 5, magnetic_field: {declination_deg: 10.0}}\n")
    profile = load_vehicle_profile(path)
    assert profile.sensors.gps_rate_hz == 5 and profile.sensors.magnetic_field.declination_deg == 10.0
    sim = HarnessSimulator(SimulatorOptions(profile=profile))
    gps = [m for _ in range(250) for m in _parse(sim.frame()) if m.get_type() == "HIL_GPS"]
    mags = [m for m in _parse(sim.frame() + sim.frame()) if m.get_type() == "HIL_SENSOR" and m.fields_updated & 0x1C0]
    assert len(gps) == 5
    assert math.degrees(math.atan2(-mags[0].ymag, mags[0].xmag)) == pytest.approx(-10.0, abs=1.0)  # heading north
    for text, message in (("sensors: {gyro_noise: fast}", r"sensors\.gyro_noise: expected a number"),
                          ("sensors: {imu_rate_hz: 20}", r"sensors\.imu_rate_hz: expected at least 50 Hz"),
                          ("sensors: {lidar_rate_hz: 5}", r"sensors\.lidar_rate_hz: unknown sensor setting"),
                          ("sensors: 3", "sensors: expected a mapping")):
        path.write_text("mass: 1.0\ntwr_max: 2.0\nalpha_xy_max: 80\nalpha_z_max: 6\n" + text + "\n")
        with pytest.raises(ProfileError, match=message):
            load_vehicle_profile(path)


@needs_px4
def test_the_hil_suite_runs_through_the_pytest_plugin_on_px4_over_the_harness_physics(tmp_path):
    """The same tests/hil suite a lab runs on every target, on PX4 SITL with the harness's physics."""
    root = Path(__file__).resolve().parents[1]
    records = tmp_path / "records"
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/hil", "-rs",
                             "--hil-target", "px4-sitl", "--hil-physics", "harness", "--hil-speed", str(SPEED),
                             "--hil-record-dir", str(records)],
                            cwd=root, capture_output=True, text=True, timeout=600, env={**os.environ, "PX4_DIR": MAIN_BUILD})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    summary = result.stdout.strip().splitlines()[-1]
    passed = int(re.search(r"(\d+) passed", summary).group(1))
    assert passed >= 5, result.stdout[-2000:]
    # Each flown test's record holds the physics' ground truth: PX4 flew the harness's physics, not SIH.
    flown = [d for d in records.iterdir() if (d / "manifest.json").exists()]
    assert len(flown) >= passed
    for record in flown:
        assert len(read_table(record, TRUTH_TABLE)) > 100, record


@needs_px4
def test_a_campaign_trial_flies_px4_on_the_harness_physics(tmp_path):
    """`physics: harness` in a campaign: the trial's PX4 flies the harness's physics, whose truth is in the record."""
    import yaml

    campaign = tmp_path / "c.yaml"
    campaign.write_text(yaml.safe_dump({"name": "hp", "missions": [{"scene": "forest", "configs": [0]}],
                                        "targets": ["px4-sitl"], "physics": "harness", "speed": SPEED,
                                        "planners": ["straight"]}))
    out = tmp_path / "run"
    root = Path(__file__).resolve().parents[1]
    result = subprocess.run([sys.executable, "-m", "hil", "run", str(campaign), "--out", str(out), "--no-progress"],
                            cwd=root, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PX4_DIR": MAIN_BUILD})
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    (record,) = list((out / "trials").iterdir())
    manifest = json.loads((record / "manifest.json").read_text())
    assert manifest["config"]["physics"] == "harness" and manifest["outcome"] in ("collision", "success", "timeout")
    assert len(read_table(record, TRUTH_TABLE)) > 100
    # PX4's estimate against the truth, with its interval, in the results and the report.
    results = load_results(out)
    h = results.iloc[0]
    assert 0 < h["est_pos_h_m_low"] <= h["est_pos_h_m"] <= h["est_pos_h_m_high"] < 1.0, h.filter(like="est_")
    assert 0 < h["est_roll_deg"] < 5.0 and h["est_pos_h_m"] <= h["est_pos_h_m_p95"]
    _, html_path = write_report(results, tmp_path / "report")
    page = html_path.read_text()
    assert "PX4&#x27;s estimate against the truth" in page or "PX4's estimate against the truth" in page
    assert "horizontal position (m)" in page


@needs_px4
def test_hil_fly_on_the_harness_physics_prints_px4s_estimate_against_the_truth(tmp_path):
    root = Path(__file__).resolve().parents[1]
    record = tmp_path / "fly"
    result = subprocess.run([sys.executable, "-m", "hil", "fly", "missions/examples/demo_square.yaml", "--target",
                             "px4-sitl", "--physics", "harness", "--speed", str(SPEED), "--record-dir", str(record)],
                            cwd=root, capture_output=True, text=True, timeout=300, env={**os.environ, "PX4_DIR": MAIN_BUILD})
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "PX4's estimate against the truth" in result.stdout and "horizontal position (m)" in result.stdout
    figures = trial_figures(record)
    assert 0 < figures["est_pos_h_m_low"] <= figures["est_pos_h_m"] <= figures["est_pos_h_m_high"] < 0.5
