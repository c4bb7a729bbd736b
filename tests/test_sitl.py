"""The PX4 SITL target: finding PX4, its command line, ports, start/stop lifecycle and logs.

Everything PX4-independent runs against a stand-in `px4` script that behaves like PX4 where the
harness can see it (console lines, the `px4-param` client, a ULog written under the working
directory, exit on SIGTERM). The tests that need a real PX4 v1.14 SITL build skip when there is
none, with the message that says how to point the harness at one.
"""

import os
import stat
import sys
from pathlib import Path

import pytest

from hil.cli import main as hil_main
from hil.targets import PX4_SITL, TargetSpec
from profiles.vehicle import load_vehicle_profile
from px4.sih import sitl_params
from px4.sitl import (HOW_TO_GET_PX4, Px4Build, Px4NotFound, SitlError, SitlOptions, SitlPorts, param_commands,
                      px4_sitl, sitl_command, sitl_environment)

DEMO = str(Path(__file__).resolve().parents[1] / "missions" / "examples" / "demo_square.yaml")
FAKE_PX4 = """#!/bin/sh
# Stand-in for PX4 SITL: parses -w, talks like PX4, writes a log, exits on SIGTERM.
while [ $# -gt 0 ]; do case "$1" in -w) shift; WORKDIR="$1";; -i) shift; INSTANCE="$1";; esac; shift; done
echo "INFO  [init] PX4_SIM_MODEL=$PX4_SIM_MODEL autostart=$PX4_SYS_AUTOSTART speed=$PX4_SIM_SPEED_FACTOR instance=$INSTANCE"
[ -n "$FAKE_PX4_DIE" ] && { echo "ERROR [simulator_sih] $FAKE_PX4_DIE"; exit 3; }
echo "INFO  [px4] Startup script returned successfully"
mkdir -p "$WORKDIR/log/2024-01-01"
trap 'echo "ULog data" > "$WORKDIR/log/2024-01-01/12_00_00.ulg"; exit 0' TERM
sleep 0.3
[ -z "$FAKE_PX4_NEVER_READY" ] && echo "INFO  [commander] Ready for takeoff!"
while true; do sleep 0.05; done
"""
FAKE_PARAM = """#!/bin/sh
echo "$@" >> "$(dirname "$0")/param_calls.txt"
"""


def make_build(root):
    """A PX4-shaped build tree: build/px4_sitl_default/{bin/px4, bin/px4-param, etc/init.d-posix/rcS}."""
    build = root / "build" / "px4_sitl_default"
    (build / "etc" / "init.d-posix").mkdir(parents=True)
    (build / "etc" / "init.d-posix" / "rcS").write_text("# rcS\n")
    (build / "bin").mkdir()
    for name, text in (("px4", FAKE_PX4), ("px4-param", FAKE_PARAM)):
        path = build / "bin" / name
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return build


def test_locate_from_option_env_and_path(tmp_path):
    build = make_build(tmp_path)
    for given in (tmp_path, build, build / "bin"):
        assert Px4Build.locate(given, env={}, which=lambda _: None).binary == build / "bin" / "px4"
    assert Px4Build.locate(None, env={"PX4_DIR": str(tmp_path)}, which=lambda _: None).rootfs == build
    assert Px4Build.locate(None, env={}, which=lambda _: str(build / "bin" / "px4")).rootfs == build


def test_not_found_says_how_to_point_at_a_build(tmp_path):
    with pytest.raises(Px4NotFound) as err:
        Px4Build.locate(tmp_path, env={}, which=lambda _: None)
    assert HOW_TO_GET_PX4 in str(err.value) and f"--px4-dir={tmp_path}" in str(err.value)
    assert "PX4_DIR" in str(err.value) and "make px4_sitl_default" in str(err.value)


@pytest.mark.parametrize("instance, onboard, local, gcs, sysid", [(0, 14540, 14580, 18570, 1), (3, 14543, 14583, 18573, 4)])
def test_ports_follow_px4_startup_scripts(instance, onboard, local, gcs, sysid):
    ports = SitlPorts(instance)
    assert (ports.offboard_remote, ports.offboard_local, ports.gcs_local, ports.system_id) == (onboard, local, gcs, sysid)
    assert ports.url == f"udpin://127.0.0.1:{onboard}"


def test_instances_above_9_share_a_port_and_are_refused():
    with pytest.raises(ValueError, match="14549"):
        SitlPorts(10)


def test_command_line_and_environment(tmp_path):
    build = make_build(tmp_path)
    located = Px4Build.locate(build, env={}, which=lambda _: None)
    assert sitl_command(located, 2, tmp_path / "w") == [str(build / "bin" / "px4"), "-d", "-i", "2", "-w",
                                                        str(tmp_path / "w"), str(build)]
    env = sitl_environment(4.0, base={"PATH": "/bin"})
    assert env == {"PATH": "/bin", "PX4_SYS_AUTOSTART": "10040", "PX4_SIMULATOR": "sihsim",
                   "PX4_SIM_MODEL": "sihsim_quadx", "PX4_SIM_SPEED_FACTOR": "4.0", "HEADLESS": "1"}
    with pytest.raises(ValueError):
        sitl_environment(0.0)
    calls = param_commands(located, 2, {"SIH_MASS": 0.75})
    assert calls == [[str(build / "bin" / "px4-param"), "--instance", "2", "set", "SIH_MASS", "0.75"]]


def test_target_spec_names_px4_sitl_instances():
    assert TargetSpec.parse("px4-sitl") == TargetSpec(PX4_SITL, simulated=True, instance=0)
    assert TargetSpec.parse("px4-sitl:7").instance == 7
    for bad in ("px4-sitl:x", "px4-sitl:12"):
        with pytest.raises(ValueError, match="0-9"):
            TargetSpec.parse(bad)


async def test_lifecycle_with_a_stand_in_px4(tmp_path):
    build = make_build(tmp_path / "px4")
    params = sitl_params(load_vehicle_profile("2.00kg-T-MOTOR"))
    options = SitlOptions(instance=3, speed=5.0, params=params, px4_dir=str(build))
    async with px4_sitl(options, ulog_dest=tmp_path / "record" / "ulog") as sitl:
        assert sitl.url == "udpin://127.0.0.1:14543" and sitl.failure() is None
        workdir = sitl.workdir
        assert "Ready for takeoff!" in "\n".join(sitl.output)
        assert "autostart=10040 speed=5.0 instance=3" in "\n".join(sitl.output)
        calls = (build / "bin" / "param_calls.txt").read_text().splitlines()
        assert len(calls) == len(params) and calls[0].startswith("--instance 3 set SIH_MASS 2.0")
    assert sitl.proc.poll() is not None  # stopped
    assert (tmp_path / "record" / "ulog" / "12_00_00.ulg").read_text() == "ULog data\n"
    assert not workdir.exists()  # fresh per trial, gone afterwards


async def test_px4_that_dies_at_start_is_reported(tmp_path, monkeypatch):
    build = make_build(tmp_path)
    monkeypatch.setenv("FAKE_PX4_DIE", "no such airframe")
    with pytest.raises(SitlError, match="exited with code 3(.|\n)*no such airframe"):
        async with px4_sitl(SitlOptions(px4_dir=str(build))):
            pass


async def test_px4_never_ready_times_out_and_is_stopped(tmp_path, monkeypatch):
    build = make_build(tmp_path)
    monkeypatch.setenv("FAKE_PX4_NEVER_READY", "1")
    with pytest.raises(SitlError, match="not ready for takeoff after 1 s"):
        async with px4_sitl(SitlOptions(px4_dir=str(build), ready_timeout_s=1.0)):
            pass


def test_hil_fly_without_px4_gives_one_clear_message(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("PX4_DIR", raising=False)
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable))
    code = hil_main(["fly", DEMO, "--target", "px4-sitl",
                     "--record-dir", str(tmp_path / "rec")])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and HOW_TO_GET_PX4 in err[0]
    assert not (tmp_path / "rec").exists()


# --- with a real PX4 v1.14 SITL build ----------------------------------------------------------

def _real_px4():
    try:
        return Px4Build.locate()
    except Px4NotFound as exc:
        return str(exc)


REAL_PX4 = _real_px4()
needs_px4 = pytest.mark.skipif(isinstance(REAL_PX4, str), reason=str(REAL_PX4))


@needs_px4
@pytest.mark.slow
def test_hil_fly_on_px4_sitl_end_to_end(tmp_path):
    record = tmp_path / "rec"
    code = hil_main(["fly", DEMO, "--target", "px4-sitl:4", "--speed", "4",
                     "--profile", "1.40kg-EMAX", "--record-dir", str(record)])
    assert code == 0
    logs = sorted((record / "ulog").glob("*.ulg"))
    assert logs and (record / "ulog" / f"{logs[0].stem}.vehicle_local_position.parquet").exists()


@needs_px4
@pytest.mark.slow
async def test_sitl_vehicle_reaches_the_profile_climb_acceleration(tmp_path):
    from bridges.mavsdk_vehicle import connect
    from px4.ulog import read_topic

    profile = load_vehicle_profile("2.00kg-T-MOTOR")
    params = {**sitl_params(profile), "MPC_ACC_UP_MAX": 15.0, "MPC_Z_VEL_MAX_UP": 8.0, "MPC_TKO_SPEED": 5.0}
    async with px4_sitl(SitlOptions(instance=5, speed=2.0, params=params), ulog_dest=tmp_path) as sitl:
        vehicle = await connect(sitl.url, 20.0, 2.0)
        try:
            for name, value in sitl_params(profile).items():
                assert await vehicle.get_param(name) == pytest.approx(value, rel=1e-6)
            await vehicle.wait_armable(timeout=60.0)
            await vehicle.arm()
            await vehicle.takeoff(3.0)
            await vehicle.start_offboard()
            await vehicle.set_velocity_ned(0.0, 0.0, -8.0)
            await vehicle.sleep(2.0)
            await vehicle.set_velocity_ned(0.0, 0.0, 0.0)
            await vehicle.sleep(2.0)
            await vehicle.stop_offboard()
            await vehicle.land()
            await vehicle.wait_until(lambda s: not s.armed, timeout=60.0, what="landed")
        finally:
            await vehicle.close()
    position = read_topic(sorted(tmp_path.glob("*.ulg"))[-1], "vehicle_local_position")
    peak_up = (-position["az"]).rolling(25, center=True).median().max()
    assert peak_up == pytest.approx((profile.twr_max - 1.0) * 9.80665, rel=0.10)
