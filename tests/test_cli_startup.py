"""`hil` answers before it loads the flight: what a command line imports, not how long it takes (the
figures are benchmarks/cli_startup.py's).

Each case runs in a fresh interpreter, which reports the modules loaded once `hil.cli.main` has returned;
the modules a step loads stay loaded, so one process checks every step in turn.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hil.cli import COMMAND_MODULES

ROOT = Path(__file__).resolve().parents[1]
# Each of these costs a command line tens to hundreds of milliseconds before it has done anything.
HEAVY = ("pandas", "pyarrow", "numpy", "scipy", "numba", "mavsdk", "matplotlib", "plotly", "asyncio")
# A mission file is read with numpy; the flight's modules wait until `hil fly` has said what it flies.
FLIGHT = ("pandas", "pyarrow", "scipy", "numba", "mavsdk", "matplotlib", "plotly")

REPORT = """
import contextlib, io, json, sys
from hil.cli import main
loaded = []
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    loaded.append([argv, code, sorted(sys.modules)])
print(json.dumps(loaded))
"""


def loaded_after(*command_lines: list[str]) -> list[tuple[list[str], int, set[str]]]:
    """Each command line's exit code and the modules loaded once it has run (and the ones before it)."""
    done = subprocess.run([sys.executable, "-c", REPORT, json.dumps(command_lines)], capture_output=True, text=True,
                          cwd=ROOT, timeout=600, check=True)
    return [(argv, code, set(modules)) for argv, code, modules in json.loads(done.stdout)]


def heavy(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(name for name in names if name in modules)


def test_help_and_version_load_none_of_the_flights_modules():
    verbs = [name.rsplit(".", 1)[-1] for name in COMMAND_MODULES]
    steps = loaded_after(["--help"], *([verb, "--help"] for verb in verbs), ["--version"])
    for argv, code, modules in steps:
        assert code == 0, argv
        assert not heavy(modules, HEAVY), f"hil {' '.join(argv)} loads {heavy(modules, HEAVY)}"
    # The package metadata is read for --version only.
    assert all("importlib.metadata" not in modules for argv, _, modules in steps if argv != ["--version"])


def test_a_refused_mission_and_the_checks_before_a_flight_load_none_of_the_flights_modules(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("mission: [\n")
    steps = loaded_after(["mission", "check", str(bad)],
                         # Refused for want of --arm, after the mission, profile and target were read: the
                         # same work `hil fly` does before its first line.
                         ["fly", "missions/examples/demo_square.yaml", "--target", "udpin://127.0.0.1:9"])
    assert [code for _, code, _ in steps] == [2, 2]
    for argv, _, modules in steps:
        assert not heavy(modules, FLIGHT), f"hil {' '.join(argv)} loads {heavy(modules, FLIGHT)}"
