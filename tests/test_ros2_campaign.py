"""ROS 2 planners in campaigns: an external node (tests/ros2_node.py, a real process with its own DDS participant)
flies a campaign's trials through `hil run` on the built-in vehicle over MAVLink, judged by the harness; bad
ros2 planner entries are refused before anything starts. Real DDS, on loopback only."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

# Keep DDS discovery on loopback and off the real network (docs/design.md: traffic stays on loopback); the
# harness's and the node's processes inherit it.
os.environ.setdefault("CYCLONEDDS_URI", "<CycloneDDS><Domain><General><Interfaces><NetworkInterface address="
                      "\"127.0.0.1\"/></Interfaces><AllowMulticast>false</AllowMulticast></General><Discovery>"
                      "<Peers><Peer address=\"127.0.0.1\"/></Peers><ParticipantIndex>auto</ParticipantIndex>"
                      "</Discovery></Domain></CycloneDDS>")
cyclonedds = pytest.importorskip("cyclonedds")

from missions.scenes import scene_for  # noqa: E402
from records.record import read_events, read_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = [0, 1, 2]


def campaign(path: Path, planner, **fields) -> str:
    data = {"name": "ros2", "seed": 3, "missions": [{"scene": "forest", "configs": CONFIGS}], "targets": ["sim"],
            "planners": [planner], "speed": 4.0, **fields}
    path.write_text(yaml.safe_dump(data))
    return str(path)


def hil(*args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hil", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_a_ros2_node_flies_campaign_trials_and_its_latency_is_recorded(tmp_path):
    domain = random.randint(1, 200)  # away from ROS_DOMAIN_ID 0 and from concurrent test runs
    namespace = f"/uav{random.randint(0, 9999)}"
    node = subprocess.Popen([sys.executable, "-m", "tests.ros2_node", str(domain), namespace], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = tmp_path / "run"
    try:
        assert node.stdout.readline().strip() == "ready", node.stderr.read()
        planner = {"ros2": {"topics": "mavros", "namespace": namespace, "domain_id": domain}}
        # Two workers: trials on one endpoint take turns (a node serves whatever odometry it hears).
        done = hil("run", campaign(tmp_path / "c.yaml", planner), "--out", str(out), "--workers", "2",
                   "--no-progress", timeout=120)
    finally:
        node.terminate()
        node.wait(10)
    assert done.returncode == 0, done.stderr
    results = pd.read_parquet(out / "results.parquet")
    assert len(results) == 3, results
    assert set(results["planner"]) == {f"ros2(topics=mavros,namespace={namespace},domain_id={domain})"}
    assert "error" not in set(results["outcome"]), results[["outcome", "reason"]]
    for column in ("ros2_latency_mean_ms", "ros2_latency_p50_ms", "ros2_latency_p99_ms"):
        assert results[column].between(0, 1000).all() and (results[column] > 0).all(), results[column]
    assert (results["ros2_setpoints"] > 0).all()
    navigation = []
    for _, trial in results.iterrows():
        record = out / "trials" / trial["trial_id"]
        ros2 = read_table(record, "ros2")
        assert len(ros2) == trial["ros2_setpoints"]
        assert set(ros2["topic"]) == {f"{namespace}/mavros/setpoint_position/local"}
        assert (ros2["latency_s"] > 0).all() and (ros2["latency_s"] < 1.0).all(), ros2["latency_s"].describe()
        events = {e["kind"]: e for e in read_events(record)}
        assert events["onboard_finished"]["cycles"] == len(ros2) and events["onboard_finished"]["reason"] == "stopped"
        # The node's setpoints flew the vehicle towards the goal (a straight line in a forest may meet a tree).
        scene = scene_for("forest", int(trial["config"]))
        start_distance = float(np.linalg.norm(scene.goal - scene.start))
        assert trial["final_distance_m"] < start_distance - 5.0, (trial["final_distance_m"], start_distance)
        navigation.append((events["navigation_started"]["t_ns"], events["verdict"]["t_ns"]))
    # One trial at a time on the endpoint, even with two workers.
    navigation.sort()
    assert all(end <= next_start for (_, end), (next_start, _) in zip(navigation, navigation[1:])), navigation


def test_a_trial_whose_node_never_answers_ends_as_the_judge_decides(tmp_path):
    # No node on this domain: the vehicle hovers at the start until the rule's time budget is spent.
    planner = {"ros2": {"domain_id": random.randint(1, 200), "namespace": "/nobody"}}
    path = campaign(tmp_path / "c.yaml", planner, speed=10.0, missions=[{"scene": "forest", "configs": [0]}])
    done = hil("run", path, "--out", str(tmp_path / "run"), "--no-progress", timeout=90)
    assert done.returncode == 0, done.stderr  # the flight failed, the campaign did not
    [trial] = pd.read_parquet(tmp_path / "run" / "results.parquet").to_dict("records")
    assert trial["outcome"] == "timeout" and trial["ros2_setpoints"] == 0, trial
    assert np.isnan(trial["ros2_latency_mean_ms"])
    events = {e["kind"]: e for e in read_events(tmp_path / "run" / "trials" / trial["trial_id"])}
    assert events["onboard_finished"]["cycles"] == 0 and "landed" in events


@pytest.mark.parametrize("options, field, expected", [
    ({"topics": "px4_msgs"}, "planners[0].ros2.topics", "expected one of bridge, mavros"),
    ({"domain_id": 233}, "planners[0].ros2.domain_id", "expected an integer >= 0 and <= 232"),
    ({"namespace": "uav 1"}, "planners[0].ros2.namespace", "expected a ROS 2 namespace"),
])
def test_a_bad_ros2_planner_entry_is_refused_naming_its_field(tmp_path, options, field, expected):
    path = campaign(tmp_path / "c.yaml", {"ros2": options})
    done = hil("run", path, "--out", str(tmp_path / "run"), "--no-progress", timeout=60)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert f"{path}: {field}: {expected}" in line and "Traceback" not in line, done.stderr
    assert not (tmp_path / "run").exists()
