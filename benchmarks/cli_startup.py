"""How soon the `hil` command answers (issue 34; goals: --version and every verb's --help <= 0.3 s, the
first line of `hil fly` <= 0.5 s, on a quiet machine).

Each round starts, in turn: `python -c pass` (the interpreter's own start-up, site and the editable
install's finder included), `hil --version`, `hil VERB --help` for every verb, `hil mission check` of a
file that is not YAML (refused, exit 2), and `hil fly demo_square`, stopped by Ctrl-C once its first line
is out. Rounds interleave the cases so that load on a shared machine falls on all of them alike; each
figure is the median over the rounds, beside its goal and its ratio to `python -c pass` in the same run.
The CPU column (user + system of the process) is what load does not stretch. --importtime adds the
largest imports of `hil --version` and of the refused check, from `python -X importtime`.

    .venv/bin/python benchmarks/cli_startup.py [--runs 11] [--importtime]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.quick import parse_args  # noqa: E402
from hil.cli import COMMAND_MODULES  # noqa: E402

HIL = Path(sys.executable).parent / "hil"  # the console script a person types
ANSWER_GOAL_S = 0.3
FIRST_LINE_GOAL_S = 0.5
FIRST_LINE = "flying "


def timed(argv: list[str], expect_code: int) -> tuple[float, float]:
    """Wall and CPU seconds of one finished command."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != expect_code:
        raise SystemExit(f"{' '.join(argv)}: exit {process.returncode}, expected {expect_code}")
    return wall, usage.ru_utime + usage.ru_stime


def first_line(argv: list[str]) -> float:
    """Wall seconds until the command's first line, which must be `hil fly`'s; then Ctrl-C ends it (before
    the vehicle is armed) and it is waited for outside the figure."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                               start_new_session=True, text=True)
    line = process.stdout.readline()
    wall = time.perf_counter() - start
    os.killpg(process.pid, signal.SIGINT)
    _, errors = process.communicate(timeout=120)
    if not line.startswith(FIRST_LINE):
        raise SystemExit(f"{' '.join(argv)}: first line {line!r}, expected {FIRST_LINE!r}...\n{errors}")
    return wall


def largest_imports(argv: list[str], count: int) -> list[tuple[float, str]]:
    """The `count` largest imports a command makes at top level, in ms (python -X importtime)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "hil", *argv], capture_output=True, text=True,
                          cwd=ROOT)
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.split("|")
        if not name.startswith("  "):  # nested imports are indented: their parent's figure holds them
            rows.append((int(cumulative) / 1000, name.strip()))
    return sorted(rows, reverse=True)[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11, help="rounds (default: 11)")
    parser.add_argument("--importtime", action="store_true", help="also list the largest imports")
    args = parse_args(parser, {"runs": 3})
    # Started in the background of a shell without job control (`cmd &`, nohup), this process ignores SIGINT and
    # so would every `hil fly` it starts: the Ctrl-C that ends each would be lost and it would fly on.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if not HIL.exists():
        raise SystemExit(f"no {HIL}: run this with the virtual environment's python (make installs it)")
    verbs = [name.rsplit(".", 1)[-1] for name in COMMAND_MODULES]
    with tempfile.TemporaryDirectory() as tmp:
        bad = Path(tmp) / "bad.yaml"
        bad.write_text("mission: [\n")
        cases = {"python -c pass": ([sys.executable, "-c", "pass"], 0, None),
                 "hil --version": ([str(HIL), "--version"], 0, ANSWER_GOAL_S),
                 **{f"hil {verb} --help": ([str(HIL), verb, "--help"], 0, ANSWER_GOAL_S) for verb in verbs},
                 "hil mission check (refused)": ([str(HIL), "mission", "check", str(bad)], 2, ANSWER_GOAL_S)}
        walls: dict[str, list[float]] = {name: [] for name in cases}
        cpus: dict[str, list[float]] = {name: [] for name in cases}
        fly = "hil fly, first line"
        walls[fly] = []
        started = time.monotonic()
        for round_ in range(args.runs):
            for name, (argv, code, _) in cases.items():
                wall, cpu = timed(argv, code)
                walls[name].append(wall)
                cpus[name].append(cpu)
            walls[fly].append(first_line([str(HIL), "fly", "missions/examples/demo_square.yaml",
                                          "--record-dir", str(Path(tmp) / f"fly-{round_}")]))
        if args.importtime:
            imports = {"hil --version": largest_imports(["--version"], 8),
                       "hil mission check (refused)": largest_imports(["mission", "check", str(bad)], 8)}
    goals = {name: goal for name, (_, _, goal) in cases.items()} | {fly: FIRST_LINE_GOAL_S}
    base = statistics.median(walls["python -c pass"])
    print(f"hil start-up, median of {args.runs} rounds ({os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.2f}, {time.monotonic() - started:.0f} s)")
    print(f"  {'command':34} {'wall s':>7} {'cpu s':>7} {'x pass':>7}  goal")
    missed = []
    for name, samples in walls.items():
        wall = statistics.median(samples)
        cpu = f"{statistics.median(cpus[name]):7.3f}" if name in cpus else f"{'-':>7}"
        goal = goals[name]
        verdict = "" if goal is None else f"<= {goal:.1f} s {'met' if wall <= goal else 'NOT met'}"
        if goal is not None and wall > goal:
            missed.append(name)
        print(f"  {name:34} {wall:7.3f} {cpu} {wall / base:7.1f}  {verdict}")
    print(f"  goals: {'all met' if not missed else 'NOT met: ' + ', '.join(missed)}")
    if args.importtime:
        for name, rows in imports.items():
            print(f"  largest imports of {name} (ms, cumulative, under -X importtime):")
            for ms, module in rows:
                print(f"    {ms:7.1f}  {module}")


if __name__ == "__main__":
    main()
