"""CPU of the built-in vehicle's MAVLink server, one revision against another (issue 35's reshaping of it).

Runs the built-in vehicle as `hil sim` runs it (the autopilot stepped two steps at a time, the server's
`tick()` after each: its streams, status texts and protocols) with an API link and a ground-station link
whose transports only count the bytes, over SIM_S simulated seconds: disarmed on the ground, then a take-off
and a hover. Each revision (exported with `git archive`, as benchmarks/autopilot_speed.py does) runs in a fresh
process, alternately, `--runs` times; prints the median CPU milliseconds the server took per simulated second
on each and their ratio (this / baseline: below 1 is cheaper).

    python benchmarks/mavlink_server_speed.py [--baseline REV] [--this REV] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere in the repo

from benchmarks.autopilot_speed import _export  # noqa: E402
from benchmarks.quick import parse_args  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SIM_S = 60.0

# Only the public API both revisions share, so that the two servers do the same work.
RUN = r"""
import json, math, time
from px4.sim.realtime import SimOptions, build_vehicle

class Count:
    bytes = 0
    def send(self, buf):
        Count.bytes += len(buf)

ap, server = build_vehicle(SimOptions())
server.add_link(Count())
server.add_link(Count(), gcs=True)
cpu = 0.0
def fly(until):
    global cpu
    while ap.time_s < until:
        ap.advance(math.inf, steps=2)
        start = time.process_time()
        server.tick()
        cpu += time.process_time() - start
fly(%(ground)f)
assert ap.arm().accepted and ap.takeoff(float("nan")).accepted
fly(%(sim_s)f)
server.close()
print(json.dumps({"cpu_s": cpu, "sim_s": ap.time_s, "bytes": Count.bytes}))
"""


def _run(tree: Path) -> dict:
    code = RUN % {"ground": SIM_S / 3, "sim_s": SIM_S}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"mavlink_server_speed: the run failed on {tree}:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="HEAD", help="git revision to compare with (default: HEAD)")
    parser.add_argument("--this", default=None, metavar="REV", help="git revision measured (default: the checkout)")
    parser.add_argument("--runs", type=int, default=5, help="runs per revision (default: %(default)s)")
    args = parse_args(parser, {"runs": 2}, argv)
    if args.runs < 1:
        print(f"mavlink_server_speed: --runs must be at least 1, got {args.runs}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="mavlink-server-") as tmp:
        trees = {}
        for name, rev in (("baseline", args.baseline), ("this", args.this)):
            trees[name] = ROOT if rev is None else Path(tmp) / name
            if rev is not None:
                _export(rev, trees[name])
        for tree in trees.values():
            _run(tree)  # the first run compiles the inner loop into this tree's cache; not counted
        cost: dict[str, list[float]] = {name: [] for name in trees}
        sent = {}
        for _ in range(args.runs):  # alternately, so that a change in the machine's load hits both alike
            for name, tree in trees.items():
                result = _run(tree)
                cost[name].append(result["cpu_s"] / result["sim_s"] * 1e3)
                sent[name] = result["bytes"] / result["sim_s"]
    medians = {name: statistics.median(values) for name, values in cost.items()}
    for name, rev in (("baseline", args.baseline), ("this", args.this or "the checkout")):
        print(f"{name:8s} {rev}: {medians[name]:6.2f} ms CPU per simulated second in the server "
              f"(median of {args.runs}; min {min(cost[name]):.2f}), {sent[name] / 1e3:.1f} kB sent a simulated second")
    print(f"ratio this / baseline: {medians['this'] / medians['baseline']:.3f} (below 1: cheaper)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
