"""The plugin's command-line options and ini settings, read once per session into a `HilConfig`.

pytest imports this in every run of every project where quad-hil is installed, so at the top it
imports what registering options needs and no more; the lab file and the target names are read only
when a HIL option asks for them.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from hil.commands.args import bounded_int

if TYPE_CHECKING:
    from hil.pytest_plugin.lab import Lab, LabTarget

ENV_VAR = "HIL_ENV"  # the lab file when --hil-env is not given


def target_kind(target: str) -> str:
    """sim | lockstep | px4-sitl | hardware (a connection string: treated as a real aircraft)."""
    from targets.spec import TargetSpec

    return TargetSpec.parse(target).kind


@dataclass
class HilConfig:
    """What the command line asked for."""

    targets: list[str]
    profile: str
    link: str | None
    record_root: Path
    speed: float
    arm: bool
    allow_hardware_faults: bool
    repeat: int
    physics: str = "default"
    lab: Lab | None = None  # --hil-env: the lab's targets by name
    onboard: str | None = None  # --hil-onboard: hil_navigation's planners run on this onboard agent
    # --hil-perturb (on by default for --hil-repeat > 1): each run flies a campaign's default perturbation
    # (profiles.perturbation), drawn from its seed, which --hil-seed and the run's index give.
    perturb: bool = False
    seed: int = 0

    def entry(self, name: str) -> LabTarget:
        """The lab's target of that name, else the name as a target with the command line's options."""
        from hil.pytest_plugin.lab import LabTarget

        if self.lab is not None and name in self.lab.targets:
            return self.lab.targets[name]
        return LabTarget(name)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hil", "hardware-in-the-loop (quad-hil)")
    group.addoption("--hil-target", action="append", default=None,
                    help="sim (built-in vehicle process), lockstep (in-process, simulated time), px4-sitl[:N], or a "
                         "connection string for a flight controller; repeat it to run every test on each "
                         "(default: the ini option hil_targets, else sim)")
    group.addoption("--hil-profile", default="default", help="vehicle profile for simulated targets")
    group.addoption("--hil-link", default=None, help="link profile (profiles/links or a YAML file) to impair every "
                                                     "test's link with, through the MAVLink proxy")
    group.addoption("--hil-record-dir", default=None, help="where trial records go (default: runs/pytest-<time>)")
    group.addoption("--hil-speed", type=float, default=None, help="built-in vehicle speed factor (default: ini hil_speed)")
    group.addoption("--hil-arm", action="store_true", help="allow arming a connection-string target (a real aircraft)")
    group.addoption("--allow-hardware-faults", action="store_true",
                    help="allow fault injection on a connection-string target")
    group.addoption("--hil-repeat", type=int, default=1, help="run each HIL test N times and report its pass rate")
    group.addoption("--hil-perturb", choices=("on", "off", "none"), default=None,
                    help="what differs between runs, as a campaign's perturb: (profiles.perturbation): sensor-noise "
                         "seed, wind and gusts, start position and heading, link jitter, each run its own draw; "
                         "'off' (or 'none') flies every run nominal, and identical runs count as one observation "
                         "(default: on with --hil-repeat > 1)")
    group.addoption("--hil-seed", type=bounded_int(0, 2**31 - 1), default=0, metavar="N",
                    help="seed the runs' perturbations derive from, with each run's index (default: 0)")
    group.addoption("--hil-physics", choices=("default", "harness"), default="default",
                    help="px4-sitl: PX4's own SIH (default) or the harness's physics as PX4's simulator (profile "
                         "sensors and physical faults act on PX4's sensors); a connection string: 'harness' closes "
                         "the loop of a board in HITL mode on the bench")
    group.addoption("--hil-onboard", default=None, metavar="HOST:PORT",
                    help="run hil_navigation's planners on the onboard agent there (`hil agent` on the companion "
                         "computer; its token in HIL_ONBOARD_TOKEN); sim and px4-sitl targets, where the harness "
                         "gives the board its MAVLink link. On hardware the board uses its own: 'HOST:PORT via URL', "
                         "e.g. '192.168.1.20:7780 via serial:///dev/ttyTHS1:921600'")
    group.addoption("--hil-env", default=os.environ.get(ENV_VAR), metavar="FILE",
                    help=f"lab file naming the lab's targets (hil.pytest_plugin.lab; default: ${ENV_VAR})")
    parser.addini("hil_speed", "default speed factor of the built-in vehicle in HIL tests", default="1")
    parser.addini("hil_targets", "targets every HIL test runs on, space-separated", default="sim")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser) -> None:
    """pytest-asyncio (installed with the plugin: its fixtures are async) warns in every run of a project that
    leaves asyncio_default_fixture_loop_scope unset. Its value "fixture-scope" is what the unset option does, so
    it becomes the default: the warning goes, no fixture's loop changes, and a project's own setting still wins."""
    if early_config.pluginmanager.has_plugin("asyncio"):
        parser.addini("asyncio_default_fixture_loop_scope", "default scope of the asyncio event loop used to "
                      "execute async fixtures (default with quad-hil: fixture-scope)", default="fixture-scope")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "hil(targets=None, profiles=None, link=None, params=None): a hardware-in-the-"
                                       "loop test; runs only on the listed target kinds, once per listed profile, "
                                       "through a link profile, with vehicle parameters set (simulators)")
    stamp = time.strftime("%Y%m%dT%H%M%S")
    speed = config.getoption("--hil-speed") or float(config.getini("hil_speed"))
    lab = _lab(config.getoption("--hil-env")) if config.getoption("--hil-env") else None
    targets = config.getoption("--hil-target") or list(lab.default if lab else ()) or config.getini("hil_targets").split()
    if lab is not None or config.getoption("--hil-target"):
        _check_targets(targets, lab)
    onboard = config.getoption("--hil-onboard")
    if onboard is not None:
        _check_onboard(onboard, [lab.targets[t].target if lab and t in lab.targets else t for t in targets])
    config.stash[CONFIG] = HilConfig(
        targets=targets,
        profile=config.getoption("--hil-profile"),
        link=config.getoption("--hil-link"),
        record_root=Path(config.getoption("--hil-record-dir") or Path("runs") / f"pytest-{stamp}"),
        speed=speed, arm=config.getoption("--hil-arm"),
        allow_hardware_faults=config.getoption("--allow-hardware-faults"), repeat=config.getoption("--hil-repeat"),
        physics=config.getoption("--hil-physics"), lab=lab, onboard=onboard,
        perturb=_perturbed(config.getoption("--hil-perturb"), config.getoption("--hil-repeat")),
        seed=config.getoption("--hil-seed"))


def _perturbed(choice: str | None, repeat: int) -> bool:
    """--hil-perturb as a campaign's perturb: reads: on for repeats unless turned off, and on when asked."""
    return choice == "on" or (choice is None and repeat > 1)


def _lab(path: str) -> Lab:
    from config.errors import ConfigError
    from hil.pytest_plugin.lab import load_lab

    try:
        return load_lab(path)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None


def _check_targets(targets: list[str], lab: Lab | None) -> None:
    """A target name that is neither the lab's nor one the harness knows is a typo: said once, before any
    test runs (each test would otherwise fail on it with the same error)."""
    from config.fields import did_you_mean
    from targets.spec import TargetSpec

    for name in targets:
        if lab is not None and name in lab.targets:
            continue
        try:
            TargetSpec.parse(name)
        except ValueError as exc:
            if lab is None:
                raise pytest.UsageError(f"--hil-target: {exc}") from None
            raise pytest.UsageError(f"{lab.source}: no target {name!r} ({did_you_mean(name, lab.targets)}the lab's "
                                    f"targets: {', '.join(lab.targets)}; or sim, lockstep, px4-sitl[:N], a "
                                    f"connection string)") from None


def _check_onboard(entry: str, targets: list[str]) -> None:
    """--hil-onboard names an agent and how it reaches the flight controller (HOST:PORT: the harness gives it a
    link on sim or px4-sitl; HOST:PORT via URL: its own, on hardware), and a token."""
    from onboard.agent.protocol import TOKEN_ENV, OnboardEntry, token_from_env

    try:
        board = OnboardEntry.parse(entry)
    except ValueError as exc:
        raise pytest.UsageError(f"--hil-onboard: {exc}") from None
    problem = board.target_problem({t: target_kind(t) for t in targets}, ("sim", "px4-sitl"))
    if problem:
        raise pytest.UsageError(f"--hil-onboard: {problem}")
    if token_from_env() is None:
        raise pytest.UsageError(f"--hil-onboard: expected {TOKEN_ENV} set to the agent's token")


CONFIG = pytest.StashKey[HilConfig]()
