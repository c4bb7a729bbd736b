"""What running the planner on an onboard agent costs per cycle, against running it in the harness.

Starts `hil agent` on loopback (a second process standing in for the board, on the same machine, so
the figures are the agent's own overhead, not a slower board's), and runs one campaign whose trials
alternate between the planner in the harness and on the agent (`onboards: [local, agent]`), one worker,
on the built-in vehicle at a speed factor. Per cycle, from the trial records:

* T_tot: the planner's own compute (map + plan + control), as timed where it ran;
* latency: vehicle time from sensing to the command taking effect (the runtime's `latency_s`);
* the cycles that could not start on time (overruns);

and, per trial, the wall time from start to finished record: the agent's trial throughput.

    python benchmarks/onboard_agent.py [--configs 4] [--planner avoid] [--speed 4]
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.quick import parse_args  # noqa: E402
from hil.campaign import parse_campaign  # noqa: E402
from hil.executors import LocalPool  # noqa: E402
from hil.runner import run_campaign  # noqa: E402
from onboard.agent.protocol import TOKEN_ENV  # noqa: E402
from onboard.timing import per_cycle  # noqa: E402
from records.record import read_events, read_table  # noqa: E402
from reports.results import CampaignResults  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def start_agent(token: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, "-m", "hil", "agent", "--listen", "127.0.0.1:0"], cwd=ROOT,
                            env={**os.environ, TOKEN_ENV: token}, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    line = proc.stdout.readline()
    if not line.startswith("agent listening on"):
        proc.kill()
        raise SystemExit(f"hil agent did not start: {line!r}")
    return proc, int(line.rsplit(":", 1)[1])


def trial_figures(record: Path) -> dict[str, np.ndarray | float]:
    """Per-cycle T_tot (ms) and latency (ms), overruns and the trial's wall seconds, from one record."""
    timing = read_table(record, "timing")
    onboard = read_table(record, "onboard")
    events = read_events(record)
    wall = (events[-1]["t_ns"] - events[0]["t_ns"]) / 1e9
    finished = next((e for e in events if e["kind"] == "onboard_finished"), {})
    return {"t_tot_ms": per_cycle(timing)["total"].dropna().to_numpy() / 1e6,
            "latency_ms": onboard["latency_s"].to_numpy() * 1e3, "overruns": finished.get("overruns", 0),
            "cycles": finished.get("cycles", 0), "wall_s": wall}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", type=int, default=4, help="forest configurations (each flown both ways)")
    parser.add_argument("--planner", default="avoid", help="avoid (depth camera, occupancy planning) or straight")
    parser.add_argument("--speed", type=float, default=4.0, help="the built-in vehicle's speed factor")
    args = parse_args(parser, {"configs": 2}, argv)
    token = secrets.token_hex(16)
    os.environ[TOKEN_ENV] = token  # the campaign's trials present it
    agent, port = start_agent(token)
    address = f"127.0.0.1:{port}"
    try:
        campaign = parse_campaign({"name": "onboard-agent", "seed": 1, "targets": ["sim"], "speed": args.speed,
                                   "missions": [{"scene": "forest", "configs": list(range(args.configs))}],
                                   "planners": [args.planner], "onboards": ["local", address]})
        print(f"{len(campaign.trials())} trials ({args.planner}, forest 0-{args.configs - 1}, sim at {args.speed:g}x), "
              f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start")
        with tempfile.TemporaryDirectory(prefix="onboard-agent-") as out:
            started = time.perf_counter()
            summary = run_campaign(campaign, Path(out), LocalPool(1), results=CampaignResults(Path(out)),
                                   progress=False)
            wall = time.perf_counter() - started
            rows = {"local": [], "agent": []}
            for spec in campaign.trials():
                rows["local" if spec.onboard == "local" else "agent"].append(
                    trial_figures(Path(out) / "trials" / spec.trial_id))
    finally:
        agent.terminate()
        agent.wait(10)
    print(f"campaign: {summary.ran} trials in {wall:.1f} s")
    table = []
    for where, figures in rows.items():
        t_tot = np.concatenate([f["t_tot_ms"] for f in figures])
        latency = np.concatenate([f["latency_ms"] for f in figures])
        cycles = sum(f["cycles"] for f in figures)
        table.append({"where": where, "cycles": cycles,
                      "T_tot p50 (ms)": np.percentile(t_tot, 50), "T_tot p99 (ms)": np.percentile(t_tot, 99),
                      "latency p50 (ms)": np.percentile(latency, 50), "latency p99 (ms)": np.percentile(latency, 99),
                      "overruns (%)": 100 * sum(f["overruns"] for f in figures) / max(cycles, 1),
                      "trial wall (s)": np.mean([f["wall_s"] for f in figures]),
                      "trials/min": 60 / np.mean([f["wall_s"] for f in figures])})
    frame = pd.DataFrame(table).set_index("where")
    print(frame.to_string(float_format=lambda v: f"{v:.2f}"))
    local, board = frame.loc["local"], frame.loc["agent"]
    print(f"agent overhead per cycle: T_tot p50 {board['T_tot p50 (ms)'] - local['T_tot p50 (ms)']:+.2f} ms, "
          f"p99 {board['T_tot p99 (ms)'] - local['T_tot p99 (ms)']:+.2f} ms; sensing-to-command latency p50 "
          f"{board['latency p50 (ms)'] - local['latency p50 (ms)']:+.2f} ms, p99 "
          f"{board['latency p99 (ms)'] - local['latency p99 (ms)']:+.2f} ms (vehicle time at {args.speed:g}x); "
          f"agent throughput {board['trials/min']:.2f} trials/min against {local['trials/min']:.2f} in the harness "
          "(issue 14 sets no goal: these are the figures)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
