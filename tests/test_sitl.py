"""The PX4 SITL target against the real PX4 binary: finding a build, its command line and ports,
instances that never collide, start-up, parameters, failures at start, stopping, and logs.

Everything here runs the real `px4` from PX4_DIR (tests/px4_builds.py says where it comes from);
without a build these tests skip with the message that says how to point the harness at one.
Where PX4 must fail on demand, the real binary runs a copy of its own start-up scripts with one
line changed (the test says which), since PX4 cannot be asked to fail otherwise.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import stat
import sys
import time
from pathlib import Path

import pytest

from hil.cli import main as hil_main
from px4.sitl import (
    HOW_TO_GET_PX4,
    Px4Build,
    Px4NotFound,
    SitlError,
    SitlOptions,
    SitlPorts,
    claimed_instance,
    params_script,
    px4_sitl,
    sitl_command,
    sitl_environment,
)
from targets.spec import PX4_SITL, TargetSpec

from .px4_builds import MAIN_BUILD, needs_px4

DEMO = str(Path(__file__).resolve().parents[1] / "missions" / "examples" / "demo_square.yaml")


def make_layout(root: Path, binary_text: str = "#!/bin/sh\n") -> Path:
    """A PX4-shaped build tree (build/px4_sitl_default/{bin/px4, etc/init.d-posix/rcS}): layout only."""
    build = root / "build" / "px4_sitl_default"
    (build / "etc" / "init.d-posix").mkdir(parents=True)
    (build / "etc" / "init.d-posix" / "rcS").write_text("# rcS\n")
    (build / "bin").mkdir()
    (build / "bin" / "px4").write_text(binary_text)
    (build / "bin" / "px4").chmod(0o755)
    return build


def test_locate_from_option_env_and_path(tmp_path):
    build = make_layout(tmp_path)
    for given in (tmp_path, build, build / "bin"):
        located = Px4Build.locate(given, env={}, which=lambda _: None)
        assert located.binary == build / "bin" / "px4" and located.etc == build / "etc"
    assert Px4Build.locate(None, env={"PX4_DIR": str(tmp_path)}, which=lambda _: None).etc == build / "etc"
    assert Px4Build.locate(None, env={}, which=lambda _: str(build / "bin" / "px4")).etc == build / "etc"


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
    assert ports.simulator_tcp == 4560 + instance


def test_instances_above_9_share_a_port_and_are_refused():
    with pytest.raises(ValueError, match="14549"):
        SitlPorts(10)


def test_target_spec_names_px4_sitl_instances():
    assert TargetSpec.parse("px4-sitl") == TargetSpec(PX4_SITL, "px4-sitl", instance=None)
    assert TargetSpec.parse("px4-sitl:7").instance == 7
    for bad in ("px4-sitl:x", "px4-sitl:12"):
        with pytest.raises(ValueError, match="0-9"):
            TargetSpec.parse(bad)


def test_parameters_script_is_px4_shell_and_refuses_what_px4_cannot_take():
    text = params_script({"SIH_MASS": 0.75, "MAV_SYS_ID": 3.0, "COM_OBL_RC_ACT": 1})
    assert text.splitlines()[1:] == ["param set SIH_MASS 0.75", "param set MAV_SYS_ID 3", "param set COM_OBL_RC_ACT 1",
                                     '. "${R}etc/init.d-posix/px4-rc.simulator"']
    for bad in ({"SIH_MASS; reboot": 1.0}, {"sih_mass": 1.0}, {"A_NAME_LONGER_THAN_16": 1.0}):
        with pytest.raises(ValueError, match="parameter name"):
            params_script(bad)
    for value in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="finite"):
            params_script({"SIH_MASS": value})


def test_instances_are_never_shared_and_busy_ports_are_skipped(tmp_path):
    with claimed_instance(lock_dir=tmp_path) as first, claimed_instance(lock_dir=tmp_path) as second:
        assert first.instance != second.instance
        with pytest.raises(SitlError, match=f"{first.instance}: used by another harness process"):
            with claimed_instance(first.instance, lock_dir=tmp_path):
                pass
    # Another process holding the offboard port of an instance: that instance is passed over.
    with claimed_instance(lock_dir=tmp_path) as free:
        wanted = free.instance
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as holder:
        holder.bind(("127.0.0.1", SitlPorts(wanted).offboard_remote))
        with claimed_instance(lock_dir=tmp_path) as taken:
            assert taken.instance != wanted
        with pytest.raises(SitlError, match=f"udp {SitlPorts(wanted).offboard_remote} in use"):
            with claimed_instance(wanted, lock_dir=tmp_path):
                pass


# --- the real PX4 -------------------------------------------------------------------------------

@needs_px4
def test_command_line_and_environment_select_the_sih_quadrotor(tmp_path):
    build = Px4Build.locate(MAIN_BUILD)
    frame = build.airframe()
    assert (frame.autostart, frame.model, frame.simulator) == (10040, "sihsim_quadx", "sihsim")
    assert build.airframe("10040") == frame and build.airframe(10016).model == "none_iris"
    assert build.airframe("none_iris").external_physics and not frame.external_physics
    with pytest.raises(ValueError, match="not in .*airframes.*10040 sihsim_quadx"):
        build.airframe("quadzilla")
    command = sitl_command(build, tmp_path, 2)
    assert command[:5] == [str(tmp_path / "bin" / "px4"), "-d", "-i", "2", "-w"]
    assert command[-1] == str(build.etc) and (build.etc / "init.d-posix" / "rcS").is_file()
    env = sitl_environment(frame, 4.0, base={"PATH": "/bin", "PX4_PARAM_SIH_MASS": "1"})
    assert env == {"PATH": "/bin", "PX4_SYS_AUTOSTART": "10040", "PX4_SIMULATOR": "sihsim",
                   "PX4_SIM_MODEL": "sihsim_quadx", "PX4_SIM_SPEED_FACTOR": "4.0", "HEADLESS": "1"}
    assert "PX4_SIM_SPEED_FACTOR" not in sitl_environment(frame, 1.0, base={})
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            sitl_environment(frame, bad)


@needs_px4
async def test_px4_starts_with_the_harness_parameters_and_stops_leaving_its_logs(tmp_path):
    from bridges.mavsdk_vehicle import connect

    # SENS_EN_GPSSIM 0 is PX4's compiled default, which the airframe's set-default would override if the
    # parameters came before it (as PX4_PARAM_* variables do): the vehicle must boot without GPS.
    options = SitlOptions(speed=4.0, px4_dir=MAIN_BUILD,
                          params={"MPC_XY_CRUISE": 3.25, "SIH_MASS": 1.3, "SENS_EN_GPSSIM": 0})
    async with px4_sitl(options, keep_in=tmp_path / "record") as sitl:
        workdir = sitl.workdir
        assert sitl.failure() is None and sitl.url == f"udpin://127.0.0.1:{14540 + sitl.instance}"
        vehicle = await connect(sitl.url, 20.0, 4.0)
        try:
            # Set before any module started: the vehicle is the profile's from boot.
            assert await vehicle.get_param("MPC_XY_CRUISE") == pytest.approx(3.25)
            assert await vehicle.get_param("SIH_MASS") == pytest.approx(1.3)
            assert await vehicle.get_param("SENS_EN_GPSSIM") == 0
            assert await vehicle.get_param("MAV_SYS_ID") == sitl.ports.system_id
            await asyncio.sleep(2.0)
            assert (await vehicle.telemetry_plugin.gps_info()).fix_type.value == 0  # NO_GPS: the simulator never started
        finally:
            await vehicle.close()
    assert sitl.proc.poll() is not None
    assert not workdir.exists()  # fresh per trial, gone afterwards
    console = (tmp_path / "record" / "px4-console.log").read_text()
    assert "Startup script returned successfully" in console and "\x1b[" not in console
    assert sorted((tmp_path / "record" / "ulog").glob("*.ulg")), "PX4's flight log kept in the record"


def _broken_build(tmp_path: Path, change) -> str:
    """The real binary with a copy of its etc/ in which `change(rcS text)` altered the start-up script."""
    real = Px4Build.locate(MAIN_BUILD)
    root = tmp_path / "px4"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "px4").symlink_to(real.binary.resolve())
    for name in real.clients() + ["px4-alias.sh"]:
        source = real.binary.parent / name
        if source.exists():
            (root / "bin" / name).symlink_to(source.resolve())
    shutil.copytree(real.etc, root / "etc", symlinks=True)
    rcs = root / "etc" / "init.d-posix" / "rcS"
    rcs.chmod(rcs.stat().st_mode | stat.S_IWUSR)
    rcs.write_text(change(rcs.read_text()))
    return str(root)


@needs_px4
async def test_px4_that_fails_its_start_up_script_is_reported_with_its_words(tmp_path):
    # PX4 cannot be made to fail on demand; its own rcS is made to exit with an error after the banner.
    broken = _broken_build(tmp_path, lambda text: text.replace("#!/bin/sh\n", '#!/bin/sh\necho "ERROR [init] broken on purpose"\nexit 1\n', 1))
    started = time.monotonic()
    with pytest.raises(SitlError, match="(?s)broken on purpose"):
        async with px4_sitl(SitlOptions(px4_dir=broken, speed=4.0)):
            pass
    assert time.monotonic() - started < 15


@needs_px4
async def test_px4_that_dies_while_it_starts_is_reported_at_once_with_its_last_words(tmp_path):
    # Its start-up script kills PX4 part-way, as a crash would, and lingers holding the console open. PX4 runs
    # it through system(): PX4 is the parent of the script's parent shell.
    kill = 'echo "about to be killed"\nread -r _ _ _ px4 _ < /proc/$PPID/stat\nkill -9 "$px4"\nsleep 600\n'
    broken = _broken_build(tmp_path, lambda text: text.replace("#!/bin/sh\n", "#!/bin/sh\n" + kill, 1))
    started = time.monotonic()
    with pytest.raises(SitlError, match=r"(?s)PX4 SITL instance \d exited with code -9.*about to be killed"):
        async with px4_sitl(SitlOptions(px4_dir=broken, speed=4.0)):
            pass
    assert time.monotonic() - started < 15


@needs_px4
async def test_px4_alive_but_never_done_starting_is_given_up_at_the_cap_and_stopped(tmp_path):
    # The start-up script is made to hang before PX4 would say it has started.
    broken = _broken_build(tmp_path, lambda text: text.replace("#!/bin/sh\n", "#!/bin/sh\nsleep 600\n", 1))
    with pytest.raises(SitlError, match="had not run its start-up script after 2 s"):
        async with px4_sitl(SitlOptions(px4_dir=broken, start_cap_s=2.0)):
            pass


@needs_px4
async def test_px4_waiting_for_an_external_simulator_is_stopped(tmp_path):
    options = SitlOptions(px4_dir=MAIN_BUILD, airframe="none_iris")
    started = time.monotonic()
    async with px4_sitl(options) as sitl:
        assert sitl.airframe.external_physics
        # Yielded once PX4 waits for its simulator: the start-up script goes on only when one connects.
        assert f"TCP port {4560 + sitl.instance}" in sitl.output[-1]
        assert not any("Startup script returned successfully" in line for line in sitl.output)
        proc = sitl.proc
    # PX4 alone ignores SIGTERM while it waits; signalled as a group with its start-up shell, it goes.
    assert proc.poll() is not None
    assert time.monotonic() - started < 30


def test_hil_fly_without_px4_gives_one_clear_message(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("PX4_DIR", raising=False)
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable))
    code = hil_main(["fly", DEMO, "--target", "px4-sitl", "--record-dir", str(tmp_path / "rec")])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and HOW_TO_GET_PX4 in err[0]
    assert not (tmp_path / "rec").exists()
