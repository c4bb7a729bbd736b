"""The lab file: the targets of a lab by name, so a suite says `--hil-target bench` and the file says
what the bench is (as labgrid's environment files do). Given with `--hil-env FILE` or `HIL_ENV`::

    targets:
      bench:                                  # a board on the desk, props off, in HITL mode
        target: serial:///dev/ttyACM0:921600
        physics: harness
        profile: 1.40kg-EMAX
        arm: true                             # this one may be armed (the file says so, not each run)
        faults: true                          # and may have faults injected
      sitl:
        target: px4-sitl
        speed: 4
    default: [sitl, bench]                    # the targets when --hil-target is not given

A name not in the file is a target as the command line spells it (sim, lockstep, px4-sitl, a
connection string), with the command line's options.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from config.errors import ConfigError
from config.fields import Problems, choice, flag, number, read_fields, text
from config.loading import load_yaml


@dataclass(frozen=True)
class LabTarget:
    """One target of the lab: what to reach and how; None: the command line's option."""

    target: str
    profile: str | None = None
    physics: str | None = None
    speed: float | None = None
    arm: bool = False
    faults: bool = False


@dataclass(frozen=True)
class Lab:
    """The lab file's targets by name, and the default selection."""

    targets: dict[str, LabTarget]
    default: tuple[str, ...] = ()
    source: str = ""


_TARGET_FIELDS = {
    "target": text("sim, lockstep, px4-sitl[:N] or a connection string"),
    "profile": text("vehicle profile name or file", required=False),
    "physics": choice(("default", "harness"), required=False),
    "speed": number("speed factor of a simulated target", above=0, required=False),
    "arm": flag("whether this target may be armed without --hil-arm", False),
    "faults": flag("whether faults may be injected without --allow-hardware-faults", False),
}


def load_lab(path: str | Path) -> Lab:
    """Read and validate a lab file; ConfigError naming the file, the field and the expectation."""
    data = load_yaml(path, "lab file (YAML with a targets: mapping)")
    problems = Problems(str(path))
    if not isinstance(data, dict):
        problems.invalid("<top level>", "a mapping with targets: and optionally default:", data)
        raise ConfigError(problems.lines)
    read_fields(data, {}, "", problems, nested=("targets", "default"))
    targets: dict[str, LabTarget] = {}
    entries = data.get("targets")
    if not isinstance(entries, dict) or not entries:
        problems.invalid("targets", "a mapping of target names to {target: ..., ...}", entries)
    else:
        for name, entry in entries.items():
            if not isinstance(entry, dict):
                problems.invalid(f"targets.{name}", "a mapping {target: ..., profile: ..., ...}", entry)
                continue
            values = read_fields(entry, _TARGET_FIELDS, f"targets.{name}.", problems)
            if values.get("target") is not None:
                targets[str(name)] = LabTarget(**values)
    default = data.get("default", [])
    if not isinstance(default, list) or not all(isinstance(d, str) for d in default):
        problems.invalid("default", "a list of target names", default)
        default = []
    problems.raise_if_any()
    return Lab(targets, tuple(default), str(path))
