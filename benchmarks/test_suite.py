"""How long `make test` takes, and where the time goes (issue 34; goal: <= 12 min on 2 cores with PX4 included).

Runs `make test` itself (the same pytest options, workers and PX4 builds, then the onboard tests on Python 3.10),
with a JUnit XML file added through TEST_ARGS, and prints the total wall time beside the goal, the sum of the
tests' own durations (setup, call and teardown, reruns included), how much of the workers' time that sum filled,
and the slowest files: with --dist loadfile a file runs whole on one worker, so the slowest file is a floor on
the wall time that more workers cannot lower. `--quick` runs the fast tier (`make test-fast`, goal 2 min) instead.

Beside them, where the CPU went: the machine's idle share over the run (near none: the suite is bound by CPU, and
more workers would not shorten it), the CPU time of everything make started (its reaped children's rusage), and
that time by kind of process (PX4 SITL, built-in vehicles, `hil` commands, the pytest workers, campaign workers),
sampled from /proc twice a second (a process that lives less than that, or its last half second, is missed).

    .venv/bin/python benchmarks/test_suite.py [--quick] [--workers 2] [--files 15] [--junit runs/suite.xml]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import threading
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


def process_kind(cmdline: str) -> str:
    words = cmdline.split()
    if words and words[0].endswith("/bin/px4"):
        return "PX4 SITL"
    if "multiprocessing" in cmdline:
        return "campaign and pool workers (multiprocessing)"
    if "hil" in words[1:4]:
        verb = (words[words.index("hil", 1) + 1:] or ["?"])[0]
        return "built-in vehicles (hil sim)" if verb == "sim" else f"hil {verb}"
    if "pytest" in cmdline or "execnet" in cmdline or "exec(eval(" in cmdline:
        return "pytest (controller and workers: the tests' own code, MAVSDK)"
    if words and "python" in Path(words[0]).name:
        return f"other Python ({' '.join(words[1:3])[:50]})"
    return Path(words[0]).name if words else "?"


class CpuByKind(threading.Thread):
    """Samples /proc: the CPU time of each process descended from `root`, by kind, and the machine's idle share."""

    def __init__(self, root: int):
        super().__init__(daemon=True)
        self.root, self.stop = root, threading.Event()
        self.cpu: dict[tuple[int, str], tuple[str, float]] = {}  # (pid, start time) -> kind, CPU seconds
        self.idle_share = float("nan")
        self._tick = os.sysconf("SC_CLK_TCK")

    @staticmethod
    def _cpu_line() -> list[int]:
        return [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]

    def run(self) -> None:
        first = self._cpu_line()
        descendants = {self.root}
        while not self.stop.wait(0.5):
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit():
                    continue
                try:
                    stat = (entry / "stat").read_text()
                    fields = stat[stat.rindex(")") + 2:].split()
                    pid, parent = int(entry.name), int(fields[1])
                    if pid not in descendants and parent not in descendants:
                        continue
                    descendants.add(pid)
                    key = (pid, fields[19])
                    kind = self.cpu[key][0] if key in self.cpu else process_kind(
                        (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
                    self.cpu[key] = (kind, (int(fields[11]) + int(fields[12])) / self._tick)
                except (OSError, ValueError, IndexError):
                    continue  # it ended meanwhile
        last = self._cpu_line()
        spent = [b - a for a, b in zip(first, last)]
        self.idle_share = (spent[3] + spent[4]) / max(1, sum(spent[:8]))

    def by_kind(self) -> list[tuple[str, float, int]]:
        totals: dict[str, list[float]] = {}
        for kind, seconds in self.cpu.values():
            entry = totals.setdefault(kind, [0.0, 0])
            entry[0] += seconds
            entry[1] += 1
        return sorted(((kind, cpu, int(n)) for kind, (cpu, n) in totals.items()), key=lambda item: -item[1])


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
        make = subprocess.Popen(["make", "--no-print-directory", args.target, f"TEST_WORKERS={args.workers}",
                                 f"TEST_ARGS=--junitxml={junit}"], cwd=ROOT)
        sampler = CpuByKind(make.pid)
        sampler.start()
        make.wait()
        wall = time.monotonic() - started
        sampler.stop.set()
        sampler.join()
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        load_after = os.getloadavg()
        if not junit.exists():
            print(f"make {args.target} exited {make.returncode} before pytest wrote {junit}", file=sys.stderr)
            return 2
        seconds, counts = per_file_seconds(junit)
    goal = GOALS_S[args.target]
    total = sum(seconds.values())
    print(f"\nmake {args.target}, {args.workers} workers on {os.cpu_count()} cores (load average "
          f"{load_before[0]:.2f} before, {load_after[0]:.2f} after; exit {make.returncode})")
    print(f"  wall            {wall:8.1f} s   goal <= {goal:.0f} s: {wall / goal:.2f} of it, "
          f"{'met' if wall <= goal else 'NOT met'}")
    print(f"  tests' durations {total:7.1f} s   over {sum(counts.values())} tests in {len(seconds)} files, "
          f"{total / (wall * args.workers):.0%} of {args.workers} workers x wall")
    print("  slowest files (a file runs whole on one worker: the first is a floor on the wall time):")
    for name, spent in sorted(seconds.items(), key=lambda item: -item[1])[:args.files]:
        print(f"    {spent:7.1f} s  {counts[name]:4d} tests  {name}")
    cpu = children.ru_utime + children.ru_stime
    cores = os.cpu_count() or 1
    print(f"  CPU             {cpu:8.1f} s   everything make started, {cpu / (wall * cores):.0%} of {cores} cores x "
          f"wall; the machine idle {sampler.idle_share:.0%} of the run")
    kinds = sampler.by_kind()
    sampled = sum(seconds for _, seconds, _ in kinds)
    print(f"  CPU by kind of process (sampled: {sampled:.0f} s of it):")
    for kind, seconds, processes in kinds[:12]:
        print(f"    {seconds:7.1f} s  {seconds / max(sampled, 1e-9):4.0%}  {processes:5d} processes "
              f"({seconds / processes:4.1f} s each)  {kind}")
    return make.returncode


if __name__ == "__main__":
    sys.exit(main())
