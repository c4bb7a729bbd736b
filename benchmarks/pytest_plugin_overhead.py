"""What installing quad-hil costs a project that has nothing to do with HIL (goal: under 0.3 s a pytest run).

pytest loads the plugin (entry point pytest11) in every run in an environment where quad-hil is
installed. Times `python -m pytest -q` on a one-test project in a temporary directory, with the plugin
and without it (`-p no:hil`), the two interleaved so that a busy machine slows both alike, and prints
the medians and their difference: wall time (the goal) and the CPU time pytest used, which a shared
machine's other work disturbs less.

    python benchmarks/pytest_plugin_overhead.py [--runs 15]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.quick import parse_args  # noqa: E402

GOAL_S = 0.3


def children_cpu_seconds() -> float:
    """CPU seconds used so far by the processes this one started and waited for."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def pytest_seconds(project: Path, *args: str) -> tuple[float, float]:
    """Wall and CPU seconds of one `python -m pytest -q` in `project`, which must pass."""
    wall, cpu = time.perf_counter(), children_cpu_seconds()
    subprocess.run([sys.executable, "-m", "pytest", "-q", *args], cwd=project, check=True, capture_output=True)
    return time.perf_counter() - wall, children_cpu_seconds() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs each way")
    args = parse_args(parser, {"runs": 5})
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        (project / "test_unrelated.py").write_text("def test_sum():\n    assert sum([1, 2]) == 3\n")
        pytest_seconds(project)  # the first run compiles the test file and warms the disk cache
        with_plugin, without = [], []
        for _ in range(args.runs):
            with_plugin.append(pytest_seconds(project))
            without.append(pytest_seconds(project, "-p", "no:hil"))
    plugin_s, plugin_cpu = (statistics.median(column) for column in zip(*with_plugin))
    bare_s, bare_cpu = (statistics.median(column) for column in zip(*without))
    difference = plugin_s - bare_s
    verdict = "ok" if difference < GOAL_S else "OVER GOAL"
    print(f"pytest -q on a one-test project, median of {args.runs} runs each (wall, CPU)")
    print(f"  with quad-hil's plugin   {plugin_s:.3f} s  {plugin_cpu:.3f} s CPU")
    print(f"  with -p no:hil           {bare_s:.3f} s  {bare_cpu:.3f} s CPU")
    print(f"  the plugin: {difference:+.3f} s a run ({plugin_s / bare_s:.2f}x; goal < {GOAL_S} s) {verdict}; "
          f"CPU {plugin_cpu - bare_cpu:+.3f} s ({plugin_cpu / bare_cpu:.2f}x)")
    return 0 if difference < GOAL_S else 1


if __name__ == "__main__":
    sys.exit(main())
