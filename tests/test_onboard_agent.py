"""The onboard agent (`hil agent`): a campaign whose planner runs in another process, standing in for the
companion computer, with that process's clock offset by a known amount; and the agent's answers to
strangers and broken jobs. Everything runs over real TCP and real MAVLink on loopback."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import yaml

from onboard.agent.clock import ClockAlignment, estimate_offset
from px4.process import free_udp_port
from records.record import read_events, read_table
from targets.builtin import SimProcessOptions, builtin_vehicle

from .agent_process import ROOT, TOKEN, agent_env, exchange, hello, running_agent

OFFSET_MS = 1234.567  # the stand-in board's clock, ahead of the harness's


def test_offset_and_drift_are_recovered_from_exchanges_with_uneven_delays():
    rng = np.random.default_rng(4)
    offset, drift = 5e9, 40e-6  # 5 s ahead, gaining 40 us per second

    def burst(at_ns: float) -> list[tuple[int, int, int]]:
        out = []
        for _ in range(16):
            up, down = rng.uniform(50e3, 2e6, 2)  # 50 us - 2 ms each way, not symmetric
            t1 = at_ns + rng.uniform(0, 1e6)
            t2 = t1 + up + offset + drift * (t1 + up)
            out.append((int(t1), int(t2), int(t1 + up + down)))
        return out

    alignment = ClockAlignment(estimate_offset(burst(0.0)), estimate_offset(burst(600e9)))
    assert abs(alignment.before.offset_ns - offset) <= alignment.before.uncertainty_ns
    assert abs(alignment.drift_ppm - drift * 1e6) <= alignment.drift_uncertainty_ppm
    harness = np.array([1e9, 300e9, 590e9])
    board = harness + offset + drift * harness
    error = alignment.to_harness(board) - harness
    assert np.all(np.abs(error) < 2e6), error  # within the exchanges' uncertainty (ms)
    with pytest.raises(ValueError, match="no clock exchange"):
        estimate_offset([])


def campaign(path, port: int, **fields) -> str:
    data = {"name": "board", "seed": 5, "repeats": 2, "missions": [{"scene": "narrow-gap", "configs": [0, 1, 2]}],
            "targets": ["sim"], "planners": ["straight"], "onboards": [f"127.0.0.1:{port}"], "speed": 4.0, **fields}
    path.write_text(yaml.safe_dump(data))
    return str(path)


def hil(*args: str, timeout: float = 600.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hil", *args], cwd=ROOT, env=agent_env(), capture_output=True,
                          text=True, timeout=timeout)


def test_a_campaign_runs_its_planner_on_the_agent_on_one_timeline(tmp_path):
    # Two trials on two workers: the agent runs one at a time, so the second is queued behind the first and then
    # flown; more trials would only repeat that, one after another on the board.
    out = tmp_path / "run"
    with running_agent(offset_ms=OFFSET_MS) as (agent, port):
        path = campaign(tmp_path / "c.yaml", port, repeats=1, missions=[{"scene": "narrow-gap", "configs": [0, 1]}])
        done = hil("run", path, "--out", str(out), "--workers", "2", "--no-progress")
    assert done.returncode in (0, 1), done.stderr
    results = pd.read_parquet(out / "results.parquet")
    assert len(results) == 2 and set(results["onboard"]) == {f"127.0.0.1:{port}"}
    assert not set(results["outcome"]) & {"error", "onboard_lost"}, results[["outcome", "reason"]]
    for trial_id in results["trial_id"]:
        check_board_record(out / "trials" / trial_id, OFFSET_MS)


async def test_on_hardware_the_board_flies_over_its_own_link_to_the_flight_controller(tmp_path):
    # A built-in vehicle process the test started stands in for a real aircraft (none on this machine): the
    # harness reaches it by its connection string, as hardware, and the board over a second link the vehicle
    # has, as a companion computer's serial port would be.
    board_port = free_udp_port()
    async with builtin_vehicle(SimProcessOptions(speed=4.0, extra_links=[f"udpout://127.0.0.1:{board_port}"])) as sim:
        with running_agent(offset_ms=-OFFSET_MS) as (_, port):
            entry = f"127.0.0.1:{port} via udpin://127.0.0.1:{board_port}"
            path = campaign(tmp_path / "c.yaml", port, repeats=1, targets=[sim.url], onboards=[entry],
                            missions=[{"scene": "narrow-gap", "configs": [0]}])
            refused = await asyncio.to_thread(hil, "run", path, "--out", str(tmp_path / "no"), "--no-progress")
            assert refused.returncode == 2 and "without --arm" in refused.stdout + refused.stderr
            done = await asyncio.to_thread(hil, "run", path, "--out", str(tmp_path / "run"), "--arm", "--no-progress")
        assert done.returncode in (0, 1), done.stdout + done.stderr + (sim.failure() or "")
    [result] = pd.read_parquet(tmp_path / "run" / "results.parquet").to_dict("records")
    assert result["onboard"] == entry and result["outcome"] == "collision", result["reason"]  # straight into the gap's wall
    check_board_record(tmp_path / "run" / "trials" / result["trial_id"], -OFFSET_MS)


def check_board_record(record, offset_ms: float) -> None:
    """A trial flown with its planner on an agent whose clock is `offset_ms` ahead: the offset recovered within
    a millisecond, the board's stages inside the navigation phase, a per-cycle timeline, a landing."""
    events = {e["kind"]: e for e in read_events(record)}
    clock = events["onboard_clock"]
    assert abs(clock["offset_ms"] - offset_ms) < 1.0 and abs(clock["offset_after_ms"] - offset_ms) < 1.0, clock
    # The board's stages, put on the harness's clock, fall inside the navigation phase the harness saw.
    timing = read_table(record, "timing")
    assert {"sense", "plan"} <= set(timing["stage"])
    assert (timing["t_ns_board"] - timing["t_ns"]).between((offset_ms - 1) * 1e6, (offset_ms + 1) * 1e6).all()
    go, verdict = events["onboard_go"]["t_ns"], events["verdict"]["t_ns"]
    assert go <= events["onboard_started"]["t_ns"] <= timing["t_ns"].min()
    assert timing[timing["stage"] != "link"]["t_ns"].max() <= verdict
    # Per cycle: sensing, then the plan, then (for position commands) the setpoint sent and echoed.
    timeline = read_table(record, "timeline")
    assert len(timeline) == events["onboard_finished"]["cycles"] > 0
    assert (timeline["sense_ns"] <= timeline["plan_start_ns"]).all()
    assert (timeline["plan_start_ns"] <= timeline["plan_end_ns"]).all()
    echoed = timeline.dropna(subset=["sent_ns"])
    assert len(echoed) and (echoed["plan_end_ns"] <= echoed["sent_ns"]).all()
    assert (echoed["sent_ns"] < echoed["echoed_ns"]).all()
    assert events["landed"]["t_ns"] > verdict


def test_strangers_and_broken_jobs_are_refused_and_the_agent_keeps_serving(tmp_path):
    with running_agent() as (agent, port):
        [refused] = exchange(port, hello("wrong"), b'{"op": "ping", "t1": 1}\n')
        assert refused["op"] == "error" and "token" in refused["error"]  # and nothing else: closed
        [answer] = exchange(port, b"\xff\xfe not json\n")
        assert answer["op"] == "error" and "JSON" in answer["error"]
        [_, answer] = exchange(port, hello(), b'{"op": "ping", "t1": NaN}\n', b'{"op": "ping", "t1": 1}\n')
        assert answer["op"] == "error" and "NaN is not JSON" in answer["error"]  # after hello's answer: closed
        job = {"trial_id": "x", "planner": "straight", "sensor": "yes", "rate_hz": -5, "scene": "forest",
               "config": 0, "vehicle_url": "udpin://127.0.0.1:1", "speed": 1, "connect_timeout_s": 5,
               "task": {"name": "t", "start": [0, 0, "down"]}}
        replies = exchange(port, hello(), json.dumps({"op": "trial", "job": job}).encode() + b"\n",
                           b'{"op": "trial", "job": [1, 2]}\n', b'{"op": "fly"}\n', b'{"op": "ping", "t1": 7}\n')
        assert [r["op"] for r in replies] == ["hello", "error", "error", "error", "pong"]
        refusal = replies[1]["error"]
        for expected in ("trial job: job.planner: expected a planner class as module:Class, got 'straight'",
                         "trial job: job.sensor: expected true or false", "job.rate_hz: expected a number > 0",
                         "job.task.start: expected three finite numbers", "job.task.goal: missing required field"):
            assert expected in refusal, refusal
        assert "job: expected a mapping" in replies[2]["error"] and "unknown op 'fly'" in replies[3]["error"]
        assert replies[4]["t1"] == 7 and isinstance(replies[4]["t2"], int)  # the session went on
        assert agent.poll() is None


def test_the_agent_needs_a_token_and_an_address_it_can_take():
    env = {k: v for k, v in agent_env().items() if k != "HIL_ONBOARD_TOKEN"}
    no_token = subprocess.run([sys.executable, "-m", "hil", "agent", "--listen", "127.0.0.1:0"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=60)
    assert no_token.returncode == 2 and "HIL_ONBOARD_TOKEN" in no_token.stderr
    bad = hil("agent", "--listen", "127.0.0.1:99999", timeout=60)
    assert bad.returncode == 2 and "HOST:PORT" in bad.stderr and "Traceback" not in bad.stderr


def test_a_campaign_names_its_boards_or_says_what_is_wrong(monkeypatch):
    from config.errors import ConfigError
    from hil.campaign import parse_campaign

    base = {"name": "b", "missions": [{"scene": "forest", "configs": [0]}], "targets": ["sim"]}
    monkeypatch.setenv("HIL_ONBOARD_TOKEN", TOKEN)
    boards = parse_campaign({**base, "onboards": ["local", "127.0.0.1:7780"]}).trials()
    assert [t.onboard for t in boards] == ["local", "127.0.0.1:7780"]
    # A planner in the harness keeps the trial id it always had (resuming an older campaign repeats nothing).
    assert boards[0].trial_id == parse_campaign(base).trials()[0].trial_id != boards[1].trial_id
    with pytest.raises(ConfigError) as info:
        parse_campaign({**base, "targets": ["lockstep"], "onboards": ["board", "127.0.0.1:99999", "127.0.0.1:7780"]},
                       "c.yaml")
    text = str(info.value)
    assert "c.yaml: onboards[0]: expected local, an onboard agent's HOST:PORT, or HOST:PORT via URL" in text
    assert "c.yaml: onboards[1]: expected local, an onboard agent's HOST:PORT, or HOST:PORT via URL" in text
    assert "c.yaml: onboards[2]: expected sim or px4-sitl targets for HOST:PORT" in text
    # On hardware the board names its own link to the flight controller, and only there.
    radio, serial = "udpin://127.0.0.1:14550", "127.0.0.1:7780 via serial:///dev/ttyTHS1:921600"
    [trial] = parse_campaign({**base, "targets": [radio], "onboards": [serial]}).trials()
    assert trial.onboard == serial and "on-127.0.0.1-7780-via-serial-dev-ttyTHS1-921600" in trial.trial_id
    with pytest.raises(ConfigError) as info:
        parse_campaign({**base, "onboards": [serial, "127.0.0.1:7780 via ttyTHS1"]}, "c.yaml")
    text = str(info.value)
    assert "c.yaml: onboards[0]: expected hardware targets for HOST:PORT via URL" in text
    assert "onboards[1]: expected local, an onboard agent's HOST:PORT, or HOST:PORT via URL: after 'via'" in text
    monkeypatch.delenv("HIL_ONBOARD_TOKEN")
    with pytest.raises(ConfigError, match=r"onboards\[0\]: expected HIL_ONBOARD_TOKEN set"):
        parse_campaign({**base, "onboards": ["127.0.0.1:7780"]}, "c.yaml")


PLUGIN_TEST = """
async def test_on_the_board(hil_navigation, hil_recorder):
    flight = await hil_navigation("narrow-gap:0", planner="straight")
    assert flight.verdict.outcome == "collision"  # its straight line meets the scene's first obstacle
    assert flight.runtime is not None and flight.runtime.cycles > 10
"""


def test_the_pytest_plugin_runs_hil_navigation_on_the_agent(pytester, monkeypatch):
    monkeypatch.setenv("HIL_ONBOARD_TOKEN", TOKEN)
    pytester.makepyfile(test_board=PLUGIN_TEST)
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    records = pytester.path / "records"
    refused = pytester.runpytest_subprocess("--hil-target", "lockstep", "--hil-onboard", "127.0.0.1:7780")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert "--hil-onboard: expected sim or px4-sitl targets" in refused.stderr.str()
    refused = pytester.runpytest_subprocess("--hil-target", "sim", "--hil-onboard", "127.0.0.1:7780 via udpin://:14541")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert "--hil-onboard: expected hardware targets for HOST:PORT via URL" in refused.stderr.str()
    with running_agent(offset_ms=OFFSET_MS) as (_, port):
        result = pytester.runpytest_subprocess("--hil-target", "sim", "--hil-speed", "4", "--hil-onboard",
                                               f"127.0.0.1:{port}", "--hil-record-dir", str(records))
    result.assert_outcomes(passed=1)
    [record] = records.iterdir()
    clock = next(e for e in read_events(record) if e["kind"] == "onboard_clock")
    assert abs(clock["offset_ms"] - OFFSET_MS) < 1.0
    assert {"sense", "plan"} <= set(read_table(record, "timing")["stage"])
