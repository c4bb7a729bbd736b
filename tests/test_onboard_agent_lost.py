"""The companion computer dies mid-campaign: the trial it was flying ends as onboard_lost with the vehicle
held and landed, the campaign waits for the board to come back and flies the rest, and nothing finished
is lost. The board is an `hil agent` process killed with SIGKILL (a reboot or a pulled cable looks the
same to the harness: the connection ends), then started again on the same port."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pandas as pd
import yaml

from records.record import read_events, read_manifest

from .agent_process import ROOT, agent_env, start_agent, stop, wait_for


def _events(record) -> list[dict]:
    path = record / "events.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def test_a_board_killed_mid_trial_is_onboard_lost_and_the_campaign_carries_on(tmp_path):
    first, port = start_agent()
    second = None
    # At 4x the straight line to the first obstacle of narrow-gap:0 takes 2 s, time to kill the board in it. Two
    # trials on one worker: the first is the one the board dies in, the second flies once it is back.
    data = {"name": "lost", "seed": 2, "repeats": 2, "missions": [{"scene": "narrow-gap", "configs": [0]}],
            "targets": ["sim"], "planners": ["straight"], "onboards": [f"127.0.0.1:{port}"], "speed": 4.0}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(data))
    out = tmp_path / "run"
    run = subprocess.Popen([sys.executable, "-m", "hil", "run", str(tmp_path / "c.yaml"), "--out", str(out),
                            "--workers", "1", "--no-progress"], cwd=ROOT, env=agent_env(), text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        flying = []

        def navigating() -> bool:  # a record in flight is in .partial/, named TRIAL_ID.PID
            kinds = {d: {e["kind"] for e in _events(d)} for d in (out / ".partial").glob("*")}
            flying[:] = [d for d, seen in kinds.items() if "onboard_go" in seen and "verdict" not in seen]
            return bool(flying)

        wait_for(navigating, 120, "the first trial's navigation phase on the board")
        first.send_signal(signal.SIGKILL)
        first.wait()
        second, _ = start_agent(port)  # the board is back, on the same address
        _, stderr = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
        stop(first)
        if second is not None:
            stop(second)
    assert run.returncode in (0, 1), stderr
    results = pd.read_parquet(out / "results.parquet").set_index("trial_id")
    assert len(results) == 2, results  # every trial ran, once, and none was lost from the table
    lost = flying[0].name.rsplit(".", 1)[0]
    assert results.loc[lost, "outcome"] == "onboard_lost", results.loc[lost, "reason"]
    assert set(results.drop(lost)["outcome"]) <= {"success", "collision", "timeout"}, results[["outcome", "reason"]]
    assert results.index.max() != lost, "no trial flew after the board came back"  # ids end r0, r1
    events = read_events(out / "trials" / lost)
    kinds = [e["kind"] for e in events]
    # Held at once, judged onboard_lost, then brought down; the record is whole.
    assert kinds.index("onboard_lost") < kinds.index("verdict") < kinds.index("landed")
    assert read_manifest(out / "trials" / lost)["status"] == "finished"
    assert "onboard_finished" not in kinds  # nothing the dead board never sent is made up
