"""The `hil` command end to end, as real processes: what a user types and what they get back."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from hil.record import read_events, read_manifest, read_table
from px4.process import free_udp_port

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "missions" / "examples" / "demo_square.yaml"


def hil(*args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hil", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_help_teaches_every_verb():
    out = hil("--help").stdout
    for verb in ("sim", "fly"):
        assert verb in out
    fly_help = hil("fly", "--help").stdout
    assert "--arm" in fly_help and "examples:" in fly_help and "lockstep" in fly_help


def test_fly_in_lockstep_writes_a_finished_record(tmp_path):
    record = tmp_path / "trial"
    result = hil("fly", str(DEMO), "--clock", "lockstep", "--record-dir", str(record))
    assert result.returncode == 0, result.stderr
    assert "outcome             success" in result.stdout
    manifest = read_manifest(record)
    assert manifest["status"] == "finished" and manifest["outcome"] == "success"
    assert manifest["summary"]["path_length_m"] > 40.0
    telemetry = read_table(record, "telemetry")
    assert len(telemetry) > 500 and {"north", "east", "down", "armed", "flight_mode"} <= set(telemetry.columns)
    kinds = [e["kind"] for e in read_events(record)]
    assert kinds.count("mission_item_reached") == 4 and kinds[-1] == "trial_finished"


def test_fly_on_the_builtin_vehicle_process_over_mavlink(tmp_path):
    record = tmp_path / "trial"
    result = hil("fly", str(DEMO), "--speed", "4", "--record-dir", str(record))
    assert result.returncode == 0, result.stdout + result.stderr
    manifest = read_manifest(record)
    assert manifest["outcome"] == "success" and manifest["target"] == "sim"
    # Summary metrics are in vehicle time: ~27 s of flight, although it took a quarter of that.
    assert 15.0 < manifest["summary"]["duration_s"] < 60.0


def test_a_malformed_mission_is_refused_naming_file_and_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(DEMO.read_text().replace("speed: 5.0", "speed: fast"))
    result = hil("fly", str(bad), "--clock", "lockstep")
    assert result.returncode == 2
    assert str(bad) in result.stderr and "speed" in result.stderr and "expected" in result.stderr


def test_a_non_simulated_target_is_never_armed_without_the_arm_option(tmp_path):
    target = f"udpin://127.0.0.1:{free_udp_port()}"
    start = time.monotonic()
    result = hil("fly", str(DEMO), "--target", target, "--record-dir", str(tmp_path / "r"))
    assert result.returncode == 2
    assert "--arm" in result.stderr
    assert time.monotonic() - start < 10.0, "refused before trying to connect"
    assert not (tmp_path / "r").exists(), "no trial was started"


def test_an_unreachable_target_fails_within_the_connect_timeout(tmp_path):
    target = f"udpin://127.0.0.1:{free_udp_port()}"
    result = hil("fly", str(DEMO), "--target", target, "--arm", "--connect-timeout", "1",
                 "--record-dir", str(tmp_path / "r"))
    assert result.returncode == 1
    assert target in result.stdout and "no autopilot answered" in result.stdout
    assert read_manifest(tmp_path / "r")["outcome"] == "error"


def test_sim_rejects_a_bad_connection_string():
    result = hil("sim", "--link", "carrier-pigeon://coop", timeout=30)
    assert result.returncode == 2
    assert "carrier-pigeon://coop" in result.stderr and "unknown scheme" in result.stderr


async def test_sim_serves_mavsdk_and_stops_cleanly_on_ctrl_c():
    import signal

    from bridges.mavsdk_vehicle import connect

    port = free_udp_port()
    proc = subprocess.Popen([sys.executable, "-m", "hil", "sim", "--link", f"udpout://127.0.0.1:{port}", "--speed", "2"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        banner = proc.stdout.readline()
        assert f"connect with udpin://127.0.0.1:{port}" in banner
        vehicle = await connect(f"udpin://127.0.0.1:{port}", timeout=10.0)
        await vehicle.wait_armable(10.0)
        assert vehicle.state.flight_mode == "HOLD"
        await vehicle.close()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
        assert "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
