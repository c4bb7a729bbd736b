"""A campaign on a Ray cluster this test starts on loopback, through `hil run --executor ray --address`: the same
outcomes as the local pool, with the package, a planner module and the files the campaign names shipped to the
workers rather than found at the driver's paths, progress shown, and a resume that repeats no finished trial."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest
import yaml

from missions.export import save_scene
from missions.scenes import scene_for

pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[ray]')")

ROOT = Path(__file__).resolve().parents[1]
RAY = Path(sys.executable).parent / "ray"

# A planner that says, from inside the trial, where its module and the harness were imported from and what
# PYTHONPATH the worker had. It lives only in a folder on the driver's PYTHONPATH.
PROBE = '''
import json, os
from pathlib import Path

import hil
from onboard.planners.straight import StraightLine


class Probe(StraightLine):
    def reset(self, task):
        seen = {{"module": __file__, "hil": hil.__file__, "pythonpath": os.environ.get("PYTHONPATH", "")}}
        Path({out!r}, f"{{os.getpid()}}.json").write_text(json.dumps(seen))
        super().reset(task)
'''


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def write_campaign(folder: Path, probe_out: Path) -> None:
    """Three lockstep trials whose campaign names files by relative path: a profile, a mission with a scene file
    beside it, and a planner module on the driver's PYTHONPATH only."""
    (folder / "driver-only").mkdir()
    (folder / "driver-only" / "ray_probe.py").write_text(PROBE.format(out=str(probe_out)))
    (folder / "missions").mkdir()
    (folder / "scenes").mkdir()
    save_scene(folder / "scenes" / "forest.npz", scene_for("forest", 0))
    p2p = (ROOT / "missions/examples/benchmark/forest_point_to_point.yaml").read_text()
    (folder / "missions" / "p2p.yaml").write_text(
        p2p.replace("scene: {generator: forest, seed: 0}", "scene: {file: ../scenes/forest.npz}"))
    shutil.copy(ROOT / "profiles/vehicles/default.yaml", folder / "light.yaml")
    (folder / "c.yaml").write_text(yaml.safe_dump({
        "name": "shipped", "seed": 3, "profiles": ["light.yaml"], "targets": ["lockstep"],
        "planners": ["straight", "ray_probe:Probe"],
        "missions": [{"scene": "forest", "configs": [0]}, {"mission": "missions/p2p.yaml"}]}))


def hil(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hil", "run", "c.yaml", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=180, check=False)


def start_head(env: dict[str, str], temp_dir: str) -> tuple[subprocess.Popen, int]:
    """`ray start --head` on loopback with free ports, in its own session so that it and only it is stopped."""
    port = free_port()
    head = subprocess.Popen(
        [str(RAY), "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=2",
         "--include-dashboard=false", f"--dashboard-port={free_port()}",
         f"--dashboard-agent-listen-port={free_port()}", f"--temp-dir={temp_dir}"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while subprocess.run([str(RAY), "status", f"--address=127.0.0.1:{port}"], env=env,
                         capture_output=True, check=False).returncode != 0:
        assert head.poll() is None, head.stderr.read()
        assert time.monotonic() < deadline, "the Ray head did not come up within 60 s"
        time.sleep(1)
    return head, port


def stop_head(head: subprocess.Popen) -> None:
    """SIGTERM to the head's session (the processes this test started), then SIGKILL whatever of it is left (the
    GCS server outlives a SIGTERM)."""
    with_session = [p for p in psutil.process_iter() if _session(p) == head.pid]
    os.killpg(head.pid, signal.SIGTERM)
    _, alive = psutil.wait_procs(with_session, timeout=5)
    for process in alive:
        process.kill()


def _session(process: psutil.Process) -> int | None:
    try:
        return os.getsid(process.pid)
    except OSError:
        return None


def test_a_campaign_on_a_ray_cluster_ships_what_it_needs_and_matches_the_local_pool(tmp_path):
    probe_out = tmp_path / "probe"
    probe_out.mkdir()
    folder = tmp_path / "campaign"
    folder.mkdir()
    write_campaign(folder, probe_out)
    driver_path = str(folder / "driver-only")
    # HOME: Ray keeps its token in ~/.ray. RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0: the head binds every port on loopback
    # and the driver looks for its node there (`hil run --address local` sets it for its private cluster).
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_") and key != "PYTHONPATH"}
    env.update(HOME=str(tmp_path / "home"), RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")
    driver_env = {**env, "PYTHONPATH": driver_path}

    local = hil(folder, driver_env, "--out", "local", "--workers", "2", "--no-progress")
    assert local.returncode == 0, local.stderr
    for seen in probe_out.iterdir():
        seen.unlink()

    temp_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # Ray's socket paths must stay short
    head, port = start_head(env, temp_dir)
    try:
        on_ray = hil(folder, driver_env, "--out", "ray", "--executor", "ray", "--address", f"127.0.0.1:{port}")
        assert on_ray.returncode == 0, on_ray.stderr
        # The progress bar, with its outcome counts, as the local pool shows it.
        assert "3/3" in on_ray.stderr and "collision=" in on_ray.stderr, on_ray.stderr

        expected = pd.read_parquet(folder / "local" / "results.parquet").set_index("trial_id")
        got = pd.read_parquet(folder / "ray" / "results.parquet").set_index("trial_id")
        assert len(got) == 3
        # The records keep the files' names as the campaign gave them, not the worker's copies.
        columns = ["outcome", "mission", "profile", "planner"]
        assert got.sort_index()[columns].equals(expected.sort_index()[columns])

        [seen] = [json.loads(path.read_text()) for path in probe_out.iterdir()]
        assert not seen["module"].startswith(driver_path)  # the planner module was shipped
        assert not seen["hil"].startswith(str(ROOT))  # and so was the package
        assert driver_path not in seen["pythonpath"].split(os.pathsep)

        # Resume: only the trial whose record is gone runs again.
        gone = got.index[0]
        shutil.rmtree(folder / "ray" / "trials" / gone)
        again = hil(folder, driver_env, "--out", "ray", "--executor", "ray", "--address", f"127.0.0.1:{port}",
                    "--no-progress")
        assert again.returncode == 0, again.stderr
        assert "1 trials run" in again.stdout and "2 already finished" in again.stdout, again.stdout
        assert pd.read_parquet(folder / "ray" / "results.parquet").set_index("trial_id").loc[gone, "outcome"] == \
            got.loc[gone, "outcome"]
    finally:
        stop_head(head)
        shutil.rmtree(temp_dir, ignore_errors=True)
