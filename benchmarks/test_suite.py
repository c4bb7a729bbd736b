"""How long `make test` takes, and where the time goes (issue 34; goal: <= 12 min on 2 cores with PX4 included).

Runs `make test` itself (the same pytest options, workers and PX4 builds, then the onboard tests on Python 3.10),
with a JUnit XML file added through TEST_ARGS, and prints the total wall time beside the goal, the sum of the
tests' own durations (setup, call and teardown, reruns included), how much of the workers' time that sum filled,
and the slowest files: with --dist loadfile a file runs whole on one worker, so the slowest file is a floor on
the wall time that more workers cannot lower. `--quick` runs the fast tier (`make test-fast`, goal 2 min) instead.

    .venv/bin/python benchmarks/test_suite.py [--quick] [--workers 2] [--files 15] [--junit runs/suite.xml]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.quick import parse_args  # noqa: E402

GOALS_S = {"test": 12 * 60.0, "test-fast": 2 * 60.0}


def test_file(classname: str) -> str:
    """The test file a JUnit classname (`tests.behaviour.test_flight` or `tests.test_x.TestClass`) comes from."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        path = Path(*parts[:end]).with_suffix(".py")
        if (ROOT / path).is_file():
            return str(path)
    return classname


def per_file_seconds(junit: Path) -> tuple[dict[str, float], dict[str, int]]:
    seconds: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for case in ElementTree.parse(junit).iter("testcase"):
        name = test_file(case.get("classname", ""))
        seconds[name] += float(case.get("time", 0.0))
        counts[name] += 1
    return seconds, counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="TEST_WORKERS (default: 2, as make test)")
    parser.add_argument("--files", type=int, default=15, help="how many of the slowest files to list")
    parser.add_argument("--junit", type=Path, help="keep the JUnit XML file here (default: a temporary one)")
    parser.add_argument("--target", default="test", choices=sorted(GOALS_S), help=argparse.SUPPRESS)
    args = parse_args(parser, {"target": "test-fast"})
    with tempfile.TemporaryDirectory() as tmp:
        junit = (args.junit or Path(tmp) / "suite.xml").resolve()
        load_before = os.getloadavg()
        started = time.monotonic()
        done = subprocess.run(["make", "--no-print-directory", args.target, f"TEST_WORKERS={args.workers}",
                               f"TEST_ARGS=--junitxml={junit}"], cwd=ROOT, check=False)
        wall = time.monotonic() - started
        load_after = os.getloadavg()
        if not junit.exists():
            print(f"make {args.target} exited {done.returncode} before pytest wrote {junit}", file=sys.stderr)
            return 2
        seconds, counts = per_file_seconds(junit)
    goal = GOALS_S[args.target]
    total = sum(seconds.values())
    print(f"\nmake {args.target}, {args.workers} workers on {os.cpu_count()} cores (load average "
          f"{load_before[0]:.2f} before, {load_after[0]:.2f} after; exit {done.returncode})")
    print(f"  wall            {wall:8.1f} s   goal <= {goal:.0f} s: {wall / goal:.2f} of it, "
          f"{'met' if wall <= goal else 'NOT met'}")
    print(f"  tests' durations {total:7.1f} s   over {sum(counts.values())} tests in {len(seconds)} files, "
          f"{total / (wall * args.workers):.0%} of {args.workers} workers x wall")
    print("  slowest files (a file runs whole on one worker: the first is a floor on the wall time):")
    for name, spent in sorted(seconds.items(), key=lambda item: -item[1])[:args.files]:
        print(f"    {spent:7.1f} s  {counts[name]:4d} tests  {name}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
