"""The onboard agent (`hil agent`) against a lab network's strangers and a token holder's jobs: real `hil
agent` processes on loopback, real TCP clients. A stranger gets a few KiB, a few seconds and one of a
capped number of places; a harness that goes quiet, or never says go, gives its place and the trial slot
back; a job names only planners and compute profiles the agent was started to serve, and a refusal tells
nothing of what lies outside them. Each test sets short limits through the agent's own options."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest

from benchmarks.agent_flood import RSS_GOAL_MB, SERVED_GOAL_S, measure
from config.fields import shown
from px4.process import free_udp_port
from targets.builtin import SimProcessOptions, builtin_vehicle

from .agent_process import TOKEN, agent_env, exchange, hello, running_agent
from .test_onboard_agent import hil

STRANGERS = 16  # twice the agent's default cap
FLOOD_S = 4.0


def job(**fields) -> dict:
    """A job that validates, to an address no flight controller answers on (connecting fails in 0.5 s)."""
    task = {"name": "t", "start": [0, 0, -1.5], "goal": [10, 0, -1.5], "bounds_min": [-5, -5, -3],
            "bounds_max": [15, 5, 0], "home_in_scene": [0, 0, 0], "speed_cap": 3, "goal_radius": 1, "time_budget": 60}
    return {"trial_id": "t", "planner": "onboard.planners.straight:StraightLine", "sensor": False, "rate_hz": 10,
            "compute": None, "scene": "narrow-gap", "config": 0, "vehicle_url": f"udpin://127.0.0.1:{free_udp_port()}",
            "speed": 1, "connect_timeout_s": 0.5, "task": task, **fields}


def trial(**fields) -> bytes:
    return json.dumps({"op": "trial", "job": job(**fields)}).encode() + b"\n"


async def test_a_flood_of_strangers_costs_the_agent_little_and_a_harness_is_still_served():
    # Each stranger, on a machine of its own, sends a line without a newline, connecting again when cut off;
    # the old agent read 64 MiB of each line before looking at it (here: 190 -> 818 MB).
    with running_agent() as (agent, port):
        flood = await measure(agent.pid, port, TOKEN, STRANGERS, FLOOD_S)
        assert agent.poll() is None
    assert flood.peak_mb - flood.idle_mb < RSS_GOAL_MB, flood
    assert flood.served_s < SERVED_GOAL_S and flood.served_during_flood, flood


def test_connections_beyond_the_cap_or_half_of_it_from_one_address_are_answered_busy_at_once():
    with running_agent(options=("--max-connections", "4", "--auth-timeout", "5")) as (_, port):
        silent = []
        try:
            for source in ("127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.4"):  # four machines' strangers
                silent.append(socket.create_connection(("127.0.0.1", port), source_address=(source, 0)))
                time.sleep(0.1)  # taken by the agent
                if len(silent) == 2:  # half the places from one address: a third is turned away
                    assert exchange(port, source="127.0.0.2")[0]["op"] == "busy"
            started = time.monotonic()
            # (Sending nothing: the agent closes without reading, and unread input would reset the connection.)
            [busy] = exchange(port)
            assert busy == {"op": "busy", "error": "busy: this agent serves 4 connections at once; try again"}
            assert time.monotonic() - started < 1.0
            silent.pop().close()  # a place is free again
            time.sleep(0.1)
            assert [r["op"] for r in exchange(port, hello(), b'{"op": "ping", "t1": 3}\n')] == ["hello", "pong"]
        finally:
            for connection in silent:
                connection.close()


def test_a_stranger_that_trickles_its_hello_is_dropped_after_the_auth_timeout():
    with running_agent(options=("--auth-timeout", "1")) as (_, port):
        with socket.create_connection(("127.0.0.1", port), timeout=0.1) as connection:
            started = time.monotonic()
            for byte in b'{"op": "hello", "token": "' * 10:  # a byte every 0.1 s, never a whole line
                connection.sendall(bytes([byte]))
                try:
                    answer = connection.recv(65536)
                    break
                except TimeoutError:
                    pass
            dropped = time.monotonic() - started
            connection.settimeout(5)
            assert connection.recv(65536) == b""  # and closed
    assert json.loads(answer) == {"op": "error", "error": "closed: no hello within 1 s (hil agent --auth-timeout)"}
    assert 0.9 < dropped < 2.0, dropped  # the old agent gave a stranger 10 s


def test_an_idle_harness_is_dropped_and_a_talking_one_is_not():
    with running_agent(options=("--idle-timeout", "1")) as (_, port):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
            connection.sendall(hello())
            for t1 in range(4):  # two seconds of pings, half a second apart: never idle for 1 s
                connection.sendall(json.dumps({"op": "ping", "t1": t1}).encode() + b"\n")
                time.sleep(0.5)
            started = time.monotonic()
            data = b""
            while chunk := connection.recv(65536):
                data += chunk
            dropped = time.monotonic() - started
    replies = [json.loads(line) for line in data.splitlines()]
    assert [r["op"] for r in replies] == ["hello", "pong", "pong", "pong", "pong", "error"]
    assert replies[-1]["error"] == "closed: no message within 1 s (hil agent --idle-timeout)"
    assert 0.3 < dropped < 3.0, dropped


async def test_a_job_that_never_says_go_gives_the_trial_slot_back():
    board = free_udp_port()
    async with builtin_vehicle(SimProcessOptions(speed=4.0, extra_links=[f"udpout://127.0.0.1:{board}"])) as sim:
        with running_agent(options=("--go-timeout", "1")) as (_, port):
            first, second = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]

            async def ask(connection, vehicle_url: str) -> None:
                connection[1].write(hello() + trial(vehicle_url=vehicle_url, connect_timeout_s=20))
                assert [await answer(connection) for _ in range(2)] == ["hello", "queued"]

            async def answer(connection, timeout: float = 30.0) -> str:
                message = json.loads(await asyncio.wait_for(connection[0].readline(), timeout))
                return message["op"] if message["op"] != "error" else message["error"]

            vehicle_url = f"udpin://127.0.0.1:{board}"
            await ask(first, vehicle_url)
            assert await answer(first) == "ready", sim.failure()
            ready = time.monotonic()
            await ask(second, vehicle_url)  # waits for the trial slot
            assert await answer(first) == "closed: no go after ready within 1 s (hil agent --go-timeout)"
            assert 0.9 < time.monotonic() - ready < 3.0
            assert await answer(second) == "ready"  # the old agent held the slot for 600 s
            for _, writer in (first, second):
                writer.close()


def test_a_compute_profile_outside_the_served_set_is_refused_without_a_word_of_it(tmp_path):
    boards = tmp_path / "boards"
    boards.mkdir()
    profile = "name: {}\ndescription: a lab board\nfactors: {{map: 2, plan: 2, control: 2}}\n"
    (boards / "lab.yaml").write_text(profile.format("lab_board"))
    (tmp_path / "outside.yaml").write_text(profile.format("outside"))
    secret = tmp_path / "secret.yaml"
    secret.write_text("token: hunter2\n")
    outside = ["/etc/passwd", "/etc/no-such-file", "../../../../etc/passwd", str(secret), str(tmp_path / "none.yaml"),
               str(tmp_path / "outside.yaml"), "outside", f"{boards}/lab.yaml", "lab", "lab_board.yaml"]
    with running_agent(options=("--compute-dir", str(boards))) as (_, port):
        replies = exchange(port, hello(), *(trial(compute=name) for name in outside),
                           trial(compute="lab_board"), trial(compute="jetson_orin_nx"))
    refusals = [r["error"] for r in replies[1:len(outside) + 1]]
    for name, refusal in zip(outside, refusals):
        assert "root:" not in refusal and "hunter2" not in refusal and "factors" not in refusal, refusal
    # One answer for every name outside the set, whether a file of that name exists or not: only the
    # client's own words (quoted, cut at 40 characters) differ.
    assert len({refusal.replace(shown(name), "NAME") for name, refusal in zip(outside, refusals)}) == 1, refusals
    assert refusals[0] == ("job refused: trial job: job.compute: expected a compute profile this agent serves "
                           "(desktop, jetson_orin_nx, lab_board; hil agent --compute-dir adds more) or null, "
                           "got '/etc/passwd'")
    # Served: the lab's profile by its name, and a packaged one with no option at all (no vehicle answers).
    accepted = [r["op"] if r["op"] != "error" else r["error"][:20] for r in replies[len(outside) + 1:]]
    assert accepted == ["queued", "no flight controller", "queued", "no flight controller"]


HOSTILE = '''
from pathlib import Path
Path({marker!r}).write_text("imported")  # import-time code: what a job must never get to run


class Planner:
    def reset(self, task):
        pass

    def step(self, observation):
        raise RuntimeError("never flown")
'''


def test_a_planner_outside_the_allow_list_is_refused_before_its_module_is_imported(tmp_path):
    marker = tmp_path / "imported.txt"
    (tmp_path / "hostile_planner.py").write_text(HOSTILE.format(marker=str(marker)))
    env = {**agent_env(), "PYTHONPATH": str(tmp_path)}
    names = ["hostile_planner:Planner", "no_such_planner:Planner", "os:system", "onboard.planner:planner_class",
             "onboard.plannersx.avoid:OccupancyPlanner"]
    with running_agent(env=env) as (_, port):
        replies = exchange(port, hello(), *(trial(planner=name) for name in names), trial())
    assert not marker.exists(), "the agent imported a module no option allowed"
    refusals = [r["error"] for r in replies[1:len(names) + 1]]
    assert len({refusal.replace(shown(name), "NAME") for name, refusal in zip(names, refusals)}) == 1, refusals
    assert "expected a planner this agent serves (a class in onboard.planners; hil agent --planner-package and " \
           "--planner add more)" in refusals[0]
    assert [r["op"] for r in replies[len(names) + 1:]] == ["queued", "error"]  # a packaged planner: no option needed
    # The same module, allowed at start: imported when a job names it (what the marker would have shown).
    with running_agent(options=("--planner", "hostile_planner:Planner"), env=env) as (_, port):
        assert [r["op"] for r in exchange(port, hello(), trial(planner="hostile_planner:Planner"))] == \
               ["hello", "queued", "error"]
    assert marker.read_text() == "imported"


def test_a_job_is_queued_before_its_planner_loads_and_a_planner_that_fails_to_load_is_refused_after(tmp_path):
    # Loading a planner and its scene takes seconds of CPU on a busy board, longer than the harness waits for
    # "queued" (REPLY_TIMEOUT_S; at load 14 the agent answered too late): it is done after that answer, in turn.
    (tmp_path / "lab_planner.py").write_text(
        "class Planner:\n"
        "    def __init__(self):\n"
        "        raise ValueError(\"the lab's map file is missing\")\n"
        "\n"
        "    def reset(self, task):\n"
        "        pass\n"
        "\n"
        "    def step(self, observation):\n"
        "        pass\n")
    env = {**agent_env(), "PYTHONPATH": str(tmp_path)}
    with running_agent(options=("--planner", "lab_planner:Planner"), env=env) as (_, port):
        replies = exchange(port, hello(), trial(planner="lab_planner:Planner"), trial())
    assert [r["op"] for r in replies] == ["hello", "queued", "error", "queued", "error"], replies
    assert replies[2]["error"] == "job refused: the lab's map file is missing"
    assert replies[4]["error"].startswith("no flight controller")  # the session went on to the next job


@pytest.mark.parametrize("options, expected", [
    (("--planner-package", "no_such_lab.planners"), "no_such_lab.planners: no such module on this board's Python path"),
    (("--planner-package", "../lab"), "--planner-package: expected a Python package name"),
    (("--planner", "onboard.planners.avoid"), "--planner: expected a planner class as module:Class"),
    (("--compute-dir", "/no/such/dir"), "--compute-dir /no/such/dir: expected a folder of compute profiles"),
    (("--max-connections", "0"), "--max-connections: expected a whole number 1-1024, got '0'"),
    (("--go-timeout", "nan"), "--go-timeout: expected seconds, a number > 0"),
])
def test_a_bad_agent_option_is_a_usage_error(options, expected):
    done = hil("agent", "--listen", "127.0.0.1:0", *options, timeout=60)
    assert done.returncode == 2 and expected in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_compute_dir_with_a_bad_profile_is_refused_at_start(tmp_path):
    (tmp_path / "broken.yaml").write_text("name: broken\nfactors: {map: -1}\n")
    done = hil("agent", "--listen", "127.0.0.1:0", "--compute-dir", str(tmp_path), timeout=60)
    assert done.returncode == 2 and "broken.yaml: factors.map: expected a number > 0" in done.stderr, done.stderr
